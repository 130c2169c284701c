"""The same rotation in torch, as the model libraries write it (torch imported inside the functions): Meta's Llama
code turns interleaved pairs as complex numbers, Hugging Face's rotates halves; both checked against the page's Q^R,
K^R and scores.
"""
from __future__ import annotations

import math

import numpy as np

from ...forward.trace import Trace
from ...math.rope import half_permutation
from .claims import DOT_SCORES
from .reading import score_key


def torch_rope_complex(x: np.ndarray, positions, base: float) -> np.ndarray:
    """Meta's Llama code (precompute_freqs_cis, apply_rotary_emb) in float64: interleaved pairs as complex
    numbers times torch.polar(1, p·θ_i); (n, d) -> (n, d)."""
    import torch
    x_t = torch.tensor(np.array(x, dtype=np.float64))
    n, d = x_t.shape
    freqs = 1.0 / (base ** (torch.arange(0, d, 2, dtype=torch.float64)[: d // 2] / d))      # (d/2,)
    p = torch.as_tensor(np.arange(n) if positions is None else np.asarray(positions), dtype=torch.float64)
    freqs_cis = torch.polar(torch.ones(n, d // 2, dtype=torch.float64), torch.outer(p, freqs))  # (n, d/2) complex
    x_c = torch.view_as_complex(x_t.reshape(n, -1, 2).contiguous())                         # (n, d/2)
    return torch.view_as_real(x_c * freqs_cis).flatten(1).numpy()


def torch_rope_rotate_half(x: np.ndarray, positions, base: float) -> np.ndarray:
    """Hugging Face's Llama (LlamaRotaryEmbedding, apply_rotary_pos_emb) in float64: x·cos + rotate_half(x)·sin
    with cos, sin repeated over both halves; (n, d) -> (n, d)."""
    import torch
    x_t = torch.tensor(np.array(x, dtype=np.float64))
    n, d = x_t.shape
    inv_freq = 1.0 / (base ** (torch.arange(0, d, 2, dtype=torch.float64) / d))             # (d/2,)
    p = torch.as_tensor(np.arange(n) if positions is None else np.asarray(positions), dtype=torch.float64)
    emb = torch.cat((torch.outer(p, inv_freq),) * 2, dim=-1)                               # (n, d)
    x1, x2 = x_t[..., : d // 2], x_t[..., d // 2:]
    return (x_t * emb.cos() + torch.cat((-x2, x1), dim=-1) * emb.sin()).numpy()


def torch_checks(t: Trace) -> dict:
    """This page's Q^R, K^R and scores against both torch forms (each fed the column order it pairs): max absolute
    differences {"complex", "rotate_half", "scores"} (scores: only for a dot-product score, else None)."""
    base, pairing, d = float(t.facts["base"]), t.facts["pairing"], t.facts["d_k"]
    at = np.arange(t.n) + t.facts.get("offset", 0)                          # the rows' positions
    perm = half_permutation(d)
    inverse = np.argsort(perm)
    out = {"complex": 0.0, "rotate_half": 0.0}
    rotated = {}
    for name in ("q", "k"):
        x, mine = t[name].value, t[f"{name}_rot"].value
        if pairing == "interleaved":
            via_complex = torch_rope_complex(x, at, base)
            via_half = torch_rope_rotate_half(x[:, perm], at, base)[:, inverse]
        else:
            via_complex = torch_rope_complex(x[:, inverse], at, base)[:, perm]
            via_half = torch_rope_rotate_half(x, at, base)
        out["complex"] = max(out["complex"], float(np.abs(via_complex - mine).max()))
        out["rotate_half"] = max(out["rotate_half"], float(np.abs(via_half - mine).max()))
        rotated[name] = via_complex
    score = t.facts["score"]
    out["scores"] = None
    if score in DOT_SCORES:
        s = rotated["q"] @ rotated["k"].T / (math.sqrt(d) if score == "scaled_dot" else 1.0)
        out["scores"] = float(np.abs(s - t[score_key(t.facts["config"])].value).max())
    return out

