"""The core of "Today's attention" against torch (CPU, float64) and the papers' numbers.

RoPE against Meta's Llama code (complex numbers, interleaved pairs) and Hugging Face's rotate_half (half
pairs); ALiBi's slopes against the paper's values and the reference repository's get_slopes; windows,
grouped-query attention, the KV cache and the online softmax against torch's scaled_dot_product_attention
(enable_gqa, bool masks, float biases, is_causal); the attention sink against softmax with one more column.
"""
import math

import numpy as np
import pytest

from attention_core.math.alibi import alibi_bias, alibi_slopes
from attention_core.math.attention import (causal_mask, merge_heads, padding_mask, scaled_dot_product_attention,
                                           sliding_window_mask, softmax, softmax_with_sink, split_heads)
from attention_core.math.limits import ConfigError
from attention_core.math.gqa import expand_kv, grouped_query_attention, kv_head_of
from attention_core.math.kv_cache import kv_cache_decode
from attention_core.math.online_softmax import online_softmax_attention
from attention_core.math.rope import half_permutation, rotary_complex, rotary_embedding

torch = pytest.importorskip("torch")
F = torch.nn.functional


def rng(seed=0):
    return np.random.default_rng(seed)


def T(a):
    """numpy -> torch float64 (bool stays bool)."""
    a = np.asarray(a)
    return torch.from_numpy(a.copy()) if a.dtype == bool else torch.tensor(a, dtype=torch.float64)


# ---- RoPE ----------------------------------------------------------------------------------------------

