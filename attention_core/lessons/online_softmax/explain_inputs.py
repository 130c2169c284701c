"""The explainers of what the recurrence reads: the forward pass's Q, K, V and the score's parameters (leaves), the
whole rows softmax reads, a block's scores S_b (each made from its query and key alone), the mask and the tiles.
"""
from __future__ import annotations

import math

import numpy as np

from ...explanations import Context, join_terms, register
from ...forward.config import Config
from ...forward.stages import exact_slope
from .cells import block_of, explanation, num, num_text, par, par_text
from .head import KIND, head_of
from .symbols import entry_symbol


def _leaf(key: str):
    def explain_leaf(ctx: Context, cell):
        f = ctx.trace.facts
        hd = head_of(f["config"], f["head"])
        source = {"q": hd.q, "k": hd.k, "v": hd.v}.get(key)
        value = float((hd.params[key] if source is None else source)[cell])        # (cached) forward pass
        title = ctx.trace[key].title
        sym = ctx.trace[key].formula or title
        idx = ",".join(map(str, cell))
        heads = f["n_heads"] > 1
        which = ("" if not heads else f" of KV head {f['kv_head']}" if key in ("k", "v") else f" of head {f['head']}")
        return explanation(key, cell, rf"({sym})_{{{idx}}}", num(value), value, f"{title}[{idx}]", num_text(value),
                           f"Read from the forward pass ({title}{which}); the forward pages show how it was made.")
    return explain_leaf


for _key in ("q", "k", "v", "w_1", "w_2", "v_a", "w_b"):
    register(_key, kind=KIND)(_leaf(_key))


@register("reads", kind=KIND)
def _reads(ctx: Context, cell):
    i, j = cell
    f = ctx.trace.facts
    config = f["config"]
    hd = head_of(config, f["head"])
    heads = f["n_heads"] > 1
    t = config.temperature
    raw = float(hd.reads[i, j]) * t if np.isfinite(hd.reads[i, j]) else -math.inf
    value = raw / t
    plain = config.replace(temperature=1.0)
    x_tex, x_txt = entry_symbol(config, heads, i, j, latex=True), entry_symbol(config, heads, i, j)
    raw_tex, raw_txt = entry_symbol(plain, heads, i, j, latex=True), entry_symbol(plain, heads, i, j)
    sym = rf"{x_tex} = {raw_tex} / {t:g}" if t != 1 else rf"{x_tex} = {raw_tex}"
    shown = num(raw) if t == 1 else rf"{par(raw)} / {t:g}"
    return explanation("reads", cell, sym, shown, value, x_txt if t == 1 else f"{x_txt} = {raw_txt} / {t:g}",
                       num_text(raw) if t == 1 else f"{par_text(raw)} / {t:g}",
                       "The forward pass's own entry, from its whole rows at once (for the checks).")


