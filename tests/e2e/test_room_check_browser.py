"""The teacher's own question and what the class learned, in real browsers: a teacher and two students, each in a
chromium context of their own, over two app processes sharing a real redis-server (the teacher and Ben on server A,
Ana on server B).

The teacher teaches a one-stop lesson whose check has two questions (the teacher's own, and the bank's scaled score
computed on its own view, d_k = 4, never shown to the class). In the room, the teacher writes a question of their own
with markup typed into it (`**x** <b>y</b>`): both students read those characters, not bold and not HTML, in the
question and its choice. Then the check before the lesson (Ben: 1 of 2 right, Ana: 0 of 2) and after it (Ben 2 of 2,
Ana 1 of 2): the room page's box says pre 25, post 75, ⟨g⟩ = 0.67 over the 2 students, and the CSV downloaded from it
has exactly the ten answers, each with its phase and whether it was right. With ATTENTION_EXPLORER_SHOTS=<folder>
the screens are saved there.
"""
from __future__ import annotations

import csv
import io
import re

import pytest

try:
    from playwright.sync_api import expect
except ImportError:
    expect = None

from bench._common import after_run, new_context
from tests.e2e.conftest import warm
from tests.e2e.test_room_browser import button, click, join, no_errors, redis_pair, shot, teach
from tests.e2e.test_room_pacing_browser import sees as sees_in, text

MARKUP = "**x** <b>y</b>"
OWN_CHOICES = [MARKUP, "plain"]                      # the own question in the room: B is right
CHECK_OWN = {"prompt": "Which rows of A sum to 1?", "choices": ["none", "some", "every row"], "answer": 2}
SEE_S = 10.0


def _lesson():
    from classroom.lesson import from_dict, to_link
    lesson = from_dict({"title": "Scores, checked", "stops": [{"title": "Scores", "page": "scores",
                                                                 "query": {"d_k": "4"}}],
                        "check": [CHECK_OWN, {"page": "scores", "query": {"d_k": "4"}, "poll": "scaled_score",
                                              "poll_at": {"row": "0", "col": "1"}}]})
    return lesson, to_link(lesson)


@pytest.fixture(scope="module")
def servers(room_processes, redis_url):
    a, b = redis_pair(room_processes)
    warm([a, b], [("lessons", f"lesson={_lesson()[1]}"), ("room", "")])
    return a, b


def sees(tab, words: str) -> None:
    sees_in(tab, words, SEE_S)


def send(tab, waiting_for: str, pick: int) -> None:
    """A student answers the question whose words `waiting_for` are on their screen: choice `pick`, sent."""
    sees(tab, waiting_for)
    card = tab.locator("[data-testid='stForm']").filter(has=tab.get_by_role("radiogroup")).first
    card.get_by_role("radio").nth(pick).check(force=True)
    after_run(tab, lambda: card.locator("button").filter(has_text="Send my answer").first.click())
    sees(tab, f"Your answer: {'ABCDEF'[pick]}.")


