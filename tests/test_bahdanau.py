"""Bahdanau additive attention: numpy step vs torch, the step-through Trace, the toy task."""
import math

import numpy as np
import pytest
import torch

from attention_core import bahdanau as b
from attention_core.math.limits import ConfigError

STEP_KEYS = ["s_prev", "h", "w", "u", "v", "w_s", "u_h", "pre_tanh", "hidden", "scores", "weights", "context"]


@pytest.mark.parametrize("d_s,d_h,d_a,n", [(1, 1, 1, 1), (2, 2, 20, 9), (3, 5, 4, 7), (20, 10, 100, 15), (4, 2, 8, 30)])
def test_numpy_matches_torch(d_s, d_h, d_a, n):
    rng = np.random.default_rng(d_s * 1000 + d_h * 100 + d_a + n)
    params = b.init_params(d_s, d_h, d_a, seed=n, scale=1.0)
    s_prev, h = rng.standard_normal(d_s), 2 * rng.standard_normal((n, d_h))
    diffs = b.compare_with_torch(s_prev, h, params)
    assert max(diffs.values()) < 1e-10, diffs


def test_many_decoder_steps_at_once_match_torch():
    """s_prev (T, d_s): every teacher-forced step in one call, numpy and torch."""
    rng = np.random.default_rng(3)
    params = b.init_params(3, 4, 6, seed=3, scale=0.7)
    s, h = rng.standard_normal((5, 3)), rng.standard_normal((8, 4))
    context, weights = b.additive_attention(s, h, params)
    assert context.shape == (5, 4) and weights.shape == (5, 8)
    with torch.no_grad():
        context_t, weights_t = b.torch_model(params)(torch.tensor(s), torch.tensor(h))
    np.testing.assert_allclose(context, context_t.numpy(), atol=1e-10)
    np.testing.assert_allclose(weights, weights_t.numpy(), atol=1e-10)
    for t in range(5):       # row t is the single-step computation
        np.testing.assert_allclose(weights[t], b.additive_attention(s[t], h, params)[1], atol=1e-15)


def test_step_trace_by_hand():
    """d_s = d_h = d_a = 1, W = 1, U = 2, v = 1, s = 0.5, inputs 0 and 1."""
    params = {"w": np.array([[1.0]]), "u": np.array([[2.0]]), "v": np.array([1.0])}
    t = b.step_trace(np.array([0.5]), np.array([[0.0], [1.0]]), params)
    assert t.keys() == STEP_KEYS
    np.testing.assert_allclose(t["w_s"].value, [0.5])
    np.testing.assert_allclose(t["u_h"].value, [[0.0], [2.0]])
    np.testing.assert_allclose(t["pre_tanh"].value, [[0.5], [2.5]])
    e = [math.tanh(0.5), math.tanh(2.5)]
    np.testing.assert_allclose(t["scores"].value, e, atol=1e-15)
    np.testing.assert_allclose(t["scores"].value, [0.46211715726, 0.98661429815], atol=1e-10)
    alpha_1 = math.exp(e[1]) / (math.exp(e[0]) + math.exp(e[1]))
    np.testing.assert_allclose(t["weights"].value, [1 - alpha_1, alpha_1], atol=1e-15)
    np.testing.assert_allclose(t["context"].value, [alpha_1], atol=1e-15)      # Σ α_j h_j with h = 0, 1
    assert t.tokens == ("[0]", "[1]") and t.facts["best"] == 1


def test_step_trace_consistent_and_labelled():
    rng = np.random.default_rng(0)
    params = b.init_params(2, 2, 20, seed=5, scale=0.5)
    x, y = b.toy_sequence(6, rng)
    t = b.step_trace(y[2], x, params)
    v = {k: t[k].value for k in t.keys()}
    np.testing.assert_allclose(v["pre_tanh"], v["w_s"][None] + v["u_h"])
    np.testing.assert_allclose(v["hidden"], np.tanh(v["pre_tanh"]))
    np.testing.assert_allclose(v["scores"], b.alignment_scores(y[2], x, **params))
    np.testing.assert_allclose(v["weights"].sum(), 1.0, atol=1e-15)
    np.testing.assert_allclose(v["context"], v["weights"] @ x)
    for step in t:
        assert step.formula and step.why and all(i in t for i in step.inputs), step.key
    assert t["h"].axes == ("n", "d_h") and t["scores"].axes == ("n",) and t["hidden"].shape == (7, 20)
    assert t.token_labels()[0] == "[0, 1]"


