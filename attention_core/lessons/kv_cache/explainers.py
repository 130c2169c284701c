"""The explainers of a decoding step's cells: the new query q_t, the cached K and V, the score row (hidden keys,
ALiBi's bias), its weights, the context and output rows, the leaves (X, the weights and biases: the forward pass's
own numbers, made again) and which KV head each query head reads.
"""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from ...math.alibi import alibi_slopes
from ...explanations import Context, Explanation, register, softmax_fraction
from .cells import explainer, minus, projected_cell
from .decoding import forward_pass
from .settings import KIND, PARAMS


@explainer("q_t")
def _q_t(ctx: Context, cell):
    h, c = cell
    f = ctx.trace.facts
    return projected_cell(ctx, "q_t", cell, "w_q", f["t"], h, f["d_k"], c, f["rope"],
                          f"The new token t = {f['t']}'s query, head {h}")


def _cache_row(key: str, w_key: str):
    def explain_cache(ctx: Context, cell):
        u, r, c = cell
        f = ctx.trace.facts
        p = f["positions"][r]
        width = f["d_k"] if key == "k_cache" else f["d_v"]
        e = projected_cell(ctx, key, cell, w_key, p, u, width, c, f["rope"] and key == "k_cache",
                           f"Token {p}'s cached {'key' if key == 'k_cache' else 'value'}, KV head {u}")
        return replace(e, note=e.note + f" It was computed when token {p} came in and is read again at every later step"
                       + (" that sees it." if f["window"] is not None else "."))
    return explain_cache


explainer("k_cache")(_cache_row("k_cache", "w_k"))
explainer("v_cache")(_cache_row("v_cache", "w_v"))


@explainer("kv_cache")
def _kv_cache(ctx: Context, cell):
    """[K | V] side by side: the left d_k columns are K's, the right d_v ones V's."""
    u, r, c = cell
    d_k = ctx.trace.facts["d_k"]
    key = "k_cache" if c < d_k else "v_cache"
    return _cache_row(key, "w_k" if c < d_k else "w_v")(ctx, (u, r, c if c < d_k else c - d_k))


def _hidden(ctx: Context, key: str, cell) -> Explanation | None:
    """A score the step may not look at: −∞ (a later prompt token, or one outside the window)."""
    h, r = cell
    if np.isfinite(ctx.value(key)[cell]):
        return None
    f = ctx.trace.facts
    t, p = f["t"], f["positions"][r]
    lhs, lhs_text = ctx.ref(key, cell), ctx.ref_text(key, cell)
    why = (f"The prompt's rows were computed together, but row t = {t} may not see token {p}: it comes later "
           "(the causal mask), so its score is −∞ and its weight 0." if p > t else
           f"Token {p} is {t - p} tokens before t = {t}, outside the window of W = {f['window']} keys: its score is "
           "−∞ and its weight 0.")
    rule = rf"\text{{token }} {p} > t = {t}" if p > t else rf"t - {p} = {t - p} \geq W = {f['window']}"
    return Explanation(key, cell, rf"{lhs} = -\infty", rule, rf"{lhs} = -\infty", float("-inf"),
                       f"{lhs_text} = -inf\n  = {'token %d is after t = %d' % (p, t) if p > t else 'outside the window'}"
                       "\n  = -inf", note=why)


def score_explainer(key: str):
    """explainer(key) for a row of scores: a hidden one (−∞) is explained by _hidden, a visible one by the function."""
    def decorate(fn):
        def run(ctx: Context, cell):
            hidden = _hidden(ctx, key, cell)
            return fn(ctx, cell) if hidden is None else hidden
        explainer(key)(run)
        return fn
    return decorate


@score_explainer("scores_t")
def _scores_t(ctx: Context, cell):
    h, r = cell
    f = ctx.trace.facts
    g, d_k, p = f["g"], f["d_k"], f["positions"][r]
    u = h // g
    q, k = ctx.value("q_t"), ctx.value("k_cache")
    q_sym = ctx.symbol("q_t")[0]
    terms = [(ctx.ref("q_t", (h, c)), ctx.ref_text("q_t", (h, c)), q[h, c], ctx.ref("k_cache", (u, r, c)),
              ctx.ref_text("k_cache", (u, r, c)), k[u, r, c], ("q_t", (h, c)), ("k_cache", (u, r, c)))
             for c in range(d_k)]
    divisor = (rf"\sqrt{{{d_k}}}", f"√{d_k}", math.sqrt(d_k)) if f["scaled"] else None
    rotated = " (both turned by RoPE, so position enters the score only through t − j)" if f["rope"] else ""
    return ctx.sum_of_products("scores_t", cell,
                               rf"\sum_c ({q_sym})_{{{h},c}} K^{{\text{{cache}}}}_{{{u},{p},c}}"
                               + (r" / \sqrt{d_k}" if divisor else ""),
                               f"Σ_c {ctx.symbol('q_t')[1]}[{h},c]·K_cache[{u},{p},c]" + (" / √d_k" if divisor else ""),
                               terms, divisor=divisor,
                               note=f"Query head {h} reads KV head ⌊{h}/{g}⌋ = {u}; key j = {p} is token {p} "
                                    f"(“{ctx.word(p)}”), its row of the cache{rotated}.")


