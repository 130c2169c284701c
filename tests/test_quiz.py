"""Quiz questions from the live trace: their answers are right, answers are normalised, wrong ones fail."""
import itertools
import math

import numpy as np
import pytest

from attention_core.math import notation
from attention_core import Config, run_forward
from attention_core.forward.claims import CLAIMS, shown_outside
from attention_core.labs.quiz import (PLAIN_SCORES, Question, _at, context_question_at, context_sign_question,
                                      grade, make_questions, output_sign_question, parse_number, parse_shape,
                                      parse_sign, score_step_symbol, softmax_scores, softmax_sign_question)
from tests.old_defaults import toy_config

CONFIGS = [
    Config(),
    Config(sentence="the cat sat on the mat", embedding="random", d_model=8, n_heads=2, mask="causal", bias=True),
    Config(sentence="we like the dog today", score="additive", mask="padding", padding=(2,), temperature=0.5),
    Config(sentence="i love you", score="bilinear", positional="index", n_heads=2, embedding="random", d_model=7),
    # issue 13: RoPE, ALiBi, grouped KV heads, the sliding window
    Config(positional="rope", n_heads=4, n_kv_heads=2, mask="causal"),
    Config(sentence="the cat sat on the mat", positional="alibi", n_heads=3, mask="sliding_window", window=2),
    Config(sentence="we like the dog today", embedding="random", weights="random", d_model=8, n_heads=4, n_kv_heads=1,
           score="bilinear"),
    Config(positional="rope", score="additive", mask="padding", padding=(1,), d_k=6),
    Config(positional="alibi", temperature=0.5),
]
CONFIG_IDS = ["default", "heads-causal", "additive-padding", "bilinear-heads", "rope-gqa-causal", "alibi3-window",
              "mqa-bilinear", "rope-additive-padding", "alibi-T0.5"]
WRONG = {"shape": "999 x 1", "number": "12345", "yesno": None, "sign": None, "choice": "not a word here"}


def wrong_answer(q: Question) -> str:
    if q.kind == "yesno":
        return "no" if q.expected else "yes"
    if q.kind == "sign":
        return next(s for s in ("positive", "negative", "zero") if s != q.expected)
    return WRONG[q.kind]


@pytest.mark.parametrize("config", CONFIGS, ids=CONFIG_IDS)
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
    assert parse_sign("up") == parse_sign("up (positive)") == "positive"
    assert parse_sign("Down") == parse_sign("down (negative)") == "negative"
    assert parse_sign("stay") == parse_sign("stay (zero)") == "zero"
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


# ---- sign questions: the derivative asked is the one graded, checked by finite differences -----------

SETTINGS = [Config(sentence=sentence, n_heads=heads, score=score, mask=mask, padding=padding, temperature=t,
                   embedding=embedding, weights=weights, d_model=8)
            for heads in (1, 2, 4) for score in ("dot", "scaled_dot", "additive", "bilinear")
            for mask, padding in (("none", ()), ("causal", ()), ("padding", (1, 3)))
            for t, sentence, embedding, weights in ((0.5, "the cat sat on the mat", "random", "random"),
                                                     (2.0, "I love you today", "glove", "trained"),
                                                     (1.0, "we like the dog today", "glove", "random"))]
TRIPLES = ((0.5, "the cat sat on the mat", "random", "random"), (2.0, "I love you today", "glove", "trained"),
           (1.0, "we like the dog today", "glove", "random"))
NEW_SETTINGS = [Config(sentence=sentence, n_heads=heads, n_kv_heads=kv, positional=positional, score=score, mask=mask,
                       window=2, padding=(1, 3) if mask == "padding" else (), temperature=t, embedding=embedding,
                       weights=weights, d_model=8)
                for n, ((heads, kv), positional, score, mask) in enumerate(itertools.product(
                    ((1, 0), (2, 1), (4, 2), (3, 0)), ("rope", "alibi"), ("dot", "scaled_dot", "additive", "bilinear"),
                    ("none", "causal", "sliding_window", "padding")))
                for t, sentence, embedding, weights in [TRIPLES[n % 3]]]          # issue 13's settings