def _score_parts(ctx: Context, i: int, j: int):
    """(value before T, LaTeX symbolic, LaTeX shown, text symbolic, text shown, n_terms, hidden, reads) of the
    score function's entry (i, j) plus ALiBi's bias, recomputed from the query and key rows."""
    f = ctx.trace.facts
    score, rope = f["score"], f["rope"]
    r = "^R" if rope else ""
    q, k = ctx.value("q")[i], ctx.value("k")[j]
    d_k = q.shape[0]
    reads = [("q", (i, m)) for m in range(d_k)] + [("k", (j, m)) for m in range(d_k)]
    qi, kj, qt, kt = rf"q{r}_{{{i}}}", rf"k{r}_{{{j}}}", f"q{r}_{i}", f"k{r}_{j}"
    heads = f["n_heads"] > 1                       # each head its own score parameters: W_1^(h), W_2^(h), v^(h), W^(h)
    own, own_t = (rf"^{{({f['head']})}}", f"^({f['head']})") if heads else ("", "")
    if score in ("dot", "scaled_dot"):
        value = math.fsum(float(q[m]) * float(k[m]) for m in range(d_k))
        shown, hidden = join_terms([f"{par(q[m])} \\cdot {par(k[m])}" for m in range(d_k)])
        shown_t, _ = join_terms([f"{par_text(q[m])}·{par_text(k[m])}" for m in range(d_k)], latex=False)
        sym, sym_t, n_terms = rf"{qi} \cdot {kj}", f"{qt}·{kt}", d_k
        if score == "scaled_dot":
            value /= math.sqrt(d_k)
            sym, sym_t = rf"\frac{{{sym}}}{{\sqrt{{d_k}}}}", f"{sym_t} / √d_k"
            shown, shown_t = rf"\frac{{{shown}}}{{\sqrt{{{d_k}}}}}", f"({shown_t}) / √{d_k}"
    elif score == "additive":
        w_1, w_2, v_a = ctx.value("w_1"), ctx.value("w_2"), ctx.value("v_a")
        d_a = w_1.shape[1]
        u = [math.fsum(float(q[m]) * float(w_1[m, a]) for m in range(d_k)) for a in range(d_a)]
        w = [math.fsum(float(k[m]) * float(w_2[m, a]) for m in range(d_k)) for a in range(d_a)]
        value = math.fsum(float(v_a[a]) * math.tanh(u[a] + w[a]) for a in range(d_a))
        shown, hidden = join_terms([rf"{par(v_a[a])} \tanh({num(u[a])} + {par(w[a])})" for a in range(d_a)])
        shown_t, _ = join_terms([f"{par_text(v_a[a])}·tanh({num_text(u[a])} + {par_text(w[a])})" for a in range(d_a)],
                                latex=False)
        tp = rf"{own}{{}}^\top" if own else r"^\top"                         # v^(h)ᵀ: one superscript at a time
        sym = rf"v{tp} \tanh(W_1{tp} {qi} + W_2{tp} {kj})"
        sym_t, n_terms = f"v{own_t}ᵀ tanh(W_1{own_t}ᵀ {qt} + W_2{own_t}ᵀ {kt})", d_a
        reads += [("v_a", (a,)) for a in range(d_a)]
    else:
        w_b = ctx.value("w_b")
        u = [math.fsum(float(w_b[m, l]) * float(k[l]) for l in range(d_k)) for m in range(d_k)]    # (W k_j)_m
        value = math.fsum(float(q[m]) * float(w_b[m, l]) * float(k[l]) for m in range(d_k) for l in range(d_k))
        shown, hidden = join_terms([f"{par(q[m])} \\cdot {par(u[m])}" for m in range(d_k)])
        shown_t, _ = join_terms([f"{par_text(q[m])}·{par_text(u[m])}" for m in range(d_k)], latex=False)
        sym, sym_t, n_terms = rf"{qi}^\top W{own}\, {kj}", f"{qt}ᵀ W{own_t} {kt}", d_k
    slope = f["slope"]
    if slope is not None:
        bias = 0.0 - slope * abs(i - j)
        value += bias
        bsym = "(B_h)" if f["n_heads"] > 1 else "B"
        sym, sym_t = rf"{sym} + {bsym}_{{{i},{j}}}", f"{sym_t} + {bsym}[{i},{j}]"
        shown, shown_t = rf"{shown} - {num(slope)} \cdot |{i} - {j}|", f"{shown_t} - {num_text(slope)}·|{i} - {j}|"
    return value, sym, shown, sym_t, shown_t, n_terms, hidden, reads


