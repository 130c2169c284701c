"""explain(): every cell of every step, recomputed from its terms, equals the Trace's number."""
import math
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from attention_core import Config, run_forward
from old_defaults import toy_config
from attention_core.math.limits import divisors
from attention_core.explanations import (EXPLAINERS, Context, can_explain, elide, explain, fmt, latex_text,
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
    from attention_core.explanations import trace_kind

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


# ---- issue 12: the notation, the claims, and the arithmetic on a grid of settings ---------------------

import ast
import itertools
from dataclasses import replace

from attention_core.forward import claims
from attention_core.math import notation
from attention_core.forward.claims import CLAIMS, shown_outside

# The notation's symbol for each step a cell explainer writes (docs/notation.md), independent of explain.py's table.
NOTATION_LATEX = {"scores": notation.S, "scaled_scores": notation.S_SCALED, "masked_scores": notation.S_MASKED,
                  "weights": notation.A, "context": notation.C, "concat": notation.C, "output": notation.O,
                  "q": "Q", "k": "K", "v": "V", "q_heads": "Q", "k_heads": "K", "v_heads": "V", "x": "X",
                  "mask": notation.M, "pe": "PE"}
NOTATION_TEXT = {"scores": "S", "scaled_scores": "Ŝ", "masked_scores": "S̃", "weights": "A", "context": "C",
                 "concat": "C", "output": "O", "q": "Q", "k": "K", "v": "V", "q_heads": "Q", "k_heads": "K",
                 "v_heads": "V", "x": "X", "mask": "M", "pe": "PE"}
# Steps whose every cell's arithmetic is numbers only: its text's middle line evaluates to the cell's value.
ARITHMETIC = ("q", "k", "v", "scores", "scaled_scores", "weights", "context", "output",
              "w_q", "w_k", "w_v", "b_q", "b_k", "b_v", "w_o", "b_o", "w_a_q", "w_a_k", "v_a", "w_b")
FORBIDDEN = ("C^{\\mathrm{cat}}", "C_cat", "W_B", "h-1", "h−1", "h heads", "seed 00", "Seed 00",
             "stays near 1", "whatever d_k is", "S^[", "S~[")
_FUNCS = {"exp": math.exp, "tanh": math.tanh, "sqrt": math.sqrt, "sin": math.sin, "cos": math.cos}


def arithmetic(segment: str):
    """The number a plain-text segment of an explanation computes ('(-0.5)·0.25 + 1', 'exp(1/0.5 - 2)',
    '(…) / √3'); None if it is not numbers and + − · / ^ exp tanh sqrt sin cos only."""
    s = re.sub(r"√(\d+(?:\.\d+)?)", r"sqrt(\1)", segment.replace("·", "*").replace("^", "**")).strip()
    try:
        tree = ast.parse(s, mode="eval")
    except SyntaxError:
        return None

    def ev(node):
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return float(node.value)
        if isinstance(node, ast.Name) and node.id == "inf":
            return math.inf
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            v = ev(node.operand)
            return -v if isinstance(node.op, ast.USub) else v
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow)):
            a, b = ev(node.left), ev(node.right)
            op = type(node.op)
            if op is ast.Div:
                return a / b if b else math.nan
            return {ast.Add: lambda: a + b, ast.Sub: lambda: a - b, ast.Mult: lambda: a * b,
                    ast.Pow: lambda: a ** b}[op]()
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCS
                and len(node.args) == 1 and not node.keywords):
            return _FUNCS[node.func.id](ev(node.args[0]))
        raise ValueError(ast.dump(node))

    try:
        return ev(tree)
    except (ValueError, OverflowError):
        return None


def expected_lhs(key: str, cell: tuple, per_head: bool) -> str:
    """The notation's left side for a cell: 'S_{1,2}', '(\\hat S_{1})_{2,3}' for head 1 (heads from 0)."""
    sym = NOTATION_LATEX[key]
    if per_head:
        h, *rest = cell
        return f"({sym}_{{{h}}})_{{{','.join(map(str, rest))}}}"
    lhs = f"{sym}_{{{','.join(map(str, cell))}}}"
    return lhs


