"""Class polls on screen (ui/room/poll.py): a teacher and three students, each an AppTest session, share one
MemoryStore. The teacher asks, the students choose and send, the teacher's bars are the room's tally, the reveal
marks the right answer, each student sees their own answer beside the class's; a changed answer replaces the
first, a late or forged answer gets the room's message, and the prompt is shown as text."""
from __future__ import annotations

import time

import pytest
from streamlit.testing.v1 import AppTest

import classroom
from tests.apptest_util import charts, no_exception

POLL = {"prompt": "Which key has the largest weight in row 2?", "choices": ["the", "cat", "sat", "mat"],
        "answer": 2, "explanation": "A[2] = softmax(0.1, 0.4, 1.3, 0.2): 1.3 is the largest score, so “sat”."}


def teacher_script():
    import streamlit as st

    from ui.room.poll import teacher_poll_panel
    s = st.session_state
    teacher_poll_panel(s["t.store"], s["room.code"], s["room.secret"], s.get("t.trace"))


def student_script():
    import time

    import streamlit as st

    import classroom
    from ui.room.poll import student_poll_card
    s = st.session_state
    start = time.perf_counter()
    student_poll_card(s["t.store"], s["room.code"], s["room.member"], classroom.state(s["t.store"], s["room.code"]))
    s["t.ms"] = 1000 * (time.perf_counter() - start)


def session(script, **state) -> AppTest:
    at = AppTest.from_function(script, default_timeout=30)
    for k, v in state.items():
        at.session_state[k] = v
    return at.run()


class CountingStore(classroom.MemoryStore):
    """A MemoryStore that counts its reads (what a student's rerun costs the store)."""

    def __init__(self):
        super().__init__()
        self.reads = 0

    def hgetall(self, key):
        self.reads += 1
        return super().hgetall(key)

    def hget(self, key, field):
        self.reads += 1
        return super().hget(key, field)


@pytest.fixture
def room():
    store = CountingStore()
    code, secret = classroom.open_room(store, "Period 3")
    teacher = session(teacher_script, **{"t.store": store, "room.code": code, "room.secret": secret})
    students = [session(student_script, **{"t.store": store, "room.code": code,
                                          "room.member": classroom.join(store, code, nick)})
                for nick in ("Ana", "Ben", "<b>Cy</b>")]
    return store, code, secret, teacher, students


def text(at: AppTest) -> str:
    return "\n".join(e.value for kind in ("markdown", "caption", "info", "success", "error", "warning")
                     for e in at.get(kind))


def bars(at: AppTest) -> list[dict]:
    (spec,) = charts(at)
    return spec["data"]["values"]


def send(at: AppTest, choice: int) -> AppTest:
    at.radio[0].set_value(choice)
    return at.button[0].click().run()


def test_a_poll_from_asking_to_the_reveal(room):
    store, code, secret, teacher, (ana, ben, cy) = room
    assert not teacher.exception and "Ask" not in text(ana) and not ana.radio   # no question: the card draws nothing
    poll_id = classroom.open_poll(store, code, secret, POLL)
    teacher.run()
    for at in (ana, ben, cy):
        at.run()
        no_exception(at)
        assert at.radio[0].options == ["A\\. the", "B\\. cat", "C\\. sat", "D\\. mat"]
        assert at.button[0].label == "Send my answer"
    values = bars(teacher)
    assert [v["count"] for v in values] == [0, 0, 0, 0]
    assert "0 of 3 students answered" in text(teacher)

    send(ana, 2), send(ben, 1), send(cy, 2)
    for at, mine in ((ana, "C. sat"), (ben, "B. cat"), (cy, "C. sat")):
        no_exception(at)
        assert f"Your answer: {mine} — you can change it" in at.info[0].value.replace("\\", "")
    teacher.run()
    values = bars(teacher)
    assert [v["count"] for v in values] == classroom.tally(store, code, poll_id) == [0, 1, 2, 0]
    assert [v["label"] for v in values] == ["A. the", "B. cat", "C. sat", "D. mat"]
    assert [v["tag"] for v in values] == ["0", "1", "2", "0"]
    assert {v["role"] for v in values} == {"answer"}            # nothing marks the right one before the reveal
    assert "3 of 3 students answered" in text(teacher)
    assert "1.3 is the largest" not in text(teacher) + text(ana)

    teacher.button(key="poll.reveal").click().run()
    no_exception(teacher)
    assert classroom.state(store, code).poll["revealed"]
    values = bars(teacher)
    assert [v["role"] for v in values] == ["other", "other", "right", "other"]
    assert values[2]["tag"] == "2 · right"
    shown = text(teacher).replace("\\", "")
    assert "The answer: C. sat" in shown and "1.3 is the largest" in shown
    assert [b.label for b in teacher.button] == ["Next question", "Close the question"]

    for at, you in ((ana, 2), (ben, 1), (cy, 2)):
        at.run()
        no_exception(at)
        assert not at.radio                                     # answers are closed
        values = bars(at)
        assert [v["count"] for v in values] == [0, 1, 2, 0]
        assert values[2]["role"] == "right" and values[you]["tag"].endswith("you")
        shown = text(at).replace("\\", "")
        assert f"you: {'ABCD'[you]} · right: C · class: 2 of 3 chose C" in shown
        assert "1.3 is the largest score" in shown
    assert "Right: you chose C. sat" in ana.success[0].value.replace("\\", "")
    assert "You chose B. cat; the answer is C. sat" in ben.error[0].value.replace("\\", "")
    assert [v["role"] for v in bars(ben)] == ["other", "you", "right", "other"]

    teacher.button(key="poll.close").click().run()
    assert classroom.state(store, code).poll is None
    ana.run()
    assert not ana.radio and not charts(ana)


