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
    # AppTest sessions run only when a test runs them (no ticks between): a student counts as here for an hour;
    # the presence window itself is tested on the stores (tests/test_room_store.py) and in the browser
    monkeypatch.setattr("classroom.presence.PRESENT_SECONDS", 3600.0)


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


@pytest.mark.parametrize("nick", ["<script>alert(1)</script>", "$\\frac{a}{b}$", "**bold**", ":red[x] :smile:",
                                  "👩\u200d🔬 Zoë", "مرحبا", "x" * 40])
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
    assert "\\<b\\>X\\<\\/b\\>" in "\n".join(e.value for e in at.error)    # the typed code shown escaped
    at.text_input(key="room_join_code").input("K7MQ2D")
    button(at, "Join the room").click().run()
    assert "There is no room K7MQ2D" in text_of(at)
    _, code = teacher_opens()
    at.text_input(key="room_join_code").input(code.lower())
    at.text_input(key="room_join_nick").input("   ")
    button(at, "Join the room").click().run()
    assert "Type a nickname first" in text_of(at) and "room.code" not in at.session_state
    at.text_input(key="room_join_code").input("  ")
    at.text_input(key="room_join_nick").input("Ana")
    button(at, "Join the room").click().run()
    assert "Type the room code first" in text_of(at) and "“”" not in text_of(at)
    assert len(at.session_state["room.misses"]) == 2                 # the two wrong codes; a blank one is no guess


def test_a_student_who_leaves_leaves_the_teachers_count():
    teacher, code, _, ana = room_with_student()
    ben = student_joins(code, "Ben")
    assert "2 students" in text_of(teacher.run())
    button(ben, "Leave the room").click().run()
    no_exception(ben)
    assert "room.code" not in ben.session_state
    said = text_of(teacher.run())
    assert "1 student" in said and "2 students" not in said and ["Ana"] == [t.value for t in teacher.text]


def test_a_title_with_markup_is_shown_as_text():
    """Streamlit's directives too: :red[…] would colour, :material/…: would draw an icon."""
    from ui.text import md_escape
    title = ":red[x] :material/home: **b** <i>"
    teacher, _ = teacher_opens(title)
    caption = next(c.value for c in teacher.caption if "projector" in c.value)
    assert md_escape(title) in caption and "\\:material\\/home\\:" in caption


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
    """Every read of any store goes through MemoryStore's hgetall / hget here: out of a room a page run makes
    none; in a room the same page run makes some (the counter counts)."""
    reads = []
    for name in ("hgetall", "hget", "hlen"):
        real = getattr(classroom.MemoryStore, name)
        monkeypatch.setattr(classroom.MemoryStore, name,
                            lambda self, *a, _real=real, _name=name: reads.append(_name) or _real(self, *a))
    at = open_page(SCORES)
    at.number_input(key="w.d_k").set_value(3).run()
    no_exception(at)
    assert reads == [] and not [k for k in at.session_state if str(k).startswith("room.")]
    _, code, _, ana = room_with_student()
    reads.clear()
    ana.switch_page(SCORES).run()
    assert reads                                                 # a student's page run reads the room


# ---- apply_view: a view put into a session as its link would ------------------------------------------------

MASKS = "app_pages/41_masks.py"
MASKS_VIEW = {"page": MASKS, "query": {
    "sentence": "the cat sat on the mat", "positional": "alibi", "n_heads": "6", "mask": "sliding_window",
    "window": "2", "masks.head": "4", "masks.sink_on": "1", "masks.sink": "1.5", "masks.compare": "1",
    "cell": "hm:sink_weights:None.3.2"}}


def room_with_student():
    teacher, code = teacher_opens()
    return teacher, code, teacher.session_state["room.secret"], student_joins(code, "Ana")


def follow(student):
    stay(student.run())
    no_exception(student)
    return student


def test_a_view_put_in_gives_the_same_view_back_and_the_same_cell_explained():
    """The room's baseline is page_state.view_of after the first run on the view's page."""
    _, code, secret, ana = room_with_student()
    classroom.push(classroom.store_from_env(), code, secret, MASKS_VIEW)
    follow(ana)
    assert page_of(ana) == MASKS and ana.session_state["room.baseline"] == MASKS_VIEW
    assert query_of(ana) == MASKS_VIEW["query"]                  # the address bar: view_of, written by ui.page
    assert ana.slider(key="masks.head").value == 4 and ana.slider(key="masks.sink").value == 1.5
    fresh = open_page(MASKS, query=MASKS_VIEW["query"])          # the same view opened from its link
    made = [m.value for m in fresh.markdown if "was made" in m.value]
    assert made and [m.value for m in ana.markdown if "was made" in m.value] == made      # the clicked cell's why
    assert charts(ana) == charts(fresh)


