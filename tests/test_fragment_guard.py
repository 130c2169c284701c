"""ui/fragment_guard.py: a fragment rerun naming a page the session no longer shows is dropped; one naming the page
shown runs (issue 29's blank screens). Over Streamlit's own protocol (bench/_common.Session, no browser), on a
two-page app whose pages draw the same fragment (so it has one id on both, as the room bar has):

- the race as it happens: the page switches to B and a tick naming A arrives while B runs: without the guard the
  tick runs after B, as page A (the browser drops what B drew); with it, nothing runs after B;
- the same tick arriving after B's run ended (a fresh script runner) is dropped too;
- a tick naming B runs, and draws the fragment;
- a tick folded into st.switch_page's pending full run of B leaves it a full run of B (without the guard: of A, the
  old page, with A's query: the wrong page).

And: the app installs the guard; the guard was written for this Streamlit, whose patched method is unchanged (an
upgrade fails here: re-check with docs/upstream/fragment-switch-page-race/repro.py, then update or remove the guard).
"""
from __future__ import annotations

import hashlib
import inspect
import time

import pytest
import streamlit
from streamlit.runtime.scriptrunner.script_runner import ScriptRunner
from streamlit.runtime.scriptrunner_utils.script_requests import RerunData, ScriptRequests

from bench._common import ROOT, Server, Session
from ui import fragment_guard

APP = '''
import os, time
import streamlit as st
if os.environ.get("GUARD") == "1":
    from ui import fragment_guard
    fragment_guard.install()

@st.fragment(run_every=60)
def tick(name):
    st.write(f"fragment on {name}")

def page(name):
    def draw():
        st.title(f"Page {name}")
        tick(name)
        time.sleep(0.4)                 # the page's run: long enough for a tick to arrive during it
        st.write(f"end of {name}")
    draw.__name__ = f"page_{name}"
    return draw

st.navigation([st.Page(page("A"), url_path="a", default=True), st.Page(page("B"), url_path="b")]).run()
'''


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    """The app twice: without the guard, with it (their boots overlap)."""
    script = tmp_path_factory.mktemp("guard_app") / "two_pages.py"
    script.write_text(APP)
    booted = {guard: Server(script, cwd=ROOT, env={"GUARD": "1" if guard else "0"}).start() for guard in (False, True)}
    try:
        for s in booted.values():
            s.wait_healthy(60)
        yield booted
    finally:
        for s in booted.values():
            s.stop()


def _texts(run) -> list[str]:
    return [e.body for t, e in run.elements if t in ("markdown", "heading")]


def _on_b(server) -> tuple[Session, str, str]:
    """A session on page A, then switched to page B by a full run: (session, A's hash, the fragment's id)."""
    s = Session(server.port, timeout=20)
    first = s.rerun()
    page_a, fragment = first.page_script_hash, next(iter(s.auto_reruns))
    assert "fragment on A" in _texts(first)
    return s, page_a, fragment


def _stale_tick(s: Session, page_a: str, fragment: str) -> None:
    """What a browser still showing page A sends on its timer."""
    current = s.page_script_hash
    s.page_script_hash = page_a
    s.send_rerun((), fragment, is_auto_rerun=True)
    s.page_script_hash = current


def _runs_after(s: Session, seconds: float) -> list:
    """Every run the server sends within `seconds` (none: an empty list)."""
    runs = []
    deadline = time.perf_counter() + seconds
    while True:
        try:
            runs.append(s.read_run(time.perf_counter(), deadline=deadline))
        except TimeoutError:
            return runs
        except Exception as err:          # websocket timeout
            if "timed out" in str(err).lower():
                return runs
            raise


@pytest.mark.parametrize("guard", [False, True], ids=["without-guard", "with-guard"])
def test_a_stale_tick_queued_behind_the_new_page(servers, guard):
    s, page_a, fragment = _on_b(servers[guard])
    try:
        s.page, s.page_script_hash = "b", ""             # a full run of the page named b
        start = s.send_rerun()                           # the switch: B's full run (0.4 s)
        time.sleep(0.1)
        _stale_tick(s, page_a, fragment)                  # a tick naming A arrives while B runs
        b = s.read_run(start)
        assert "end of B" in _texts(b)
        page_b = b.page_script_hash
        assert page_b != page_a
        after = _runs_after(s, 1.5)
        if guard:
            assert after == [], [r.page_script_hash for r in after]
        else:                                             # the race: the tick runs as page A, after B
            assert [r.page_script_hash for r in after] == [page_a]
            assert _texts(after[0]) == ["fragment on B"]
    finally:
        s.close()


