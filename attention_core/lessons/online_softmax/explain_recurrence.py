"""The explainers of the recurrence's own numbers: the running maximum m_i′, the factor e^(m_i − m_i′), the
running sum ℓ_i′ and output o_i′ of a block, the states carried in and out, C = o / ℓ and the logsumexp both ways.
"""
from __future__ import annotations

import math

import numpy as np

from ...explanations import Context, join_terms, register
from .block_trace import online_softmax_trace
from .cells import block_of, block_terms, explanation, minus, minus_text, num, num_text, par, par_text
from .head import KIND
from .symbols import entry_symbol


def _skipped_note(ctx: Context, i: int) -> str | None:
    f = ctx.trace.facts
    if i in f["skipped_here"]:
        return (f"Row {i}'s tile in block {f['block']} is entirely masked, so it was skipped: nothing is computed "
                "and the value passes through from the block before.")
    return None


@register("m", kind=KIND)
def _m(ctx: Context, cell):
    (i,) = cell
    f, start, stop, b = block_of(ctx)
    m_old = float(ctx.value("m_prev")[i])
    row = [float(s) for s in ctx.value("s_b")[i]]
    lhs = rf"m_{{{i}}}'"
    skip = _skipped_note(ctx, i)
    if skip:
        return explanation("m", cell, f"{lhs} = m_{{{i}}}", num(m_old), m_old, f"m_{i}' = m_{i}", num_text(m_old), skip,
                           reads=(("m_prev", cell),))
    top = max(row)
    value = max(m_old, top)
    shown_row, hidden = join_terms([num(s) for s in row], sep=", ")
    if b == 0:
        why = "Block 0: m_i started at −∞, so m_i′ is the block's own row maximum."
    elif value > m_old and np.isfinite(m_old):
        why = f"It rose from {num_text(m_old)} to {num_text(value)}: ℓ_i and o_i get rescaled by e^(m_i − m_i′)."
    elif np.isfinite(m_old):
        why = "It did not rise: e^(m_i − m_i′) = 1."
    else:
        why = "Nothing was seen before (m_i = −∞)."
    note = f"The largest score row {i} has seen so far. " + why
    row_text = ", ".join(num_text(s) for s in row)
    return explanation("m", cell,
                       rf"{lhs} = \max\big(m_{{{i}}},\ \max_{{j={start}}}^{{{stop - 1}}} (S_{{{b}}})_{{{i},j}}\big)",
                       rf"\max\big({num(m_old)},\ \max({shown_row})\big) = \max({num(m_old)}, {num(top)})", value,
                       f"m_{i}' = max(m_{i}, max_j S_{b}[{i},j])",
                       f"max({num_text(m_old)}, max({row_text})) = max({num_text(m_old)}, {num_text(top)})",
                       note, reads=[("m_prev", cell)] + [("s_b", (i, jj)) for jj in range(len(row))],
                       n_terms=len(row), hidden=hidden)


def _factor(ctx: Context, i: int) -> tuple[float, str, str, str]:
    """(e^(m_i − m_i′) recomputed, LaTeX of its arithmetic, text, note)."""
    m_old, m_new = float(ctx.value("m_prev")[i]), float(ctx.value("m")[i])
    if _skipped_note(ctx, i):
        return 1.0, "1", "1", "Skipped tile: nothing changes, the factor is 1."
    if not np.isfinite(m_old):
        return 0.0, r"e^{-\infty} = 0", "exp(-inf) = 0", ("Nothing was seen before (m_i = −∞, ℓ_i = 0, o_i = 0): "
                                                          "the factor is 0 and multiplies nothing.")
    value = math.exp(m_old - m_new)
    note = (f"The maximum rose from {num_text(m_old)} to {num_text(m_new)}: everything summed so far was exponentiated "
            f"against the old maximum and is brought to the new one." if m_new > m_old else
            "The maximum did not change: the factor is exactly 1.")
    return value, rf"e^{{{num(m_old)} {minus(m_new)}}}", f"exp({num_text(m_old)} {minus_text(m_new)})", note


@register("rescale", kind=KIND)
def _rescale(ctx: Context, cell):
    (i,) = cell
    value, shown, shown_text, note = _factor(ctx, i)
    return explanation("rescale", cell, rf"e^{{m_{{{i}}} - m_{{{i}}}'}} = \exp(m_{{{i}}} - m_{{{i}}}')", shown, value,
                       f"e^(m_{i} - m_{i}') = exp(m_{i} - m_{i}')", shown_text, note,
                       reads=(("m_prev", cell), ("m", cell)))


