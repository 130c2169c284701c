"""A lesson stop asks before it tells, in real browsers: a teacher and a student, each in a chromium context of
their own: on one app process (its own server: the room's store is the process's), and on two app processes
sharing a real redis-server (the teacher on one, the student on the other).

The teacher opens a one-stop lesson from its link (the stop: the scaled scores, its answer Ŝ[0,0] hidden, the cell
Ŝ[0,1] to explain at the reveal, and a note that quotes the answer), teaches it in a new room, and shows the stop.
The student's screen: the scores page, a "?" where Ŝ[0,0] is, its number nowhere (not in the page's text, not in
the charts' drawn strings, not in any byte the server sent: its float64 is searched in every websocket frame), no
explanation open, a line asking to predict first, no note. The teacher's screen: the number, the caption saying it
is hidden from the class, the note; in presenter mode (the projector) the note is gone and the number is "?" there
too. The student clicks the "?": it says the number is hidden until the reveal, and she still follows. After
"Reveal" the student's screen shows the number and the cell's explanation, opened by itself.
"""
from __future__ import annotations

import struct

import pytest

try:
    from playwright.sync_api import expect
except ImportError:
    expect = None

from bench._common import EXCEPTION, after_run, new_context, wait_for_charts
from tests.e2e.test_explain_in_sight import box_of, click_cell
from tests.e2e.test_room_browser import click, join, shot, teach, wait_url

NOTE = "Secret note: the answer is −25.06, not −12.53."
FOLLOW_S = 8.0                 # a generous bound: this test is about what is shown, not how fast


def _lesson_link():
    from classroom.lesson import Lesson, Stop, to_link
    stop = Stop("Scaled scores", "scores", {"scores.tab": "1", "cell": "hm:scaled_scores:None.0.1"},
                ask="S[0, 0] is the score of I with itself, and d_k = 4: what is the scaled score?", note=NOTE,
                hide=("scaled_scores:None.0.0",))
    return to_link(Lesson("Predict", "", (stop,)))


def _hidden_value() -> float:
    from attention_core import Config
    from ui.cache import get_trace
    return float(get_trace(Config())["scaled_scores"].value[0, 0])


def _body(tab) -> str:
    return tab.evaluate("() => document.body.innerText")


def _chart_texts(tab) -> list[str]:
    return [t for c in wait_for_charts(tab) for t in c["texts"]]


def _scaled_chart_has(tab, text: str, timeout_ms: float = 15_000) -> list[str]:
    """Wait until a drawn heatmap writes `text` in a cell; its strings."""
    found = wait_for_charts(tab, lambda cs: any(text in c["texts"] for c in cs if c["rendered"]), timeout_ms)
    return next((c["texts"] for c in found if text in c["texts"]), [])


# Over two processes and Redis only (the memory store is the same operations, tests/test_room_store.py; one
# process in the browser: tests/e2e/test_room_browser.py): the suite's 15 minutes on 2 cores
@pytest.mark.parametrize("room_servers", ["redis"], indirect=True, ids=["two-processes-redis"])
def test_a_stop_arrives_to_predict_and_the_reveal_opens_it(room_servers, chromium):
    a, b = room_servers
    value = _hidden_value()                                # −25.0635…: Ŝ[0,0] on the default settings
    shown = f"{value:.2f}".replace("-", "−")               # as the chart writes it
    digits = f"{abs(value):.2f}"                          # "25.06": in no text of the student's screen
    raw = struct.pack("<d", value)                        # its float64, as an Arrow cell would carry it
    contexts = [new_context(chromium) for _ in range(2)]
    teacher, ana = (ctx.new_page() for ctx in contexts)
    received: list[bytes] = []
    ana.on("websocket", lambda ws: ws.on("framereceived", lambda data: received.append(
        data if isinstance(data, bytes) else data.encode())))
    try:
        code = teach(teacher, a, _lesson_link())
        assert NOTE not in _body(teacher)                  # the room page may be on the projector
        join(ana, b, code, "Ana")
        expect(ana.get_by_text("Ana", exact=True).first).to_be_visible(timeout=10_000)

        # the stop, to predict
        click(teacher, "Show this stop")
        wait_url(ana, r"/scores\?", FOLLOW_S)
        texts = _scaled_chart_has(ana, "?")
        expect(ana.get_by_text("Predict first", exact=False).first).to_be_visible(timeout=5_000)
        expect(ana.get_by_text("hidden until your teacher reveals it", exact=False).first).to_be_visible()
        body = _body(ana)
        assert digits not in body and digits not in " ".join(_chart_texts(ana)), texts
        assert "was made" not in body and "Secret" not in body
        assert "cell=" not in ana.url
        assert not any(raw in frame for frame in received), "the hidden number's float64 reached the browser"
        assert ana.locator(EXCEPTION).count() == 0
        shot(ana, "predict_student")
        # she clicks the "?": told it is hidden, no number, and she still follows (the reveal will reach her)
        click_cell(ana, box_of(ana, "Scaled scores"), 0)
        expect(ana.get_by_text("hidden until your teacher reveals it: predict it first", exact=False).first
               ).to_be_visible(timeout=10_000)
        shot(ana, "predict_clicked")
        body = _body(ana)
        assert digits not in body and "was made" not in body and "you follow your teacher's screen" in body
        assert not any(raw in frame for frame in received)

        # the teacher: the number, said to be hidden from the class, and the note
        _scaled_chart_has(teacher, shown)
        expect(teacher.get_by_text("hidden on the students' screens until you reveal", exact=False).first
               ).to_be_visible(timeout=5_000)
        assert NOTE in _body(teacher)
        shot(teacher, "predict_teacher")
        # presenter mode (the projector): no note, and the number is "?" there too
        switch = teacher.locator("[data-testid='stMain']").get_by_text("Presenter mode").first
        after_run(teacher, lambda: switch.click())
        _scaled_chart_has(teacher, "?")
        body = _body(teacher)
        assert "Secret" not in body and digits not in body and "not shown here" in body
        shot(teacher, "predict_projector")
        after_run(teacher, lambda: switch.click())
        expect(teacher.get_by_text(NOTE, exact=False).first).to_be_visible(timeout=5_000)

        # the reveal: a new view, the number and the cell's explanation on the student's screen
        click(teacher, "Reveal")
        wait_url(ana, r"/scores\?.*cell=hm", FOLLOW_S)
        _scaled_chart_has(ana, shown)
        expect(ana.get_by_text("was made", exact=False).first).to_be_visible(timeout=10_000)
        body = _body(ana)
        assert "Predict first" not in body and "Secret" not in body
        assert any(raw in frame for frame in received)      # revealed: now its float64 arrives (the search works)
        shot(ana, "revealed_student")
        expect(teacher.get_by_text("was made", exact=False).first).to_be_visible(timeout=10_000)
        for tab in (teacher, ana):
            assert tab.locator(EXCEPTION).count() == 0
        for server in {a, b}:
            assert "Traceback" not in server.log_tail(50_000), server.log_tail(3000)
    finally:
        for ctx in contexts:
            ctx.close()
