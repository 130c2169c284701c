"""Head h of the forward pass, as the online softmax reads it: read from the forward pass's Trace, never recomputed.

Its queries and keys as the scores read them (rotated by RoPE when the position is RoPE; the keys and values of
KV head ⌊h/g⌋ under grouped-query attention), its values, the score's own parameters, ALiBi's slope, the mask,
and exactly what its softmax reads (÷ T), with the forward pass's weights and context for the checks.
`Controls` is what the page's claims hold under: the sidebar's Config and the page's own controls.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from ...math.limits import ConfigError
from ...forward.config import Config
from ...forward.stages import run_forward
from ...forward.trace import Trace

KIND = "online_softmax"


@dataclass(frozen=True)
class Controls:
    """What the page's claims hold under: the sidebar's Config and the page's own controls."""
    config: Config
    block_size: int
    block: int
    head: int = 0


def check_block_size(block_size, n: int) -> int:
    """A whole number of keys, at least 1 (larger than n is allowed: one block); else ConfigError."""
    if isinstance(block_size, bool) or not isinstance(block_size, (int, np.integer)) or block_size < 1:
        raise ConfigError(f"The block size B_c must be a whole number of keys, at least 1 (not {block_size!r}): "
                          f"move the slider to a value from 1 to n = {n}.")
    return int(block_size)


def check_head(head, n_heads: int) -> int:
    if isinstance(head, bool) or not isinstance(head, (int, np.integer)) or not 0 <= head < n_heads:
        raise ConfigError(f"The head h must be one of 0 … {n_heads - 1} (H = {n_heads} heads), not {head!r}.")
    return int(head)


@dataclass(frozen=True, eq=False)
class Head:
    tokens: tuple
    head: int
    kv_head: int
    q: np.ndarray                 # (n, d_k): Q_h (rotated by RoPE when the position is RoPE)
    k: np.ndarray                 # (n, d_k): K of KV head ⌊h/g⌋ (rotated likewise)
    v: np.ndarray                 # (n, d_v): V of KV head ⌊h/g⌋
    params: dict                  # the score's own parameters of head h: w_1, w_2, v_a (additive) or w_b (bilinear)
    slope: float | None           # ALiBi's m_h, or None without ALiBi
    mask: np.ndarray | None       # (n, n) bool, True = may attend
    reads: np.ndarray             # (n, n): what the forward pass's softmax reads for head h, divided by T
    context: np.ndarray           # (n, d_v): the forward pass's C_h
    weights: np.ndarray           # (n, n): the forward pass's A_h


_HEADS: dict = {}                 # (config, head) -> Head, the last 64 (oldest first)
_HEADS_LOCK = threading.Lock()     # sessions run in threads of one server


def head_of(config: Config, head: int = 0, forward: Trace | None = None) -> Head:
    """Head h of the forward pass under `config`: its Q, K, V as the scores read them, the score's parameters, the
    bias, the mask, and the forward pass's own softmax input (÷ T), weights and context for the checks.

    `forward`: the page's own run_forward(config) trace, to read instead of running the forward pass again."""
    h = check_head(head, config.n_heads)
    hit = _HEADS.get((config, h))
    if hit is None:
        if forward is None or forward.facts.get("config") != config:
            forward = run_forward(config)
        hit = _read_head(forward, config, h)
        with _HEADS_LOCK:
            _HEADS[(config, h)] = hit
            while len(_HEADS) > 64:
                del _HEADS[next(iter(_HEADS))]
    return hit


def _read_head(f: Trace, config: Config, h: int) -> Head:
    H = config.n_heads
    kv = h // (H // config.kv_heads)
    rope = "q_rot" in f
    q_key, k_key = ("q_rot", "k_rot") if rope else ("q_heads", "k_heads") if H > 1 else ("q", "k")
    v_key = "v_heads" if H > 1 else "v"
    pick = (lambda a, i: a[i]) if H > 1 else (lambda a, i: a)
    params = {name: pick(f[key].value, h) for name, key in (("w_1", "w_a_q"), ("w_2", "w_a_k"), ("v_a", "v_a"),
                                                            ("w_b", "w_b")) if key in f}
    slope = float(f.facts["alibi_slopes"][h]) if "alibi_slopes" in f.facts else None
    reads = pick(f[f.facts["softmax_input"]].value, h) / config.temperature
    return Head(tuple(f.tokens), h, kv, pick(f[q_key].value, h), pick(f[k_key].value, kv), pick(f[v_key].value, kv),
                params, slope, f["mask"].value.astype(bool) if "mask" in f else None, reads,
                pick(f["context"].value, h), pick(f["weights"].value, h))
