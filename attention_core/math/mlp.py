"""The MLP of a transformer block: two linear maps with GELU between, one row (token) at a time.

    H = X W_1 + b_1   (n, d_ff)        A = GELU(H)        Y = A W_2 + b_2   (n, d_model)

GELU (Hendrycks & Gimpel 2016), the exact form torch.nn.functional.gelu computes by default:
GELU(h) = h Φ(h), Φ the standard normal CDF; GELU′(h) = Φ(h) + h φ(h).

    >>> np.round(gelu(np.array([-1.0, 0.0, 1.0])), 6).tolist()
    [-0.158655, 0.0, 0.841345]
"""
from __future__ import annotations

import math

import numpy as np

_erf = np.frompyfunc(math.erf, 1, 1)


def normal_cdf(h: np.ndarray) -> np.ndarray:
    """Φ(h) = (1 + erf(h / √2)) / 2, elementwise, float64."""
    return 0.5 * (1.0 + _erf(np.asarray(h, dtype=np.float64) / math.sqrt(2.0)).astype(np.float64))


def gelu(h: np.ndarray) -> np.ndarray:
    """GELU(h) = h Φ(h): about h for large h, about 0 for very negative h, smooth between."""
    return h * normal_cdf(h)


def gelu_derivative(h: np.ndarray) -> np.ndarray:
    """GELU′(h) = Φ(h) + h φ(h), φ(h) = e^(−h²/2) / √(2π)."""
    return normal_cdf(h) + h * np.exp(-0.5 * h ** 2) / math.sqrt(2.0 * math.pi)


def mlp(x: np.ndarray, w_1: np.ndarray, b_1: np.ndarray, w_2: np.ndarray, b_2: np.ndarray):
    """(H, A, Y): hidden (n, d_ff), activated (n, d_ff), out (n, d_model)."""
    hidden = x @ w_1 + b_1                                      # (n, d_ff)
    act = gelu(hidden)                                          # (n, d_ff)
    return hidden, act, act @ w_2 + b_2                         # (n, d_model)


def mlp_backward(dy: np.ndarray, x: np.ndarray, hidden: np.ndarray, act: np.ndarray, w_1: np.ndarray,
                 w_2: np.ndarray) -> dict[str, np.ndarray]:
    """∂L/∂(w_2, b_2, act, hidden, w_1, b_1, x) from ∂L/∂Y, each under the forward line it undoes."""
    # Y = A W_2 + b_2          ⇒  ∂L/∂W_2 = Aᵀ ∂L/∂Y,  ∂L/∂b_2 = Σ_rows ∂L/∂Y,  ∂L/∂A = ∂L/∂Y W_2ᵀ
    d_w_2, d_b_2, d_act = act.T @ dy, dy.sum(axis=0), dy @ w_2.T
    # A = GELU(H)              ⇒  ∂L/∂H = ∂L/∂A ⊙ GELU′(H)
    d_hidden = d_act * gelu_derivative(hidden)
    # H = X W_1 + b_1          ⇒  ∂L/∂W_1 = Xᵀ ∂L/∂H,  ∂L/∂b_1 = Σ_rows ∂L/∂H,  ∂L/∂X = ∂L/∂H W_1ᵀ
    return {"w_2": d_w_2, "b_2": d_b_2, "act": d_act, "hidden": d_hidden,
            "w_1": x.T @ d_hidden, "b_1": d_hidden.sum(axis=0), "x": d_hidden @ w_1.T}
