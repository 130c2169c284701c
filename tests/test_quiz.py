"""Quiz questions from the live trace: their answers are right, answers are normalised, wrong ones fail."""
import math

import numpy as np
import pytest

from attention_core import Config, run_forward, softmax
from attention_core.quiz import (Question, grade, make_questions, parse_number, parse_shape, parse_sign,
                                 context_sign_question, output_sign_question, softmax_sign_question)

CONFIGS = [
    Config(),
    Config(sentence="the cat sat on the mat", embedding="random", d_model=8, n_heads=2, mask="causal", bias=True),
    Config(sentence="we like the dog today", score="additive", mask="padding", padding=(2,), temperature=0.5),
    Config(sentence="i love you", score="bilinear", positional="index", n_heads=2, embedding="random", d_model=7),
]
WRONG = {"shape": "999 x 1", "number": "12345", "yesno": None, "sign": None, "choice": "not a word here"}


def wrong_answer(q: Question) -> str:
    if q.kind == "yesno":
        return "no" if q.expected else "yes"
    if q.kind == "sign":
        return next(s for s in ("positive", "negative", "zero") if s != q.expected)
    return WRONG[q.kind]


@pytest.mark.parametrize("config", CONFIGS, ids=["default", "heads-causal", "additive-padding", "bilinear-heads"])
def test_every_question_grades_its_answer_right_and_a_wrong_one_wrong(config):
    trace = run_forward(config)
    questions = make_questions(trace, seed=1)
    kinds = {q.kind for q in questions}
    assert {"shape", "choice", "sign", "number", "yesno"} <= kinds
    for q in questions:
        ok, feedback = grade(q, q.answer)
        assert ok, (q.id, q.answer, feedback)
        assert feedback.startswith("Correct")
        ok, feedback = grade(q, wrong_answer(q))
        assert not ok, (q.id, feedback)
        if q.choices:
            assert any(grade(q, c)[0] for c in q.choices), q.id


def test_expected_answers_are_the_traces_numbers():
    trace = run_forward(CONFIGS[1])
    for seed in range(6):
        for q in make_questions(trace, seed):
            if q.kind == "shape":
                assert q.expected == trace[q.step_key].shape
            elif q.id.startswith("attends"):
                w = trace["weights"].value[q.cell]                       # (head, row) -> the row
                assert q.answer == f"“{trace.token_labels()[int(np.argmax(w))]}”"
            elif q.id.startswith("rowsum"):
                assert math.isclose(q.expected, float(trace["weights"].value[q.cell].sum()), abs_tol=1e-12)
            elif q.id.startswith("head"):
                h, i, j = q.cell
                assert h == int(np.argmax(trace["weights"].value[:, i, j]))
            elif q.id.startswith("masked"):
                assert trace["mask"].value[q.cell] == 0 and trace["weights"].value[(0, *q.cell)] == 0
            elif q.id.startswith("params"):
                assert q.expected == trace[q.step_key].value.size


def test_shape_answers_are_normalised():
    q = next(q for q in make_questions(run_forward(Config()), 0) if q.kind == "shape")
    rows, cols = q.expected
    for typed in (f"{rows}x{cols}", f"({rows}, {cols})", f"{rows} × {cols}", f"[{rows},{cols}]", f" {rows} by {cols} ",
                  f"n={rows} × d={cols}"):
        assert grade(q, typed)[0], typed
    assert not grade(q, f"{cols}x{rows}")[0] or rows == cols
    assert not grade(q, f"{rows}x{cols}x1")[0]
    ok, feedback = grade(q, "a rectangle")
    assert not ok and "could not be read" in feedback and "4x6" in feedback
    assert parse_shape("4 × 6") == (4, 6) and parse_shape("none") is None


def test_sign_and_number_spellings():
    assert parse_sign("+") == parse_sign("Positive ") == parse_sign("> 0") == "positive"
    assert parse_sign("−") == parse_sign("neg") == "negative" and parse_sign("0") == "zero"
    assert parse_sign("maybe") is None
    assert parse_number("1/2") == parse_number(".5") == parse_number("0,5") == parse_number("50%") == 0.5
    assert parse_number("-1e-3") == -0.001 and parse_number("2**8") is None and parse_number("1/0") is None
    assert parse_number("__import__('os')") is None


