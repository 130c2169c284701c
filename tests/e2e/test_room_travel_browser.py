"""A teacher's session-trained run reaches a student on another app process, in real browsers: two processes share a
real redis-server (tests/conftest.py's redis_url); the teacher (process A) opens a room, trains the small model for
50 steps from seed 3 on the induction page (the button labelled Train: this test presses it, the walk never does)
and shows it to the class; the student (process B) follows to the page, which names the teacher's run, fetches it
from the store beside the room and says "Your teacher's run": the same seed, the same 50 steps, the same copy loss
and scores, word for word, as the teacher's own paragraph."""
from __future__ import annotations

import re
import time

import pytest

try:
    from playwright.sync_api import expect
except ImportError:            # the fixtures skip, or fail under ATTENTION_EXPLORER_REQUIRE_BROWSER=1
    expect = None

from attention_core.training.lm.train import STEPS as SHIPPED_STEPS
from bench._common import after_run, new_context
from tests.e2e.conftest import warm
from tests.e2e.test_room_browser import click, go, join, no_errors, query, room_code, wait_url

FOLLOW_S = 8                   # a push reaches the student's address bar within this
ANALYSE_S = 15                 # then the page shows the run: one read and one analysis per process (1.2 s idle,
                               # measured up to 6.5 s at a load average of 18 on 2 cores)
SEED, STEPS = 3, 50


@pytest.fixture(scope="module")
def two_processes(room_processes, redis_url):
    """Two app processes at one redis-server (the room tests' pair), each having drawn the room and the induction
    page once (a cold process's first run is the cold start's cost, not the room's)."""
    pair = room_processes["redis"]
    warm(pair, [("room", ""), ("induction_heads", "")])
    return pair


def number(tab, label: str, value: int) -> None:
    box = tab.get_by_role("spinbutton", name=label).first
    after_run(tab, lambda: (box.fill(str(value)), box.press("Enter")), timeout_ms=60_000)


def run_paragraph(tab):
    """The paragraph that says which run the page shows and its numbers."""
    return tab.locator("[data-testid='stMarkdownContainer']").filter(has_text="The copy loss (the next token").first


def test_a_teachers_trained_run_reaches_a_student_on_another_process(two_processes, chromium):
    a, b = two_processes
    t0 = time.perf_counter()
    contexts = [new_context(chromium) for _ in range(2)]
    teacher, ana = (ctx.new_page() for ctx in contexts)
    try:
        after_run(teacher, lambda: teacher.goto(f"{a.url}/room", wait_until="domcontentloaded"), timeout_ms=90_000)
        click(teacher, "Open a room")
        code = room_code(teacher)
        join(ana, b, code, "Ana")
        expect(ana.get_by_text("Ana", exact=True).first).to_be_visible(timeout=10_000)

        # the teacher trains a short run of their own: 50 steps from seed 3
        go(teacher, "Inside a transformer", "Induction heads")
        number(teacher, "Seed", SEED)
        number(teacher, "Training steps", STEPS)
        click(teacher, "Train from a seeded random start", timeout_ms=180_000)
        mine = run_paragraph(teacher)
        expect(mine).to_contain_text(f"Your run (this session): seed {SEED}, {STEPS} steps in", timeout=180_000)
        name = query(teacher).get("induction.run", "")
        assert re.fullmatch(r"[0-9a-f]{32}", name), teacher.url
        assert teacher.get_by_text("Not sent with this view", exact=False).count() == 0     # all of it travels
        trained = time.perf_counter()
        click(teacher, "Show this to the class")

        # the student on process B: the page, naming the teacher's run, shows it
        wait_url(ana, rf"/induction_heads\?.*induction\.run={name}", FOLLOW_S)
        theirs = run_paragraph(ana)
        expect(theirs).to_contain_text(f"Your teacher's run, trained in their session and shown to the class: seed "
                                       f"{SEED}, {STEPS} steps in", timeout=ANALYSE_S * 1000)
        shown = time.perf_counter() - trained
        own_text, their_text = mine.inner_text(), theirs.inner_text()
        assert own_text.split(": seed", 1)[1] == their_text.split(": seed", 1)[1], (own_text, their_text)
        copy_loss = re.search(r"goes from (\d+\.\d\d) to (\d+\.\d\d) nats", their_text)
        assert copy_loss and copy_loss.group(0) in own_text                  # a number of the run, on both screens
        assert "The shipped run" not in their_text and f"{SHIPPED_STEPS:,} steps" not in their_text
        expect(ana.get_by_text("you follow your teacher's screen", exact=False).first).to_be_visible(timeout=5_000)
        no_errors((teacher, ana), (a, b))
        print(f"trained and shown: the student's screen showed the run {shown:.1f} s after the push was clicked; "
              f"{time.perf_counter() - t0:.1f} s in all")
    finally:
        for ctx in contexts:
            ctx.close()
