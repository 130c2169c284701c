"""Every known wrong version differs from the correct result, and its check tells them apart."""
import math

import numpy as np
import pytest

from attention_core import Config, run_forward, sinusoidal_encoding, softmax
from old_defaults import toy_config
from attention_core.labs.pitfalls import (FROM_TUTORIALS, PITFALLS, PITFALLS_BY_KEY, PitfallResult, difference,
                                          naive_softmax, seed_001_encoding, small_attention, symbols)

TODAYS = ["alibi_no_step", "rope_pairing", "causal_upper_left", "window_w_plus_one", "latent_cache_x2"]
BLOCK = ["temperature_after_softmax", "unbiased_variance", "post_formula_pre_code", "fixed_offset"]

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
                                         "scores_times_v", "one_jacobian", "sqrt_len_q", "odd_pe_zero",
                                         "alibi_no_step", "rope_pairing", "causal_upper_left", "window_w_plus_one",
                                         "latent_cache_x2", *BLOCK]
    assert {p.key: p.seed_source for p in PITFALLS} == {
        "softmax_axis": "common", "no_scaling": "common", "neg_inf_nan": "common", "dropout_at_inference": "002",
        "scores_times_v": "001", "one_jacobian": "000", "sqrt_len_q": "000", "odd_pe_zero": "001",
        **{key: "common" for key in TODAYS + BLOCK}}
    assert PITFALLS_BY_KEY["one_jacobian"] is PITFALLS[5]
    # the learner reads the tutorial's number (docs/notation.md: 000 is tutorial 1, ...), never a seed file
    assert {p.key: p.source for p in PITFALLS} == {
        "softmax_axis": "a classic", "no_scaling": "a classic", "neg_inf_nan": "a classic",
        "dropout_at_inference": "from tutorial 3", "scores_times_v": "from tutorial 2", "one_jacobian": "from tutorial 1",
        "sqrt_len_q": "from tutorial 1", "odd_pe_zero": "from tutorial 2", **{key: "a classic" for key in TODAYS + BLOCK}}
    assert [p.key for p in FROM_TUTORIALS] == ["dropout_at_inference", "scores_times_v", "one_jacobian", "sqrt_len_q",
                                               "odd_pe_zero"]


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


# ---- the words say what the code does ------------------------------------------------------------------

@pytest.mark.parametrize("config_name", CONFIGS)
def test_softmax_axis_words_name_the_axes_the_code_uses(results, config_name):
    """The description says softmax(…, axis=−2) for the mistake and axis=−1 for the fix: the code's axes,
    also with heads (where axis 0 would be the head axis, and softmax over it something else again)."""
    config = CONFIGS[config_name]
    trace = run_forward(config)
    text = PITFALLS_BY_KEY["softmax_axis"].text(config)
    arg = symbols(config)["arg"]
    assert f"softmax({arg}, axis=−2)" in text and f"softmax({arg}, axis=−1)" in text
    logits, t = trace[trace.facts["softmax_input"]].value, config.temperature
    r = results[config_name, "softmax_axis"]
    np.testing.assert_array_equal(r.wrong, softmax(logits, axis=-2, temperature=t))
    np.testing.assert_array_equal(r.correct, softmax(logits, axis=-1, temperature=t))
    if config.n_heads > 1:      # "with heads, axis 0 is the head axis": softmax over axis 0 is another thing
        assert logits.ndim == 3 and not np.allclose(softmax(logits, axis=0, temperature=t), r.wrong)
        assert "axis 0 is the head axis" in text


