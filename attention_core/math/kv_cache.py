"""Decoding with a KV cache: one new token at a time, its key and value rows appended to the cache.

At step t the model has one new row x_t. Its query q_t = x_t W_Q meets the keys of tokens 0 … t, but
those of 0 … t − 1 were computed at earlier steps and kept: only k_t = x_t W_K and v_t = x_t W_V are
new. So a step costs one row of projections and one row of scores (t + 1 entries) instead of the
whole (t + 1) × (t + 1) pass, and the outputs are exactly those of the full causal pass: causal
attention never lets a row see a later token, so nothing cached ever changes.

Everything the forward pass can put into a score row is decoded the same way: biases on the
projections, RoPE (the cache keeps the rotated keys: position t's rotation is known when k_t is
made), ALiBi (the step's row gets −m_h·(t − j), from the distance alone), the scaled or plain dot
product and the softmax temperature. The cache holds H_kv heads (grouped-query attention shrinks it
by g = H / H_kv); with a sliding window of W keys it is a rolling buffer of W rows, as Mistral's: before a
decoded token's row comes in, the oldest row (token t − W, which token t may not see) is dropped, so while
step t is computed the cache holds tokens t − W + 1 … t, every one of them visible. A prompt longer than W
is computed with all its rows at once (each row sees at most W of them); then only its last W are kept.
"""
from __future__ import annotations

import math

import numpy as np

from .attention import merge_heads, softmax
from .limits import ConfigError
from .gqa import check_groups, expand_kv
from .rope import rotary_embedding


def _check(n: int, n_heads: int, window, prefill, alibi_slopes, temperature) -> None:
    if window is not None and (isinstance(window, bool) or not isinstance(window, (int, np.integer)) or window < 1):
        raise ConfigError(f"The window must be at least 1 key (the token itself), not {window!r}.")
    if isinstance(prefill, bool) or not isinstance(prefill, (int, np.integer)) or not 0 <= prefill <= n:
        raise ConfigError(f"The prompt (prefill) must be 0 to {n} tokens, not {prefill!r}.")
    if alibi_slopes is not None and np.shape(alibi_slopes) != (n_heads,):
        raise ConfigError(f"ALiBi needs one slope per query head ({n_heads}), not {np.shape(alibi_slopes)}.")
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float, np.floating)) \
            or not math.isfinite(temperature) or temperature <= 0:
        raise ConfigError(f"The temperature must be a positive number, not {temperature!r}.")


