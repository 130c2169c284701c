"""Telling attention where each word is: attention itself is blind to order.

Rows are positions, columns are dimensions.
"""
from __future__ import annotations

import numpy as np


def sinusoidal_encoding(n_positions: int, d_model: int, base: float = 10000.0) -> np.ndarray:
    """PE[p, 2i] = sin(p / base^(2i/d)), PE[p, 2i+1] = cos(p / base^(2i/d)); shape (n_positions, d_model).

    Column j uses the frequency of pair i = j // 2, so an odd d_model fills its last column
    with a sine too (seed 001's loop leaves it at zero).

    >>> sinusoidal_encoding(2, 4).round(5)
    array([[0.     , 1.     , 0.     , 1.     ],
           [0.84147, 0.5403 , 0.01   , 0.99995]])
    """
    positions = np.arange(n_positions, dtype=np.float64)[:, None]        # (n, 1)
    pair = np.arange(d_model) // 2                                        # (d,)
    angles = positions / np.power(float(base), 2.0 * pair / d_model)      # (n, d)
    return np.where(np.arange(d_model) % 2 == 0, np.sin(angles), np.cos(angles))


def index_feature(n_positions: int) -> np.ndarray:
    """Seed 000's position feature: the index 0, 1, ..., n-1 as one extra column; (n, 1)."""
    return np.arange(n_positions, dtype=np.float64)[:, None]


def learned_encoding(n_positions: int, d_model: int, seed: int = 0, scale: float = 0.1) -> np.ndarray:
    """A trainable table of position vectors, here at its seeded random start; (n_positions, d_model).

    Row p does not depend on n_positions, so a longer sentence keeps the earlier rows.
    """
    rng = np.random.default_rng([seed, 7919, d_model])
    return scale * rng.standard_normal((n_positions, d_model))
