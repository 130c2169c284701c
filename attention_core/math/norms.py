"""LayerNorm and RMSNorm over the last axis (each row a token), with their derivatives under them.

LayerNorm (Ba et al. 2016), as torch.nn.LayerNorm computes it: the **biased** variance (divide by d, not
d − 1), and ε inside the square root:

    μ = mean_j x_j,   σ² = mean_j (x_j − μ)²,   x̂ = (x − μ) / √(σ² + ε),   y = γ ⊙ x̂ + β

RMSNorm (Zhang & Sennrich 2019), as torch.nn.RMSNorm: no mean taken away, no β:

    r = √(mean_j x_j² + ε),   y = γ ⊙ x / r

    >>> y = layer_norm(np.array([[1.0, 2.0, 3.0]]), np.ones(3), np.zeros(3), eps=0.0)
    >>> np.round(y, 4).tolist()
    [[-1.2247, 0.0, 1.2247]]
"""
from __future__ import annotations

import numpy as np

EPS = 1e-5          # torch.nn.LayerNorm's default; RMSNorm here uses the same (torch's default is the dtype's eps)


def layer_norm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float = EPS) -> np.ndarray:
    """(…, d) -> (…, d): each row to mean 0 and variance 1, then scaled by γ and shifted by β."""
    return gamma * layer_norm_parts(x, eps)[0] + beta


def layer_norm_parts(x: np.ndarray, eps: float = EPS) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(x̂, μ, σ²): the normalised rows (…, d), their means (…, 1) and biased variances (…, 1)."""
    mu = x.mean(axis=-1, keepdims=True)                         # (…, 1)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)          # (…, 1)   biased: divide by d
    return (x - mu) / np.sqrt(var + eps), mu, var


def layer_norm_backward(dy: np.ndarray, x: np.ndarray, gamma: np.ndarray, eps: float = EPS):
    """(∂L/∂x, ∂L/∂γ, ∂L/∂β) from ∂L/∂y, for rows (n, d).

    y = γ ⊙ x̂ + β  ⇒  ∂L/∂γ = Σ_rows ∂L/∂y ⊙ x̂,  ∂L/∂β = Σ_rows ∂L/∂y,  ∂L/∂x̂ = ∂L/∂y ⊙ γ
    x̂ = (x − μ)/√(σ² + ε), μ and σ² depend on every x_j of the row
                   ⇒  ∂L/∂x = (∂L/∂x̂ − mean(∂L/∂x̂) − x̂ ⊙ mean(∂L/∂x̂ ⊙ x̂)) / √(σ² + ε)
    """
    x_hat, _, var = layer_norm_parts(x, eps)
    dx_hat = dy * gamma                                         # (n, d)
    dx = (dx_hat - dx_hat.mean(axis=-1, keepdims=True)
          - x_hat * (dx_hat * x_hat).mean(axis=-1, keepdims=True)) / np.sqrt(var + eps)
    return dx, (dy * x_hat).sum(axis=0), dy.sum(axis=0)


def rms_norm(x: np.ndarray, gamma: np.ndarray, eps: float = EPS) -> np.ndarray:
    """(…, d) -> (…, d): each row divided by its root mean square, then scaled by γ."""
    return gamma * x / rms(x, eps)


def rms(x: np.ndarray, eps: float = EPS) -> np.ndarray:
    """r = √(mean_j x_j² + ε), one per row: (…, 1)."""
    return np.sqrt((x ** 2).mean(axis=-1, keepdims=True) + eps)


def rms_norm_backward(dy: np.ndarray, x: np.ndarray, gamma: np.ndarray, eps: float = EPS):
    """(∂L/∂x, ∂L/∂γ) from ∂L/∂y, for rows (n, d).

    y = γ ⊙ x / r  ⇒  ∂L/∂γ = Σ_rows ∂L/∂y ⊙ x / r;  with u = ∂L/∂y ⊙ γ and ∂r/∂x_j = x_j / (d r):
                      ∂L/∂x = u / r − x ⊙ mean(u ⊙ x) / r³
    """
    r = rms(x, eps)                                             # (n, 1)
    u = dy * gamma                                              # (n, d)
    dx = u / r - x * (u * x).mean(axis=-1, keepdims=True) / r ** 3
    return dx, (dy * x / r).sum(axis=0)
