"""The rotation the RoPE page shows, in either pairing: columns (2i, 2i + 1) interleaved (the forward pass's) or
(i, i + d_k/2) half; the same through RoPE's complex-number form; one pair's path as it turns; and the
permutation that makes one pairing the other, checked on a head's Q and K.

    >>> import numpy as np
    >>> x = np.array([[1.0, 0.0, 0.0, 1.0]])                  # (n=1, d=4)
    >>> bool(np.allclose(rotate(x, [2], 10.0, "half"), complex_form(x, [2], 10.0, "half")))
    True
"""
from __future__ import annotations

import math

import numpy as np

from ...math.rope import half_permutation, rotary_complex, rotary_embedding


def rotate(x: np.ndarray, positions, base: float, pairing: str) -> np.ndarray:
    """rotary_embedding with the page's pairing; (n, d) -> (n, d)."""
    return rotary_embedding(x, positions, base=base, pairing=pairing)


def complex_form(x: np.ndarray, positions, base: float, pairing: str) -> np.ndarray:
    """The same rotation through RoPE's complex-number form (each pair as one complex number times e^{ipθ_i});
    the half pairing's pairs (x_i, x_{i+d/2}) read in the interleaved column order and put back; (n, d)."""
    if pairing == "interleaved":
        return rotary_complex(x, positions, base)
    perm = half_permutation(x.shape[-1])
    inverse = np.argsort(perm)
    return rotary_complex(x[..., inverse], positions, base)[..., perm]


def scaled_scores(q_rot: np.ndarray, k_rot: np.ndarray) -> np.ndarray:
    """Ŝ = Q^R K^{R⊤} / √d_k; (n, d) × (n, d) -> (n, n)."""
    return q_rot @ k_rot.T / math.sqrt(q_rot.shape[-1])


def pair_path(vector: np.ndarray, theta: float, p: int) -> list[dict]:
    """One pair (a, b) turned by 0, θ, 2θ, …, pθ: the rows of the pair's picture, the last one at position p."""
    a, b = float(vector[0]), float(vector[1])
    out = []
    for s in range(p + 1):
        c, si = math.cos(s * theta), math.sin(s * theta)
        out.append({"position": s, "x": a * c - b * si, "y": a * si + b * c, "x0": 0.0, "y0": 0.0, "now": s == p})
    return out


def pair_columns(d: int, i: int, pairing: str) -> tuple[int, int]:
    """The two columns of pair i: (2i, 2i + 1) interleaved, (i, i + d/2) half."""
    return (2 * i, 2 * i + 1) if pairing == "interleaved" else (i, i + d // 2)


def pairing_checks(q: np.ndarray, k: np.ndarray, base: float) -> dict:
    """The permutation between the pairings, checked on this Q, K: half of the permuted columns is the
    permuted interleaved result; permuting W_Q, W_K's columns (so Q, K's) keeps every dot product of the rotated
    rows; not permuting them changes them (d_k ≥ 4)."""
    d = q.shape[1]
    perm = half_permutation(d)
    inter_q = rotate(q, None, base, "interleaved")
    inter = scaled_scores(inter_q, rotate(k, None, base, "interleaved"))
    half_permuted = scaled_scores(rotate(q[:, perm], None, base, "half"), rotate(k[:, perm], None, base, "half"))
    half_same = scaled_scores(rotate(q, None, base, "half"), rotate(k, None, base, "half"))
    return {"perm": perm,
            "perm_rotation_gap": float(np.abs(rotate(q[:, perm], None, base, "half") - inter_q[:, perm]).max()),
            "perm_scores_gap": float(np.abs(half_permuted - inter).max()),
            "mismatch_gap": float(np.abs(half_same - inter).max())}
