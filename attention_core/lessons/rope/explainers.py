"""Click a cell of the RoPE lesson (kind "rope"): the arithmetic behind it, with the live numbers.

    q, k           Q_h[i, j] = Σ_m X[i, m] W_Q[m, h·d_k + j] (+ b_Q), K with its KV head's columns
    angles         p·θ_i = p · b^(−2i/d_k), token i at position p
    q_rot, k_rot   one entry of a turned pair: a·cos − b·sin (the first), a·sin + b·cos (the second)
    scores         a dot product of the rotated rows (divided by √d_k for Ŝ)
"""
from __future__ import annotations

import math

from ...explanations import Context, Explanation, fmt, register
from .notation import base_tex
from .rotation import pair_columns

def _projection_of(key: str):
    """Q_h[i, j] = Σ_m X[i, m] W_Q[m, h·d_k + j] (+ b_Q[h·d_k + j]); K with its KV head's columns."""
    def explain_projection(ctx: Context, cell):
        i, j = cell
        f = ctx.trace.facts
        block = f["head"] if key == "q" else f["kv_head"]
        col = block * f["d_k"] + j
        x, w = ctx.value("x"), ctx.value(f"w_{key}")
        terms = [(ctx.ref("x", (i, m)), ctx.ref_text("x", (i, m)), x[i, m], ctx.ref(f"w_{key}", (m, col)),
                  ctx.ref_text(f"w_{key}", (m, col)), w[m, col], ("x", (i, m)), (f"w_{key}", (m, col)))
                 for m in range(x.shape[1])]
        rhs = rf"\sum_{{m=0}}^{{{x.shape[1] - 1}}} {ctx.ref('x', (i, 'm'))}\, {ctx.ref(f'w_{key}', ('m', col))}"
        rhs_text = f"Σ_m {ctx.ref_text('x', (i, 'm'))}·{ctx.ref_text(f'w_{key}', ('m', col))}"
        bias = None
        big = key.upper()
        if f"b_{key}" in ctx.trace:
            bias = (ctx.ref(f"b_{key}", (col,)), ctx.ref_text(f"b_{key}", (col,)), ctx.value(f"b_{key}")[col],
                    (f"b_{key}", (col,)))
        note = f"Row {i} (“{ctx.word(i)}”) of X (= X_emb: RoPE adds nothing to X) times column {col} of W_{big}"
        note += f", plus b_{big}[{col}]." if bias else "."
        if f["n_heads"] > 1:
            note += (f" Column {j} of {'head' if key == 'q' else 'KV head'} {block}'s block is column "
                     f"{block}·{f['d_k']} + {j} = {col} of W_{big}.")
        return ctx.sum_of_products(key, cell, rhs, rhs_text, terms, bias=bias, note=note)
    return explain_projection


for _key in ("q", "k"):
    register(_key, kind="rope")(_projection_of(_key))


@register("angles", kind="rope")
def _angle(ctx: Context, cell):
    row, i = cell
    f = ctx.trace.facts
    p = row + f.get("offset", 0)
    d, base = f["d_k"], float(f["base"])
    theta = base ** (-2.0 * i / d)
    value = p * theta
    b = base_tex(base)
    symbolic = rf"p\,\theta_{{{i}}} = p \cdot b^{{-2i/d_k}},\ p={p},\ i={i},\ d_k={d},\ b={b}"
    shown = rf"{p} \cdot {b}^{{-{2 * i}/{d}}} = {p} \cdot {ctx.num(theta)}"
    text = (f"p·θ_{i} = p · b^(−2i/d_k), p={p}, i={i}, d_k={d}, b={base_tex(base, False)}\n"
            f"  = {p} · {base_tex(base, False)}^(−{2 * i}/{d}) = {p} · {ctx.num_text(theta)}\n  = {ctx.num_text(value)}")
    turns = value / (2 * math.pi)
    note = (f"Token {row} (“{ctx.word(row)}”) stands at position p = {p}; pair {i} turns θ_{i} = "
            f"{fmt(theta, ctx.precision, False)} rad per position, so {fmt(value, ctx.precision, False)} rad here "
            f"({math.degrees(value) % 360:.1f}° after {int(turns)} whole turn{'s' if int(turns) != 1 else ''}). "
            f"b is the base, {base_tex(base, False)}.")
    return Explanation("angles", cell, symbolic, shown, rf"p\,\theta_{{{i}}} = {ctx.num(value)}", value, text,
                       note=note, n_terms=1)


# a pair (a, b) turned by φ is (a cos φ − b sin φ, a sin φ + b cos φ): for its first and its second entry, the
# function that turns a, the one that turns b, the sign between them, as LaTeX and as text
ENTRIES = {False: ("cos", "sin", -1.0, "-", "−"), True: ("sin", "cos", 1.0, "+", "+")}


