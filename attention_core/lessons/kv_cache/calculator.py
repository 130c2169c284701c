"""The cache-size calculator: how many bytes a real model's KV cache takes, from its published configuration.

bytes per token = 2 · layers · H_kv · d_head · bytes per value (K and V: the 2); a latent cache (DeepSeek's MLA)
keeps layers · latent values instead, not doubled; a layer with a sliding window of W keys keeps at most W tokens.
`calculator_trace` puts every preset's numbers into one Step whose cells are explained (calculator_explainer.py).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, replace

import numpy as np

from ...math.limits import ConfigError
from ...forward.trace import Trace
from .settings import KIND


@dataclass(frozen=True)
class Preset:
    name: str
    layers: int
    n_heads: int
    n_kv_heads: int
    d_head: int
    context: int                     # the published configuration's maximum positions (max_position_embeddings)
    window: int | None = None        # sliding window of the windowed layers (W keys)
    local_layers: int = 0            # layers with the window (the others are global)
    latent: int | None = None        # values per token per layer of a latent cache (not ×2)
    mha_values: int | None = None    # values per token per layer with plain multi-head attention
    source: str = ""

    @property
    def values_per_token_layer(self) -> int:
        """Values cached per token and layer: 2 · H_kv · d_head (K and V), or the latent width."""
        return self.latent if self.latent is not None else 2 * self.n_kv_heads * self.d_head

    @property
    def mha_values_per_token_layer(self) -> int:
        return self.mha_values if self.mha_values is not None else 2 * self.n_heads * self.d_head

    @property
    def global_layers(self) -> int:
        return self.layers - (self.local_layers if self.window is not None else 0)


SOURCES = {                      # where each preset's numbers come from (the explanation's last sentence)
    "Llama 3 8B": "Meta's published configuration: 32 layers, 32 heads, 8 KV heads, head width 4096/32 = 128, "
                  "at most 8,192 positions",
    "Llama 3 70B": "Meta's published configuration: 80 layers, 64 heads, 8 KV heads, head width 8192/64 = 128, "
                   "at most 8,192 positions",
    "Mistral 7B": "The Mistral 7B paper and v0.1's published configuration: 32 layers, 32 heads, 8 KV heads, head "
                  "width 128, a window of 4,096 on every layer, at most 32,768 positions",
    "Qwen2.5-7B": "Qwen's published configuration: 28 layers, 28 heads, 4 KV heads, head width 3584/28 = 128, no "
                  "sliding window, at most 131,072 positions",
    "Gemma 2 9B": "Gemma 2's published configuration: 42 layers, 16 heads, 8 KV heads, head width 256, a window of "
                  "4,096, at most 8,192 positions; its report: local (windowed) and global layers alternate, 21 of each",
    "DeepSeek-V3": "DeepSeek-V3's published configuration: 61 layers, a latent of 512 and a shared RoPE key of 64 per "
                   "layer, at most 163,840 positions; MHA would keep 128 heads' keys (128 + 64) and values (128)",
}
PRESETS = {p.name: replace(p, source=SOURCES[p.name]) for p in (
    #      name           layers    H  H_kv  d_head  context  window  local layers
    Preset("Llama 3 8B",      32,   32,    8,    128,    8192),
    Preset("Llama 3 70B",     80,   64,    8,    128,    8192),
    Preset("Mistral 7B",      32,   32,    8,    128,   32768,   4096, 32),
    Preset("Qwen2.5-7B",      28,   28,    4,    128,  131072),
    Preset("Gemma 2 9B",      42,   16,    8,    256,    8192,   4096, 21),
    Preset("DeepSeek-V3",     61,  128,  128,    128,  163840,  latent=512 + 64, mha_values=128 * (192 + 128)),
)}
BYTES = {2: "bf16 (2 bytes)", 1: "fp8 (1 byte)"}
CONTEXTS = (1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072)


@dataclass(frozen=True)
class CalcSettings:
    """What the calculator's claims are about: the chosen preset and the context length."""
    preset: Preset
    tokens: int = 8192