EPS = 1e-6


def setting_id(c: Config) -> str:
    kv = f"/{c.kv_heads}" if c.kv_heads < c.n_heads else ""
    return f"H{c.n_heads}{kv}-{c.positional}-{c.score}-{c.mask}-T{c.temperature:g}"


def plain_softmax(z):
    """exp(z) / Σ exp(z) over the last axis, −∞ entries giving 0: written again here, not imported."""
    e = np.exp(z - z[np.isfinite(z)].max())
    return e / e.sum()


def blocks(trace):
    """(S̃ softmax reads, A, V, C), each (H, n, ·), and T: from the trace's own steps. V's block h is the KV head
    query head h reads, ⌊h/g⌋ (each KV head repeated for its g query heads), checked by C_h = A_h V_{⌊h/g⌋}."""
    config = trace.facts["config"]
    s = trace[trace.facts["softmax_input"]].value
    v = trace["v_heads" if config.n_heads > 1 else "v"].value
    if config.n_heads > 1:
        v = np.repeat(v, config.n_heads // config.kv_heads, axis=0)        # (H_kv, n, d_v) -> (H, n, d_v)
    a, c = trace["weights"].value, trace["context"].value
    out = [x if x.ndim == 3 else x[None] for x in (s, a, v, c)]
    np.testing.assert_allclose(out[1] @ out[2], out[3], rtol=0, atol=1e-12)
    return out, config.temperature


def nudged(s_row, k, eps, t):
    """Row of weights after raising score k by eps: softmax(S̃[i,:] / T) re-run."""
    up = s_row.copy()
    up[k] += eps
    return plain_softmax(up / t)


def check_sign(q, fd, value):
    """The graded sign is the sign of the finite difference, 'zero' only where nothing moves at all; the
    question's number is the finite difference and the closed form `value` the test computes, and its
    explanation shows it."""
    assert q.value == pytest.approx(value, rel=1e-12, abs=1e-300), (q.id, q.value, value)
    if q.expected == "zero":
        assert value == 0 and abs(fd) <= 1e-12, (q.id, fd, value)
        return True
    assert q.expected == ("positive" if fd > 0 else "negative"), (q.id, q.prompt, fd, value)
    assert fd == pytest.approx(q.value, rel=1e-4, abs=1e-8), (q.id, fd, q.value)
    assert f"{q.value:.4g}".replace("-", "−") in q.explanation, (q.id, q.explanation)
    return True


def test_context_question_is_graded_by_the_change_through_softmax_on_the_issues_numbers():
    """Issue 12: 'today' attending more to 'i' (toy settings, the defaults then) was graded 'up' by
    V[0,0] = 0.0585, while C[3,0] = 0.888 goes down. Now the score Ŝ[3,0] is raised and softmax re-run."""
    trace = run_forward(toy_config())
    (s, a, v, c), t = blocks(trace)
    assert v[0, 0, 0] == pytest.approx(0.0585, abs=1e-4) and c[0, 3, 0] == pytest.approx(0.8876, abs=1e-4)
    q = context_question_at(trace, 0, 3, 0, 0)
    value = a[0, 3, 0] * (v[0, 0, 0] - c[0, 3, 0])                      # T = 1: 0.2618 × (0.0585 − 0.8876)
    assert value == pytest.approx(-0.2170, abs=1e-4)
    assert (q.expected, q.answer) == ("negative", "down (negative)")
    assert grade(q, "down")[0] and not grade(q, "up")[0] and not grade(q, "positive")[0]
    assert "attended a little more to “i”" in q.prompt and "Ŝ[3,0]" in q.prompt and "∂C[3,0]/∂Ŝ[3,0]" in q.prompt
    assert "0.2618 × (0.0585 − 0.8876) = −0.217." in q.explanation
    fd = (plain_softmax(s[0, 3] / t) @ v[0, :, 0], nudged(s[0, 3], 0, EPS, t) @ v[0, :, 0])
    assert fd[1] < fd[0]                                                 # the context does go down
    check_sign(q, (fd[1] - fd[0]) / EPS, value)


def test_context_question_on_the_defaults_is_not_graded_by_the_sign_of_v():
    trace = run_forward(Config())
    (s, a, v, c), t = blocks(trace)
    q = context_question_at(trace, 0, 3, 0, 3)                           # V[0,3] = 5.33 > 0, C[3,3] = 6.09
    assert v[0, 0, 3] > 0 and c[0, 3, 3] > v[0, 0, 3]
    assert q.expected == "negative"
    fd = (nudged(s[0, 3], 0, 1e-3, t) - nudged(s[0, 3], 0, -1e-3, t)) @ v[0, :, 3] / 2e-3
    assert check_sign(q, fd, a[0, 3, 0] * (v[0, 0, 3] - c[0, 3, 3]))


@pytest.mark.parametrize("config", SETTINGS + NEW_SETTINGS, ids=setting_id)
def test_sign_answers_match_finite_differences_through_softmax(config):
    """Over random questions: raise the score softmax reads by ε, re-run softmax and A V (or O = C W_O);
    the change has the graded sign and the explanation's value."""
    trace = run_forward(config)
    (s, a, v, c), t = blocks(trace)
    assert np.allclose(np.nan_to_num(a), [[plain_softmax(r / t) if np.isfinite(r).any() else 0 * r for r in b]
                                          for b in s])                   # the softmax the test re-runs is the pass's
    heads = config.n_heads > 1
    for seed in range(12):
        q = context_sign_question(trace, np.random.default_rng(seed))
        h, i, m, d = q.cell if heads else (0, *q.cell)
        fd = (nudged(s[h, i], m, EPS, t) - nudged(s[h, i], m, -EPS, t)) @ v[h, :, d] / (2 * EPS)
        check_sign(q, fd, a[h, i, m] * (v[h, m, d] - c[h, i, d]) / t)

        q = softmax_sign_question(trace, np.random.default_rng(seed))
        h, i, j, k = q.cell if heads else (0, *q.cell)
        fd = (nudged(s[h, i], k, EPS, t) - nudged(s[h, i], k, -EPS, t))[j] / (2 * EPS)
        check_sign(q, fd, a[h, i, j] * ((j == k) - a[h, i, k]) / t)

        q = output_sign_question(trace, np.random.default_rng(seed))
        i, r, j = q.cell
        cat = trace["concat" if heads else "context"].value              # (n, H·d_v)
        w_o, b_o = trace["w_o"].value, trace["b_o"].value if config.bias else 0.0
        assert np.allclose(cat @ w_o + b_o, trace["output"].value)
        nudge = np.zeros_like(w_o)
        nudge[r, j] = EPS
        check_sign(q, ((cat @ (w_o + nudge) + b_o) - (cat @ (w_o - nudge) + b_o))[i, j] / (2 * EPS), cat[i, r])


def test_a_row_with_one_visible_key_stays_and_says_why():
    """Causal row 0 sees key 0 only: A[0,0] = 1 whatever its score, so C[0] and A[0,0] stay."""
    trace = run_forward(Config(mask="causal", temperature=0.5))
    q = context_question_at(trace, 0, 0, 0, 2)
    assert (q.expected, q.answer) == ("zero", "stay (zero)") and "only" in q.prompt and "S̃[0,0]" in q.prompt
    (s, a, v, c), t = blocks(trace)
    assert np.array_equal(nudged(s[0, 0], 0, 0.5, t), a[0, 0])          # even a large nudge moves nothing
    zeros = [q for seed in range(40) for q in [softmax_sign_question(trace, np.random.default_rng(seed))]
             if q.expected == "zero"]
    assert zeros and all("hidden" in q.explanation or "one visible key" in q.explanation for q in zeros)


def test_every_key_hidden_leaves_only_the_output_question_and_it_stays():
    """A padding mask hiding every key: no score softmax could raise, C = 0, so ∂O[i,j]/∂W_O[r,j] = 0."""
    trace = run_forward(Config(mask="padding", padding=(0, 1, 2, 3)))
    rng = np.random.default_rng(0)
    assert context_sign_question(trace, rng) is None and softmax_sign_question(trace, rng) is None
    q = next(q for q in make_questions(trace, 0) if q.kind == "sign")
    i, r, j = q.cell
    assert q.id.startswith("sign:dO/dW_O") and (q.expected, q.answer) == ("zero", "stay (zero)")
    assert trace["context"].value[i, r] == 0 and "Every key is hidden" in q.explanation


def test_scores_are_named_as_softmax_reads_them():
    """S (dot, additive, bilinear), Ŝ (scaled dot), S + B or Ŝ + B (ALiBi's bias, no mask), S̃ (with a mask):
    notation.softmax_input decides, and it is the step the forward pass hands to softmax; the questions
    differentiate by that one ((Ŝ_h + B_h)[i,k] with ALiBi and heads)."""
    for config in SETTINGS[::5] + NEW_SETTINGS[::3]:
        trace = run_forward(config)
        symbol, values = softmax_scores(trace)
        assert symbol == PLAIN_SCORES[notation.softmax_input(config)] == score_step_symbol(
            trace, trace.facts["softmax_input"])
        assert values is trace[trace.facts["softmax_input"]].value
        if config.positional == "alibi" and config.mask == "none":
            assert symbol == ("Ŝ + B" if config.score == "scaled_dot" else "S + B")
        for seed in range(3):
            for make in (context_sign_question, softmax_sign_question):
                q = make(trace, np.random.default_rng(seed))
                cell = q.cell if config.n_heads > 1 else (None, *q.cell)
                h, i, key = cell[0], cell[1], cell[2] if make is context_sign_question else cell[3]
                score = _at(symbol, h, i, key)
                assert f"/∂{score})?" in q.prompt, (score, q.prompt)
                assert score in q.explanation or q.expected == "zero", q.explanation
                assert "/∂A" not in q.prompt                               # the held-still ∂C/∂A is not asked


def test_gradient_sign_question_is_the_sign_torch_autograd_gives():
    """A classifier trace's ∂L/∂(parameter) entries: the graded sign is torch autograd's."""
    torch = pytest.importorskip("torch")   # noqa: F841
    from attention_core import classifier as clf
    params = clf.init_params(d_in=5, d_k=3, d_v=4, seed=2)
    x = np.random.default_rng(0).standard_normal((4, 5))
    _, trace = clf.forward(params, x, "positive")
    clf.backward(params, x, "positive", trace)
    _, auto = clf.torch_loss_and_gradients(params, x, "positive")
    checked = zeros = 0
    for seed in range(40):
        q = next(q for q in make_questions(trace, seed) if q.kind == "sign")
        name = q.step_key.removeprefix("dL/d")
        assert q.prompt.startswith(f"Is {trace[q.step_key].title}[")
        if name in auto:
            g = auto[name][q.cell]
            assert q.expected == ("zero" if abs(g) <= 1e-12 else "positive" if g > 0 else "negative"), (q.id, g)
            checked += 1
            zeros += q.expected == "zero"
    assert checked >= 10 and zeros                    # ∂L/∂b_K is 0: softmax ignores a shift of a whole row


def test_which_head_is_the_argmax_of_each_heads_softmax_in_torch():
    """The head question's answer against every head's weights recomputed by torch from Q_h, K_h."""
    torch = pytest.importorskip("torch")
    from attention_core.math.rope import rotary_complex
    for config in (Config(n_heads=4, mask="causal", temperature=0.5), Config(n_heads=2, score="dot"),
                   Config(n_heads=4, embedding="random", weights="random", sentence="the cat sat on the mat"),
                   Config(n_heads=4, n_kv_heads=2, positional="rope", mask="causal"),
                   Config(n_heads=3, positional="alibi", mask="sliding_window", window=2,
                          sentence="the cat sat on the mat")):
        trace = run_forward(config)
        q_h, k_h = (trace[key].value for key in ("q_heads", "k_heads"))   # (H, n, d_k), (H_kv, n, d_k)
        if config.positional == "rope":                                   # RoPE's complex form, not the pass's code
            q_h, k_h = rotary_complex(q_h, base=config.pe_base), rotary_complex(k_h, base=config.pe_base)
        q_h, k_h = torch.tensor(q_h), torch.tensor(k_h).repeat_interleave(config.n_heads // config.kv_heads, dim=0)
        s = q_h @ k_h.transpose(-1, -2) / (math.sqrt(config.d_k) if config.score == "scaled_dot" else 1)
        i = torch.arange(trace.n)
        if config.positional == "alibi":                                  # the paper's slopes for H = 3
            slopes = torch.tensor([2.0 ** -4, 2.0 ** -8, 2.0 ** -2], dtype=torch.float64)
            s = s - slopes[:, None, None] * (i[:, None] - i[None, :]).abs()
        if config.mask == "causal":
            s = s.masked_fill(~torch.ones(trace.n, trace.n, dtype=torch.bool).tril(), float("-inf"))
        if config.mask == "sliding_window":
            offset = i[:, None] - i[None, :]
            s = s.masked_fill(~((offset >= 0) & (offset < config.window)), float("-inf"))
        a = torch.softmax(s / config.temperature, dim=-1).numpy()          # (H, n, n)
        np.testing.assert_allclose(a, trace["weights"].value, rtol=0, atol=1e-12)
        for seed in range(6):
            q = next(q for q in make_questions(trace, seed) if q.id.startswith("head:"))
            _, i, j = q.cell
            assert q.expected == {f"head {int(np.argmax(a[:, i, j]))}", str(int(np.argmax(a[:, i, j]))),
                                  f"h{int(np.argmax(a[:, i, j]))}", f"head{int(np.argmax(a[:, i, j]))}"}
            assert f"A_h[{i},{j}]" in q.prompt and f"0 … {config.n_heads - 1}" in q.prompt


def test_column_sum_explanation_says_rows_sum_to_one_only_where_they_do():
    """The claim quiz_rows_not_columns: where it holds every row of A sums to 1; elsewhere (a padding mask
    hiding every key) every weight is 0, as its `otherwise` says; the question shows the one that is true."""
    claim = CLAIMS["quiz_rows_not_columns"]
    everything_hidden = Config(mask="padding", padding=(0, 1, 2, 3))
    for config in [everything_hidden, Config(mask="padding", padding=(0, 2)), *SETTINGS[::7], *NEW_SETTINGS[::9]]:
        trace = run_forward(config)
        a = trace["weights"].value
        if claim.holds(config):
            assert np.allclose(a.sum(axis=-1), 1)
        else:
            assert not a.any()
        shown = claim.text if claim.holds(config) else claim.otherwise
        for seed in range(3):
            q = next(q for q in make_questions(trace, seed) if q.id.startswith("colsum"))
            assert shown in q.explanation and shown_outside(q.prompt + q.explanation, config) == []
    assert not claim.holds(everything_hidden)


def test_question_text_follows_the_notation():
    """Heads counted from 0 (never head H), symbols C/O/A rather than 'context['/'output[', tutorials not seeds."""
    for config in SETTINGS[::3] + NEW_SETTINGS[::3]:
        trace = run_forward(config)
        for seed in range(4):
            for q in make_questions(trace, seed):
                text = q.prompt + " " + q.explanation + " " + q.answer
                assert f"head {config.n_heads}" not in text and f"A_{config.n_heads}[" not in text, text
                assert f"V_{config.kv_heads}[" not in text and f"KV head {config.kv_heads}" not in text, text
                if config.kv_heads < config.n_heads:
                    assert "own columns of W_Q, W_K, W_V" not in text, text
                assert "context[" not in text and "output[" not in text and "seed 00" not in text.lower(), text
                assert "n_heads" not in text
                if q.kind == "sign":
                    assert q.answer in q.choices and grade(q, q.answer)[0]


def test_unreadable_answers_say_how_to_type_them():
    for q in make_questions(run_forward(CONFIGS[2]), 3):
        ok, feedback = grade(q, "¯\\_(ツ)_/¯")
        assert not ok
        if q.kind != "choice":
            assert "could not be read" in feedback and q.hint in feedback


# ---- issue 13: the questions under RoPE, ALiBi, grouped KV heads and the sliding window ------------------

def test_grouped_kv_heads_are_named_and_counted_by_h_kv():
    """With H_kv < H: the facts line gives H_kv, K's and W_K's shapes and sizes use H_kv·d_k, the context question
    reads V_{⌊h/g⌋} (the KV head query head h reads), and the head question does not claim every head its own W_K."""
    config = Config(positional="rope", n_heads=4, n_kv_heads=2, mask="causal")
    trace = run_forward(config)
    seen = set()
    for seed in range(40):
        for q in make_questions(trace, seed):
            if q.id in ("shape:k", "shape:w_k", "shape:k_heads", "shape:k_rot", "params:w_k", "params:w_v"):
                assert "H = 4 heads, H_kv = 2 key/value heads (grouped-query attention)" in q.prompt
                assert q.expected == (trace[q.step_key].shape if q.kind == "shape" else trace[q.step_key].value.size)
                seen.add(q.id)
            if q.id == "shape:k":
                assert q.expected == (trace.n, 2 * config.d_k) and "H_kv·d_k=8" in q.explanation
            if q.id in ("shape:k_heads", "shape:k_rot"):
                assert q.expected[0] == 2 and "all H_kv = 2 KV heads, stacked" in q.prompt
                assert "H_kv=2 × n=4 × d_k=4" in q.explanation
            if q.id.startswith("head:"):
                assert "share one KV head's columns of W_K, W_V (query head h reads KV head ⌊h/2⌋)" in q.explanation
            if q.id.startswith("scaled:"):
                h = q.cell[0]
                assert f"S_{h} = Q^R_{h} (K^R_{h // 2})ᵀ" in q.explanation
    assert {"params:w_k", "params:w_v"} & seen and {"shape:k", "shape:w_k", "shape:k_heads", "shape:k_rot"} & seen
    for h in range(4):                                                      # every query head's values: V_{⌊h/2⌋}
        q = context_question_at(trace, h, 3, 1, 0)
        assert f"V_{h // 2}[1,0]" in q.explanation and f"reads KV head ⌊{h}/2⌋ = {h // 2}" in q.explanation
        (s, a, v, c), t = blocks(trace)
        fd = (nudged(s[h, 3], 1, EPS, t) - nudged(s[h, 3], 1, -EPS, t)) @ v[h, :, 0] / (2 * EPS)
        check_sign(q, fd, a[h, 3, 1] * (v[h, 1, 0] - c[h, 3, 0]) / t)


def test_alibi_questions_read_the_biased_scores():
    """ALiBi without a mask: softmax reads Ŝ + B, and a sign question raises (Ŝ + B)[i,k] or (Ŝ_h + B_h)[i,k]."""
    for config, want in ((Config(positional="alibi"), "(Ŝ + B)["),
                         (Config(positional="alibi", n_heads=3, score="dot", embedding="random", weights="random",
                                 d_model=6), "(S_"),
                         (Config(positional="alibi", mask="causal"), "S̃[")):
        trace = run_forward(config)
        for seed in range(4):
            q = softmax_sign_question(trace, np.random.default_rng(seed))
            assert want in q.prompt, q.prompt
            if config.n_heads > 1:
                h, i, _, k = q.cell
                assert f"(S_{h} + B_{h})[{i},{k}]" in q.prompt
            np.testing.assert_array_equal(softmax_scores(trace)[1], trace[trace.facts["softmax_input"]].value)


def test_sliding_window_questions_say_why_a_key_is_hidden():
    config = Config(sentence="the cat sat on the mat today", positional="alibi", n_heads=3, mask="sliding_window",
                    window=2)
    trace = run_forward(config)
    asked = 0
    for seed in range(12):
        q = next(q for q in make_questions(trace, seed) if q.id.startswith("masked:"))
        i, j = q.cell
        assert trace["mask"].value[i, j] == 0 and not trace["weights"].value[:, i, j].any()
        rule = f"i − j = {i - j} ≥ W = 2" if i - j >= 2 else f"j = {j} comes after i = {i}"
        assert f"the sliding window (0 ≤ i − j < W) hides it: {rule}, so M[{i},{j}] = 0" in q.prompt
        assert grade(q, "0")[0]
        asked += 1
    assert asked
