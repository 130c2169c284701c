"""The room's soak: a teacher pushes views of the whole navigation to students on 2 app processes sharing a real
redis-server, the students' browsers as slow as a school laptop (chromium's CPU throttling, 4x); after every push,
every student's screen must show the pushed page's content within WITHIN_S and still show it HOLD_S later.

    python tests/load/soak.py [--pushes 200] [--seed 29] [--students-per-process 1] [--throttle 4]
                              [--app-root PATH] [--shots DIR] [--frames DIR] [--no-trained-run]

Real browsers (Debian's chromium through playwright), each in a context of its own: the teacher on process A (not
throttled), the students on A and B. The teacher steps through lessons made of the pushes (at most 40 stops a
lesson: each lesson is loaded from a file on the Lessons page, then "Show this stop" and "Next stop ▶"), so every
push is the teacher's click, with the view's page, settings, own controls and open tab. The pushes are PAGES' pages
in a seeded order (each round a new permutation), each with a seeded open tab and controls (CONTROLS), and the
FIXED views (the KV cache calculator with the biggest model and context, the handout of another page, the induction
page's tabs, RoPE's keys) placed first, so a short run has them too. At a seeded point among the rest (in place of
one of them) the teacher's session-trained run: the teacher goes to the induction page through the top bar, trains
TRAIN_STEPS steps from TRAIN_SEED (not timed: training is the teacher's own wait), then clicks "Show this to the
class" (a lesson's stop cannot carry it: it names a run the room does not have yet); every student's screen must
show "Your teacher's run, ...: seed 3, 50 steps in" (NOTES-travel: the run travels through the room's store).

A screen counts as showing the push when the page's title heading is the pushed page's, the pushed tab is the open
one, the address is the page's, the page drew its body (MIN_ELEMENTS elements in the main area) and, for the
handout and the trained run, the view's own words are there (the handout's heading of the pushed page, the
teacher's run's paragraph): "blank" when not (the top bar, the ←/→ links and the room bar only, or a white page),
"wrong page" when another page's title shows, or the handout of another page, or the shipped run instead of the
teacher's. A student whose screen failed joins again (a fresh tab: a reload leaves the room), so each push counts alone.
Printed: pushes, screens, right / blank / wrong, time to content (from the teacher's click) p50 / p95 / max, the
stale fragment reruns the processes dropped (ui/fragment_guard.py's log line), the pages it sent again to a browser
that missed its switch, the browsers' "Bad delta path"
errors, the load average. --frames DIR writes, for each failed screen, the student's last FRAMES_KEPT websocket
frames (Streamlit's protocol, decoded: each run's start and end, each delta's path and element) and console lines:
how issue 31's last blank screen was found (ui/room/wake.py). tests/e2e/test_room_soak.py runs it short in CI. --app-root runs another checkout's app
(the same soak against the app before a fix). Traffic stays on 127.0.0.1; every wait is bounded.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
import tempfile
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qs, urlparse

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench._common import (Page, Server, Session, after_run, all_pages, launch_chromium, new_context,  # noqa: E402
                           page_title, percentile, wait_run_end, run_marker)

REDIS_URL_VARIABLE = "ATTENTION_EXPLORER_REDIS_URL"
WITHIN_S, HOLD_S = 8.0, 1.0        # the pushed page's content within this of the click, and still there this later
GIVE_UP_S = 30.0                   # a screen without it this long after the click is blank (one with it after
                                   # WITHIN_S: late, counted apart: a machine too busy, not a lost screen)
MIN_ELEMENTS = 8                   # a page's body: at least this many elements in the main area (a blank: ~5)
CODE = re.compile(r"\b([A-HJKMNP-Z2-9]{6})\b")          # classroom.codes.ALPHABET
SENTENCES = ("I love you today", "the cat sat on the mat", "dogs bark at night")
MAX_STOPS = 40                     # classroom.lesson.MAX_STOPS
SHOW = "Show this to the class"    # ui/room/bar.SHOW

# Pages pushed: the whole navigation but the room page (a student never follows to it) and those left out here,
# each with why.
LEFT_OUT = {"app_pages/60_room.py": "the room page is never pushed (ui/room/session.known_page)"}
INDUCTION, HANDOUT = "app_pages/52_induction_heads.py", "app_pages/62_handout.py"
TRAIN_SEED, TRAIN_STEPS = 3, 50    # the teacher's session-trained run (tests/e2e/test_room_travel_browser.py's)
TEACHERS_RUN = ("Your teacher's run, trained in their session and shown to the class: "
                f"seed {TRAIN_SEED}, {TRAIN_STEPS} steps in")      # ui/transformer/induction_view.run_text


@dataclass(frozen=True)
class View:
    page: Page
    query: dict = field(default_factory=dict)     # the link's parameters, as text
    tab: str | None = None                        # the tab that must be open on the student's screen
    needle: str | None = None                     # words the page's body must show (the handout's heading, the run)
    wrong: str | None = None                      # words that, shown instead, make it the wrong page's content
    trained: bool = False                         # the teacher's session-trained run: trained, then "Show this to
                                                  # the class" (a lesson's stop cannot name a run the room lacks)

    def stop(self, n: int) -> dict:
        return {"title": f"Push {n}", "page": self.page.path, "query": dict(self.query)}

    def __str__(self) -> str:
        if self.trained and not self.query:
            return f"/{self.page.path} (the teacher's run, seed {TRAIN_SEED}, {TRAIN_STEPS} steps)"
        return f"/{self.page.path}" + ("?" + "&".join(f"{k}={v}" for k, v in self.query.items()) if self.query else "")


def _page(file: str) -> Page:
    return next(p for p in all_pages() if p.file == file)


def tabs_of(file: str) -> tuple[str, list[str]] | None:
    """The page's tab control (ui/page_state.py: its key, its labels in order), or None."""
    from ui import page_state
    for control in page_state.controls_of(file):
        if control.show is not None:              # only page_state.tab() sets show
            labels = []
            while True:
                try:
                    labels.append(control.parse(str(len(labels))))
                except ValueError:
                    return control.key, labels
    return None


