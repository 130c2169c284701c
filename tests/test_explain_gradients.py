"""explain() on the classifier's trace: every forward and gradient step, recomputed from its terms,
equals the stored cell; one gradient cell checked by hand."""
from __future__ import annotations

import math
import re
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from attention_core import classifier as clf
from attention_core.training.training_input import TrainingSettings
from attention_core.explanations import EXPLAINERS, can_explain, explain, fmt, trace_kind
from tests.test_explain import balanced

GRADIENT_KEYS = ("dL/dpooled", "dL/df", "dL/dw_o", "dL/db_o", "dL/dcontext", "dL/dweights", "dL/dv",
                 "dweights/dscores", "dL/dscores", "dL/dq", "dL/dk", "dL/dw_q", "dL/db_q", "dL/dw_k", "dL/db_k",
                 "dL/dw_v", "dL/db_v", "dL/dx")
FORWARD_KEYS = ("x", *clf.PARAM_NAMES, "q", "k", "v", "scores", "weights", "context", "f", "pooled", "p", "y", "loss")
LEAVES = ("x", *clf.PARAM_NAMES)                    # nothing in the trace computes them: read back
SOFTMAXES = ("weights", "p")                        # their denominator is shown twice (exponents, then values)
MAX_CELLS = 60                                      # a bigger step is checked at this many random cells


def tolerance(trace, key) -> float:
    """Absolute slack: 1e-12 of the step's scale, or of the gradient it is made from. ∂L/∂b_k is 0 in
    exact arithmetic: its cells are rounding noise (1e-18), summed in another order here than by numpy."""
    step = trace[key]
    scale = max([float(np.abs(step.value).max())] +
                [float(np.abs(trace[i].value).max()) for i in step.inputs if i.startswith("dL/")])
    return 1e-12 * scale


def hand_problem(n, d_in, d_k, d_v, seed):
    """Random params (biases too, so every path carries signal), x and y, as tests/test_classifier.py."""
    rng = np.random.default_rng([seed, n, d_in, d_k, d_v])
    params = {name: 0.5 * rng.standard_normal(value.shape)
              for name, value in clf.init_params(d_in, d_k, d_v, seed).items()}
    return params, rng.standard_normal((n, d_in)), int(rng.integers(3)), None


def full_trace(params, x, y, tokens=None, settings=None):
    _, trace = clf.forward(params, x, y, tokens, settings)
    clf.backward(params, x, y, trace)
    return trace


def check_cell(trace, key, cell, precision=3):
    step = trace[key]
    e = explain(trace, key, cell, precision=precision)
    stored = float(step.value[cell])
    assert np.isclose(e.value, stored, rtol=1e-9, atol=tolerance(trace, key)), (key, cell, e.value, stored, e.text)
    assert e.key == key and e.cell == cell
    assert e.independent == (key not in LEAVES or (key == "x" and cell[1] == trace["x"].shape[1] - 1
                                                   and trace.facts["settings"].positional == "index"
                                                   and np.array_equal(trace["x"].value[:, -1],
                                                                      np.arange(trace.n)))), key
    for latex in (e.symbolic, e.substituted, e.result, e.latex):
        assert balanced(latex), (key, latex)
    assert e.text.count("\n") == 2, e.text
    gaps = [int(k) for k in re.findall(r"\\text\{(\d+) more\}", e.substituted)]
    gaps_text = [int(k) for k in re.findall(r"… (\d+) more …", e.text)]
    if key in SOFTMAXES:
        assert set(gaps) == set(gaps_text) == ({e.n_elided} if e.n_elided else set())
    else:
        assert sum(gaps) == e.n_elided == sum(gaps_text), (key, e.substituted)
    if key != "dL/dx" and e.n_terms > 7:            # ∂L/∂X elides each of its three sums on its own
        assert e.n_elided >= e.n_terms - 6
    return e


def cells(shape, rng):
    size = int(np.prod(shape))
    if size <= MAX_CELLS * 3:
        return list(np.ndindex(*shape))
    return [tuple(int(i) for i in np.unravel_index(f, shape)) for f in rng.choice(size, MAX_CELLS, replace=False)]


