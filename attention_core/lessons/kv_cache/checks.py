"""The live proof: the decoded numbers against the forward pass's own, and against torch's
scaled_dot_product_attention (enable_gqa=True) on the same Q, K, V.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from ...forward.config import Config
from .decoding import decoded, heads_of
from .settings import decoding_config


def check_against_full_pass(config: Config, prefill: int) -> dict:
    return _check(decoding_config(config), prefill)


@functools.lru_cache(maxsize=64, typed=True)   # True is not the prompt length 1
def _check(config: Config, prefill: int) -> dict:
    """The decoded numbers against the forward pass's own (the same Config): {"outputs": max |o − O|
    over every row, "weights": max over every step's weight row against the same entries of A,
    "queries": max |q_t − row t of Q (Q^R)|, "keys" and "values": every cached row against K (K^R)
    and V, "full": the forward pass's O (n, d_model)}."""
    d = decoded(config, prefill)
    fwd = d.forward
    a = fwd["weights"].value
    a = a if a.ndim == 3 else a[None]                                       # (H, n, n)
    rows, queries = 0.0, 0.0
    q = heads_of(fwd, "q")
    for step in d.cache["steps"]:
        t, p = step["t"], step["positions"]
        rows = max(rows, float(np.abs(step["weights"] - a[:, t, p]).max()))
        queries = max(queries, float(np.abs(step["q"] - q[:, t]).max()))
    return {"outputs": float(np.abs(d.outputs - fwd["output"].value).max()), "weights": rows, "queries": queries,
            "keys": float(np.abs(d.cache["k_rows"] - heads_of(fwd, "k")).max()),
            "values": float(np.abs(d.cache["v_rows"] - heads_of(fwd, "v")).max()), "full": fwd["output"].value}


def torch_check(config: Config, prefill: int) -> dict:
    """See _torch_check (cached per decoding Config and prompt: the page's box reruns it on every run)."""
    return dict(_torch_check(decoding_config(config), prefill))


@functools.lru_cache(maxsize=32, typed=True)
def _torch_check(config: Config, prefill: int) -> dict:
    """torch's scaled_dot_product_attention (enable_gqa=True) on the forward pass's Q, K, V (rotated under
    RoPE), with the mask as a float matrix (ALiBi's bias, −∞ where hidden) and the scale and temperature
    folded in; with is_causal too where no window and no ALiBi. {"mask": max |torch − decoded|,
    "is_causal": … or None}. Imports torch."""
    import torch
    import torch.nn.functional as F
    d = decoded(config, prefill)
    c, fwd = d.config, d.forward
    n, temperature = fwd.n, c.temperature
    t = lambda a: torch.from_numpy(np.array(a))[None]                          # noqa: E731  (1, heads, n, d)
    q, k, v = t(heads_of(fwd, "q")), t(heads_of(fwd, "k")), t(heads_of(fwd, "v"))
    scale = (1 / math.sqrt(c.d_k) if c.score == "scaled_dot" else 1.0) / temperature
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    allowed = (i >= j) & ((i - j < c.window) if c.mask == "sliding_window" else True)
    bias = np.zeros((c.n_heads, n, n)) if d.slopes is None else -d.slopes[:, None, None] * (i - j)[None]
    mask = np.where(allowed[None], bias / temperature, -np.inf)

    def out(context):                                                         # (1, H, n, d_v) -> (n, d_model)
        o = context[0].numpy().transpose(1, 0, 2).reshape(n, -1) @ d.params["w_o"]
        return o + d.params.get("b_o", 0.0)
    by_mask = out(F.scaled_dot_product_attention(q, k, v, attn_mask=t(mask)[0], scale=scale, enable_gqa=True))
    result = {"mask": float(np.abs(by_mask - d.outputs).max()), "is_causal": None}
    if c.mask == "causal" and d.slopes is None:
        by_flag = out(F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=scale, enable_gqa=True))
        result["is_causal"] = float(np.abs(by_flag - d.outputs).max())
    return result