# more of a page's own controls (key -> the values drawn from), beside its tab
CONTROLS = {
    "app_pages/40_rope.py": {"rope.p": ["0", "3", "9"], "rope.half": ["0", "1"]},
    "app_pages/41_masks.py": {"masks.sink_on": ["0", "1"]},
    "app_pages/42_kv_cache.py": {"kv_cache.preset": ["Llama 3 8B", "Mistral 7B", "DeepSeek-V3"],
                                 "kv_cache.tokens": ["4096", "65536", "131072"]},
    "app_pages/50_block.py": {"block.layers": ["1", "2"], "block.norm": ["layer", "rms"]},
    "app_pages/51_next_token.py": {"next_token.temperature": ["0.5", "1"], "next_token.n_new": ["3", "5"]},
    "app_pages/52_induction_heads.py": {"induction.ablate": ["all", "0,1", "1,2"]},
    HANDOUT: {"handout.of": ["qkv", "scores", "multi_head", "rope", "masks", "block"]},
}
NO_SETTINGS = {"app_pages/52_induction_heads.py", "app_pages/61_lessons.py", "app_pages/31_quiz.py"}


def handout_heading(path: str) -> str:
    """The heading the handout of the page at this URL path draws (ui/classroom/handout_view.header)."""
    from attention_core.labs.handout.pages import PAGES
    return f"{next(p.section for p in all_pages() if p.path == path)} › {PAGES[path][0]}"


def _view(file: str, query: dict, tab_index: int | None = None) -> View:
    q = dict(query)
    tab = None
    found = tabs_of(file)
    if found and tab_index is not None:
        key, labels = found
        q[key], tab = str(tab_index), labels[tab_index]
    if file == HANDOUT:               # the handout pushed, not the one of the page the student came from
        return View(_page(file), q, tab, needle=handout_heading(q.get("handout.of", "")), wrong=" › ")
    return View(_page(file), q, tab)


def trained_view(query: dict | None = None) -> View:
    """The teacher's run on the induction page (the query: the teacher's address once trained), its paragraph on
    every student's screen; the shipped run's paragraph there instead is the wrong content."""
    query = dict(query or {})
    found = tabs_of(INDUCTION)
    tab = found[1][int(query[found[0]])] if found and query.get(found[0], "").isdigit() else None
    return View(_page(INDUCTION), query, tab, needle=TEACHERS_RUN, wrong="The shipped run", trained=True)