# ---- configurations: hand-made inputs, and sentences of the shipped dataset ----------------------------

HAND_SIZES = [(1, 3, 2, 2, 0), (2, 1, 1, 1, 1), (3, 4, 2, 3, 2), (4, 5, 3, 2, 3), (8, 9, 4, 7, 4)]
# (sentence row, positional, d_k, d_v, seed, SGD steps taken first)
DATASET_RUNS = [(0, "index", 16, 16, 0, 0), (1, "sinusoidal", 4, 3, 1, 0), (4, "none", 1, 5, 2, 3),
                (3, "index", 7, 2, 3, 2)]


@pytest.fixture(scope="module")
def dataset_traces():
    glove = pytest.importorskip("attention_core.math.embeddings").glove_vocabulary
    try:
        vocab = glove()
    except ImportError:
        pytest.skip("the GloVe vectors are not installed")
    examples = clf.load_dataset()
    traces = {}
    for row, positional, d_k, d_v, seed, steps in DATASET_RUNS:
        tokens, x = clf.sentence_matrix(examples[row].text, vocab, positional)
        y = examples[row].label
        params = clf.init_params(x.shape[1], d_k, d_v, seed)
        for _ in range(steps):                       # a few SGD steps: non-zero biases, a less uniform A
            params = clf.sgd_step(params, clf.backward(params, x, y), 0.5)
        traces[(row, positional, d_k, d_v, seed, steps)] = full_trace(params, x, y, tokens,
                                                                      TrainingSettings(positional=positional))
    return traces


def test_every_step_of_the_trace_has_a_classifier_explainer():
    params, x, y, _ = hand_problem(3, 4, 2, 3, 0)
    trace = full_trace(params, x, y)
    assert trace_kind(trace) == "classifier"
    assert set(trace.keys()) == set(FORWARD_KEYS) | set(GRADIENT_KEYS)
    for key in trace.keys():
        assert can_explain(trace, key), key
        assert ("classifier", key) in EXPLAINERS, key
    _, forward_only = clf.forward(params, x, y)        # before backward(): the forward steps alone
    assert all(can_explain(forward_only, key) for key in forward_only.keys())


@pytest.mark.parametrize("sizes", HAND_SIZES, ids=str)
def test_every_cell_recomputed_hand_inputs(sizes):
    params, x, y, tokens = hand_problem(*sizes)
    trace = full_trace(params, x, y, tokens)
    rng = np.random.default_rng(sizes[-1])
    for step in trace:
        for cell in cells(step.shape, rng):
            check_cell(trace, step.key, cell)


@pytest.mark.parametrize("run", DATASET_RUNS, ids=str)
def test_every_step_recomputed_dataset_sentences(dataset_traces, run):
    trace = dataset_traces[run]
    rng = np.random.default_rng(run[4])
    for step in trace:
        picked = cells(step.shape, rng)
        for cell in picked:
            check_cell(trace, step.key, cell, precision=int(rng.integers(1, 6)))
    # seed 000's index column is regenerated (the position), the embedding columns are read back
    if run[1] == "index":
        last = trace["x"].shape[1] - 1
        e = explain(trace, "x", (2, last))
        assert e.value == 2.0 and e.independent and "position" in e.note
        assert not explain(trace, "x", (2, 0)).independent
    # 51 inputs: the sum over d_in is elided, with its count
    if trace["x"].shape[1] > 7:
        e = explain(trace, "q", (0, 0))
        d_in = trace["x"].shape[1]
        assert (e.n_terms, e.n_elided) == (d_in, d_in - 5)
        assert rf"\underbrace{{\cdots}}_{{\text{{{d_in - 5} more}}}}" in e.substituted


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(1, 9), d_in=st.integers(1, 9), d_k=st.integers(1, 9), d_v=st.integers(1, 9),
       seed=st.integers(0, 10), data=st.data())
def test_random_cells_of_random_problems(n, d_in, d_k, d_v, seed, data):
    params, x, y, _ = hand_problem(n, d_in, d_k, d_v, seed)
    trace = full_trace(params, x, y)
    for step in trace:
        cell = tuple(data.draw(st.integers(0, s - 1), label=f"{step.key} axis {a}") for a, s in enumerate(step.shape))
        check_cell(trace, step.key, cell, precision=data.draw(st.integers(1, 6), label="precision"))