@pytest.mark.parametrize("config_name", CONFIGS)
def test_descriptions_name_the_scores_the_code_reads(config_name):
    """S, Ŝ or S̃ and / T as docs/notation.md names them, from the settings: the symbol of the step the code reads."""
    config = CONFIGS[config_name]
    trace = run_forward(config)
    sym = symbols(config)
    assert sym == symbols(trace)                                        # the same from the Trace as from the Config
    name = {"scores": "S", "scaled_scores": "Ŝ", "masked_scores": "S̃"}[trace.facts["softmax_input"]]
    assert sym["arg"] == (name if config.temperature == 1 else f"{name} / {config.temperature:g}")
    # scores @ V reads the unmasked scores: Ŝ for the scaled dot product, S otherwise
    assert sym["scores"] == ("Ŝ" if "scaled_scores" in trace else "S")
    r = PITFALLS_BY_KEY["scores_times_v"].compute(trace)
    v = trace["v_heads" if config.n_heads > 1 else "v"].value
    np.testing.assert_allclose(r.wrong, trace["scaled_scores" if sym["scores"] == "Ŝ" else "scores"].value @ v,
                               atol=1e-12)
    text = PITFALLS_BY_KEY["scores_times_v"].text(config)
    assert f"{sym['scores']} V" in text and f"A = softmax({sym['arg']})" in text
    np.testing.assert_allclose(r.correct, trace["context"].value, atol=1e-12)


def test_softmax_axis_detail_numbers_are_the_column_sums():
    """'columns sum to 1 instead', with padding: a hidden key's column is all 0 and the detail says so."""
    config = CONFIGS["bilinear-padding-temperature"]
    r = PITFALLS_BY_KEY["softmax_axis"].compute(config)
    sums = r.wrong.sum(axis=0)
    np.testing.assert_array_equal(sums[1], 0.0)                          # key 1 is padding: no query sees it
    np.testing.assert_allclose(np.delete(sums, 1), 1.0, atol=1e-12)
    assert "the 1 key(s) no query may see keep a column of zeros" in r.check_detail
    assert "column of zeros" not in PITFALLS_BY_KEY["softmax_axis"].compute(CONFIGS["default"]).check_detail


def test_one_jacobian_detail_describes_the_layer_it_differentiates():
    """The detail says 'scaled dot product, head 0, no mask, no bias, T = 1': check each on a config that has
    none of these (dot scores, causal mask, bias, T ≠ 1, two heads): the gradient is that layer's."""
    torch = pytest.importorskip("torch")
    config = Config(sentence="the cat sat on the mat", embedding="random", d_model=8, n_heads=2, score="dot",
                    mask="causal", bias=True, temperature=0.5)
    trace = run_forward(config)
    r = PITFALLS_BY_KEY["one_jacobian"].compute(trace)
    assert "softmax(Q_0 K_0ᵀ/√d_k) V_0" in r.check_detail and "no mask, no bias, T = 1" in r.check_detail
    assert r.what == "∂L/∂W_Q (head 0's columns)"
    d_k = config.d_k
    w_q = torch.tensor(trace["w_q"].value[:, :d_k], requires_grad=True)
    x = torch.tensor(trace["x"].value)
    w_k, w_v = (torch.tensor(trace[k].value[:, :d]) for k, d in (("w_k", d_k), ("w_v", config.d_v)))
    g = torch.tensor(small_attention(trace).g)
    (torch.softmax((x @ w_q) @ (x @ w_k).T / math.sqrt(d_k), dim=-1) @ (x @ w_v) * g).sum().backward()
    np.testing.assert_allclose(r.correct, w_q.grad.numpy(), atol=1e-12)


def test_sqrt_len_q_names_its_weights_when_they_are_not_the_learners():
    plain = PITFALLS_BY_KEY["sqrt_len_q"].compute(CONFIGS["default"])
    assert plain.what == "attention weights"
    np.testing.assert_allclose(plain.correct, run_forward(CONFIGS["default"])["weights"].value, atol=1e-15)
    other = PITFALLS_BY_KEY["sqrt_len_q"].compute(CONFIGS["bilinear-padding-temperature"])
    assert other.what == "weights softmax(Q Kᵀ/√d_k) of your Q and K (no mask, T = 1)"
    assert not np.allclose(other.correct, run_forward(CONFIGS["bilinear-padding-temperature"])["weights"].value)


def _texts(r: PitfallResult) -> str:
    return " ".join((r.check_name, r.check_detail, r.what))


