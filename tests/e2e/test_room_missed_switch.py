"""A following student whose browser misses the run that switched its page still gets the pushed page (issue 29).

The soak's one wrong page (CI at c480677): after a push, a student's session ran the new page, but the student's
browser went on showing the old one, and each tick it sent after (naming the old page) was dropped as stale
(ui/fragment_guard.py), ~100 in 30 s: nothing would ever redraw that screen. Here the student's browser misses that
run on purpose: its connection to the server (routed through playwright) loses every message from the first run
after the teacher's click to the end of the full run that switched the page. The screen must then show the pushed
page anyway (the guard sends the session's page again once the stale ticks have gone on for RESEND_AFTER_S), and
stay there.
"""
from __future__ import annotations

import re
import threading
import time

import pytest

pytest.importorskip("playwright")
from playwright.sync_api import expect

from bench._common import EXCEPTION, after_run, all_pages, new_context, page_title
from tests.e2e.conftest import warm
from tests.e2e.test_room_browser import click, go, join, room_code
from ui.fragment_guard import RESEND_AFTER_S

FIRST = next(p for p in all_pages() if p.path == "qkv")
PUSHED = next(p for p in all_pages() if p.path == "scores")


class MissedRun:
    """The student's websocket, relayed: when armed, the server's messages are lost from the next run's start
    (a new_session) through the end of the next full run (a script_finished after a new_session naming no
    fragment), whole runs only, as a browser that never took them in."""

    def __init__(self):
        self.armed = self.dropping = self.full = False
        self.lost_runs = 0
        self.done = threading.Event()

    def route(self, ws) -> None:
        server = ws.connect_to_server()
        ws.on_message(lambda message: server.send(message))
        server.on_message(lambda message: self._to_browser(ws, message))

    def _to_browser(self, ws, message) -> None:
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
        if self.armed and isinstance(message, bytes):
            fm = ForwardMsg()
            fm.ParseFromString(message)
            kind = fm.WhichOneof("type")
            if kind == "new_session":
                self.dropping, self.full = True, not fm.metadata.run.fragment_ids
            if self.dropping:
                if kind == "script_finished":
                    self.lost_runs += 1
                    if self.full and ForwardMsg.ScriptFinishedStatus.Name(fm.script_finished) != \
                            "FINISHED_EARLY_FOR_RERUN":
                        self.armed = self.dropping = False
                        self.done.set()
                return
        ws.send(message)


def test_a_student_whose_browser_missed_the_switch_gets_the_pushed_page(room_processes, chromium):
    server = room_processes["memory"][0]
    warm([server], [(FIRST.path, ""), (PUSHED.path, "")])
    contexts = [new_context(chromium) for _ in range(2)]
    teacher, student = (ctx.new_page() for ctx in contexts)
    relay = MissedRun()
    student.route_web_socket(re.compile(r"/_stcore/stream"), relay.route)
    try:
        after_run(teacher, lambda: teacher.goto(f"{server.url}/room", wait_until="domcontentloaded"),
                  timeout_ms=90_000)
        click(teacher, "Open a room")
        code = room_code(teacher)
        join(student, server, code, "Mia")
        expect(student.get_by_text("you follow your teacher's screen", exact=False).first).to_be_visible(
            timeout=30_000)
        go(teacher, FIRST.section, FIRST.label)
        click(teacher, "Show this to the class")
        expect(student.locator("h1").first).to_have_text(page_title(FIRST), timeout=15_000)

        go(teacher, PUSHED.section, PUSHED.label)
        relay.armed = True                                      # the student's browser misses the switch
        t0 = time.perf_counter()
        click(teacher, "Show this to the class")
        deadline = time.perf_counter() + 20
        while not relay.done.is_set() and time.perf_counter() < deadline:
            student.wait_for_timeout(100)                       # the relay runs while playwright waits
        assert relay.done.is_set(), "the switch's run never came"
        assert student.locator("h1").first.inner_text() == page_title(FIRST)   # missed: still the old page
        expect(student.locator("h1").first).to_have_text(page_title(PUSHED), timeout=(RESEND_AFTER_S + 15) * 1000)
        took = time.perf_counter() - t0
        expect(student).to_have_url(re.compile(rf"/{PUSHED.path}(\?|$)"), timeout=5_000)
        student.wait_for_timeout(1500)                          # and it stays
        assert student.locator("h1").first.inner_text() == page_title(PUSHED)
        expect(student.get_by_text("you follow your teacher's screen", exact=False).first).to_be_visible()
        assert student.locator(EXCEPTION).count() == 0
        assert took >= RESEND_AFTER_S and relay.lost_runs >= 1
        assert "that page is sent to it again" in server.log_tail(5_000_000)
    finally:
        for ctx in contexts:
            ctx.close()