def _update(ctx: Context, key: str, cell, prev: float, weights_of):
    """ℓ′ or o′: factor · previous + Σ_j e^{(S_b)_ij − m′} · w_j (w_j = 1 for ℓ, V_{j,c} for o)."""
    i = cell[0]
    f, start, stop, b = block_of(ctx)
    factor, _, _, fnote = _factor(ctx, i)
    sym = r"\ell" if key == "l" else "o"
    idx = f"{i}" if key == "l" else f"{i},{cell[1]}"
    lhs, lhs_text = rf"{sym}_{{{idx}}}'", f"{'ℓ' if key == 'l' else 'o'}_{idx}'"
    skip = _skipped_note(ctx, i)
    if skip:
        return explanation(key, cell, rf"{lhs} = {sym}_{{{idx}}}", num(prev), prev, f"{lhs_text} = previous",
                           num_text(prev), skip, reads=((f"{key}_prev", cell),))
    m_new = float(ctx.value("m")[i])
    terms = block_terms(ctx, i, m_new)
    w = [weights_of(j) for j, _, _ in terms]
    value = math.fsum([factor * prev] + [e * wj for (_, _, e), wj in zip(terms, w)])
    exps = [(rf"e^{{{num(s)} {minus(m_new)}}}" + ("" if key == "l" else rf"\cdot {par(wj)}"))
            for (_, s, _), wj in zip(terms, w)]
    exps_text = [f"exp({num_text(s)} {minus_text(m_new)})" + ("" if key == "l" else f"·{par_text(wj)}")
                 for (_, s, _), wj in zip(terms, w)]
    shown, hidden = join_terms(exps) if exps else ("0", 0)
    shown_text, _ = join_terms(exps_text, latex=False) if exps else ("0", 0)
    v_part = "" if key == "l" else rf"\, V_{{j,{cell[1]}}}"
    symbolic = (rf"{lhs} = e^{{m_{{{i}}} - m_{{{i}}}'}} {sym}_{{{idx}}} + \sum_{{j={start}}}^{{{stop - 1}}} "
                rf"e^{{(S_{{{b}}})_{{{i},j}} - m_{{{i}}}'}}{v_part}")
    note = (("The running sum of exponentials: " if key == "l" else
             f"The unnormalised output, column {cell[1]}: the values weighted by the same exponentials, ")
            + f"the old one times the factor e^(m_i − m_i′), plus the terms of this block's keys {start} … {stop - 1}"
            + (f" ({stop - start - len(terms)} masked: e^(−∞) = 0). " if len(terms) < stop - start else ". ") + fnote)
    reads = [("rescale", (i,)), (f"{key}_prev", cell), ("m", (i,))] + [("s_b", (i, j - start)) for j, _, _ in terms]
    return explanation(key, cell, symbolic, rf"{par(factor)} \cdot {par(prev)} + {shown}", value,
                       f"{lhs_text} = e^(m_{i} - m_{i}')·prev + Σ_j e^(S_{b}[{i},j] - m_{i}')"
                       + ("" if key == "l" else "·V[j,c]"),
                       f"{num_text(factor)}·{par_text(prev)} + {shown_text}", note, reads=reads, n_terms=len(terms) + 1,
                       hidden=hidden)


@register("l", kind=KIND)
def _l(ctx: Context, cell):
    return _update(ctx, "l", cell, float(ctx.value("l_prev")[cell[0]]), lambda j: 1.0)


@register("o", kind=KIND)
def _o(ctx: Context, cell):
    i, c = cell
    v = ctx.value("v")
    return _update(ctx, "o", cell, float(ctx.value("o_prev")[i, c]), lambda j: float(v[j, c]))


def _state_explainer(key: str):
    base, when = key.split("_")                                    # ("m", "prev") / ("l", "final")
    sym, name = {"m": ("m", "m"), "l": (r"\ell", "ℓ"), "o": ("o", "o")}[base]
    start = {"m": -math.inf, "l": 0.0, "o": 0.0}[base]

    def explain_state(ctx: Context, cell):
        f = ctx.trace.facts
        idx = ",".join(map(str, cell))
        b = f["block"] - 1 if when == "prev" else f["n_blocks"] - 1
        if b < 0:
            return explanation(key, cell, rf"{sym}_{{{idx}}} = {num(start)}", num(start), start,
                               f"{name}_{idx} = start", num_text(start),
                               f"Before block 0 nothing is seen: {name}_i starts at {num_text(start)}.")
        value = float(online_softmax_trace(f["config"], f["block_size"], b, f["head"])[base].value[cell])
        return explanation(key, cell, rf"{sym}_{{{idx}}} = {sym}_{{{idx}}}' \text{{ after block }} {b}",
                           num(value), value, f"{name}_{idx} = {name}_{idx}' after block {b}", num_text(value),
                           f"Carried over from block {b}: move the block slider to {b} to see how it was made.")
    return explain_state


