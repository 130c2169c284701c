"""The teacher's dashboard and pacing: on both stores (classroom/pacing.py), then through AppTest (a teacher and a
student sharing the process's MemoryStore): the roster's states and answers, lock and unlock, removing a student,
jumping to a stop. The same in real browsers over two processes and Redis: tests/e2e/test_room_pacing_browser.py.
"""
from __future__ import annotations

import pytest

import classroom
from classroom import pacing
from classroom.store import MemoryStore
from tests.apptest_util import no_exception
from tests.test_room_page import (ROOM, SCORES, button, follow, page_of, query_of, room_with_student, stay,
                                  student_joins, text_of)


@pytest.fixture(params=["memory", "redis"])
def store(request):
    if request.param == "memory":
        return MemoryStore()
    from classroom.redis_store import RedisStore
    return RedisStore(request.getfixturevalue("redis_url"))


def test_the_roster_says_each_students_state_answer_and_seconds(store, monkeypatch):
    code, secret = classroom.open_room(store, "P3")
    ana = classroom.join(store, code, "Ana")
    ben = classroom.join(store, code, "<b>Ben</b>")
    cy = classroom.join(store, code, "Cy")
    pacing.report(store, code, ana, "following")
    pacing.report(store, code, ben, "out", "app_pages/40_rope.py")
    clock = [1000.0]
    monkeypatch.setattr("classroom.room.time.time", lambda: clock[0])
    poll = classroom.open_poll(store, code, secret, {"prompt": "?", "choices": ["a", "b", "c"], "answer": 2})
    clock[0] += 4.25
    classroom.answer(store, code, ana, poll, 2)
    clock[0] += 3.0
    classroom.answer(store, code, ben, poll, 0)
    classroom.answer(store, code, ben, poll, 1)              # a change: the last answer's time counts
    monkeypatch.undo()
    import time
    now = time.time()
    store.hset(f"room:{code}:seen", {cy: f"{now - 60:.3f}"})    # Cy's screen went quiet a minute ago
    rows = {s.name: (s.state, s.page, s.answer, s.seconds) for s in pacing.roster(store, code, now=now)}
    assert rows == {"Ana": ("following", None, 2, 4.2), "<b>Ben</b>": ("out", "app_pages/40_rope.py", 1, 7.2),
                    "Cy": ("gone", None, None, None)}
    assert pacing.counts(pacing.roster(store, code, now=now)) == {"following": 1, "out": 1, "gone": 1,
                                                                   "answered": 2, "joined": 3}
    # a student back on the teacher's view: one write, the state follows
    pacing.report(store, code, ben, "following")
    assert [s.state for s in pacing.roster(store, code, now=now) if s.member == ben] == ["following"]


def test_lock_and_remove_are_the_teachers_only_and_a_removed_cookie_does_not_rejoin(store):
    code, secret = classroom.open_room(store, "P3")
    ana = classroom.join(store, code, "Ana")
    token = classroom.new_token(store, code, ana)
    with pytest.raises(classroom.NotTeacher):
        pacing.lock(store, code, "a guess", True)
    with pytest.raises(classroom.NotTeacher):
        pacing.remove(store, code, "a guess", ana)
    assert classroom.state(store, code).locked is False
    pacing.lock(store, code, secret, True)
    assert classroom.state(store, code).locked is True
    pacing.lock(store, code, secret, False)
    assert classroom.state(store, code).locked is False
    poll = classroom.open_poll(store, code, secret, {"prompt": "?", "choices": ["a", "b"], "answer": 0})
    classroom.answer(store, code, ana, poll, 1)
    pacing.remove(store, code, secret, ana)
    assert pacing.removed(store, code, ana) and classroom.members(store, code) == {}
    assert classroom.tally(store, code, poll) == [0, 0]            # their open answer went with them
    assert not classroom.seen(store, code, ana, token)             # their screen's next tick: out
    with pytest.raises(classroom.NotYours, match="Your teacher removed you from room"):
        classroom.rejoin(store, code, ana, token, now=10**10)
    with pytest.raises(classroom.BadMessage, match="no longer in the room"):
        pacing.remove(store, code, secret, ana)
    with pytest.raises(classroom.BadMessage):
        classroom.answer(store, code, ana, poll, 0)
    classroom.end_room(store, code, secret)                        # every key goes, the new ones too
    if isinstance(store, MemoryStore):
        assert [k for k in list(store._data) if k.startswith(f"room:{code}") and store._live(k) is not None] == []


