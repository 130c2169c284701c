"""The projections explained: Q, K, V as rows of X times columns of W (+ b), and each head's block of them.

    >>> from attention_core import Config, run_forward
    >>> from attention_core.explanations import explain
    >>> config = Config(n_heads=2)
    >>> print(explain(run_forward(config), "k_heads", (1, 2, 3), config=config).text)
    K_1[2,3] = K[2, 1·d_k + 3]
      = K[2, 1·4 + 3] = K[2,7]
      = -2.271

`project` is the one sum of products here; the output O = C W_O (+ b_O) uses it too (mixing.py).
"""
from __future__ import annotations

from .context import Context, Explanation
from .registry import register_each


def project(ctx: Context, key, cell, x_key, w_key, b_key, note) -> Explanation:
    """out[i, j] = Σ_m x[i, m] w[m, j] (+ b[j])."""
    i, j = cell
    x, w = ctx.value(x_key), ctx.value(w_key)                               # (n, d_in), (d_in, d_out)
    terms = [(ctx.ref(x_key, (i, m)), ctx.ref_text(x_key, (i, m)), x[i, m],
              ctx.ref(w_key, (m, j)), ctx.ref_text(w_key, (m, j)), w[m, j], (x_key, (i, m)), (w_key, (m, j)))
             for m in range(x.shape[1])]
    d = x.shape[1] - 1
    rhs = rf"\sum_{{m=0}}^{{{d}}} {ctx.ref(x_key, (i, 'm'))}\, {ctx.ref(w_key, ('m', j))}"
    rhs_text = f"Σ_m {ctx.ref_text(x_key, (i, 'm'))}·{ctx.ref_text(w_key, ('m', j))}"
    bias = None
    if b_key is not None:
        bias = (ctx.ref(b_key, (j,)), ctx.ref_text(b_key, (j,)), ctx.value(b_key)[j], (b_key, (j,)))
    return ctx.sum_of_products(key, cell, rhs, rhs_text, terms, bias=bias, note=note)


def _projection(ctx: Context, key: str, cell) -> Explanation:
    """Q, K or V: row i of X times column j of W (+ b_j)."""
    i, j = cell
    b_key = f"b_{key}" if f"b_{key}" in ctx.trace else None
    return project(ctx, key, cell, "x", f"w_{key}", b_key,
                   f"Row {i} (“{ctx.word(i)}”) of X times column {j} of W_{key.upper()}"
                   + (f", plus bias b_{key.upper()}[{j}]." if b_key else "."))


def _head_split(ctx: Context, key: str, cell) -> Explanation:
    """Q_h[i, m] = Q[i, h·d_k + m]: head h (counted from 0) takes its own block of d_k columns of Q."""
    h, i, m = cell
    src = key.split("_")[0]
    width = ctx.trace[key].shape[2]
    col = h * width + m
    value = float(ctx.value(src)[i, col])
    lhs, lhs_text = ctx.ref(key, cell), ctx.ref_text(key, cell)
    d_name = "d_v" if src == "v" else "d_k"
    big = src.upper()
    f, c = ctx.trace.facts, ctx.config               # grouped-query attention: K and V are split into KV heads
    n_heads = f.get("n_heads") or getattr(c, "n_heads", 1)
    n_kv = f.get("n_kv_heads") or getattr(c, "n_kv_heads", 0) or n_heads
    who = "KV head" if src != "q" and n_kv < n_heads else "Head"
    return Explanation(key, cell, rf"{lhs} = {big}_{{{i},\, {h} \cdot {d_name} + {m}}}",
                       rf"{big}_{{{i},\, {h} \cdot {width} + {m}}} = {ctx.ref(src, (i, col))}",
                       f"{lhs} = {ctx.num(value)}", value,
                       f"{lhs_text} = {big}[{i}, {h}·{d_name} + {m}]\n  = {big}[{i}, {h}·{width} + {m}] = "
                       f"{ctx.ref_text(src, (i, col))}\n  = {ctx.num_text(value)}",
                       note=f"{who} {h} (heads counted from 0) owns columns {h * width}…{(h + 1) * width - 1} of "
                            f"{big}; its column {m} is column {col} of {big}.", reads=((src, (i, col)),))


register_each(("q", "k", "v"), _projection)
register_each(("q_heads", "k_heads", "v_heads"), _head_split)
