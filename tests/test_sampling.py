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


# ---- the edges (issue 30, item 4): every T the page and its link accept, top-p's ties and boundaries ----------
import warnings
from fractions import Fraction

from hypothesis import given, settings, strategies as st

from attention_core.math.sampling import TOP_P_TOLERANCE, scaled, top_p_order

SMALLEST_T = 5e-324                       # the smallest positive float64: "?next_token.temperature=5e-324" is read
LARGEST_T = 3.0                           # the slider's and the link's largest T
EDGE_TS = [1e-308, 1e-300, 1e-12, SMALLEST_T, LARGEST_T]


def _strict():
    """No warning of any kind, and numpy raises on overflow, 0/0 and x/0 (underflow to 0 is the right answer)."""
    ctx = warnings.catch_warnings()
    ctx.__enter__()
    warnings.simplefilter("error")
    return ctx, np.errstate(over="raise", invalid="raise", divide="raise")


@pytest.mark.parametrize("T", EDGE_TS)
def test_tiny_and_largest_temperatures_against_the_closed_form_and_torch(T):
    """z = T·w, so (z − max z) / T = w − max w exactly on this grid: softmax(w) in closed form, and torch, which
    divides first (z / T = w, no overflow here), agrees."""
    w = np.array([1.0, 0.0, -1.0, -3.0])
    z = T * w
    assert np.array_equal((z - z.max()) / T, w - 1.0) or T == LARGEST_T
    e = np.exp(w - 1.0)
    want = e / e.sum()                                      # e^0, e^-1, e^-2, e^-4 over their sum
    ctx, err = _strict()
    with err:
        got = softmax_t(z, T)
        stages = next_token(z, T, 0, 1.0, 0.5)
    ctx.__exit__(None, None, None)
    assert np.max(np.abs(got - want)) < 1e-15
    assert np.max(np.abs(got - torch.softmax(torch.tensor(z) / T, -1).numpy())) < 1e-15
    assert np.all(np.isfinite(stages["scaled"])) and np.all(np.isfinite(stages["renormalised"]))


@pytest.mark.parametrize("T", [0.0, *EDGE_TS])
@pytest.mark.parametrize("seed", range(4))
def test_model_sized_logits_at_every_edge_temperature_give_the_argmax_exactly(T, seed):
    """Logits of the size the model gives (|z| ~ 1): below T ~ 1e-3 every gap is more than 745·T, so p is exactly
    one-hot on the argmax, never NaN, for any draw u. Torch, dividing first, gives NaN at 1e-308 (the bug that was)."""
    z = np.random.default_rng(seed).normal(0, 1, 31)
    ctx, err = _strict()
    with err:
        runs = [next_token(z, T, k, p, u) for u in (0.0, 0.37, 0.999999) for k, p in ((0, 1.0), (10, 0.9), (31, 0.0))]
    ctx.__exit__(None, None, None)
    top = int(np.argmax(z))
    for got in runs:
        assert not np.any(np.isnan(got["scaled"])) and not np.any(np.isnan(got["probs"]))
        if T != LARGEST_T:
            assert got["probs"].tolist() == [float(j == top) for j in range(31)]
            assert got["token"] == top and got["renormalised"][top] == 1.0
        assert got["scaled"][top] == (0.0 if T else z[top]) and (T == 0 or got["scaled"].max() == 0)
    if T == 1e-308:                                         # z / T first overflows once some |z_j| ≥ 1.8: ∞ − ∞
        assert torch.isnan(torch.softmax(torch.tensor([2.0, 1.0, 0.0], dtype=torch.float64) / T, -1)).all()
        assert next_token(np.array([2.0, 1.0, 0.0]), T, 0, 1.0, 0.9)["probs"].tolist() == [1.0, 0.0, 0.0]
    if T == LARGEST_T:
        assert np.max(np.abs(runs[0]["probs"] - torch.softmax(torch.tensor(z) / T, -1).numpy())) < 1e-15


@pytest.mark.parametrize("T", [1e-308, 1e-300, 1e-12, SMALLEST_T])
def test_ties_at_the_top_share_equally_for_every_t_above_0_and_t_0_takes_the_first(T):
    z = np.array([1.0, 3.0, 3.0, -2.0])
    assert softmax_t(z, T).tolist() == [0.0, 0.5, 0.5, 0.0]            # the limit T → 0+: 1 / (number tied)
    assert softmax_t(z, 0.0).tolist() == [0.0, 1.0, 0.0, 0.0]          # greedy: np.argmax's first
    assert scaled(z, T)[1] == scaled(z, T)[2] == 0.0


def test_the_shift_keeps_the_quotients_float64_can_hold_and_says_minus_infinity_below():
    assert scaled(np.array([1.0, 0.0, -1.0]), 1e-308).tolist() == [0.0, -1e308, -math.inf]
    assert scaled(np.array([0.0, -SMALLEST_T, -1.0]), SMALLEST_T).tolist() == [0.0, -1.0, -math.inf]
    assert scaled(np.array([2.0, -1.0]), 3.0).tolist() == [0.0, -1.0]


@settings(max_examples=300, deadline=None)
@given(st.floats(min_value=0.0, max_value=LARGEST_T, allow_subnormal=True),
       st.lists(st.floats(min_value=-60, max_value=60), min_size=1, max_size=40))
def test_softmax_t_is_a_distribution_for_every_t_the_link_accepts(T, zs):
    z = np.array(zs)
    ctx, err = _strict()
    with err:
        p = softmax_t(z, T)
    ctx.__exit__(None, None, None)
    assert np.all(np.isfinite(p)) and np.all(p >= 0) and abs(p.sum() - 1) < 1e-12
    assert p[int(np.argmax(z))] == p.max()
    if T:
        with np.errstate(over="ignore"):                    # the reference's own −∞ below float64's range
            x = (z - z.max()) / T if T < 1e-3 else z / T
        want = torch.softmax(torch.tensor(x), -1).numpy()
        assert np.max(np.abs(p - want)) < 1e-12