@pytest.mark.parametrize("config_name", CONFIGS)
def test_no_learner_visible_text_names_a_seed_file(results, config_name):
    """Learners read 'tutorial 3', never 'seed 002' (the sidebar's Seed is something else)."""
    for p in PITFALLS:
        text = " ".join((p.title, p.source, p.text(CONFIGS[config_name]), _texts(results[config_name, p.key])))
        assert "seed 00" not in text.lower() and "seed-00" not in text.lower(), (p.key, text)


# ---- the page --------------------------------------------------------------------------------------------

def _page_text(at) -> str:
    parts = [m.value for m in list(at.markdown) + list(at.caption)]
    parts += [str(o) for r in at.radio for o in r.options] + [m.label + " " + m.value for m in at.metric]
    return "\n".join(parts)


def test_pitfalls_page_counts_the_tutorials_pitfalls_from_the_data():
    from tests.apptest_util import no_exception, open_page
    at = open_page("app_pages/30_pitfalls.py")
    no_exception(at)
    intro = next(m.value for m in at.markdown if "mistakes appear" in m.value)
    assert f"Each of these {len(PITFALLS)} mistakes" in intro
    assert f"{len(FROM_TUTORIALS)} of them come from the tutorials" in intro and len(FROM_TUTORIALS) == 5
    assert "(tutorials 1, 2 and 3)" in intro
    options = at.radio(key="pitfall").options
    assert sum("(from tutorial " in o for o in options) == len(FROM_TUTORIALS)
    assert "Dropout left on at inference  (from tutorial 3)" in options
    assert sum("(a classic)" in o for o in options) == len(PITFALLS) - len(FROM_TUTORIALS)


@pytest.mark.parametrize("query", [{}, {"score": "dot", "mask": "causal", "temperature": "0.5", "n_heads": "2"},
                                   {"n_heads": "4", "n_kv_heads": "2", "positional": "rope"}])
def test_pitfalls_page_text_has_no_seed_file_and_describes_these_settings(query):
    from tests.apptest_util import no_exception, open_page
    at = open_page("app_pages/30_pitfalls.py", query=query)
    config = Config(**{k: float(v) if k == "temperature" else int(v) if k in ("n_heads", "n_kv_heads") else v
                       for k, v in query.items()})
    for p in PITFALLS:
        at.radio(key="pitfall").set_value(p.key).run()
        no_exception(at)
        text = _page_text(at)
        assert "seed 00" not in text.lower(), p.key
        assert p.text(config) in [m.value for m in at.markdown], p.key     # the description, for these settings
    at.radio(key="pitfall").set_value("softmax_axis").run()
    want = "softmax(S̃ / 0.5, axis=−1)" if "mask" in query else "softmax(Ŝ, axis=−1)"   # what these settings' softmax reads
    assert want in _page_text(at)


def test_nan_detail_names_the_queries_whose_row_is_nan():
    """'a NaN row for query 3 in each of the 2 heads': the detail names the rows the naive softmax fills with NaN."""
    r = PITFALLS_BY_KEY["neg_inf_nan"].compute(Config(mask="padding", padding=(1,), n_heads=2))
    nan_rows = np.isnan(r.wrong).any(axis=-1)                                # (heads, n)
    assert nan_rows[:, 3].all() and not nan_rows[:, :3].any()
    assert "a NaN row for query 3 in each of the 2 heads" in r.check_detail
    r = PITFALLS_BY_KEY["neg_inf_nan"].compute(Config(sentence="i love you", mask="padding", padding=(0, 1, 2)))
    assert np.isnan(r.wrong).all(axis=-1).all() and "a NaN row for queries 0, 1, 2," in r.check_detail


# ---- today's attention: each right side against torch or the paper, each wrong side as the mistake writes it ----

def _heads(trace, name):
    return trace[f"{name}_heads"].value if trace.facts["n_heads"] > 1 else trace[name].value[None]


def _sdpa_weights(torch, q, k, **kwargs):
    """torch's SDPA weights: the output for V = I (one row per key)."""
    T = lambda a: torch.tensor(np.asarray(a), dtype=torch.float64)
    eye = torch.eye(k.shape[-2], dtype=torch.float64).expand(*k.shape[:-2], -1, -1)
    return torch.nn.functional.scaled_dot_product_attention(T(q), T(k), eye, **kwargs).numpy()


