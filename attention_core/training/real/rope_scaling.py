"""RoPE's frequencies as a checkpoint sets them: θ_i = base^(−2i/d) (math/rope.py), and Llama 3's "llama3" scaling.

Llama 3.1/3.2 stretch the slow pairs so a model trained on a short context reads a longer one. With the
wavelength λ_i = 2π/θ_i, the original context L (original_max_position_embeddings), factor s and the two
frequency factors lo, hi:

    λ_i < L/hi   (fast pairs: many turns within L)      θ_i unchanged
    λ_i > L/lo   (slow pairs: less than a turn in L)    θ_i / s
    between      a blend:  θ_i' = (1 − t) θ_i / s + t θ_i,   t = (L/λ_i − lo) / (hi − lo)

Then each row at position p is rotated as before, by p·θ_i', in the checkpoint's pairing: Hugging Face stores
Llama's W_Q and W_K with the "half" pairing (columns i and i + d/2), so that is the one used.

    >>> theta = rope_inverse_frequencies(8, 500000.0, {"factor": 8.0, "low_freq_factor": 1.0,
    ...     "high_freq_factor": 4.0, "original_max_position_embeddings": 8192.0})     # Llama 3.2's numbers
    >>> (theta / rope_inverse_frequencies(8, 500000.0)).round(3).tolist()     # fast kept, one blended, slow / 8
    [1.0, 1.0, 0.371, 0.125]
"""
from __future__ import annotations

import math

import numpy as np

from ...math.rope import rope_frequencies


def rope_inverse_frequencies(d_head: int, theta: float, scaling: dict | None = None) -> np.ndarray:
    """θ_i' for the pairs i = 0 … d/2 − 1 (float64), scaled as `scaling` (llama3's parameters, or none) says."""
    freqs = rope_frequencies(d_head, theta)                                     # (d/2,)
    if not scaling:
        return freqs
    factor, lo, hi = scaling["factor"], scaling["low_freq_factor"], scaling["high_freq_factor"]
    context = scaling["original_max_position_embeddings"]
    wavelength = 2 * math.pi / freqs
    slow = np.where(wavelength > context / lo, freqs / factor, freqs)
    t = (context / wavelength - lo) / (hi - lo)
    blended = (1 - t) * slow / factor + t * slow
    medium = (wavelength >= context / hi) & (wavelength <= context / lo)
    return np.where(medium, blended, slow)


def rope_cos_sin(n: int, d_head: int, theta: float, scaling: dict | None = None) -> tuple[np.ndarray, np.ndarray]:
    """cos and sin of p·θ_i' for positions 0 … n−1, each (n, d) with pair i in columns i and i + d/2, float32."""
    freqs = rope_inverse_frequencies(d_head, theta, scaling).astype(np.float32)    # as transformers: float32
    angles = np.arange(n, dtype=np.float32)[:, None] * freqs[None, :]              # (n, d/2)
    angles = np.concatenate([angles, angles], axis=-1)                              # (n, d)
    return np.cos(angles), np.sin(angles)
