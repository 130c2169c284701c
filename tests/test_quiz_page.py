"""The quiz page through AppTest: a sign question's verdict and explanation, an unreadable answer asked again."""
from attention_core.labs.quiz import grade, make_questions
from tests.apptest_util import no_exception, open_page
from ui.cache import get_trace
from ui.text import md_escape


def questions_on(at):
    return make_questions(get_trace(at.session_state["s.last_good"]), seed=0)


def check(at, questions, q):
    """Click the Check button of question q (one per unanswered question, in order)."""
    buttons = [b for b in at.button if b.label == "Check"]
    buttons[[p.id for p in questions].index(q.id)].click().run()


def test_a_sign_question_is_answered_up_down_or_stay_and_explained_with_its_derivative():
    at = open_page("app_pages/31_quiz.py")
    questions = questions_on(at)
    q = next(q for q in questions if q.kind == "sign")
    radio = at.radio(key=f"quiz_in:{q.id}")
    assert list(radio.options) == ["up (positive)", "down (negative)", "stay (zero)"]
    radio.set_value(q.answer)
    check(at, questions, q)
    no_exception(at)
    assert at.success and md_escape(f"the answer is {q.answer}.") in at.success[0].value
    assert md_escape(q.explanation) in [c.value for c in at.caption]
    assert at.metric[0].value == "1 / 1"


def test_an_unreadable_number_is_asked_again_not_marked_wrong():
    at = open_page("app_pages/31_quiz.py")
    questions = questions_on(at)
    q = next(q for q in questions if q.kind == "number")
    at.text_input(key=f"quiz_in:{q.id}").input("a lot")
    check(at, questions, q)
    no_exception(at)
    assert any("could not be read as a number" in w.value for w in at.warning)
    assert not at.error and at.metric[0].value == "0 / 0"
    assert at.text_input(key=f"quiz_in:{q.id}")                      # still asked


# ---- issue 13: RoPE, ALiBi, grouped KV heads, the sliding window --------------------------------------

ROPE_GQA = {"positional": "rope", "n_heads": "4", "n_kv_heads": "2", "mask": "causal"}
ALIBI_WINDOW = {"positional": "alibi", "n_heads": "3", "mask": "sliding_window", "window": "2",
                "sentence": "the cat sat on the mat"}


def test_the_symbols_line_follows_the_settings():
    at = open_page("app_pages/31_quiz.py", query=ROPE_GQA)
    no_exception(at)
    captions = "\n".join(c.value for c in at.caption)
    assert md_escape("here S̃.") in captions and md_escape("Q^R and K^R") in captions
    assert md_escape("H_kv = 2 key/value heads: query head h reads K_⌊h/g⌋ and V_⌊h/g⌋, g = H / H_kv = 2.") in captions
    at = open_page("app_pages/31_quiz.py", query={"positional": "alibi"})
    captions = "\n".join(c.value for c in at.caption)
    assert md_escape("here Ŝ + B.") in captions and md_escape("(B_h)[i,j] = −m_h |i − j|") in captions
    assert "Q^R" not in captions and "H_kv" not in captions
    at = open_page("app_pages/31_quiz.py", query=ALIBI_WINDOW)
    assert md_escape("sliding window W = 2 hides key j from query i unless 0 ≤ i − j < W") in "\n".join(
        c.value for c in at.caption)


def test_every_question_on_the_page_is_answered_right_under_the_new_settings():
    """Each question's own answer is graded right on the page (and shows its step), under RoPE + GQA and under
    ALiBi with 3 heads and a window; the score counts them all."""
    for query in (ROPE_GQA, ALIBI_WINDOW):
        at = open_page("app_pages/31_quiz.py", query=query)
        questions = questions_on(at)
        assert {q.kind for q in questions} >= {"shape", "choice", "sign", "number", "yesno"}
        for n, q in enumerate(questions):
            if q.choices:
                at.radio(key=f"quiz_in:{q.id}").set_value(next(c for c in q.choices if grade(q, c)[0]))
            else:
                at.text_input(key=f"quiz_in:{q.id}").input(q.answer)
            check(at, questions[n:], q)                                  # the answered ones lose their button
            no_exception(at)
        assert not at.error and len(at.success) == len(questions)
        assert at.metric[0].value == f"{len(questions)} / {len(questions)}"