@pytest.mark.parametrize("config, n_alibi", [(Config(), 12), (Config(n_heads=2), 12), (Config(n_heads=3), 12),
                                             (Config(embedding="random", d_model=12, d_k=2, n_heads=6), 6),
                                             (Config(embedding="random", d_model=12, d_k=2, n_heads=12), 12)])
def test_alibi_without_step_against_the_paper_and_torch(config, n_alibi):
    torch = pytest.importorskip("torch")
    from attention_core.math.alibi import alibi_slopes
    from attention_core.labs.pitfalls import alibi_slopes_without_step
    assert alibi_slopes_without_step(12).tolist() == [2.0 ** -e for e in (1, 2, 3, 4, 5, 6, 7, 8, 0.5, 1, 1.5, 2)]
    np.testing.assert_allclose(alibi_slopes(12)[8:], 2.0 ** -np.array([0.5, 1.5, 2.5, 3.5]), rtol=1e-15)  # the paper's
    for h in (1, 2, 4, 8, 16):                                           # powers of two: the mistake changes nothing
        np.testing.assert_array_equal(alibi_slopes_without_step(h), alibi_slopes(h))
    trace = run_forward(config)
    r = PITFALLS_BY_KEY["alibi_no_step"].compute(trace)
    assert r.correct.shape == (n_alibi, trace.n) and r.axes == ("ALiBi head h", "n_k")
    q, k = _heads(trace, "q"), _heads(trace, "k")
    which = np.arange(n_alibi) % config.n_heads
    n = trace.n
    distance = (n - 1) - np.arange(n)
    for slopes, got in ((alibi_slopes(n_alibi), r.correct), (alibi_slopes_without_step(n_alibi), r.wrong)):
        bias = torch.tensor(-slopes[:, None, None] * distance[None, None, :])        # (H, 1, n): float attn_mask
        want = _sdpa_weights(torch, q[which, -1:], k[which], attn_mask=bias)[:, 0]
        np.testing.assert_allclose(got, want, atol=1e-12)
    c = 2 ** int(math.log2(n_alibi))
    np.testing.assert_allclose(r.correct[:c + 1], r.wrong[:c + 1], atol=0)   # heads 0 … c agree, c + 1 on differ
    assert np.abs(r.correct[c + 1] - r.wrong[c + 1]).max() > 0
    assert f"{'your H = ' + str(n_alibi) if n_alibi == config.n_heads else 'H = 12 ALiBi heads'}" in r.check_detail


