"""The material the page reads the heads on: random tokens, then the same tokens again.

A segment of HALF = 20 random tokens (of the 31) followed by the same 20: 40 tokens, the model's whole context.
In the second copy every token has occurred once before, 20 positions back, and the token that followed it
there is the next one here: a model that copies predicts the second copy (all but its first token) exactly,
one that does not is left guessing among 31 (ln 31 ≈ 3.43 nats).

    >>> ids = repeated_ids(0)
    >>> len(ids), ids[:HALF] == ids[HALF:]
    (40, True)
"""
from __future__ import annotations

import numpy as np

from ...training.lm.model import N_CTX, VOCAB

HALF = N_CTX // 2          # 20: the segment, then its repeat
SEQUENCE_SEED = 7          # the sequence the patterns are shown on
BATCH_SEED = 99            # the batch the copy loss and the ablations are measured on
BATCH = 16                 # sequences in that batch


def repeated_batch(seed: int, count: int, half: int = HALF) -> np.ndarray:
    """(count, 2·half) token ids: each row a random segment of `half` tokens, then the same segment again."""
    first = np.random.default_rng(seed).integers(0, VOCAB, (count, half))     # (count, half)
    return np.concatenate([first, first], axis=1)                             # (count, 2·half)


def repeated_ids(seed: int = SEQUENCE_SEED, half: int = HALF) -> list[int]:
    """One repeated sequence, as a list of ids."""
    return [int(i) for i in repeated_batch(seed, 1, half)[0]]


def token_names(ids) -> list[str]:
    """What the heatmaps call each token: 't7' for token 7 (the tokens stand for nothing: they are random)."""
    return [f"t{int(i)}" for i in ids]


def copy_positions(half: int = HALF) -> np.ndarray:
    """The positions whose next token a copier knows: half … 2·half − 2 (predicting positions half+1 … 2·half − 1)."""
    return np.arange(half, 2 * half - 1)
