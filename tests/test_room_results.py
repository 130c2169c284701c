"""The teacher's own question, a lesson's check and what the class learned (issue 31 items 3 and 4): the question's
checks and their words (classroom/questions.py), a lesson's "check" read and refused (classroom/lesson.py), the
room's log of every question (classroom/room.py), the shares, ⟨g⟩, the CSV and the summary from known answers
(classroom/results.py), the room's data gone at once from both stores, and on screen (AppTest): the own-question
form (markup typed into it shown as text, a wrong question refused with its words and the form kept), the check in
the teacher's bar and the room page's box with its exact ⟨g⟩."""
from __future__ import annotations

import csv
import io
import json

import pytest
from streamlit.testing.v1 import AppTest

import classroom
from classroom import results
from classroom.lesson import Check, Lesson, LessonError, Stop, from_dict, from_json, from_link, to_json, to_link
from classroom.questions import own_poll, problem
from classroom.room import answer, close_poll, end_room, join, open_poll, open_room
from tests.apptest_util import no_exception
from ui.classroom.results_view import CSV_BUTTON as CSV
from ui.classroom.results_view import SUMMARY_BUTTON as SUMMARY

MARKUP = "**x** <b>y</b>"


# --- the teacher's own question ------------------------------------------------------------------------------

@pytest.mark.parametrize("prompt, choices, right, words", [
    ("", ["a", "b"], 0, "Write the question first."),
    ("  \t ", ["a", "b"], 0, "Write the question first."),
    ("Q?", "only one\n\n", 0, "Write at least 2 choices, one a line (you wrote 1)."),
    ("Q?", list("abcdefg"), 0, "Write at most 6 choices (you wrote 7): a class reads them on a phone."),
    ("Q?", ["Love", " love "], 0, "Two choices read the same (“Love” and “love”): make each one different."),
    ("Q?", ["a", "b"], None, "Pick the right choice."),
    ("Q?", ["a", "b"], True, "Pick the right choice."),
    ("Q?", ["a", "b"], 2, "The right choice is C, but there are only 2 choices: pick A or B."),
    ("Q?", list("abc"), 4, "The right choice is E, but there are only 3 choices: pick one of A to C."),
    ("x" * 301, ["a", "b"], 0, "The question is longer than 300 characters: shorten it."),
])
def test_a_wrong_question_is_refused_in_words(prompt, choices, right, words):
    assert problem(prompt, choices, right) == words
    with pytest.raises(classroom.BadMessage, match="^" + words.replace("(", r"\(").replace(")", r"\)")):
        own_poll(prompt, choices, right)


def test_an_own_question_is_kept_as_typed_and_logged():
    s = classroom.MemoryStore()
    code, secret = open_room(s)
    poll = own_poll(f"  {MARKUP}\n?", f"{MARKUP}\n\n<i>b</i>\n  c  ", 1, "because")
    assert poll == {"kind": "own", "prompt": f"{MARKUP} ?", "choices": [MARKUP, "<i>b</i>", "c"], "answer": 1,
                    "explanation": "because"}
    pid = open_poll(s, code, secret, poll)
    close_poll(s, code, secret)
    logged = json.loads(s.hget(f"room:{code}:log", pid))
    assert (logged["prompt"], logged["choices"], logged["answer"]) == (f"{MARKUP} ?", [MARKUP, "<i>b</i>", "c"], 1)
    with pytest.raises(classroom.BadMessage, match="before the lesson"):
        open_poll(s, code, secret, {**poll, "phase": "during"})
    pre = open_poll(s, code, secret, {**poll, "phase": "pre", "check": 0})
    with pytest.raises(classroom.BadMessage, match="^A question of the check before the lesson is not revealed"):
        classroom.reveal(s, code, secret, pre)
    assert classroom.state(s, code).poll["revealed"] is False


# --- a lesson's check ----------------------------------------------------------------------------------------

BANK = {"page": "scores", "query": {"d_k": "4"}, "poll": "scaled_score", "poll_at": {"row": "0", "col": "1"}}
OWN = {"prompt": "Which sums to 1?", "choices": ["a row of A", "a column of A"], "answer": 0}


