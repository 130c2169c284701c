"""Requests that name a page the session no longer shows do not run as that page (Streamlit 1.67.0): a fragment
rerun naming another page is dropped, and one folded into a pending full run leaves that run's page as it was.

The race it closes (a following student's blank screen, issue 29): the room bar's fragment ticks every 0.3 s
(st.fragment(run_every=...)); on a push its run calls st.switch_page, and the server runs the new page. Until the
browser has taken in that run's first message, it goes on sending ticks that name the page it still shows. In
Streamlit 1.67.0 such a tick, arriving during the new page's run, is kept and run right after it:
- a tick does not interrupt a run: it waits as the pending request (runtime/scriptrunner_utils/script_requests.py
  `_fragment_run_should_not_preempt_script`, `on_scriptrunner_yield`), and `on_scriptrunner_ready` hands it over
  when the page's run ends (script_runner.py:443);
- a fragment's id does not depend on the page (runtime/fragment.py:626), so the new page's run registered the very
  fragment the tick names, and app_session.py:666 (the one check on a fragment rerun) lets it through;
- `ScriptRunner._run_script` (script_runner.py:649-729) runs it as the page the tick names: it clears the new page's
  widget state as on a page change (:701), sets that page as the session's (ctx.reset, :709) and announces it
  (SCRIPT_STARTED, :726 -> app_session.py:1091-1096, a new_session message naming the old page).
The browser takes that message for a page change: it drops everything the new page drew and redraws only the
fragment (or fails with "Bad delta path index", and the page goes white). Nothing redraws the page until the next
push. Measured: docs/upstream/fragment-switch-page-race/README.md (a 50-line app: 17 of 40 screens blank at 4x
CPU throttling, 0 of 40 with the first guard) and tests/load/soak.py (the app, 2 processes and Redis).
The same tick landing while st.switch_page's full-run request is still pending (between its request and the next
yield point) is folded into it, and `ScriptRequests._request_rerun_locked` (script_requests.py:409-413) gives the
folded request the tick's page and query: a full run of the old page, the wrong page on the student's screen.

The guard, four wraps:
- `ScriptRunner._run_script`: a run of fragments only (rerun_data.fragment_id_queue) whose page is not the
  session's page (PagesManager.current_page_script_hash: the page of the session's last run, as st.navigation
  resolved it; a fragment run that passes here keeps it) is dropped: nothing runs, nothing is sent, the page stays
  as drawn, and the next tick (naming the new page) runs as usual. A full run, a fragment rerun of the page shown,
  and a request naming no page (an empty hash) run as before. Dropping here, not when the request arrives
  (AppSession.request_rerun), also catches a tick that arrives before the new page's run has been announced.
  One case is not a race: a browser that missed the new page's run (seen once in about 600 soak screens: the
  student's screen stayed on the old page while its session ran the new one, and every tick after was dropped, ~100
  in 30 s). When one session's stale requests go on for RESEND_AFTER_S (and RESEND_AFTER_N of them), the next is
  run as a full run of the session's page, as st.switch_page ran it: the browser gets that page again (logged).
- `ScriptRequests._request_rerun_locked`: a fragment rerun folded into a pending full run keeps that run's page,
  page name and query (a fragment's tick never asks for a page; its widget states are folded in as before).
- `AppSession._create_scriptrunner`: a request that finds the session's script runner stopped but not yet gone (its
  thread has ended; the events it sent, the last messages of its run, its script_finished and its SHUTDOWN, are
  still queued for the event loop) waits until that runner is gone, then runs. Streamlit 1.67 makes a new runner at
  once, and `_handle_scriptrunner_event_on_event_loop` (app_session.py:1063) then ignores every event the old one
  sent "from a non-current ScriptRunner": the end of the run is never sent. Seen under load (issue 31, a lecture
  hall: tests/load/room.py --trace): a push's page switch ran to its end on the server, a student's timer tick
  arrived in that window, and the student's screen got the new page's first messages and never the rest nor its
  end (the browser shows a page cut short and stays "running"; the load client waited 10 s for it): at 60 students
  on 2 processes, 22 runners replaced so and 24 runs' ends never sent; with the wait, none. Requests that arrive
  while one waits keep their order. Bounded by WAIT_FOR_RUNNER_S (then as Streamlit does).

- `AppSession._handle_rerun_script_request` (a request from the browser, not a wake's): for ui/room/wake.py,
  the page a fragment request names and when; no wake is made until the browser has asked for a fragment run
  naming its new page (a wake's run that the browser handles before it has committed a page switch blanks the new
  page: wake.py says how).

Installed once per process by app.py (`install()`; a second call does nothing). Remove the first two wraps when
Streamlit no longer runs a fragment rerun naming another page (the report: docs/upstream/fragment-switch-page-race/),
the third when it no longer drops a stopped runner's events, the fourth when the wake no longer runs fragments
itself; until then
tests/test_fragment_guard.py fails when the installed Streamlit is not STREAMLIT_VERSION or a wrapped method's
source changed, so an upgrade re-checks the race (run docs/upstream/fragment-switch-page-race/repro.py).
"""
from __future__ import annotations

