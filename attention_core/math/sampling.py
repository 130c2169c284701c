"""The next token from one row of logits z (|V|,): temperature, top-k, top-p, renormalise, a seeded draw.

    p = softmax(z / T)                         T divides the logits BEFORE softmax (after it, it would change
                                               nothing: the probabilities are renormalised anyway); T = 0 is
                                               the limit T → 0: all mass on the largest z (argmax, greedy)
    top-k:  keep z_j ≥ the k-th largest z      k = 0, or k ≥ |V|, keeps every token (top-k off)
    top-p:  keep the smallest set of tokens, taken in descending probability, whose probabilities add up to
            p or more; always at least the most probable one. p = 1 keeps all, p = 0 only the top one
            (Holtzman et al. 2020, "The Curious Case of Neural Text Degeneration"; written as Hugging Face's
            TopPLogitsWarper writes it: sort ascending, drop a token while the mass up to and including it
            is ≤ 1 − p, never the last)
    p′_j = p_j / Σ_{i kept} p_i                 the kept set renormalised (0 outside it)
    sample: u ~ U[0, 1) from a seeded generator; the first token j whose cumulative p′_0 + … + p′_j > u
            (inverse CDF): the same seed gives the same token.

As Hugging Face's generate applies them: temperature, then top-k, then top-p on what top-k kept.

    >>> z = np.array([2.0, 1.0, 0.0, -1.0])
    >>> [round(float(x), 4) for x in softmax_t(z, 1.0)]
    [0.6439, 0.2369, 0.0871, 0.0321]
    >>> top_k_keep(z, 2).tolist(), top_p_keep(softmax_t(z, 1.0), 0.8).tolist()
    ([True, True, False, False], [True, True, False, False])
    >>> draw(renormalise(softmax_t(z, 1.0), top_k_keep(z, 2)), 0.5)
    0
"""
from __future__ import annotations

import numpy as np

from .limits import ConfigError

MAX_T = 100.0


def check_sampling(temperature, k, p, vocab: int) -> None:
    """A clear message for settings no sampler takes: T < 0 (or not a number), k < 0, p outside 0 … 1."""
    if not (isinstance(temperature, (int, float)) and np.isfinite(temperature) and 0 <= temperature <= MAX_T):
        raise ConfigError(f"The temperature T = {temperature!r} must be a number from 0 to {MAX_T:g} (0: argmax).")
    if not (isinstance(k, (int, np.integer)) and not isinstance(k, bool) and k >= 0):
        raise ConfigError(f"top-k = {k!r} must be a whole number ≥ 0 (0 or ≥ {vocab}: every token kept).")
    if not (isinstance(p, (int, float)) and np.isfinite(p) and 0 <= p <= 1):
        raise ConfigError(f"top-p = {p!r} must be a number from 0 to 1 (1: every token kept, 0: only the top one).")


def scaled(z: np.ndarray, temperature: float) -> np.ndarray:
    """z / T (|V|,); at T = 0 the logits themselves (argmax needs no division)."""
    z = np.asarray(z, dtype=np.float64)
    return z if temperature == 0 else z / temperature


def softmax_t(z: np.ndarray, temperature: float) -> np.ndarray:
    """softmax(z / T) (|V|,), the maximum subtracted first; T = 0: 1 on the first largest z, 0 elsewhere."""
    z = np.asarray(z, dtype=np.float64)
    if temperature == 0:
        out = np.zeros_like(z)
        out[int(np.argmax(z))] = 1.0
        return out
    s = z / temperature
    e = np.exp(s - s.max())                            # (|V|,), the largest term is e^0 = 1
    return e / e.sum()


def top_k_keep(z: np.ndarray, k: int) -> np.ndarray:
    """Which tokens top-k keeps (|V|,) bool: z_j ≥ the k-th largest z (ties with it kept, as torch.topk's
    threshold keeps them in Hugging Face's TopKLogitsWarper). k = 0 or k ≥ |V|: all."""
    z = np.asarray(z, dtype=np.float64)
    if k == 0 or k >= z.size:
        return np.ones(z.size, dtype=bool)
    kth = np.sort(z)[::-1][k - 1]
    return z >= kth


def top_p_keep(probs: np.ndarray, p: float) -> np.ndarray:
    """Which tokens top-p keeps (|V|,) bool, from probabilities (0 where an earlier filter dropped a token):
    sorted ascending, a token is dropped while the cumulative mass up to and including it is ≤ 1 − p; the most
    probable one is always kept. p = 1 keeps every token, p = 0 the most probable one."""
    probs = np.asarray(probs, dtype=np.float64)
    if p >= 1:
        return np.ones(probs.size, dtype=bool)
    order = np.argsort(probs, kind="stable")           # ascending, as torch.sort(…, descending=False)
    drop_sorted = np.cumsum(probs[order]) <= 1 - p
    drop_sorted[-1] = False                            # at least one token: the most probable
    keep = np.ones(probs.size, dtype=bool)
    keep[order[drop_sorted]] = False
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
