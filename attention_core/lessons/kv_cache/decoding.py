"""The sidebar's forward pass decoded token by token: its rows through `kv_cache_decode`, each step recorded.

`decode` reads the forward pass's Trace (its X, W_Q, W_K, W_V, W_O and biases, trained or seeded as the
sidebar's Weights say) and feeds the rows through the math's decoder: a prompt of P tokens together, then one at a
time. `heads_of` reads the forward pass's own Q, K (rotated under RoPE) and V per head, for the checks.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from ...math.alibi import alibi_slopes
from ...math.kv_cache import kv_cache_decode
from ...math.limits import ConfigError
from ...forward.config import Config
from ...forward.stages import run_forward
from ...forward.trace import Trace
from .settings import PARAMS, decoding_config, window_of


@dataclass(frozen=True, eq=False)
class Decoded:
    config: Config                   # the decoding Config (decoding_config of the sidebar's)
    forward: Trace                   # its forward pass: X, the parameters, and the reference output
    params: dict                     # "w_q" (d_model, H·d_k), "w_k", "w_v" (d_model, H_kv·d), "w_o", "b_*" when bias
    slopes: np.ndarray | None        # ALiBi's m_h (H,), or None
    outputs: np.ndarray              # (n, d_model), decoded
    cache: dict                      # kv_cache_decode's: final "k", "v", "positions", "k_rows", "v_rows", "steps"
    prefill: int

    @property
    def tokens(self) -> tuple[str, ...]:
        return self.forward.tokens


@functools.lru_cache(maxsize=32)
def forward_pass(config: Config) -> Trace:
    """run_forward, once per Config (the page's reference pass)."""
    return run_forward(config)


def check_prefill(prefill, n: int) -> None:
    if isinstance(prefill, bool) or not isinstance(prefill, (int, np.integer)) or not 0 <= prefill <= n:
        raise ConfigError(f"The prompt (prefill) is {prefill!r} tokens but the sentence has {n}: "
                          f"set it to 0 … {n} (0: every token decoded one at a time).")


def decode(config: Config, prefill: int) -> Decoded:
    """The sidebar's forward pass decoded with a KV cache, the first `prefill` tokens as the prompt."""
    return decoded(decoding_config(config), prefill)


@functools.lru_cache(maxsize=64, typed=True)   # True is not the prompt length 1
def decoded(config: Config, prefill: int) -> Decoded:
    fwd = forward_pass(config)
    check_prefill(prefill, fwd.n)
    params = {k: fwd[k].value for k in PARAMS if k in fwd}
    slopes = alibi_slopes(config.n_heads) if config.positional == "alibi" else None
    outputs, cache = kv_cache_decode(
        fwd["x"].value, params["w_q"], params["w_k"], params["w_v"], params["w_o"], config.n_heads, config.kv_heads,
        window=window_of(config), prefill=prefill, rope_base=config.pe_base if config.positional == "rope" else None,
        biases={k: v for k, v in params.items() if k.startswith("b_")}, alibi_slopes=slopes,
        scaled=config.score == "scaled_dot", temperature=config.temperature)
    return Decoded(config, fwd, params, slopes, outputs, cache, prefill)


def heads_of(trace: Trace, name: str) -> np.ndarray:
    """(heads, n, d): the forward pass's Q or K (rotated under RoPE) or V per head (one head: a leading 1)."""
    key = f"{name}_rot" if f"{name}_rot" in trace else f"{name}_heads" if f"{name}_heads" in trace else name
    value = trace[key].value
    return value[None] if key == name or value.ndim == 2 else value
