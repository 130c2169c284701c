"""The next-token sampler (attention_core/math/sampling.py) against torch, written as Hugging Face's warpers
write it, to 1e-9; hand-computed cases; the seeded draw reproducible and distributed as its probabilities."""
import math

import numpy as np
import pytest

from attention_core.math.limits import ConfigError
from attention_core.math.sampling import (check_sampling, draw, next_token, renormalise, softmax_t, top_k_keep,
                                          top_p_keep, uniforms)

torch = pytest.importorskip("torch")


def _hf_top_k(scores, k):
    """TopKLogitsWarper: remove scores below the k-th largest (torch.topk's last value)."""
    k = min(max(k, 1), scores.size(-1))
    return ~(scores < torch.topk(scores, k)[0][..., -1, None])


def _hf_top_p(scores, top_p):
    """TopPLogitsWarper: ascending sort, cumulative softmax, drop while ≤ 1 − p, keep the last one."""
    sorted_logits, sorted_indices = torch.sort(scores, descending=False)
    cumulative = sorted_logits.softmax(dim=-1).cumsum(dim=-1)
    remove = cumulative <= (1 - top_p)
    remove[..., -1:] = 0
    return ~remove.scatter(-1, sorted_indices, remove)


def _torch_pipeline(z, T, k, p):
    """Temperature, top-k, top-p, softmax of what is left: Hugging Face's order of warpers."""
    s = torch.tensor(z, dtype=torch.float64) / T
    if 0 < k < s.numel():
        s = s.masked_fill(~_hf_top_k(s, k), -math.inf)
    if p < 1:
        s = s.masked_fill(~_hf_top_p(s, p), -math.inf)
    return torch.softmax(s, dim=-1).numpy(), torch.isfinite(s).numpy()


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("T", [0.3, 1.0, 2.5])
def test_softmax_with_temperature_matches_torch(seed, T):
    z = np.random.default_rng(seed).normal(0, 3, 31)
    want = torch.softmax(torch.tensor(z) / T, dim=-1).numpy()
    assert np.max(np.abs(softmax_t(z, T) - want)) < 1e-12


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("k", [1, 2, 5, 30])
def test_top_k_matches_torch_topk(seed, k):
    z = np.random.default_rng(seed).normal(0, 2, 31)
    keep = top_k_keep(z, k)
    assert keep.sum() == k
    assert keep.tolist() == _hf_top_k(torch.tensor(z), k).tolist()
    assert set(np.flatnonzero(keep)) == set(torch.topk(torch.tensor(z), k).indices.tolist())


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("p", [0.05, 0.3, 0.5, 0.9, 0.99])
def test_top_p_matches_hugging_face(seed, p):
    z = np.random.default_rng(seed).normal(0, 2, 31)
    want = _hf_top_p(torch.tensor(z), p).numpy()
    assert top_p_keep(softmax_t(z, 1.0), p).tolist() == want.tolist()


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("T,k,p", [(0.7, 0, 0.9), (1.0, 5, 1.0), (1.5, 10, 0.8), (0.5, 3, 0.6), (2.0, 31, 0.95)])
def test_whole_pipeline_matches_torch(seed, T, k, p):
    z = np.random.default_rng(100 + seed).normal(0, 2, 31)
    want, kept = _torch_pipeline(z, T, k, p)
    got = next_token(z, T, k, p, 0.5)
    assert got["kept"].tolist() == kept.tolist()
    assert np.max(np.abs(got["renormalised"] - want)) < 1e-9
    assert abs(got["renormalised"].sum() - 1) < 1e-12