def test_controls_a_view_does_not_name_go_back_to_their_defaults():
    _, code, secret, ana = room_with_student()
    classroom.push(classroom.store_from_env(), code, secret, MASKS_VIEW)
    follow(ana)
    plain = {"page": MASKS, "query": {"positional": "alibi", "n_heads": "6"}}
    classroom.push(classroom.store_from_env(), code, secret, plain)
    follow(ana)
    assert query_of(ana) == plain["query"]
    assert ana.slider(key="masks.head").value == 0 and ana.session_state["p.cell"] is None
    assert ana.session_state["s.sentence"] == "I love you today" and ana.session_state["s.window"] == \
        classroom_default("window")


def classroom_default(name):
    from attention_core import Config
    return getattr(Config(), name)


def test_a_tampered_view_gives_notices_and_the_defaults():
    _, code, secret, ana = room_with_student()
    classroom.push(classroom.store_from_env(), code, secret,
                   {"page": SCORES, "query": {"d_k": "abc", "one_word": "-3", "scores.tab": "7", "cell": "x"}})
    follow(ana)
    assert page_of(ana) == SCORES
    shown = "\n".join(w.value for w in ana.warning)
    assert "Link setting “d\\_k”" in shown and "using the default \\(4\\)" in shown
    assert "“one\\_word” \\(the word picked\\) must be from 0 to 127, not '\\-3'" in shown
    assert "“cell” must name a chart" in shown
    assert ana.session_state["s.d_k"] == 4 and ana.session_state["one_word"] == 1
    assert ana.session_state["scores.tab"] == "One word" and query_of(ana) == {}
    follow(ana)
    assert not ana.warning and ana.session_state["room.following"] is True     # the notices once; still following


# ---- a lesson in the room ------------------------------------------------------------------------------------

def test_the_teacher_steps_through_a_lesson_and_the_class_follows():
    from classroom.lesson import Lesson, Stop
    lesson = Lesson("Two stops", "", (
        Stop("Scores by hand", "scores", {"d_k": "3", "scores.tab": "1"}, ask="Which key wins for 'love'?",
             note="Secret: it is 'you'."),
        Stop("RoPE turns pairs", "rope", {"positional": "rope", "rope.offset": "50"}, ask="Does a shift change "
             "the scores?")))
    teacher, code, _, ana = room_with_student()
    teacher.session_state["room.lesson"] = lesson
    teacher.session_state["room.stop"] = 0
    teacher.run()
    listed = "\n".join(m.value for m in teacher.markdown)
    stops = [(b.label, b.proto.type) for b in teacher.button if b.key and b.key.startswith("room_jump_")]
    assert stops == [("1\\. Scores by hand · now", "primary"), ("2\\. RoPE turns pairs", "secondary")]
    assert "Stop 1 of 2: Scores by hand" in listed
    stay(button(teacher, "Show this stop").click().run())
    no_exception(teacher)
    assert page_of(teacher) == SCORES and query_of(teacher) == {"d_k": "3", "scores.tab": "1"}
    assert "Your note (on your screen only, not in presenter mode): Secret\\: it is 'you'\\." in text_of(teacher)
    follow(ana)
    assert page_of(ana) == SCORES and query_of(ana) == {"d_k": "3", "scores.tab": "1"}
    assert "Secret" not in text_of(ana) and "Which key wins" not in text_of(ana)
    stay(button(teacher, "Next stop ▶").click().run())
    no_exception(teacher)
    assert page_of(teacher) == "app_pages/40_rope.py" and teacher.session_state["room.stop"] == 1
    assert "Stop 2 of 2: RoPE turns pairs" in text_of(teacher)
    follow(ana)
    assert page_of(ana) == "app_pages/40_rope.py"
    assert query_of(ana) == {"positional": "rope", "rope.offset": "50"} == query_of(teacher)
    assert charts(ana) == charts(teacher)
    assert [b.disabled for b in teacher.button if b.label == "Next stop ▶"] == [True]
    teacher.switch_page(ROOM).run()                 # the list, stop 2 current: "1\." is not a Markdown list
    stops = [(b.label, b.proto.type) for b in teacher.button if b.key and b.key.startswith("room_jump_")]
    assert stops == [("1\\. Scores by hand", "secondary"), ("2\\. RoPE turns pairs · now", "primary")]
    stay(button(teacher, "1\\. Scores by hand").click().run())    # a jump from the list: stop 1, on every screen
    no_exception(teacher)
    assert page_of(teacher) == SCORES and teacher.session_state["room.stop"] == 0
    follow(ana)
    assert page_of(ana) == SCORES and query_of(ana) == {"d_k": "3", "scores.tab": "1"}


# ---- a room that ends, a store that is down ----------------------------------------------------------------