@explainer("alibi_t")
def _alibi_t(ctx: Context, cell):
    h, r = cell
    f = ctx.trace.facts
    t, p = f["t"], f["positions"][r]
    lhs, lhs_text = ctx.ref("alibi_t", cell), ctx.ref_text("alibi_t", cell)
    if not np.isfinite(ctx.value("scores_t")[cell]):
        return Explanation("alibi_t", cell, f"{lhs} = 0", r"\text{hidden key}", f"{lhs} = 0", 0.0,
                           f"{lhs_text} = 0\n  = hidden key\n  = 0",
                           note="This key is hidden from t (its score is −∞): no bias is added to it.")
    m = float(alibi_slopes(f["n_heads"])[h])
    value = 0.0 - m * (t - p)
    return Explanation("alibi_t", cell, rf"{lhs} = -m_{{{h}}}\,({t} - {p})", rf"-{ctx.factor(m)} \cdot {t - p}",
                       f"{lhs} = {ctx.num(value)}", value,
                       f"{lhs_text} = −m_{h}·({t} − {p})\n  = −{ctx.factor_text(m)}·{t - p}\n  = {ctx.num_text(value)}",
                       note=f"Head {h}'s ALiBi slope m_{h} = {ctx.num_text(m)} (the forward pass's, heads counted from 0); "
                            f"token {p} is {t - p} token{'s' if t - p != 1 else ''} before t = {t}: only the distance "
                            "enters, so nothing about it needs to be cached.")


@score_explainer("logits_t")
def _logits_t(ctx: Context, cell):
    s_, b = float(ctx.value("scores_t")[cell]), float(ctx.value("alibi_t")[cell])
    lhs, lhs_text = ctx.ref("logits_t", cell), ctx.ref_text("logits_t", cell)
    return Explanation("logits_t", cell, rf"{lhs} = {ctx.ref('scores_t', cell)} + {ctx.ref('alibi_t', cell)}",
                       rf"{ctx.num(s_)} + {ctx.factor(b)}", f"{lhs} = {ctx.num(s_ + b)}", s_ + b,
                       f"{lhs_text} = {ctx.ref_text('scores_t', cell)} + {ctx.ref_text('alibi_t', cell)}\n"
                       f"  = {ctx.num_text(s_)} + {ctx.factor_text(b)}\n  = {ctx.num_text(s_ + b)}",
                       note="The score plus ALiBi's distance penalty.", n_terms=2,
                       reads=(("scores_t", cell), ("alibi_t", cell)))


@explainer("weights_t")
def _weights_t(ctx: Context, cell):
    h, r = cell
    src = ctx.trace["weights_t"].inputs[0]
    temperature = float(ctx.trace.facts["temperature"])
    s = ctx.value(src)[h]
    keep = [j for j in range(len(s)) if np.isfinite(s[j])]
    lhs, lhs_text = ctx.ref("weights_t", cell), ctx.ref_text("weights_t", cell)
    if r not in keep:
        return Explanation("weights_t", cell, rf"{lhs} = e^{{-\infty}} / \dots", "0", f"{lhs} = 0", 0.0,
                           f"{lhs_text} = e^-inf / …\n  = 0\n  = 0", note="A hidden score (−∞) gets weight 0.")
    top = max(s[j] for j in keep)
    e = [math.exp((s[j] - top) / temperature) for j in keep]
    total = math.fsum(e)
    over, over_text = (f" / {temperature:g}", f" / {temperature:g}") if temperature != 1 else ("", "")
    less, less_text = minus(ctx, top)
    if temperature != 1:
        exps = [rf"e^{{({ctx.ref(src, (h, j))} {less}){over}}}" for j in keep]
        exps_text = [f"e^(({ctx.ref_text(src, (h, j))} {less_text}){over_text})" for j in keep]
    else:
        exps = [rf"e^{{{ctx.ref(src, (h, j))} {less}}}" for j in keep]
        exps_text = [f"e^({ctx.ref_text(src, (h, j))} {less_text})" for j in keep]
    shown, text, hidden = softmax_fraction(ctx, exps, exps_text, e, keep.index(r), total)
    value = e[keep.index(r)] / total
    p = ctx.trace.facts["positions"][r]
    x = ctx.symbol(src)[0]
    return Explanation("weights_t", cell,
                       rf"{lhs} = \frac{{e^{{{x}_{{{h},{p}}}{over}}}}}{{\sum_{{j'}} e^{{{x}_{{{h},j'}}{over}}}}}",
                       shown, f"{lhs} = {ctx.num(value)}", value, f"{lhs_text} = {text}\n  = {ctx.num_text(value)}",
                       note=f"Softmax over head {h}'s row of {len(keep)} visible scores"
                            + (f", divided by the temperature T = {temperature:g}" if temperature != 1 else "")
                            + f" (the largest, {ctx.num_text(top)}, subtracted first: the same weights, no overflow).",
                       n_terms=len(keep), n_elided=hidden, reads=tuple((src, (h, j)) for j in keep))