def test_a_second_answer_replaces_the_first(room):
    store, code, secret, _, (ana, _, _) = room
    poll_id = classroom.open_poll(store, code, secret, POLL)
    ana.run()
    send(ana, 0)
    send(ana, 3)
    assert classroom.tally(store, code, poll_id) == [0, 0, 0, 1]
    assert "Your answer: D. mat" in ana.info[0].value.replace("\\", "")


def test_too_many_changes_keep_the_last_answer(room):
    store, code, secret, _, (ana, _, _) = room
    poll_id = classroom.open_poll(store, code, secret, POLL)
    ana.run()
    for choice in (0, 1, 0, 1, 3):                                   # MAX_ANSWER_CHANGES = 5
        send(ana, choice)
    send(ana, 2)
    no_exception(ana)
    assert "You have answered 5 times: your last answer stands" in ana.error[0].value.replace("\\", "")
    assert classroom.tally(store, code, poll_id) == [0, 0, 0, 1]
    assert "Your answer: D. mat" in ana.info[0].value.replace("\\", "")
    assert "it stands" in ana.info[0].value and "change it" not in ana.info[0].value     # no false promise


def test_an_answer_sent_after_the_reveal_gets_the_message(room):
    store, code, secret, _, (ana, ben, _) = room
    poll_id = classroom.open_poll(store, code, secret, POLL)
    ana.run(), ben.run()
    send(ben, 1)
    classroom.reveal(store, code, secret, poll_id)                  # while Ana's form is still on her screen
    send(ana, 2)
    no_exception(ana)
    assert "The answer has been revealed: answers are closed" in ana.error[0].value.replace("\\", "")
    assert classroom.tally(store, code, poll_id) == [0, 1, 0, 0]
    assert "you: no answer · right: C · class: 0 of 1 chose C" in text(ana).replace("\\", "")


def test_an_answer_to_a_closed_question_gets_the_message(room):
    store, code, secret, _, (ana, _, _) = room
    classroom.open_poll(store, code, secret, POLL)
    ana.run()
    classroom.close_poll(store, code, secret)
    send(ana, 1)
    no_exception(ana)
    assert "That question is over: your teacher has moved on" in ana.error[0].value.replace("\\", "")


def test_a_forged_member_cannot_answer(room):
    store, code, secret, _, _ = room
    poll_id = classroom.open_poll(store, code, secret, POLL)
    forger = session(student_script, **{"t.store": store, "room.code": code, "room.member": "a guessed id"})
    send(forger, 1)
    no_exception(forger)
    assert f"You are not in room {code}" in forger.error[0].value.replace("\\", "")
    assert classroom.tally(store, code, poll_id) == [0, 0, 0, 0]
    assert not forger.info                                            # no answer of theirs is shown as sent


def test_sending_without_a_choice_says_so(room):
    store, code, secret, _, (ana, _, _) = room
    poll_id = classroom.open_poll(store, code, secret, POLL)
    ana.run()
    ana.button[0].click().run()
    assert "Pick one of the choices first" in ana.warning[0].value
    assert classroom.tally(store, code, poll_id) == [0, 0, 0, 0]


def test_prompt_and_choices_are_text_not_markup(room):
    store, code, secret, teacher, (ana, _, _) = room
    classroom.open_poll(store, code, secret, {**POLL, "prompt": "Is <b>this</b> $x$ or **y**?",
                                              "choices": ["<i>a</i>", "$y$"], "answer": 0, "explanation": "**z** $w$"})
    ana.run(), teacher.run()
    for at in (ana, teacher):
        no_exception(at)
        prompt = at.markdown[0].value
        assert "\\<b\\>this\\<\\/b\\>" in prompt and "\\$x\\$" in prompt and "\\*\\*y\\*\\*" in prompt
        assert "<b>" not in prompt.replace("\\<b\\>", "")
    assert ana.radio[0].options == ["A\\. \\<i\\>a\\<\\/i\\>", "B\\. \\$y\\$"]
    assert [v["label"] for v in bars(teacher)] == ["A. <i>a</i>", "B. $y$"]      # SVG text in the chart
    send(ana, 0)
    assert "\\<i\\>a\\<\\/i\\>" in ana.info[0].value