def grid_configs():
    """heads 1/2/4 × every score × every mask × every positional encoding, with odd and even widths,
    T ≠ 1 and biases cycling through them (each value of each appears with every score and mask)."""
    out = []
    combos = itertools.product((1, 2, 4), ("dot", "scaled_dot", "additive", "bilinear"), ("none", "causal", "padding"),
                               ("sinusoidal", "learned", "index", "none"))
    for k, (h, score, mask, positional) in enumerate(combos):
        d_model = (5, 4)[k % 2]                                  # odd and even widths (index adds one)
        out.append(toy_config(sentence="the cat sat on the mat"[: (15, 22)[k % 2]], embedding="random",
                              d_model=d_model, n_heads=h, d_k=(3, 2)[h == 4], d_v={1: 3, 2: 3, 4: 1}[h],
                              score=score, mask=mask, padding=(1,) if k % 3 else (0, 1, 2, 3, 4, 5),
                              positional=positional, combine=("add", "concat")[(k // 2) % 2],
                              temperature=(1.0, 0.5, 2.0)[k % 3], bias=bool((k // 3) % 2), seed=k % 4))
    return out


def cells_of(shape, rng):
    first, last = tuple(0 for _ in shape), tuple(s - 1 for s in shape)
    return {first, last, tuple(int(rng.integers(0, s)) for s in shape)}


def check_explanation(trace, config, key, cell, e):
    step = trace[key]
    per_head = step.axes[:1] == ("head",)
    H = config.n_heads
    stored = float(step.value[cell])
    assert same(e.value, stored), (key, cell, e.value, stored)
    everything = "\n".join((e.symbolic, e.substituted, e.result, e.text, e.note))
    assert shown_outside(everything, config) == [], (key, cell, everything)
    for bad in FORBIDDEN:
        assert bad not in everything, (key, bad, everything)
    # heads are counted from 0: every head named is below H, and a head's matrices are Q_h, S_h, …, not Q^{(h)}
    assert all(int(h) < H for h in re.findall(r"[Hh]ead (\d+)", everything)), (key, everything)
    assert all(int(h) < H for h in re.findall(r"\((?:Q|K|V|S|\\hat S|\\tilde S|A|C)_\{(\d+)\}\)", everything))
    assert not re.search(r"(?<![\\\w])(Q|K|V|S|A|C)\^\{\(", everything), everything
    if key in NOTATION_LATEX and key not in ("pe", "mask"):
        assert e.symbolic.startswith(expected_lhs(key, cell, per_head) + " = "), (key, e.symbolic)
        head_text = f"_{cell[0]}" if per_head else ""
        assert e.text.startswith(f"{NOTATION_TEXT[key]}{head_text}["), (key, e.text)
    if key == "scaled_scores":                                   # Ŝ = S / √d_k: scaled is Ŝ, never bare S
        assert e.result.startswith(expected_lhs("scaled_scores", cell, per_head))
        raw = expected_lhs("scores", cell, per_head)
        assert rf"\frac{{{raw}}}{{\sqrt{{d_k}}}}" in e.symbolic
        assert claims.say("scaling_stops_growth", config) in e.note
        assert claims.say("scaling_unit_spread", config) in e.note
    if key == "masked_scores":                                   # S̃ from Ŝ (scaled dot) or S (the others)
        before = "scaled_scores" if config.score == "scaled_dot" else "scores"
        assert expected_lhs(before, cell, per_head) in e.symbolic, e.symbolic
        if config.score == "scaled_dot":
            assert "& M_" in e.symbolic and r"\begin{cases} S" not in e.symbolic and "(S_{" not in e.symbolic
    if key == "weights":                                          # softmax reads S, Ŝ or S̃, as the notation says
        sym = notation.softmax_input(config)
        reads = f"({sym}_{{{cell[0]}}})" if per_head else sym
        assert rf"\exp({reads}" in e.symbolic, (sym, e.symbolic)
        assert ("/T" in e.symbolic) == (config.temperature != 1)
    if key == "context":                                          # C_{i,m} = Σ_j A_{i,j} V_{j,m}: keys j
        assert rf"\sum_{{j=0}}^{{{trace.n - 1}}}" in e.symbolic
    # the terms: one per entry of the contracted axis
    contracted = {"q": trace["x"].shape[1], "k": trace["x"].shape[1], "v": trace["x"].shape[1],
                  "context": trace.n, "output": trace["w_o"].shape[0]}
    if key in contracted:
        assert e.n_terms == contracted[key], (key, e.n_terms)
    if key in ("scores", "scaled_scores"):
        assert e.n_terms == config.d_k
    # the arithmetic shown reproduces the value: every segment of numbers in the middle line evaluates to it
    middle = re.sub(r"\s+\(z = draw .*\)$", "", e.text.split("\n")[1].strip())   # a parameter's generator
    assert middle.startswith("= ")
    values = [arithmetic(seg) for seg in middle[2:].split(" = ")]
    values = [v for v in values if v is not None and not math.isnan(v)]
    all_hidden = key == "weights" and not np.isfinite(trace[trace.facts["softmax_input"]].value[cell[:-1]]).any()
    if key in ARITHMETIC and not all_hidden and not e.n_elided:   # (a row of −∞ only is 0 by definition, not 0/0)
        assert values, (key, middle)
    for v in values:
        assert abs(v - stored) <= 1e-8 * max(1.0, abs(stored)), (key, cell, middle, v, stored)


def test_every_explanation_in_the_notation_and_true_under_its_settings():
    """Every explainable cell kind, on heads 1/2/4, every score function, mask and positional encoding,
    odd and even widths, T ≠ 1, biases: the value is the cell's, the arithmetic shown (at 12 decimals)
    computes it, the symbols are the notation's (Ŝ for scaled scores, S̃ masked, Q_h … with h from 0), and no
    claim is shown outside the settings it holds under."""
    rng = np.random.default_rng(12)
    seen = set()
    for config in grid_configs():
        trace = run_forward(config)
        for step in trace:
            assert can_explain(trace, step.key), step.key
            for cell in cells_of(step.shape, rng):
                e = explain(trace, step.key, cell, precision=12, config=config)
                check_explanation(trace, config, step.key, cell, e)
                seen.add((step.key, config.n_heads > 1))
    kinds = {k for k, _ in seen}
    assert kinds >= {"x_embed", "pe", "x", "w_q", "b_q", "q", "q_heads", "k_heads", "v_heads", "scores",
                     "scaled_scores", "mask", "masked_scores", "weights", "context", "concat", "w_o", "b_o",
                     "output", "w_a_q", "w_a_k", "v_a", "w_b"}


@pytest.mark.parametrize("config", [Config(), Config(n_heads=2), Config(n_heads=4, mask="causal", temperature=0.7),
                                    Config(sentence="i love qwzx you", unknown="unk", positional="index")],
                         ids=["default", "2-heads", "4-heads-causal-T", "unk-index"])
def test_explanations_of_the_trained_defaults_in_the_notation(config):
    """The same checks on GloVe vectors and trained W_Q, W_K, W_V (the app's defaults), unknown words too."""
    trace = run_forward(config)
    rng = np.random.default_rng(1)
    for step in trace:
        for cell in cells_of(step.shape, rng):
            check_explanation(trace, config, step.key, cell, explain(trace, step.key, cell, precision=12, config=config))


def test_the_checks_catch_a_wrong_symbol_and_a_claim_shown_outside():
    """The grid's checks fail on what issue 12 reported: the scaled scores written as bare S, a head counted
    from 1, and the spread claim shown under a score that is not divided by √d_k."""
    config = toy_config(sentence="i love you", n_heads=2, d_model=4, embedding="random", d_k=2)
    trace = run_forward(config)
    e = explain(trace, "scaled_scores", (1, 0, 2), precision=12, config=config)
    check_explanation(trace, config, "scaled_scores", (1, 0, 2), e)
    for broken, why in ((replace(e, symbolic=e.symbolic.replace(r"(\hat S_{1})_{0,2}", "S^{(1)}_{0,2}", 1)),
                         r"S\^\{\(1\)\}_\{0,2\}"),
                        (replace(e, note=e.note + " (head 2 of 2)"), "head 2 of 2"),
                        (replace(e, text=e.text.replace("Ŝ_1[", "S^[", 1)), r"S\^\[")):
        with pytest.raises(AssertionError, match=why):
            check_explanation(trace, config, "scaled_scores", (1, 0, 2), broken)
    dot = config.replace(score="dot")
    assert shown_outside(e.note, dot) == ["scaling_stops_growth", "scaling_unit_spread"]
    with pytest.raises(AssertionError, match="scaling_stops_growth"):
        check_explanation(run_forward(dot), dot, "scores", (1, 0, 2),
                          replace(explain(run_forward(dot), "scores", (1, 0, 2), precision=12), note=e.note))


# ---- the two claims about dividing by √d_k, proved ---------------------------------------------------

SPREAD_SENTENCE = "i love you today we like the cat"


def softmax_input_spread(score: str, d_k: int) -> tuple[float, float]:
    """(spread of S, spread of the scores softmax reads), each the standard deviation within a row, averaged
    over the rows and over 8 seeds of the random weights."""
    raw, read = [], []
    for seed in range(8):
        trace = run_forward(toy_config(sentence=SPREAD_SENTENCE, embedding="random", d_model=16, positional="none",
                                       d_k=d_k, score=score, seed=seed))
        raw.append(trace["scores"].value.std(axis=-1).mean())
        read.append(trace[trace.facts["softmax_input"]].value.std(axis=-1).mean())
    return float(np.mean(raw)), float(np.mean(read))


def test_dividing_by_sqrt_dk_keeps_the_spread_from_growing_with_dk():
    """Claim scaling_stops_growth. Independent entries of a fixed spread σ: q·k spreads like σ²√d_k, q·k/√d_k
    like σ² for every d_k. In the explorer (seeded random weights, d_k from 1 to 256): the raw S spreads 20×
    wider at d_k = 256 than at 1, Ŝ stays within a factor 2; under the dot score (no division, where the
    claim does not hold) what softmax reads is S, and its spread grows."""
    rng = np.random.default_rng(0)
    for sigma in (0.5, 1.0, 3.0):
        for d_k in (1, 4, 16, 64, 256):
            q, k = sigma * rng.standard_normal((20_000, d_k)), sigma * rng.standard_normal((20_000, d_k))
            s = (q * k).sum(axis=1)
            assert abs(s.std() / (sigma ** 2 * math.sqrt(d_k)) - 1) < 0.04
            assert abs((s / math.sqrt(d_k)).std() / sigma ** 2 - 1) < 0.04
    widths = (1, 4, 16, 64, 256)
    scaled = [softmax_input_spread("scaled_dot", d) for d in widths]
    raw = [r for r, _ in scaled]
    read = [s for _, s in scaled]
    assert raw[-1] / raw[0] > 10                                   # S grows with d_k …
    assert max(read) / min(read) < 2                               # … Ŝ does not
    dot = [s for _, s in (softmax_input_spread("dot", d) for d in widths)]
    assert dot[-1] / dot[0] > 10 and dot == raw                    # no division: what softmax reads grows
    assert claims.holds("scaling_stops_growth", toy_config(score="scaled_dot"))
    for score in ("dot", "additive", "bilinear"):
        assert not claims.holds("scaling_stops_growth", toy_config(score=score))


def test_unit_variance_entries_give_scaled_scores_of_variance_one():
    """Claim scaling_unit_spread: with independent entries of mean 0 and variance 1 (normal or uniform),
    q·k has variance d_k and q·k/√d_k variance 1. Without that condition the spread of Ŝ is not 1: index
    positions with GloVe and trained weights (issue 12's example) give rows of Ŝ spreading with a standard
    deviation above 3 — which is why the sentence states its condition and the explainer prints the spread."""
    rng = np.random.default_rng(1)
    draws = {"normal": lambda shape: rng.standard_normal(shape),
             "uniform": lambda shape: rng.uniform(-math.sqrt(3), math.sqrt(3), shape)}
    for name, draw in draws.items():
        for d_k in (1, 4, 16, 64, 256):
            q, k = draw((40_000, d_k)), draw((40_000, d_k))
            s = (q * k).sum(axis=1)
            assert abs(s.var() / d_k - 1) < 0.04, (name, d_k)
            assert abs((s / math.sqrt(d_k)).var() - 1) < 0.04, (name, d_k)
    config = Config(sentence="the cat sat on the mat and the dog sat on the rug today", positional="index")
    trace = run_forward(config)
    assert trace.n == 13
    row_spread = trace["scaled_scores"].value.std(axis=-1).mean()
    assert row_spread > 3
    e = explain(trace, "scaled_scores", (0, 1), config=config)
    assert f"row 0 of Ŝ has standard deviation {fmt(trace['scaled_scores'].value[0].std(), 2, False)}" in e.note
    assert claims.holds("scaling_unit_spread", config) and not claims.holds("scaling_unit_spread",
                                                                            config.replace(score="dot"))


def test_my_claims_name_their_proofs():
    """Each claim of this section names a test of this file that exists."""
    import tests.test_explain as me
    mine = [c for c in CLAIMS.values() if c.proof.startswith("tests/test_explain.py::")]
    assert {c.key for c in mine} >= {"scaling_stops_growth", "scaling_unit_spread"}
    for c in mine:
        assert callable(getattr(me, c.proof.split("::")[1], None)), c.proof


def test_context_note_with_a_hidden_row_and_ties():
    """A row whose keys are all hidden averages nothing; tied weights are named together, not one of them."""
    config = toy_config(sentence="i love you", mask="padding", padding=(0, 1, 2))
    trace = run_forward(config)
    e = explain(trace, "context", (1, 0), config=config)
    assert e.value == 0.0 and "all 0" in e.note and "weighted average" not in e.note
    config = toy_config(sentence="the cat the", positional="none")          # keys 0 and 2: the same word
    trace = run_forward(config)
    e = explain(trace, "context", (1, 0), config=config)
    a = trace["weights"].value[1]
    assert a[0] == a[2]
    if a[0] > a[1]:
        assert "keys 0 (“the”) and 2 (“the”) count most" in e.note
    else:
        assert "“cat” (key 1) counts most" in e.note


def test_pe_note_blames_the_rounded_base_only_when_the_base_was_read_from_the_formula():
    """Without a config, a T estimated from the weights does not make the (exact) base 10,000 'rounded'."""
    config = toy_config(sentence="i love you", temperature=0.37)
    trace = run_forward(config)
    trace.facts.pop("config")
    p = explain(trace, "pe", (2, 1))
    assert p.independent and "rounded" not in p.note
    w = explain(trace, "weights", (1, 2))
    assert not w.independent and "estimated" in w.note


def _render_explanation(key: str, cell: tuple) -> list[str]:
    """ui.explain_view.explanation drawn by AppTest for a cell of the defaults' trace: its captions."""
    from streamlit.testing.v1 import AppTest

    def app(key, cell):
        from attention_core import Config, run_forward
        from attention_core.explanations import explain
        from ui.explain_view import explanation
        trace = run_forward(Config())
        explanation(explain(trace, key, tuple(cell)), float(trace[key].value[tuple(cell)]))

    at = AppTest.from_function(app, default_timeout=60, kwargs={"key": key, "cell": list(cell)}).run()
    assert not at.exception, [e.value for e in at.exception]
    return [c.value for c in at.caption]


def test_the_view_says_a_row_is_listed_and_a_sum_is_summed():
    """An embedding row (50 GloVe entries, one looked up) is not called a total; a 50-term sum is."""
    row = "\n".join(_render_explanation("x_embed", (1, 1)))
    assert "The row has 50 entries; 45 of them are left out above." in row
    assert "the total uses all" not in row and "✓ made again from its formula or source" in row
    total = "\n".join(_render_explanation("q", (1, 2)))
    assert "50 terms in all; the middle 45 are left out above (the total uses all)." in total
    assert "✓ recomputed from the terms above" in total


def test_leaf_notes_say_where_a_number_comes_from():
    """A trained bias started at 0 (not at a seeded draw); an odd width's last sine has no cosine; the index
    feature is the position itself."""
    config = Config(sentence="i love you", bias=True)
    trace = run_forward(config)
    trace.facts.pop("config")
    assert "trained (from 0)" in explain(trace, "b_q", (1,)).note
    assert "trained (from its seeded init N(0, 1/50))" in explain(trace, "w_q", (1, 1)).note
    config = toy_config(sentence="i love you", embedding="random", d_model=5)
    trace = run_forward(config)
    assert "odd" in explain(trace, "pe", (1, 4), config=config).note
    assert "odd" not in explain(trace, "pe", (1, 3), config=config).note
    config = toy_config(sentence="i love you", positional="index")
    trace = run_forward(config)
    e = explain(trace, "x", (2, 3), config=config)
    assert e.value == 2.0 and "the index p itself" in e.note


# ---- today's attention in the forward explainers: ALiBi's sum per head, a window's rule, a row with no key ----

def test_biased_scores_carry_the_head_on_each_matrix_and_no_doubled_parentheses():
    """(Ŝ_4 + B_4)_{2,1}, as the pages' headings write Ŝ_h + B_h; not ((Ŝ + B)_{4})_{2,1} nor (Ŝ+B)_4[2,1]."""
    for config, sym, text in ((Config(positional="alibi", n_heads=6, mask="sliding_window", window=2), r"\hat S",
                               "Ŝ"),
                              (Config(positional="alibi", n_heads=6, score="dot"), "S", "S")):
        trace = run_forward(config)
        e = explain(trace, "biased_scores", (4, 2, 1), config=config)
        assert e.symbolic.startswith(rf"({sym}_{{4}} + B_{{4}})_{{2,1}} = ({sym}_{{4}})_{{2,1}} + (B_{{4}})_{{2,1}}")
        assert e.text.startswith(f"({text}_4+B_4)[2,1] = {text}_4[2,1] + B_4[2,1]"), e.text
        assert "((" not in e.symbolic and ")_4[" not in e.text
        for key in ("masked_scores", "weights"):               # what reads it: never ((Ŝ_4 + B_4)) nor (Ŝ+B)_4
            if key in trace:
                r = explain(trace, key, (4, 2, 1), config=config)
                assert f"({sym}_{{4}} + B_{{4}})_{{2," in r.symbolic or key == "weights" and "mask" in trace
                assert not re.search(r"\(\([^()]*\)\)", r.symbolic) and "+B)_4" not in r.text, r.symbolic
    one = run_forward(Config(positional="alibi"))              # one head: no subscript, as page 4 writes Ŝ + B
    assert explain(one, "biased_scores", (2, 1)).text.startswith("(Ŝ+B)[2,1] = Ŝ[2,1] + B[2,1]")


def test_the_window_rule_says_yes_or_no_not_true_or_false():
    config = Config(mask="sliding_window", window=2)
    trace = run_forward(config)
    hidden, seen = explain(trace, "mask", (3, 1), config=config), explain(trace, "mask", (3, 2), config=config)
    assert "0 ≤ i − j = 2 < W = 2: no" in hidden.text and hidden.value == 0.0
    assert "0 ≤ i − j = 1 < W = 2: yes" in seen.text and seen.value == 1.0
    assert not re.search(r"\b(True|False)\b", hidden.text + seen.text + hidden.substituted)


def test_a_row_with_every_key_hidden_is_set_to_zero_not_0_over_0():
    config = Config(positional="alibi", n_heads=2, mask="padding", padding=(0, 1, 2, 3))
    trace = run_forward(config)
    e = explain(trace, "weights", (1, 2, 1), config=config)
    assert e.value == 0.0 and r"\frac{0}{0}" not in e.substituted and "0 / 0" not in e.text.replace(" ", " ")
    assert "no visible key: the row is set to 0" in e.text and "the app sets such a row to all zeros (no NaN)" in e.note
    assert "core defines" not in e.note


def test_the_bilinear_note_names_the_heads_own_matrix():
    config = Config(score="bilinear", n_heads=2, weights="random")
    e = explain(run_forward(config), "scores", (1, 2, 0), config=config)
    assert "u_m = (W^(1) k_0ᵀ)_m" in e.note and "learned matrix W^(1) (head 1's own)" in e.note
