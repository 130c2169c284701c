"""Every known wrong version differs from the correct result, and its check tells them apart."""
import math

import numpy as np
import pytest

from attention_core import Config, run_forward, sinusoidal_encoding, softmax
from old_defaults import toy_config
from attention_core.pitfalls import (PITFALLS, PITFALLS_BY_KEY, PitfallResult, difference, naive_softmax,
                                     seed_001_encoding, small_attention)

CONFIGS = {
    "default": Config(),
    "heads-additive-causal-bias": Config(sentence="the cat sat on the mat", embedding="random", d_model=8,
                                         n_heads=2, score="additive", mask="causal", bias=True),
    "bilinear-padding-temperature": Config(sentence="we like the dog today", score="bilinear", mask="padding",
                                           padding=(1,), temperature=0.4, positional="learned"),
    "dot-index-wide": Config(sentence="i see you", embedding="random", d_model=10, positional="index",
                             score="dot", d_k=24, d_v=3),
}


@pytest.fixture(scope="module")
def results():
    out = {}
    for name, config in CONFIGS.items():
        for pitfall in PITFALLS:
            out[name, pitfall.key] = pitfall.compute(config)
    return out


@pytest.mark.parametrize("config_name", CONFIGS)
@pytest.mark.parametrize("key", [p.key for p in PITFALLS])
def test_wrong_differs_and_the_check_flags_it(results, config_name, key):
    r: PitfallResult = results[config_name, key]
    assert r.correct.shape == r.wrong.shape
    assert not np.array_equal(r.correct, r.wrong, equal_nan=True)
    assert r.difference > 1e-6
    assert r.check_passes_on_correct, r.check_detail
    assert r.check_flags_wrong, r.check_detail
    assert r.check_name and r.check_detail


def test_registry_in_order_with_sources():
    assert [p.key for p in PITFALLS] == ["softmax_axis", "no_scaling", "neg_inf_nan", "dropout_at_inference",
                                         "scores_times_v", "one_jacobian", "sqrt_len_q", "odd_pe_zero"]
    assert {p.key: p.seed_source for p in PITFALLS} == {
        "softmax_axis": "common", "no_scaling": "common", "neg_inf_nan": "common", "dropout_at_inference": "002",
        "scores_times_v": "001", "one_jacobian": "000", "sqrt_len_q": "000", "odd_pe_zero": "001"}
    assert PITFALLS_BY_KEY["one_jacobian"] is PITFALLS[5]


def test_a_trace_gives_the_same_result_as_its_config():
    config = CONFIGS["heads-additive-causal-bias"]
    trace = run_forward(config)
    for p in PITFALLS:
        a, b = p.compute(config), p.compute(trace)
        np.testing.assert_array_equal(a.correct, b.correct)
        np.testing.assert_array_equal(a.wrong, b.wrong)


def test_correct_sides_are_the_cores_numbers():
    config = CONFIGS["bilinear-padding-temperature"]
    trace = run_forward(config)
    np.testing.assert_allclose(PITFALLS_BY_KEY["softmax_axis"].compute(config).correct, trace["weights"].value,
                               atol=1e-15)
    np.testing.assert_allclose(PITFALLS_BY_KEY["scores_times_v"].compute(config).correct, trace["context"].value,
                               atol=1e-15)
    np.testing.assert_array_equal(PITFALLS_BY_KEY["dropout_at_inference"].compute(config).correct,
                                  trace["weights"].value)


def test_softmax_over_columns():
    trace = run_forward(CONFIGS["default"])
    r = PITFALLS_BY_KEY["softmax_axis"].compute(trace)
    np.testing.assert_allclose(r.wrong.sum(axis=0), 1.0, atol=1e-12)          # columns sum to 1 ...
    assert np.abs(r.wrong.sum(axis=1) - 1).max() > 0.01                      # ... rows do not
    np.testing.assert_allclose(r.correct.sum(axis=1), 1.0, atol=1e-12)


def test_no_scaling_saturates():
    r = PITFALLS_BY_KEY["no_scaling"].compute(CONFIGS["default"])
    assert (r.wrong.max(axis=1) > 0.99).mean() > (r.correct.max(axis=1) > 0.99).mean()
    assert r.correct.shape == (4, 4)


def test_fully_masked_row_naive_softmax_is_nan():
    r = PITFALLS_BY_KEY["neg_inf_nan"].compute(CONFIGS["default"])
    assert np.isnan(r.wrong[-1]).all() and not np.isnan(r.wrong[:-1]).any()
    np.testing.assert_array_equal(r.correct[-1], 0.0)
    assert r.difference == math.inf
    row = np.array([[-np.inf, -np.inf], [0.0, 1.0]])
    assert np.isnan(naive_softmax(row)[0]).all() and (softmax(row)[0] == 0).all()