def kv_cache_decode(x, w_q, w_k, w_v, w_o, n_heads: int, n_kv_heads: int | None = None,
                    window: int | None = None, prefill: int = 0, rope_base: float | None = None, *,
                    biases: dict | None = None, alibi_slopes=None, scaled: bool = True, temperature: float = 1.0):
    """Feed x's rows through attention one at a time with a KV cache; returns (outputs, cache).

    x (n, d_model); w_q (d_model, H·d_head), w_k (d_model, H_kv·d_head), w_v (d_model, H_kv·d_v),
    w_o (H·d_v, d_model). prefill: the first rows are processed together (the prompt), then the rest
    one by one; the numbers are the same either way. rope_base: rotate Q and K by their positions
    (RoPE, interleaved) before caching, as rotary models cache rotated keys. biases: "b_q" (H·d_head),
    "b_k", "b_v" (H_kv·d_head, H_kv·d_v), "b_o" (d_model), any of them, added after their projection.
    alibi_slopes (H,): query t's score with key j gets −m_h·(t − j) (ALiBi). scaled: divide q·k by
    √d_head (the scaled dot product) or not (the dot product). temperature: softmax(logits / T).

    outputs (n, d_model) equal causal (windowed) attention over x. cache["k"] (H_kv, kept, d_head),
    cache["v"] (H_kv, kept, d_v), cache["positions"] the tokens kept (the last W with a window);
    cache["k_rows"] (H_kv, n, d_head) and cache["v_rows"] (H_kv, n, d_v): every token's row as it entered
    the cache; and cache["steps"]: one dict per token t with "q" (H, d_head), "positions" (the cache's
    tokens while step t is computed; with a window a decoded step's are t − W + 1 … t), "scores" (H, kept):
    q·k (/√d_head), −∞ where t may not look, "bias" (H, kept) ALiBi's (zeros without), "logits" = scores
    + bias, "weights" (H, kept), "prefill" (computed with other rows) and "cache_len".

    >>> rng = np.random.default_rng(0)
    >>> x = rng.standard_normal((5, 4))
    >>> w = [rng.standard_normal(s) for s in ((4, 4), (4, 2), (4, 2), (4, 4))]
    >>> outputs, cache = kv_cache_decode(x, *w, n_heads=2, n_kv_heads=1, window=3)
    >>> outputs.shape, cache["k"].shape, cache["positions"]
    ((5, 4), (1, 3, 2), [2, 3, 4])
    """
    x = np.asarray(x, dtype=np.float64)
    n = x.shape[0]
    n_kv = n_heads if n_kv_heads is None else n_kv_heads
    check_groups(n_heads, n_kv)
    _check(n, n_heads, window, prefill, alibi_slopes, temperature)
    b = {k: np.asarray(v, dtype=np.float64) for k, v in (biases or {}).items() if v is not None}
    d_head, d_v = w_q.shape[1] // n_heads, w_v.shape[1] // n_kv
    rotate = (lambda a, p: rotary_embedding(a, np.asarray(p), rope_base)) if rope_base is not None else (lambda a, p: a)
    slopes = None if alibi_slopes is None else np.asarray(alibi_slopes, dtype=np.float64)
    scale = math.sqrt(d_head) if scaled else 1.0

    def project(xs, name, heads, width):                                       # (r, d_model) -> (heads, r, width)
        out = xs @ {"q": w_q, "k": w_k, "v": w_v}[name] + b.get(f"b_{name}", 0.0)
        return out.reshape(len(xs), heads, width).transpose(1, 0, 2)

    k_cache = np.zeros((n_kv, 0, d_head))
    v_cache = np.zeros((n_kv, 0, d_v))
    k_rows, v_rows = np.zeros((n_kv, n, d_head)), np.zeros((n_kv, n, d_v))
    positions: list[int] = []
    outputs = np.zeros((n, w_o.shape[1]))
    steps = []
    chunks = ([list(range(prefill))] if prefill else []) + [[t] for t in range(prefill, n)]
    for rows in chunks:
        xs = x[rows]                                                          # (r, d_model): the prompt, or one token
        q = rotate(project(xs, "q", n_heads, d_head), rows)                   # (H, r, d_head)
        k = rotate(project(xs, "k", n_kv, d_head), rows)                      # (H_kv, r, d_head)
        v = project(xs, "v", n_kv, d_v)                                       # (H_kv, r, d_v)
        k_rows[:, rows], v_rows[:, rows] = k, v
        if window is not None:                                                # a rolling buffer: before the new rows
            keep = [r for r, p in enumerate(positions) if rows[0] - p < window]  # come in, drop what none of them sees
            k_cache, v_cache, positions = k_cache[:, keep], v_cache[:, keep], [positions[r] for r in keep]
        k_cache = np.concatenate([k_cache, k], axis=1)                        # append: the cache grows by r rows
        v_cache = np.concatenate([v_cache, v], axis=1)
        positions += rows
        kept = len(positions)
        p, r = np.array(positions), np.array(rows)
        allowed = r[:, None] >= p[None, :]                                    # causal: (r, kept)
        if window is not None:
            allowed &= r[:, None] - p[None, :] < window
        scores = np.where(allowed, q @ np.swapaxes(expand_kv(k_cache, n_heads), -1, -2) / scale, -np.inf)  # (H, r, kept)
        bias = np.zeros_like(scores)
        if slopes is not None:                                                # −m_h·(t − j) where t may look
            bias = np.where(allowed, 0.0 - slopes[:, None, None] * (r[:, None] - p[None, :])[None], 0.0)
        logits = scores + bias
        weights = softmax(logits, temperature=temperature)                    # (H, r, kept)
        context = weights @ expand_kv(v_cache, n_heads)                       # (H, r, d_v)
        outputs[rows] = merge_heads(context) @ w_o + b.get("b_o", 0.0)
        for i, t in enumerate(rows):
            steps.append(dict(t=t, prefill=len(rows) > 1, q=q[:, i], positions=list(positions), scores=scores[:, i],
                              bias=bias[:, i], logits=logits[:, i], weights=weights[:, i], cache_len=kept))
        if window is not None and kept > window:                              # after a prompt longer than W: keep the last W
            drop = kept - window
            k_cache, v_cache, positions = k_cache[:, drop:], v_cache[:, drop:], positions[drop:]
    return outputs, {"k": k_cache, "v": v_cache, "positions": positions, "k_rows": k_rows, "v_rows": v_rows,
                     "steps": steps}
