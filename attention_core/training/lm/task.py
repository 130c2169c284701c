"""The copy task the small model learns from, and the repeated random tokens its heads are measured on.

A training sequence is SEQ_LEN = N_CTX + 1 random tokens (the model reads the first N_CTX and predicts each
next one), drawn uniformly from the 31, with one segment of 6 to 14 tokens written again at a random later
place. Before the repeat nothing can be predicted (the best loss is ln 31 ≈ 3.43 nats); inside it, every token
after the repeat's first can be copied from the segment, if the model finds it: the token after the earlier
occurrence of the current token. Because the repeat's place varies, positions alone cannot find it; with a
fixed offset (the repeat always FIXED_OFFSET positions after its segment) they can, and no induction head is
needed.

    >>> b = batch(np.random.default_rng(0), batch_size=2)
    >>> b.ids.shape, b.copy.shape, b.ids.dtype
    ((2, 41), (2, 41), dtype('int64'))
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...math.limits import ConfigError
from .model import N_CTX, VOCAB

SEQ_LEN = N_CTX + 1             # 41 tokens: N_CTX inputs, each with its next token as target
BATCH = 32
MIN_REPEAT, MAX_REPEAT = 6, 14  # the repeated segment's length L, inclusive
FIXED_OFFSET = 17               # the fixed-offset variant: the repeat starts 17 positions after its segment (not
                                # 20: on the probe's 20 + 20 tokens a head looking 19 back by position would score
                                # as an induction head)
REPEAT_HALF = N_CTX // 2        # the repeated random tokens: 20 tokens, then the same 20 again


@dataclass(frozen=True)
class Batch:
    ids: np.ndarray             # (b, SEQ_LEN) int64: the tokens
    copy: np.ndarray            # (b, SEQ_LEN) bool: token t is inside a repeat, after its first token (copyable)
    start: np.ndarray           # (b,) the segment's first position s
    repeat: np.ndarray          # (b,) the repeat's first position t > s + L − 1
    length: np.ndarray          # (b,) the segment's length L

    @property
    def inputs(self) -> np.ndarray:
        """(b, N_CTX): what the model reads."""
        return self.ids[:, :-1]

    @property
    def targets(self) -> np.ndarray:
        """(b, N_CTX): the next token at each position."""
        return self.ids[:, 1:]

    @property
    def copy_targets(self) -> np.ndarray:
        """(b, N_CTX) bool: the positions whose next token is copyable (the copy loss averages over these)."""
        return self.copy[:, 1:]


def batch(rng: np.random.Generator, batch_size: int = BATCH, fixed_offset: bool = False) -> Batch:
    """One batch: uniform random tokens, each row with one segment of L ∈ [6, 14] tokens repeated later.

    s ~ U{0 … SEQ_LEN − 2L}, then t ~ U{s + L … SEQ_LEN − L} (the repeat never overlaps its segment); with
    fixed_offset, t = s + FIXED_OFFSET and s ~ U{0 … SEQ_LEN − FIXED_OFFSET − L}.
    """
    ids = rng.integers(0, VOCAB, (batch_size, SEQ_LEN))                      # (b, T)
    length = rng.integers(MIN_REPEAT, MAX_REPEAT + 1, batch_size)             # (b,)
    copy = np.zeros((batch_size, SEQ_LEN), dtype=bool)
    start, repeat = np.zeros(batch_size, dtype=int), np.zeros(batch_size, dtype=int)
    for r, L in enumerate(length):
        if fixed_offset:
            s = rng.integers(0, SEQ_LEN - FIXED_OFFSET - L + 1)
            t = s + FIXED_OFFSET
        else:
            s = rng.integers(0, SEQ_LEN - 2 * L + 1)
            t = rng.integers(s + L, SEQ_LEN - L + 1)
        ids[r, t:t + L] = ids[r, s:s + L]
        copy[r, t + 1:t + L] = True
        start[r], repeat[r] = s, t
    return Batch(ids, copy, start, repeat, length)


def repeated_tokens(seed: int = 0, n_seqs: int = 16, half: int = REPEAT_HALF) -> np.ndarray:
    """(n_seqs, 2·half) int64: `half` random tokens, then the same tokens again (Olsson et al. 2022's probe).

    Within a half the tokens are distinct (drawn without replacement from the 31), so each token of the second
    half has exactly one earlier occurrence: the token the induction score asks about is unambiguous.
    """
    if not 1 <= half <= min(VOCAB, N_CTX // 2):
        raise ConfigError(f"half must be 1 … {min(VOCAB, N_CTX // 2)}.")
    rng = np.random.default_rng(seed)
    first = np.stack([rng.permutation(VOCAB)[:half] for _ in range(n_seqs)])  # (n_seqs, half)
    return np.concatenate([first, first], axis=1).astype(np.int64)


def repeat_copy_targets(ids: np.ndarray) -> np.ndarray:
    """(…, n) bool for repeated tokens of period n/2: position i's next token is copyable when i + 1 lies in the
    second half, i.e. i ∈ [half, n − 2] (the second half's first token is not: nothing says the repeat starts)."""
    n = np.shape(ids)[-1]
    half = n // 2
    mask = np.zeros(np.shape(ids), dtype=bool)
    mask[..., half:n - 1] = True
    return mask
