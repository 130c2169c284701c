"""What the KV cache page decodes and what its claims are about: the sidebar's Config made causal, and the
page's settings (heads, window, position, the prompt P and the step t).

Decoding sees only earlier tokens, so what the page computes is the forward pass under the causal mask (or the
sidebar's window): `decoding_config` is that Config. Additive and bilinear scores are not decoded here: the page
then decodes the scaled dot product and says so.
"""
from __future__ import annotations

from dataclasses import dataclass

from ...forward.config import Config

KIND = "kv_cache"
DECODED_SCORES = ("scaled_dot", "dot")         # the score functions decoded here
PARAMS = ("w_q", "w_k", "w_v", "w_o", "b_q", "b_k", "b_v", "b_o")


@dataclass(frozen=True)
class KVSettings:
    """What the page's claims are about: the sidebar's heads, window and position, the page's P and t."""
    n_heads: int = 1                 # H, query heads (the sidebar's)
    n_kv_heads: int = 1              # H_kv, key/value heads (a divisor of H)
    window: int | None = None        # W keys (the sidebar's Sliding window), or None: causal
    prefill: int = 2                 # P, the prompt's tokens, processed together
    n: int = 4                       # tokens in the sentence
    t: int = 2                       # the step shown
    positional: str = "sinusoidal"   # the sidebar's Position (rope, alibi, …)

    @property
    def g(self) -> int:
        return self.n_heads // self.n_kv_heads

    @property
    def kept(self) -> int:
        """Tokens in the cache after the last token."""
        return self.n if self.window is None else min(self.n, self.window)

    @property
    def together(self) -> bool:
        """Step t is a row of a prompt of several tokens, computed with the others at once."""
        return self.t < self.prefill and self.prefill > 1


def decoding_config(config: Config) -> Config:
    """The forward pass decoding computes: the sidebar's, with the causal mask where the sidebar's mask is
    none or padding (decoding sees only earlier tokens), the scaled dot product where its score is one not
    decoded here."""
    changes = {}
    if config.mask in ("none", "padding"):
        changes["mask"] = "causal"
    if config.score not in DECODED_SCORES:
        changes["score"] = "scaled_dot"
    return config.replace(**changes) if changes else config


def window_of(config: Config) -> int | None:
    return config.window if config.mask == "sliding_window" else None


def settings_for(config: Config, prefill: int, t: int, n: int) -> KVSettings:
    return KVSettings(config.n_heads, config.kv_heads, window_of(config), prefill, n, t, config.positional)