import hashlib
import inspect
import threading
import time
from collections import OrderedDict
from dataclasses import replace

from streamlit.logger import get_logger
from streamlit.runtime.app_session import AppSession, AppSessionState
from streamlit.runtime.scriptrunner.script_runner import ScriptRunner
from streamlit.runtime.scriptrunner_utils.script_requests import ScriptRequests, ScriptRequestType

STREAMLIT_VERSION = "1.67.0"
# sha256 of inspect.getsource(the wrapped methods) in STREAMLIT_VERSION (tests/test_fragment_guard.py checks them)
SOURCE_SHA256 = {"ScriptRunner._run_script": "b576d3acf1a5b9055b213b293b991737bf9e6dc5ab0af03d0139781b444e3851",
                 "ScriptRequests._request_rerun_locked": "5bc72b1577cab5e1dc468b5cde629bbc0accc8e778bc5c5a8f124f62d74d61af",
                 "AppSession._create_scriptrunner": "1529b64dc24cab50587eb632ca7a3180ce3c7476483364feab89c0b56fa3f9fd",
                 "AppSession._handle_rerun_script_request": "7393898bc0a04935f2f953f8fb3cd0fe3d8deac1f343db9ab2f6bc5a732d02d1"}

_LOGGER = get_logger(__name__)          # Streamlit's handler and level (the server log)
# Streamlit's own methods (if this module is imported again, e.g. by a developer's file watcher: not the wrappers)
_original = getattr(ScriptRunner._run_script, "__wrapped__", ScriptRunner._run_script)
_original_fold = getattr(ScriptRequests._request_rerun_locked, "__wrapped__", ScriptRequests._request_rerun_locked)
_original_create = getattr(AppSession._create_scriptrunner, "__wrapped__", AppSession._create_scriptrunner)
_original_request = getattr(AppSession._handle_rerun_script_request, "__wrapped__",
                            AppSession._handle_rerun_script_request)


def stale(rerun_data, current_page: str) -> bool:
    """A run of fragments only, naming a page other than the session's current one (both known)."""
    asked = rerun_data.page_script_hash
    return bool(rerun_data.fragment_id_queue) and bool(asked) and bool(current_page) and asked != current_page


RESEND_AFTER_S = 2.0     # stale requests from one browser this long (and RESEND_AFTER_N of them): resend the page
RESEND_AFTER_N = 3
_stale_since: OrderedDict[str, tuple[float, int]] = OrderedDict()   # session id -> (first stale request, how many)
_STALE_KEPT = 1000
_stale_lock = threading.Lock()


def _run_script(self, rerun_data) -> None:
    current = self._pages_manager.current_page_script_hash
    if stale(rerun_data, current):
        if not _resend_due(self._session_id):
            _trace("dropped", self._session_id, rerun_data.page_script_hash[:8], current[:8])
            _LOGGER.info("Dropped a fragment rerun naming page %s: the session now shows page %s.",
                         rerun_data.page_script_hash, current)
            return
        _LOGGER.warning("A browser still shows page %s, %.0f s after its session moved to page %s: that page is "
                        "sent to it again.", rerun_data.page_script_hash, RESEND_AFTER_S, current)
        _trace("resent", self._session_id, current[:8])
        rerun_data = resend(rerun_data, current)
    else:
        with _stale_lock:
            _stale_since.pop(self._session_id, None)
    _trace("start", self._session_id, (rerun_data.page_script_hash or "-")[:8],
           "fragment" if rerun_data.fragment_id_queue else "full", rerun_data.is_auto_rerun)
    _original(self, rerun_data)


def _trace(*args) -> None:
    from .room.wake import trace

    trace(*args)


def _resend_due(session_id: str, now: float | None = None) -> bool:
    """One more stale request from this session's browser: True when they have gone on for RESEND_AFTER_S and
    RESEND_AFTER_N requests (the browser missed the page's run: it will not switch by itself), and the count
    starts again."""
    now = time.monotonic() if now is None else now
    with _stale_lock:
        first, count = _stale_since.pop(session_id, (now, 0))
        count += 1
        if count >= RESEND_AFTER_N and now - first >= RESEND_AFTER_S:
            return True
        _stale_since[session_id] = (first, count)
        while len(_stale_since) > _STALE_KEPT:          # sessions that closed while stale leave nothing for long
            _stale_since.popitem(last=False)
        return False


def resend(rerun_data, current_page: str):
    """The session's page again, as st.switch_page ran it: a full run of that page with no query (its view is in
    the session) and no widget states (the browser's are the other page's)."""
    return replace(rerun_data, page_script_hash=current_page, page_name="", query_string="", fragment_id=None,
                   fragment_id_queue=[], is_fragment_scoped_rerun=False, is_auto_rerun=False, widget_states=None,
                   is_history_navigation=False, replay_trigger_states=None, replay_trigger_values=None)