def test_a_stale_tick_after_the_run_ended_is_dropped_and_a_current_one_runs(servers):
    s, page_a, fragment = _on_b(servers[True])
    try:
        s.page, s.page_script_hash = "b", ""
        b = s.rerun()
        dropped_before = _log_drops(servers[True])
        _stale_tick(s, page_a, fragment)
        assert _runs_after(s, 1.0) == []
        assert _log_drops(servers[True]) == dropped_before + 1
        tick = s.rerun((), fragment)                      # a tick naming B (the page shown) runs
        assert tick.page_script_hash == b.page_script_hash and _texts(tick) == ["fragment on B"]
    finally:
        s.close()


def test_a_browser_that_missed_the_new_page_gets_it_again(servers):
    """The soak's one wrong page (CI, c480677): the session ran page B, its browser went on showing A, and every
    tick after (naming A) was dropped for 30 s. Stale ticks from one browser that go on for RESEND_AFTER_S (and
    RESEND_AFTER_N of them) get B's full run again; the ones before are dropped, and the count starts over."""
    server = servers[True]
    s, page_a, fragment = _on_b(server)
    s.keep_cached = True                                  # B again: read the messages it sends as references too
    try:
        s.page, s.page_script_hash = "b", ""
        b = s.rerun()                                     # the browser missed this: it goes on naming page A
        t0, ticks, resent = time.perf_counter(), 0, []
        for _ in range(3):                                # a loaded server may take the ticks late, and bunched:
            while time.perf_counter() - t0 < fragment_guard.RESEND_AFTER_S + 0.15:    # so a few more (a bound,
                _stale_tick(s, page_a, fragment)                                      # not a speed)
                ticks += 1
                time.sleep(0.3)
            resent = _runs_after(s, 3.0)                  # the dropped ones sent nothing: one run, B's
            if resent:
                break
            t0 = time.perf_counter() - fragment_guard.RESEND_AFTER_S - 0.05             # one more tick (the count
            # and the time are there; more would be counted after the resend and make the last tick a resend)
        assert [r.page_script_hash for r in resent] == [b.page_script_hash], ticks
        assert ticks >= fragment_guard.RESEND_AFTER_N, ticks
        assert "end of B" in _texts(resent[0]) and "fragment on B" in _texts(resent[0])   # a full run of B
        assert "that page is sent to it again" in server.log_tail(1_000_000)
        _stale_tick(s, page_a, fragment)                  # and the count starts again: the next one is dropped
        assert _runs_after(s, 1.0) == []
    finally:
        s.close()


def test_when_a_resend_is_due():
    due = lambda t: fragment_guard._resend_due("session-x", now=t)
    assert [due(t) for t in (100.0, 100.5, 101.0, 101.9)] == [False] * 4     # 4 requests, 1.9 s: not yet
    assert due(102.0)                                                         # 2 s after the first
    assert not due(102.1)                                                     # counted again from here
    fragment_guard._stale_since.clear()
    assert [due(t) for t in (0.0, 5.0)] == [False, False] and due(5.1)        # 2 s but only 2 requests: then 3
    fragment_guard._stale_since.clear()
    run = fragment_guard.resend(RerunData(page_script_hash="A", query_string="a=1", fragment_id_queue=["f"],
                                          is_auto_rerun=True), "B")
    assert (run.page_script_hash, run.query_string, run.fragment_id_queue, run.is_auto_rerun) == ("B", "", [], False)


def _log_drops(server) -> int:
    return server.log_tail(1_000_000).count("Dropped a fragment rerun naming page")


def test_the_decision():
    """stale(): only a run of fragments, naming a known page that is not the session's."""
    assert fragment_guard.stale(RerunData(page_script_hash="a", fragment_id_queue=["f"]), "b")
    assert not fragment_guard.stale(RerunData(page_script_hash="b", fragment_id_queue=["f"]), "b")
    assert not fragment_guard.stale(RerunData(page_script_hash="a"), "b")                    # a full run
    assert not fragment_guard.stale(RerunData(page_script_hash="", fragment_id_queue=["f"]), "b")
    assert not fragment_guard.stale(RerunData(page_script_hash="a", fragment_id_queue=["f"]), "")


def test_the_app_installs_it():
    from streamlit.testing.v1 import AppTest
    AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
    assert fragment_guard.installed() and ScriptRunner._run_script is fragment_guard._run_script
    assert ScriptRequests._request_rerun_locked is fragment_guard._request_rerun_locked
    fragment_guard.install()                              # a second call changes nothing
    assert fragment_guard.installed()


def test_streamlit_is_the_version_the_guard_was_written_for():
    """An upgrade fails here on purpose: run docs/upstream/fragment-switch-page-race/repro.py on it (without and
    with --workaround); if the race is gone, remove ui/fragment_guard.py, else check the wrapped method still
    takes (self, rerun_data) and reads rerun_data.fragment_id_queue and page_script_hash, then update these two."""
    assert streamlit.__version__ == fragment_guard.STREAMLIT_VERSION
    for name, (_, _, _, own) in fragment_guard.WRAPS.items():
        assert own.__qualname__ == name
        assert hashlib.sha256(inspect.getsource(own).encode()).hexdigest() == fragment_guard.SOURCE_SHA256[name]