# ---- hand-checked ---------------------------------------------------------------------------------------

def tiny_problem():
    """2 words, d_in = 2, d_k = 2, d_v = 1, true class positive (2)."""
    params = {"w_q": np.array([[0.6, -0.4], [0.2, 0.9]]), "b_q": np.array([0.1, -0.2]),
              "w_k": np.array([[-0.5, 0.3], [0.8, 0.7]]), "b_k": np.array([0.05, 0.15]),
              "w_v": np.array([[1.2], [-0.7]]), "b_v": np.array([0.3]),
              "w_o": np.array([[0.9, -1.1, 0.4]]), "b_o": np.array([0.2, 0.0, -0.3])}
    x = np.array([[1.0, -0.5], [0.25, 2.0]])
    return params, x, 2


def by_hand(params, x, y):
    """The forward and backward pass written out for this tiny case, independent of the classifier."""
    n = x.shape[0]
    q = x @ params["w_q"] + params["b_q"]
    k = x @ params["w_k"] + params["b_k"]
    v = x @ params["w_v"] + params["b_v"]
    s = q @ k.T / np.sqrt(2.0)
    a = np.exp(s) / np.exp(s).sum(axis=1, keepdims=True)
    f = a @ v @ params["w_o"] + params["b_o"]
    p = np.exp(f.mean(axis=0)) / np.exp(f.mean(axis=0)).sum()
    d_f = np.tile((p - np.eye(3)[y]) / n, (n, 1))               # ∂L/∂F
    d_c = d_f @ params["w_o"].T                                 # ∂L/∂C
    d_a = d_c @ v.T                                             # ∂L/∂A
    d_s = np.empty_like(a)
    for i in range(n):                                          # through each row's softmax Jacobian
        jacobian = np.diag(a[i]) - np.outer(a[i], a[i])
        d_s[i] = jacobian.T @ d_a[i]
    d_q = d_s @ k / np.sqrt(2.0)
    return {"a": a, "d_a": d_a, "d_s": d_s, "k": k, "d_q": d_q, "p": p}


def f3(v, precision: int = 3) -> str:
    """A number as a factor in the display: `precision` decimals (a whole number bare), negatives in parentheses."""
    return f"({fmt(v, precision)})" if v < 0 else fmt(v, precision)


def test_hand_checked_score_gradient():
    params, x, y = tiny_problem()
    h = by_hand(params, x, y)
    trace = full_trace(params, x, y, ("not", "bad"))
    a, g = h["a"][0], h["d_a"][0]
    expected = a[1] * (g[1] - (a[0] * g[0] + a[1] * g[1]))      # ∂L/∂S[0,1] = a_01 (g_01 − Σ_m a_0m g_0m)
    assert math.isclose(expected, h["d_s"][0, 1], rel_tol=1e-12)
    e = explain(trace, "dL/dscores", (0, 1))
    assert math.isclose(e.value, expected, rel_tol=1e-12)
    assert e.symbolic == (r"\frac{\partial L}{\partial \hat S_{0,1}} = A_{0,1} \left(\frac{\partial L}{\partial A_{0,1}}"
                          r" - \sum_{m=0}^{1} A_{0,m}\, \frac{\partial L}{\partial A_{0,m}}\right)")
    mean = a[0] * g[0] + a[1] * g[1]
    assert e.substituted == (
        rf"{a[1]:.3f} \cdot \left({g[1]:.3f} - \left({f3(a[0])} \cdot {f3(g[0])} + {f3(a[1])} \cdot {f3(g[1])}"
        rf"\right)\right) = {a[1]:.3f} \cdot \left({g[1]:.3f} - {f3(mean)}\right)")
    assert e.result == rf"\frac{{\partial L}}{{\partial \hat S_{{0,1}}}} = {fmt(expected)}"
    assert e.reads[:2] == (("weights", (0, 0)), ("dL/dweights", (0, 0)))


