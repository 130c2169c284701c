"""FlashAttention's online softmax: attention over keys in blocks, never holding a whole row of scores.

For each query row, three running quantities are updated block by block of keys (FlashAttention-2,
Dao 2023, Algorithm 1 without the paper's spurious inverse on line 10, flash-attention issue #991):

    m′ = max(m, rowmax S_b)                       the running maximum of the scores seen so far
    l  ← e^(m − m′)·l + rowsum e^(S_b − m′)       the running sum of exponentials, rescaled to m′
    o  ← e^(m − m′)·o + e^(S_b − m′) V_b          the unnormalised output, rescaled the same way

with S_b = Q K_bᵀ / √d_k the block's scores. After the last block, C = o / l: exactly softmax(S) V,
and m + log l = logsumexp of the row. Only n_q × block_size scores exist at a time, not n_q × n_k.
"""
from __future__ import annotations

import numpy as np

from .attention import apply_mask
from .config import ConfigError


def online_softmax_attention(q, k, v, block_size: int, mask=None) -> tuple[np.ndarray, list[dict]]:
    """softmax(Q Kᵀ / √d_k) V computed over key blocks; q (n_q, d_k), k (n_k, d_k), v (n_k, d_v).

    mask: bool (n_q, n_k), True = may attend. Returns (context (n_q, d_v), blocks): one dict per
    key block with "keys" (start, stop), "scores" S_b (n_q, b) (−∞ where masked), "rescale"
    e^(m − m′) (n_q,), "m", "l" (n_q,) and "o" (n_q, d_v) after the block, and "skipped" (True
    for a tile whose every entry is masked: nothing is computed for it). A row whose keys are all
    masked keeps l = 0 and gives a context of 0, as everywhere in the app.

    >>> rng = np.random.default_rng(0)
    >>> q, k, v = rng.standard_normal((3, 4)), rng.standard_normal((5, 4)), rng.standard_normal((5, 2))
    >>> context, blocks = online_softmax_attention(q, k, v, block_size=2)
    >>> [b["keys"] for b in blocks]
    [(0, 2), (2, 4), (4, 5)]
    >>> from attention_core import scaled_dot_product_attention
    >>> bool(np.allclose(context, scaled_dot_product_attention(q, k, v)[0], atol=1e-12))
    True
    """
    if isinstance(block_size, bool) or not isinstance(block_size, (int, np.integer)) or block_size < 1:
        raise ConfigError(f"The block size must be a whole number of keys, at least 1, not {block_size!r}.")
    q, k, v = (np.asarray(a, dtype=np.float64) for a in (q, k, v))
    n_q, n_k = q.shape[0], k.shape[0]
    m = np.full(n_q, -np.inf)                                   # (n_q,) running max
    l = np.zeros(n_q)                                           # (n_q,) running sum of e^(S − m)
    o = np.zeros((n_q, v.shape[1]))                             # (n_q, d_v) running Σ e^(S − m) v
    blocks = []
    for start in range(0, n_k, int(block_size)):
        stop = min(start + int(block_size), n_k)
        tile = None if mask is None else mask[:, start:stop]    # (n_q, b)
        if tile is not None and not tile.any():                 # a fully masked tile: skipped, nothing changes
            blocks.append(dict(keys=(start, stop), scores=np.full((n_q, stop - start), -np.inf),
                               rescale=np.ones(n_q), m=m.copy(), l=l.copy(), o=o.copy(), skipped=True))
            continue
        s = apply_mask(q @ k[start:stop].T / np.sqrt(q.shape[1]), tile)     # (n_q, b)
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