def test_a_student_rerun_reads_the_store_once(room, capsys):
    """The card's own reads: its answer once per question (kept after), the frozen counts once after the reveal;
    the room state is the caller's one read."""
    store, code, secret, _, (ana, _, _) = room
    ana.run()
    poll_id = classroom.open_poll(store, code, secret, POLL)
    ana.run()
    send(ana, 2)
    ms = []
    for _ in range(20):
        before = store.reads
        start = time.perf_counter()
        ana.run()
        ms.append(1000 * (time.perf_counter() - start))
        assert store.reads - before == 1                              # the script's classroom.state only
    card = ana.session_state["t.ms"]
    classroom.reveal(store, code, secret, poll_id)
    ana.run()
    before = store.reads
    ana.run()
    assert store.reads - before == 1
    with capsys.disabled():
        print(f"\nstudent poll card rerun (open question): AppTest run median {sorted(ms)[len(ms) // 2]:.1f} ms, "
              f"the card itself {card:.2f} ms")


@pytest.fixture(scope="module")
def trace():
    from attention_core import Config, run_forward
    return run_forward(Config())


def test_the_teacher_asks_from_the_bank_and_moves_to_the_next_question(room, trace):
    from attention_core.labs.polls import POLL_KINDS, available, make_poll
    store, code, secret, teacher, (ana, _, _) = room
    teacher.session_state["t.trace"] = trace
    teacher.run()
    no_exception(teacher)
    kinds = available(trace)
    menu = teacher.selectbox(key="poll.kind")
    assert menu.options == [POLL_KINDS[k] for k in kinds] and "kv_head" in kinds
    menu.set_value("kv_head").run()
    expected = make_poll("kv_head", trace, 0)
    assert f"The class will see: {expected.prompt}" in text(teacher).replace("\\", "")
    teacher.button(key="poll.ask").click().run()
    no_exception(teacher)
    poll = classroom.state(store, code).poll
    assert (poll["kind"], poll["prompt"], poll["choices"], poll["answer"], poll["explanation"]) == (
        "kv_head", expected.prompt, list(expected.choices), expected.answer, expected.explanation)
    assert [v["label"] for v in bars(teacher)] == [f"{'ABCD'[i]}. {c}" for i, c in enumerate(expected.choices)]
    ana.run()
    send(ana, expected.answer)
    teacher.run()
    assert sum(v["count"] for v in bars(teacher)) == 1 and "1 of 3 students answered" in text(teacher)

    teacher.button(key="poll.reveal").click().run()
    assert bars(teacher)[expected.answer]["role"] == "right"
    teacher.button(key="poll.next").click().run()                  # the bank's next kind, a new seed
    no_exception(teacher)
    following = kinds[kinds.index("kv_head") + 1]
    poll = classroom.state(store, code).poll
    assert poll["kind"] == following and not poll["revealed"]
    assert poll["prompt"] == make_poll(following, trace, 2).prompt
    assert {v["role"] for v in bars(teacher)} == {"answer"} and sum(v["count"] for v in bars(teacher)) == 0
    ana.run()
    assert ana.radio[0].value is None and not ana.info               # a new question: no answer yet


def test_ask_poll_says_when_a_kind_does_not_fit(room, trace):
    store, code, secret, _, _ = room

    def stepper():
        import streamlit as st

        from ui.room.poll import ask_poll
        s = st.session_state
        s["t.asked"] = ask_poll(s["t.store"], s["room.code"], s["room.secret"], s["t.kind"], s["t.trace"], seed=3)

    for kind, message in (("which_head", "does not fit the current settings"),       # one head: nothing to compare
                          ("no_such_kind", "There is no question “no\\_such\\_kind” in the bank")):
        at = session(stepper, **{"t.store": store, "room.code": code, "room.secret": secret, "t.kind": kind,
                                 "t.trace": trace})
        no_exception(at)
        assert at.session_state["t.asked"] is None and message in at.warning[0].value
    assert classroom.state(store, code).poll is None
    at = session(stepper, **{"t.store": store, "room.code": code, "room.secret": "a guess", "t.kind": "shape",
                             "t.trace": trace})
    assert at.session_state["t.asked"] is None and "Only the teacher who opened room" in at.error[0].value
    at = session(stepper, **{"t.store": store, "room.code": code, "room.secret": secret, "t.kind": "shape",
                             "t.trace": trace})
    assert at.session_state["t.asked"] == classroom.state(store, code).poll["id"]


def test_the_chart_spec_examples():
    """ui/ is not among pytest's doctest paths: the module's examples run here."""
    import doctest

    import ui.room.poll
    assert doctest.testmod(ui.room.poll, optionflags=doctest.NORMALIZE_WHITESPACE).failed == 0