def test_a_lessons_check_round_trips():
    lesson = from_dict({"title": "T", "stops": [{"title": "S", "page": "scores"}], "check": [BANK, OWN]})
    assert lesson.check == (Check("scores", {"d_k": "4"}, "scaled_score", {"row": "0", "col": "1"}),
                            Check(prompt="Which sums to 1?", choices=("a row of A", "a column of A"), answer=0))
    assert from_json(to_json(lesson)) == lesson and from_link(to_link(lesson)) == lesson
    assert json.loads(to_json(lesson))["check"] == [BANK, OWN]
    plain = Lesson("T", "", (Stop("S", "scores"),))
    assert "check" not in json.loads(to_json(plain))            # a lesson without a check is saved as before


@pytest.mark.parametrize("check, words", [
    ({"x": 1}, "Check question 1: give either a question of the bank (“page”, “query”, “poll”, “poll_at”) or your "
               "own (“prompt”, “choices”, “answer”)."),
    ({**BANK, **OWN}, "Check question 1: give either a question of the bank (“page”, “query”, “poll”, “poll_at”) or "
                      "your own (“prompt”, “choices”, “answer”), not both."),
    ({**OWN, "choices": ["a"]}, "Check question 1: give 2 to 6 “choices” (this one has 1)."),
    ({**OWN, "choices": list("abcdefg")}, "Check question 1: give 2 to 6 “choices” (this one has 7)."),
    ({**OWN, "choices": ["a", ""]}, "Check question 1: a choice is empty: write it or remove it."),
    ({**OWN, "choices": ["a", "b", " "]}, "Check question 1: a choice is empty: write it or remove it."),
    ({**OWN, "choices": ["a", "", "b"], "answer": 2}, "Check question 1: a choice is empty"),  # not "only 2 choices"
    ({**OWN, "choices": "a\nb"}, "Check question 1: “choices” must be a list of texts"),
    ({**OWN, "answer": 5}, "Check question 1: “answer” must be the place of the right choice in “choices”, counted "
                           "from 0: 0 to 1 here (it is 5)."),
    ({**OWN, "answer": -1}, "Check question 1: “answer” must be the place of the right choice in “choices”, "
                            "counted from 0: 0 to 1 here (it is -1)."),
    ({"prompt": "Q", "choices": ["a", "b"]}, "Check question 1: “answer” must be the place of the right choice in "
                                             "“choices”, counted from 0: 0 to 1 here."),
    ({**OWN, "choices": ["a", "A"]}, "Check question 1: Two choices read the same (“a” and “A”)"),
    ({**BANK, "poll_at": ["row"]}, "Check question 1: “poll_at” must map names to values"),
    ("a question", "Check question 1 is not an object."),
])
def test_a_wrong_check_says_what_is_wrong(check, words):
    with pytest.raises(LessonError) as err:
        from_dict({"title": "T", "stops": [{"title": "S"}], "check": [check]})
    assert str(err.value).startswith(words), err.value
    with pytest.raises(LessonError, match="at most 10 questions"):
        from_dict({"title": "T", "stops": [{"title": "S"}], "check": [OWN] * 11})
    with pytest.raises(LessonError, match="must be a list"):
        from_dict({"title": "T", "stops": [{"title": "S"}], "check": OWN})


def test_a_bank_check_question_is_the_bank_poll_on_its_own_view():
    """Asked from any page: made on the check's view (its link's settings), not the teacher's; pinned by poll_at."""
    from attention_core import Config, run_forward
    from attention_core.labs.polls import make_poll
    from ui.room.check import check_poll
    body, why = check_poll(from_dict({"title": "T", "stops": [{"title": "S"}], "check": [BANK]}).check[0], "pre", 0, 2)
    expected = make_poll("scaled_score", run_forward(Config(d_k=4)), 0, at={"row": "0", "col": "1"}).to_dict()
    assert why == "" and {k: body[k] for k in expected} == expected
    assert (body["phase"], body["check"], body["check_n"]) == ("pre", 0, 2)
    unfit = Check("scores", {}, "scaled_score", {"row": "99", "col": "1"})
    body, why = check_poll(unfit, "post", 1, 2)
    assert body is None and why.startswith("Check question 2 (“a scaled score Ŝ = S/√d_k”) cannot be asked")


