"""Click a cell of the masks page (kind "masks"): the arithmetic behind it, with the live numbers.

The forward steps (scores, bias, mask, masked scores, weights) are explained by the forward pass's own explainers,
at head h's cell, with the same words and numbers as the forward pages; their `reads` name cells of that trace
(facts["forward"]). The page's own steps are explained here: ALiBi's slopes, the compared masks, the weights with a
sink and the row sums.
"""
from __future__ import annotations

import math
from dataclasses import replace

from ...explanations import Context, Explanation, explain, fmt, join_terms, register, softmax_fraction
from .claims import KIND
from .compare import RULES, rule_says
from .notation import slope_parts

FORWARD_STEPS = ("scores", "scaled_scores", "alibi", "biased_scores", "mask", "masked_scores", "weights")


def _forward_explainer(key: str):
    def explain_forward(ctx: Context, cell):
        fwd, h = ctx.trace.facts["forward"], ctx.trace.facts["head"]
        full = (h, *cell) if fwd[key].value.ndim == 3 else tuple(cell)
        e = explain(fwd, key, full, precision=ctx.precision, config=ctx.trace.facts["config"])
        return replace(e, key=key, cell=tuple(cell))
    return explain_forward


for _key in FORWARD_STEPS:
    register(_key, kind=KIND)(_forward_explainer(_key))


def _simple(ctx, key, cell, lhs, lhs_text, sym, sym_text, shown, shown_text, value, note, reads=()) -> Explanation:
    return Explanation(key, cell, f"{lhs} = {sym}", shown, f"{lhs} = {ctx.num(value)}", float(value),
                       f"{lhs_text} = {sym_text}\n  = {shown_text}\n  = {ctx.num_text(value)}", note=note,
                       reads=tuple(reads))


@register("alibi_slopes", kind=KIND)
def _slope(ctx: Context, cell):
    (h,) = cell
    heads = len(ctx.value("alibi_slopes"))
    k, d, c = slope_parts(h, heads)
    value = 2.0 ** (-8.0 * k / d)
    if c == heads:
        note = f"H = {heads} is a power of two: m_h = 2^(−8(h+1)/H), heads counted from 0 (the paper's h = {h + 1})."
    elif h < c:
        note = (f"H = {heads} is not a power of two: the first c = 2^⌊log₂ {heads}⌋ = {c} heads take the {c}-head "
                f"slopes 2^(−8(h+1)/{c}).")
    else:
        e = h - c
        where = (f"larger than all of the first {c} (m_0 = {2.0 ** (-8.0 / c):.4g})" if e == 0 else
                 f"between m_{e - 1} = {2.0 ** (-8.0 * e / c):.4g} and m_{e} = {2.0 ** (-8.0 * (e + 1) / c):.4g}")
        note = (f"Head {h} is one of the last H − c = {heads - c}: it takes slope {2 * e} (counted from 0) of "
                f"the {2 * c}-head sequence 2^(−8(k+1)/{2 * c}), i.e. [0::2][{e}], which is {where}.")
    return _simple(ctx, "alibi_slopes", cell, f"m_{{{h}}}", f"m_{h}", rf"2^{{-8 \cdot {k} / {d}}}", f"2^(−8·{k}/{d})",
                   rf"2^{{{fmt(-8.0 * k / d, 4)}}}", f"2^({fmt(-8.0 * k / d, 4, False)})", value, note)


def _compared_mask(key: str):
    def explain_mask(ctx: Context, cell):
        i, j = cell
        kind, arg = ctx.trace.facts["rules"][key]
        ok, rule = rule_says(kind, arg, i, j)
        name = RULES[kind].symbol
        return _simple(ctx, key, cell, f"{name}_{{{i},{j}}}", f"{name}[{i},{j}]",
                       rf"[\text{{query {i} may see key {j}}}]", f"[query {i} may see key {j}]",
                       rf"\text{{{rule}}}", rule, float(ok),
                       f"1: query {i} (“{ctx.word(i)}”) may attend to key {j} (“{ctx.word(j)}”); 0: hidden.")
    return explain_mask


for _key in ("mask_w", "mask_w1", "mask_causal", "mask_padding"):
    register(_key, kind=KIND)(_compared_mask(_key))


