"""The quiz page through AppTest: a sign question's verdict and explanation, an unreadable answer asked again."""
from attention_core.quiz import make_questions
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
