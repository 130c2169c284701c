"""What the RoPE lesson reads from the forward pass's Trace, never recomputed: query head h's columns of Q and
its KV head's of K, one head's Q^R, K^R and scores, and the forward pass's own score function for head h.

With H query heads and H_kv KV heads, query head h reads KV head ⌊h / g⌋, g = H / H_kv.
"""
from __future__ import annotations

import numpy as np

from ...forward.config import Config
from ...forward.trace import Trace
from ...math import attention as att
from .rotation import scaled_scores


def kv_head_of(config: Config, head: int) -> int:
    """The KV head query head h reads: ⌊h / g⌋, g = H / H_kv."""
    return head // (config.n_heads // config.kv_heads)


def score_function(forward: Trace, head: int):
    """The forward pass's score function for query head h, on one head's rows: (n, d_k), (n, d_k) -> (n, n);
    with its own parameters (W_1, W_2, v or W) for an additive or bilinear score."""
    config = forward.facts["config"]
    h = config.n_heads
    own = (lambda key: forward[key].value[head]) if h > 1 else (lambda key: forward[key].value)
    if config.score == "dot":
        return att.dot_scores
    if config.score == "scaled_dot":
        return scaled_scores
    if config.score == "additive":
        w_1, w_2, v_a = own("w_a_q"), own("w_a_k"), own("v_a")
        return lambda q, k: att.additive_scores(q, k, w_1, w_2, v_a)
    w_b = own("w_b")
    return lambda q, k: att.bilinear_scores(q, k, w_b)


def head_rows(forward: Trace, head: int) -> tuple[np.ndarray, np.ndarray]:
    """(Q_h, K_⌊h/g⌋): query head h's d_k columns of Q and its KV head's of K; (n, d_k) each."""
    config = forward.facts["config"]
    d, kv = config.d_k, kv_head_of(config, head)
    return forward["q"].value[:, head * d:(head + 1) * d], forward["k"].value[:, kv * d:(kv + 1) * d]


def forward_rows(forward: Trace, key: str, head: int) -> np.ndarray:
    """One head's rows of a forward step: q_rot (query head h), k_rot (its KV head), scores (query head h)."""
    config = forward.facts["config"]
    value = forward[key].value
    if config.n_heads == 1:
        return value
    return value[kv_head_of(config, head)] if key == "k_rot" else value[head]


def score_key(config: Config) -> str:
    """The lesson's score step: Ŝ for the scaled dot product, S for any other score."""
    return "scaled_scores" if config.score == "scaled_dot" else "scores"


def head_weights(forward: Trace, head: int) -> tuple[np.ndarray, np.ndarray, np.ndarray | float, np.ndarray | float]:
    """(W_Q's d_k columns of query head h, W_K's of its KV head, b_Q's and b_K's, or 0.0 without biases): what made
    head_rows' Q_h and K_⌊h/g⌋; (d_model, d_k), (d_model, d_k), (d_k,), (d_k,)."""
    config = forward.facts["config"]
    d, kv = config.d_k, kv_head_of(config, head)
    q_cols, k_cols = slice(head * d, (head + 1) * d), slice(kv * d, (kv + 1) * d)
    b_q = forward["b_q"].value[q_cols] if config.bias else 0.0
    b_k = forward["b_k"].value[k_cols] if config.bias else 0.0
    return forward["w_q"].value[:, q_cols], forward["w_k"].value[:, k_cols], b_q, b_k