# ---- through AppTest -----------------------------------------------------------------------------------------

def _push_scores(code, secret):
    classroom.push(classroom.store_from_env(), code, secret, {"page": SCORES, "query": {"d_k": "3"}})


def test_the_dashboard_names_states_and_answers_on_the_teachers_screen_only():
    teacher, code, secret, ana = room_with_student()
    ben = student_joins(code, "<b>Ben</b>")
    _push_scores(code, secret)
    follow(ana), follow(ben)
    ana.number_input(key="w.d_k").set_value(5).run()             # Ana steps out: her screen reports it
    ana.run()
    poll = classroom.open_poll(classroom.store_from_env(), code, secret,
                               {"prompt": "Which <i>one</i>?", "choices": ["x*", "y"], "answer": 1})
    member = ben.session_state["room.member"]
    classroom.answer(classroom.store_from_env(), code, member, poll, 0)
    teacher.run()
    assert "2 students here: 1 following, 1 stepped out · 1 of 2 answered" in text_of(teacher)
    assert not teacher.table                                       # off until the teacher turns it on
    teacher.toggle(key="room_dashboard").set_value(True).run()
    no_exception(teacher)
    table = teacher.table[0].value
    rows = table.to_dict("records")
    seconds = "Seconds to answer"
    assert rows == [{"Student": "\\<b\\>Ben\\<\\/b\\>", "State": "following", "Answer": "A\\. x\\*",
                     seconds: rows[0][seconds]},                # by nickname as typed, casefolded: "<" before "a"
                    {"Student": "Ana", "State": "stepped out\\: 4 · Scores \\& scaling", "Answer": "no answer",
                     seconds: ""}]
    assert 0 <= float(rows[0][seconds]) < 30
    # the students' screens: counts only, never a name or another's answer
    for student in (ana, ben):
        student.run()
        assert "stepped out\\:" not in text_of(student) and "no answer" not in text_of(student)
    # presenter mode (the projector): the counts, no table, no names of who stepped out
    from ui.presenter import KEY
    teacher.toggle(key=KEY).set_value(True).run()
    assert teacher.session_state["s.presenter"] is True
    assert not teacher.table and not any(t.key == "room_dashboard" for t in teacher.toggle)


def test_a_locked_students_change_is_undone_and_unlock_frees_them():
    teacher, code, secret, ana = room_with_student()
    _push_scores(code, secret)
    follow(ana)
    button(teacher, "Lock the class to my view").click().run()
    assert classroom.state(classroom.store_from_env(), code).locked
    assert "The class is locked to your view" in text_of(teacher)
    follow(ana)
    assert "Your teacher has locked the view" in text_of(ana)
    ana.number_input(key="w.d_k").set_value(5).run()             # her own change: undone on this run
    no_exception(ana)
    assert any("your change was undone" in w.value for w in ana.warning)
    stay(ana).run()
    assert page_of(ana) == SCORES and query_of(ana) == {"d_k": "3"} and ana.session_state["room.following"]
    assert ana.session_state["s.d_k"] == 3
    button(teacher, "Unlock: students may explore").click().run()
    follow(ana)
    ana.number_input(key="w.d_k").set_value(5).run()
    follow(ana)
    assert ana.session_state["s.d_k"] == 5 and not ana.session_state["room.following"]
    assert "You stepped out" in text_of(ana)
    button(teacher, "Lock the class to my view").click().run()      # locked again: the room page stays open to leave
    ana.switch_page(ROOM).run()
    ana.run()
    assert page_of(ana) == ROOM
    button(ana, "Leave the room").click().run()
    assert "room.code" not in ana.session_state and classroom.members(classroom.store_from_env(), code) == {}


