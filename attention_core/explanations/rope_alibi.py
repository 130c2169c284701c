"""Today's positions explained: RoPE's rotation of a query or key row (Q^R, K^R: pairs of columns turned
by p·θ_i) and ALiBi's bias (B = −m_h·|i − j|, added to the scores).

    >>> from attention_core import Config, run_forward
    >>> from attention_core.explanations import explain
    >>> config = Config(positional="alibi", n_heads=2)
    >>> print(explain(run_forward(config), "alibi", (1, 3, 0), config=config).text)
    B_1[3,0] = −m_1·|3 − 0|
      = −0.004·3
      = -0.012
"""
from __future__ import annotations

import math

from ..math.alibi import alibi_slopes
from .context import Context, Explanation
from .formatting import fmt
from .registry import register, register_each
from .scores import pair_note


def _rotation(ctx: Context, key: str, cell):
    """(q^R_p)_{2i} = q_{p,2i} cos(pθ_i) − q_{p,2i+1} sin(pθ_i); (q^R_p)_{2i+1} = q_{p,2i} sin(pθ_i) + q_{p,2i+1} cos(pθ_i)."""
    src = ctx.trace[key].inputs[0]
    *hp, p, col = cell
    row = ctx.value(src)[(*hp, p)]                                        # (d_k,)
    d = row.shape[0]
    i, odd = divmod(col, 2)
    base = ctx.config.pe_base if ctx.config is not None else float(ctx.trace.facts.get("pe_base", 10_000.0))
    theta = base ** (-2.0 * i / d)
    angle = p * theta
    a, b = float(row[2 * i]), float(row[2 * i + 1])
    c, s_ = math.cos(angle), math.sin(angle)
    value = a * s_ + b * c if odd else a * c - b * s_
    lhs, lhs_text = ctx.ref(key, cell), ctx.ref_text(key, cell)
    x0, x1 = ctx.ref(src, (*hp, p, 2 * i)), ctx.ref(src, (*hp, p, 2 * i + 1))
    t0, t1 = ctx.ref_text(src, (*hp, p, 2 * i)), ctx.ref_text(src, (*hp, p, 2 * i + 1))
    if odd:
        symbolic = rf"{lhs} = {x0} \sin(p\theta_{{{i}}}) + {x1} \cos(p\theta_{{{i}}})"
        shown = rf"{ctx.factor(a)} \cdot {ctx.factor(s_)} + {ctx.factor(b)} \cdot {ctx.factor(c)}"
        text_sym, text_shown = (f"{t0}·sin(pθ_{i}) + {t1}·cos(pθ_{i})",
                                f"{ctx.factor_text(a)}·{ctx.factor_text(s_)} + {ctx.factor_text(b)}·{ctx.factor_text(c)}")
    else:
        symbolic = rf"{lhs} = {x0} \cos(p\theta_{{{i}}}) - {x1} \sin(p\theta_{{{i}}})"
        shown = rf"{ctx.factor(a)} \cdot {ctx.factor(c)} - {ctx.factor(b)} \cdot {ctx.factor(s_)}"
        text_sym, text_shown = (f"{t0}·cos(pθ_{i}) − {t1}·sin(pθ_{i})",
                                f"{ctx.factor_text(a)}·{ctx.factor_text(c)} − {ctx.factor_text(b)}·{ctx.factor_text(s_)}")
    note = (f"Token {p} (“{ctx.word(p)}”) sits at position p = {p}. Pair i = {i} (columns {2 * i}, {2 * i + 1}) turns "
            f"at θ_{i} = {fmt(base, 6, False)}^(−2·{i}/{d}) = {fmt(theta, ctx.precision, False)} radians per position, "
            f"so by p·θ_{i} = {fmt(angle, ctx.precision, False)} radians here: cos = {fmt(c, ctx.precision, False)}, "
            f"sin = {fmt(s_, ctx.precision, False)}.")
    return Explanation(key, cell, symbolic, shown, f"{lhs} = {ctx.num(value)}", value,
                       f"{lhs_text} = {text_sym}\n  = {text_shown}\n  = {ctx.num_text(value)}", note=note,
                       n_terms=2, reads=((src, (*hp, p, 2 * i)), (src, (*hp, p, 2 * i + 1))))


@register("alibi")
def _alibi(ctx: Context, cell):
    """B_ij = −m_h·|i − j|, m_h the paper's slope of head h."""
    *hp, i, j = cell
    h = hp[0] if hp else 0
    n_heads = ctx.settings.n_heads
    m = float(alibi_slopes(n_heads)[h])
    value = 0.0 - m * abs(i - j)
    lhs, lhs_text = ctx.ref("alibi", cell), ctx.ref_text("alibi", cell)
    c = 2 ** int(math.floor(math.log2(n_heads)))
    if h < c:
        rule = f"m_{h} = 2^(−8·{h + 1}/{c}) = {fmt(m, ctx.precision, False)}"
    else:
        k = 2 * (h - c) + 1
        rule = (f"{n_heads} is not a power of two: head {h} takes every other slope of the {2 * c}-head sequence, "
                f"m_{h} = 2^(−8·{k}/{2 * c}) = {fmt(m, ctx.precision, False)}")
    return Explanation("alibi", cell, rf"{lhs} = -m_{{{h}}}\, |{i} - {j}|",
                       rf"-{ctx.factor(m)} \cdot {abs(i - j)}", f"{lhs} = {ctx.num(value)}", value,
                       f"{lhs_text} = −m_{h}·|{i} − {j}|\n  = −{ctx.factor_text(m)}·{abs(i - j)}\n  = {ctx.num_text(value)}",
                       note=f"Head {h}'s slope (heads counted from 0; the ALiBi paper counts from 1): {rule}. Key {j} is "
                            f"{abs(i - j)} token{'s' if abs(i - j) != 1 else ''} from query {i}, so its score is lowered "
                            f"by {abs(i - j)} × m_{h}.", independent=True)


@register("biased_scores")
def _biased(ctx: Context, cell):
    src = ctx.trace["biased_scores"].inputs[0]
    s_, b = float(ctx.value(src)[cell]), float(ctx.value("alibi")[cell])
    value = s_ + b
    lhs, lhs_text = ctx.ref("biased_scores", cell), ctx.ref_text("biased_scores", cell)
    i, j = cell[-2:]
    return Explanation("biased_scores", cell, rf"{lhs} = {ctx.ref(src, cell)} + {ctx.ref('alibi', cell)}",
                       rf"{ctx.num(s_)} + {ctx.factor(b)}", f"{lhs} = {ctx.num(value)}", value,
                       f"{lhs_text} = {ctx.ref_text(src, cell)} + {ctx.ref_text('alibi', cell)}\n"
                       f"  = {ctx.num_text(s_)} + {ctx.factor_text(b)}\n  = {ctx.num_text(value)}",
                       note=pair_note(ctx, i, j) + " The score plus ALiBi's distance penalty.",
                       n_terms=2, reads=((src, cell), ("alibi", cell)))


register_each(("q_rot", "k_rot"), _rotation)