FIXED = [   # first in every run (the cases): the calculator with a big model and context, RoPE's keys, ...
    _view("app_pages/42_kv_cache.py", {"kv_cache.preset": "DeepSeek-V3", "kv_cache.tokens": "65536"}, 2),
    _view(HANDOUT, {"handout.of": "scores", "sentence": "dogs bark at night"}),   # arriving from /kv_cache
    _view("app_pages/40_rope.py", {"rope.p": "9"}, 1),
    _view("app_pages/52_induction_heads.py", {"induction.ablate": "1,2"}, 2),
    _view("app_pages/52_induction_heads.py", {"induction.i": "33"}, 1),
]


def pages() -> list[Page]:
    return [p for p in all_pages() if p.file not in LEFT_OUT]


def push_views(n: int, seed: int, fixed: list[View] = FIXED, trained: bool = True) -> list[View]:
    """n views: the fixed ones, then the pages in a seeded order (a new permutation each round), each with a
    seeded tab, controls and sentence; with `trained`, the teacher's session-trained run in place of one of those
    at a seeded point. The same seed, the same views."""
    rng = random.Random(seed)
    out = list(fixed[:n])
    while len(out) < n:
        for page in rng.sample(pages(), len(pages())):
            if len(out) == n:
                break
            query = {key: rng.choice(values) for key, values in CONTROLS.get(page.file, {}).items()}
            if page.file not in NO_SETTINGS:
                query["sentence"] = rng.choice(SENTENCES)
            found = tabs_of(page.file)
            out.append(_view(page.file, query, rng.randrange(len(found[1])) if found else None))
    if trained and n > len(fixed):
        out[random.Random(f"trained {seed}").randrange(len(fixed), n)] = trained_view()
    return out


# ---- the screens -------------------------------------------------------------------------------------------

SCREEN = """([needle, wrong]) => {
  const main = document.querySelector("[data-testid='stMain']");
  const h1 = main ? main.querySelector("h1") : null;
  const tabs = [...document.querySelectorAll("[role='tab'][aria-selected='true']")].map(t => t.innerText.trim());
  const status = document.querySelector("[data-testid='stStatusWidget']");
  const text = main ? main.innerText : "";
  return {title: h1 ? h1.innerText.trim() : "", tabs: tabs, path: location.pathname.replace(/^\\/+|\\/+$/g, ""),
          elements: main ? main.querySelectorAll("[data-testid='stElementContainer']").length : 0,
          headings: main ? [...main.querySelectorAll("h2")].map(h => h.innerText.trim()) : [],
          has: needle ? text.includes(needle) : true, shows_wrong: wrong ? text.includes(wrong) : false,
          status: status ? status.innerText.trim() : "",
          room: /you follow your teacher/.test(text) ? "following" : /You stepped out/.test(text) ? "stepped out" : ""};
}"""


def read_screen(tab, view: View | None = None) -> dict:
    try:
        return tab.evaluate(SCREEN, [view and view.needle, view and view.wrong])
    except Exception as err:                      # a crashed or navigating page: nothing shown
        return {"title": "", "tabs": [], "path": "", "elements": 0, "status": str(err)[:120], "room": "",
                "headings": [], "has": False, "shows_wrong": False}


def verdict(screen: dict, view: View, title: str) -> str:
    """'right', 'wrong page' or 'blank'. A view with words of its own (the handout's heading, the teacher's run)
    is right only with them; on its page with the wrong ones instead (another page's handout, the shipped run), it
    is the wrong page's content."""
    if screen["title"] and screen["title"] != title:
        return "wrong page"
    if (screen["title"] == title and screen["path"] == view.page.path and screen["elements"] >= MIN_ELEMENTS
            and (view.tab is None or view.tab in screen["tabs"]) and screen["has"]):
        return "right"
    if screen["title"] == title and view.wrong and (
            any(view.wrong in h and h != view.needle for h in screen["headings"]) if view.page.file == HANDOUT
            else screen["shows_wrong"]):
        return "wrong page"
    return "blank"


# ---- what a student's browser got (--frames) ----------------------------------------------------------------

FRAMES_KEPT = 400