@pytest.mark.parametrize("name", sorted(n for n, lesson in __import__("classroom.lesson").lesson.shipped().items()
                                         if lesson.check) or ["(no shipped lesson has a check yet)"])
def test_every_shipped_check_question_can_be_asked(name):
    """A shipped lesson's check (the third lesson's, when it lands): each question is made on its own view."""
    from classroom.lesson import shipped
    from ui.room.check import check_poll
    if name not in shipped():
        pytest.skip(name)
    check = shipped()[name].check
    for n, q in enumerate(check):
        body, why = check_poll(q, "pre", n, len(check))
        assert body is not None, why
        assert 0 <= body["answer"] < len(body["choices"]) <= 8


# --- what the class learned ----------------------------------------------------------------------------------

Q1 = {"prompt": f"Q1 {MARKUP}", "choices": ["a", "b", "c"], "answer": 2}
Q2 = {"prompt": "Q2", "choices": ["x", "y"], "answer": 0}


def a_class(store):
    """Ana, Ben, Cy; a check of Q1 and Q2 before and after, and one other question. Ana and Ben answer everything;
    Cy answers only before. Right answers before: Ana Q1; after: Ana Q1, Q2, Ben Q1. So over Ana and Ben (the two
    who answered every question both times) pre = 1/4 = 25 %, post = 3/4 = 75 %, ⟨g⟩ = 50 / 75 = 2/3."""
    code, secret = open_room(store, "P3")
    ana, ben, cy = (join(store, code, n) for n in ("Ana", "=Ben", "Cy"))
    picks = {("pre", 0): (2, 0, 2), ("pre", 1): (1, 1, 0), ("post", 0): (2, 2, None), ("post", 1): (0, 1, None)}
    for (phase, n), chosen in picks.items():
        pid = open_poll(store, code, secret, {**(Q1, Q2)[n], "phase": phase, "check": n, "check_n": 2})
        for member, pick in zip((ana, ben, cy), chosen):
            if pick is not None:
                answer(store, code, member, pid, pick)
        close_poll(store, code, secret)
    pid = open_poll(store, code, secret, {"prompt": "Other?", "choices": ["p", "q"], "answer": 1})
    answer(store, code, cy, pid, 1)
    return code, secret, (ana, ben, cy)


def test_the_gain_of_known_answers():
    s = classroom.MemoryStore()
    code, secret, _ = a_class(s)
    g = results.gain(s, code, secret)
    assert (g.students, g.pre, g.post) == (2, 25.0, 75.0) and g.g == pytest.approx(2 / 3, abs=1e-12)
    assert [(q.number, q.before, q.after) for q in g.questions] == [(0, (2, 3), (2, 2)), (1, (1, 3), (1, 2))]
    assert results.gain_words(g) == ("⟨g⟩ = (post − pre) / (100 − pre) = (75 − 25) / (100 − 25) = 0.67, over the 2 "
                                     "students who answered every question of the check before and after.")


def test_pre_100_and_nobody_both_times_say_so_without_dividing():
    s = classroom.MemoryStore()
    code, secret = open_room(s)
    ana = join(s, code, "Ana")
    assert results.gain(s, code, secret).g is None
    pid = open_poll(s, code, secret, {**Q2, "phase": "pre", "check": 0})
    answer(s, code, ana, pid, 0)
    g = results.gain(s, code, secret)
    assert (g.students, g.g) == (0, None) and results.gain_words(g).startswith("⟨g⟩ needs the same students")
    pid = open_poll(s, code, secret, {**Q2, "phase": "post", "check": 0})
    answer(s, code, ana, pid, 0)
    g = results.gain(s, code, secret)
    assert (g.students, g.pre, g.post, g.g) == (1, 100.0, 100.0, None)
    assert results.gain_words(g) == ("⟨g⟩ is undefined: before the lesson, the 1 student who answered every question "
                                     "of the check before and after got every answer right (pre = 100%), so there "
                                     "was nothing left to gain.")