def test_a_removed_student_is_told_and_the_teachers_list_drops_them():
    teacher, code, secret, ana = room_with_student()
    teacher.session_state["room_remove_box"] = True                 # the box open (a lazy expander)
    teacher.run()
    teacher.selectbox(key="room_remove_pick").set_value("Ana").run()
    button(teacher, "Remove from the room").click().run()
    no_exception(teacher)
    assert any("Removed “Ana” from room" in s.value for s in teacher.success)
    assert classroom.members(classroom.store_from_env(), code) == {}
    ana.session_state["room.seen_at"] = float("-inf")               # her next tick writes "seen": refused
    follow(ana)
    assert "room.code" not in ana.session_state
    assert any("Your teacher removed you from room" in w.value for w in ana.warning)


def test_the_live_question_says_an_early_reveal_is_allowed_and_it_closes_answers():
    teacher, code, secret, ana = room_with_student()
    _push_scores(code, secret)
    follow(ana)
    store = classroom.store_from_env()
    poll = classroom.open_poll(store, code, secret, {"prompt": "?", "choices": ["a", "b"], "answer": 1})
    teacher.switch_page(SCORES).run()
    teacher.session_state["room_poll_box"] = True                   # the Class question box open
    teacher.run()
    no_exception(teacher)
    assert "0 of 1 student answered" in text_of(teacher)
    assert "you may reveal before everyone has answered" in text_of(teacher)
    button(teacher, "Reveal the answer").click().run()              # nobody has answered: allowed
    assert classroom.state(store, code).poll["revealed"] is True
    with pytest.raises(classroom.BadMessage, match="answers are closed"):
        classroom.answer(store, code, ana.session_state["room.member"], poll, 1)
    follow(ana)
    assert "You did not answer\\. The answer\\: B\\. b" in text_of(ana)     # escaped Markdown: shown as text


# ---- a fresh read (read2): the sentences at the settings that made them false -----------------------------------

def test_the_room_pages_count_line_does_not_read_as_naming_who_answered():
    """"… · 0 of 2 answered:" followed by the nicknames read as the two who answered: the names are who is here."""
    teacher, code, secret, _ = room_with_student()
    classroom.open_poll(classroom.store_from_env(), code, secret, {"prompt": "?", "choices": ["a", "b"], "answer": 1})
    teacher.run()
    no_exception(teacher)
    lines = [m.value for m in teacher.markdown if "answered" in m.value and m.value.startswith("**")]
    assert lines == ["**1 student here: 1 following, 0 stepped out · 0 of 1 answered**. Here now:"]
    assert "Ana" in [t.value for t in teacher.text]


def test_the_lock_says_what_it_holds_the_class_to():
    """Locked with nothing shown: nothing is held (a student's change stays), and both screens say so; locked while the
    teacher explores another page: the class is held on the view last shown, not the teacher's page."""
    teacher, code, secret, ana = room_with_student()
    follow(ana)
    button(teacher, "Lock the class to my view").click().run()
    assert "you have shown nothing yet" in text_of(teacher) and "locked to your view" not in text_of(teacher)
    follow(ana)
    assert "when they show a view, your screen stays on it" in text_of(ana)
    assert "You can always explore" not in text_of(ana) and "changes you make are undone" not in text_of(ana)
    ana.switch_page(SCORES).run()
    ana.number_input(key="w.d_k").set_value(5).run()
    follow(ana)
    assert ana.session_state["s.d_k"] == 5                          # nothing to undo to: the sentence was right
    _push_scores(code, secret)
    teacher.switch_page("app_pages/40_rope.py").run()
    no_exception(teacher)
    said = text_of(teacher)
    assert "locked to the view you last showed (4 · Scores \\& scaling), not to this page" in said
    assert "locked to your view" not in said
    follow(ana)
    assert page_of(ana) == SCORES and query_of(ana) == {"d_k": "3"}  # held on the view shown, not on RoPE
    teacher.switch_page(SCORES).run()
    assert "The class is locked to your view" in text_of(teacher)