def test_a_room_that_ended_leaves_the_student_exploring_with_a_message():
    _, code, secret, ana = room_with_student()
    classroom.push(classroom.store_from_env(), code, secret, {"page": SCORES, "query": {"d_k": "3"}})
    follow(ana)
    store = classroom.store_from_env()
    for key in [k for k in list(store._data) if k.startswith(f"room:{code}")]:
        store._data.pop(key)                                      # as the expiry does, hours later
    follow(ana)                              # the fragment finds no room: a rerun of the page with the message
    assert "room.code" not in ana.session_state and page_of(ana) == SCORES and ana.session_state["s.d_k"] == 3
    said = text_of(ana)
    assert f"Room {code} has ended" in said and "You keep exploring on your own" in said
    assert "mistyped" not in said                 # it was the student's room: no doubt about their typing


def test_a_teacher_who_ends_the_room_ends_it_for_everyone():
    teacher, code, secret, ana = room_with_student()
    follow(ana)
    button(teacher.run(), "End it for everyone").click().run()          # in the "End the room" popover
    no_exception(teacher)
    assert "room.code" not in teacher.session_state and f"Room {code} has ended" in text_of(teacher)
    follow(ana)                                   # the next read finds no room: the student is told
    assert "room.code" not in ana.session_state and f"Room {code} has ended" in text_of(ana)
    with pytest.raises(classroom.NoRoom):
        classroom.check(classroom.store_from_env(), code)
    again = open_page(ROOM, query={"room": code, "teach": secret})   # the teacher's link opens it no more
    no_exception(again)
    assert "room.code" not in again.session_state
    said = text_of(again)
    assert f"Room {code} has ended" in said and "open a new room" in said and "Ask your teacher" not in said


def test_a_redis_that_does_not_answer_keeps_everyone_in_the_room(monkeypatch):
    """A store that is down for a moment (RedisStore's message, a RoomError) is not a room that ended: the teacher
    keeps the secret and the student stays, each told why nothing moves; back up, both carry on."""
    from bench._common import free_port
    from classroom.redis_store import RedisStore
    import ui.room.session as session
    teacher, code, secret, ana = room_with_student()
    follow(ana)
    up = dict(session._STORES)
    monkeypatch.setattr(session, "_STORES", {"": RedisStore(f"redis://127.0.0.1:{free_port()}/0")})
    teacher.run()
    follow(ana)
    assert teacher.session_state["room.secret"] == secret and ana.session_state["room.code"] == code
    assert f"You still teach room {code}" in text_of(teacher) and "does not answer" in text_of(teacher)
    assert f"You stay in room {code}" in text_of(ana)
    monkeypatch.setattr(session, "_STORES", up)
    teacher.run()
    follow(ana)
    assert f"Room {code}" in text_of(teacher) and "1 student" in text_of(teacher)
    assert "you follow your teacher" in text_of(ana)


def test_a_store_that_is_down_is_a_message_not_a_traceback(monkeypatch):
    _, code, secret, ana = room_with_student()

    class Down(classroom.MemoryStore):
        def hgetall(self, key):
            raise ConnectionError("redis is down")
    import ui.room.session as session
    monkeypatch.setattr(session, "_STORES", {"": Down()})
    follow(ana)
    assert "cannot be reached right now" in text_of(ana) and ana.session_state["room.code"] == code


def test_the_rooms_question_reaches_a_following_student_in_the_same_fragment():
    teacher, code, secret, ana = room_with_student()
    classroom.open_poll(classroom.store_from_env(), code, secret, {
        "prompt": "Which key has the largest weight in row 2?", "choices": ["the", "cat", "sat"], "answer": 2,
        "explanation": "1.3 is the largest score."})
    follow(ana)
    assert "Which key has the largest weight in row 2?" in text_of(ana)
    assert [b.label for b in ana.button if b.label == "Send my answer"] == ["Send my answer"]
    assert ana.session_state["room.following"] is True


def test_a_stops_question_is_made_from_the_stops_settings_and_reaches_the_class():
    from attention_core import Config
    from attention_core.labs.polls import make_poll
    from classroom.lesson import Lesson, Stop
    from ui.cache import get_trace
    stop = Stop("Scores", "scores", {"sentence": "we love you", "d_k": "3"}, poll="attends")
    teacher, code, _, ana = room_with_student()
    teacher.session_state["room.lesson"] = Lesson("One stop", "", (stop,))
    teacher.session_state["room.stop"] = 0
    stay(button(teacher.run(), "Show this stop").click().run())
    button(teacher, "Ask this stop's question").click().run()
    no_exception(teacher)
    expected = make_poll("attends", get_trace(Config(sentence="we love you", d_k=3)), 0)
    poll = classroom.state(classroom.store_from_env(), code).poll
    assert (poll["prompt"], poll["choices"], poll["answer"]) == (expected.prompt, list(expected.choices),
                                                                  expected.answer)
    assert teacher.session_state["room_poll_box"] is True           # the question box opens on its live chart
    follow(ana)
    from ui.text import md_escape
    assert page_of(ana) == SCORES and md_escape(expected.prompt) in text_of(ana)    # the prompt as text