def frame_line(payload, sent: bool) -> str:
    """One websocket frame of Streamlit's protocol, in a line: what it is, its run and page, its delta's path."""
    from streamlit.proto.BackMsg_pb2 import BackMsg
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    t = f"{time.time():.3f}"
    if isinstance(payload, str):
        return f"{t} {'>' if sent else '<'} text {payload[:80]}"
    try:
        if sent:
            m = BackMsg.FromString(payload)
            kind = m.WhichOneof("type")
            if kind == "rerun_script":
                r = m.rerun_script
                return (f"{t} > rerun page={r.page_script_hash[:8]} fragment={r.fragment_id[:8]} "
                        f"auto={r.is_auto_rerun} query={r.query_string[:60]!r} cached={len(r.cached_message_hashes)}")
            return f"{t} > {kind}"
        m = ForwardMsg.FromString(payload)
    except Exception as err:                     # not this protocol's
        return f"{t} {'>' if sent else '<'} undecoded {len(payload)} bytes: {err}"
    kind = m.WhichOneof("type")
    run = m.metadata.run
    head = f"{t} < run={run.script_run_id[:6]}{'/' + ','.join(f[:8] for f in run.fragment_ids) if run.fragment_ids else ''} {kind}"
    if kind == "new_session":
        ns = m.new_session
        return f"{head} page={ns.page_script_hash[:8]} name={ns.name!r}"
    if kind == "delta":
        d = m.delta
        what = d.WhichOneof("type")
        inner = d.new_element.WhichOneof("type") if what == "new_element" else ""
        text = ""
        if inner == "markdown":
            text = d.new_element.markdown.body[:50]
        elif inner == "heading":
            text = d.new_element.heading.body[:50]
        return (f"{head} path={list(m.metadata.delta_path)} {what}:{inner} frag={d.fragment_id[:8]} "
                f"cacheable={m.metadata.cacheable} {text!r}")
    if kind == "ref_hash":
        return f"{head} {m.ref_hash[:10]} path={list(m.metadata.delta_path)}"
    if kind == "script_finished":
        return f"{head} {ForwardMsg.ScriptFinishedStatus.Name(m.script_finished)}"
    if kind == "page_info_changed":
        return f"{head} query={m.page_info_changed.query_string[:60]!r}"
    return head


def record_frames(tab, kept) -> None:
    """Keep this tab's websocket frames (decoded, in lines) and its console lines, the last FRAMES_KEPT."""
    def on_socket(ws):
        ws.on("framereceived", lambda payload: kept.append(frame_line(payload, False)))
        ws.on("framesent", lambda payload: kept.append(frame_line(payload, True)))
    tab.on("websocket", on_socket)
    tab.on("console", lambda m: kept.append(f"{time.time():.3f} console {m.type}: {m.text[:200]}"))


# ---- the class -----------------------------------------------------------------------------------------------

def _button(tab, label: str):
    return tab.locator("button:visible").filter(has_text=label).first


def _click(tab, label: str, timeout_ms: float = 60_000) -> None:
    after_run(tab, lambda: _button(tab, label).click(), timeout_ms=timeout_ms)


def _warm(server: Server, views: list[View]) -> None:
    """Each page pushed, once, on this process before the class comes in: a cold process's first runs are the
    cold start's cost (bench/cold_start.py), not the room's."""
    for path in dict.fromkeys(v.page.path for v in views):
        with Session(server.port, page=path, timeout=180) as s:
            s.rerun()


@dataclass
class Student:
    name: str
    server: Server
    tab: object = None
    joins: int = 0


@dataclass
class Result:
    pushes: int = 0
    screens: int = 0
    counts: dict = field(default_factory=lambda: {"right": 0, "late": 0, "blank": 0, "wrong page": 0})
    seconds: list = field(default_factory=list)   # click -> content, per screen that showed it
    failures: list = field(default_factory=list)
    drops: int = 0
    resent: int = 0                 # pages sent again to a browser that missed its switch
    bad_delta: int = 0
    wall: float = 0.0

    def lines(self) -> list[str]:
        s = self.seconds or [float("nan")]
        return [f"pushes {self.pushes}, screens {self.screens}: {self.counts['right']} right within {WITHIN_S:g} s, "
                f"{self.counts['late']} late (right after {WITHIN_S:g} s), {self.counts['blank']} blank, "
                f"{self.counts['wrong page']} wrong page",
                f"time to content (teacher's click -> the student's screen shows it): p50 {percentile(s, 50):.2f} s, "
                f"p95 {percentile(s, 95):.2f} s, max {max(s):.2f} s",
                f"stale fragment reruns dropped by the processes: {self.drops}; pages sent again to a browser that "
                f"missed its switch: {self.resent}; browsers' 'Bad delta path' errors: "
                f"{self.bad_delta}; wall {self.wall:.0f} s"]


