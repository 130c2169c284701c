"""Bahdanau's alignment function in numpy, and one decoder step i with every intermediate named (step_trace).

    e_ij = vᵀ tanh(s_{i-1} W + h_j U)      s_prev (d_s,), H (n, d_h), W (d_s, d_a), U (d_h, d_a), v (d_a,)
    α_ij = softmax_j(e_ij)
    c_i  = Σ_j α_ij h_j
"""
from __future__ import annotations

import numpy as np

from ...forward.trace import Trace
from ...forward.weights import param_rng
from ...math import attention as att
from ...math.limits import ConfigError


def init_params(d_s: int = 2, d_h: int = 2, d_a: int = 20, seed: int = 0, scale: float = 0.1) -> dict:
    """W (d_s, d_a), U (d_h, d_a), v (d_a,), each N(0, scale²), one generator per parameter.

    Seed 004 starts from torch.rand (uniform 0..1); with inputs as large as 20 that puts
    tanh deep in saturation and training often stalls, so the start here is small.
    """
    return {"w": scale * param_rng(seed, "bahdanau_w").standard_normal((d_s, d_a)),
            "u": scale * param_rng(seed, "bahdanau_u").standard_normal((d_h, d_a)),
            "v": scale * param_rng(seed, "bahdanau_v").standard_normal(d_a)}


def alignment_scores(s_prev, h, w, u, v) -> np.ndarray:
    """e_j = vᵀ tanh(s_{i-1} W + h_j U); s_prev (d_s,), h (n, d_h) -> (n,).

    s_prev may also be (T, d_s), T decoder steps at once -> (T, n).
    """
    s = np.atleast_2d(np.asarray(s_prev, dtype=np.float64))                 # (T, d_s)
    e = att.additive_scores(s, np.asarray(h, dtype=np.float64), w, u, v)    # (T, n)
    return e if np.ndim(s_prev) == 2 else e[0]


def additive_attention(s_prev, h, params: dict) -> tuple[np.ndarray, np.ndarray]:
    """One decoder step: (context (d_h,), weights (n,)); with s_prev (T, d_s): (T, d_h), (T, n)."""
    h = np.asarray(h, dtype=np.float64)
    weights = att.softmax(alignment_scores(s_prev, h, params["w"], params["u"], params["v"]))
    return weights @ h, weights


def pair_label(row) -> str:
    """[3., 4.] -> '[3, 4]'."""
    return "[" + ", ".join(f"{x:g}" for x in np.asarray(row, dtype=np.float64)) + "]"


def step_trace(s_prev, h, params: dict, labels=None) -> Trace:
    """Every intermediate of one decoder step i, named, for the step-through page.

    s_prev (d_s,), h (n, d_h); labels name the inputs (default: their values, '[3, 4]').
    Step keys: s_prev, h, w, u, v, w_s, u_h, pre_tanh, hidden, scores, weights, context.
    """
    s_prev = np.asarray(s_prev, dtype=np.float64)
    h = np.asarray(h, dtype=np.float64)
    w, u, v = (np.asarray(params[k], dtype=np.float64) for k in ("w", "u", "v"))
    if s_prev.ndim != 1 or h.ndim != 2 or w.shape != (s_prev.size, v.size) or u.shape != (h.shape[1], v.size):
        raise ConfigError(f"Shapes do not fit: s_prev {s_prev.shape}, h {h.shape}, W {w.shape}, U {u.shape}, "
                          f"v {v.shape}; need s_prev (d_s,), h (n, d_h), W (d_s, d_a), U (d_h, d_a), v (d_a,).")
    n = h.shape[0]
    trace = Trace(tuple(labels) if labels is not None else tuple(pair_label(r) for r in h))
    trace.add("s_prev", "Previous decoder state sᵢ₋₁", s_prev, ("d_s",), r"s_{i-1}",
              why="The decoder's previous state (s₀ is its start; after that, what it produced last). It is the "
                  "question: which input comes next?")
    trace.add("h", "Inputs hⱼ", h, ("n", "d_h"),
              r"H = \begin{bmatrix} h_0 \\ \vdots \\ h_{n-1} \end{bmatrix}",
              why="The candidates, one row each, counted from 0. In translation these are the encoder's states; "
                  "here the raw pairs.")
    trace.add("w", "W (decoder side)", w, ("d_s", "d_a"), r"W \in \mathbb{R}^{d_s \times d_a}",
              why="Learned: maps the decoder state into the d_a-wide alignment space. "
                  "The paper writes W s with W stored transposed.")
    trace.add("u", "U (input side)", u, ("d_h", "d_a"), r"U \in \mathbb{R}^{d_h \times d_a}",
              why="Learned: maps each input into the same alignment space, so the two can be added.")
    trace.add("v", "v (reduction)", v, ("d_a",), r"v \in \mathbb{R}^{d_a}",
              why="Learned: turns a d_a-wide hidden vector into one score.")

    w_s = s_prev @ w                                                    # (d_a,)
    trace.add("w_s", "W sᵢ₋₁ (as s W)", w_s, ("d_a",), r"s_{i-1} W", ("s_prev", "w"),
              why="The decoder's half of the comparison, computed once for this step and shared by every input.")
    u_h = h @ u                                                         # (n, d_a)
    trace.add("u_h", "U hⱼ for every input", u_h, ("n", "d_a"), r"H U \;(\text{row } j = h_j U)", ("h", "u"),
              why="Each input's half. It does not depend on the decoder, so a translator computes it once per sentence.")
    pre = w_s[None, :] + u_h                                            # (n, d_a)
    trace.add("pre_tanh", "The sum W s + U hⱼ", pre, ("n", "d_a"), r"z_j = s_{i-1} W + h_j U",
              ("w_s", "u_h"), why="The same decoder row is added to every input's row: "
              "this addition is what makes the score 'additive'.")
    hidden = np.tanh(pre)                                               # (n, d_a)
    trace.add("hidden", "tanh", hidden, ("n", "d_a"), r"\tanh(z_j)", ("pre_tanh",),
              why="A non-linearity, squashing each entry into (−1, 1): the alignment is a small neural network, "
                  "not a fixed similarity.")
    scores = hidden @ v                                                 # (n,)
    trace.add("scores", "Alignment scores eᵢⱼ", scores, ("n",), r"e_{ij} = v^\top \tanh(s_{i-1} W + h_j U)",
              ("hidden", "v"), why="One number per input: how well it fits as output i. Any real number; "
              "tutorial 3 labels this energy α, but it is not yet a distribution.")
    weights = att.softmax(scores)                                       # (n,)
    trace.add("weights", "Attention weights αᵢⱼ", weights, ("n",),
              r"\alpha_{ij} = \frac{\exp e_{ij}}{\sum_{k=0}^{n-1} \exp e_{ik}}", ("scores",), scale="sequential",
              why="Softmax over the inputs j: non-negative, summing to 1. Bahdanau's 'soft search'.")
    context = weights @ h                                               # (d_h,)
    trace.add("context", "Context cᵢ", context, ("d_h",), r"c_i = \sum_{j=0}^{n-1} \alpha_{ij} h_j",
              ("weights", "h"), why="A weighted average of the inputs. When one weight is near 1, "
              "the context is that input: the decoder has found what it was looking for.")
    trace.facts.update(n=n, d_s=s_prev.size, d_h=h.shape[1], d_a=v.size, best=int(np.argmax(weights)))
    return trace
