"""W_Q, W_K, W_V for the forward pass: seeded random (each parameter its own generator) or trained.

Trained weights are made by the training layer (training/pretrained.py), which sits above the forward
pass; it hands them down by calling `provide_trained` when it is imported (attention_core/__init__.py
imports it), so the forward pass uses them without importing training.
"""
from __future__ import annotations

import zlib
from typing import Callable

import numpy as np

from .config import Config
from ..math.limits import ConfigError

_trained_source: Callable | None = None      # config -> TrainedWeights (training/pretrained.py: trained_weights)


def provide_trained(source: Callable) -> None:
    """Register where trained weights come from: `source(config)` returns an object with .params
    (w_q, w_k, w_v and, with bias, b_q, b_k, b_v), .epochs, .n_sentences and .why."""
    global _trained_source
    _trained_source = source


def trained_weights(config: Config):
    """The trained W_Q, W_K, W_V (and biases) for these settings, from the registered source."""
    if _trained_source is None:
        raise ConfigError("Trained weights are not available (the training layer is not loaded): "
                          "set the weights to seeded random.")
    return _trained_source(config)


def param_rng(seed: int, name: str) -> np.random.Generator:
    """One generator per parameter: changing d_v does not reshuffle W_q."""
    return np.random.default_rng([seed, zlib.crc32(name.encode())])


def init_weight(seed: int, name: str, shape: tuple[int, ...], fan_in: int) -> np.ndarray:
    """N(0, 1/fan_in): keeps X W at about the scale of X."""
    return param_rng(seed, name).standard_normal(shape) / np.sqrt(fan_in)


def init_bias(seed: int, name: str, shape: tuple[int, ...]) -> np.ndarray:
    return 0.1 * param_rng(seed, name).standard_normal(shape)


def projection_weights(config: Config, d_model: int) -> dict:
    """{"w_q" (d_model, H·d_k), "w_k" (d_model, H_kv·d_k), "w_v" (d_model, H_kv·d_v), "b_q", "b_k", "b_v"
    when config.bias, "why"}: trained on the sentiment sentences (pretrained.py), or at their seeded random
    start. With fewer KV heads than query heads, trained K and V columns are averaged over each group."""
    h, h_kv = config.n_heads, config.kv_heads
    if config.weights == "trained":
        t = trained_weights(config)
        params = dict(t.params)
        if h_kv < h:
            for name, width in (("k", config.d_k), ("v", config.d_v)):
                params[f"w_{name}"] = mean_pool_heads(params[f"w_{name}"], h, h_kv, width)
                if f"b_{name}" in params:
                    params[f"b_{name}"] = mean_pool_heads(params[f"b_{name}"][None, :], h, h_kv, width)[0]
        return {**params, "why": t.why}
    d_k, d_v, seed = config.d_k, config.d_v, config.seed
    out = {"why": "Seeded random weights, N(0, 1/d_model): the start training would begin from; nothing here "
                  "has been trained, so the attention they give means nothing yet."}
    for name, width in (("q", h * d_k), ("k", h_kv * d_k), ("v", h_kv * d_v)):
        out[f"w_{name}"] = init_weight(seed, f"w_{name}", (d_model, width), d_model)
        if config.bias:
            out[f"b_{name}"] = init_bias(seed, f"b_{name}", (width,))
    return out


def mean_pool_heads(w: np.ndarray, n_heads: int, n_kv_heads: int, width: int) -> np.ndarray:
    """(rows, H·width) -> (rows, H_kv·width): each group of g = H/H_kv heads' columns averaged (the GQA paper's
    conversion of a multi-head checkpoint)."""
    g = n_heads // n_kv_heads
    return w.reshape(w.shape[0], n_kv_heads, g, width).mean(axis=2).reshape(w.shape[0], n_kv_heads * width)
