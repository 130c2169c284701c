"""The block-by-block run: FlashAttention-2's recurrence over key blocks of B_c keys, every query row at once.

A block's scores S_b are made only when its keys are loaded (each score needs only its query and its key,
whatever the score function); each query row i carries its running maximum m_i, running sum ℓ_i and
unnormalised output o_i from block to block (math/online_softmax.py). The queries are cut into blocks of B_r = B_c
rows too, so that a B_r × B_c tile whose every score is masked is skipped: counted and shown here.
"""
from __future__ import annotations

import functools

import numpy as np

from ...math import attention as att
from ...math.online_softmax import online_softmax
from ...forward.config import Config
from .head import Head, head_of


def block_scores(config: Config, hd: Head, start: int, stop: int) -> np.ndarray:
    """The scores of keys start … stop − 1 against every query (before the mask), as the forward pass makes
    them, divided by T: each needs only its query row and its key row. (n, stop − start)."""
    q, k = hd.q, hd.k[start:stop]
    p = hd.params
    if config.score in ("dot", "scaled_dot"):
        s = att.dot_scores(q, k)
        if config.score == "scaled_dot":
            s = s / np.sqrt(q.shape[1])
    elif config.score == "additive":
        s = att.additive_scores(q, k, p["w_1"], p["w_2"], p["v_a"])
    else:
        s = att.bilinear_scores(q, k, p["w_b"])
    if hd.slope is not None:
        i, j = np.arange(q.shape[0])[:, None], np.arange(start, stop)[None, :]
        s = s + (0.0 - hd.slope * np.abs(i - j))                       # ALiBi's (B_h)_ij = −m_h·|i − j|
    return s / config.temperature


@functools.lru_cache(maxsize=32)
def run_blocks(config: Config, block_size: int, head: int = 0):
    """The recurrence over key blocks for every row, and which B_r × B_c tiles (query block × key block, B_r = B_c)
    are skipped.

    Returns (blocks, tiles, context): blocks[b] holds "keys" (start, stop), "scores" S_b (n, size), "rescale",
    "m", "l" (n,), "o" (n, d_v) after block b, "skipped" (n,) bool (the row's tile was skipped); tiles
    (n_qb, n_kb) 1 computed, 0 skipped; context (n, d_v) = o / ℓ.

    One run of the recurrence over all rows gives the same numbers (to the last bits of the matrix product)
    as one run per query block that skips the masked tiles (tests/test_online_softmax.py checks it): a row
    whose scores in a block are all −∞ gets e^(m − m′) = 1 and adds 0, so its m, ℓ, o pass through exactly.
    Only the rescale factor of a row that has seen nothing yet differs (0 here, 1 in a skipped tile,
    multiplying ℓ = 0 either way): the skipped tiles' 1 is shown."""
    hd = head_of(config, head)
    n = len(hd.tokens)
    context, blocks = online_softmax(lambda a, b: block_scores(config, hd, a, b), hd.v, block_size, hd.mask)
    nb = len(blocks)                                                    # as many query blocks as key blocks
    if hd.mask is None:
        tiles = np.ones((nb, nb))
    else:                                                               # (n_qb, n_kb): any visible score in the tile
        pad = nb * block_size - n
        padded = np.pad(hd.mask, ((0, pad), (0, pad)))
        tiles = padded.reshape(nb, block_size, nb, block_size).any(axis=(1, 3)).astype(float)
    rows_skipped = np.repeat(tiles == 0, block_size, axis=0)[:n]                                      # (n, n_kb)
    out = []
    for b, bl in enumerate(blocks):
        skipped = rows_skipped[:, b]
        out.append(dict(bl, rescale=np.where(skipped, 1.0, bl["rescale"]), skipped=skipped))
    return out, tiles, context


def logsumexp_rows(s: np.ndarray) -> np.ndarray:
    """log Σ_j e^{s_ij} per row, with the row maximum taken out; −∞ for a row of −∞. s (n, n_k) -> (n,)."""
    top = s.max(axis=1)
    safe = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        return safe + np.log(np.exp(s - safe[:, None]).sum(axis=1))