@pytest.mark.parametrize("config", [Config(), CONFIGS["heads-additive-causal-bias"], CONFIGS["dot-index-wide"]])
def test_rope_pairing_right_is_metas_model_and_wrong_is_still_relative(config):
    torch = pytest.importorskip("torch")
    from attention_core.math.rope import half_permutation, rotary_embedding
    trace = run_forward(config)
    r = PITFALLS_BY_KEY["rope_pairing"].compute(trace)
    q, k = _heads(trace, "q")[0], _heads(trace, "k")[0]
    n, d = q.shape
    # the original model: Meta's complex form, interleaved pairs, in torch
    freqs = 1.0 / (10000.0 ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
    angles = torch.outer(torch.arange(n, dtype=torch.float64), freqs)
    cis = torch.polar(torch.ones_like(angles), angles)
    rot = lambda a: torch.view_as_real(torch.view_as_complex(torch.tensor(a).reshape(n, -1, 2)) * cis).flatten(-2)
    original = (rot(q) @ rot(k).T / math.sqrt(d)).numpy()
    np.testing.assert_allclose(r.correct, original, atol=1e-12)
    perm = half_permutation(d)
    np.testing.assert_allclose(r.wrong, rotary_embedding(q[:, perm]) @ rotary_embedding(k[:, perm]).T / math.sqrt(d),
                               atol=1e-15)
    assert np.abs(r.wrong - original).max() > 1e-3
    # "both are still functions of i − j only": the wrong rotation is a RoPE too
    a, b = np.random.default_rng(0).standard_normal((2, d))
    rq, rk = rotary_embedding(np.tile(a[perm], (n + 3, 1))), rotary_embedding(np.tile(b[perm], (n + 3, 1)))
    scores = rq @ rk.T
    for offset in range(-2, 3):
        diagonal = np.diagonal(scores, offset)
        np.testing.assert_allclose(diagonal, diagonal[0], atol=1e-12)


@pytest.mark.parametrize("config", [Config(), CONFIGS["heads-additive-causal-bias"]])
def test_is_causal_upper_left_is_torchs_and_lower_right_is_decoding(config):
    torch = pytest.importorskip("torch")
    from torch.nn.attention.bias import causal_lower_right
    trace = run_forward(config)
    r = PITFALLS_BY_KEY["causal_upper_left"].compute(trace)
    q, k = _heads(trace, "q"), _heads(trace, "k")
    n = trace.n
    squeeze = (lambda a: a[:, 0]) if config.n_heads > 1 else (lambda a: a[0, 0])
    np.testing.assert_allclose(r.wrong, squeeze(_sdpa_weights(torch, q[:, -1:], k, is_causal=True)), atol=1e-12)
    np.testing.assert_allclose(r.correct, squeeze(_sdpa_weights(torch, q[:, -1:], k,
                                                                attn_mask=causal_lower_right(1, n))), atol=1e-12)
    full = _sdpa_weights(torch, q, k, is_causal=True)[:, -1]                 # the full causal pass's last row
    np.testing.assert_allclose(r.correct, full if config.n_heads > 1 else full[0], atol=1e-12)
    np.testing.assert_array_equal(r.wrong[..., 0], 1.0)                     # key 0 only


@pytest.mark.parametrize("config", [Config(), CONFIGS["heads-additive-causal-bias"], CONFIGS["dot-index-wide"]])
def test_window_w_plus_one_against_torch_masks(config):
    torch = pytest.importorskip("torch")
    trace = run_forward(config)
    r = PITFALLS_BY_KEY["window_w_plus_one"].compute(trace)
    q, k = _heads(trace, "q"), _heads(trace, "k")
    n, w = trace.n, max(1, trace.n // 2)
    i, j = torch.arange(n)[:, None], torch.arange(n)[None, :]
    squeeze = (lambda a: a) if config.n_heads > 1 else (lambda a: a[0])
    np.testing.assert_allclose(r.correct, squeeze(_sdpa_weights(torch, q, k, attn_mask=(i - j >= 0) & (i - j < w))),
                               atol=1e-12)
    np.testing.assert_allclose(r.wrong, squeeze(_sdpa_weights(torch, q, k, attn_mask=(i - j >= 0) & (i - j <= w))),
                               atol=1e-12)
    assert ((r.correct > 0).sum(-1) <= w).all() and ((r.wrong > 0).sum(-1) == w + 1).any()


def test_latent_cache_is_the_papers_d_c_plus_d_r_times_layers():
    from attention_core.labs.pitfalls import latent_cache_bytes_per_token
    # DeepSeek-V2's Table 1: MLA caches (d_c + d_h^R)·l elements per token; DeepSeek-V3: d_c = 512, d_h^R = 64, l = 61
    assert latent_cache_bytes_per_token(61, 512, 64, 1) == (512 + 64) * 61 == 35_136
    config = CONFIGS["heads-additive-causal-bias"]
    r = PITFALLS_BY_KEY["latent_cache_x2"].compute(config)
    n = run_forward(config).n
    np.testing.assert_allclose(r.correct, np.arange(1, n + 1) * 35_136 * 2 / 1024)    # KiB in BF16
    np.testing.assert_allclose(r.wrong, 2 * r.correct)
    assert "= 70,272 bytes = 68.6 KiB" in r.check_detail and "8.58 GiB, not 17.16 GiB" in r.check_detail


# ---- grouped key/value heads: every pitfall computes, and its correct side is the forward pass's where it says so ----

GQA_CONFIGS = [Config(sentence="the cat sat on the mat", embedding="random", weights="random", d_model=8,
                      n_heads=h, n_kv_heads=h_kv, positional=positional)
               for h, h_kv in ((4, 2), (6, 3), (4, 1)) for positional in ("sinusoidal", "rope", "alibi")]


@pytest.mark.parametrize("config", GQA_CONFIGS, ids=lambda c: f"H{c.n_heads}-Hkv{c.n_kv_heads}-{c.positional}")
def test_every_pitfall_computes_under_grouped_kv_heads_and_its_correct_side_is_the_forward_passs(config):
    """The old lab crashed under 1 < H_kv < H (K and V have H_kv heads, the queries H): W + 1 window, scores @ V,
    √(n·d_k) and ALiBi without [0::2]. Query head h must read KV head ⌊h/g⌋, as the forward pass does."""
    trace = run_forward(config)
    n, h = trace.n, config.n_heads
    weights, context = trace["weights"].value, trace["context"].value                     # (H, n, n), (H, n, d_v)
    r = {p.key: p.compute(trace) for p in PITFALLS}                                      # no exception
    for key, res in r.items():
        assert res.correct.shape == res.wrong.shape and res.check_passes_on_correct and res.check_flags_wrong, key
        assert np.isfinite(res.difference) or key == "neg_inf_nan", key
    np.testing.assert_allclose(r["softmax_axis"].correct, weights, atol=1e-15)
    np.testing.assert_array_equal(r["dropout_at_inference"].correct, weights)
    np.testing.assert_allclose(r["scores_times_v"].correct, context, atol=1e-12)         # C = A V, V of head ⌊h/g⌋
    np.testing.assert_allclose(r["neg_inf_nan"].correct[:, :-1], weights[:, :-1], atol=1e-15)   # but the hidden row
    assert (r["sqrt_len_q"].what == "attention weights") == (config.positional != "alibi")
    if config.positional != "alibi":                                                    # "attention weights": yours
        np.testing.assert_allclose(r["sqrt_len_q"].correct, weights, atol=1e-12)
        w = n // 2                                                                       # the window the pitfall cuts
        windowed = run_forward(config.replace(mask="sliding_window", window=w))["weights"].value
        np.testing.assert_allclose(r["window_w_plus_one"].correct, windowed, atol=1e-12)
        assert r["window_w_plus_one"].what.endswith(f"with a sliding window of W = {w} keys")
        causal = run_forward(config.replace(mask="causal"))["weights"].value[:, -1]      # the full pass's last row
        np.testing.assert_allclose(r["causal_upper_left"].correct, causal, atol=1e-12)
    elif h == 6:                                                                         # the learner's own 6 ALiBi heads
        causal = run_forward(config.replace(mask="causal"))["weights"].value[:, -1]
        np.testing.assert_allclose(r["alibi_no_step"].correct, causal, atol=1e-12)
    kv = "K^R_⌊h/g⌋" if config.positional == "rope" else "K_⌊h/g⌋"
    assert kv in r["window_w_plus_one"].what


def test_a_window_of_one_key_says_one_key():
    r = PITFALLS_BY_KEY["window_w_plus_one"].compute(Config(sentence="i love", embedding="random", weights="random"))
    assert "W = 1 key," in r.check_name and r.what.endswith("with a sliding window of W = 1 key")
    assert "1 keys" not in " ".join((r.check_name, r.check_detail, r.what))


def test_under_alibi_the_descriptions_name_the_biased_scores_softmax_reads():
    for config, arg in ((Config(positional="alibi"), "Ŝ + B"), (Config(positional="alibi", temperature=0.5),
                                                                 "(Ŝ + B) / 0.5"),
                        (Config(positional="alibi", mask="causal"), "S̃")):
        assert symbols(config)["arg"] == arg == symbols(run_forward(config))["arg"]
        assert f"softmax({arg}, axis=−1)" in PITFALLS_BY_KEY["softmax_axis"].text(config)