def test_the_gain_while_the_check_after_is_under_way_names_its_questions():
    """Read NOTES-read-own.md F1: with question 1 of 2 asked after the lesson, ⟨g⟩ is over question 1 only; the
    sentence said "every question of the check". It names the questions now, and one not asked both times."""
    s = classroom.MemoryStore()
    code, secret = open_room(s)
    ana, ben = join(s, code, "Ana"), join(s, code, "Ben")
    for phase, n, picks in (("pre", 0, (1, 1)), ("pre", 1, (0, 1)), ("post", 0, (0, 0))):
        pid = open_poll(s, code, secret, {**Q2, "prompt": f"Q{n + 1}", "phase": phase, "check": n, "check_n": 2})
        answer(s, code, ana, pid, picks[0]), answer(s, code, ben, pid, picks[1])
    g = results.gain(s, code, secret)
    assert (g.students, g.pre, g.post, g.g, g.over) == (2, 0.0, 100.0, 1.0, (0,))
    assert results.gain_words(g) == (
        "⟨g⟩ = (post − pre) / (100 − pre) = (100 − 0) / (100 − 0) = 1.00, over the 2 students who answered question 1 "
        "of the check before and after (question 2 was not asked both times: it is left out).")
    pid = open_poll(s, code, secret, {**Q2, "prompt": "Q2", "phase": "post", "check": 1, "check_n": 2})
    answer(s, code, ana, pid, 1)                                  # Ben has not answered it: Ana alone, both questions
    g = results.gain(s, code, secret)
    assert (g.students, g.pre, g.post, g.over) == (1, 50.0, 50.0, (0, 1))
    assert results.gain_words(g).endswith(", over the 1 student who answered every question of the check before and "
                                          "after.")


def test_another_lessons_check_in_the_same_room_is_not_this_ones_before():
    """Read NOTES-read-own.md F6: lesson A's check before (0 %) and after (100 %), then lesson B's check before in the
    same room: pre and post were paired by the question's place alone, so B's answers became A's "before" and ⟨g⟩
    read "undefined (pre = 100%)". They are paired by the question itself now."""
    s = classroom.MemoryStore()
    code, secret = open_room(s)
    ana, ben = join(s, code, "Ana"), join(s, code, "Ben")
    qa, qb = {**Q2, "prompt": "Lesson A?"}, {**Q1, "prompt": "Lesson B?"}
    for q, phase, pick in ((qa, "pre", 1), (qa, "post", 0), (qb, "pre", 2)):
        pid = open_poll(s, code, secret, {**q, "phase": phase, "check": 0, "check_n": 1})
        answer(s, code, ana, pid, pick), answer(s, code, ben, pid, pick)
    g = results.gain(s, code, secret)
    assert [(q.prompt, q.before, q.after) for q in g.questions] == [("Lesson A?", (0, 2), (2, 2)),
                                                                     ("Lesson B?", (2, 2), None)]
    assert (g.students, g.pre, g.post, g.g) == (2, 0.0, 100.0, 1.0)
    assert results.gain_words(g).endswith("over the 2 students who answered question 1 (“Lesson A?”) of the check "
                                          "before and after (question 1 (“Lesson B?”) was not asked both times: it "
                                          "is left out).")


def test_the_summary_keeps_the_check_befores_answer_until_the_check_after():
    """Read NOTES-read-own.md F7: the summary (offered in presenter mode, "safe for a projector") marked the right
    choice of a check question asked before the lesson, whose answer the students were told is not shown yet."""
    s = classroom.MemoryStore()
    code, secret = open_room(s)
    ana = join(s, code, "Ana")
    pid = open_poll(s, code, secret, {**Q1, "phase": "pre", "check": 0, "check_n": 1})
    answer(s, code, ana, pid, 2)
    page = lambda: results.summary_html("R", results.asked(s, code, secret), results.gain(s, code, secret))
    assert "✓ right" not in page() and "the right choice is marked once the check after the lesson" in page()
    close_poll(s, code, secret)
    open_poll(s, code, secret, {**Q1, "phase": "post", "check": 0, "check_n": 1})
    assert page().count("✓ right") == 2 and "is marked once" not in page()


def test_a_negative_gain_has_the_formulas_minus_sign():
    g = results.Gain((), 2, 50.0, 25.0, -0.5)
    assert "= −0.50, over" in results.gain_words(g) and "-" not in results.gain_words(g)