@register("sink_weights", kind=KIND)
def _sink(ctx: Context, cell):
    """A_ij = e^{x_ij − μ} / (e^{z_h − μ} + Σ_j' e^{x_ij' − μ}), x = (the scores softmax reads) / T."""
    i, j = cell
    f = ctx.trace.facts
    sink, h, temp, src = f["settings"].sink, f["head"], f["t"], f["logits"]
    row = [float(v) / temp for v in ctx.value(src)[i]]                         # (n_k,)
    finite = [v for v in row if math.isfinite(v)] + [sink]
    mu = max(finite)
    e = [math.exp(v - mu) for v in row] + [math.exp(sink - mu)]
    over, over_text = ("" if temp == 1 else "/T"), ("" if temp == 1 else f"/{temp:g}")
    exps = [r"e^{-\infty}" if math.isinf(v) else rf"e^{{{ctx.num(v)} - {ctx.factor(mu)}}}" for v in row]
    exps_text = ["e^(−∞)" if math.isinf(v) else f"e^({ctx.num_text(v)} − {ctx.factor_text(mu)})" for v in row]
    exps.append(rf"\underbrace{{e^{{{fmt(sink, 3)} - {ctx.factor(mu)}}}}}_{{\text{{sink}}}}")
    exps_text.append(f"e^({fmt(sink, 3, False)} − {ctx.factor_text(mu)}) [sink]")
    total = math.fsum(e)
    value = e[j] / total
    shown, shown_text, hidden = softmax_fraction(ctx, exps, exps_text, e, j, total,
                                                 masked=[math.isinf(v) for v in row] + [False])
    x, x_text = ctx.ref(src, (i, j)), ctx.ref_text(src, (i, j))
    xj, xj_text = ctx.ref(src, (i, "j'")), ctx.ref_text(src, (i, "j'"))            # the sum runs over j′
    sym = (rf"\frac{{e^{{{x}{over} - \mu}}}}{{e^{{z_{{{h}}} - \mu}} + \sum_{{j'}} e^{{{xj}{over} - \mu}}}},"
           rf"\ \mu = \max(\max_{{j'}} {xj}{over},\ z_{{{h}}})")
    text_sym = (f"e^({x_text}{over_text} − μ) / (e^(z_{h} − μ) + Σ_j' e^({xj_text}{over_text} − μ)), "
                f"μ = max(max_j' {xj_text}{over_text}, z_{h})")
    keys = 1 - e[-1] / total
    note = (f"The sink z_{h} = {fmt(sink, 3, False)} adds e^(z_{h} − μ) = {ctx.num_text(e[-1])} to the denominator "
            f"only: row {i} keeps {ctx.num_text(keys)} of its weight for the keys, the sink takes "
            f"{ctx.num_text(e[-1] / total)}." + ("" if temp == 1 else f" The scores are divided by T = {temp:g} "
                                                 "first; z_h is not."))
    if all(math.isinf(v) for v in row):
        note = f"Every key is hidden for query {i}: the sink takes the whole row, and every key gets 0 (no NaN)."
    lhs, lhs_text = ctx.ref("sink_weights", (i, j)), ctx.ref_text("sink_weights", (i, j))     # A′_h, not A_h
    return Explanation("sink_weights", cell, rf"{lhs} = {sym}", shown, rf"{lhs} = {ctx.num(value)}", value,
                       f"{lhs_text} = {text_sym}\n  = {shown_text}\n  = {ctx.num_text(value)}", note=note,
                       n_terms=len(e), n_elided=hidden, reads=tuple((src, (i, jj)) for jj in range(len(row))))


@register("row_sums", kind=KIND)
def _row_sum(ctx: Context, cell):
    i, part = cell
    final = ctx.trace.facts["final"]                                        # A_h, or A′_h with a sink
    a = [float(v) for v in ctx.value(final)[i]]
    total = math.fsum(a)
    shown, hidden = join_terms([ctx.num(v) for v in a])
    shown_text, _ = join_terms([ctx.num_text(v) for v in a], latex=False)
    reads = [(final, (i, j)) for j in range(len(a))]
    row, row_text = rf"\textstyle\sum_j {ctx.ref(final, (i, 'j'))}", f"Σ_j {ctx.ref_text(final, (i, 'j'))}"
    if part == 0:
        e = _simple(ctx, "row_sums", cell, rf"\text{{row sum}}_{{{i}}}", f"row sum[{i}]", row, row_text,
                    shown, shown_text, total, f"Row {i}'s weights added up.", reads)
    else:
        e = _simple(ctx, "row_sums", cell, rf"\text{{sink share}}_{{{i}}}", f"sink share[{i}]",
                    rf"1 - {row}", f"1 − {row_text}", rf"1 - ({shown})", f"1 − ({shown_text})", 1.0 - total,
                    "What the keys do not get goes to the sink: e^(z_h) divided by the whole denominator.", reads)
    return replace(e, n_terms=len(a), n_elided=hidden)