def test_fully_masked_row_from_the_learners_mask():
    config = Config(sentence="i love you", mask="padding", padding=(0, 1, 2))
    r = PITFALLS_BY_KEY["neg_inf_nan"].compute(config)
    assert np.isnan(r.wrong).all() and (r.correct == 0).all()
    assert "your mask" in r.check_detail


def test_dropout_scales_survivors_and_zeroes_some():
    r = PITFALLS_BY_KEY["dropout_at_inference"].compute(CONFIGS["heads-additive-causal-bias"])
    kept = r.wrong != 0
    np.testing.assert_allclose(r.wrong[kept], r.correct[kept] / 0.9, rtol=1e-15)
    assert ((r.wrong == 0) & (r.correct != 0)).any()


def test_scores_times_v_is_the_seed_001_line():
    config = CONFIGS["default"]
    trace = run_forward(config)
    r = PITFALLS_BY_KEY["scores_times_v"].compute(trace)
    np.testing.assert_allclose(r.wrong, trace["scaled_scores"].value @ trace["v"].value, atol=1e-15)


def test_one_jacobian_gradient_against_torch_and_finite_differences():
    torch = pytest.importorskip("torch")
    trace = run_forward(CONFIGS["heads-additive-causal-bias"])
    model = small_attention(trace)
    w_q = torch.tensor(model.w_q, dtype=torch.float64, requires_grad=True)
    x, w_k, w_v, g = (torch.tensor(a, dtype=torch.float64) for a in (model.x, model.w_k, model.w_v, model.g))
    q, k, v = x @ w_q, x @ w_k, x @ w_v
    a = torch.softmax(q @ k.T / math.sqrt(q.shape[1]), dim=-1)
    (a @ v * g).sum().backward()
    r = PITFALLS_BY_KEY["one_jacobian"].compute(trace)
    np.testing.assert_allclose(r.correct, w_q.grad.numpy(), atol=1e-12)
    gap = np.abs(r.wrong - w_q.grad.numpy()).max()
    assert gap > 1e-3 * np.abs(r.correct).max()
    # the wrong version is exactly: every row uses the first column's Jacobian
    _, (qn, kn, vn, an) = model.forward()
    c = an[:, 0]
    d_s = (model.g @ vn.T) @ (np.diag(c) - np.outer(c, c))
    np.testing.assert_allclose(r.wrong, model.x.T @ (d_s @ kn) / math.sqrt(qn.shape[1]), atol=1e-12)


def test_sqrt_len_q_divides_by_n_times_d_k():
    config = CONFIGS["heads-additive-causal-bias"]
    trace = run_forward(config)
    r = PITFALLS_BY_KEY["sqrt_len_q"].compute(trace)
    q, k = trace["q_heads"].value, trace["k_heads"].value
    raw = q @ np.swapaxes(k, -1, -2)
    np.testing.assert_allclose(r.wrong, softmax(raw / math.sqrt(6 * 4)), atol=1e-15)
    np.testing.assert_allclose(r.correct, softmax(raw / 2.0), atol=1e-15)


def test_odd_width_last_column():
    r = PITFALLS_BY_KEY["odd_pe_zero"].compute(toy_config())                 # toy: 3-d, odd
    assert r.correct.shape == (4, 3)
    np.testing.assert_array_equal(r.wrong[:, 2], 0.0)
    np.testing.assert_allclose(r.correct, sinusoidal_encoding(4, 3), atol=1e-15)
    np.testing.assert_allclose(r.wrong[:, :2], r.correct[:, :2], atol=1e-15)
    even = PITFALLS_BY_KEY["odd_pe_zero"].compute(Config(embedding="random", d_model=8))
    assert even.correct.shape[1] == 9 and "even" in even.check_detail
    np.testing.assert_array_equal(seed_001_encoding(3, 5)[:, 4], 0.0)


def test_one_token_says_the_versions_coincide():
    r = PITFALLS_BY_KEY["softmax_axis"].compute(Config(sentence="love"))
    assert r.difference == 0 and "coincide" in r.check_detail


def test_difference_counts_nan_as_infinite():
    assert difference(np.array([1.0, 2.0]), np.array([1.0, 2.5])) == 0.5
    assert difference(np.array([0.0]), np.array([np.nan])) == math.inf
    assert difference(np.array([np.nan]), np.array([np.nan])) == 0.0
    assert difference(np.array([-np.inf]), np.array([-np.inf])) == 0.0
