"""FlashAttention's online softmax: attention over keys in blocks, never holding a whole row of scores.

For each query row, three running quantities are updated block by block of keys (FlashAttention-2,
Dao 2023, Algorithm 1 without the paper's spurious inverse on line 10, flash-attention issue #991):

    m′ = max(m, rowmax S_b)                       the running maximum of the scores seen so far
    l  ← e^(m − m′)·l + rowsum e^(S_b − m′)       the running sum of exponentials, rescaled to m′
    o  ← e^(m − m′)·o + e^(S_b − m′) V_b          the unnormalised output, rescaled the same way

with S_b the block's scores: whatever softmax reads, computed for the block's keys only (Q K_bᵀ / √d_k in
FlashAttention; any score that each (query, key) pair gives on its own works the same way: a bias such as
ALiBi's added, a temperature divided by, another score function). After the last block, C = o / l:
exactly softmax(S) V, and m + log l = logsumexp of the row. Only n_q × block_size scores exist at a time.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from .attention import apply_mask
from .limits import ConfigError


def check_block_size(block_size) -> int:
    if isinstance(block_size, bool) or not isinstance(block_size, (int, np.integer)) or block_size < 1:
        raise ConfigError(f"The block size must be a whole number of keys, at least 1, not {block_size!r}.")
    return int(block_size)


def online_softmax(block_scores: Callable[[int, int], np.ndarray], v, block_size: int,
                   mask=None) -> tuple[np.ndarray, list[dict]]:
    """softmax(S) V computed over key blocks, S's columns made one block at a time.

    block_scores(start, stop) -> (n_q, stop − start): the scores of keys start … stop − 1 (before the mask);
    v (n_k, d_v); mask bool (n_q, n_k), True = may attend. Returns (context (n_q, d_v), blocks): one dict per
    key block with "keys" (start, stop), "scores" S_b (n_q, b) (−∞ where masked), "rescale" e^(m − m′)
    (n_q,), "m", "l" (n_q,) and "o" (n_q, d_v) after the block, and "skipped" (True for a tile whose every
    entry is masked: block_scores is not called for it). A row whose keys are all masked keeps l = 0 and
    gives a context of 0, as everywhere in the app.
    """
    block_size = check_block_size(block_size)
    v = np.asarray(v, dtype=np.float64)
    n_k = v.shape[0]
    n_q = None if mask is None else mask.shape[0]
    m = l = o = None
    blocks = []
    for start in range(0, n_k, block_size):
        stop = min(start + block_size, n_k)
        tile = None if mask is None else mask[:, start:stop]    # (n_q, b)
        if tile is not None and not tile.any():                 # a fully masked tile: skipped, nothing changes
            if m is None:
                m, l, o = np.full(n_q, -np.inf), np.zeros(n_q), np.zeros((n_q, v.shape[1]))
            blocks.append(dict(keys=(start, stop), scores=np.full((n_q, stop - start), -np.inf),
                               rescale=np.ones(n_q), m=m.copy(), l=l.copy(), o=o.copy(), skipped=True))
            continue
        s = apply_mask(np.asarray(block_scores(start, stop), dtype=np.float64), tile)     # (n_q, b)
        if m is None:
            n_q = s.shape[0]
            m, l, o = np.full(n_q, -np.inf), np.zeros(n_q), np.zeros((n_q, v.shape[1]))
        m_new = np.maximum(m, s.max(axis=1))                                # (n_q,) still −∞ for a row all masked so far
        safe = np.where(np.isfinite(m_new), m_new, 0.0)                     # no −∞ − (−∞)
        rescale = np.where(np.isfinite(m), np.exp(m - safe), 0.0)           # e^(m − m′); 0 while nothing was seen
        p = np.exp(s - safe[:, None])                                       # (n_q, b); 0 where masked
        l = rescale * l + p.sum(axis=1)
        o = rescale[:, None] * o + p @ v[start:stop]
        m = m_new
        blocks.append(dict(keys=(start, stop), scores=s, rescale=rescale, m=m.copy(), l=l.copy(), o=o.copy(),
                           skipped=False))
    context = np.divide(o, l[:, None], out=np.zeros_like(o), where=l[:, None] > 0)   # the final division
    return context, blocks


def online_softmax_attention(q, k, v, block_size: int, mask=None, scale: float | None = None,
                             bias=None) -> tuple[np.ndarray, list[dict]]:
    """softmax(Q Kᵀ · scale + bias) V over key blocks, FlashAttention's score; q (n_q, d_k), k (n_k, d_k),
    v (n_k, d_v); scale 1/√d_k unless given (1/(T√d_k) folds a temperature T in); bias (n_q, n_k) added
    (ALiBi's B_h), read one block of columns at a time. See online_softmax for the rest.

    >>> rng = np.random.default_rng(0)
    >>> q, k, v = rng.standard_normal((3, 4)), rng.standard_normal((5, 4)), rng.standard_normal((5, 2))
    >>> context, blocks = online_softmax_attention(q, k, v, block_size=2)
    >>> [b["keys"] for b in blocks]
    [(0, 2), (2, 4), (4, 5)]
    >>> from attention_core import scaled_dot_product_attention
    >>> bool(np.allclose(context, scaled_dot_product_attention(q, k, v)[0], atol=1e-12))
    True
    """
    block_size = check_block_size(block_size)
    q, k = np.asarray(q, dtype=np.float64), np.asarray(k, dtype=np.float64)
    scale = 1.0 / np.sqrt(q.shape[1]) if scale is None else float(scale)

    def block_scores(start: int, stop: int) -> np.ndarray:            # (n_q, stop − start)
        s = q @ k[start:stop].T * scale
        return s if bias is None else s + bias[:, start:stop]
    return online_softmax(block_scores, v, block_size, None if mask is None else np.asarray(mask, dtype=bool))
