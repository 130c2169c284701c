"""Mistakes of today's decoding (docs/notation.md, "Today's attention"): torch's is_causal=True with one new
query against a KV cache, a sliding window of W keys read as W + 1, and a latent KV cache counted twice.

    >>> latent_cache_bytes_per_token(61, 512, 64, 2)
    70272
"""
from __future__ import annotations

import numpy as np

from ...math import attention as att
from .base import PitfallResult, count, difference, one_head_squeezed, pitfall, query_key_heads, trace_of


# ---- 11. is_causal=True with fewer queries than keys ----------------------------------------------------

@pitfall("is_causal=True with fewer queries than keys", "common",
         "Decoding with a KV cache feeds one new query (L = 1) against all S cached keys. torch's "
         "scaled_dot_product_attention(q, k, v, is_causal=True) builds its mask as torch.ones(L, S).tril(), "
         "aligned to the upper left: the new token sees key 0 only. Query t must see keys 0 … t: the mask "
         "aligned to the lower right, tril(diagonal = S − L) (torch.nn.attention.bias.causal_lower_right), or, "
         "for a single new token and no sliding window, no mask at all.")
def causal_upper_left(source) -> PitfallResult:
    """One new query against n cached keys with torch's is_causal=True: the mask is aligned to the upper left.

    torch builds it as torch.ones(L, S).tril(): query 0 of the L new ones sees key 0 only. The new token t = n − 1
    must see keys 0 … t: the lower-right alignment, tril(diagonal = S − L).
    """
    trace, _ = trace_of(source)
    rope = "q_rot" in trace
    q, k = query_key_heads(trace)                                    # (H, n, d_k) each: head h meets KV head ⌊h/g⌋
    n, d_k = q.shape[1], q.shape[2]
    s = q[:, -1:] @ np.swapaxes(k, -1, -2) / np.sqrt(d_k)                           # (H, 1, n): the new query's Ŝ
    lower_right = np.tril(np.ones((1, n), bool), k=n - 1)                           # sees keys 0 … n − 1
    upper_left = np.tril(np.ones((1, n), bool))                                     # is_causal=True: key 0 only
    correct = att.softmax(att.apply_mask(s, lower_right))[:, 0]                      # (H, n)
    wrong = att.softmax(att.apply_mask(s, upper_left))[:, 0]
    word = trace.tokens[-1]
    return PitfallResult(one_head_squeezed(correct, trace), one_head_squeezed(wrong, trace),
                         difference(correct, wrong), f"the new token t = {n - 1} sees every key 0 … {n - 1}",
                         bool(lower_right.all()), not bool(upper_left.all()),
                         f"L = 1 new query (token t = {n - 1}, “{word}”) against S = {count(n, 'key')} in the cache. "
                         f"Lower-right mask: {count(int(lower_right.sum()), 'key')} visible, weight on key 0 "
                         f"{float(correct[:, 0].max()):.3g}{' (largest over the heads)' if len(q) > 1 else ''}. "
                         f"is_causal=True: {int(upper_left.sum())} key visible, so all the weight, 1, goes to key 0 "
                         f"and the output is token 0's value whatever the sentence says."
                         + (" With one token the cache is the token itself: the two versions coincide."
                            if n == 1 else ""),
                         (("head",) if len(q) > 1 else ()) + ("n_k",),
                         f"weights of the new token t = {n - 1} over the cached keys, softmax(q{'^R' if rope else ''}_t "
                         f"K{'^R' if rope else ''}ᵀ/√d_k)" + (", query head h reading KV head ⌊h/g⌋"
                                                             if trace.facts.get("n_kv_heads", len(q)) < len(q) else ""))


# ---- 12. a window of W keys read as W + 1 ---------------------------------------------------------------

@pitfall("A window of W keys read as W + 1", "common",
         "A sliding window of W keys lets query i see keys j with 0 ≤ i − j < W: itself and the W − 1 tokens "
         "before it (Hugging Face transformers keeps key j when j > i − W, flash-attn takes W − 1 keys to the "
         "left; this app's window too). Mistral's paper writes the window as positions i − W … i, and PyTorch's "
         "own sliding-window example for its flexible attention keeps a key when i − j ≤ W: W + 1 keys. Mixing "
         "the two readings, e.g. i − j ≤ W for a model trained with W keys, gives every query from i = W on one "
         "key too many.")
