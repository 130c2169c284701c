"""Repro, not in CI (not test_*.py): three stops on the next-token page that change its own controls, both chromiums
slowed 6x. Run: nice -n 10 python -m pytest tests/e2e/repro_same_page_stops.py (about 70-90 s). NOTES-stops.md."""
from __future__ import annotations

import re
import subprocess

from playwright.sync_api import expect

from bench._common import EXCEPTION, after_run, new_context
from tests.e2e.test_room_browser import click, join, room_code, shot, wait_url
from tests.e2e.test_room_stop_polls_browser import _prompt, _student_shows, servers  # noqa: F401

S = "the cat sat on the mat and the cat sat on the"


def test_same_page_stops(servers, chromium):
    from classroom.lesson import Lesson, Stop, to_link, from_dict
    base = {"sentence": S, "next_token.p": "1", "next_token.seed": "1", "next_token.n_new": "0"}
    import json
    d = json.loads(subprocess.run(["git", "show", "6f2ae99:classroom/lessons/inside_a_transformer.json"], capture_output=True, text=True, check=True).stdout)
    d["stops"][2]["query"]["next_token.temperature"] = "2"
    d["stops"][2]["poll_at"]["temperature"] = "2"
    d.pop("check", None)
    lesson = from_dict(d)
    prompts = [_prompt(s) for s in lesson.stops]
    teacher_server, student_server = servers
    contexts = [new_context(chromium) for _ in range(2)]
    teacher, ana = (ctx.new_page() for ctx in contexts)
    for tab in (teacher, ana):
        tab.context.new_cdp_session(tab).send("Emulation.setCPUThrottlingRate", {"rate": 6})
    try:
        after_run(teacher, lambda: teacher.goto(f"{teacher_server.url}/lessons?lesson={to_link(lesson)}",
                                                wait_until="domcontentloaded"), timeout_ms=90_000)
        click(teacher, "Teach this lesson")
        click(teacher, "Open a room")
        code = room_code(teacher)
        join(ana, student_server, code, "Ana")
        expect(ana.get_by_text("Ana", exact=True).first).to_be_visible(timeout=10_000)
        for n, (stop, prompt) in enumerate(zip(lesson.stops, prompts)):
            click(teacher, "Show this stop" if n == 0 else "Next stop ▶")
            if n == 0: wait_url(ana, r"/block", 20)
            click(teacher, "Ask this stop's question")
            body = teacher.evaluate("() => document.body.innerText")
            assert "does not fit" not in body, (n, body[:2000])
            _student_shows(ana, prompt)
            ana.wait_for_timeout(1500)
            body = ana.evaluate("() => document.body.innerText")
            if "You stepped out" in body:
                shot(ana, f"same_page_{n}")
            assert "You stepped out" not in body, (n, ana.url)
            assert ana.locator(EXCEPTION).count() == 0
    finally:
        for ctx in contexts:
            ctx.close()
