"""Grouped-query attention (Ainslie et al., 2023): several query heads share one key/value head.

H query heads, H_kv key/value heads, H_kv dividing H: the query heads fall into H_kv contiguous groups
of g = H / H_kv, and query head h reads KV head ⌊h / g⌋ (as torch's `enable_gqa=True` and
`repeat_interleave` do). H_kv = H is multi-head attention (MHA), H_kv = 1 multi-query attention (MQA).
W_K and W_V shrink to H_kv heads' columns, and so does the KV cache: that is what GQA is for.
"""
from __future__ import annotations

import numpy as np

from .attention import apply_mask, merge_heads, softmax, split_heads
from .limits import ConfigError, divisors, say_list


def check_groups(n_heads: int, n_kv_heads: int) -> int:
    """g = H / H_kv, the query heads per KV head; ConfigError unless H_kv divides H."""
    if isinstance(n_kv_heads, bool) or not isinstance(n_kv_heads, (int, np.integer)) or n_kv_heads < 1:
        raise ConfigError(f"The number of KV heads must be a whole number, at least 1, not {n_kv_heads!r}.")
    if n_heads % n_kv_heads:
        raise ConfigError(f"{n_heads} query heads cannot be shared evenly by {n_kv_heads} KV heads: each KV head "
                          f"serves a group of the same size. Set the KV heads to {say_list(divisors(n_heads))}.")
    return n_heads // n_kv_heads


def kv_head_of(h: int, n_heads: int, n_kv_heads: int) -> int:
    """The KV head query head h reads: ⌊h / g⌋ with g = H / H_kv.

    >>> [kv_head_of(h, 8, 2) for h in range(8)]
    [0, 0, 0, 0, 1, 1, 1, 1]
    """
    return h // check_groups(n_heads, n_kv_heads)


def expand_kv(kv: np.ndarray, n_heads: int) -> np.ndarray:
    """(H_kv, n, d) -> (H, n, d): each KV head repeated for its g query heads, in place (repeat_interleave)."""
    return np.repeat(kv, check_groups(n_heads, kv.shape[0]), axis=0)


def grouped_query_attention(x_q, x_kv, w_q, w_k, w_v, w_o, n_heads: int, n_kv_heads: int, mask=None,
                            bias=None) -> tuple[np.ndarray, np.ndarray]:
    """Concat_h(softmax(Q_h K_{⌊h/g⌋}ᵀ / √d_head + B_h) V_{⌊h/g⌋}) W_O.

    x_q (n_q, d_model), x_kv (n_k, d_model); w_q (d_model, H·d_head), w_k (d_model, H_kv·d_head),
    w_v (d_model, H_kv·d_v), w_o (H·d_v, d_model); mask bool (n_q, n_k) True = may attend;
    bias (H, n_q, n_k) added to the scaled scores (ALiBi). Returns (output (n_q, d_model),
    weights (H, n_q, n_k)).

    >>> rng = np.random.default_rng(0)
    >>> x = rng.standard_normal((3, 4))
    >>> w_q, w_o = rng.standard_normal((4, 8)), rng.standard_normal((8, 4))
    >>> w_k, w_v = rng.standard_normal((4, 2)), rng.standard_normal((4, 2))   # one KV head: MQA
    >>> out, weights = grouped_query_attention(x, x, w_q, w_k, w_v, w_o, n_heads=4, n_kv_heads=1)
    >>> out.shape, weights.shape
    ((3, 4), (4, 3, 3))
    """
    check_groups(n_heads, n_kv_heads)
    x_q, x_kv = np.asarray(x_q, dtype=np.float64), np.asarray(x_kv, dtype=np.float64)
    if w_q.shape[1] % n_heads or w_k.shape[1] * n_heads != w_q.shape[1] * n_kv_heads or w_v.shape[1] % n_kv_heads:
        raise ConfigError(f"W_Q must have H·d_head columns and W_K H_kv·d_head: got {w_q.shape[1]} and "
                          f"{w_k.shape[1]} for H={n_heads}, H_kv={n_kv_heads}.")
    q = split_heads(x_q @ w_q, n_heads)                                     # (H, n_q, d_head)
    k = expand_kv(split_heads(x_kv @ w_k, n_kv_heads), n_heads)             # (H, n_k, d_head)
    v = expand_kv(split_heads(x_kv @ w_v, n_kv_heads), n_heads)             # (H, n_k, d_v)
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])             # (H, n_q, n_k)
    if bias is not None:
        scores = scores + bias
    weights = softmax(apply_mask(scores, mask))                             # (H, n_q, n_k)
    return merge_heads(weights @ v) @ w_o, weights
