"""Attention itself: score functions, masks, softmax, context, heads.

Rows are tokens. q (n_q, d_k), k (n_k, d_k), v (n_k, d_v); a mask is boolean (n_q, n_k),
True where a query may attend to a key (PyTorch's scaled_dot_product_attention convention).
Each function's derivative lives with the classifier's backward pass (classifier.py).
"""
from __future__ import annotations

import numpy as np


# ---- softmax ---------------------------------------------------------------------------

def softmax(x, axis: int = -1, temperature: float = 1.0) -> np.ndarray:
    """exp((x - max) / T) / Σ exp((x - max) / T) along `axis`; same shape as x.

    Subtracting the row maximum keeps exp from overflowing (softmax([1000, 1000, -1000]) is
    [0.5, 0.5, 0]). A row that is entirely -inf (every key masked) gives zeros, not NaN.

    >>> softmax(np.array([1.0, 2.0, 3.0])).round(4)
    array([0.09  , 0.2447, 0.6652])
    """
    z = np.asarray(x, dtype=np.float64) / temperature
    m = np.max(z, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    e = np.exp(z - m)
    total = e.sum(axis=axis, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)


def softmax_with_sink(x, sink, axis: int = -1) -> np.ndarray:
    """exp(x_j) / (exp(s) + Σ_j' exp(x_j')): softmax with one more logit s in the denominator only.

    A learned attention sink (one logit per head, as in gpt-oss): the sink takes a share of the weight
    and gives no value back, so a row sums to 1 − exp(s)/(exp(s) + Σ exp(x)) < 1, and a head can attend
    to nothing. sink broadcasts against x with `axis` of size 1 (a scalar, or one per head: (H, 1, 1)).
    Equals softmax over [x, s] with the sink's column dropped. A row of −∞ gives zeros.

    >>> softmax_with_sink(np.array([0.0, 0.0]), 0.0).round(4)      # three equal logits, one of them the sink
    array([0.3333, 0.3333])
    """
    x = np.asarray(x, dtype=np.float64)
    shape = list(x.shape)
    shape[axis] = 1
    s = np.broadcast_to(np.asarray(sink, dtype=np.float64), shape)     # one logit per row
    m = np.maximum(np.max(x, axis=axis, keepdims=True), s)              # s is finite: so is m
    e = np.exp(x - m)
    return e / (e.sum(axis=axis, keepdims=True) + np.exp(s - m))


def entropy(weights: np.ndarray) -> np.ndarray:
    """-Σ w log w of each row, in nats; (..., n_q). 0 = all on one key, log(n_k) = uniform."""
    w = np.asarray(weights, dtype=np.float64)
    return -np.sum(np.where(w > 0, w * np.log(np.where(w > 0, w, 1.0)), 0.0), axis=-1)


# ---- score functions: how much does query i match key j? --------------------------------

def dot_scores(q: np.ndarray, k: np.ndarray) -> np.ndarray:
    """S = Q Kᵀ; (..., n_q, d_k), (..., n_k, d_k) -> (..., n_q, n_k)."""
    return q @ np.swapaxes(k, -1, -2)


def scaled_dot_scores(q: np.ndarray, k: np.ndarray) -> np.ndarray:
    """Ŝ = Q Kᵀ / √d_k: stops the scores' spread growing with d_k (for q and k with unit-variance
    entries, Q Kᵀ has variance d_k and Ŝ variance 1: tests/test_explain.py::test_unit_variance_entries_give_scaled_scores_of_variance_one)."""
    return dot_scores(q, k) / np.sqrt(q.shape[-1])


def additive_hidden(q: np.ndarray, k: np.ndarray, w_1: np.ndarray, w_2: np.ndarray) -> np.ndarray:
    """H[i, j] = tanh(q_i W_1 + k_j W_2); q (n_q, d_k), k (n_k, d_k), W (d_k, d_a) -> (n_q, n_k, d_a).

    Leading axes (heads) broadcast: q (h, n_q, d_k), W (h, d_k, d_a) -> (h, n_q, n_k, d_a).
    """
    return np.tanh((q @ w_1)[..., :, None, :] + (k @ w_2)[..., None, :, :])


def additive_scores(q, k, w_1, w_2, v_a) -> np.ndarray:
    """Bahdanau's e_ij = vᵀ tanh(W_1 q_i + W_2 k_j); v_a (d_a,) or (h, d_a) -> (..., n_q, n_k)."""
    hidden = additive_hidden(q, k, w_1, w_2)                        # (..., n_q, n_k, d_a)
    return np.einsum("...ija,...a->...ij", hidden, np.asarray(v_a))


def bilinear_scores(q: np.ndarray, k: np.ndarray, w_b: np.ndarray) -> np.ndarray:
    """Luong's "general" score e_ij = q_i W k_jᵀ; W (d_k, d_k) -> (..., n_q, n_k)."""
    return q @ w_b @ np.swapaxes(k, -1, -2)


# ---- masks -----------------------------------------------------------------------------

def causal_mask(n_q: int, n_k: int | None = None) -> np.ndarray:
    """True on and below the diagonal: token i sees tokens 0..i; (n_q, n_k) bool."""
    return np.tril(np.ones((n_q, n_q if n_k is None else n_k), dtype=bool))


def padding_mask(n_q: int, n_k: int, hidden_keys) -> np.ndarray:
    """True everywhere except the key columns listed in `hidden_keys`; (n_q, n_k) bool."""
    mask = np.ones((n_q, n_k), dtype=bool)
    mask[:, list(hidden_keys)] = False
    return mask


def sliding_window_mask(n_q: int, window: int, n_k: int | None = None) -> np.ndarray:
    """True iff 0 ≤ i − j < window: query i sees itself and the window − 1 tokens before it; (n_q, n_k) bool.

    A window of W keys, the query included: Hugging Face transformers' reading (key j is kept when
    j > i − W) and flash-attn's window_size=(W − 1, 0). Mistral's paper writes the window as positions
    i − W … i, and PyTorch's own sliding-window example for flex_attention keeps q_idx − kv_idx <= W:
    W + 1 keys; pass window + 1 for that reading. (Longformer's window is two-sided: not this mask.)

    >>> sliding_window_mask(4, 2).astype(int)
    array([[1, 0, 0, 0],
           [1, 1, 0, 0],
           [0, 1, 1, 0],
           [0, 0, 1, 1]])
    """
    if isinstance(window, bool) or not isinstance(window, (int, np.integer)) or window < 1:
        from .limits import ConfigError
        raise ConfigError(f"The window must be a whole number of keys, at least 1 (the query itself), not {window!r}.")
    i = np.arange(n_q)[:, None]
    j = np.arange(n_q if n_k is None else n_k)[None, :]
    return (i - j >= 0) & (i - j < window)


def apply_mask(scores: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
    """Masked positions become -inf, so softmax gives them weight exactly 0."""
    if mask is None:
        return scores
    return np.where(mask, scores, -np.inf)


# ---- the whole of it -------------------------------------------------------------------

def scaled_dot_product_attention(q, k, v, mask=None) -> tuple[np.ndarray, np.ndarray]:
    """softmax(Q Kᵀ / √d_k) V.

    q (n_q, d_k), k (n_k, d_k), v (n_k, d_v), mask bool (n_q, n_k) True = may attend.
    Returns (context (n_q, d_v), weights (n_q, n_k)). Leading batch axes broadcast.

    >>> q = np.array([[1.0, 0.0]]); k = np.array([[1.0, 0.0], [0.0, 1.0]])
    >>> v = np.array([[10.0], [20.0]])
    >>> context, weights = scaled_dot_product_attention(q, k, v)
    >>> weights.round(4)              # softmax([1/√2, 0])
    array([[0.6698, 0.3302]])
    >>> context.round(4)              # 0.6698·10 + 0.3302·20 (unrounded)
    array([[13.3024]])
    """
    q, k, v = (np.asarray(a, dtype=np.float64) for a in (q, k, v))
    weights = softmax(apply_mask(scaled_dot_scores(q, k), mask))
    return weights @ v, weights


def split_heads(x: np.ndarray, n_heads: int) -> np.ndarray:
    """(n, H·d) -> (h, n, d): head h takes columns H·d … (h+1)·d − 1, as PyTorch splits them."""
    n, width = x.shape
    return x.reshape(n, n_heads, width // n_heads).transpose(1, 0, 2)


def merge_heads(x: np.ndarray) -> np.ndarray:
    """(h, n, d) -> (n, H·d): the heads' outputs side by side (concatenation)."""
    h, n, d = x.shape
    return x.transpose(1, 0, 2).reshape(n, h * d)


def multi_head_attention(x_q, x_kv, w_q, w_k, w_v, w_o, n_heads: int, mask=None):
    """Concat_h(softmax(Q_h K_hᵀ / √d_head) V_h) W_o, with Q = x_q W_q, K = x_kv W_k, V = x_kv W_v.

    x_q (n_q, d_model), x_kv (n_k, d_model), each w (d_model, d_model), d_head = d_model / n_heads.
    Returns (output (n_q, d_model), weights (n_heads, n_q, n_k)). Same as
    torch.nn.MultiheadAttention(d_model, n_heads, bias=False) with in_proj = [w_q; w_k; w_v]ᵀ
    and out_proj = w_oᵀ (torch stores weights transposed: y = x Wᵀ).

    >>> rng = np.random.default_rng(0)
    >>> x = rng.standard_normal((3, 4)); w = [np.eye(4)] * 4
    >>> out, weights = multi_head_attention(x, x, *w, n_heads=2)
    >>> out.shape, weights.shape, weights.sum(-1).round(12).tolist()
    ((3, 4), (2, 3, 3), [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]])
    """
    q = split_heads(np.asarray(x_q, dtype=np.float64) @ w_q, n_heads)     # (h, n_q, d_head)
    k = split_heads(np.asarray(x_kv, dtype=np.float64) @ w_k, n_heads)    # (h, n_k, d_head)
    v = split_heads(np.asarray(x_kv, dtype=np.float64) @ w_v, n_heads)    # (h, n_k, d_head)
    context, weights = scaled_dot_product_attention(q, k, v, mask)        # (h, n_q, d_head), (h, n_q, n_k)
    return merge_heads(context) @ w_o, weights