def test_the_csv_rows_and_the_summary_without_names():
    s = classroom.MemoryStore()
    code, secret, (ana, ben, cy) = a_class(s)
    classroom.leave(s, code, cy)                                    # Cy's answers stay, without a name
    rows = list(csv.reader(io.StringIO(results.csv_text(results.responses(s, code, secret)))))
    assert rows[0] == ["nickname", "phase", "question", "answer", "right", "seconds"]
    body = [r[:5] for r in rows[1:]]
    left = results.LEFT
    assert body == [
        ["'=Ben", "pre", f"Q1 {MARKUP}", "A. a", "no"], ["Ana", "pre", f"Q1 {MARKUP}", "C. c", "yes"],
        [left, "pre", f"Q1 {MARKUP}", "C. c", "yes"],
        ["'=Ben", "pre", "Q2", "B. y", "no"], ["Ana", "pre", "Q2", "B. y", "no"], [left, "pre", "Q2", "A. x", "yes"],
        ["'=Ben", "post", f"Q1 {MARKUP}", "C. c", "yes"], ["Ana", "post", f"Q1 {MARKUP}", "C. c", "yes"],
        ["'=Ben", "post", "Q2", "B. y", "no"], ["Ana", "post", "Q2", "A. x", "yes"]]   # Cy's open answer went
    assert all(0.0 <= float(r[5]) < 60 for r in rows[1:])
    page = results.summary_html("Room X", results.asked(s, code, secret), results.gain(s, code, secret))
    assert "Q1 **x** &lt;b&gt;y&lt;/b&gt;" in page and "<b>y</b>" not in page
    assert "Ana" not in page and "Ben" not in page and "(left" not in page
    assert "2 of 3 right (67%)" in page and "= 0.67, over the 2 students" in page
    with pytest.raises(classroom.NotTeacher):
        results.responses(s, code, "a guess")


@pytest.mark.parametrize("kind", ["memory", "redis"])
def test_ending_the_room_deletes_every_key_of_it(kind, request):
    if kind == "memory":
        s = classroom.MemoryStore()
        keys = lambda code: [k for k in list(s._data) if k.startswith(f"room:{code}") and s.hgetall(k)]
    else:
        import redis
        from classroom.redis_store import redis_store
        url = request.getfixturevalue("redis_url")
        s, client = redis_store(url), redis.Redis.from_url(url)
        request.addfinalizer(client.close)
        keys = lambda code: client.keys(f"room:{code}*")
    code, secret, (ana, ben, cy) = a_class(s)
    from classroom import pacing, presence
    pacing.report(s, code, ana, "out", "app_pages/40_rope.py")
    pacing.remove(s, code, secret, cy)
    presence.new_token(s, code, ben)
    classroom.room.put_run(s, code, secret, b"a run")
    assert len(keys(code)) >= 15
    end_room(s, code, secret)
    assert keys(code) == []


def test_a_long_days_check_keeps_its_answers_while_the_room_lives():
    """Read NOTES-read-own.md F8: a question's answers expired ROOM_HOURS after its last answer, while the room and its
    log lived on (a question every hour): at 5.5 h the check before had '0 answered' and ⟨g⟩ said no student had
    answered both times. The room's refresh now keeps every asked question's answers as long as the room."""
    now = [0.0]
    s = classroom.MemoryStore(clock=lambda: now[0])
    code, secret = open_room(s)
    ana = join(s, code, "Ana")
    pid = open_poll(s, code, secret, {**Q2, "phase": "pre", "check": 0, "check_n": 1})
    answer(s, code, ana, pid, 1)
    for hour in range(1, 6):
        now[0] = hour * 3600.0
        pid = open_poll(s, code, secret, {**Q2, "prompt": f"hour {hour}"})
        answer(s, code, ana, pid, 0)
    now[0] = 5.5 * 3600
    pid = open_poll(s, code, secret, {**Q2, "phase": "post", "check": 0, "check_n": 1})
    answer(s, code, ana, pid, 0)
    g = results.gain(s, code, secret)
    assert [(q.before, q.after) for q in g.questions] == [((0, 1), (1, 1))] and (g.students, g.g) == (1, 1.0)
    assert len(results.responses(s, code, secret)) == 7