# top-p: the rule (tokens by descending p, ties by the lower token number; keep the shortest prefix whose mass, summed
# exactly, reaches p − 1e-12; at least one; p = 1 all) against its definition, hand cases and Hugging Face


def _hf_top_p_probs(probs, top_p):
    """Hugging Face's TopPLogitsWarper.__call__ after its softmax (transformers, src/transformers/generation/
    logits_process.py at huggingface/transformers@00857b6): ascending torch.sort, cumsum, remove while
    ≤ 1 − top_p, never the last (min_tokens_to_keep = 1)."""
    sorted_probs, sorted_indices = torch.sort(torch.tensor(probs, dtype=torch.float64), descending=False)
    remove = sorted_probs.cumsum(dim=-1) <= (1 - top_p)
    remove[..., -1:] = 0
    return ~remove.scatter(-1, sorted_indices, remove)


def test_top_p_hand_cases_ties_and_the_exact_boundary():
    assert top_p_keep(np.full(4, 0.25), 0.5).tolist() == [True, True, False, False]     # 0.25 + 0.25 reaches 0.5
    assert top_p_keep(np.full(4, 0.25), 0.51).tolist() == [True, True, True, False]
    assert top_p_keep(np.full(4, 0.25), 0.0).tolist() == [True, False, False, False]    # the first of the tie
    assert 0.5 + 0.3 == 0.8 and Fraction(0.5) + Fraction(0.3) != Fraction(8, 10)        # exact in float64, not in ℚ
    assert top_p_keep(np.array([0.5, 0.3, 0.2]), 0.8).tolist() == [True, True, False]   # the stated rule: 2 tokens
    assert top_p_keep(np.array([0.2, 0.3, 0.5]), 0.8).tolist() == [False, True, True]
    assert top_p_keep(np.array([0.5, 0.3, 0.2]), 0.8 + 2e-12).tolist() == [True, True, True]
    assert top_p_keep(np.array([0.5, 0.3, 0.2]), 0.8 + 0.5e-12).tolist() == [True, True, False]   # within 1e-12
    # Hugging Face's arithmetic on the same cases: the tie's higher numbers, and all 3 (1 − 0.8 = 0.19999999999999996)
    assert _hf_top_p_probs([0.25] * 4, 0.5).tolist() == [False, False, True, True]
    assert _hf_top_p_probs([0.5, 0.3, 0.2], 0.8).tolist() == [True, True, True]
    assert top_p_order(np.array([0.1, 0.4, 0.1, 0.4])).tolist() == [1, 3, 0, 2]


def _tied_probs(draw_ints):
    counts = np.array(draw_ints, dtype=np.float64)
    return counts / counts.sum()


@settings(max_examples=400, deadline=None)
@given(st.lists(st.integers(0, 6), min_size=1, max_size=31).filter(lambda c: sum(c) > 0),
       st.floats(0.0, 1.0))
def test_top_p_is_the_shortest_prefix_of_the_stable_order_that_reaches_p(counts, p):
    """The definition, property by property (ties are common: few distinct values)."""
    probs = _tied_probs(counts)
    keep = top_p_keep(probs, p)
    order = top_p_order(probs)
    assert [int(i) for i in order] == sorted(range(probs.size), key=lambda i: (-probs[i], i))
    r = int(keep.sum())
    assert r >= 1 and keep[order[:r]].all() and not keep[order[r:]].any()                # a prefix, never empty
    if p >= 1:
        assert r == probs.size
        return
    mass = lambda n: math.fsum(float(x) for x in probs[order[:n]])
    assert mass(r) >= p - TOP_P_TOLERANCE or r == probs.size                              # it reaches p
    assert r == 1 or mass(r - 1) < p - TOP_P_TOLERANCE                                    # one fewer does not
    for j in range(probs.size):                                                           # the per-token rule
        ahead = math.fsum(float(probs[i]) for i in order[:list(order).index(j)])
        assert keep[j] == (j == order[0] or ahead < p - TOP_P_TOLERANCE)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 4), max_size=15), st.integers(0, 127))
def test_top_p_keeps_as_many_as_hugging_face_on_exact_tied_inputs(counts, p128):
    """Sixty-fourths (the last token takes what is left) and p on a 1/128 grid: every sum is exact, so Hugging Face's
    `≤ 1 − p` from the bottom and this rule from the top agree on how many tokens stay, boundaries included; on ties
    they may differ in which (Hugging Face's is torch.sort's order, here the lower numbers first), never in the
    probabilities kept."""
    probs = np.array([*counts, 64 - sum(counts)], dtype=np.float64) / 64
    p = p128 / 128
    ours, hf = top_p_keep(probs, p), _hf_top_p_probs(probs, p).numpy()
    assert ours.sum() == hf.sum()
    assert sorted(probs[ours]) == sorted(probs[hf])


@pytest.mark.parametrize("seed", range(40))
def test_top_p_is_hugging_face_s_on_random_logits_away_from_boundaries(seed):
    rng = np.random.default_rng(1000 + seed)
    z = rng.normal(0, rng.uniform(0.5, 4), 31)
    for p in (0.05, 0.3, 0.5, 0.8, 0.9, 0.95, 0.99, float(rng.uniform())):
        probs = softmax_t(z, 1.0)
        masses = np.cumsum(np.sort(probs)[::-1])
        if np.min(np.abs(masses - p)) < 1e-9:                                            # a boundary: not here
            continue
        assert top_p_keep(probs, p).tolist() == _hf_top_p(torch.tensor(z), p).tolist()
