"""The next token from one row of logits z (|V|,): temperature, top-k, top-p, renormalise, a seeded draw.

    p = softmax(z / T)                         T divides the logits BEFORE softmax (after it, it would change
                                               nothing: the probabilities are renormalised anyway). Computed as
                                               softmax((z − max z) / T): the shift first, then the division, so
                                               that nothing overflows for any T > 0 (z / T alone is ±∞ already at
                                               T = 1e-308 for |z_j| ≥ 1.8, and ∞ − ∞ is NaN)
        T → 0+: the limit of softmax(z / T) puts equal shares on the largest logits (1 / the number of exact ties,
                1 with no tie), 0 elsewhere; every T > 0 computes it exactly so (a gap of more than ~745·T to the
                largest z gives exactly 0). T = 0 itself is greedy decoding: 1 on the FIRST largest z (the lowest
                token number, as np.argmax and torch.argmax choose), 0 elsewhere.
    top-k:  keep z_j ≥ the k-th largest z      k = 0, or k ≥ |V|, keeps every token (top-k off)
    top-p:  the order: tokens by descending probability, ties by token number (the lower first: a stable sort).
            Keep the shortest prefix of that order whose probabilities add up to p or more, at least one token:
            token j stays iff it is first, or the mass of the tokens ahead of it is < p − 1e-12 (each such sum
            correctly rounded, math.fsum; the 1e-12 lets a sum that equals p but for rounding reach it). p = 1
            keeps every token (top-p off), p = 0 only the first. (Holtzman et al. 2020, "The Curious Case of Neural
            Text Degeneration"; Hugging Face's TopPLogitsWarper, below, means the same rule and differs at ties
            and at floating-point boundaries.)
    p′_j = p_j / Σ_{i kept} p_i                 the kept set renormalised (0 outside it)
    sample: u ~ U[0, 1) from a seeded generator; the first token j whose cumulative p′_0 + … + p′_j > u
            (inverse CDF): the same seed gives the same token.

As Hugging Face's generate applies them: temperature, then top-k, then top-p on what top-k kept.

Hugging Face transformers' TopPLogitsWarper (src/transformers/generation/logits_process.py, read at commit
00857b6 of huggingface/transformers): `torch.sort(scores, descending=False)`, `cumulative_probs =
sorted_logits.softmax(-1).cumsum(-1)`, `sorted_indices_to_remove = cumulative_probs <= (1 - top_p)`, the last
`min_tokens_to_keep` (1) never removed. Its docstring's rule is this one ("the smallest set of most probable tokens
with probabilities that add up to `top_p` or higher"); its arithmetic differs in two places:
  ties     its order among equal probabilities is whatever torch.sort (stable=False) returns, and it removes
           from the low end: four tokens at 0.25 with p = 0.5 keep tokens [2, 3] there (torch's order for 4
           ties), [0, 1] here; for 40 ties torch's order is not even the index order.
  rounding it compares a sum from the bottom with 1 − top_p, both rounded: [0.5, 0.3, 0.2] with p = 0.8 keeps
           all 3 there (0.2 > 1 − 0.8 = 0.19999999999999996), 2 here (0.5 + 0.3 = 0.8 exactly in float64).
Away from ties and boundaries the kept sets are the same (tests/test_sampling.py compares them).

    >>> z = np.array([2.0, 1.0, 0.0, -1.0])
    >>> [round(float(x), 4) for x in softmax_t(z, 1.0)]
    [0.6439, 0.2369, 0.0871, 0.0321]
    >>> top_k_keep(z, 2).tolist(), top_p_keep(softmax_t(z, 1.0), 0.8).tolist()
    ([True, True, False, False], [True, True, False, False])
    >>> draw(renormalise(softmax_t(z, 1.0), top_k_keep(z, 2)), 0.5)
    0
    >>> softmax_t(z, 1e-308).tolist(), top_p_keep(np.full(4, 0.25), 0.5).tolist()
    ([1.0, 0.0, 0.0, 0.0], [True, True, False, False])
"""
from __future__ import annotations

import math

import numpy as np

from .limits import ConfigError

MAX_T = 100.0
TOP_P_TOLERANCE = 1e-12      # a mass within this below p reaches p: softmax's and the renormalisation's rounding
                             # (~1e-16 a term) and p's own (0.8 is 0.8000000000000000444) stay far inside it
_FITS = np.finfo(np.float64).max * (1 - 1e-15)   # |(z − max z) / T| up to this is finite when computed


def check_sampling(temperature, k, p, vocab: int) -> None:
    """A clear message for settings no sampler takes: T < 0 (or not a number), k < 0, p outside 0 … 1."""
    if not (isinstance(temperature, (int, float)) and np.isfinite(temperature) and 0 <= temperature <= MAX_T):
        raise ConfigError(f"The temperature T = {temperature!r} must be a number from 0 to {MAX_T:g} (0: argmax).")
    if not (isinstance(k, (int, np.integer)) and not isinstance(k, bool) and k >= 0):
        raise ConfigError(f"top-k = {k!r} must be a whole number ≥ 0 (0 or ≥ {vocab}: every token kept).")
    if not (isinstance(p, (int, float)) and np.isfinite(p) and 0 <= p <= 1):
        raise ConfigError(f"top-p = {p!r} must be a number from 0 to 1 (1: every token kept, 0: only the top one).")


