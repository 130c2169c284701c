"""The scores explained, one function per score: dot product (Σ_m q_m k_m), scaled (÷ √d_k), additive
(vᵀ tanh(W_1ᵀq + W_2ᵀk), Bahdanau) and bilinear (q W kᵀ, Luong's general). With heads, query head h
reads KV head ⌊h/g⌋; with RoPE, the rotated rows Q^R, K^R.

    >>> from attention_core import Config, run_forward
    >>> from attention_core.explanations import explain
    >>> config = Config(score="dot")
    >>> print(explain(run_forward(config), "scores", (0, 1), config=config).symbolic)
    S_{0,1} = \\sum_{m=0}^{3} Q_{0,m}\\, K_{1,m}
"""
from __future__ import annotations

import math

import numpy as np

from ..forward.claims import say
from ..forward.config import Config
from .context import Context, Explanation
from .formatting import fmt, join_terms
from .registry import register
from .symbols import SYMBOLS


def _qk(ctx: Context) -> tuple[str, str]:
    """The query and key steps the scores read: rotated by RoPE if the trace has them, per head with heads."""
    if "q_rot" in ctx.trace:
        return "q_rot", "k_rot"
    return ("q_heads", "k_heads") if ctx.settings.n_heads > 1 else ("q", "k")


def _rows(ctx: Context, key: str, cell) -> tuple[tuple, tuple, int, int]:
    """(query index prefix, key index prefix, i, j) for a (head?, i, j) cell of a score-shaped step."""
    if len(cell) == 3:
        h, i, j = cell
        return (h, i), (ctx.kv_head(h), j), i, j          # query head h reads KV head ⌊h/g⌋
    i, j = cell
    return (i,), (j,), i, j


def _dot_terms(ctx: Context, cell):
    q_key, k_key = _qk(ctx)
    qi, kj, i, j = _rows(ctx, "scores", cell)
    q, k = ctx.value(q_key)[qi], ctx.value(k_key)[kj]                      # (d_k,), (d_k,)
    terms = [(ctx.ref(q_key, (*qi, m)), ctx.ref_text(q_key, (*qi, m)), q[m],
              ctx.ref(k_key, (*kj, m)), ctx.ref_text(k_key, (*kj, m)), k[m], (q_key, (*qi, m)), (k_key, (*kj, m)))
             for m in range(q.shape[0])]
    rhs = rf"\sum_{{m=0}}^{{{q.shape[0] - 1}}} {ctx.ref(q_key, (*qi, 'm'))}\, {ctx.ref(k_key, (*kj, 'm'))}"
    rhs_text = f"Σ_m {ctx.ref_text(q_key, (*qi, 'm'))}·{ctx.ref_text(k_key, (*kj, 'm'))}"
    return terms, rhs, rhs_text, i, j


def pair_note(ctx: Context, i: int, j: int) -> str:
    return f"Query {i} (“{ctx.word(i)}”) against key {j} (“{ctx.word(j)}”)."


DOT_NOTE = (" A dot product: positive when the two point less than 90° apart, negative when more, and the "
            "further from 0 the longer they are.")


@register("scores")
def _scores(ctx: Context, cell):
    score = ctx.settings.score
    if score in ("dot", "scaled_dot"):
        terms, rhs, rhs_text, i, j = _dot_terms(ctx, cell)
        raw = (" These are the raw scores S; the next step divides them by √d_k (Ŝ)." if score == "scaled_dot"
               else "")
        return ctx.sum_of_products("scores", cell, rhs, rhs_text, terms, note=pair_note(ctx, i, j) + DOT_NOTE + raw)
    return (_additive if score == "additive" else _bilinear)(ctx, cell)


def spread(values) -> float:
    """Standard deviation of the finite entries (0 for fewer than two)."""
    v = np.asarray(values, dtype=np.float64).ravel()
    v = v[np.isfinite(v)]
    return float(np.std(v)) if v.size > 1 else 0.0


