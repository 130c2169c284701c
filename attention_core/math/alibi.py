"""ALiBi (Press et al., 2022): position as a bias on the scores, one slope per head, nothing added to X.

Head h adds −m_h·(i − j) to the score of query i with key j (j ≤ i): the further back a key, the
lower its score, by a slope that differs per head, so some heads look near and some far. The bias is
added to the scaled scores before softmax; no positional encoding is added anywhere.

Slopes: for H a power of two, the geometric sequence 2^(−8/H), 2^(−16/H), …, 2^(−8): the paper's
m_h = 2^(−8h/H) for h = 1 … H, which with the app's heads counted from 0 is head h ↦ 2^(−8(h+1)/H).
For other H the paper takes the c = 2^⌊log₂ H⌋ slopes of c heads, then every other slope of the
2c-head sequence for the remaining H − c heads (the reference code's `[0::2][:H − c]`).
"""
from __future__ import annotations

import math

import numpy as np

from .limits import MAX_HEADS, ConfigError


def _power_of_two_slopes(n: int) -> list[float]:
    """2^(−8h/n) for h = 1 … n."""
    return [2.0 ** (-8.0 * h / n) for h in range(1, n + 1)]


def alibi_slopes(n_heads: int) -> np.ndarray:
    """The paper's slopes m_0 … m_{H−1}; (n_heads,).

    >>> alibi_slopes(8).tolist()                           # 1/2, 1/4, …, 1/256
    [0.5, 0.25, 0.125, 0.0625, 0.03125, 0.015625, 0.0078125, 0.00390625]
    >>> alibi_slopes(6).round(4).tolist()                  # 4 heads' slopes, then every other of 8 heads'
    [0.25, 0.0625, 0.0156, 0.0039, 0.5, 0.125]
    """
    if isinstance(n_heads, bool) or not isinstance(n_heads, (int, np.integer)) or not 1 <= n_heads <= 4 * MAX_HEADS:
        raise ConfigError(f"ALiBi needs 1 to {4 * MAX_HEADS} heads, not {n_heads!r}.")
    n_heads = int(n_heads)
    c = 2 ** int(math.floor(math.log2(n_heads)))
    slopes = _power_of_two_slopes(c)
    if c < n_heads:
        slopes += _power_of_two_slopes(2 * c)[0::2][: n_heads - c]
    return np.array(slopes)


def alibi_bias(n: int, n_heads: int) -> np.ndarray:
    """−m_h·|i − j| for every head, query i and key j; (n_heads, n, n).

    On and below the diagonal (j ≤ i) this is the paper's −m_h·(i − j); above it (used only
    without a causal mask) the distance counts the same either way.

    >>> alibi_bias(3, 1)[0]                                # one head: slope 2^(−8) = 1/256
    array([[ 0.        , -0.00390625, -0.0078125 ],
           [-0.00390625,  0.        , -0.00390625],
           [-0.0078125 , -0.00390625,  0.        ]])
    """
    i = np.arange(n)
    distance = np.abs(i[:, None] - i[None, :]).astype(np.float64)       # (n, n)
    return 0.0 - alibi_slopes(n_heads)[:, None, None] * distance[None]   # (H, n, n); 0.0 − … keeps −0 out