def test_a_push_refreshes_the_answers_on_redis(redis_url):
    import redis
    from classroom.redis_store import redis_store
    s, client = redis_store(redis_url), redis.Redis.from_url(redis_url)
    try:
        code, secret = open_room(s)
        ana = join(s, code, "Ana")
        pid = open_poll(s, code, secret, {**Q2, "phase": "pre", "check": 0})
        answer(s, code, ana, pid, 1)
        for kind in ("answers", "changes", "times"):
            client.expire(f"room:{code}:{kind}:{pid}", 60)
        classroom.push(s, code, secret, {"page": "app_pages/10_scores.py", "query": {}})
        assert all(client.ttl(f"room:{code}:{kind}:{pid}") > 3600 for kind in ("answers", "changes", "times"))
    finally:
        client.close()


# --- on screen -----------------------------------------------------------------------------------------------

def teacher_panel_script():
    import streamlit as st

    from ui.room.poll import teacher_poll_panel
    s = st.session_state
    teacher_poll_panel(s["t.store"], s["room.code"], s["room.secret"], None)


def learned_script():
    import streamlit as st

    from ui.classroom.results_view import learned_box
    st.session_state["room_learned_box"] = True
    learned_box(st.session_state["room.code"], st.session_state["room.secret"], "P3")


def test_the_own_question_form_on_screen():
    s = classroom.MemoryStore()
    code, secret = open_room(s)
    at = AppTest.from_function(teacher_panel_script, default_timeout=30)
    for k, v in {"t.store": s, "room.code": code, "room.secret": secret}.items():
        at.session_state[k] = v
    at.run()
    at.text_input(key="poll.own_prompt").set_value(MARKUP)
    at.text_area(key="poll.own_choices").set_value("only one")
    at.button[0].click().run()
    no_exception(at)
    assert [e.value for e in at.error] == ["Write at least 2 choices, one a line \\(you wrote 1\\)\\."]
    assert classroom.state(s, code).poll is None and at.text_input(key="poll.own_prompt").value == MARKUP
    at.text_area(key="poll.own_choices").set_value(f"{MARKUP}\nplain")
    at.radio(key="poll.own_right").set_value(1)
    at.button[0].click().run()
    no_exception(at)
    poll = classroom.state(s, code).poll
    assert (poll["kind"], poll["prompt"], poll["choices"], poll["answer"]) == ("own", MARKUP, [MARKUP, "plain"], 1)
    shown = " ".join(m.value for m in at.markdown)
    assert "\\*\\*x\\*\\* \\<b\\>y\\<\\/b\\>" in shown and "<b>y</b>" not in shown   # text, not bold, not HTML


def test_the_own_question_form_is_not_on_the_projector():
    """Read NOTES-read-own.md F2: in presenter mode the form showed "The right choice" (and its why) on the
    projector before the question was asked; the teacher's note is kept off it for the same reason."""
    from ui.room.own_poll import OWN_PRESENTING
    s = classroom.MemoryStore()
    code, secret = open_room(s)
    at = AppTest.from_function(teacher_panel_script, default_timeout=30)
    for k, v in {"t.store": s, "room.code": code, "room.secret": secret, "s.presenter": True}.items():
        at.session_state[k] = v
    at.run()
    no_exception(at)
    assert len(at.radio) == 0 and len(at.text_input) == 0 and len(at.text_area) == 0
    assert OWN_PRESENTING in [c.value for c in at.caption]


def learned_box_run(monkeypatch, presenter: bool) -> AppTest:
    """The room page's box, open, on a_class's room, out of or in presenter mode."""
    import ui.classroom.results_view as view
    s = classroom.MemoryStore()
    code, secret, _ = a_class(s)
    monkeypatch.setattr(view, "store", lambda: s)
    at = AppTest.from_function(learned_script, default_timeout=30)
    at.session_state["room.code"], at.session_state["room.secret"] = code, secret
    at.session_state["s.presenter"] = presenter
    at.run()
    no_exception(at)
    return at


