"""The teacher's dashboard and pacing in real browsers: a teacher and two students, each in a chromium context of their
own, over two app processes sharing a real redis-server (the teacher and Ben on server A, Ana on server B).

The teacher teaches today's attention in a new room and jumps to its fourth stop from the room page's list: both
students' screens go there. Ana steps out (a sentence of her own): the teacher's bar counts 1 following, 1 stepped
out and names her with the page. The teacher asks the stop's question; Ben answers, Ana does not: the teacher's
bar counts 1 of 2 answered, and the dashboard on the room page (turned on) lists Ben following with his answer and
its seconds, Ana stepped out with no answer (Ben's nickname `<b>Ben</b>` as those characters). Lock: Ana's screen is
brought back to the teacher's view and says the view is locked; her own change is undone with a line saying so.
Unlock: she steps out again. An early reveal (the stop's Reveal with 1 of 2 answered): Ana reads that she did not
answer and the right answer. Removing Ana: her screen says the teacher removed her, and her browser's cookie, put in
a fresh browser, does not bring her back. With ATTENTION_EXPLORER_SHOTS=<folder> the screens are saved there.
"""
from __future__ import annotations

import re
import time

import pytest

try:
    from playwright.sync_api import expect
except ImportError:
    expect = None

from bench._common import after_run, new_context, pick_option
from tests.e2e.conftest import warm
from tests.e2e.test_room_browser import (button, click, go, join, no_errors, redis_pair, set_sentence, shot, teach,
                                         sidebar_sentence, wait_url)

SEE_S = 8.0                    # the teacher's line and table refresh every 2 s; a student's report within a tick
OWN_SENTENCE = "dogs bark at night"
BEN, ANA = "<b>Ben</b>", "Ana"
LESSON, STOP = "todays_attention", 3             # its 4th stop: the KV cache page, 4 query heads sharing 2 KV heads


def _lesson():
    from classroom.lesson import shipped, to_link
    lesson = shipped()[LESSON]
    return lesson, to_link(lesson)


@pytest.fixture(scope="module")
def servers(room_processes, redis_url):
    """Server A (the teacher, Ben) and B (Ana), sharing the session's redis-server; the lesson's views run once."""
    a, b = redis_pair(room_processes)
    lesson, link = _lesson()
    stop = lesson.stops[STOP]
    query = "&".join(f"{k}={v}" for k, v in stop.query.items())
    warm([a, b], [("lessons", f"lesson={link}"), ("kv_cache", query),
                  ("kv_cache", query + "&sentence=" + OWN_SENTENCE.replace(" ", "+"))])
    return a, b


def text(tab) -> str:
    return re.sub(r"\s+", " ", tab.evaluate("() => document.body.innerText"))


def sees(tab, words: str, timeout_s: float = SEE_S) -> float:
    """Wait until the screen's text holds `words` (spaces as laid out): the seconds it took."""
    t0 = time.perf_counter()
    while words not in text(tab):
        if time.perf_counter() - t0 > timeout_s:
            raise AssertionError(f"not on the screen within {timeout_s} s: {words!r}\n{text(tab)[:3000]}")
        tab.wait_for_timeout(150)
    return time.perf_counter() - t0


def table_rows(tab) -> dict[str, list[str]]:
    """The dashboard's rows: nickname -> [state, answer, seconds]."""
    rows = tab.locator("[data-testid='stTable'] tbody tr")
    out = {}
    for i in range(rows.count()):
        cells = [c.strip() for c in rows.nth(i).locator("td, th").all_inner_texts()]
        out[cells[0]] = cells[1:]
    return out


def rows_become(tab, check, timeout_s: float = SEE_S) -> dict:
    t0 = time.perf_counter()
    while True:
        rows = table_rows(tab)
        if check(rows):
            return rows
        if time.perf_counter() - t0 > timeout_s:
            raise AssertionError(f"the dashboard's rows: {rows}")
        tab.wait_for_timeout(200)


