"""Grouped-query attention and the KV cache: which KV head a query head reads, and how many bytes a real model's
cache takes. The published configurations are the KV cache lesson's PRESETS, its cache_bytes the answer.

    >>> from attention_core.lessons.kv_cache import PRESETS
    >>> cache_terms(PRESETS["Llama 3 8B"], 8192, 2)
    '2 · 32 · 8 · 128 · 8,192 · 2 bytes = 1,073,741,824 bytes = 1 GiB'
"""
from __future__ import annotations

import numpy as np

from ...forward.trace import Trace
from ...lessons.kv_cache import BYTES, CONTEXTS, PRESETS, Preset, cache_bytes, human
from ..quiz.notation import config_of
from .pins import Unfit, pin_int, pin_text
from .poll import MIN_CHOICES, Poll, count_choices, make


# ---- kv_head: query head h reads KV head ⌊h/g⌋ -----------------------------------------------------------

def wrong_kv_heads(h: int, n_heads: int, n_kv: int) -> list[int]:
    """What wrong mental models give for query head h: h mod H_kv (heads dealt round-robin), h itself (one KV
    head per query head), ⌊h / H_kv⌋ (dividing by H_kv instead of g), the next group's head."""
    g = n_heads // n_kv
    return [h % n_kv, h, h // n_kv, (h // g + 1) % n_kv]


def _kv_text(u: int) -> str:
    return f"KV head {u}"


def _heads_that_fit(n_heads: int, n_kv: int) -> list[int]:
    g = n_heads // n_kv
    return [h for h in range(n_heads)
            if count_choices(_kv_text(h // g), map(_kv_text, wrong_kv_heads(h, n_heads, n_kv))) >= MIN_CHOICES]


GQA_PRESETS = tuple(p for p in PRESETS.values() if p.latent is None and p.n_kv_heads < p.n_heads)


def kv_head_poll(trace: Trace, rng: np.random.Generator, at: dict | None = None) -> Poll | None:
    """On the settings' H and H_kv when they share KV heads and give three choices; else on a published model's
    configuration (the prompt says which). at: {"head": h} (the query head), {"model": a published model's name}
    (that model's H and H_kv, not the settings')."""
    config = config_of(trace)
    model = pin_text(at, "model", [p.name for p in GQA_PRESETS])
    own = (model is None and config is not None and config.kv_heads < config.n_heads
           and _heads_that_fit(config.n_heads, config.kv_heads))
    if model is not None:
        p = PRESETS[model]
        n_heads, n_kv, who = p.n_heads, p.n_kv_heads, f"{p.name} (its published configuration) has"
    elif own:
        n_heads, n_kv, who = config.n_heads, config.kv_heads, "Your settings have"
    else:
        p = GQA_PRESETS[int(rng.integers(len(GQA_PRESETS)))]
        n_heads, n_kv = p.n_heads, p.n_kv_heads
        mine = ("" if config is None else
                "Your settings give every query head its own KV head. " if config.kv_heads == config.n_heads else
                "With your settings' one KV head every query head reads KV head 0. " if config.kv_heads == 1 else
                f"Your settings' H = {config.n_heads}, H_kv = {config.kv_heads} leave too few choices. ")
        who = f"{mine}{p.name} (its published configuration) has"
    heads = _heads_that_fit(n_heads, n_kv)
    h = pin_int(at, "head", 0, n_heads - 1)
    if h is not None and h not in heads:
        raise Unfit(f"query head {h} leaves too few choices")
    h = heads[int(rng.integers(len(heads)))] if h is None else h
    g = n_heads // n_kv
    return make("kv_head", f"{who} H = {n_heads} query heads and H_kv = {n_kv} KV heads. Which KV head does query "
                f"head h = {h} read (heads counted from 0)?",
                _kv_text(h // g), [_kv_text(u) for u in wrong_kv_heads(h, n_heads, n_kv)],
                f"g = H / H_kv = {n_heads} / {n_kv} = {g} query heads share each KV head, in order: query heads "
                f"{(h // g) * g} … {(h // g) * g + g - 1} read KV head {h // g}. ⌊h / g⌋ = ⌊{h} / {g}⌋ = {h // g}. "
                + (f"(h mod H_kv = {h % n_kv} would deal the heads out in turn, which grouped-query attention does not.)"
                   if h % n_kv != h // g else
                   f"(Here h mod H_kv = {h % n_kv} happens to give the same head; it deals the heads out in turn, "
                   "which grouped-query attention does not.)"),
                rng, "k_heads" if own and "k_heads" in trace else None)


# ---- kv_cache_size: 2 · L · H_kv · d_head · tokens · bytes --------------------------------------------------

PLAIN_PRESETS = tuple(p for p in PRESETS.values() if p.latent is None and p.window is None)


def cache_terms(p: Preset, tokens: int, bytes_per_value: int) -> str:
    """The cache size written out: '2 · L · H_kv · d_head · tokens · bytes = … bytes = … GiB'."""
    b = cache_bytes(p, tokens, bytes_per_value)
    return (f"2 · {p.layers} · {p.n_kv_heads} · {p.d_head} · {tokens:,} · {bytes_per_value} bytes = {b:,} bytes = "
            f"{human(b)}")


def wrong_cache_sizes(p: Preset, tokens: int, bytes_per_value: int) -> list[tuple[str, int]]:
    """(the mistake, its bytes): without the 2 (K alone), with H instead of H_kv, one layer only."""
    right = cache_bytes(p, tokens, bytes_per_value)
    return [("without the 2 (K but not V)", right // 2),
            (f"with H = {p.n_heads} instead of H_kv = {p.n_kv_heads}", cache_bytes(p, tokens, bytes_per_value, mha=True)),
            (f"for one layer instead of L = {p.layers}", right // p.layers)]


def cache_size_poll_for(p: Preset, tokens: int, bytes_per_value: int, rng: np.random.Generator,
                        intro: str = "") -> Poll | None:
    """The cache-size poll for one configuration (no sliding window, no latent cache)."""
    right = human(cache_bytes(p, tokens, bytes_per_value))
    wrong = [(why, human(b)) for why, b in wrong_cache_sizes(p, tokens, bytes_per_value)]
    return make("kv_cache_size",
                f"{intro}{p.name}: L = {p.layers} layers, H = {p.n_heads} query heads, H_kv = {p.n_kv_heads} KV heads "
                f"of d_head = {p.d_head}, {BYTES.get(bytes_per_value, f'{bytes_per_value} bytes')} per value. How "
                f"large is its KV cache for one sequence of {tokens:,} tokens?",
                right, [b for _, b in wrong],
                f"Each layer keeps K and V (the 2) for each KV head: {cache_terms(p, tokens, bytes_per_value)}. "
                "The wrong choices: " + "; ".join(f"{why}, {b}" for why, b in wrong if b != right) + ".", rng)


def kv_cache_size_poll(trace: Trace, rng: np.random.Generator, at: dict | None = None) -> Poll | None:
    """A published model's configuration (the KV cache lesson's PRESETS without a window or a latent cache), a
    context length it allows and bf16 or fp8, drawn by the seed: the settings' sentence does not enter.
    at: {"model": its name, "tokens": a context length it allows, "bytes": bytes per value}."""
    model = pin_text(at, "model", [p.name for p in PLAIN_PRESETS])
    p = PRESETS[model] if model is not None else PLAIN_PRESETS[int(rng.integers(len(PLAIN_PRESETS)))]
    contexts = [c for c in CONTEXTS if c <= p.context]
    tokens = pin_int(at, "tokens", 1, p.context)
    tokens = contexts[int(rng.integers(len(contexts)))] if tokens is None else tokens
    bytes_per_value = pin_int(at, "bytes", 1, 8)
    if bytes_per_value is not None and bytes_per_value not in BYTES:
        raise Unfit(f"{bytes_per_value} bytes per value is not one the calculator offers")
    bytes_per_value = sorted(BYTES)[int(rng.integers(len(BYTES)))] if bytes_per_value is None else bytes_per_value
    return cache_size_poll_for(p, tokens, bytes_per_value, rng, "A real model, from its published configuration: ")