class Class:
    """Redis, 2 app processes, a browser; a teacher on A with a room open; students on A and B, joined."""

    def __init__(self, students_per_process: int = 1, throttle: float = 4.0, app_root: Path = ROOT,
                 redis_url: str | None = None, browser=None):
        self.per, self.throttle, self.app_root, self.redis_url = students_per_process, throttle, app_root, redis_url
        self.redis = self.pw = None
        self.browser, self.own_browser = browser, browser is None
        self.servers: list[Server] = []
        self.contexts: list = []
        self.students: list[Student] = []
        self.errors: list[str] = []
        self.code = ""
        self.shots: Path | None = None            # a folder: a screenshot of each failed screen there
        self.frames: Path | None = None           # a folder: each failed screen's last websocket frames there
        self.log: dict = {}                        # tab -> its recent frames and console lines (with --frames)

    def __enter__(self) -> "Class":
        if self.redis_url is None:
            from tests.redis_server import RedisServer
            self.redis = RedisServer().start()
            self.redis_url = self.redis.url
        self.servers = [Server("app.py", cwd=self.app_root, env={REDIS_URL_VARIABLE: self.redis_url}).start()
                        for _ in range(2)]
        try:
            for s in self.servers:
                s.wait_healthy(120)
            if self.own_browser:
                from playwright.sync_api import sync_playwright
                self.pw = sync_playwright().start()
                self.browser = launch_chromium(self.pw)
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc) -> None:
        for ctx in self.contexts:
            try:
                ctx.close()
            except Exception:
                pass
        if self.browser is not None and self.own_browser:
            self.browser.close()
        if self.pw is not None:
            self.pw.stop()
        for s in self.servers:
            s.stop()
        if self.redis is not None:
            self.redis.stop()

    def warm(self, views: list[View]) -> None:
        threads = [threading.Thread(target=_warm, args=(s, views)) for s in self.servers]
        for t in threads:
            t.start()
        for t in threads:
            t.join(600)

    def _tab(self, throttled: bool):
        ctx = new_context(self.browser)
        self.contexts.append(ctx)
        tab = ctx.new_page()
        tab.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        if throttled and self.throttle > 1:
            ctx.new_cdp_session(tab).send("Emulation.setCPUThrottlingRate", {"rate": self.throttle})
        if throttled and self.frames is not None:
            record_frames(tab, self.log.setdefault(id(tab), deque(maxlen=FRAMES_KEPT)))
        return tab

    def open_room(self) -> None:
        a = self.servers[0]
        self.teacher = self._tab(throttled=False)
        after_run(self.teacher, lambda: self.teacher.goto(f"{a.url}/room", wait_until="domcontentloaded"),
                  timeout_ms=90_000)
        _click(self.teacher, "Open a room")
        big = self.teacher.locator("h2").filter(has_text=CODE)
        big.first.wait_for(timeout=20_000)
        self.code = CODE.findall(big.first.inner_text())[0]
        self.students = [Student(f"S{i}{p}", server) for p, server in enumerate(self.servers) for i in range(self.per)]
        for student in self.students:
            self.join(student)

    def join(self, student: Student) -> None:
        """A fresh tab of this student's joins the room (again: under a new nickname, the old one is taken)."""
        if student.tab is not None:
            student.tab.context.close()
            self.contexts.remove(student.tab.context)
        student.joins += 1
        tab = student.tab = self._tab(throttled=True)
        after_run(tab, lambda: tab.goto(f"{student.server.url}/room", wait_until="domcontentloaded"),
                  timeout_ms=90_000)
        tab.get_by_role("textbox", name="Room code").first.fill(self.code)
        nick = f"{student.name}-{student.joins}"
        tab.get_by_role("textbox", name="Your nickname").first.fill(nick)
        _click(tab, "Join the room")
        # the room bar (on the room page, or on the page shown now: a student who joins follows at once)
        tab.get_by_text("you follow your teacher's screen", exact=False).first.wait_for(timeout=60_000)

    def teach(self, views: list[View], first: int, folder: Path) -> None:
        """The teacher loads these views as a lesson (a file on the Lessons page) and teaches it."""
        t = self.teacher
        lesson = {"title": f"Soak from push {first}", "about": "",
                  "stops": [v.stop(first + i) for i, v in enumerate(views)]}
        path = folder / f"soak_{first}.json"
        path.write_text(json.dumps(lesson))
        t.locator("[data-testid='stTopNavSection']").filter(has_text="Classroom").first.click()
        link = t.locator("a[data-testid='stTopNavDropdownLink']").filter(has_text="Lessons").first
        after_run(t, lambda: link.click(), timeout_ms=90_000)
        box = t.locator("[data-testid='stFileUploaderDropzoneInput']").first
        after_run(t, lambda: box.set_input_files(str(path)), timeout_ms=60_000)
        t.get_by_text(f"Loaded “{lesson['title']}”", exact=False).first.wait_for(timeout=20_000)
        after_run(t, lambda: t.locator(".st-key-lessons-teach-draft button").first.click(), timeout_ms=60_000)
        _button(t, "Show this stop").wait_for(timeout=20_000)

    def train(self, seed: int = TRAIN_SEED, steps: int = TRAIN_STEPS) -> View:
        """The teacher (mid-lesson) goes to the induction page through the top bar, trains a run of their own from
        a seed and waits for it to finish: the view "Show this to the class" then pushes (its address names it)."""
        t, page = self.teacher, _page(INDUCTION)
        t.locator("[data-testid='stTopNavSection']").filter(has_text=page.section).first.click()
        link = t.locator("a[data-testid='stTopNavDropdownLink']").filter(has_text=page.label).first
        after_run(t, lambda: link.click(), timeout_ms=90_000)
        for label, value in (("Seed", seed), ("Training steps", steps)):
            box = t.get_by_role("spinbutton", name=label).first
            after_run(t, lambda: (box.fill(str(value)), box.press("Enter")), timeout_ms=60_000)
        _click(t, "Train from a seeded random start", timeout_ms=240_000)
        t.locator("[data-testid='stMarkdownContainer']").filter(
            has_text=f"Your run (this session): seed {seed}, {steps} steps in").first.wait_for(timeout=240_000)
        query = {k: v[-1] for k, v in parse_qs(urlparse(t.url).query).items()}
        if not re.fullmatch(r"[0-9a-f]{32}", query.get("induction.run", "")):
            raise RuntimeError(f"the teacher's address names no run after training: {t.url}")
        return trained_view(query)

    def push(self, label: str) -> float:
        """The teacher's click ("Show this stop" / "Next stop ▶"): its time (the teacher's run goes on)."""
        button = _button(self.teacher, label)
        button.wait_for(timeout=60_000)
        self.marker = run_marker(self.teacher)
        t0 = time.perf_counter()
        button.click()
        return t0

    def teacher_done(self) -> None:
        wait_run_end(self.teacher, self.marker, timeout_ms=90_000)

    def check(self, view: View, t0: float, result: Result, n: int, log=print) -> dict[str, float]:
        """Every student's screen: the push's content within WITHIN_S of t0 and still there HOLD_S later. The
        seconds to content of the screens that showed it."""
        title = page_title(view.page)
        first: dict[str, float] = {}
        last: dict[str, dict] = {}
        while len(first) < len(self.students) and time.perf_counter() - t0 < GIVE_UP_S:
            for s in self.students:
                if s.name not in first:
                    last[s.name] = read_screen(s.tab, view)
                    if verdict(last[s.name], view, title) == "right":
                        first[s.name] = time.perf_counter() - t0
            time.sleep(0.05)
        if first:
            time.sleep(HOLD_S)
        for s in self.students:
            if s.name in first:
                last[s.name] = read_screen(s.tab, view)
            kind = verdict(last[s.name], view, title)
            if kind == "right" and first[s.name] > WITHIN_S:
                kind = "late"
            result.screens += 1
            result.counts[kind] += 1
            if kind in ("right", "late"):
                result.seconds.append(first[s.name])
            if kind != "right":
                when = (f"after {first[s.name]:.1f} s" if kind == "late" else "after showing it" if s.name in first
                        else f"within {GIVE_UP_S:g} s")
                seen = last[s.name]
                result.failures.append((n, s.name, str(view), kind, when, seen))
                log(f"  push {n} {view} -> {s.name} on process {self.servers.index(s.server) + 1}: {kind} {when} "
                    f"(title {seen['title']!r}, tabs {seen['tabs']}, /{seen['path']}, {seen['elements']} elements, room bar: "
                    f"{seen['room'] or 'none'}, status: {seen['status'] or 'none'}"
                    + (f", its words: {'shown' if seen['has'] else 'not shown'}, headings {seen['headings']}"
                       if view.needle else "") + ")")
                if self.shots is not None and kind != "late":
                    s.tab.screenshot(path=str(self.shots / f"push{n}_{s.name}_{kind.replace(' ', '_')}.png"))
                if self.frames is not None and kind != "late":
                    (self.frames / f"push{n}_{s.name}.txt").write_text("\n".join(self.log.get(id(s.tab), ())))
                if kind != "late":
                    self.join(s)
        return first