def meta_precompute_freqs_cis(dim: int, positions, theta: float) -> "torch.Tensor":
    """Meta's Llama code (llama/model.py), in float64: e^{i p θ_i} as torch.polar; (n, d/2) complex."""
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=torch.float64)[: (dim // 2)] / dim))
    t = torch.as_tensor(positions, dtype=torch.float64)
    freqs = torch.outer(t, freqs)
    return torch.polar(torch.ones_like(freqs), freqs)


def meta_apply_rotary_emb(x: "torch.Tensor", freqs_cis: "torch.Tensor") -> "torch.Tensor":
    """Meta's apply_rotary_emb: consecutive pairs (x_{2i}, x_{2i+1}) as complex numbers, times e^{i p θ_i}."""
    x_ = torch.view_as_complex(x.reshape(*x.shape[:-1], -1, 2).contiguous())
    return torch.view_as_real(x_ * freqs_cis).flatten(-2)


def hf_rotate_half(x):
    """Hugging Face's rotate_half (transformers' Llama)."""
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def hf_apply_rotary_pos_emb(x, positions, base: float):
    """Hugging Face's LlamaRotaryEmbedding + apply_rotary_pos_emb: x·cos + rotate_half(x)·sin, halves paired."""
    dim = x.shape[-1]
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).to(torch.float64) / dim))
    freqs = torch.outer(torch.as_tensor(positions, dtype=torch.float64), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return x * emb.cos() + hf_rotate_half(x) * emb.sin()


@pytest.mark.parametrize("d, n, base", [(2, 5, 10000.0), (8, 12, 10000.0), (16, 40, 500000.0), (64, 7, 1e6)])
def test_rope_interleaved_is_metas_complex_form(d, n, base):
    x = rng(d).standard_normal((3, n, d))
    want = meta_apply_rotary_emb(T(x), meta_precompute_freqs_cis(d, range(n), base)).numpy()
    np.testing.assert_allclose(rotary_embedding(x, base=base), want, atol=1e-12, rtol=0)
    np.testing.assert_allclose(rotary_complex(x, base=base), want, atol=1e-12, rtol=0)


@pytest.mark.parametrize("d, n, base", [(2, 5, 10000.0), (8, 12, 10000.0), (16, 40, 500000.0), (64, 7, 1e6)])
def test_rope_half_is_hugging_faces_rotate_half(d, n, base):
    x = rng(d + 1).standard_normal((2, n, d))
    want = hf_apply_rotary_pos_emb(T(x), range(n), base).numpy()
    np.testing.assert_allclose(rotary_embedding(x, base=base, pairing="half"), want, atol=1e-12, rtol=0)


@pytest.mark.parametrize("pairing", ["interleaved", "half"])
def test_rope_score_depends_only_on_the_offset(pairing):
    """(R_p q)·(R_p′ k) = q·R_{p′−p} k for random q, k and every p, p′ in 0 … 39: only p′ − p counts."""
    d = 12
    q, k = rng(3).standard_normal((2, d))
    positions = np.arange(40)
    rq = rotary_embedding(np.tile(q, (40, 1)), positions, pairing=pairing)        # row p: R_p q
    rk = rotary_embedding(np.tile(k, (40, 1)), positions, pairing=pairing)        # row p′: R_p′ k
    scores = rq @ rk.T                                                             # (p, p′)
    offsets = positions[None, :] - positions[:, None]                              # p′ − p
    relative = q @ rotary_embedding(np.tile(k, (79, 1)), np.arange(-39, 40), pairing=pairing).T   # q·R_δ k, δ = −39 … 39
    np.testing.assert_allclose(scores, relative[offsets + 39], atol=1e-12, rtol=0)
    for delta in (-5, 0, 7):                                                       # and along each diagonal
        diagonal = np.diagonal(scores, offset=delta)
        np.testing.assert_allclose(diagonal, diagonal[0], atol=1e-12, rtol=0)
    assert np.ptp(relative) > 0.1                                                  # the offset does matter


def test_rope_pairings_differ_by_the_half_permutation():
    d = 10
    perm = half_permutation(d)
    assert perm.tolist() == [0, 2, 4, 6, 8, 1, 3, 5, 7, 9]
    x = rng(4).standard_normal((2, 6, d))
    np.testing.assert_allclose(rotary_embedding(x[..., perm], pairing="half"),
                               rotary_embedding(x, pairing="interleaved")[..., perm], atol=1e-14, rtol=0)
    # weights converted by the permutation give the same scores under the other pairing
    q, k = rng(5).standard_normal((2, 6, d))
    interleaved = rotary_embedding(q) @ rotary_embedding(k).T
    half = rotary_embedding(q[:, perm], pairing="half") @ rotary_embedding(k[:, perm], pairing="half").T
    np.testing.assert_allclose(half, interleaved, atol=1e-12, rtol=0)
    # without the permutation the two pairings rotate different pairs: other numbers
    assert np.abs(rotary_embedding(q, pairing="half") - rotary_embedding(q)).max() > 0.1


@pytest.mark.parametrize("d", [1, 3, 7])
def test_rope_odd_width_is_a_config_error(d):
    with pytest.raises(ConfigError, match="even"):
        rotary_embedding(np.ones((3, d)))


def test_rope_huge_base_is_finite_and_matches_meta():
    x = rng(6).standard_normal((5, 8))
    out = rotary_embedding(x, base=1e300)
    assert np.isfinite(out).all()
    want = meta_apply_rotary_emb(T(x), meta_precompute_freqs_cis(8, range(5), 1e300)).numpy()
    np.testing.assert_allclose(out, want, atol=1e-12, rtol=0)
    np.testing.assert_allclose(out[:, 2:], x[:, 2:], atol=1e-12)       # only pair 0 (θ_0 = 1) still turns


@pytest.mark.parametrize("base", [1, 1.0, 0.5, 0, -10000.0, math.inf, -math.inf, math.nan, True, "10000"])
def test_rope_bad_base_is_a_config_error(base):
    with pytest.raises(ConfigError, match="base"):
        rotary_embedding(np.ones((3, 4)), base=base)


def test_rope_numpy_bases_are_bases():
    """A base read from a numpy array (np.int64, np.float32) is a number like any other (fixed: it was refused)."""
    x = rng(6).standard_normal((5, 8))
    for base in (np.int64(10000), np.float32(10000), np.float64(10000)):
        np.testing.assert_array_equal(rotary_embedding(x, base=base), rotary_embedding(x, base=10000.0))
    with pytest.raises(ConfigError, match="base"):
        rotary_embedding(x, base=np.float64(np.nan))


def test_rope_positions_argument():
    x = rng(7).standard_normal((4, 6))
    positions = [5, 9, 2, 30]
    out = rotary_embedding(x, positions)
    want = meta_apply_rotary_emb(T(x), meta_precompute_freqs_cis(6, positions, 10000.0)).numpy()
    np.testing.assert_allclose(out, want, atol=1e-12, rtol=0)
    np.testing.assert_allclose(rotary_embedding(x, positions, pairing="half"),
                               hf_apply_rotary_pos_emb(T(x), positions, 10000.0).numpy(), atol=1e-12, rtol=0)
    # row r at position p is what the default (rows are positions) gives at row p
    long = rotary_embedding(np.tile(x[1], (10, 1)))
    np.testing.assert_allclose(out[1], long[9], atol=1e-14)
    np.testing.assert_allclose(rotary_embedding(x, range(4)), rotary_embedding(x), atol=0)
    with pytest.raises(ConfigError, match="positions"):
        rotary_embedding(x, [0, 1, 2])


@pytest.mark.parametrize("pairing", ["interleaved", "half"])
def test_rope_leading_batch_axes(pairing):
    x = rng(8).standard_normal((2, 3, 5, 4))                     # (batch, heads, n, d)
    out = rotary_embedding(x, pairing=pairing)
    assert out.shape == x.shape
    for b in range(2):
        for h in range(3):
            np.testing.assert_array_equal(out[b, h], rotary_embedding(x[b, h], pairing=pairing))


# ---- ALiBi ---------------------------------------------------------------------------------------------

def get_slopes(n):
    """The ALiBi repository's reference code (ofirpress/attention_with_linear_biases), as written there."""
    def get_slopes_power_of_2(n):
        start = (2 ** (-2 ** -(math.log2(n) - 3)))
        ratio = start
        return [start * ratio ** i for i in range(n)]
    if math.log2(n).is_integer():
        return get_slopes_power_of_2(n)
    else:
        closest_power_of_2 = 2 ** math.floor(math.log2(n))
        return get_slopes_power_of_2(closest_power_of_2) + get_slopes(2 * closest_power_of_2)[0::2][:n - closest_power_of_2]


def test_alibi_slopes_published_values():
    assert alibi_slopes(8).tolist() == [1 / 2, 1 / 4, 1 / 8, 1 / 16, 1 / 32, 1 / 64, 1 / 128, 1 / 256]
    np.testing.assert_allclose(alibi_slopes(12), [1 / 2, 1 / 4, 1 / 8, 1 / 16, 1 / 32, 1 / 64, 1 / 128, 1 / 256,
                                                  2 ** -0.5, 2 ** -1.5, 2 ** -2.5, 2 ** -3.5], rtol=1e-15)
    assert alibi_slopes(1).tolist() == [2 ** -8]
    assert len(set(alibi_slopes(12).tolist())) == 12                  # every head its own slope


@pytest.mark.parametrize("n", range(1, 65))
def test_alibi_slopes_match_the_reference_get_slopes(n):
    np.testing.assert_allclose(alibi_slopes(n), get_slopes(n), rtol=1e-14, atol=0)


@pytest.mark.parametrize("n_heads", [0, -1, 65, 2.0, True])
def test_alibi_bad_head_count_is_a_config_error(n_heads):
    with pytest.raises(ConfigError):
        alibi_slopes(n_heads)


@pytest.mark.parametrize("n, n_heads", [(1, 1), (5, 4), (7, 12)])
def test_alibi_bias_against_a_torch_construction(n, n_heads):
    slopes = torch.tensor(get_slopes(n_heads), dtype=torch.float64)
    i = torch.arange(n)
    want = -slopes[:, None, None] * (i[:, None] - i[None, :]).abs()          # (H, n, n)
    bias = alibi_bias(n, n_heads)
    np.testing.assert_allclose(bias, want.numpy(), atol=0, rtol=1e-14)
    lower = np.tril(np.ones((n, n), bool))
    j = np.arange(n)
    np.testing.assert_allclose(bias[:, lower], (-alibi_slopes(n_heads)[:, None, None]
                                               * (j[:, None] - j[None, :]))[:, lower], rtol=1e-15)


def test_alibi_with_causal_mask_equals_the_reference_repos_per_key_bias():
    """The ALiBi repository adds m_h·j (the key's position) to every row: with a causal mask softmax is shift
    invariant per row, so the weights equal those of −m_h·(i − j)."""
    n, h = 6, 4
    scores = rng(9).standard_normal((h, n, n))
    mask = causal_mask(n)
    ours = softmax(np.where(mask, scores + alibi_bias(n, h), -np.inf))
    slopes = torch.tensor(get_slopes(h), dtype=torch.float64)
    repo = slopes[:, None, None] * torch.arange(n, dtype=torch.float64)[None, None, :]        # (H, 1, n)
    want = torch.softmax(T(scores) + repo + T(np.where(mask, 0.0, -np.inf)), dim=-1).numpy()
    np.testing.assert_allclose(ours, want, atol=1e-12, rtol=0)


@pytest.mark.parametrize("causal", [False, True])
def test_alibi_bias_as_sdpa_float_mask(causal):
    """SDPA with attn_mask = B (+ −∞ above the diagonal) equals softmax(Ŝ + B) V."""
    n, h, d = 5, 3, 4
    q, k, v = rng(10).standard_normal((3, h, n, d))
    bias = alibi_bias(n, h)
    mask = causal_mask(n) if causal else None
    biased = q @ np.swapaxes(k, -1, -2) / math.sqrt(d) + bias                  # Ŝ + B: (H, n, n)
    ours = softmax(biased if mask is None else np.where(mask, biased, -np.inf)) @ v
    float_mask = T(bias) + (T(np.where(mask, 0.0, -np.inf)) if causal else 0)
    want = F.scaled_dot_product_attention(T(q), T(k), T(v), attn_mask=float_mask).numpy()
    np.testing.assert_allclose(ours, want, atol=1e-12, rtol=0)
    # and through grouped_query_attention's bias argument (H_kv = H)
    x = rng(11).standard_normal((n, 6))
    w_q, w_k, w_v = (rng(12 + i).standard_normal((6, h * d)) for i in range(3))
    w_o = rng(15).standard_normal((h * d, 6))
    out, _ = grouped_query_attention(x, x, w_q, w_k, w_v, w_o, h, h, mask=mask, bias=bias)
    tq, tk, tv = (T(split_heads(x @ w, h)) for w in (w_q, w_k, w_v))
    ctx = F.scaled_dot_product_attention(tq, tk, tv, attn_mask=float_mask).numpy()
    np.testing.assert_allclose(out, merge_heads(ctx) @ w_o, atol=1e-12, rtol=0)


# ---- sliding window ------------------------------------------------------------------------------------

@pytest.mark.parametrize("n, window", [(1, 1), (5, 1), (5, 2), (6, 3), (6, 6), (6, 9)])
def test_sliding_window_definition(n, window):
    mask = sliding_window_mask(n, window)
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    np.testing.assert_array_equal(mask, (0 <= i - j) & (i - j < window))
    assert mask.sum(axis=1).tolist() == [min(r + 1, window) for r in range(n)]    # at most W keys, itself included
    if window == 1:
        np.testing.assert_array_equal(mask, np.eye(n, dtype=bool))
    if window >= n:
        np.testing.assert_array_equal(mask, causal_mask(n))


@pytest.mark.parametrize("window", [0, -1, 2.5, True, None])
def test_sliding_window_zero_is_a_config_error(window):
    with pytest.raises(ConfigError, match="window"):
        sliding_window_mask(4, window)


@pytest.mark.parametrize("window", [1, 2, 4])
def test_sliding_window_against_torch_sdpa_bool_mask(window):
    n, d = 6, 4
    q, k, v = rng(16).standard_normal((3, n, d))
    mask = sliding_window_mask(n, window)
    ours, weights = scaled_dot_product_attention(q, k, v, mask)
    want = F.scaled_dot_product_attention(T(q), T(k), T(v), attn_mask=T(mask)).numpy()
    np.testing.assert_allclose(ours, want, atol=1e-12, rtol=0)
    assert (weights[~mask] == 0).all()
    # n_k > n_q: the first rows' windows, as the first rows of the square mask
    np.testing.assert_array_equal(sliding_window_mask(3, window, 6), sliding_window_mask(6, window)[:3])


# ---- grouped-query attention ---------------------------------------------------------------------------

def gqa_setup(n_heads, n_kv, n_q=5, n_k=5, d_model=6, d_head=4, d_v=3, seed=0):
    r = rng(seed)
    x_q, x_kv = r.standard_normal((n_q, d_model)), r.standard_normal((n_k, d_model))
    w_q = r.standard_normal((d_model, n_heads * d_head))
    w_k = r.standard_normal((d_model, n_kv * d_head))
    w_v = r.standard_normal((d_model, n_kv * d_v))
    w_o = r.standard_normal((n_heads * d_v, d_model))
    return x_q, x_kv, w_q, w_k, w_v, w_o


def torch_gqa(x_q, x_kv, w_q, w_k, w_v, w_o, n_heads, n_kv, **sdpa):
    """torch's SDPA with enable_gqa=True on the same projections, heads merged and W_O applied."""
    q = T(split_heads(x_q @ w_q, n_heads))[None]                            # (1, H, n_q, d_head)
    k = T(split_heads(x_kv @ w_k, n_kv))[None]                              # (1, H_kv, n_k, d_head)
    v = T(split_heads(x_kv @ w_v, n_kv))[None]
    ctx = F.scaled_dot_product_attention(q, k, v, enable_gqa=True, **sdpa)[0].numpy()
    return merge_heads(ctx) @ w_o


@pytest.mark.parametrize("n_heads, n_kv", [(4, 4), (4, 2), (6, 3), (8, 2), (4, 1), (1, 1)])
@pytest.mark.parametrize("masking", ["none", "bool", "float"])
def test_gqa_against_torch_enable_gqa(n_heads, n_kv, masking):
    x_q, x_kv, w_q, w_k, w_v, w_o = gqa_setup(n_heads, n_kv, n_q=4, n_k=6, seed=n_heads * 10 + n_kv)
    mask = bias = None
    sdpa = {}
    if masking == "bool":
        mask = rng(1).random((4, 6)) < 0.6
        mask[:, 0] = True
        sdpa["attn_mask"] = T(mask)
    elif masking == "float":
        bias = rng(2).standard_normal((n_heads, 4, 6))
        sdpa["attn_mask"] = T(bias)
    out, weights = grouped_query_attention(x_q, x_kv, w_q, w_k, w_v, w_o, n_heads, n_kv, mask=mask, bias=bias)
    np.testing.assert_allclose(out, torch_gqa(x_q, x_kv, w_q, w_k, w_v, w_o, n_heads, n_kv, **sdpa),
                               atol=1e-12, rtol=0)
    # the weights: torch's softmax with K repeated by repeat_interleave
    q = T(split_heads(x_q @ w_q, n_heads))
    k = T(split_heads(x_kv @ w_k, n_kv)).repeat_interleave(n_heads // n_kv, dim=0)
    s = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = s.masked_fill(~T(mask), -math.inf)
    if bias is not None:
        s = s + T(bias)
    np.testing.assert_allclose(weights, torch.softmax(s, dim=-1).numpy(), atol=1e-12, rtol=0)


def test_gqa_with_one_kv_head_per_query_head_is_multi_head_attention():
    from attention_core.math.attention import multi_head_attention
    x = rng(4).standard_normal((5, 6))
    w_q, w_k, w_v, w_o = (rng(5 + i).standard_normal((6, 6)) for i in range(4))
    a = grouped_query_attention(x, x, w_q, w_k, w_v, w_o, 2, 2)
    b = multi_head_attention(x, x, w_q, w_k, w_v, w_o, 2)
    np.testing.assert_allclose(a[0], b[0], atol=1e-13)
    np.testing.assert_allclose(a[1], b[1], atol=1e-13)


@pytest.mark.parametrize("n_heads, n_kv", [(4, 3), (6, 4), (8, 3), (4, 0), (4, -2), (4, 2.0)])
def test_gqa_kv_heads_not_dividing_is_a_config_error(n_heads, n_kv):
    x = np.ones((3, 4))
    with pytest.raises(ConfigError, match="KV heads"):
        grouped_query_attention(x, x, np.ones((4, 8)), np.ones((4, 4)), np.ones((4, 4)), np.ones((8, 4)),
                                n_heads, n_kv)


@pytest.mark.parametrize("n_heads, n_kv", [(8, 8), (8, 4), (8, 2), (8, 1), (12, 3), (6, 2)])
def test_kv_head_of_is_repeat_interleave(n_heads, n_kv):
    want = torch.arange(n_kv).repeat_interleave(n_heads // n_kv).tolist()
    assert [kv_head_of(h, n_heads, n_kv) for h in range(n_heads)] == want
    kv = rng(0).standard_normal((n_kv, 3, 2))
    np.testing.assert_array_equal(expand_kv(kv, n_heads), T(kv).repeat_interleave(n_heads // n_kv, dim=0).numpy())


# ---- online softmax ------------------------------------------------------------------------------------

N_Q, N_K = 5, 7


def online_masks():
    random = rng(20).random((N_Q, N_K)) < 0.5
    random[np.arange(N_Q), np.arange(N_Q)] = True                   # every row sees at least one key
    return {"none": None, "causal": causal_mask(N_Q, N_K), "padding": padding_mask(N_Q, N_K, [1, 4, 5]),
            "random": random}


@pytest.mark.parametrize("masking", ["none", "causal", "padding", "random"])
@pytest.mark.parametrize("block_size", range(1, N_K + 3))
def test_online_softmax_equals_sdpa(masking, block_size):
    q, k = rng(21).standard_normal((N_Q, 4)), rng(22).standard_normal((N_K, 4))
    v = rng(23).standard_normal((N_K, 3))
    mask = online_masks()[masking]
    context, blocks = online_softmax_attention(q, k, v, block_size, mask)
    np.testing.assert_allclose(context, scaled_dot_product_attention(q, k, v, mask)[0], atol=1e-12, rtol=0)
    want = F.scaled_dot_product_attention(T(q), T(k), T(v), attn_mask=None if mask is None else T(mask)).numpy()
    np.testing.assert_allclose(context, want, atol=1e-12, rtol=0)
    assert [b["keys"] for b in blocks] == [(s, min(s + block_size, N_K)) for s in range(0, N_K, block_size)]
    # the last block's m + log ℓ is the row's logsumexp of the scaled (masked) scores
    s = T(q) @ T(k).T / 2.0                                                   # √d_k = 2
    if mask is not None:
        s = s.masked_fill(~T(mask), -math.inf)
    last = blocks[-1]
    np.testing.assert_allclose(last["m"] + np.log(last["l"]), torch.logsumexp(s, dim=-1).numpy(), atol=1e-12, rtol=0)
    # after each block, m is the running maximum and ℓ the running sum of e^(S − m) over the keys seen so far
    for b in blocks:
        seen = s[:, : b["keys"][1]]
        np.testing.assert_allclose(b["m"], seen.max(dim=-1).values.numpy(), atol=0)
        top = seen.max(dim=-1, keepdim=True).values
        top = torch.where(torch.isfinite(top), top, 0.0)                      # a row that has seen no key yet: ℓ = 0
        np.testing.assert_allclose(b["l"], torch.exp(seen - top).sum(-1).numpy(), atol=1e-12, rtol=0)
        partial = F.scaled_dot_product_attention(T(q), T(k[: b["keys"][1]]), T(v[: b["keys"][1]]), attn_mask=None
                                                 if mask is None else T(mask[:, : b["keys"][1]])).numpy()
        np.testing.assert_allclose(np.divide(b["o"], b["l"][:, None], out=np.zeros_like(b["o"]),
                                             where=b["l"][:, None] > 0), partial, atol=1e-12, rtol=0)


def test_online_softmax_skips_a_fully_masked_tile_without_nan():
    q, k, v = rng(24).standard_normal((4, 2)), rng(25).standard_normal((6, 2)), rng(26).standard_normal((6, 3))
    mask = padding_mask(4, 6, [2, 3])                                        # keys 2 and 3 hidden from every query
    context, blocks = online_softmax_attention(q, k, v, 2, mask)
    assert [b["skipped"] for b in blocks] == [False, True, False]
    skipped = blocks[1]
    np.testing.assert_array_equal(skipped["m"], blocks[0]["m"])             # nothing changes over a skipped tile
    np.testing.assert_array_equal(skipped["l"], blocks[0]["l"])
    np.testing.assert_array_equal(skipped["rescale"], 1.0)
    for b in blocks:
        assert not any(np.isnan(b[key]).any() for key in ("m", "l", "o", "rescale", "scores"))
    np.testing.assert_allclose(context, scaled_dot_product_attention(q, k, v, mask)[0], atol=1e-12)
    # a decoding-like case: the first query sees key 0 only, the later tiles are all masked for it
    context, blocks = online_softmax_attention(q[:1], k, v, 2, causal_mask(1, 6))
    assert [b["skipped"] for b in blocks] == [False, True, True]
    np.testing.assert_allclose(context, v[:1], atol=1e-15)


def test_online_softmax_fully_masked_row_gives_zero():
    q, k, v = rng(27).standard_normal((3, 4)), rng(28).standard_normal((5, 4)), rng(29).standard_normal((5, 2))
    mask = np.ones((3, 5), bool)
    mask[1] = False
    for block_size in (1, 2, 5):
        context, blocks = online_softmax_attention(q, k, v, block_size, mask)
        assert not np.isnan(context).any()
        np.testing.assert_array_equal(context[1], 0.0)
        assert blocks[-1]["l"][1] == 0 and blocks[-1]["m"][1] == -np.inf
        np.testing.assert_allclose(context, F.scaled_dot_product_attention(T(q), T(k), T(v),
                                                                           attn_mask=T(mask)).numpy(), atol=1e-12)


@pytest.mark.parametrize("block_size", [0, -1, 1.5, True, None])
def test_online_softmax_block_size_zero_is_a_config_error(block_size):
    x = np.ones((2, 2))
    with pytest.raises(ConfigError, match="block size"):
        online_softmax_attention(x, x, x, block_size)


# ---- KV cache ------------------------------------------------------------------------------------------

def rope_full_pass(x, w_q, w_k, w_v, w_o, n_heads, n_kv, mask, base):
    """The full pass with Q and K rotated by Meta's complex form (interleaved), through torch SDPA."""
    n = x.shape[0]
    freqs = meta_precompute_freqs_cis(w_q.shape[1] // n_heads, range(n), base)
    q = meta_apply_rotary_emb(T(split_heads(x @ w_q, n_heads)), freqs)[None]
    k = meta_apply_rotary_emb(T(split_heads(x @ w_k, n_kv)), freqs)[None]
    v = T(split_heads(x @ w_v, n_kv))[None]
    ctx = F.scaled_dot_product_attention(q, k, v, attn_mask=T(mask), enable_gqa=True)[0].numpy()
    return merge_heads(ctx) @ w_o


@pytest.mark.parametrize("n_heads, n_kv", [(4, 4), (4, 2), (4, 1)])
@pytest.mark.parametrize("window", [None, 1, 3, 7, 12])
@pytest.mark.parametrize("prefill", [0, 1, 4, 7])
@pytest.mark.parametrize("rope_base", [None, 10000.0])
def test_kv_cache_decode_equals_the_full_pass(n_heads, n_kv, window, prefill, rope_base):
    n, d_head, d_v = 7, 4, 3
    x, _, w_q, w_k, w_v, w_o = gqa_setup(n_heads, n_kv, n_q=n, n_k=n, d_head=d_head, d_v=d_v, seed=n_kv + 3)
    outputs, cache = kv_cache_decode(x, w_q, w_k, w_v, w_o, n_heads, n_kv, window=window, prefill=prefill,
                                     rope_base=rope_base)
    mask = causal_mask(n) if window is None else sliding_window_mask(n, window)
    if rope_base is None:
        full, _ = grouped_query_attention(x, x, w_q, w_k, w_v, w_o, n_heads, n_kv, mask=mask)
        np.testing.assert_allclose(outputs, full, atol=1e-12, rtol=0)
        if window is None:
            np.testing.assert_allclose(full, grouped_query_attention(x, x, w_q, w_k, w_v, w_o, n_heads, n_kv,
                                                                     mask=causal_mask(n))[0], atol=0)
            np.testing.assert_allclose(outputs, torch_gqa(x, x, w_q, w_k, w_v, w_o, n_heads, n_kv, is_causal=True),
                                       atol=1e-12, rtol=0)
        else:
            np.testing.assert_allclose(outputs, torch_gqa(x, x, w_q, w_k, w_v, w_o, n_heads, n_kv,
                                                          attn_mask=T(mask)), atol=1e-12, rtol=0)
    else:
        np.testing.assert_allclose(outputs, rope_full_pass(x, w_q, w_k, w_v, w_o, n_heads, n_kv, mask, rope_base),
                                   atol=1e-12, rtol=0)
    kept = n if window is None else min(window, n)
    assert cache["k"].shape == (n_kv, kept, d_head) and cache["v"].shape == (n_kv, kept, d_v)
    assert cache["positions"] == list(range(n - kept, n))
    # the cache holds the last tokens' K (rotated with RoPE) and V rows
    k_all = split_heads(x @ w_k, n_kv)
    if rope_base is not None:
        k_all = rotary_embedding(k_all, base=rope_base)
    np.testing.assert_allclose(cache["k"], k_all[:, n - kept:], atol=1e-12)
    np.testing.assert_allclose(cache["v"], split_heads(x @ w_v, n_kv)[:, n - kept:], atol=1e-12)
    assert [s["t"] for s in cache["steps"]] == list(range(n))
    for s in cache["steps"]:                    # a rolling buffer: a decoded step holds its W visible rows, no more
        t = s["t"]
        held = list(range(prefill)) if s["prefill"] else list(range(0 if window is None else max(0, t - window + 1), t + 1))
        assert s["positions"] == held and s["cache_len"] == len(held), (t, s["positions"])
        assert s["prefill"] or np.isfinite(s["scores"]).all()


@pytest.mark.parametrize("n_heads, n_kv", [(4, 2), (3, 1)])
@pytest.mark.parametrize("window, prefill", [(None, 0), (2, 4), (9, 1)])
def test_kv_cache_decode_with_biases_alibi_dot_and_temperature_equals_torch(n_heads, n_kv, window, prefill):
    """Biases on every projection and on the output, ALiBi's row −m_h·(t − j), the unscaled dot product and a
    temperature: the decoded outputs are torch SDPA's over the whole sentence (the bias and −∞ in one float
    mask, scale = 1/T), and every step's weights are that pass's rows."""
    n, d_head, d_v = 6, 4, 3
    x, _, w_q, w_k, w_v, w_o = gqa_setup(n_heads, n_kv, n_q=n, n_k=n, d_head=d_head, d_v=d_v, seed=7)
    r = rng(8)
    b = {"b_q": r.standard_normal(n_heads * d_head), "b_k": r.standard_normal(n_kv * d_head),
         "b_v": r.standard_normal(n_kv * d_v), "b_o": r.standard_normal(x.shape[1])}
    temperature = 0.7
    outputs, cache = kv_cache_decode(x, w_q, w_k, w_v, w_o, n_heads, n_kv, window=window, prefill=prefill, biases=b,
                                     alibi_slopes=alibi_slopes(n_heads), scaled=False, temperature=temperature)
    q = T(split_heads(x @ w_q + b["b_q"], n_heads))[None]
    k = T(split_heads(x @ w_k + b["b_k"], n_kv))[None]
    v = T(split_heads(x @ w_v + b["b_v"], n_kv))[None]
    allowed = causal_mask(n) if window is None else sliding_window_mask(n, window)
    mask = np.where(allowed[None], alibi_bias(n, n_heads) / temperature, -np.inf)
    ctx = F.scaled_dot_product_attention(q, k, v, attn_mask=T(mask), scale=1 / temperature, enable_gqa=True)
    np.testing.assert_allclose(outputs, merge_heads(ctx[0].numpy()) @ w_o + b["b_o"], atol=1e-12, rtol=0)
    weights = torch.softmax(q @ expand_kv_t(k, n_heads).transpose(-1, -2) / temperature + T(mask), -1)[0].numpy()
    for step in cache["steps"]:
        np.testing.assert_allclose(step["weights"], weights[:, step["t"], step["positions"]], atol=1e-12)
    np.testing.assert_allclose(cache["v_rows"], split_heads(x @ w_v + b["b_v"], n_kv), atol=1e-12)


def expand_kv_t(k, n_heads):
    """(1, H_kv, n, d) -> (1, H, n, d): torch's repeat_interleave, as enable_gqa does."""
    return k.repeat_interleave(n_heads // k.shape[1], dim=1)


def test_kv_cache_decode_bad_inputs_are_config_errors():
    x, _, w_q, w_k, w_v, w_o = gqa_setup(4, 2, n_q=3, n_k=3)
    for kwargs in ({"window": 0}, {"window": 1.5}, {"prefill": 4}, {"prefill": -1}, {"prefill": 1.5},
                   {"prefill": None}, {"n_kv_heads": 3}, {"rope_base": 0}, {"rope_base": 1.0}, {"rope_base": math.inf}):
        with pytest.raises(ConfigError):
            kv_cache_decode(x, w_q, w_k, w_v, w_o, 4, **{"n_kv_heads": 2, **kwargs})
    odd = gqa_setup(2, 2, n_q=3, n_k=3, d_head=3)
    with pytest.raises(ConfigError, match="even"):
        kv_cache_decode(odd[0], *odd[2:], 2, rope_base=10000.0)


def test_kv_cache_without_n_kv_heads_is_multi_head():
    x, _, w_q, w_k, w_v, w_o = gqa_setup(3, 3, n_q=5, n_k=5)
    outputs, cache = kv_cache_decode(x, w_q, w_k, w_v, w_o, 3)
    np.testing.assert_allclose(outputs, torch_gqa(x, x, w_q, w_k, w_v, w_o, 3, 3, is_causal=True), atol=1e-12)
    assert cache["k"].shape == (3, 5, 4)


# ---- attention sink ------------------------------------------------------------------------------------

def test_softmax_with_sink_is_softmax_with_an_extra_column_dropped():
    h, n = 3, 4
    scores = rng(30).standard_normal((h, n, n)) * 3
    sinks = rng(31).standard_normal(h)                                        # one logit z_h per head
    ours = softmax_with_sink(scores, sinks[:, None, None])
    column = T(sinks)[:, None, None].expand(h, n, 1)
    want = torch.softmax(torch.cat([T(scores), column], dim=-1), dim=-1)[..., :-1].numpy()
    np.testing.assert_allclose(ours, want, atol=1e-15, rtol=0)
    sums = ours.sum(axis=-1)
    assert (sums < 1).all() and (sums > 0).all()
    np.testing.assert_allclose(1 - sums, torch.softmax(torch.cat([T(scores), column], -1), -1)[..., -1].numpy(),
                               atol=1e-15)
    np.testing.assert_allclose(softmax_with_sink(scores, 0.0),
                               torch.softmax(torch.cat([T(scores), torch.zeros(h, n, 1, dtype=torch.float64)], -1),
                                             -1)[..., :-1].numpy(), atol=1e-15)


def test_softmax_with_sink_masked_row_gives_zero_and_large_logits_stay_finite():
    x = np.array([[-np.inf, -np.inf, -np.inf], [0.0, -np.inf, 1.0], [1000.0, 999.0, -np.inf]])
    out = softmax_with_sink(x, 2.0)
    assert np.isfinite(out).all()
    np.testing.assert_array_equal(out[0], 0.0)
    want = torch.softmax(torch.cat([T(x), torch.full((3, 1), 2.0, dtype=torch.float64)], -1), -1)[..., :-1]
    np.testing.assert_allclose(out[1:], want.numpy()[1:], atol=1e-15)
    # a very negative sink is plain softmax
    np.testing.assert_allclose(softmax_with_sink(x[1:], -1e9), softmax(x[1:]), atol=1e-15)
