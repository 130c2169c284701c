"""Mixing explained: the context C = A V (a weighted average of the value rows), the heads side by side
(C = [C_0 | … | C_{H−1}]) and the output O = C W_O (+ b_O), back to d_model columns.

    >>> from attention_core import Config, run_forward
    >>> from attention_core.explanations import explain
    >>> config = Config(n_heads=2)
    >>> print(explain(run_forward(config), "concat", (0, 5), config=config).text)
    C[0,5] = C_h[0,m], h = 5 // d_v, m = 5 % d_v
      = h = 1, m = 1: C_1[0,1]
      = -1.880
"""
from __future__ import annotations

import math

import numpy as np

from .context import Context, Explanation
from .formatting import fmt
from .projections import project
from .registry import register


def _ties(values, top: int) -> list[int]:
    """The indices whose value equals values[top] (to 1e-12, relative)."""
    return [j for j, v in enumerate(values) if abs(v - values[top]) <= 1e-12 * max(1.0, abs(values[top]))]


@register("context")
def _context(ctx: Context, cell):
    """C_{i,m} = Σ_j A_{i,j} V_{j,m}: key j, dimension m (per head h: C_h = A_h V_h)."""
    v_key = "v_heads" if ctx.settings.n_heads > 1 else "v"
    *hp, i, m = cell
    hp = tuple(hp)
    vp = tuple(ctx.kv_head(h) for h in hp)                                 # KV head ⌊h/g⌋ with grouped-query attention
    a, v = ctx.value("weights")[(*hp, i)], ctx.value(v_key)[vp]             # (n_k,), (n_k, d_v)
    terms = [(ctx.ref("weights", (*hp, i, j)), ctx.ref_text("weights", (*hp, i, j)), a[j],
              ctx.ref(v_key, (*vp, j, m)), ctx.ref_text(v_key, (*vp, j, m)), v[j, m],
              ("weights", (*hp, i, j)), (v_key, (*vp, j, m))) for j in range(a.shape[0])]
    rhs = (rf"\sum_{{j=0}}^{{{a.shape[0] - 1}}} {ctx.ref('weights', (*hp, i, 'j'))}\, "
           rf"{ctx.ref(v_key, (*vp, 'j', m))}")
    rhs_text = f"Σ_j {ctx.ref_text('weights', (*hp, i, 'j'))}·{ctx.ref_text(v_key, (*vp, 'j', m))}"
    v_name = f"V_{vp[0]}" if vp else "V"
    total = math.fsum(float(x) for x in a)
    if total == 0:
        note = (f"Every key is hidden for query {i}: row {i} of the weights is all 0, so this context entry is 0 "
                f"(no average is taken).")
    else:
        top = int(np.argmax(a))
        tied = _ties([float(x) for x in a], top)
        if len(tied) == len(a):
            most = f"every key weighs the same, {fmt(a[top], ctx.precision, False)}"
        elif len(tied) > 1:
            most = (f"keys {say_keys(ctx, tied)} count most, with {fmt(a[top], ctx.precision, False)} each")
        else:
            most = f"“{ctx.word(top)}” (key {top}) counts most, with {fmt(a[top], ctx.precision, False)}"
        note = (f"A weighted average of column {m} of {v_name} over the keys, mixed by row {i} of the weights "
                f"(they sum to 1): {most}.")
    return ctx.sum_of_products("context", cell, rhs, rhs_text, terms, note=note)


def heads_side_by_side(n_heads: int) -> str:
    """'[C_0 | C_1]' for H = 2, '[C_0 | C_1 | C_2]' for 3, '[C_0 | … | C_7]' for 8: heads counted from 0, the last H − 1."""
    if n_heads <= 3:
        return "[" + " | ".join(f"C_{h}" for h in range(n_heads)) + "]"
    return f"[C_0 | … | C_{n_heads - 1}]"


def say_keys(ctx: Context, keys: list[int]) -> str:
    """'0 (“i”), 2 (“you”) and 3 (“today”)'."""
    named = [f"{j} (“{ctx.word(j)}”)" for j in keys]
    return named[0] if len(named) == 1 else ", ".join(named[:-1]) + " and " + named[-1]


@register("concat")
def _concat(ctx: Context, cell):
    """C = [C_0 | … | C_{H−1}]: column c of C is column c mod d_v of head ⌊c / d_v⌋'s context."""
    i, c = cell
    d_v = ctx.settings.d_v
    h, m = divmod(c, d_v)
    value = float(ctx.value("context")[h, i, m])
    lhs, lhs_text = ctx.ref("concat", cell), ctx.ref_text("concat", cell)
    return Explanation("concat", cell,
                       rf"{lhs} = (C_h)_{{{i},m}},\ h = \lfloor {c} / d_v \rfloor,\ m = {c} \bmod d_v",
                       rf"h = \lfloor {c}/{d_v} \rfloor = {h},\ m = {c} \bmod {d_v} = {m}:\ "
                       rf"{ctx.ref('context', (h, i, m))} = {ctx.num(value)}",
                       f"{lhs} = {ctx.num(value)}", value,
                       f"{lhs_text} = C_h[{i},m], h = {c} // d_v, m = {c} % d_v\n"
                       f"  = h = {h}, m = {m}: {ctx.ref_text('context', (h, i, m))}\n  = {ctx.num_text(value)}",
                       note=f"C = {heads_side_by_side(ctx.settings.n_heads)}: the {ctx.settings.n_heads} heads' "
                            f"contexts side by side, heads counted from 0. Columns {h * d_v}…{(h + 1) * d_v - 1} are "
                            f"head {h}'s C_{h}.", reads=(("context", (h, i, m)),))


@register("output")
def _output(ctx: Context, cell):
    """O_{i,j} = Σ_m C_{i,m} (W_O)_{m,j} (+ (b_O)_j), C the heads concatenated when H > 1."""
    i, j = cell
    c_key = "concat" if ctx.settings.n_heads > 1 else "context"
    b_key = "b_o" if "b_o" in ctx.trace else None
    whose = (f"the {ctx.settings.n_heads} heads' contexts side by side (C = "
             f"{heads_side_by_side(ctx.settings.n_heads)})" if c_key == "concat" else "the context C")
    return project(ctx, "output", cell, c_key, "w_o", b_key,
                   f"Row {i} (“{ctx.word(i)}”) of {whose}, mixed back to d_model columns by column {j} of W_O"
                   + (f", plus the bias b_O[{j}]." if b_key else "."))