def test_own_question_check_gain_and_csv_over_two_processes_and_redis(servers, chromium):
    from ui.room.check import check_poll
    a, b = servers
    lesson, link = _lesson()
    bank = check_poll(lesson.check[1], "pre", 1, 2)[0]           # made as the server makes it: seed 0, pinned
    right, wrong = bank["answer"], (bank["answer"] + 1) % len(bank["choices"])
    contexts = [new_context(chromium) for _ in range(3)]
    teacher, ben, ana = (ctx.new_page() for ctx in contexts)
    try:
        code = teach(teacher, a, link)
        join(ben, a, code, "Ben")
        join(ana, b, code, "Ana")

        # the teacher's own question, markup typed into it: shown as those characters everywhere
        box = teacher.locator("[data-testid='stExpander']").filter(has_text="Class question").first
        after_run(teacher, lambda: box.locator("summary").first.click(), timeout_ms=30_000)
        form = teacher.locator("[data-testid='stForm']").filter(has_text="Or write your own question").first
        form.get_by_role("textbox", name="Your question").fill(MARKUP)
        form.get_by_role("textbox", name="Choices, one a line (2 to 6)").fill("\n".join(OWN_CHOICES))
        form.get_by_role("radio", name="B").check(force=True)
        shot(teacher, "own_question_form")
        click(teacher, "Ask my question")
        send(ben, MARKUP, 1)
        send(ana, MARKUP, 0)
        shot(ben, "own_question_student")
        for tab in (ben, ana):
            assert f"A. {MARKUP}" in text(tab)                  # the choice too, as typed
        for tab in (ben, ana, teacher):
            assert tab.locator("strong").filter(has_text=re.compile(r"^x$")).count() == 0
            assert tab.locator("b").filter(has_text=re.compile(r"^y$")).count() == 0
        sees(teacher, "2 of 2 students answered")

        # the check before the lesson: Ben right then wrong, Ana wrong twice
        click(teacher, "Start the check (before the lesson)")
        send(ben, "The check before the lesson, question 1 of 2", 2)
        send(ana, "The check before the lesson, question 1 of 2", 0)
        shot(ana, "check_student_pre")
        shot(teacher, "check_teacher_bar")
        click(teacher, "Next check question ▶")
        send(ben, "The check before the lesson, question 2 of 2", wrong)
        send(ana, "The check before the lesson, question 2 of 2", wrong)
        assert "The answer:" not in text(ben)                    # never revealed before the lesson
        assert teacher.locator("button:visible").filter(has_text="Reveal the answer").count() == 0
        click(teacher, "End check")

        # after it: Ben right twice, Ana right then wrong
        click(teacher, "Start the check (after the lesson)")
        send(ben, "The check after the lesson, question 1 of 2", 2)
        send(ana, "The check after the lesson, question 1 of 2", 2)
        click(teacher, "Next check question ▶")
        send(ben, "The check after the lesson, question 2 of 2", right)
        send(ana, "The check after the lesson, question 2 of 2", wrong)
        click(teacher, "End check")

        # what the class learned: the exact gain, and the CSV's rows
        learned = teacher.locator("[data-testid='stExpander']").filter(has_text="What the class learned").first
        after_run(teacher, lambda: learned.locator("summary").first.click(), timeout_ms=30_000)
        sees(teacher, "⟨g⟩ = (post − pre) / (100 − pre) = (75 − 25) / (100 − 25) = 0.67, over the 2 students who "
                      "answered every question of the check before and after.")
        shot(teacher, "check_teacher_learned")
        with teacher.expect_download(timeout=30_000) as got:
            button(teacher, "Download the responses (CSV)").click()
        raw = open(got.value.path(), "rb").read()
        assert raw.startswith(b"\xef\xbb\xbf")                 # a BOM: a spreadsheet reads the names as UTF-8
        rows = list(csv.reader(io.StringIO(raw.decode("utf-8-sig"))))
        assert rows[0] == ["nickname", "phase", "question", "answer", "right", "seconds"]
        q2 = bank["prompt"]
        b_right, b_wrong = f"{'ABCDEFGH'[right]}. {bank['choices'][right]}", \
            f"{'ABCDEFGH'[wrong]}. {bank['choices'][wrong]}"
        assert [r[:5] for r in rows[1:]] == [
            ["Ana", "poll", MARKUP, f"A. {MARKUP}", "no"], ["Ben", "poll", MARKUP, "B. plain", "yes"],
            ["Ana", "pre", CHECK_OWN["prompt"], "A. none", "no"], ["Ben", "pre", CHECK_OWN["prompt"], "C. every row", "yes"],
            ["Ana", "pre", q2, b_wrong, "no"], ["Ben", "pre", q2, b_wrong, "no"],
            ["Ana", "post", CHECK_OWN["prompt"], "C. every row", "yes"],
            ["Ben", "post", CHECK_OWN["prompt"], "C. every row", "yes"],
            ["Ana", "post", q2, b_wrong, "no"], ["Ben", "post", q2, b_right, "yes"]]
        assert all(0.0 <= float(r[5]) < 120 for r in rows[1:])
        for tab in (ben, ana):                                   # names and answers: the teacher's screen only
            assert "0.67" not in text(tab) and "Ana, " not in text(ben)
        no_errors([teacher, ben, ana], [a, b])
    finally:
        for ctx in contexts:
            ctx.close()
