"""The explainers of the K-composition's numbers (a Trace of kind "induction"): each a sum with its live terms.

    normed_parts   n_p[m] = γ_m (x_p[m] − μ(x_p)) / s      (β's row: β_m)
    key_parts      k^(p)[c] = Σ_m n_p[m] W_K[m, c]
    key            k_{j+1}[c] = Σ_p k^(p)[c]                the pieces' shares, summed
    score_parts    q_i · k^(p)_{j'} = Σ_c q_i[c] k^(p)_{j'}[c]
    scores         S[i, j'] = Σ_p q_i · k^(p)_{j'}         the pieces' shares, summed
"""
from __future__ import annotations

import math

from ...explanations import Context, Explanation, fmt, join_terms, register
from .composition import KIND


def _sum(ctx: Context, key, cell, lhs, lhs_text, symbolic, symbolic_text, addends, note, products=None):
    """value = Σ addends (or Σ a·b over `products`), with the live numbers written out (long sums elided)."""
    if products is not None:
        addends = [float(a) * float(b) for a, b in products]
        shown, hidden = join_terms([f"{ctx.factor(a)} \\cdot {ctx.factor(b)}" for a, b in products])
        shown_text, _ = join_terms([f"{ctx.factor_text(a)}·{ctx.factor_text(b)}" for a, b in products], latex=False)
    elif len(addends) <= 8:                   # a handful of pieces: every one written out
        shown, hidden = " + ".join(ctx.factor(a) for a in addends), 0
        shown_text = " + ".join(ctx.factor_text(a) for a in addends)
    else:
        shown, hidden = join_terms([ctx.factor(a) for a in addends])
        shown_text, _ = join_terms([ctx.factor_text(a) for a in addends], latex=False)
    value = math.fsum(float(a) for a in addends)
    return Explanation(key, cell, f"{lhs} = {symbolic}", shown, f"{lhs} = {ctx.num(value)}", value,
                       f"{lhs_text} = {symbolic_text}\n  = {shown_text}\n  = {ctx.num_text(value)}", note=note,
                       n_terms=len(addends), n_elided=hidden)


def _name(ctx: Context, p: int) -> str:
    return ctx.trace.facts["names"][p]


@register("normed_parts", kind=KIND)
def _normed_parts(ctx: Context, cell):
    p, m = cell
    f = ctx.trace.facts
    lhs, lhs_text = rf"n_{{{p}}}[{m}]", f"n_{p}[{m}]"
    if p == len(f["names"]) - 1:
        beta = float(ctx.value("normed_parts")[p, m])
        return Explanation("normed_parts", cell, rf"{lhs} = \beta_{{{m}}}", ctx.num(beta), f"{lhs} = {ctx.num(beta)}",
                           beta, f"{lhs_text} = β[{m}]\n  = {ctx.num_text(beta)}",
                           note="LayerNorm's shift β is added once to the row: a piece of its own, not scaled by s.",
                           independent=False)
    x = ctx.value("parts")[p]
    mu = math.fsum(float(v) for v in x) / len(x)
    g, s = float(ctx.value("gamma")[m]), f["scale"]
    value = g * (float(x[m]) - mu) / s
    note = (f"The piece “{_name(ctx, p)}”, centred on its own mean μ(x_p) = {mu:.4f} and divided by the whole row's "
            f"scale s = √(σ² + ε) = {s:.4f} (σ² of the whole row, ε = {f['eps']:g}).")
    return Explanation("normed_parts", cell, rf"{lhs} = \gamma_{{{m}}} \frac{{x_{{{p}}}[{m}] - \mu(x_{{{p}}})}}{{s}}",
                       rf"{ctx.factor(g)} \cdot \frac{{{ctx.factor(x[m])} - {ctx.factor(mu)}}}{{{ctx.num(s)}}}",
                       f"{lhs} = {ctx.num(value)}", value,
                       f"{lhs_text} = γ[{m}] (x_{p}[{m}] − μ(x_{p})) / s\n  = {ctx.num_text(g)}·({ctx.num_text(x[m])} − "
                       f"{ctx.num_text(mu)}) / {ctx.num_text(s)}\n  = {ctx.num_text(value)}", note=note)


@register("key_parts", kind=KIND)
def _key_parts(ctx: Context, cell):
    p, c = cell
    n, w = ctx.value("normed_parts")[p], ctx.value("w_k")[:, c]
    return _sum(ctx, "key_parts", cell, rf"k^{{({p})}}[{c}]", f"k^({p})[{c}]", rf"\sum_m n_{{{p}}}[m]\, W_K[m, {c}]",
                f"Σ_m n_{p}[m] W_K[m,{c}]", None, f"The share of “{_name(ctx, p)}” in the key's column {c}.",
                products=list(zip(n, w)))


@register("key", kind=KIND)
def _key(ctx: Context, cell):
    (c,) = cell
    parts = ctx.value("key_parts")[:, c]
    return _sum(ctx, "key", cell, rf"k_{{j+1}}[{c}]", f"k_j+1[{c}]", rf"\sum_p k^{{(p)}}[{c}]", f"Σ_p k^(p)[{c}]",
                list(parts), "The pieces' shares, in order: " + ", ".join(ctx.trace.facts["names"]) + ".")


@register("score_parts", kind=KIND)
def _score_parts(ctx: Context, cell):
    p, k = cell
    q, kp = ctx.value("query"), ctx.value("key_parts_all")[p, k]
    i = ctx.trace.facts["i"]
    return _sum(ctx, "score_parts", cell, rf"q_{{{i}}} \cdot k^{{({p})}}_{{{k}}}", f"q_{i}·k^({p})_{k}",
                rf"\sum_c q_{{{i}}}[c]\, k^{{({p})}}_{{{k}}}[c]", f"Σ_c q_{i}[c] k^({p})_{k}[c]", None,
                f"How much “{_name(ctx, p)}” at key {k} adds to query {i}'s score for it.", products=list(zip(q, kp)))


@register("scores", kind=KIND)
def _scores(ctx: Context, cell):
    (k,) = cell
    f = ctx.trace.facts
    parts = ctx.value("score_parts")[:, k]
    note = ("The pieces' shares of this score, in order: " + ", ".join(f"{name} {fmt(v, 3, latex=False)}"
                                                                       for name, v in zip(f["names"], parts)) + ".")
    return _sum(ctx, "scores", cell, rf"S[{f['i']}, {k}]", f"S[{f['i']},{k}]", rf"\sum_p q_{{{f['i']}}} \cdot "
                rf"k^{{(p)}}_{{{k}}}", f"Σ_p q_{f['i']}·k^(p)_{k}", list(parts), note)
