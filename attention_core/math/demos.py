"""Small experiments the pages run to show *why* a step is the way it is."""
from __future__ import annotations

import numpy as np

from .attention import softmax


def dot_product_spread(d_values, n_samples: int = 2000, seed: int = 0) -> list[dict]:
    """Variance of q·k and of q·k/√d for random q, k with unit-variance entries, per d.

    Var(q·k) = d (a sum of d products of variance 1), so the raw scores spread like √d; dividing by
    √d brings the variance back to 1.
    """
    rng = np.random.default_rng(seed)
    out = []
    for d in d_values:
        q = rng.standard_normal((n_samples, d))
        k = rng.standard_normal((n_samples, d))
        dots = np.einsum("sd,sd->s", q, k)                  # (n_samples,)
        out.append({"d_k": int(d), "variance of q·k": float(dots.var()),
                    "variance of q·k/√d_k": float((dots / np.sqrt(d)).var())})
    return out


def saturation(d_k: int, n_keys: int = 6, seed: int = 0) -> dict:
    """One query against n_keys random keys at width d_k: softmax with and without the √d_k scaling."""
    rng = np.random.default_rng([seed, d_k])
    q = rng.standard_normal(d_k)
    k = rng.standard_normal((n_keys, d_k))
    raw = k @ q                                              # (n_keys,)
    return {"raw": raw, "weights_unscaled": softmax(raw), "weights_scaled": softmax(raw / np.sqrt(d_k))}
