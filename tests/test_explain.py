"""explain(): every cell of every step, recomputed from its terms, equals the Trace's number."""
import math
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from attention_core import Config, run_forward
from old_defaults import toy_config
from attention_core.config import divisors
from attention_core.explain import (EXPLAINERS, Context, can_explain, elide, explain, fmt, latex_text,
                                    register, settings_of)

WORDS = ("i", "love", "you", "today", "we", "like", "hate", "the", "cat", "sat", "on", "mat", "dog")


def same(a: float, b: float, tol: float = 1e-9) -> bool:
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= tol * max(1.0, abs(a), abs(b))


def balanced(latex: str) -> bool:
    """Braces balance once escaped ones (\\{ \\}) are set aside; no stray $, # or %; & only inside an environment."""
    s = re.sub(r"\\[{}$#%&_]", "", latex)
    depth = 0
    for c in s:
        depth += {"{": 1, "}": -1}.get(c, 0)
        if depth < 0:
            return False
    return depth == 0 and not re.search(r"[$#%]", s) and ("&" not in s or r"\begin{" in s)


def final_width(embedding: str, d_model: int, positional: str, combine: str) -> int:
    d = 3 if embedding == "toy" else d_model
    if positional == "index":
        return d + 1
    if positional in ("sinusoidal", "learned") and combine == "concat":
        return 2 * d
    return d


@st.composite
def configs(draw):
    words = draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=7))
    embedding = draw(st.sampled_from(["toy", "random"]))
    d_model = draw(st.integers(2, 12))
    positional = draw(st.sampled_from(["sinusoidal", "learned", "index", "none"]))
    combine = draw(st.sampled_from(["add", "concat"]))
    width = final_width(embedding, d_model, positional, combine)
    n_heads = draw(st.sampled_from([h for h in divisors(width) if h <= 4]))
    mask = draw(st.sampled_from(["none", "causal", "padding"]))
    padding = tuple(draw(st.lists(st.integers(0, len(words) - 1), max_size=len(words)))) if mask == "padding" else ()
    return toy_config(sentence=" ".join(words), embedding=embedding, d_model=d_model, positional=positional,
                  combine=combine, n_heads=n_heads, d_k=draw(st.integers(1, 8)), d_v=draw(st.integers(1, 8)),
                  score=draw(st.sampled_from(["dot", "scaled_dot", "additive", "bilinear"])), mask=mask,
                  padding=padding, temperature=draw(st.sampled_from([1.0, 0.25, 0.7, 2.5])),
                  bias=draw(st.booleans()), pe_base=draw(st.sampled_from([10_000.0, 100.0, 1234.567])),
                  seed=draw(st.integers(0, 5)))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(config=configs(), data=st.data())
def test_every_step_recomputed_from_its_terms(config, data):
    trace = run_forward(config)
    for step in trace:
        assert can_explain(trace, step.key), step.key
        cell = tuple(data.draw(st.integers(0, n - 1), label=f"{step.key} axis {a}") for a, n in enumerate(step.shape))
        e = explain(trace, step.key, cell, config=config)
        stored = float(step.value[cell])
        assert same(e.value, stored), (step.key, cell, e.value, stored, e.text)
        assert e.independent, step.key
        assert e.key == step.key and e.cell == cell
        for latex in (e.symbolic, e.substituted, e.result):
            assert balanced(latex), (step.key, latex)
        assert e.text.count("\n") == 2, e.text
        # long sums (and long rows) are elided, and every gap says how many terms it hides
        gaps = [int(k) for k in re.findall(r"\\text\{(\d+) more\}", e.substituted)]
        gaps_text = [int(k) for k in re.findall(r"… (\d+) more …", e.text)]
        if step.key == "weights":                    # the denominator is shown twice: exponents, then values
            assert set(gaps) == set(gaps_text) == ({e.n_elided} if e.n_elided else set())
        else:
            assert sum(gaps) == e.n_elided == sum(gaps_text)
        if e.n_terms > 7:
            assert e.n_elided >= e.n_terms - 6 and e.n_elided > 0
        elif e.n_terms <= 6:
            assert e.n_elided == 0 and "more" not in e.substituted
        # without the config, whatever is recomputed (not read back) still agrees
        bare = explain(trace, step.key, cell)
        if bare.independent:
            assert same(bare.value, stored), (step.key, cell, bare.value, stored)


