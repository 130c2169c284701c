"""A room through AppTest: a teacher and two students, each an AppTest session of the same process, sharing the
process's MemoryStore (classroom.store_from_env without ATTENTION_EXPLORER_REDIS_URL). The teacher opens a room,
the students join, the teacher changes a setting, a page control and a tab and shows the view to the class; each
following student's next run is on that page with the same settings and the same numbers. Stepping out and back,
a student who cannot push, bad codes and nicknames shown as text, and a room bar that costs nothing out of a room.
"""
from __future__ import annotations

import pytest

import classroom
from tests.apptest_util import charts, no_exception, open_page

ROOM = "app_pages/60_room.py"
SCORES = "app_pages/4_scores.py"


@pytest.fixture(autouse=True)
def _memory_store(monkeypatch):
    monkeypatch.delenv("ATTENTION_EXPLORER_REDIS_URL", raising=False)


def button(at, label):
    found = [b for b in at.button if b.label == label]
    assert found, (label, [b.label for b in at.button])
    return found[0]


def teacher_opens(title="Period 3"):
    at = open_page(ROOM)
    no_exception(at)
    at.text_input(key="room_title").input(title)
    button(at, "Open a room").click().run()
    no_exception(at)
    return at, at.session_state["room.code"]


def student_joins(code, nick):
    at = open_page(ROOM, query={"join": code})
    no_exception(at)
    assert at.text_input(key="room_join_code").value == code         # the join link prefills the code
    at.text_input(key="room_join_nick").input(nick)
    button(at, "Join the room").click().run()
    no_exception(at)
    return at


def text_of(at) -> str:
    return "\n".join([t.value for t in at.text] + [m.value for m in at.markdown] + [c.value for c in at.caption]
                     + [e.value for e in list(at.error) + list(at.warning) + list(at.info) + list(at.success)])


def page_of(at) -> str:
    return at.session_state["s.page"]


def stay(at):
    """After a run that switched page (st.switch_page): the browser's next run is of that page; AppTest's would be
    of the page it was last pointed at, so point it at the page the run ended on."""
    return at.switch_page(page_of(at))


def teacher_shows_scores_view():
    """Teacher and two students in a room; the teacher on /scores with d_k = 3, the word 2 and the "All words"
    tab shows it to the class."""
    teacher, code = teacher_opens()
    ana, ben = student_joins(code, "Ana"), student_joins(code, "Ben")
    teacher.run()
    assert "2 students" in text_of(teacher) and "Ana, Ben" in [t.value for t in teacher.text]
    teacher.switch_page(SCORES).run()
    teacher.number_input(key="w.d_k").set_value(3).run()
    teacher.session_state["one_word"] = 2
    teacher.session_state["scores.tab"] = "All words"
    teacher.run()
    no_exception(teacher)
    assert dict(teacher.query_params) == {"d_k": ["3"], "one_word": ["2"], "scores.tab": ["1"]} or \
        {k: v[-1] if isinstance(v, list) else v for k, v in teacher.query_params.items()} == \
        {"d_k": "3", "one_word": "2", "scores.tab": "1"}
    button(teacher, "Show this to the class").click().run()
    no_exception(teacher)
    assert classroom.state(classroom.store_from_env(), code).view["query"] == {"d_k": "3", "one_word": "2",
                                                                              "scores.tab": "1"}
    return teacher, code, ana, ben


def query_of(at) -> dict:
    return {k: (v[-1] if isinstance(v, list) else v) for k, v in at.query_params.items()}


def test_a_push_brings_every_following_student_to_the_teachers_view_with_the_same_numbers():
    teacher, code, ana, ben = teacher_shows_scores_view()
    for student in (ana, ben):
        stay(student.run())                  # the fragment's next read (inline in a run): the view, then the page
        no_exception(student)
        assert page_of(student) == SCORES
        assert student.session_state["s.d_k"] == 3
        assert student.session_state["one_word"] == 2
        assert student.session_state["scores.tab"] == "All words"
        assert query_of(student) == {"d_k": "3", "one_word": "2", "scores.tab": "1"}
        assert charts(student) == charts(teacher)      # the same heatmaps: the same numbers, cell for cell
        assert student.session_state["room.following"] is True