def test_hand_checked_query_and_weight_gradients():
    params, x, y = tiny_problem()
    h = by_hand(params, x, y)
    trace = full_trace(params, x, y)
    d_s, k = h["d_s"], h["k"]
    expected = (d_s[1, 0] * k[0, 1] + d_s[1, 1] * k[1, 1]) / math.sqrt(2)     # ∂L/∂Q[1,1], with the 1/√d_k
    e = explain(trace, "dL/dq", (1, 1), precision=4)
    assert math.isclose(e.value, expected, rel_tol=1e-12)
    total = d_s[1, 0] * k[0, 1] + d_s[1, 1] * k[1, 1]
    terms = " + ".join(rf"{f3(d_s[1, j], 4)} \cdot {f3(k[j, 1], 4)}" for j in range(2))
    assert e.substituted == rf"\frac{{1}}{{\sqrt{{2}}}} \left({terms}\right) = \frac{{{fmt(total, 4)}}}{{\sqrt{{2}}}}"
    assert r"\frac{1}{\sqrt{d_k}}" in e.symbolic and r"\frac{1}{\sqrt{2}}" in trace["dL/dq"].formula
    # ∂L/∂W_Q[1,0] = Σ_i X[i,1] ∂L/∂Q[i,0]
    d_q = h["d_q"]
    w = explain(trace, "dL/dw_q", (1, 0))
    assert math.isclose(w.value, x[0, 1] * d_q[0, 0] + x[1, 1] * d_q[1, 0], rel_tol=1e-12)
    assert w.substituted == rf"{f3(x[0, 1])} \cdot {f3(d_q[0, 0])} + {f3(x[1, 1])} \cdot {f3(d_q[1, 0])}"
    assert w.text.splitlines()[0] == "dL/dW_Q[1,0] = Σ_i X[i,1]·dL/dQ[i,0]"


def test_class_gradients_and_loss_by_hand():
    params, x, y = tiny_problem()
    h = by_hand(params, x, y)
    trace = full_trace(params, x, y)
    p = h["p"]
    e = explain(trace, "dL/df", (1, 2))                         # (p_2 − 1) / n, n = 2
    assert math.isclose(e.value, (p[2] - 1) / 2, rel_tol=1e-12)
    assert e.substituted == rf"\frac{{{p[2]:.3f} - 1}}{{2}}"
    b = explain(trace, "dL/db_o", (0,))                          # two equal shares add back to p_0 − 0
    assert math.isclose(b.value, p[0], rel_tol=1e-12) and b.n_terms == 2
    loss = explain(trace, "loss", ())
    assert math.isclose(loss.value, -math.log(p[2]), rel_tol=1e-12)
    assert loss.substituted.startswith(rf"-\log {p[2]:.3f} = \log\left(e^{{")
    assert "positive" in loss.note
    j = explain(trace, "dweights/dscores", (1, 0, 0))
    a = h["a"][1, 0]
    assert math.isclose(j.value, a * (1 - a), rel_tol=1e-12) and j.substituted == rf"{a:.3f} \cdot \left(1 - {a:.3f}\right)"


def test_b_k_gradient_is_rounding_noise_and_says_so():
    params, x, y, _ = hand_problem(5, 4, 3, 2, 7)
    trace = full_trace(params, x, y)
    e = explain(trace, "dL/db_k", (1,))
    assert abs(e.value) < 1e-14 * float(np.abs(trace["dL/dk"].value).max()) + 1e-300
    assert "softmax ignores a shift" in e.note and e.n_terms == 5


def test_forward_traces_keep_their_own_explainers():
    from attention_core import Config, run_forward
    forward = run_forward(Config(sentence="i love you"))
    assert trace_kind(forward) == "forward"
    assert not can_explain(forward, "dL/dq")                      # registered for classifier traces only
    e = explain(forward, "scores", (0, 1))                         # run_forward's scores are not scaled
    assert math.isclose(e.value, float(forward["scores"].value[0, 1]), rel_tol=1e-12)
    params, x, y, _ = hand_problem(3, 4, 4, 2, 1)
    trace = full_trace(params, x, y)
    s = explain(trace, "scores", (2, 0))                           # the classifier's are
    assert r"\sqrt{4}" in s.substituted and s.symbolic.endswith(r"{\sqrt{d_k}}")