def test_step_trace_rejects_bad_shapes():
    with pytest.raises(ConfigError):
        b.step_trace(np.zeros(3), np.zeros((4, 2)), b.init_params(2, 2, 5))


def test_toy_sequence():
    x, y = b.toy_sequence(10, 4)
    assert x.shape == y.shape == (11, 2)
    np.testing.assert_array_equal(y[:, 0], np.arange(11))
    np.testing.assert_array_equal(y[:, 1], np.arange(1, 12))
    np.testing.assert_array_equal(x[0], [0, 1])
    np.testing.assert_array_equal(x[np.argsort(x[:, 0])], y)
    assert not np.array_equal(x, y)                     # shuffled (this seed)


def test_settings_are_validated():
    with pytest.raises(ConfigError, match="min_len"):
        b.ToySettings(min_len=10, max_len=5)
    with pytest.raises(ConfigError, match="lr"):
        b.ToySettings(lr=0.0)
    with pytest.raises(ConfigError, match="steps"):
        b.ToySettings(steps=10**9)
    with pytest.raises(ConfigError, match="momentum"):
        b.ToySettings(momentum=float("nan"))


def test_non_finite_loss_is_reported():
    model = b.make_model(b.ToySettings(steps=3))
    with torch.no_grad():
        model.v[0] = float("inf")
    with pytest.raises(ConfigError, match="diverged"):
        list(b.train(model, b.ToySettings(steps=3)))


@pytest.fixture(scope="module")
def trained():
    """The default settings with seed 0 (about 3-6 s on 2 cores)."""
    settings = b.ToySettings()
    model = b.make_model(settings)
    progress = list(b.train(model, settings))
    return model, progress


def test_training_yields_progress(trained):
    _, progress = trained
    assert [p.step for p in progress] == list(range(1, 1501))
    assert progress[-1].fraction == 1.0 and all(math.isfinite(p.loss) for p in progress)
    np.testing.assert_allclose(progress[0].lr, 5e-4)
    np.testing.assert_allclose(progress[-1].lr, 5e-4 * (1 - 0.9 * 1499 / 1500))
    first, last = np.mean([p.loss for p in progress[:50]]), np.mean([p.loss for p in progress[-50:]])
    assert last < 0.05 < first and last < first / 50     # measured: ~6.4 -> ~0.01


def test_trained_model_sorts_fresh_sequences(trained):
    model, _ = trained
    result = b.evaluate(model, n_sequences=200, seed=7)
    assert result.n_sequences == 200 and result.steps_total > 200 * 5
    assert result.share >= 0.9          # measured: 200/200 (seeds 0-15 of training all sort 100%)
    untrained = b.evaluate(b.make_model(), n_sequences=50, seed=7)
    assert untrained.n_sorted == 0      # the count is not trivially high


def test_sort_sequence_and_alignment(trained):
    model, _ = trained
    x, y = b.toy_sequence(12, 99)
    outputs, alignment = b.sort_sequence(model, x)
    assert outputs.shape == (12, 2) and alignment.shape == (12, 13)
    np.testing.assert_allclose(alignment.sum(axis=1), 1.0, atol=1e-12)
    assert np.all(alignment >= 0)
    np.testing.assert_array_equal(outputs, y[1:])
    # output i attends most to where its pair sits among the inputs
    where = [int(np.flatnonzero((x == target).all(axis=1))[0]) for target in y[1:]]
    assert alignment.argmax(axis=1).tolist() == where
    # the numpy params and the torch model give the same result
    outputs_np, alignment_np = b.sort_sequence(b.params_of(model), x)
    np.testing.assert_array_equal(outputs_np, outputs)
    np.testing.assert_allclose(alignment_np, alignment)


def test_trained_step_trace_finds_next_pair(trained):
    model, _ = trained
    x, y = b.toy_sequence(8, 1)
    t = b.step_trace(y[3], x, b.params_of(model))                  # previous output [3, 4]
    assert t.token_labels()[t.facts["best"]] == "[4, 5]"
    np.testing.assert_allclose(t["context"].value, [4, 5], atol=0.5)