def test_a_locked_student_on_the_room_page_is_told_the_lock_holds():
    teacher, code, secret, ana = room_with_student()
    _push_scores(code, secret)
    follow(ana)
    button(teacher, "Lock the class to my view").click().run()
    ana.switch_page(ROOM).run()
    ana.run()
    no_exception(ana)
    said = text_of(ana)
    assert "this page stays open so that you can leave the room; any other page brings you back" in said
    assert "explore on your own" not in said


def test_the_remove_box_says_a_revealed_answer_stays_and_the_code_still_lets_them_join():
    teacher, code, secret, ana = room_with_student()
    store = classroom.store_from_env()
    poll = classroom.open_poll(store, code, secret, {"prompt": "?", "choices": ["a", "b"], "answer": 1})
    classroom.answer(store, code, ana.session_state["room.member"], poll, 1)
    classroom.reveal(store, code, secret, poll)
    teacher.session_state["room_remove_box"] = True
    teacher.run()
    assert "goes unless you revealed it" in text_of(teacher) and "can still type the code and join again" in \
        text_of(teacher)
    teacher.selectbox(key="room_remove_pick").set_value("Ana").run()
    button(teacher, "Remove from the room").click().run()
    assert classroom.tally(store, code, poll) == [0, 1]             # revealed: their answer stayed, as said
    ana.session_state["room.seen_at"] = float("-inf")
    follow(ana)
    assert any("your place in it is gone" in w.value for w in ana.warning)
    ana.switch_page(ROOM).run()
    ana.text_input(key="room_join_code").input(code)
    ana.text_input(key="room_join_nick").input("Ana")
    button(ana, "Join the room").click().run()
    no_exception(ana)
    assert list(classroom.members(store, code).values()) == ["Ana"]   # by the code: back, as the box says


def test_the_room_bar_and_room_page_examples_run():
    """ui/ is not among pytest's doctest paths: class_words', locked_words' and dashboard_rows' examples run here."""
    import doctest
    import importlib
    for name in ("ui.room.bar", "ui.classroom.room_view"):          # ui.room.bar is also a function's name in ui
        module = importlib.import_module(name)
        assert doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE).failed == 0


def test_a_student_removed_after_the_reveal_is_not_counted_as_more_answers_than_students():
    """Revealed, then removed: their answer stays in the counts (as the remove box says); the teacher's line said
    "1 of 0 students answered"."""
    teacher, code, secret, ana = room_with_student()
    store = classroom.store_from_env()
    _push_scores(code, secret)
    poll = classroom.open_poll(store, code, secret, {"prompt": "?", "choices": ["a", "b"], "answer": 1})
    classroom.answer(store, code, ana.session_state["room.member"], poll, 1)
    classroom.reveal(store, code, secret, poll)
    pacing.remove(store, code, secret, ana.session_state["room.member"])
    teacher.switch_page(SCORES).run()
    teacher.session_state["room_poll_box"] = True
    teacher.run()
    no_exception(teacher)
    assert "1 answered (0 students in the room now: the answers of those who left stay in the counts); 1 chose B." \
        in text_of(teacher)
    assert "1 of 0" not in text_of(teacher)


def test_presenter_mode_lists_who_joined_not_who_is_away():
    """The room page is the projector's: in presenter mode it names who joined (as the join box says) and counts who
    is away; out of it, who is here and who is away by name."""
    teacher, code, _, _ = room_with_student()
    ben = student_joins(code, "$x$")
    store = classroom.store_from_env()
    store.hset(f"room:{code}:seen", {ben.session_state["room.member"]: "0.000"})   # Ben's screen long quiet
    teacher.run()
    assert "**1 student here: 1 following, 0 stepped out · 1 disconnected**. Here now:" in text_of(teacher)
    assert [t.value for t in teacher.text] == ["Ana", "$x$"] and "Joined, not here now" in text_of(teacher)
    from ui.presenter import KEY
    teacher.toggle(key=KEY).set_value(True).run()
    no_exception(teacher)
    assert "**1 student here: 1 following, 0 stepped out · 1 disconnected**. Joined:" in text_of(teacher)
    assert [t.value for t in teacher.text] == ["$x$, Ana"] and "not here now" not in text_of(teacher)
