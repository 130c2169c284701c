"""The notebook API against torch, over many shapes, to 1e-10 in float64."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attention_core import causal_mask, multi_head_attention, padding_mask, scaled_dot_product_attention, softmax

torch.set_default_dtype(torch.float64)
SHAPES = [  # n_q, n_k, d_k, d_v
    (1, 1, 1, 1), (1, 5, 3, 2), (4, 4, 1, 7), (4, 4, 6, 8), (7, 3, 5, 5),
    (3, 9, 16, 4), (16, 16, 64, 32), (2, 11, 9, 1), (5, 5, 33, 17),
]


def _mask(kind, n_q, n_k, rng):
    if kind == "none":
        return None
    if kind == "causal":
        return causal_mask(n_q, n_k) | (np.arange(n_k)[None, :] == 0)   # key 0 visible: no empty row
    m = rng.random((n_q, n_k)) > 0.4
    m[:, 0] = True
    return m


@pytest.mark.parametrize("n_q,n_k,d_k,d_v", SHAPES)
@pytest.mark.parametrize("mask_kind", ["none", "causal", "random"])
def test_sdpa_matches_torch(n_q, n_k, d_k, d_v, mask_kind):
    rng = np.random.default_rng(n_q * 1000 + n_k * 100 + d_k * 10 + d_v)
    q, k, v = rng.standard_normal((n_q, d_k)), rng.standard_normal((n_k, d_k)), rng.standard_normal((n_k, d_v))
    mask = _mask(mask_kind, n_q, n_k, rng)
    context, weights = scaled_dot_product_attention(q, k, v, mask)
    expected = F.scaled_dot_product_attention(
        torch.tensor(q), torch.tensor(k), torch.tensor(v),
        attn_mask=None if mask is None else torch.tensor(mask))
    assert context.shape == (n_q, d_v) and weights.shape == (n_q, n_k)
    np.testing.assert_allclose(context, expected.numpy(), atol=1e-10, rtol=1e-10)
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0, atol=1e-12)
    if mask is not None:
        assert np.all(weights[~mask] == 0.0)


MHA_SHAPES = [  # n_q, n_k, d_model, heads
    (1, 1, 1, 1), (3, 3, 4, 2), (5, 2, 6, 3), (4, 7, 8, 8), (6, 6, 9, 3), (2, 5, 12, 4), (10, 10, 32, 8),
]


@pytest.mark.parametrize("n_q,n_k,d_model,heads", MHA_SHAPES)
@pytest.mark.parametrize("mask_kind", ["none", "random"])
def test_multi_head_matches_torch_module(n_q, n_k, d_model, heads, mask_kind):
    rng = np.random.default_rng(n_q + 10 * n_k + 100 * d_model + heads)
    x_q, x_kv = rng.standard_normal((n_q, d_model)), rng.standard_normal((n_k, d_model))
    w_q, w_k, w_v, w_o = (rng.standard_normal((d_model, d_model)) / np.sqrt(d_model) for _ in range(4))
    mask = _mask(mask_kind, n_q, n_k, rng)
    output, weights = multi_head_attention(x_q, x_kv, w_q, w_k, w_v, w_o, heads, mask)

    mha = torch.nn.MultiheadAttention(d_model, heads, bias=False, batch_first=True, dtype=torch.float64)
    with torch.no_grad():   # torch computes x Wᵀ, so it stores our matrices transposed
        mha.in_proj_weight.copy_(torch.tensor(np.concatenate([w_q.T, w_k.T, w_v.T])))
        mha.out_proj.weight.copy_(torch.tensor(w_o.T))
    out_t, w_t = mha(torch.tensor(x_q)[None], torch.tensor(x_kv)[None], torch.tensor(x_kv)[None],
                     attn_mask=None if mask is None else torch.tensor(~mask),   # MHA: True = blocked
                     need_weights=True, average_attn_weights=False)
    assert output.shape == (n_q, d_model) and weights.shape == (heads, n_q, n_k)
    np.testing.assert_allclose(output, out_t[0].detach().numpy(), atol=1e-10, rtol=1e-10)
    np.testing.assert_allclose(weights, w_t[0].detach().numpy(), atol=1e-10, rtol=1e-10)


@pytest.mark.parametrize("temperature", [0.1, 0.5, 1.0, 3.0])
@pytest.mark.parametrize("axis", [0, -1])
def test_softmax_matches_torch(temperature, axis):
    x = np.random.default_rng(3).standard_normal((5, 7)) * 4
    expected = torch.softmax(torch.tensor(x) / temperature, dim=axis).numpy()
    np.testing.assert_allclose(softmax(x, axis=axis, temperature=temperature), expected, atol=1e-14)


def test_softmax_is_stable_for_large_values():
    out = softmax(np.array([1000.0, 1000.0, -1000.0]))
    assert np.all(np.isfinite(out))
    np.testing.assert_allclose(out, [0.5, 0.5, 0.0])


def test_fully_masked_row_gives_zeros_not_nan():
    q = k = v = np.ones((3, 2))
    mask = padding_mask(3, 3, [0, 1, 2])
    context, weights = scaled_dot_product_attention(q, k, v, mask)
    assert np.all(weights == 0) and np.all(context == 0)
    assert not np.isnan(context).any()


def test_causal_weights_zero_above_diagonal():
    rng = np.random.default_rng(0)
    q, k, v = rng.standard_normal((6, 3)), rng.standard_normal((6, 3)), rng.standard_normal((6, 2))
    _, weights = scaled_dot_product_attention(q, k, v, causal_mask(6))
    assert np.all(np.triu(weights, 1) == 0)
    assert weights[0, 0] == 1.0
    np.testing.assert_allclose(weights.sum(-1), 1.0)