def soak(pushes: int = 200, seed: int = 29, students_per_process: int = 1, throttle: float = 4.0,
         app_root: Path = ROOT, redis_url: str | None = None, views: list[View] | None = None, browser=None,
         shots: Path | None = None, log=print, trained: bool = True, frames: Path | None = None) -> Result:
    views = views or push_views(pushes, seed, trained=trained)
    result = Result()
    start = time.perf_counter()
    with Class(students_per_process, throttle, app_root, redis_url, browser) as room, \
            tempfile.TemporaryDirectory(prefix="soak_lessons_") as folder:
        room.shots, room.frames = shots, frames
        room.warm(views)
        log(f"booted and warmed in {time.perf_counter() - start:.0f} s")
        room.open_room()
        log(f"room {room.code} open, {len(room.students)} students joined at {time.perf_counter() - start:.0f} s")
        stops = [v for v in views if not v.trained]           # the lessons' stops; a trained run goes between
        k = 0
        for n, view in enumerate(views, 1):
            if view.trained:
                t_train = time.perf_counter()
                view = room.train()
                log(f"  push {n}: the teacher trained {TRAIN_STEPS} steps from seed {TRAIN_SEED} in "
                    f"{time.perf_counter() - t_train:.0f} s (to the end of the page's run) and shows it: {view}")
                t0 = room.push(SHOW)
            else:
                if k % MAX_STOPS == 0:
                    room.teach(stops[k:k + MAX_STOPS], n, Path(folder))
                t0 = room.push("Show this stop" if k % MAX_STOPS == 0 else "Next stop ▶")
                k += 1
            seen = room.check(view, t0, result, n, log)
            if view.trained:
                log(f"  push {n}: the teacher's run on the students' screens after "
                    + (", ".join(f"{s:.1f} s" for s in seen.values()) or "none"))
            room.teacher_done()
            result.pushes += 1
            if n % 20 == 0:
                log(f"after {n} pushes: {result.counts}")
        result.drops = sum(s.log_tail(50_000_000).count("Dropped a fragment rerun naming page") for s in room.servers)
        result.resent = sum(s.log_tail(50_000_000).count("that page is sent to it again") for s in room.servers)
        result.bad_delta = sum("Bad delta path" in e for e in room.errors)
        for error in sorted(set(e[:160] for e in room.errors))[:10]:
            log(f"a browser's console: {error}")
        for s in room.servers:
            if "Traceback" in s.log_tail(50_000_000):
                log("a process's log holds a traceback:\n" + s.log_tail(3000))
    result.wall = time.perf_counter() - start
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pushes", type=int, default=200)
    ap.add_argument("--seed", type=int, default=29)
    ap.add_argument("--students-per-process", type=int, default=1)
    ap.add_argument("--throttle", type=float, default=4.0)
    ap.add_argument("--app-root", type=Path, default=ROOT, help="the checkout whose app.py is served")
    ap.add_argument("--shots", type=Path, help="a folder: a screenshot of each blank or wrong screen there")
    ap.add_argument("--frames", type=Path, help="a folder: each blank or wrong screen's last websocket frames "
                    "(decoded) and console lines there")
    ap.add_argument("--no-trained-run", dest="trained", action="store_false",
                    help="leave out the teacher's session-trained run (trained on the induction page, then shown)")
    args = ap.parse_args()
    load = os.getloadavg()
    print(f"soak: {args.pushes} pushes, seed {args.seed}, {args.students_per_process} students on each of 2 "
          f"processes + redis-server, CPU throttling {args.throttle:g}x, app {args.app_root}, "
          f"{'with' if args.trained else 'without'} the teacher's trained run; "
          f"load average before {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}", flush=True)
    for folder in (args.shots, args.frames):
        if folder:
            folder.mkdir(parents=True, exist_ok=True)
    result = soak(args.pushes, args.seed, args.students_per_process, args.throttle, args.app_root,
                  shots=args.shots, log=lambda line: print(line, flush=True), trained=args.trained,
                  frames=args.frames)
    for line in result.lines():
        print(line)
    load = os.getloadavg()
    print(f"load average after: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    return 0 if result.counts["blank"] == result.counts["wrong page"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