@register("scaled_scores")
def _scaled_scores(ctx: Context, cell):
    """Ŝ_ij = S_ij / √d_k = (Σ_m q_{i,m} k_{j,m}) / √d_k."""
    terms, rhs, rhs_text, i, j = _dot_terms(ctx, cell)
    d_k = ctx.settings.d_k
    q_key, k_key = _qk(ctx)
    hp = cell[:-2]
    raw, raw_text = ctx.ref("scores", cell), ctx.ref_text("scores", cell)
    sym = SYMBOLS["scaled_scores"][1]
    settings = ctx.config if ctx.config is not None else Config(score="scaled_dot")   # a scaled_scores step: scaled dot
    why = [say("scaling_stops_growth", settings), say("scaling_unit_spread", settings)]
    measured = (f"Here the entries of {SYMBOLS[q_key][1]}{'_' + str(hp[0]) if hp else ''} and "
                f"{SYMBOLS[k_key][1]}{'_' + str(ctx.kv_head(hp[0])) if hp else ''} have standard deviations "
                f"{fmt(spread(ctx.value(q_key)[hp]), 2, False)} and "
                f"{fmt(spread(ctx.value(k_key)[tuple(ctx.kv_head(h) for h in hp)]), 2, False)}, "
                f"and row {i} of {sym}{'_' + str(hp[0]) if hp else ''} has standard deviation "
                f"{fmt(spread(ctx.value('scaled_scores')[(*hp, i)]), 2, False)}.")
    note = (pair_note(ctx, i, j) + f" The raw score {raw_text} divided by √d_k = √{d_k} = "
            f"{fmt(math.sqrt(d_k), ctx.precision, False)}: {why[0]}. For scale: {why[1]}. {measured}")
    return ctx.sum_of_products(
        "scaled_scores", cell, rf"\frac{{{raw}}}{{\sqrt{{d_k}}}} = \frac{{{rhs}}}{{\sqrt{{d_k}}}}",
        f"{raw_text} / √d_k = ({rhs_text}) / √d_k", terms,
        divisor=(rf"\sqrt{{{d_k}}}", f"√{d_k}", math.sqrt(d_k)), note=note, extra_reads=())


def _additive(ctx: Context, cell):
    """S_ij = vᵀ tanh(W_1ᵀ q_i + W_2ᵀ k_j) = Σ_a v_a tanh((q_i W_1)_a + (k_j W_2)_a), q_i, k_j rows of Q_h, K_h."""
    q_key, k_key = _qk(ctx)
    qi, kj, i, j = _rows(ctx, "scores", cell)
    hp = qi[:-1]                                                           # (h,) or ()
    q, k = ctx.value(q_key)[qi], ctx.value(k_key)[kj]                      # (d_k,)
    w_1, w_2, v_a = ctx.value("w_a_q")[hp], ctx.value("w_a_k")[hp], ctx.value("v_a")[hp]
    d_k, d_a = w_1.shape
    u = [math.fsum(q[m] * w_1[m, a] for m in range(d_k)) for a in range(d_a)]    # (q_i W_1)_a
    r = [math.fsum(k[m] * w_2[m, a] for m in range(d_k)) for a in range(d_a)]    # (k_j W_2)_a
    hidden = [math.tanh(u[a] + r[a]) for a in range(d_a)]
    value = math.fsum(v_a[a] * hidden[a] for a in range(d_a))
    lhs, lhs_text = ctx.ref("scores", cell), ctx.ref_text("scores", cell)
    qa, ka = ctx.ref(q_key, (*qi, ":")), ctx.ref(k_key, (*kj, ":"))
    w1, w2, v = ctx.ref("w_a_q", (*hp, ":", "a")), ctx.ref("w_a_k", (*hp, ":", "a")), ctx.ref("v_a", (*hp, "a"))
    symbolic = (rf"{lhs} = \sum_{{a=0}}^{{{d_a - 1}}} {v} \tanh\!\big({qa} \cdot {w1} + {ka} \cdot {w2}\big)")
    shown, hidden_n = join_terms([rf"{ctx.factor(v_a[a])} \tanh({ctx.num(u[a])} + {ctx.factor(r[a])})"
                                  for a in range(d_a)])
    shown_text, _ = join_terms([f"{ctx.factor_text(v_a[a])}·tanh({ctx.num_text(u[a])} + {ctx.factor_text(r[a])})"
                                for a in range(d_a)], latex=False)
    reads = [("v_a", (*hp, a)) for a in range(d_a)] + [(q_key, (*qi, m)) for m in range(d_k)] + \
            [(k_key, (*kj, m)) for m in range(d_k)]
    text = (f"{lhs_text} = Σ_a {ctx.ref_text('v_a', (*hp, 'a'))}·tanh({ctx.ref_text(q_key, (*qi, ':'))}·"
            f"{ctx.ref_text('w_a_q', (*hp, ':', 'a'))} + {ctx.ref_text(k_key, (*kj, ':'))}·"
            f"{ctx.ref_text('w_a_k', (*hp, ':', 'a'))})\n  = {shown_text}\n"
            f"  = {ctx.num_text(value)}")
    return Explanation("scores", cell, symbolic, shown, f"{lhs} = {ctx.num(value)}", value, text,
                       note=pair_note(ctx, i, j) + " Additive (Bahdanau): a small network scores the pair; "
                            "inside each tanh, the query's part plus the key's part"
                            + (f" (head {hp[0]}'s own W_1, W_2 and v)." if hp else "."),
                       n_terms=d_a, n_elided=hidden_n, reads=tuple(reads))