def window_w_plus_one(source) -> PitfallResult:
    """The sliding window 0 ≤ i − j < W (W keys: Hugging Face's, flash-attn's) written as i − j ≤ W (W + 1 keys:
    Mistral's paper's reading, and PyTorch's flex-attention example's).

    W is half the learner's tokens (at least 1), so that the window cuts; the weights are softmax(Q_h K_hᵀ/√d_k)
    (Q^R, K^R under RoPE), query head h reading KV head ⌊h/g⌋.
    """
    trace, _ = trace_of(source)
    rope = "q_rot" in trace
    q, k = query_key_heads(trace)                                    # (H, n, d_k) each: head h meets KV head ⌊h/g⌋
    n, d_k = q.shape[1], q.shape[2]
    w = max(1, n // 2)
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(d_k)                                   # (H, n, n)
    right, bad = att.sliding_window_mask(n, w), att.sliding_window_mask(n, w + 1)   # i − j < W; i − j ≤ W
    correct = att.softmax(att.apply_mask(s, right))
    wrong = att.softmax(att.apply_mask(s, bad))
    extra = bad & ~right                                                            # the key j = i − W
    r = "^R" if rope else ""
    kv = "⌊h/g⌋" if trace.facts.get("n_kv_heads", len(q)) < len(q) else "h"         # query head h's KV head
    seen_c, seen_w = int(right.sum(axis=1).max()), int(bad.sum(axis=1).max())
    rows = np.flatnonzero(extra.any(axis=1))
    return PitfallResult(one_head_squeezed(correct, trace), one_head_squeezed(wrong, trace),
                         difference(correct, wrong), f"each query sees at most W = {count(w, 'key')}, itself included",
                         seen_c <= w, seen_w > w,
                         f"W = {w} (half your {count(n, 'token')}, at least 1). 0 ≤ i − j < W: at most "
                         f"{count(seen_c, 'key')} per query. i − j ≤ W: {seen_w}"
                         + (f" for queries {rows[0]} … {rows[-1]}, whose extra key j = i − {w} takes weight up to "
                            f"{float(wrong[:, extra].max()):.3g}." if rows.size else
                            " as well: with one token there is no key before the query, so the two versions "
                            "coincide."),
                         trace["weights"].axes,
                         f"weights softmax(Q{r}_h K{r}_{kv}ᵀ/√d_k) with a sliding window of W = {count(w, 'key')}")


# ---- 13. a latent KV cache multiplied by 2 --------------------------------------------------------------

DEEPSEEK_V3 = {"layers": 61, "latent": 512, "rope_key": 64, "bytes": 2}   # config.json: kv_lora_rank, qk_rope_head_dim; BF16


def latent_cache_bytes_per_token(layers: int, latent: int, rope_key: int, bytes_per_value: int) -> int:
    """MLA caches (d_c + d_h^R) values per layer per token (DeepSeek-V2's Table 1): the latent c_KV and one RoPE key."""
    return layers * (latent + rope_key) * bytes_per_value


@pitfall("A latent KV cache multiplied by 2", "common",
         "The usual cache size, 2 · layers · H_kv · d_head values per token, counts K and V. DeepSeek-V3's "
         "multi-head latent attention caches neither: per layer it keeps one latent vector c_KV (512 values), "
         "from which both K and V are expanded, and one shared RoPE key (64 values): 61 layers × 576 values "
         "per token. Multiplying by 2 counts the latent twice.")
def latent_cache_x2(source) -> PitfallResult:
    """DeepSeek-V3's cache with the ×2 of the K-and-V formula: its latent serves as both, it is stored once."""
    trace, _ = trace_of(source)
    n = trace.n
    v3 = DEEPSEEK_V3
    per_token = latent_cache_bytes_per_token(v3["layers"], v3["latent"], v3["rope_key"], v3["bytes"])
    per_token_x2 = 2 * per_token                                                    # the K-and-V formula's 2 ·
    tokens = np.arange(1, n + 1)                                                    # the cache after tokens 0 … t
    correct, wrong = tokens * per_token / 1024, tokens * per_token_x2 / 1024         # (n,) KiB
    paper = (v3["latent"] + v3["rope_key"]) * v3["layers"] * v3["bytes"]            # (d_c + d_h^R)·l elements
    context = 131_072
    gib = lambda b: b * context / 2 ** 30
    mha = v3["layers"] * 128 * (192 + 128) * v3["bytes"]                            # 128 heads, K 192 wide, V 128
    return PitfallResult(correct, wrong, difference(correct, wrong),
                         "bytes per token = layers · (d_c + d_h^R) · bytes, the papers' (d_c + d_h^R)·l values",
                         per_token == paper, per_token_x2 != paper,
                         f"Per token: {v3['layers']} layers × ({v3['latent']} + {v3['rope_key']}) values × "
                         f"{v3['bytes']} bytes (BF16) = {per_token:,} bytes = {per_token / 1024:.1f} KiB; ×2 gives "
                         f"{per_token_x2 / 1024:.1f} KiB. Your {count(n, 'token')}: {correct[-1]:.1f} KiB, not "
                         f"{wrong[-1]:.1f}. At the full 128K context ({context:,} tokens): {gib(per_token):.2f} GiB, "
                         f"not {gib(per_token_x2):.2f} GiB. (Caching full K and V of its 128 heads, K 192 and V 128 "
                         f"wide, would take {mha / 2 ** 20:.2f} MiB per token.)",
                         ("n",), "DeepSeek-V3's KV cache after each of your tokens, KiB (BF16)")

