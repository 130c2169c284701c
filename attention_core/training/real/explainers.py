"""A real model's numbers explained through the same registry as the toy pages, with its real numbers.

Two trace kinds, registered when this package is imported:

  "real_attention" (one layer's attention, attention_layer.py): the forward pass's own explainers, unchanged, for
      every key the attention pages have (Q = X W_Q + b_Q, a head's block, S, Ŝ, M, S̃, A, C, [C_0 | …], O): a
      click on head h's weight A_h[i, j] shows the softmax of row i of S̃_h with its numbers, and one on Ŝ the dot
      product of q_i and k_j term by term. Their W_Q, W_K, W_V, W_O are not Steps (too large to copy per sentence):
      `WeightsContext` reads a key the trace lacks from trace.facts["params"], the checkpoint's float32 arrays.
      Q^R, K^R get their own explainer: the half pairing and θ_i' (llama3-scaled) Hugging Face's Llama uses.
  "real" (the whole pass, forward.py): the block page's explainers for the norms (γ, β are the checkpoint's), the
      residual adds, a layer's attention output (its attention Trace's O), and the logits (row i of N_f(X_L) times
      column v of W_U).
"""
from __future__ import annotations

import math
from types import SimpleNamespace

from ...explanations.block import BlockContext, _attn, _stream
from ...explanations.context import Context, Explanation
from ...explanations.formatting import fmt
from ...explanations.projections import project
from ...explanations.registry import EXPLAINERS, register
from .rope_scaling import rope_inverse_frequencies

ATTENTION_KIND, REAL_KIND = "real_attention", "real"
SHARED = ("q", "k", "v", "q_heads", "k_heads", "v_heads", "scores", "scaled_scores", "mask", "masked_scores",
          "weights", "context", "concat", "output")
MAX_LAYERS = 128


class WeightsContext(Context):
    """A Context that reads a parameter the trace does not keep as a Step (W_Q, W_U …) from facts["params"]."""

    def value(self, key: str):
        if key in self.trace:
            return self.trace[key].value
        return self.trace.facts["params"][key]


class RealBlockContext(WeightsContext, BlockContext):
    """The block page's symbols (N(X_0), X_1', Z) over a real trace, parameters read from the checkpoint."""


def _shared(fn):
    return lambda ctx, cell: fn(WeightsContext(ctx.trace, ctx.config, ctx.precision), cell)


for _key in SHARED:
    register(_key, kind=ATTENTION_KIND)(_shared(EXPLAINERS[("forward", _key)]))


def _rotation(ctx: Context, key: str, cell) -> Explanation:
    """(q^R_p)_m = q_{p,m} cos(pθ_i) − q_{p,m+d/2} sin(pθ_i) for m < d/2 (i = m), and
    q_{p,m} cos(pθ_i) + q_{p,m−d/2} sin(pθ_i) for m ≥ d/2 (i = m − d/2): Hugging Face's half pairing."""
    src = ctx.trace[key].inputs[0]
    h, p, m = cell
    row = ctx.value(src)[h, p]                                                  # (d_k,)
    d = row.shape[0]
    half = d // 2
    i, second = m % half, m >= half
    block = ctx.trace.facts["block"].facts["checkpoint"]
    theta = float(rope_inverse_frequencies(d, block.rope_theta, block.rope_scaling)[i])
    angle = p * theta
    partner = m - half if second else m + half
    a, b = float(row[m]), float(row[partner])
    c, s = math.cos(angle), math.sin(angle)
    value = a * c + b * s if second else a * c - b * s
    sign, sign_text = ("+", "+") if second else ("-", "−")
    lhs, lhs_text = ctx.ref(key, cell), ctx.ref_text(key, cell)
    x0, x1 = ctx.ref(src, (h, p, m)), ctx.ref(src, (h, p, partner))
    t0, t1 = ctx.ref_text(src, (h, p, m)), ctx.ref_text(src, (h, p, partner))
    prime = "'" if block.rope_scaling else ""          # the angle uses the scaled frequency θ_i' when there is one
    symbolic = rf"{lhs} = {x0} \cos(p\theta_{{{i}}}{prime}) {sign} {x1} \sin(p\theta_{{{i}}}{prime})"
    shown = rf"{ctx.factor(a)} \cdot {ctx.factor(c)} {sign} {ctx.factor(b)} \cdot {ctx.factor(s)}"
    scaled = (f" Llama 3's scaling (factor {fmt(block.rope_scaling['factor'], 3, False)}, original context "
              f"{int(block.rope_scaling['original_max_position_embeddings'])}) gives θ_{i}' = "
              f"{fmt(theta, ctx.precision, False)}." if block.rope_scaling else "")
    note = (f"Token {p} (“{ctx.word(p)}”) at position p = {p}. Columns {i} and {i + half} are pair {i} (the half "
            f"pairing: column m pairs with m ± d_k/2, as Hugging Face stores Llama's W_Q and W_K), turned by "
            f"p·θ_{i}{prime}, θ_{i} = {fmt(block.rope_theta, 6, False)}^(−2·{i}/{d}).{scaled} The angle is "
            f"{fmt(angle, ctx.precision, False)} radians: cos = {fmt(c, ctx.precision, False)}, "
            f"sin = {fmt(s, ctx.precision, False)}.")
    return Explanation(key, cell, symbolic, shown, f"{lhs} = {ctx.num(value)}", value,
                       f"{lhs_text} = {t0}·cos(pθ_{i}{prime}) {sign_text} {t1}·sin(pθ_{i}{prime})\n"
                       f"  = {ctx.factor_text(a)}·{ctx.factor_text(c)} {sign_text} {ctx.factor_text(b)}·{ctx.factor_text(s)}\n  = "
                       f"{ctx.num_text(value)}", note=note, n_terms=2, reads=((src, (h, p, m)), (src, (h, p, partner))))