def test_alignment_trace_and_bad_inputs(trained):
    model, _ = trained
    x, y = b.toy_sequence(6, 5)
    t = b.alignment_trace(model, x)
    assert t.keys() == ["inputs", "outputs", "alignment"]
    assert t["alignment"].axes == ("n_out", "n") and t["alignment"].shape == (6, 7)
    np.testing.assert_array_equal(t["outputs"].value, y[1:])
    assert t.facts["output_labels"][0] == "[1, 2]" and t.tokens[0] == "[0, 1]"
    for bad in (np.zeros((3, 3)), np.zeros((0, 2)), [[0, 1], [1, float("nan")]], [["a", "b"]], np.zeros((500, 2))):
        with pytest.raises(ConfigError):
            b.sort_sequence(model, bad)


# ---- counted from 0, as the rest of the app: h_0 … h_{n−1}, s_0 the start ------------------------------------

def test_step_trace_counts_inputs_from_0():
    """H = [h_0; …; h_{n−1}], sums over j = 0 … n−1, and facts['best'] is the 0-based row of H that the
    page names 'h_best' (the row the weights' argmax is on)."""
    params = b.init_params(2, 2, 20, seed=5, scale=0.5)
    x, y = b.toy_sequence(6, 3)
    t = b.step_trace(y[2], x, params)
    assert r"h_0 \\ \vdots \\ h_{n-1}" in t["h"].formula and "h_1" not in t["h"].formula
    assert r"\sum_{k=0}^{n-1}" in t["weights"].formula and r"\sum_{j=0}^{n-1}" in t["context"].formula
    best = t.facts["best"]
    assert t["weights"].value[best] == t["weights"].value.max() and t.tokens[best] == b.pair_label(x[best])
    # Σ_{j=0}^{n-1}: every row of H, the first (h_0 = the start [0, 1]) included
    np.testing.assert_allclose(t["context"].value, sum(t["weights"].value[j] * x[j] for j in range(len(x))))
    assert x[0].tolist() == [0.0, 1.0] and "tutorial 3" in t["scores"].why
    for s in t:
        assert "seed 00" not in f"{s.title} {s.formula} {s.why}".lower(), s.key


def test_alignment_trace_counts_states_from_s_0():
    """Output i = 1 … n−1 reads s_{i−1} (s_0 = h_0 = [0, 1], the start) and becomes s_i: the formula's
    indices are the code's."""
    params = b.init_params(2, 2, 8, seed=1, scale=0.5)
    x, _ = b.toy_sequence(5, 2)
    t = b.alignment_trace(params, x)
    assert t["inputs"].formula == r"h_0, \dots, h_{n-1}"
    assert t["outputs"].formula.startswith(r"s_i = \mathrm{round}(c_i)") and r"i = 1, \dots, n-1" in t["outputs"].formula
    assert r"s_{i-1} W + h_j U" in t["alignment"].formula and r"j = 0, \dots, n-1" in t["alignment"].formula
    outputs, alignment = t["outputs"].value, t["alignment"].value
    assert outputs.shape == (len(x) - 1, 2)                                      # s_1 … s_{n−1}
    states = np.vstack([x[:1], outputs])                                         # s_0 = h_0, s_1, …
    for i in range(1, len(x)):                                                   # row i − 1 is output i
        _, w = b.additive_attention(states[i - 1], x, params)
        np.testing.assert_allclose(alignment[i - 1], w, atol=1e-15)
        np.testing.assert_array_equal(outputs[i - 1], np.round(w @ x))


def test_learning_rate_schedule_as_stated():
    """lr_at is what train uses; the last sequence trains at (f + (1 − f)/steps)·lr, f·lr only after it."""
    s = b.ToySettings(steps=7, min_len=1, max_len=2, d_a=4)
    progress = list(b.train(b.make_model(s), s))
    assert [p.lr for p in progress] == [b.lr_at(k, s) for k in range(1, 8)]
    np.testing.assert_allclose(b.lr_at(7, s), (0.1 + 0.9 / 7) * s.lr, rtol=1e-15)
    np.testing.assert_allclose(b.lr_at(8, s), 0.1 * s.lr, rtol=1e-15)
    np.testing.assert_allclose(np.diff([p.lr for p in progress]), -0.9 * s.lr / 7, rtol=1e-12)