def test_the_learned_box_says_the_gain(monkeypatch):
    at = learned_box_run(monkeypatch, presenter=False)
    tables = [t.value for t in at.table]
    assert list(tables[0]["Before"]) == ["2 of 3 right (67%)", "1 of 3 right (33%)"]
    assert list(tables[0]["After"]) == ["2 of 2 right (100%)", "1 of 2 right (50%)"]
    from ui.text import md_escape
    words = "⟨g⟩ = (post − pre) / (100 − pre) = (75 − 25) / (100 − 25) = 0.67, over the 2 students who answered " \
            "every question of the check before and after."
    assert md_escape(words) in [m.value for m in at.markdown]
    assert list(tables[1]["Asked as"]) == ["check before the lesson"] * 2 + ["check after the lesson"] * 2 + [
        "class question"]
    assert [b.proto.label for b in at.get("download_button")] == [CSV, SUMMARY]      # left, right


def test_the_learned_box_on_the_projector_has_no_names(monkeypatch):
    """Presenter mode: the shares and ⟨g⟩ and the summary without names; the CSV (names) is not offered."""
    at = learned_box_run(monkeypatch, presenter=True)
    assert [b.proto.label for b in at.get("download_button")] == [SUMMARY]
    assert any("download them out of presenter mode" in c.value for c in at.caption)
    assert len(at.table) == 2
    assert not any("The CSV has a row per answer" in c.value for c in at.caption)     # no CSV offered here


def check_bar_script():
    import streamlit as st

    from ui.room.check import check_bar
    s = st.session_state
    check_bar(s["room.code"], s["room.secret"], s["t.lesson"], 0)


def test_the_check_in_the_teachers_bar(monkeypatch):
    """Start (before the lesson), next, a question closed in the box, end; the room's polls carry phase and number.
    A one-stop lesson offers both starts; a check left from another lesson starts afresh."""
    import ui.room.check as check
    s = classroom.MemoryStore()
    code, secret = open_room(s)
    monkeypatch.setattr(check, "store", lambda: s)
    lesson = from_dict({"title": "T", "stops": [{"title": "S"}], "check": [OWN, {**OWN, "prompt": "Second?"}]})
    at = AppTest.from_function(check_bar_script, default_timeout=30)
    at.session_state["room.code"], at.session_state["room.secret"], at.session_state["t.lesson"] = code, secret, lesson
    at.session_state["room.check"] = {"phase": "post", "q": 7}              # another lesson's
    at.run()
    assert [b.label for b in at.button] == [check.START_PRE, check.START_POST] and "room.check" not in at.session_state
    at.button(key="room_check_pre").click().run()
    poll = classroom.state(s, code).poll
    assert (poll["prompt"], poll["phase"], poll["check"], poll["check_n"]) == ("Which sums to 1?", "pre", 0, 2)
    assert any("question 1 of 2 is open" in m.value and "It is not revealed" in m.value for m in at.markdown)
    at.button(key="room_check_next").click().run()
    assert (classroom.state(s, code).poll["prompt"], classroom.state(s, code).poll["check"]) == ("Second?", 1)
    close_poll(s, code, secret)
    at.run()
    assert any("question 2 of 2 was closed" in m.value for m in at.markdown)
    at.button(key="room_check_end").click().run()
    no_exception(at)
    assert classroom.state(s, code).poll is None and "room.check" not in at.session_state
    assert [q.phase for q in results.asked(s, code, secret)] == ["pre", "pre"]
    assert [c.value for c in at.caption] == [check.DONE_WORDS["pre"]]     # not "the room page shows what ... learned"
    at.button(key="room_check_post").click().run()
    at.button(key="room_check_next").click().run()
    at.button(key="room_check_end").click().run()
    no_exception(at)
    assert [c.value for c in at.caption] == [check.DONE_WORDS["post"]]
    assert "after the lesson is over: the room page shows" in check.DONE_WORDS["post"]


def what_is_kept_script():
    from ui.classroom.room_view import what_is_kept
    what_is_kept(teacher=False)


def test_a_student_is_told_the_teacher_can_download_their_answers():
    at = AppTest.from_function(what_is_kept_script, default_timeout=30).run()
    no_exception(at)
    said = " ".join(m.value for m in at.markdown)
    assert ("Your teacher can download the answers with the nicknames (a CSV file, out of presenter mode) while the "
            "room lasts; the one-page summary has counts only.") in said
    # Read NOTES-read-own.md F9: a student who leaves stays in the CSV, row by row, under results.LEFT
    assert f"as rows of the answers your teacher can download (“{results.LEFT}” instead of a nickname)" in said