@pytest.mark.parametrize("guard", [False, True], ids=["without-guard", "with-guard"])
def test_a_stale_tick_folded_into_the_switch_keeps_the_switchs_page(guard):
    """st.switch_page's request (a full run of B, B's query) is pending when a tick naming A (A's query) arrives."""
    fold = fragment_guard._request_rerun_locked if guard else fragment_guard._original_fold
    requests = ScriptRequests()
    with requests._lock:
        assert fold(requests, RerunData(page_script_hash="B", query_string="b=1"))
        assert fold(requests, RerunData(page_script_hash="A", query_string="a=1", fragment_id="f", is_auto_rerun=True))
    run = requests.on_scriptrunner_ready().rerun_data
    assert run.fragment_id_queue == []                                 # a full run, either way
    assert (run.page_script_hash, run.query_string) == (("B", "b=1") if guard else ("A", "a=1"))
    if guard:
        assert not run.is_auto_rerun


def test_imported_again_it_wraps_streamlits_own_method_once():
    """A developer's file watcher may import the module again: the wrapper then wraps Streamlit's method, not the
    previous wrapper."""
    import importlib
    fragment_guard.install()
    own = {name: w[3] for name, w in fragment_guard.WRAPS.items()}
    importlib.reload(fragment_guard)
    fragment_guard.install()
    assert fragment_guard.installed()
    for name, (cls, attr, wrapper, original) in fragment_guard.WRAPS.items():
        assert original is own[name] and original.__qualname__ == name
        assert getattr(cls, attr) is wrapper and wrapper.__wrapped__ is original


def test_a_request_waits_until_the_stopped_runner_is_gone(monkeypatch):
    """Issue 31's lecture hall (tests/load/room.py --trace): a student's tick that finds the session's script runner
    stopped, its last events (the new page's last messages, its script_finished) still queued for the event loop,
    made a new runner at once, and Streamlit then ignored the old runner's events: the page's end never reached the
    student. The guard holds the request (and any after it, in order) until the old runner is gone, then runs it;
    with no runner it runs at once; a tab that closes meanwhile runs nothing."""
    import asyncio
    from types import SimpleNamespace

    from streamlit.runtime.app_session import AppSessionState

    class Runner:
        def __init__(self, accepts: bool):
            self.accepts, self.got = accepts, []

        def request_rerun(self, data) -> bool:
            if self.accepts:
                self.got.append(data)
            return self.accepts

    made = []

    def create(session, data):                           # Streamlit's: a new runner, its first request `data`
        made.append(data)
        session._scriptrunner = Runner(True)

    monkeypatch.setattr(fragment_guard, "_original_create", create)
    loop = asyncio.new_event_loop()
    spin = lambda: loop.run_until_complete(asyncio.sleep(5 * fragment_guard.RETRY_S))
    try:
        stopped = Runner(False)
        session = SimpleNamespace(id="s", _scriptrunner=stopped, _event_loop=loop,
                                  _state=AppSessionState.APP_NOT_RUNNING)
        tick, click = RerunData(fragment_id="f", is_auto_rerun=True), RerunData(page_script_hash="B")
        fragment_guard._create_scriptrunner(session, tick)
        fragment_guard._create_scriptrunner(session, click)
        spin()
        assert made == [] and session._scriptrunner is stopped          # its events are not all handled yet
        session._scriptrunner = None                                    # its SHUTDOWN handled: it is gone
        spin()
        assert made == [tick] and session._scriptrunner.got == [click]  # in the order they came
        assert getattr(session, fragment_guard._WAITING) is None
        session._scriptrunner = Runner(False)                           # that runner stopped too: the next waits
        fragment_guard._create_scriptrunner(session, click)
        spin()
        assert made == [tick]
        session._scriptrunner = None
        spin()
        assert made == [tick, click]

        fragment_guard._create_scriptrunner(session := SimpleNamespace(id="t", _scriptrunner=None, _event_loop=loop,
                                                                       _state=AppSessionState.APP_NOT_RUNNING), tick)
        assert made == [tick, click, tick]                               # no runner: at once, as Streamlit does

        closed = SimpleNamespace(id="u", _scriptrunner=Runner(False), _event_loop=loop,
                                 _state=AppSessionState.APP_NOT_RUNNING)
        fragment_guard._create_scriptrunner(closed, tick)
        closed._state, closed._scriptrunner = AppSessionState.SHUTDOWN_REQUESTED, None
        spin()
        assert made == [tick, click, tick]                               # the tab closed meanwhile: nothing
    finally:
        loop.close()