def test_choice_answers_ignore_case_and_accept_the_word():
    trace = run_forward(Config(sentence="I love you today"))
    q = next(q for q in make_questions(trace, 0) if q.id.startswith("attends"))
    word = q.answer.strip("“”")
    assert grade(q, word.upper())[0] and grade(q, f"  {word} ")[0] and grade(q, f"“{word}”")[0]
    others = [c for c in q.choices if c.casefold() not in q.expected]
    assert others and not any(grade(q, c)[0] for c in others)


def test_repeated_words_need_the_position_label():
    trace = run_forward(CONFIGS[1])
    for seed in range(20):
        q = next(q for q in make_questions(trace, seed) if q.id.startswith("attends"))
        if q.answer in ("“the (0)”", "“the (4)”"):
            assert not grade(q, "the")[0] and grade(q, q.answer)[0]
            return
    pytest.skip("no seed picked a row that attends most to a repeated word")


def test_each_configuration_gives_new_questions_and_the_same_one_repeats():
    a = [(q.id, q.prompt) for q in make_questions(run_forward(CONFIGS[0]), 0)]
    assert a == [(q.id, q.prompt) for q in make_questions(run_forward(CONFIGS[0]), 0)]
    b = [(q.id, q.prompt) for q in make_questions(run_forward(CONFIGS[0].replace(seed=1)), 0)]
    c = [(q.id, q.prompt) for q in make_questions(run_forward(CONFIGS[0].replace(sentence="we like you")), 0)]
    assert a != b and a != c
    assert len({tuple(q.id for q in make_questions(run_forward(CONFIGS[1]), s)) for s in range(5)}) > 1


def test_a_gradient_step_drives_the_sign_question():
    trace = run_forward(Config())
    g = np.array([[0.5, -0.25, 0.0, 1e-15], [0.0, 0.0, 0.0, 0.0], [0.0, 0.0, -2.0, 0.0]])
    trace.add("dL/dw_q", "∂L/∂W_Q", g, ("d_model", "d_k"), r"\partial L / \partial W_Q", why="A stand-in gradient.")
    for seed in range(8):
        q = next(q for q in make_questions(trace, seed) if q.kind == "sign")
        assert q.step_key == "dL/dw_q"
        value = g[q.cell]
        assert abs(value) > 1e-9                                           # picks a clearly signed entry
        assert q.expected == ("positive" if value > 0 else "negative")
        assert grade(q, "+" if value > 0 else "-")[0] and not grade(q, "zero")[0]


def test_closed_form_derivatives_match_finite_differences():
    config = Config(sentence="the cat sat on the mat", embedding="random", d_model=8, n_heads=2, temperature=0.7,
                    mask="causal")
    trace = run_forward(config)
    eps = 1e-6
    for seed in range(10):
        rng = np.random.default_rng(seed)
        q = softmax_sign_question(trace, rng)
        *hp, i, j2 = q.cell
        s = trace["masked_scores"].value[(*hp, i)].copy()
        j = int(q.id.split(",")[2])
        up, down = s.copy(), s.copy()
        up[j2] += eps
        down[j2] -= eps
        fd = (softmax(up, temperature=0.7)[j] - softmax(down, temperature=0.7)[j]) / (2 * eps)
        expected = "zero" if abs(fd) <= 1e-9 else "positive" if fd > 0 else "negative"
        assert q.expected == expected, (q.id, fd)
        q = output_sign_question(trace, np.random.default_rng(seed))
        i, col = q.cell
        assert q.expected == ("positive" if trace["concat"].value[i, col] > 0 else "negative")
        q = context_sign_question(trace, np.random.default_rng(seed))
        assert q.expected == ("positive" if trace["v_heads"].value[q.cell] > 0 else "negative")


def test_unreadable_answers_say_how_to_type_them():
    for q in make_questions(run_forward(CONFIGS[2]), 3):
        ok, feedback = grade(q, "¯\\_(ツ)_/¯")
        assert not ok
        if q.kind != "choice":
            assert "could not be read" in feedback and q.hint in feedback