def test_a_forward_trace_labelled_classifier_gets_no_explainer():
    from attention_core import Config, run_forward
    trace = run_forward(Config(sentence="i love you"))
    trace.facts["kind"] = "classifier"               # its scores are not scaled, it has no classes or label
    assert not can_explain(trace, "scores") and not can_explain(trace, "weights")
    with pytest.raises(KeyError, match="classifier"):
        explain(trace, "scores", (0, 1))


def test_errors_for_cells_outside_a_step():
    params, x, y, _ = hand_problem(3, 4, 2, 2, 0)
    trace = full_trace(params, x, y)
    with pytest.raises(IndexError):
        explain(trace, "dweights/dscores", (0, 0))
    with pytest.raises(IndexError):
        explain(trace, "dL/dw_o", (0, 3))


def test_importing_the_classifier_registers_them_without_heavy_imports():
    code = ("import sys, attention_core.classifier; from attention_core.explanations import EXPLAINERS; "
            "assert ('classifier', 'dL/dw_q') in EXPLAINERS and ('classifier', 'dweights/dscores') in EXPLAINERS; "
            "assert not {'torch', 'sympy', 'streamlit'} & set(sys.modules), sorted(sys.modules)")
    subprocess.run([sys.executable, "-c", code], check=True)


# ---- the explanations' words under the training pages' settings -----------------------------------------

EXPLAIN_GRID = [dict(embedding="toy", positional="none", sentence="today love"),      # toy rows can look like 0, 1
                dict(embedding="glove", positional="index", n_heads=2),
                dict(embedding="random", d_model=4, positional="sinusoidal", d_k=1),
                dict(embedding="glove", positional="sinusoidal", combine="concat", sentence="great"),
                dict(embedding="toy", positional="learned", bias=True)]


@pytest.mark.parametrize("change", EXPLAIN_GRID, ids=str)
@pytest.mark.parametrize("frozen", [False, True])
def test_explanations_hold_under_the_training_settings(change, frozen):
    """A clicked cell's explanation on the training-step page, for every step (a few cells each), under a
    grid of its settings: no claim about the training pages outside its condition, no "seed 00…", X's
    note names the position X has, the b_K note says /√d_k, and ∂L/∂b_K is 0 where it says so."""
    from attention_core import Config
    from attention_core.forward.claims import CLAIMS, shown_outside
    from ui.training.step_view import step_for
    config = Config(**{"sentence": "i love the cat", "weights": "random", **change})
    trace = step_for(config, "negative", 0.05, ("w_o", "b_o") if frozen else ())[3]
    settings = trace.facts["settings"]
    assert settings.frozen == frozen and settings.n_heads == 1
    rng = np.random.default_rng(0)
    notes = {}
    for step in trace:
        for cell in cells(step.shape, rng)[:12]:
            e = explain(trace, step.key, cell)
            text = "\n".join((e.note, e.text, e.symbolic))
            assert shown_outside(text, settings, about="training") == [], (step.key, cell)
            assert "seed 00" not in text.lower() and "dweights/dscores" not in e.note, (step.key, e.note)
            notes.setdefault(step.key, []).append(e)
    positional = settings.positional
    d_in = trace["x"].shape[1]
    for e in notes["x"]:
        i, a = e.cell
        if positional == "index" and a == d_in - 1:
            assert e.independent and e.value == i and "position" in e.note
        else:
            assert not e.independent
            assert {"none": "its embedding alone, no position", "index": "its position in the last column",
                    "sinusoidal": "sinusoidal encoding of its position"}[positional] in e.note, e.note
    bias = explain(trace, "dL/db_k", (0,))
    assert CLAIMS["train_b_k_zero"].text in bias.note and "/ √d_k" in bias.note
    assert abs(bias.value) < 1e-12 * max(float(np.abs(trace["dL/dk"].value).max()), 1e-300)
    assert r"\hat S" in explain(trace, "scores", (0, 0)).symbolic