@register("s_b", kind=KIND)
def _s_b(ctx: Context, cell):
    f, start, stop, b = block_of(ctx)
    i, jj = cell
    j = start + jj
    config = f["config"]
    heads = f["n_heads"] > 1
    lhs, lhs_text = rf"(S_{{{b}}})_{{{i},{j}}}", f"S_{b}[{i},{j}]"
    if not np.isfinite(ctx.value("s_b")[i, jj]):
        skipped = i in f["skipped_here"]
        note = (f"Query {i} may not see key {j} (M_{i},{j} = 0): −∞, weight 0."
                + (" Every score of this tile is masked, so the tile is skipped and never computed."
                   if skipped else ""))
        return explanation("s_b", cell, rf"{lhs} = -\infty", rf"M_{{{i},{j}}} = 0", -math.inf,
                           f"{lhs_text} = -inf", f"M[{i},{j}] = 0", note,
                           reads=(("mask", (i, j)),) if "mask" in ctx.trace else ())
    value, sym, shown, sym_t, shown_t, n_terms, hidden, reads = _score_parts(ctx, i, j)
    t = f["temperature"]
    if t != 1:
        value /= t
        sym, shown = rf"\big({sym}\big) / {t:g}", rf"\big({shown}\big) / {t:g}"
        sym_t, shown_t = f"({sym_t}) / {t:g}", f"({shown_t}) / {t:g}"
    entry = entry_symbol(config, heads, i, j)
    notes = [f"Column {jj} of S_{b} is key {j} (“{ctx.word(j)}”): block {b} holds keys {start} … {stop - 1}. "
             f"It is entry {entry} of {f['reads_text']}, what the forward pass's softmax reads"
             + (f" in head h = {f['head']}" if heads else "") + ", computed only now that its block is loaded."]
    if f["rope"]:
        notes.append(f"q^R_{i} and k^R_{j} are the query and key rotated by their positions {i} and {j} (RoPE).")
    if f["slope"] is not None:
        notes.append(f"ALiBi lowers the score by the slope m_h = {exact_slope(f['slope'])}"
                     + (f" of head h = {f['head']}" if heads else "") + f" times the distance |{i} − {j}|.")
    return explanation("s_b", cell, rf"{lhs} = {sym}", shown, value, f"{lhs_text} = {sym_t}", shown_t, " ".join(notes),
                       reads=reads, n_terms=n_terms, hidden=hidden)


@register("tiles", kind=KIND)
def _tiles(ctx: Context, cell):
    r, b = cell
    f = ctx.trace.facts
    B, n = f["block_size"], ctx.trace.n
    r0, r1 = r * B, min((r + 1) * B, n)
    c0, c1 = f["blocks"][b]
    seen = int(ctx.value("mask")[r0:r1, c0:c1].sum()) if "mask" in ctx.trace else (r1 - r0) * (c1 - c0)
    value = 1.0 if seen else 0.0
    rows = f"Query row {r0}" if r1 - r0 == 1 else f"Query rows {r0} … {r1 - 1}"
    keys = f"key {c0}" if c1 - c0 == 1 else f"keys {c0} … {c1 - 1}"
    return explanation("tiles", cell, rf"\text{{tile}}_{{{r},{b}}} = [\,\textstyle\sum M_{{\text{{tile}}}} > 0\,]",
                       rf"[{seen} > 0]", value, f"tile[{r},{b}] = [Σ M over the tile > 0]", f"[{seen} > 0]",
                       f"{rows} against {keys}: {seen} of the {(r1 - r0) * (c1 - c0)} scores may be used, so the "
                       "tile is " + ("computed." if seen else "skipped: K_b and V_b are never loaded for it."))


def mask_rule(config: Config, i: int, j: int) -> tuple[float, str]:
    """(M_ij by the settings' rule, the rule in words)."""
    if config.mask == "causal":
        return float(j <= i), f"causal: key {j} {'≤' if j <= i else '>'} query {i}"
    if config.mask == "sliding_window":
        w = config.window
        inside = 0 <= i - j < w
        return float(inside), f"window: 0 ≤ i − j = {i - j} < W = {w} is {'true' if inside else 'false'}"
    hidden = j in config.padding
    return float(not hidden), f"padding: key {j} is {'' if hidden else 'not '}a padding position"


@register("mask", kind=KIND)
def _mask(ctx: Context, cell):
    i, j = cell
    value, rule = mask_rule(ctx.trace.facts["config"], i, j)
    return explanation("mask", cell, rf"M_{{{i},{j}}} = [\text{{query }} {i} \text{{ may see key }} {j}]",
                       rf"\text{{{rule}}}", value, f"M[{i},{j}] = [query {i} may see key {j}]", rule,
                       "1: the score is used; 0: it becomes −∞ and its weight is exactly 0.")