for _key in ("q_rot", "k_rot"):
    register(_key, kind=ATTENTION_KIND)(lambda ctx, cell, key=_key: _rotation(ctx, key, cell))


def _x(ctx: Context, cell) -> Explanation:
    """The attention's X is the block's N(X_l): explained there, renamed."""
    parent, reads = ctx.trace.facts["block"], ctx.trace.facts["reads"]
    e = _stream(_block_context(parent, ctx), reads, cell)
    return Explanation("x", cell, e.symbolic, e.substituted, e.result, e.value, e.text,
                       note="X here is the stream this layer's attention reads. " + e.note, n_terms=e.n_terms,
                       reads=e.reads)


register("x", kind=ATTENTION_KIND)(_x)


def _block_context(trace, ctx: Context) -> RealBlockContext:
    c = trace.facts["checkpoint"]
    trace.facts.setdefault("arch", SimpleNamespace(n_layers=c.n_layers, mlp=c.mlp, eps=c.eps, norm=c.norm,
                                                   placement="pre"))
    return RealBlockContext(trace, ctx.config, ctx.precision)


def _real(fn):
    return lambda ctx, cell, key: fn(_block_context(ctx.trace, ctx), key, cell)


def _logits(ctx: RealBlockContext, key, cell) -> Explanation:
    i, v = cell
    piece = ctx.trace.facts["tokenizer"].piece(v)
    return project(ctx, key, cell, "ln_f", "w_u", None,
                   f"Row {i} (“{ctx.word(i)}”) of the final stream dotted with column {v} of W_U, the column of token "
                   f"{v} (“{piece}”): how strongly this row scores it as the next token.")


def _register_real():
    keys = [f"l{l}.{name}" for l in range(MAX_LAYERS) for name in ("ln1", "ln2", "mid", "out")] + ["ln_f"]
    for key in keys:
        register(key, kind=REAL_KIND)(lambda ctx, cell, key=key: _real(_stream)(ctx, cell, key))
    for l in range(MAX_LAYERS):
        register(f"l{l}.attn", kind=REAL_KIND)(lambda ctx, cell, key=f"l{l}.attn": _real(_attn)(ctx, cell, key))
    register("logits", kind=REAL_KIND)(lambda ctx, cell: _real(_logits)(ctx, cell, "logits"))


_register_real()


def _bias(ctx: Context, key: str, cell) -> Explanation:
    value = float(ctx.value(key)[cell])
    return ctx.leaf(key, cell, r"\text{trained}", "trained", value, ctx.num(value), ctx.num_text(value),
                    "A learned bias of this layer's attention, read from the checkpoint: no formula makes it.")


for _key in ("b_q", "b_k", "b_v", "b_o"):
    register(_key, kind=ATTENTION_KIND)(lambda ctx, cell, key=_key: _bias(ctx, key, cell))


def _looked_up(ctx: Context, key: str, cell) -> Explanation:
    """x_embed[i, j] = E[id_i, j]; pe[p, j] = E^pos[p, j]: a row of the checkpoint's table, looked up again."""
    i, j = cell
    if key == "x_embed":
        row, table, what = ctx.trace.facts["ids"][i], "tok_emb", f"token {i} (“{ctx.word(i)}”, id {ctx.trace.facts['ids'][i]})"
    else:
        row, table, what = i, "pos_emb", f"position {i}"
    value = float(ctx.trace.facts["params"][table][row, j])
    name, tex = ("E", "E") if table == "tok_emb" else ("E^pos", r"E^{\mathrm{pos}}")
    return ctx.leaf(key, cell, rf"{tex}_{{{row},{j}}}", f"{name}[{row},{j}]", value, ctx.num(value),
                    ctx.num_text(value), f"Column {j} of row {row} of the checkpoint's table {name}, for {what}.")


def _x0(ctx: Context, cell) -> Explanation:
    """X_0 = E[ids] (+ E^pos[0:n]): the looked-up row, plus GPT-2's learned position."""
    parts = [k for k in ("x_embed", "pe") if k in ctx.trace]
    values = [float(ctx.value(k)[cell]) for k in parts]
    value = math.fsum(values)
    lhs, lhs_text = ctx.ref("x", cell), ctx.ref_text("x", cell)
    refs, texts = [ctx.ref(k, cell) for k in parts], [ctx.ref_text(k, cell) for k in parts]
    return Explanation("x", cell, f"{lhs} = {' + '.join(refs)}", " + ".join(ctx.factor(v) for v in values),
                       f"{lhs} = {ctx.num(value)}", value,
                       f"{lhs_text} = {' + '.join(texts)}\n  = {' + '.join(ctx.factor_text(v) for v in values)}\n  = "
                       f"{ctx.num_text(value)}",
                       note=("The token's embedding plus its position's learned row"
                             + (" (GPT-2)." if ctx.trace.facts["checkpoint"].model_type == "gpt2" else ".")
                             if len(parts) == 2 else
                             "The token's embedding alone: a Llama-style model adds no position here (RoPE turns Q "
                             "and K by the position inside attention)."),
                       reads=tuple((k, cell) for k in parts))


register("x_embed", kind=REAL_KIND)(lambda ctx, cell: _looked_up(ctx, "x_embed", cell))
register("pe", kind=REAL_KIND)(lambda ctx, cell: _looked_up(ctx, "pe", cell))
register("x", kind=REAL_KIND)(_x0)
