"""Clicking a cell of the KV cache page: the page's Context, and the projected rows' arithmetic.

`Cells` names a cached row by its token, as the page's formulas index it; `explainer` registers an explainer of
this page's steps with a Cells context. `projected_cell` explains a cell of a projected row, x_i W[:, col] (+ b),
turned by RoPE at position i when the position is RoPE: the new query q_t and the cached keys and values.
"""
from __future__ import annotations

import math

import numpy as np

from ...explanations import Context, Explanation, register
from .settings import KIND

ALIBI_CELL = {True: "(B_{{{h}}})_{{{t},{j}}}", False: "B_{h}[{t},{j}]"}    # ALiBi's bias row t, LaTeX and text


class Cells(Context):
    """The page's cells named by token, as its formulas index them: a cached row r is written as its token
    p_r (ŝ_{h,j}, a_{h,j}, K^cache_{u,j,c} with j = p_r, the key's position), and ALiBi's bias row as
    (B_h)_{t,j}. The cells' reads stay the arrays' own indices."""

    def _by_token(self, key: str, index: tuple) -> tuple:
        if key not in self.trace:
            return tuple(index)
        axes, positions = self.trace[key].axes, self.trace.facts.get("positions", ())
        return tuple(positions[i] if a == "cached" and isinstance(i, (int, np.integer)) else i
                     for a, i in zip(axes, index))

    def ref(self, key: str, index: tuple) -> str:
        return self._named(key, index, latex=True)

    def ref_text(self, key: str, index: tuple) -> str:
        return self._named(key, index, latex=False)

    def _named(self, key: str, index: tuple, latex: bool) -> str:
        index = self._by_token(key, index)
        if key == "alibi_t":
            h, j = index
            return ALIBI_CELL[latex].format(h=h, t=self.trace.facts["t"], j=j)
        return super().ref(key, index) if latex else super().ref_text(key, index)


def explainer(key: str):
    """register(key) for this page's steps, the explainer handed a Cells context."""
    def decorate(fn):
        def run(ctx: Context, cell):
            return fn(ctx if isinstance(ctx, Cells) else Cells(ctx.trace, ctx.config, ctx.precision), cell)
        register(key, kind=KIND)(run)
        return fn
    return decorate


def minus(ctx: Context, v: float) -> tuple[str, str]:
    """A number subtracted, (LaTeX, text): '- 1.2', or '+ 12.978' for −12.978 (no double minus)."""
    v = float(v)
    return ((rf"+ {ctx.num(-v)}", f"+ {ctx.num_text(-v)}") if v < 0 else
            (rf"- {ctx.num(v)}", f"− {ctx.num_text(v)}"))


def _projection(ctx: Context, w_key: str, i: int, col: int) -> tuple[float, list, tuple]:
    """Row i of X times column col of W (+ b[col]): (value, terms for sum_of_products, bias or None)."""
    x, w = ctx.value("x"), ctx.value(w_key)
    b_key = "b_" + w_key[2:]
    terms = [(ctx.ref("x", (i, m)), ctx.ref_text("x", (i, m)), x[i, m], ctx.ref(w_key, (m, col)),
              ctx.ref_text(w_key, (m, col)), w[m, col], ("x", (i, m)), (w_key, (m, col))) for m in range(x.shape[1])]
    parts = [float(x[i, m]) * float(w[m, col]) for m in range(x.shape[1])]
    bias = None
    if b_key in ctx.trace:
        b = ctx.value(b_key)[col]
        bias = (ctx.ref(b_key, (col,)), ctx.ref_text(b_key, (col,)), b, (b_key, (col,)))
        parts.append(float(b))
    return math.fsum(parts), terms, bias