def _rotation_of(key: str):
    def explain_rotation(ctx: Context, cell):
        row, col = cell
        f = ctx.trace.facts
        p = row + f.get("offset", 0)
        d, half = f["d_k"], f["d_k"] // 2
        src = key[0]
        if f["pairing"] == "interleaved":
            i, second = divmod(col, 2)
        else:
            i, second = col % half, col >= half
        c0, c1 = pair_columns(d, i, f["pairing"])
        angle = float(ctx.value("angles")[row, i])
        a, b = float(ctx.value(src)[row, c0]), float(ctx.value(src)[row, c1])
        cos, sin = math.cos(angle), math.sin(angle)
        f_a, f_b, sign, op, op_text = ENTRIES[bool(second)]
        t_a, t_b = (cos, sin) if f_a == "cos" else (sin, cos)                 # what a and b are multiplied by
        value = math.fsum([a * t_a, sign * b * t_b])
        lhs, lhs_text = ctx.ref(key, cell), ctx.ref_text(key, cell)
        x0, x1, t0, t1 = (ctx.ref(src, (row, c0)), ctx.ref(src, (row, c1)), ctx.ref_text(src, (row, c0)),
                          ctx.ref_text(src, (row, c1)))
        ang = rf"{p}\theta_{{{i}}}"
        tex_a, tex_b = "\\" + f_a, "\\" + f_b                                # \cos, \sin
        symbolic = rf"{lhs} = {x0} {tex_a} {ang} {op} {x1} {tex_b} {ang}"
        shown = rf"{ctx.factor(a)} \cdot {ctx.factor(t_a)} {op} {ctx.factor(b)} \cdot {ctx.factor(t_b)}"
        text = (f"{lhs_text} = {t0}·{f_a}({p}θ_{i}) {op_text} {t1}·{f_b}({p}θ_{i})\n  = {ctx.factor_text(a)}·"
                f"{ctx.factor_text(t_a)} {op_text} {ctx.factor_text(b)}·{ctx.factor_text(t_b)}\n"
                f"  = {ctx.num_text(value)}")
        note = (f"Row {row} (“{ctx.word(row)}”) stands at position p = {p}. Its pair {i} is columns ({c0}, {c1}) in "
                f"the {f['pairing']} pairing; it turns by p·θ_{i} = {fmt(angle, ctx.precision, False)} rad (cos = "
                f"{fmt(cos, ctx.precision, False)}, sin = {fmt(sin, ctx.precision, False)}): the 2×2 rotation "
                f"[[cos, −sin], [sin, cos]] times ({fmt(a, ctx.precision, False)}, {fmt(b, ctx.precision, False)}); "
                f"this cell is its {'second' if second else 'first'} entry.")
        return Explanation(key, cell, symbolic, shown, f"{lhs} = {ctx.num(value)}", value, text, note=note, n_terms=2,
                           reads=((src, (row, c0)), (src, (row, c1)), ("angles", (row, i))))
    return explain_rotation


for _key in ("q_rot", "k_rot"):
    register(_key, kind="rope")(_rotation_of(_key))


def _dot_explainer(key: str):
    def explain_scores(ctx: Context, cell):
        i, j = cell
        f = ctx.trace.facts
        q, k = ctx.value("q_rot")[i], ctx.value("k_rot")[j]
        d = q.shape[0]
        p, p2 = i + f.get("offset", 0), j + f.get("offset", 0)
        terms = [(ctx.ref("q_rot", (i, c)), ctx.ref_text("q_rot", (i, c)), q[c], ctx.ref("k_rot", (j, c)),
                  ctx.ref_text("k_rot", (j, c)), k[c], ("q_rot", (i, c)), ("k_rot", (j, c))) for c in range(d)]
        total = rf"\sum_{{m=0}}^{{{d - 1}}} {ctx.ref('q_rot', (i, 'm'))}\, {ctx.ref('k_rot', (j, 'm'))}"
        total_text = f"Σ_m {ctx.ref_text('q_rot', (i, 'm'))}·{ctx.ref_text('k_rot', (j, 'm'))}"
        scaled = key == "scaled_scores"
        rhs = rf"\frac{{{total}}}{{\sqrt{{d_k}}}}" if scaled else total
        rhs_text = f"{total_text} / √d_k" if scaled else total_text
        note = (f"The rotated query of token {i} (“{ctx.word(i)}”, at position p = {p}) against the rotated key of "
                f"token {j} (“{ctx.word(j)}”, at p′ = {p2}): a dot product over the d_k = {d} columns"
                + (f", divided by √{d}" if scaled else "") + ". Pair i adds |q pair|·|k pair|·cos(φ_i + (p′ − p)·θ_i), "
                "φ_i the angle from the query's pair to the key's pair before the rotation: the positions enter "
                f"only as p′ − p = {p2} − {p} = {j - i}.")
        return ctx.sum_of_products(key, cell, rhs, rhs_text, terms,
                                   divisor=(rf"\sqrt{{{d}}}", f"√{d}", math.sqrt(d)) if scaled else None, note=note)
    return explain_scores


register("scaled_scores", kind="rope")(_dot_explainer("scaled_scores"))
register("scores", kind="rope", when=lambda t: t.facts.get("score") == "dot")(_dot_explainer("scores"))