def test_the_dashboard_and_pacing_over_two_processes_and_redis(servers, chromium):
    a, b = servers
    lesson, link = _lesson()
    stop = lesson.stops[STOP]
    t_start = time.perf_counter()
    phases: list[tuple[str, float]] = []
    phase = lambda name: phases.append((name, round(time.perf_counter() - t_start, 1)))
    contexts = [new_context(chromium) for _ in range(3)]
    teacher, ben, ana = (ctx.new_page() for ctx in contexts)
    try:
        code = teach(teacher, a, link)
        join(ben, a, code, BEN)
        join(ana, b, code, ANA)
        for tab, nick in ((ben, BEN), (ana, ANA)):
            expect(tab.get_by_text(nick, exact=True).first).to_be_visible(timeout=10_000)
        phase("joined")

        # jump to the 4th stop from the room page's list: both screens go there
        click(teacher, f"{STOP + 1}. {stop.title}")
        for tab in (ben, ana):
            wait_url(tab, r"/kv_cache\?.*kv_cache\.tab=1", 10)
        assert "/kv_cache" in teacher.url and "n_heads=4" in teacher.url
        sees(teacher, "2 students here: 2 following, 0 stepped out")
        phase("jumped")

        # Ana steps out: the teacher's bar counts it and names her with the page
        set_sentence(ana, OWN_SENTENCE)
        expect(ana.get_by_text("You stepped out", exact=False).first).to_be_visible(timeout=5_000)
        took_out = sees(teacher, "2 students here: 1 following, 1 stepped out")
        sees(teacher, "Stepped out: Ana (KV cache & decoding)")
        shot(teacher, "pacing_teacher_bar")
        phase("stepped out")

        # the stop's question: Ben answers A, Ana does not
        click(teacher, "Ask this stop's question")
        for tab in (ben, ana):
            expect(tab.get_by_text("Send my answer").first).to_be_visible(timeout=10_000)
        card = ben.locator("[data-testid='stForm']").filter(has=ben.get_by_role("radiogroup"))
        card.get_by_role("radio").nth(0).check(force=True)
        after_run(ben, lambda: card.locator("button").filter(has_text="Send my answer").first.click())
        expect(ben.get_by_text("Your answer: A.", exact=False).first).to_be_visible(timeout=5_000)
        sees(teacher, "1 of 2 answered")

        # the dashboard on the room page: who, where, what, how long
        go(teacher, "Classroom", "A room for the class")
        after_run(teacher, lambda: teacher.get_by_text("Show each student (your screen only)").click())
        rows = rows_become(teacher, lambda r: set(r) == {BEN, ANA} and r[BEN][1].startswith("A."))
        assert rows[ANA][:2] == ["stepped out: KV cache & decoding", "no answer"], rows
        assert rows[BEN][0] == "following" and rows[ANA][2] == "", rows
        assert 0.0 <= float(rows[BEN][2]) < 60, rows
        assert teacher.locator("[data-testid='stTable'] b").count() == 0          # Ben's name: text, not bold
        shot(teacher, "pacing_teacher_dashboard")
        for tab in (ben, ana):                      # no names, no one's answer on a student's screen
            assert "stepped out: KV" not in text(tab) and "no answer" not in text(tab)
        phase("dashboard")

        # lock: Ana is brought back, her screen says so; her own change is undone with a line
        click(teacher, "Lock the class to my view")
        sees(teacher, "The class is locked to your view")
        took_back = sees(ana, "Your teacher has locked the view")
        expect(sidebar_sentence(ana)).not_to_have_value(OWN_SENTENCE, timeout=10_000)
        rows_become(teacher, lambda r: r.get(ANA, [""])[0] == "following")
        set_sentence(ana, OWN_SENTENCE)
        sees(ana, "your change was undone")
        expect(sidebar_sentence(ana)).not_to_have_value(OWN_SENTENCE, timeout=10_000)
        assert "You stepped out" not in text(ana)
        shot(ana, "pacing_student_locked")
        phase("locked")

        # unlock: she may step out again
        click(teacher, "Unlock: students may explore")
        sees(ana, "you follow your teacher's screen")
        deadline = time.perf_counter() + 5
        while "Your teacher has locked the view: your screen" in text(ana) and time.perf_counter() < deadline:
            ana.wait_for_timeout(150)
        set_sentence(ana, OWN_SENTENCE)
        expect(ana.get_by_text("You stepped out", exact=False).first).to_be_visible(timeout=5_000)
        expect(sidebar_sentence(ana)).to_have_value(OWN_SENTENCE, timeout=5_000)
        rows_become(teacher, lambda r: r.get(ANA, [""])[0].startswith("stepped out"))
        phase("unlocked")

        # an early reveal: 1 of 2 answered; Ana reads that she did not answer, and the answer
        reveal = teacher.locator("button:visible").filter(has_text=re.compile(r"Reveal$")).first
        after_run(teacher, lambda: reveal.click(), timeout_ms=60_000)
        sees(ana, "You did not answer. The answer:")
        sees(ben, "you: A · right:")
        phase("revealed")

        # remove Ana: her screen says so; her cookie in a fresh browser does not bring her back
        cookie = [c for c in contexts[2].cookies() if c["name"] == "attention_explorer_room"]
        assert cookie and cookie[0]["value"].startswith(f"s.{code}."), cookie
        go(teacher, "Classroom", "A room for the class")
        box = teacher.locator("[data-testid='stExpander']").filter(has_text="Remove a student").first
        after_run(teacher, lambda: box.locator("summary").first.click(), timeout_ms=30_000)
        pick_option(teacher, teacher.locator("[data-testid='stSelectbox']").filter(has_text="Student").first,
                    teacher.get_by_role("option", name=ANA, exact=True))
        click(teacher, "Remove from the room")
        sees(teacher, f"Removed “{ANA}” from room {code}.")
        took_removed = sees(ana, f"Your teacher removed you from room {code}")
        rows_become(teacher, lambda r: set(r) == {BEN})
        again = new_context(chromium)
        contexts.append(again)
        again.add_cookies([{k: cookie[0][k] for k in ("name", "value", "domain", "path")}])
        back = again.new_page()
        after_run(back, lambda: back.goto(f"{b.url}/room", wait_until="domcontentloaded"), timeout_ms=60_000)
        sees(back, f"Your teacher removed you from room {code}")
        expect(button(back, "Join the room")).to_be_visible(timeout=5_000)          # out of the room: the doors
        shot(ana, "pacing_student_removed")
        phase("removed")

        no_errors((teacher, ben, ana, back), (a, b))
        print(f"seen by the teacher: a step out in {took_out:.1f} s; lock back on Ana's screen in {took_back:.1f} s; "
              f"removal on Ana's screen in {took_removed:.1f} s")
    finally:
        print("phases (s since start):", ", ".join(f"{n} {t}" for n, t in phases))
        for ctx in contexts:
            ctx.close()