def test_hand_computed_case():
    z = np.array([2.0, 1.0, 0.0, -1.0])
    e = np.exp([0.0, -1.0, -2.0, -3.0])
    p = e / e.sum()                                   # 0.6439, 0.2369, 0.0871, 0.0321
    assert np.allclose(softmax_t(z, 1.0), p, atol=1e-15)
    e2 = np.exp([0.0, -0.5, -1.0, -1.5])              # T = 2 halves the gaps: flatter
    assert np.allclose(softmax_t(z, 2.0), e2 / e2.sum(), atol=1e-15)
    assert top_p_keep(p, 0.6).tolist() == [True, False, False, False]      # 0.644 ≥ 0.6 alone
    assert top_p_keep(p, 0.7).tolist() == [True, True, False, False]       # 0.644 < 0.7 ≤ 0.881
    assert top_p_keep(p, 0.9).tolist() == [True, True, True, False]        # 0.881 < 0.9 ≤ 0.968
    kept = np.array([True, True, False, False])
    assert np.allclose(renormalise(p, kept), [p[0] / (p[0] + p[1]), p[1] / (p[0] + p[1]), 0, 0], atol=1e-15)
    q = renormalise(p, kept)                          # F = 0.731, 1.0
    assert draw(q, 0.0) == 0 and draw(q, 0.73) == 0 and draw(q, 0.74) == 1 and draw(q, 0.999999) == 1


def test_edges_temperature_zero_k_and_p():
    z = np.array([0.5, 3.0, 3.0 - 1e-9, -2.0])
    at0 = next_token(z, 0.0, 0, 1.0, 0.99)
    assert at0["probs"].tolist() == [0, 1, 0, 0] and at0["token"] == 1 and at0["kept"].sum() == 1
    assert np.all(np.isfinite(at0["scaled"]))
    for k in (0, 4, 99):                              # off
        assert next_token(z, 1.0, k, 1.0, 0.5)["kept"].all()
    assert next_token(z, 1.0, 0, 0.0, 0.5)["kept"].tolist() == [False, True, False, False]   # p = 0: the top one
    assert next_token(z, 1.0, 0, 1.0, 0.5)["kept"].all()                                      # p = 1: all
    tiny = next_token(np.array([1000.0, 0.0, -1000.0]), 0.01, 0, 1.0, 0.3)                  # e^-1e5 underflows
    assert np.all(np.isfinite(tiny["renormalised"])) and tiny["token"] == 0


@pytest.mark.parametrize("bad", [(-1.0, 0, 0.5), (float("nan"), 0, 0.5), (1.0, -2, 0.5), (1.0, 2.5, 0.5),
                                 (1.0, 0, 1.5), (1.0, 0, -0.1), (1.0, 0, float("inf"))])
def test_bad_settings_get_a_message(bad):
    with pytest.raises(ConfigError):
        check_sampling(*bad, 31)


def test_seeded_draw_is_reproducible():
    assert uniforms(7, 5).tolist() == uniforms(7, 5).tolist()
    assert uniforms(7, 5).tolist() != uniforms(8, 5).tolist()
    assert uniforms(3, 1)[0] == np.random.default_rng(3).random()
    z = np.random.default_rng(0).normal(0, 1, 31)
    assert [next_token(z, 1.0, 0, 1.0, uniforms(s, 1)[0])["token"] for s in range(20)] == \
           [next_token(z, 1.0, 0, 1.0, uniforms(s, 1)[0])["token"] for s in range(20)]


def test_seeded_draw_follows_its_probabilities():
    """4000 seeds (deterministic): the counts of each token against p′ by Pearson's chi-square, 5 degrees of
    freedom; its 0.999 quantile is 20.5."""
    z = np.array([1.0, 0.5, 0.0, -0.5, 2.0, -3.0, 0.2])
    q = next_token(z, 1.0, 6, 1.0, 0.0)["renormalised"]
    n = 4000
    counts = np.bincount([draw(q, uniforms(s, 1)[0]) for s in range(n)], minlength=q.size)
    assert counts[q == 0].sum() == 0                              # a dropped token is never drawn
    live = q > 0
    chi2 = float(np.sum((counts[live] - n * q[live]) ** 2 / (n * q[live])))
    assert chi2 < 20.5, (counts, n * q)