def _bilinear(ctx: Context, cell):
    """S_ij = q_i W k_jᵀ = Σ_m q_{i,m} (W k_jᵀ)_m, q_i, k_j rows of Q_h, K_h."""
    q_key, k_key = _qk(ctx)
    qi, kj, i, j = _rows(ctx, "scores", cell)
    hp = qi[:-1]
    q, k, w = ctx.value(q_key)[qi], ctx.value(k_key)[kj], ctx.value("w_b")[hp]    # (d_k,), (d_k,), (d_k, d_k)
    d_k = q.shape[0]
    u = [math.fsum(w[m, l] * k[l] for l in range(d_k)) for m in range(d_k)]       # (W k_jᵀ)_m
    value = math.fsum(q[m] * w[m, l] * k[l] for m in range(d_k) for l in range(d_k))
    lhs, lhs_text = ctx.ref("scores", cell), ctx.ref_text("scores", cell)
    symbolic = (rf"{lhs} = \sum_{{m=0}}^{{{d_k - 1}}} {ctx.ref(q_key, (*qi, 'm'))} \sum_{{l=0}}^{{{d_k - 1}}} "
                rf"{ctx.ref('w_b', (*hp, 'm', 'l'))}\, {ctx.ref(k_key, (*kj, 'l'))}")
    shown, hidden_n = join_terms([f"{ctx.factor(q[m])} \\cdot {ctx.factor(u[m])}" for m in range(d_k)])
    shown_text, _ = join_terms([f"{ctx.factor_text(q[m])}·{ctx.factor_text(u[m])}" for m in range(d_k)],
                               latex=False)
    reads = [(q_key, (*qi, m)) for m in range(d_k)] + [(k_key, (*kj, m)) for m in range(d_k)]
    text = (f"{lhs_text} = Σ_m {ctx.ref_text(q_key, (*qi, 'm'))}·u_m, u_m = Σ_l "
            f"{ctx.ref_text('w_b', (*hp, 'm', 'l'))}·{ctx.ref_text(k_key, (*kj, 'l'))}\n  = {shown_text}\n"
            f"  = {ctx.num_text(value)}")
    return Explanation("scores", cell, symbolic, shown, f"{lhs} = {ctx.num(value)}", value, text,
                       note=pair_note(ctx, i, j) + f" Bilinear (Luong's general): term m is {ctx.ref_text(q_key, (*qi, 'm'))} "
                            f"times u_m = ({ctx.symbol('w_b')[1]}{f'^({hp[0]})' if hp else ''} k_{j}ᵀ)_m, the key "
                            f"first mixed by the learned matrix {ctx.symbol('w_b')[1]}"
                            + (f"^({hp[0]}) (head {hp[0]}'s own)." if hp else "."),
                       n_terms=d_k, n_elided=hidden_n, reads=tuple(reads))