def projected_cell(ctx: Context, key: str, cell, w_key: str, i: int, block: int, width: int, c: int,
                   rotate: bool, what: str) -> Explanation:
    """A cell of a projected row: x_i W[:, block·width + c] (+ b), rotated by position i under RoPE. Head `block`
    (a query head h or a KV head u) owns W's columns block·width … (block + 1)·width − 1."""
    d_model = ctx.value("x").shape[1]
    w_sym, w_text = ctx.symbol(w_key)
    b_key = "b_" + w_key[2:]
    col = block * width + c
    head = "KV head" if key != "q_t" else "head"
    if not rotate:
        value, terms, bias = _projection(ctx, w_key, i, col)
        return ctx.sum_of_products(key, cell, rf"\sum_{{m=0}}^{{{d_model - 1}}} X_{{{i},m}} ({w_sym})_{{m,{col}}}",
                                   f"Σ_m X[{i},m]·{w_text}[m,{col}]", terms, bias=bias,
                                   note=f"{what}: row {i} (“{ctx.word(i)}”) of X times column {col} of {w_text}"
                                        + (f", plus {ctx.symbol(b_key)[1]}[{col}]" if bias else "")
                                        + f". {head.capitalize()} {block} owns {w_text}'s columns {block * width} … "
                                          f"{block * width + width - 1}; column {col} = {block}·{width} + {c} is its "
                                          f"column {c}.")
    pair, odd = divmod(c, 2)
    base, d = float(ctx.trace.facts["pe_base"]), width
    theta = base ** (-2.0 * pair / d)
    angle = i * theta
    cos, sin = math.cos(angle), math.sin(angle)
    (u0, terms0, _), (u1, terms1, _) = (_projection(ctx, w_key, i, block * width + 2 * pair),
                                        _projection(ctx, w_key, i, block * width + 2 * pair + 1))
    value = u0 * sin + u1 * cos if odd else u0 * cos - u1 * sin
    lhs, lhs_text = ctx.ref(key, cell), ctx.ref_text(key, cell)
    row = "q" if key == "q_t" else "k"                     # the row before the turn: q_t, k_j (docs/notation.md)
    plain = [(rf"({row}_{{{i}}})_{{{block},{2 * pair + e}}}", f"({row}_{i})[{block},{2 * pair + e}]") for e in (0, 1)]
    (a, a_text), (b, b_text) = plain
    # the pair's even column: u_0 cos − u_1 sin; its odd column: u_0 sin + u_1 cos
    (f0, v0), (f1, v1), sign, sign_text = ((("sin", sin), ("cos", cos), "+", "+") if odd
                                           else (("cos", cos), ("sin", sin), "-", "−"))
    symbolic = rf"{lhs} = {a} \{f0}({i}\theta_{{{pair}}}) {sign} {b} \{f1}({i}\theta_{{{pair}}})"
    shown = rf"{ctx.factor(u0)} \cdot {ctx.factor(v0)} {sign} {ctx.factor(u1)} \cdot {ctx.factor(v1)}"
    text = (f"{a_text}·{f0}({i}θ_{pair}) {sign_text} {b_text}·{f1}({i}θ_{pair})",
            f"{ctx.factor_text(u0)}·{ctx.factor_text(v0)} {sign_text} {ctx.factor_text(u1)}·{ctx.factor_text(v1)}")
    plus_b = f" + {ctx.symbol(b_key)[1]}" if b_key in ctx.trace else ""
    note = (f"{what}, turned by RoPE at position {i} (“{ctx.word(i)}”): pair {pair} (columns {2 * pair}, "
            f"{2 * pair + 1} of {head} {block}) by {i}·θ_{pair}, θ_{pair} = {base:g}^(−2·{pair}/{d}) = "
            f"{ctx.num_text(theta)}. Before the turn, {row}_{i} = x_{i}·{w_text}{plus_b} on those columns "
            f"({w_text}'s columns {block * width + 2 * pair}, {block * width + 2 * pair + 1}): {a_text} = "
            f"{ctx.num_text(u0)}, {b_text} = {ctx.num_text(u1)} (sums of {d_model} products).")
    reads = tuple(r for tm in terms0 + terms1 for r in (tm[6], tm[7]))
    return Explanation(key, cell, symbolic, shown, f"{lhs} = {ctx.num(value)}", value,
                       f"{lhs_text} = {text[0]}\n  = {text[1]}\n  = {ctx.num_text(value)}", note=note,
                       n_terms=2, reads=reads)