def cache_bytes(p: Preset, tokens: int, bytes_per_value: int = 2, mha: bool = False) -> int:
    """Bytes of one sequence's cache after `tokens` tokens: Σ over layers of values per token · tokens kept
    (min(tokens, W) on a windowed layer) · bytes per value. mha: the same model with H_kv = H."""
    per = p.mha_values_per_token_layer if mha else p.values_per_token_layer
    local = p.local_layers if p.window is not None else 0
    kept_local = min(tokens, p.window) if p.window is not None else tokens
    return per * bytes_per_value * ((p.layers - local) * tokens + local * kept_local)


def bytes_per_token(p: Preset, bytes_per_value: int = 2) -> int:
    """Bytes a token adds while no window is full: 2 · layers · H_kv · d_head · bytes (latent: layers · latent · bytes).

    >>> bytes_per_token(PRESETS["Llama 3 8B"]), human(bytes_per_token(PRESETS["Llama 3 8B"]))   # 2·32·8·128·2
    (131072, '128 KiB')
    >>> bytes_per_token(PRESETS["DeepSeek-V3"])                                                 # 61·(512 + 64)·2
    70272
    """
    return cache_bytes(p, 1, bytes_per_value)


def human(b: float) -> str:
    """131072 -> '128 KiB' (binary units, up to 3 significant digits)."""
    for unit, size in (("GiB", 2 ** 30), ("MiB", 2 ** 20), ("KiB", 2 ** 10)):
        if b >= size:
            return f"{b / size:.3g} {unit}"
    return f"{int(b)} B"


@functools.lru_cache(maxsize=32)
def calculator_trace(bytes_per_value: int = 2, tokens: int = 8192) -> Trace:
    """The presets' cache sizes as one Step "cache_bytes" (preset, quantity): bytes per token, bytes at
    `tokens` tokens, and the same model with MHA; facts["kind"] = "kv_cache" (its cells are explained)."""
    if bytes_per_value not in BYTES:
        raise ConfigError(f"Bytes per value must be 2 (bf16) or 1 (fp8), not {bytes_per_value!r}.")
    if isinstance(tokens, bool) or not isinstance(tokens, (int, np.integer)) or not 1 <= tokens <= 10 ** 7:
        raise ConfigError(f"The context length must be 1 … 10,000,000 tokens, not {tokens!r}.")
    names = list(PRESETS)
    value = np.array([[bytes_per_token(p, bytes_per_value), cache_bytes(p, tokens, bytes_per_value),
                       cache_bytes(p, tokens, bytes_per_value, mha=True)] for p in PRESETS.values()], dtype=float)
    trace = Trace(tuple(names))
    trace.facts.update(kind=KIND, bytes_per_value=bytes_per_value, tokens=tokens, symbols={"cache_bytes": (r"\text{bytes}", "bytes")},
                       axis_labels={"preset": names, "quantity": ["bytes per token", f"at {tokens:,} tokens",
                                                                  f"MHA at {tokens:,} tokens"]})
    trace.add("cache_bytes", "KV cache bytes", value, ("preset", "quantity"),
              r"\text{bytes} = 2 \cdot \text{layers} \cdot H_{kv} \cdot d_{head} \cdot \text{bytes per value} \cdot \text{tokens kept}")
    return trace


def memory_curves(bytes_per_value: int, max_tokens: int, points: int = 33) -> list[dict]:
    """Rows {preset, tokens, GiB, kind} for the chart: every preset, and each one with MHA (kind "MHA")."""
    grid = sorted(set(np.linspace(0, max_tokens, points).astype(int).tolist()) | {w for p in PRESETS.values()
                  if p.window and (w := p.window) <= max_tokens})
    return [{"preset": p.name, "cache": kind, "tokens": n, "GiB": cache_bytes(p, n, bytes_per_value, kind == "MHA") / 2 ** 30}
            for p in PRESETS.values() for kind in ("as published", "MHA") for n in grid]