for _key in ("m_prev", "l_prev", "o_prev", "m_final", "l_final", "o_final"):
    register(_key, kind=KIND)(_state_explainer(_key))


@register("context", kind=KIND)
def _context(ctx: Context, cell):
    i, c = cell
    f = ctx.trace.facts
    o, l = float(ctx.value("o_final")[i, c]), float(ctx.value("l_final")[i])
    value = o / l if l > 0 else 0.0
    a = "A_h" if f["n_heads"] > 1 else "A"
    note = ("The one division, after the last block: o_i summed e^((S_b)_ij − m_i) v_j and ℓ_i summed "
            "e^((S_b)_ij − m_i) over every block b, each brought to the same final maximum m_i, so their ratio is "
            f"Σ_j {'(A_h)_ij' if f['n_heads'] > 1 else 'A_ij'} v_j with {a} = softmax({f['reads_text']}), the weights "
            "over the whole row." if l > 0 else
            f"Row {i} saw no key: ℓ_i = 0, and C_i is set to 0 instead of 0/0 = NaN.")
    return explanation("context", cell, rf"C_{{{i},{c}}} = \frac{{o_{{{i},{c}}}}}{{\ell_{{{i}}}}}",
                       rf"\frac{{{num(o)}}}{{{num(l)}}}" if l > 0 else r"0 \ (\ell_i = 0)", value,
                       f"C[{i},{c}] = o_{i},{c} / ℓ_{i}", f"{num_text(o)} / {num_text(l)}" if l > 0 else "0 (ℓ = 0)",
                       note,
                       reads=(("o_final", cell), ("l_final", (i,))))


@register("lse", kind=KIND)
def _lse(ctx: Context, cell):
    (i,) = cell
    x = ctx.trace.facts["entry_text"]
    m, l = float(ctx.value("m_final")[i]), float(ctx.value("l_final")[i])
    value = m + math.log(l) if l > 0 else -math.inf
    return explanation("lse", cell, rf"\mathrm{{lse}}_{{{i}}} = m_{{{i}}} + \log \ell_{{{i}}}",
                       rf"{num(m)} + \log {num(l)}" if l > 0 else r"-\infty \ (\ell_i = 0)", value,
                       f"lse_{i} = m_{i} + log ℓ_{i}",
                       f"{num_text(m)} + log {num_text(l)}" if l > 0 else "-inf (ℓ = 0)",
                       f"ℓ_i = Σ_j e^({x} − m_i), so m_i + log ℓ_i = log Σ_j e^({x}): the row's logsumexp, which "
                       "FlashAttention keeps for the backward pass.", reads=(("m_final", cell), ("l_final", cell)))


@register("logsumexp", kind=KIND)
def _logsumexp(ctx: Context, cell):
    (i,) = cell
    f = ctx.trace.facts
    config, heads = f["config"], f["n_heads"] > 1
    row = [float(x) for x in ctx.value("reads")[i]]
    finite = [x for x in row if math.isfinite(x)]
    top = max(finite) if finite else 0.0
    total = math.fsum(math.exp(x - top) for x in finite)
    value = top + math.log(total) if total > 0 else -math.inf
    shown, hidden = join_terms([rf"e^{{{num(x)} {minus(top)}}}" for x in finite] or ["0"])
    x_tex, x_txt = entry_symbol(config, heads, i, "j", latex=True), entry_symbol(config, heads, i, "j")
    return explanation("logsumexp", cell, rf"\log \sum_j e^{{{x_tex}}} = \mu + \log \sum_j e^{{{x_tex} - \mu}}",
                       rf"{num(top)} + \log\big({shown}\big)", value,
                       f"log Σ_j e^({x_txt}) = μ + log Σ_j exp({x_txt} - μ)",
                       f"{num_text(top)} + log(Σ_j exp({x_txt} {minus_text(top)}))",
                       f"Computed the plain way: the whole row of {f['reads_text']} at once"
                       + (" (masked keys left out)" if config.mask != "none" else "") + ", μ its maximum.",
                       n_terms=len(finite), hidden=hidden, reads=[("reads", (i, j)) for j in range(len(row))])