def test_scaled_score_matches_the_brief_example():
    config = toy_config(sentence="i love you today", embedding="random", d_model=8, d_k=8)
    trace = run_forward(config)
    e = explain(trace, "scaled_scores", (2, 3), config=config)
    assert e.symbolic == (r"\hat S_{2,3} = \frac{S_{2,3}}{\sqrt{d_k}} = "
                          r"\frac{\sum_{m=0}^{7} Q_{2,m}\, K_{3,m}}{\sqrt{d_k}}")
    assert e.substituted.endswith(r"}{\sqrt{8}}")
    q, k = trace["q"].value, trace["k"].value
    assert e.n_terms == 8 and e.n_elided == 3
    first = f"{q[2, 0]:.3f}" if q[2, 0] >= 0 else f"({q[2, 0]:.3f})"
    assert e.substituted.startswith(r"\frac{" + first + r" \cdot ")
    assert math.isclose(e.value, float(q[2] @ k[3]) / math.sqrt(8), rel_tol=1e-12)
    assert e.reads[:2] == (("q", (2, 0)), ("k", (3, 0)))


def test_long_sum_is_elided_with_its_count():
    config = toy_config(sentence="i love you", embedding="random", d_model=49, d_k=3, positional="none")
    trace = run_forward(config)
    e = explain(trace, "q", (1, 2), config=config)
    assert (e.n_terms, e.n_elided) == (49, 44)
    assert r"\underbrace{\cdots}_{\text{44 more}}" in e.substituted
    assert "… 44 more …" in e.text
    assert e.substituted.count(r"\cdot") == 5 + 1          # 3 + 2 products shown, and the elision's \cdots
    x, w = trace["x"].value, trace["w_q"].value
    assert math.isclose(e.value, math.fsum(x[1] * w[:, 2]), rel_tol=1e-12)


def test_elide_keeps_short_sums_whole():
    assert elide(list(range(6))) == (list(range(6)), 0)
    assert elide(list(range(7))) == ([0, 1, 2, None, 5, 6], 2)


def test_weights_show_every_term_and_the_temperature():
    config = toy_config(sentence="i love you today", temperature=0.5, mask="causal")
    trace = run_forward(config)
    e = explain(trace, "weights", (2, 1), config=config)
    s = trace["masked_scores"].value[2]
    expected = math.exp(s[1] / 0.5 - max(s[:3]) / 0.5) / sum(math.exp(v / 0.5 - max(s[:3]) / 0.5) for v in s[:3])
    assert math.isclose(e.value, expected, rel_tol=1e-12)
    assert e.n_terms == 4 and e.n_elided == 0
    assert e.substituted.count(r"e^{-\infty}") == 1                 # key 3 is in the future of query 2
    assert "T = 0.5" in e.symbolic and "/0.5" in e.substituted
    assert "Temperature" in e.note


def test_fully_masked_row_is_zeros_not_nan():
    config = toy_config(sentence="i love you", mask="padding", padding=(0, 1, 2))
    trace = run_forward(config)
    e = explain(trace, "weights", (1, 0), config=config)
    assert e.value == 0.0 and "all zeros" in e.note
    m = explain(trace, "masked_scores", (1, 2), config=config)
    assert m.value == -math.inf and r"-\infty" in m.result


def test_parameters_regenerated_from_their_generator():
    config = toy_config(bias=True, seed=7)
    trace = run_forward(config)
    for key, cell in (("w_q", (1, 2)), ("b_v", (3,)), ("w_o", (0, 1))):
        e = explain(trace, key, cell, config=config)
        assert e.independent and same(e.value, trace[key].value[cell], 1e-15)
        assert "seeded init N(0," in e.note and "z \\sim \\mathcal{N}(0, 1)" in e.symbolic
        assert explain(trace, key, cell).independent          # run_forward records its config in facts
        stripped = run_forward(config)
        stripped.facts.pop("config")                           # a trace without its config: read back
        bare = explain(stripped, key, cell)
        assert not bare.independent and "read back" in bare.note


def test_embedding_lookup_and_positions():
    config = toy_config(sentence="i love you today")
    trace = run_forward(config)
    e = explain(trace, "x_embed", (1, 2), config=config)
    assert e.value == 1.0 and r"e\left(\text{love}\right)_{2}" in e.symbolic
    pe = explain(trace, "pe", (3, 1), config=config)
    assert math.isclose(pe.value, math.cos(3 / 10_000 ** (0 / 3)), rel_tol=1e-15)
    assert r"\cos" in pe.symbolic and r"\cos(3)" in pe.substituted
    x = explain(trace, "x", (3, 1), config=config)
    assert math.isclose(x.value, 0.0 + math.cos(3), rel_tol=1e-15)


def test_head_split_names_the_column_of_q():
    config = toy_config(embedding="random", d_model=8, n_heads=2, d_k=3)
    trace = run_forward(config)
    e = explain(trace, "q_heads", (1, 2, 0), config=config)
    assert e.value == trace["q"].value[2, 3] and e.reads == (("q", (2, 3)),)
    assert "Q_{2,3}" in e.substituted and "(Q_{1})_{2,0}" in e.result and e.text.startswith("Q_1[2,0] = ")
    c = explain(trace, "concat", (0, 5), config=config)
    assert c.value == trace["context"].value[1, 0, 1]