def _full_run(rerun_data) -> bool:
    return not (rerun_data.fragment_id or rerun_data.fragment_id_queue or rerun_data.is_fragment_scoped_rerun)


def _request_rerun_locked(self, new_data) -> bool:
    pending = self._rerun_data if self._state == ScriptRequestType.RERUN else None
    accepted = _original_fold(self, new_data)
    if pending is not None:
        _trace("fold", "", "full" if _full_run(pending) else "fragment", "full" if _full_run(new_data) else "fragment",
               accepted)
    if accepted and pending is not None and _full_run(pending) and not _full_run(new_data):
        self._rerun_data = replace(self._rerun_data, page_script_hash=pending.page_script_hash,
                                   page_name=pending.page_name, query_string=pending.query_string,
                                   is_auto_rerun=pending.is_auto_rerun)
    return accepted


WAIT_FOR_RUNNER_S = 5.0     # a stopped runner's events not handled after this: a new runner anyway (as Streamlit)
RETRY_S = 0.01
_WAITING = "_guard_waiting"  # on the AppSession: the requests waiting for its stopped runner to go, in order


def _create_scriptrunner(self, initial_rerun_data) -> None:
    waiting = getattr(self, _WAITING, None)
    if waiting:                              # others wait already: this one after them
        waiting.append(initial_rerun_data)
        return
    if self._scriptrunner is None:
        _original_create(self, initial_rerun_data)
        return
    setattr(self, _WAITING, [initial_rerun_data])     # the session's runner has stopped and is not gone yet
    _trace("wait", self.id, "fragment" if initial_rerun_data.fragment_id else "full")
    stalled = [time.monotonic()]

    def retry() -> None:
        if self._state == AppSessionState.SHUTDOWN_REQUESTED:        # the tab closed: nothing to run
            setattr(self, _WAITING, None)
            return
        waiting = getattr(self, _WAITING, None) or []
        while waiting:                       # in order: the first makes the runner, the next go to it
            runner = self._scriptrunner
            if runner is None:
                _original_create(self, waiting.pop(0))
            elif runner.request_rerun(waiting[0]):
                waiting.pop(0)
            elif time.monotonic() - stalled[0] < WAIT_FOR_RUNNER_S:  # stopped, not gone: its events come first
                self._event_loop.call_later(RETRY_S, retry)
                return
            else:
                _trace("replaced", self.id)          # waited WAIT_FOR_RUNNER_S: as Streamlit does
                _original_create(self, waiting.pop(0))
            stalled[0] = time.monotonic()
        setattr(self, _WAITING, None)

    self._event_loop.call_later(RETRY_S, retry)


def _handle_rerun_script_request(self, client_state=None) -> None:
    from .room.wake import browser_asked

    browser_asked(self, client_state)
    _original_request(self, client_state)


_run_script.__wrapped__ = _original
_request_rerun_locked.__wrapped__ = _original_fold
_create_scriptrunner.__wrapped__ = _original_create
_handle_rerun_script_request.__wrapped__ = _original_request
WRAPS = {"ScriptRunner._run_script": (ScriptRunner, "_run_script", _run_script, _original),
         "ScriptRequests._request_rerun_locked": (ScriptRequests, "_request_rerun_locked", _request_rerun_locked,
                                                  _original_fold),
         "AppSession._create_scriptrunner": (AppSession, "_create_scriptrunner", _create_scriptrunner,
                                             _original_create),
         "AppSession._handle_rerun_script_request": (AppSession, "_handle_rerun_script_request",
                                                     _handle_rerun_script_request, _original_request)}


def source_sha256() -> dict[str, str]:
    """The digests of the wrapped methods' sources, as installed."""
    return {name: hashlib.sha256(inspect.getsource(own).encode()).hexdigest()
            for name, (_, _, _, own) in WRAPS.items()}


def install() -> None:
    """Wrap the four methods, once per process."""
    for cls, name, wrapper, _ in WRAPS.values():
        if getattr(cls, name) is not wrapper:
            setattr(cls, name, wrapper)
    _install_trace()


def _install_trace() -> None:
    """With the room's trace on (ui/room/wake.py TRACE_VARIABLE): the events of a script runner that is no longer
    the session's, which the session ignores (their messages are never sent)."""
    from streamlit.runtime.app_session import AppSession

    from .room import wake

    if not wake._trace_dir or getattr(AppSession, "_traced", False):
        return
    handle = AppSession._handle_scriptrunner_event_on_event_loop

    def traced_handle(self, sender, event, *args, **kwargs):
        if sender is not self._scriptrunner:
            _trace("ignored", self.id, getattr(event, "name", event), id(sender) % 10000)
        return handle(self, sender, event, *args, **kwargs)

    AppSession._handle_scriptrunner_event_on_event_loop = traced_handle
    AppSession._traced = True


def installed() -> bool:
    return all(getattr(cls, name) is wrapper for cls, name, wrapper, _ in WRAPS.values())
