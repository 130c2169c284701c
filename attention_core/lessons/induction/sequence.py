"""The material the page reads the heads on: random tokens, then the same tokens again.

A segment of HALF = 20 random tokens (distinct, of the 31) followed by the same 20: 40 tokens, the model's whole
context: the training's own probe (training/lm/task.repeated_tokens), so the numbers here are the history's. In
the second copy every token has occurred once before, 20 positions back, and the token that followed it there is
the next one here: a model that copies predicts the second copy (all but its first token) exactly, one that does
not is left guessing among 31 (ln 31 ≈ 3.43 nats).

    >>> ids = repeated_ids(0)
    >>> len(ids), ids[:HALF] == ids[HALF:]
    (40, True)
"""
from __future__ import annotations

import numpy as np

from ...training.lm.task import REPEAT_HALF, repeat_copy_targets, repeated_tokens
from ...training.lm.train import EVAL_SEED, EVAL_SEQS

HALF = REPEAT_HALF         # 20: the segment, then its repeat
SEQUENCE_SEED = 7          # the sequence the patterns are shown on
BATCH_SEED = EVAL_SEED     # the batch the scores, the copy loss and the ablations are measured on: the training's
BATCH = EVAL_SEQS          # probe (16 sequences)


def repeated_batch(seed: int = BATCH_SEED, count: int = BATCH) -> np.ndarray:
    """(count, 2·HALF) token ids: each row a random segment of HALF distinct tokens, then the same segment again."""
    return repeated_tokens(seed, count, HALF)


def repeated_ids(seed: int = SEQUENCE_SEED) -> list[int]:
    """One repeated sequence, as a list of ids."""
    return [int(i) for i in repeated_batch(seed, 1)[0]]


def token_names(ids) -> list[str]:
    """What the heatmaps call each token: 't7' for token 7 (the tokens stand for nothing: they are random)."""
    return [f"t{int(i)}" for i in ids]


def chance_scores(n: int = 2 * HALF) -> dict[str, float]:
    """Both scores of a head that spreads its weight evenly over the keys it sees (A[i, j] = 1 / (i + 1), j ≤ i)
    on the repeated sequence: what a head with no job scores. previous-token: the mean of 1 / (i + 1) over
    i = 1 … n − 1; induction: over the second copy's queries i = HALF … n − 1, each with one target.

    >>> {k: round(v, 3) for k, v in chance_scores().items()}
    {'prev': 0.084, 'induction': 0.034}
    """
    return {"prev": float(np.mean([1 / (i + 1) for i in range(1, n)])),
            "induction": float(np.mean([1 / (i + 1) for i in range(n // 2, n)]))}


def copy_positions(n: int = 2 * HALF) -> np.ndarray:
    """The positions whose next token a copier knows: HALF … n − 2 (the training's repeat_copy_targets)."""
    return np.flatnonzero(repeat_copy_targets(np.zeros(n, dtype=int)))
