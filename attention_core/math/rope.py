"""Rotary position embedding (RoPE): position as a rotation of each pair of columns of Q and K.

Nothing is added to X. After the projections, pair i of a query or key row at position p is
rotated by the angle p·θ_i, with θ_i = base^(−2i/d) for i = 0 … d/2 − 1 (RoFormer, Su et al. 2021).
A rotation keeps lengths, and two rotations compose by adding angles, so

    (R_p q) · (R_p′ k) = q · R_{p′−p} k

depends on the positions only through p′ − p: the score of a query with a key sees how far apart
they are, not where they are (tests/test_modern_core.py checks it, and the complex-number form).

Two ways to pair the d columns are in use; they differ by a fixed permutation of the columns
(`half_permutation`), so a checkpoint converted from one to the other permutes its W_Q, W_K columns:

- "interleaved": pairs (x_{2i}, x_{2i+1}): RoFormer, GPT-J, Meta's Llama code (complex numbers);
- "half": pairs (x_i, x_{i+d/2}), computed as x·cos + rotate_half(x)·sin: GPT-NeoX, Hugging Face Llama.
"""
from __future__ import annotations

import math

import numpy as np

from .limits import ConfigError

PAIRINGS = ("interleaved", "half")


def check_rope(d: int, base: float) -> None:
    """RoPE needs an even width (it rotates pairs) and a finite base above 1."""
    if d % 2:
        raise ConfigError(f"RoPE rotates pairs of columns, so the width must be even; d={d} is odd. "
                          f"Set d_k to {d - 1 if d > 1 else 2} or {d + 1}.")
    if isinstance(base, bool) or not isinstance(base, (int, float, np.integer, np.floating)) or not math.isfinite(base) \
            or not base > 1:
        raise ConfigError(f"The RoPE base must be a finite number above 1 (10,000 in RoFormer and Llama 2, "
                          f"500,000 in Llama 3), not {base!r}.")


def rope_frequencies(d: int, base: float = 10000.0) -> np.ndarray:
    """θ_i = base^(−2i/d) for the pairs i = 0 … d/2 − 1; (d/2,). Pair 0 turns fastest (1 radian per position).

    >>> rope_frequencies(4).round(4)
    array([1.  , 0.01])
    """
    check_rope(d, base)
    return float(base) ** (-2.0 * np.arange(d // 2) / d)


def rope_angles(positions, d: int, base: float = 10000.0) -> np.ndarray:
    """p·θ_i for each position and pair; (n, d/2). positions: an int n (0 … n−1) or a sequence.

    >>> rope_angles(3, 4).round(2)
    array([[0.  , 0.  ],
           [1.  , 0.01],
           [2.  , 0.02]])
    """
    p = np.arange(positions, dtype=np.float64) if np.ndim(positions) == 0 else np.asarray(positions, np.float64)
    return p[:, None] * rope_frequencies(d, base)[None, :]                  # (n, d/2)


def rotate_half(x: np.ndarray) -> np.ndarray:
    """[x_0 … x_{d/2−1}, x_{d/2} … x_{d−1}] -> [−x_{d/2} … −x_{d−1}, x_0 … x_{d/2−1}] (GPT-NeoX, HF Llama)."""
    half = x.shape[-1] // 2
    return np.concatenate([-x[..., half:], x[..., :half]], axis=-1)


def half_permutation(d: int) -> np.ndarray:
    """The column order that turns interleaved pairs into halves: [0, 2, 4, …, 1, 3, 5, …]; (d,).

    Column 2i goes to i and column 2i+1 to i + d/2, so
    rotary_embedding(x[..., perm], pairing="half") == rotary_embedding(x, pairing="interleaved")[..., perm].

    >>> half_permutation(6)
    array([0, 2, 4, 1, 3, 5])
    """
    return np.concatenate([np.arange(0, d, 2), np.arange(1, d, 2)])


def rotary_embedding(x, positions=None, base: float = 10000.0, pairing: str = "interleaved") -> np.ndarray:
    """Rotate each pair of x's columns by p·θ_i; x (..., n, d) -> same shape. d even.

    positions: the position of each row (n,), default 0 … n−1 (the rows are positions).
    interleaved: (x_{2i}, x_{2i+1}) -> (x_{2i} cos − x_{2i+1} sin, x_{2i} sin + x_{2i+1} cos).
    half: x·cos + rotate_half(x)·sin with cos, sin of pair i in columns i and i + d/2.

    >>> x = np.array([[1.0, 0.0], [1.0, 0.0]])          # the same row at positions 0 and 1
    >>> rotary_embedding(x).round(4)                     # position 1 turns pair 0 by 1 radian
    array([[1.    , 0.    ],
           [0.5403, 0.8415]])
    """
    x = np.asarray(x, dtype=np.float64)
    n, d = x.shape[-2], x.shape[-1]
    if pairing not in PAIRINGS:
        raise ConfigError(f"pairing={pairing!r} is not 'interleaved' or 'half'.")
    angles = rope_angles(n if positions is None else positions, d, base)      # (n, d/2)
    if angles.shape[0] != n:
        raise ConfigError(f"{angles.shape[0]} positions for {n} rows.")
    cos, sin = np.cos(angles), np.sin(angles)                                  # (n, d/2)
    if pairing == "half":
        cos2, sin2 = np.concatenate([cos, cos], -1), np.concatenate([sin, sin], -1)   # (n, d)
        return x * cos2 + rotate_half(x) * sin2
    even, odd = x[..., 0::2], x[..., 1::2]                                     # (..., n, d/2)
    out = np.empty_like(x)
    out[..., 0::2] = even * cos - odd * sin
    out[..., 1::2] = even * sin + odd * cos
    return out


def rotary_complex(x, positions=None, base: float = 10000.0) -> np.ndarray:
    """The same rotation as complex numbers (RoFormer's form, Meta's Llama code): pair i is
    z_i = x_{2i} + i·x_{2i+1}, multiplied by e^{i p θ_i}; back to real columns; interleaved pairing.

    >>> x = np.random.default_rng(0).standard_normal((5, 6))
    >>> bool(np.allclose(rotary_complex(x), rotary_embedding(x)))
    True
    """
    x = np.asarray(x, dtype=np.float64)
    z = x[..., 0::2] + 1j * x[..., 1::2]                                       # (..., n, d/2)
    n = x.shape[-2]
    z = z * np.exp(1j * rope_angles(n if positions is None else positions, x.shape[-1], base))
    out = np.empty_like(x)
    out[..., 0::2], out[..., 1::2] = z.real, z.imag
    return out