def test_token_text_is_escaped_in_latex():
    for nasty in ("a_b", "x{y}", "100%", "$5", "c#", "a&b", "^~", "back\\slash", "<unk>", "naïve", "don't"):
        out = latex_text(nasty)
        assert out.startswith(r"\text{") and out.endswith("}")
        assert balanced(out), (nasty, out)
    config = toy_config(sentence="naïve café don't", embedding="random", d_model=4)
    trace = run_forward(config)
    for i in range(trace.n):
        e = explain(trace, "x_embed", (i, 0), config=config)
        assert balanced(e.symbolic) and latex_text(trace.tokens[i]) in e.symbolic


def test_number_format():
    assert fmt(0.123456) == "0.123" and fmt(0.123456, 5) == "0.12346"
    assert fmt(-3.0) == "-3" and fmt(0.0) == "0" and fmt(float("-inf")) == r"-\infty"
    assert fmt(2.5e-7) == r"2.50 \times 10^{-7}" and fmt(2.5e-7, latex=False) == "2.50e-07"


def test_errors_for_unknown_steps_and_cells():
    trace = run_forward(toy_config())
    with pytest.raises(KeyError):
        explain(trace, "concat", (0, 0))                 # one head: no concat step
    with pytest.raises(IndexError):
        explain(trace, "scores", (4, 0))
    with pytest.raises(IndexError):
        explain(trace, "scores", (0,))


def test_a_gradient_step_can_register_its_explainer():
    config = toy_config(sentence="i love you today")
    trace = run_forward(config)
    x = trace["x"].value
    g = np.arange(trace.n * 4, dtype=float).reshape(trace.n, 4) / 7 - 1       # a stand-in dL/dq
    trace.add("dL/dq", "dL/dQ", g, ("n", "d_k"), r"\partial L/\partial Q")
    trace.add("dL/dw_q", "dL/dW_Q", x.T @ g, ("d_model", "d_k"), r"X^\top \partial L/\partial Q", ("x", "dL/dq"))

    def dl_dw_q(ctx: Context, cell):
        m, j = cell
        xv, gv = ctx.value("x"), ctx.value("dL/dq")
        return ctx.sum_of_products(
            "dL/dw_q", cell, rf"\sum_i X_{{i,{m}}}\, G_{{i,{j}}}", f"Σ_i X[i,{m}]·G[i,{j}]",
            [(ctx.ref("x", (i, m)), ctx.ref_text("x", (i, m)), xv[i, m], ctx.ref("dL/dq", (i, j)),
              ctx.ref_text("dL/dq", (i, j)), gv[i, j], ("x", (i, m)), ("dL/dq", (i, j))) for i in range(ctx.trace.n)])

    assert not can_explain(trace, "dL/dw_q")
    register("dL/dw_q")(dl_dw_q)
    try:
        e = explain(trace, "dL/dw_q", (2, 1), config=config)
        assert same(e.value, trace["dL/dw_q"].value[2, 1], 1e-12) and e.n_terms == trace.n
        assert balanced(e.symbolic) and r"\text{dL/dw\_q}_{2,1}" in e.result
    finally:
        EXPLAINERS.pop(("forward", "dL/dw_q"))


def test_traces_of_another_kind_do_not_get_forward_explainers():
    trace = run_forward(toy_config())
    trace.facts["kind"] = "classifier"
    assert not can_explain(trace, "scores")
    with pytest.raises(KeyError, match="classifier"):
        explain(trace, "scores", (0, 0))


def test_settings_without_config_read_from_the_trace():
    config = toy_config(score="additive", positional="learned", temperature=0.3, mask="causal")
    s = settings_of(run_forward(config))
    assert (s.score, s.positional, s.n_heads) == ("additive", "learned", 1)
    assert math.isclose(s.temperature, 0.3, rel_tol=1e-9)


def test_other_traces_reusing_forward_keys_get_no_forward_explainer():
    """Bahdanau's, the grid's and PyTorch's traces have steps named scores/weights/context/q/x too,
    with other math: the forward explainers must not claim them (a click shows the value)."""
    from attention_core import bahdanau as b
    from attention_core import grid as g
    from attention_core.explain import trace_kind

    h = np.array([[0.0, 1.0], [3.0, 4.0], [1.0, 2.0]])
    grid = g.make_grid()
    others = [b.step_trace(np.array([0.0, 1.0]), h, b.init_params()),
              g.one_query(grid, g.named_queries(["red"])[0], "red"),
              g.many_queries(grid, g.named_queries(["red", "blue"]), ["red", "blue"])]
    for trace in others:
        assert trace_kind(trace) == "other"
        for key in trace.steps:
            assert not can_explain(trace, key), key
    assert trace_kind(run_forward(toy_config())) == "forward"
