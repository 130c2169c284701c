"""Masking and softmax explained: M (may query i see key j?), S̃ (a hidden key's score becomes −∞) and
A = softmax(· / T) over the keys, written as the fraction it is, row maximum subtracted.

    >>> from attention_core import Config, run_forward
    >>> from attention_core.explanations import explain
    >>> config = Config(mask="causal")
    >>> print(explain(run_forward(config), "masked_scores", (0, 2), config=config).text)
    S̃[0,2] = Ŝ[0,2] if M[0,2] = 1 else -inf
      = M[0,2] = 0 → -inf
      = -inf
"""
from __future__ import annotations

import math

from .context import Context, Explanation
from .formatting import exact, fmt, softmax_fraction
from .registry import register
from .symbols import latex_text


def _mask_rule(ctx: Context, i: int, j: int) -> tuple[float | None, str]:
    """(M_ij from the rule, the rule in words); None when there is no config to say which rule."""
    if ctx.config is None:
        return None, "as given"
    if ctx.config.mask == "causal":
        return float(j <= i), f"causal: key {j} {'≤' if j <= i else '>'} query {i}"
    if ctx.config.mask == "sliding_window":
        w = ctx.config.window
        ok = 0 <= i - j < w
        return float(ok), f"sliding window: 0 ≤ i − j = {i - j} < W = {w}: {'yes' if ok else 'no'}"
    hidden = j in ctx.config.padding
    return float(not hidden), f"padding: key {j} is {'' if hidden else 'not '}a padding position"


@register("mask")
def _mask(ctx: Context, cell):
    i, j = cell
    regenerated, rule = _mask_rule(ctx, i, j)
    stored = ctx.value("mask")[cell]
    return ctx.leaf("mask", cell, rf"[\text{{query }} {i} \text{{ may see key }} {j}]",
                    f"1 if query {i} may see key {j} else 0",
                    regenerated, latex_text(rule), rule,
                    f"M = 1: query {i} (“{ctx.word(i)}”) may attend to key {j} (“{ctx.word(j)}”); M = 0: "
                    f"hidden. Here {'visible' if stored else 'hidden'}.")


@register("masked_scores")
def _masked_scores(ctx: Context, cell):
    src = ctx.trace["masked_scores"].inputs[0]
    i, j = cell[-2:]
    m = float(ctx.value("mask")[i, j])
    s = float(ctx.value(src)[cell])
    value = s if m == 1 else -math.inf
    lhs, lhs_text = ctx.ref("masked_scores", cell), ctx.ref_text("masked_scores", cell)
    sym = (rf"{lhs} = \begin{{cases}} {ctx.ref(src, cell)} & M_{{{i},{j}}} = 1 \\ -\infty & M_{{{i},{j}}} = 0 "
           rf"\end{{cases}}")
    shown = rf"M_{{{i},{j}}} = {int(m)} \Rightarrow " + (ctx.num(s) if m == 1 else r"-\infty")
    text = (f"{lhs_text} = {ctx.ref_text(src, cell)} if M[{i},{j}] = 1 else -inf\n"
            f"  = M[{i},{j}] = {int(m)} → {ctx.num_text(value)}\n  = {ctx.num_text(value)}")
    note = ("Visible: the score passes through." if m == 1 else
            "Hidden: −∞, so exp(−∞) = 0 and the softmax gives this key weight exactly 0.")
    if len(cell) == 3:
        note += f" Every head uses the same mask M; this is head {cell[0]}."
    return Explanation("masked_scores", cell, sym, shown, f"{lhs} = {ctx.num(value)}", value, text, note=note,
                       reads=(("mask", (i, j)), (src, cell)))


@register("weights")
def _weights(ctx: Context, cell):
    """A_ij = exp(z_j − μ) / Σ_j' exp(z_j' − μ), z = (row i of the scores softmax reads) / T, μ = max_j' z_j'."""
    src = ctx.trace.facts.get("softmax_input") or ctx.trace["weights"].inputs[0]
    row_index, j = cell[:-1], cell[-1]
    s = [float(v) for v in ctx.value(src)[row_index]]                     # (n_k,)
    t = ctx.settings.temperature
    z = [v / t for v in s]
    finite = [v for v in z if math.isfinite(v)]
    top = max(finite) if finite else 0.0                                  # softmax() uses 0 for a row of −∞
    e = [math.exp(v - top) for v in z]
    total = math.fsum(e)
    value = e[j] / total if total > 0 else 0.0
    lhs, lhs_text = ctx.ref("weights", cell), ctx.ref_text("weights", cell)
    srow = ctx.ref(src, (*row_index, "j'"))
    z_sym = srow if t == 1 else f"{srow}/T"
    n_k = len(s)
    symbolic = (rf"{lhs} = \frac{{\exp({ctx.ref(src, cell)}{'' if t == 1 else '/T'} - \mu)}}"
                rf"{{\sum_{{j'=0}}^{{{n_k - 1}}} \exp({z_sym} - \mu)}},\quad \mu = \max_{{j'}} {z_sym}"
                + ("" if t == 1 else rf",\ T = {exact(t)}"))
    tt = "" if t == 1 else f"/{exact(t)}"
    exps = [(r"e^{-\infty}" if math.isinf(v) else rf"e^{{{ctx.num(v)}{tt} - {ctx.factor(top)}}}") for v in s]
    exps_text = [("exp(-inf)" if math.isinf(v) else f"exp({ctx.num_text(v)}{tt} - {ctx.factor_text(top)})") for v in s]
    if total > 0:
        shown, shown_text, hidden = softmax_fraction(ctx, exps, exps_text, e, j, total)
    else:                                                                 # 0/0 is undefined: no fraction to show
        shown, shown_text, hidden = r"\text{no visible key: the row is set to } 0", "no visible key: the row is set to 0", 0
    row_text = ctx.ref_text(src, (*row_index, "j'"))
    text = (f"{lhs_text} = exp({ctx.ref_text(src, cell)}{'' if t == 1 else '/T'} - μ) / Σ_j' exp({row_text}"
            f"{'' if t == 1 else '/T'} - μ), μ = max_j' {row_text}{'' if t == 1 else '/T'}"
            f"{'' if t == 1 else f', T = {exact(t)}'}\n"
            f"  = {shown_text}\n  = {ctx.num_text(value)}")
    if total == 0:
        note = (f"Every key is hidden for query {cell[-2]}: softmax would divide 0 by 0, which is undefined, so the app "
                "sets such a row to all zeros (no NaN).")
    else:
        hidden_keys = sum(math.isinf(v) for v in s)
        whose = f"head {cell[0]}'s weights" if len(cell) == 3 else "the weights"
        note = (f"Row {cell[-2]} of {whose} is a softmax over the {n_k} keys"
                + (f" ({hidden_keys} of them hidden: weight 0)" if hidden_keys else "")
                + f"; subtracting the row maximum μ = {fmt(top, ctx.precision, False)} keeps exp from overflowing "
                  "and changes nothing."
                + (f" Temperature T = {exact(t)} divides every score first." if t != 1 else ""))
    if not ctx.settings.t_exact:
        note += " (No config given: T was estimated from the scores and the weights themselves.)"
    return Explanation("weights", cell, symbolic, shown, f"{lhs} = {ctx.num(value)}", value, text, note=note,
                       n_terms=n_k, n_elided=hidden, reads=tuple((src, (*row_index, jj)) for jj in range(n_k)),
                       independent=ctx.settings.t_exact)