def test_a_student_who_steps_out_is_told_and_comes_back_in_one_click():
    teacher, code, ana, _ = teacher_shows_scores_view()
    stay(ana.run())
    assert page_of(ana) == SCORES
    ana.number_input(key="w.d_k").set_value(5).run()          # exploring on her own
    no_exception(ana)
    assert ana.session_state["room.following"] is False
    assert "You stepped out" in text_of(ana)
    teacher.number_input(key="w.d_k").set_value(4).run()
    button(teacher, "Show this to the class").click().run()
    ana.run()
    assert ana.session_state["s.d_k"] == 5                     # not moved while exploring
    assert "Your teacher is showing something new" in text_of(ana)
    stay(button(ana, "Back to the teacher's view").click().run())
    no_exception(ana)
    assert ana.session_state["s.d_k"] == 4 and ana.session_state["room.following"] is True
    assert query_of(ana) == query_of(teacher)
    ana.run()
    assert ana.session_state["room.following"] is True         # the view put in is not a step out


def test_a_student_cannot_push_and_a_tampered_teacher_link_is_refused():
    teacher, code = teacher_opens()
    ana = student_joins(code, "Ana")
    assert "room.secret" not in ana.session_state
    assert not [b for b in ana.button if b.label == "Show this to the class"]
    with pytest.raises(classroom.NotTeacher):
        classroom.push(classroom.store_from_env(), code, "", {"page": SCORES, "query": {}})
    thief = open_page(ROOM, query={"room": code, "teach": "a-guess"})
    no_exception(thief)
    assert "room.secret" not in thief.session_state and "room.code" not in thief.session_state
    assert "does not open room" in text_of(thief)
    own = open_page(ROOM, query={"room": code, "teach": teacher.session_state["room.secret"]})
    assert own.session_state["room.code"] == code and own.session_state["room.secret"]
    assert "You teach this room again" in text_of(own)


@pytest.mark.parametrize("nick", ["<script>alert(1)</script>", "$\\frac{a}{b}$", "**bold**"])
def test_nicknames_are_shown_as_typed(nick):
    teacher, code = teacher_opens()
    student = student_joins(code, nick)
    kept = nick[:classroom.room.MAX_NICKNAME]                    # a room keeps at most 24 characters of it
    assert [t.value for t in student.text] == [kept]            # st.text: never Markdown, HTML or LaTeX
    teacher.run()
    assert kept in [t.value for t in teacher.text]
    assert not any(kept in m.value for m in teacher.markdown)


def test_bad_codes_and_empty_nicknames_keep_the_form_with_a_message():
    at = open_page(ROOM)
    at.text_input(key="room_join_code").input("<b>X</b>")
    at.text_input(key="room_join_nick").input("Ana")
    button(at, "Join the room").click().run()
    no_exception(at)
    assert "is not a room code" in text_of(at) and "room.code" not in at.session_state
    assert "\\<b\\>X\\</b\\>" in "\n".join(e.value for e in at.error)    # the typed code shown escaped
    at.text_input(key="room_join_code").input("K7MQ2D")
    button(at, "Join the room").click().run()
    assert "There is no room K7MQ2D" in text_of(at)
    _, code = teacher_opens()
    at.text_input(key="room_join_code").input(code.lower())
    at.text_input(key="room_join_nick").input("   ")
    button(at, "Join the room").click().run()
    assert "Type a nickname first" in text_of(at) and "room.code" not in at.session_state


def test_ten_wrong_codes_ask_to_wait_a_minute():
    _, code = teacher_opens()
    at = open_page(ROOM)
    at.text_input(key="room_join_nick").input("Guesser")
    for guess in ["ABCDE2", "ABCDE3", "ABCDE4", "ABCDE5", "ABCDE6", "ABCDE7", "ABCDE8", "ABCDE9", "ABCDEF",
                  "ABCDEG"]:
        at.text_input(key="room_join_code").input(guess)
        button(at, "Join the room").click().run()
    at.text_input(key="room_join_code").input(code)
    button(at, "Join the room").click().run()
    assert "wait a minute" in text_of(at) and "room.code" not in at.session_state


def test_the_room_bar_reads_no_store_out_of_a_room(monkeypatch):
    calls = []
    import ui.room_session as session
    monkeypatch.setattr(session, "store", lambda: calls.append(1) or classroom.store_from_env())
    at = open_page(SCORES)
    at.number_input(key="w.d_k").set_value(3).run()
    no_exception(at)
    assert calls == [] and "room.code" not in at.session_state