def scaled(z: np.ndarray, temperature: float) -> np.ndarray:
    """(z − max z) / T (|V|,): the logits over T, shifted so that the largest is 0 and the rest are < 0 (what
    softmax reads; the shift cancels in it). At T = 0 the logits themselves (argmax needs no division).

    The shift comes before the division, so no entry can overflow upwards; an entry whose value lies below
    float64's range (−1.8e308, e.g. −2 / 1e-308) is −∞, as IEEE division rounds it, computed without the
    overflow (and its warning): e^(−∞) = 0, as e^x is already 0 in float64 for every x < −745.2. z is finite.

    >>> scaled(np.array([1.0, 0.0, -1.0]), 1e-308).tolist()
    [0.0, -1e+308, -inf]
    """
    z = np.asarray(z, dtype=np.float64)
    if temperature == 0:
        return z
    d = z - z.max()                                    # ≤ 0, exactly 0 at the largest z
    T = float(temperature)
    if T >= 1:                                         # |d / T| ≤ |d|: finite
        return d / T
    out = np.full(d.shape, -np.inf)
    np.divide(d, T, out=out, where=-d <= _FITS * T)    # the rest would round to −∞ anyway
    return out


def softmax_t(z: np.ndarray, temperature: float) -> np.ndarray:
    """softmax(z / T) (|V|,), as e^((z_j − max z) / T) / Σ_i e^((z_i − max z) / T): the largest term is e^0 = 1, so
    the sum is ≥ 1 and no entry is NaN, for every T > 0. Exact ties of the largest z share equally (the limit
    T → 0+). T = 0: 1 on the first largest z (greedy decoding), 0 elsewhere."""
    z = np.asarray(z, dtype=np.float64)
    if temperature == 0:
        out = np.zeros_like(z)
        out[int(np.argmax(z))] = 1.0
        return out
    e = np.exp(scaled(z, temperature))
    return e / e.sum()


def top_k_keep(z: np.ndarray, k: int) -> np.ndarray:
    """Which tokens top-k keeps (|V|,) bool: z_j ≥ the k-th largest z (ties with it kept, as torch.topk's
    threshold keeps them in Hugging Face's TopKLogitsWarper). k = 0 or k ≥ |V|: all."""
    z = np.asarray(z, dtype=np.float64)
    if k == 0 or k >= z.size:
        return np.ones(z.size, dtype=bool)
    kth = np.sort(z)[::-1][k - 1]
    return z >= kth


def top_p_order(probs: np.ndarray) -> np.ndarray:
    """The order top-p reads the tokens in (|V|,) token numbers: descending probability, ties by token number (the
    lower first): numpy's stable sort of −p."""
    return np.argsort(-np.asarray(probs, dtype=np.float64), kind="stable")


def top_p_keep(probs: np.ndarray, p: float) -> np.ndarray:
    """Which tokens top-p keeps (|V|,) bool, from probabilities (0 where an earlier filter dropped a token): the
    shortest prefix of top_p_order whose mass, summed with math.fsum, is ≥ p − TOP_P_TOLERANCE; at least one token.
    Token j stays iff it is first in the order or the tokens ahead of it hold < p − TOP_P_TOLERANCE. p = 1 keeps
    every token (top-p off), p = 0 the first one.

    >>> top_p_keep(np.array([0.5, 0.3, 0.2]), 0.8).tolist(), top_p_keep(np.array([0.2, 0.5, 0.3]), 0.81).tolist()
    ([True, True, False], [True, True, True])
    """
    probs = np.asarray(probs, dtype=np.float64)
    if p >= 1:
        return np.ones(probs.size, dtype=bool)
    order = top_p_order(probs)
    q, need = probs[order].tolist(), p - TOP_P_TOLERANCE
    lo, hi = 1, len(q)                                 # the fewest leading tokens whose mass reaches `need`:
    while lo < hi:                                     # the prefix sums never decrease, so bisect
        mid = (lo + hi) // 2
        if math.fsum(q[:mid]) >= need:
            hi = mid
        else:
            lo = mid + 1
    keep = np.zeros(probs.size, dtype=bool)
    keep[order[:lo]] = True
    return keep


def renormalise(probs: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """p′ = p · [kept] / Σ_{kept} p (|V|,). If every kept p underflowed to 0, the kept set shares equally."""
    probs = np.where(keep, np.asarray(probs, dtype=np.float64), 0.0)
    total = probs.sum()
    return probs / total if total > 0 else keep / keep.sum()


def draw(probs: np.ndarray, u: float) -> int:
    """The inverse-CDF draw: the first j with p′_0 + … + p′_j > u (a token of probability 0 is never drawn)."""
    cdf = np.cumsum(probs)
    j = int(np.searchsorted(cdf, u, side="right"))
    last = int(np.flatnonzero(np.asarray(probs) > 0)[-1])
    return min(j, last)                                # u ≥ the rounded total: the last possible token


def uniforms(seed: int, count: int) -> np.ndarray:
    """count draws u ~ U[0, 1) from numpy's seeded generator (PCG64): one per generated token."""
    return np.random.default_rng(int(seed)).random(count)


def next_token(z: np.ndarray, temperature: float, k: int, p: float, u: float) -> dict[str, np.ndarray | int]:
    """Every stage for one row of logits: scaled, probs, kept_k, kept_p, kept, renormalised, cdf, token."""
    check_sampling(temperature, k, p, np.asarray(z).size)
    s, probs = scaled(z, temperature), softmax_t(z, temperature)
    kept_k = top_k_keep(z, k) if temperature > 0 else probs > 0
    after_k = renormalise(probs, kept_k)
    kept_p = top_p_keep(after_k, p) if temperature > 0 else probs > 0
    kept = kept_k & kept_p
    final = renormalise(probs, kept)
    return {"scaled": s, "probs": probs, "kept_k": kept_k, "kept_p": kept_p, "kept": kept, "renormalised": final,
            "cdf": np.cumsum(final), "token": draw(final, u)}