@explainer("context_t")
def _context_t(ctx: Context, cell):
    h, c = cell
    u = h // ctx.trace.facts["g"]
    a, v = ctx.value("weights_t"), ctx.value("v_cache")
    terms = [(ctx.ref("weights_t", (h, j)), ctx.ref_text("weights_t", (h, j)), a[h, j],
              ctx.ref("v_cache", (u, j, c)), ctx.ref_text("v_cache", (u, j, c)), v[u, j, c],
              ("weights_t", (h, j)), ("v_cache", (u, j, c))) for j in range(a.shape[1])]
    return ctx.sum_of_products("context_t", cell, rf"\sum_j a_{{{h},j}} V^{{\text{{cache}}}}_{{{u},j,{c}}}",
                               f"Σ_j a[{h},j]·V_cache[{u},j,{c}]", terms,
                               note=f"Head {h}'s weights average column {c} of KV head {u}'s cached values.")


@explainer("output_t")
def _output_t(ctx: Context, cell):
    (c,) = cell
    t = ctx.trace.facts["t"]
    context, w_o = ctx.value("context_t"), ctx.value("w_o")
    n_heads, d_v = context.shape
    terms = [(ctx.ref("context_t", (h, e)), ctx.ref_text("context_t", (h, e)), context[h, e],
              ctx.ref("w_o", (h * d_v + e, c)), ctx.ref_text("w_o", (h * d_v + e, c)), w_o[h * d_v + e, c],
              ("context_t", (h, e)), ("w_o", (h * d_v + e, c))) for h in range(n_heads) for e in range(d_v)]
    bias = None
    if "b_o" in ctx.trace:
        bias = (ctx.ref("b_o", (c,)), ctx.ref_text("b_o", (c,)), ctx.value("b_o")[c], ("b_o", (c,)))
    return ctx.sum_of_products("output_t", cell, rf"\sum_{{h,e}} (c_{{{t}}})_{{h,e}} (W_O)_{{h d_v + e,\,{c}}}",
                               f"Σ_h,e c_{t}[h,e]·W_O[h·d_v + e, {c}]", terms, bias=bias,
                               note=f"Column {c} of token {t}'s output row: the heads' context rows (c_{t})_h side by "
                                    "side, times W_O" + (", plus b_O." if bias else "."))


def _forward_leaf(key: str):
    """X, a weight or a bias: the forward pass's own number, made again by a fresh forward pass."""
    def explain_leaf(ctx: Context, cell):
        regenerated = float(forward_pass(ctx.config)[key].value[cell]) if ctx.config is not None else None
        v = ctx.value(key)[cell]
        sym, text = ctx.symbol(key)
        added = ctx.config is None or ctx.config.positional in ("sinusoidal", "learned", "index")
        where = (f"Row {cell[0]} (“{ctx.word(cell[0])}”) of the forward pass's X, "
                 + ("the sidebar's embedding with its positional encoding" if added else
                    "the sidebar's embedding alone (this Position adds nothing to X)")
                 if key == "x" else f"The forward pass's {text}")
        if key in ("w_q", "w_k", "w_v", "b_q", "b_k", "b_v") and ctx.config is not None:
            where += (", trained with the sentiment classifier (the sidebar's Weights)" if ctx.config.weights == "trained"
                      else ", at its seeded random start (the sidebar's Weights and Seed)")
        elif key in ("w_o", "b_o"):
            where += ", at its seeded random start"
        return ctx.leaf(key, cell, rf"{sym}^{{\text{{forward}}}}_{{{','.join(map(str, cell))}}}",
                        f"{text}_forward[{','.join(map(str, cell))}]", regenerated, ctx.num(v), ctx.num_text(v),
                        where + ": the same number as on the forward pages (made again here by the forward pass).")
    return explain_leaf


for _key in ("x", *PARAMS):
    register(_key, kind=KIND)(_forward_leaf(_key))


@register("heads_map", kind=KIND)
def _heads_map(ctx: Context, cell):
    h, k = cell
    g = ctx.trace.facts["g"]
    value = float(h // g == k)
    lhs, lhs_text = ctx.ref("heads_map", cell), ctx.ref_text("heads_map", cell)
    return Explanation("heads_map", cell, rf"{lhs} = [\lfloor h / g \rfloor = {k}]",
                       rf"[\lfloor {h} / {g} \rfloor = {k}] = [{h // g} = {k}]", f"{lhs} = {int(value)}", value,
                       f"{lhs_text} = [⌊h/g⌋ = {k}]\n  = [⌊{h}/{g}⌋ = {k}] = [{h // g} = {k}]\n  = {int(value)}",
                       note=f"Query head {h} reads KV head {h // g}" + (" (this one)." if value else ", not this one."))
