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

The guard, two wraps:
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

Installed once per process by app.py (`install()`; a second call does nothing). Remove it when Streamlit no longer
runs a fragment rerun naming another page (the report: docs/upstream/fragment-switch-page-race/); until then
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
from streamlit.runtime.scriptrunner.script_runner import ScriptRunner
from streamlit.runtime.scriptrunner_utils.script_requests import ScriptRequests, ScriptRequestType

STREAMLIT_VERSION = "1.67.0"
# sha256 of inspect.getsource(the wrapped methods) in STREAMLIT_VERSION (tests/test_fragment_guard.py checks them)
SOURCE_SHA256 = {"ScriptRunner._run_script": "b576d3acf1a5b9055b213b293b991737bf9e6dc5ab0af03d0139781b444e3851",
                 "ScriptRequests._request_rerun_locked": "5bc72b1577cab5e1dc468b5cde629bbc0accc8e778bc5c5a8f124f62d74d61af"}

_LOGGER = get_logger(__name__)          # Streamlit's handler and level (the server log)
# Streamlit's own methods (if this module is imported again, e.g. by a developer's file watcher: not the wrappers)
_original = getattr(ScriptRunner._run_script, "__wrapped__", ScriptRunner._run_script)
_original_fold = getattr(ScriptRequests._request_rerun_locked, "__wrapped__", ScriptRequests._request_rerun_locked)


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
            _LOGGER.info("Dropped a fragment rerun naming page %s: the session now shows page %s.",
                         rerun_data.page_script_hash, current)
            return
        _LOGGER.warning("A browser still shows page %s, %.0f s after its session moved to page %s: that page is "
                        "sent to it again.", rerun_data.page_script_hash, RESEND_AFTER_S, current)
        rerun_data = resend(rerun_data, current)
    else:
        with _stale_lock:
            _stale_since.pop(self._session_id, None)
    _original(self, rerun_data)


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
    if accepted and pending is not None and _full_run(pending) and not _full_run(new_data):
        self._rerun_data = replace(self._rerun_data, page_script_hash=pending.page_script_hash,
                                   page_name=pending.page_name, query_string=pending.query_string,
                                   is_auto_rerun=pending.is_auto_rerun)
    return accepted


_run_script.__wrapped__ = _original
_request_rerun_locked.__wrapped__ = _original_fold
WRAPS = {"ScriptRunner._run_script": (ScriptRunner, "_run_script", _run_script, _original),
         "ScriptRequests._request_rerun_locked": (ScriptRequests, "_request_rerun_locked", _request_rerun_locked,
                                                  _original_fold)}


def source_sha256() -> dict[str, str]:
    """The digests of the wrapped methods' sources, as installed."""
    return {name: hashlib.sha256(inspect.getsource(own).encode()).hexdigest()
            for name, (_, _, _, own) in WRAPS.items()}


def install() -> None:
    """Wrap the two methods, once per process."""
    for cls, name, wrapper, _ in WRAPS.values():
        if getattr(cls, name) is not wrapper:
            setattr(cls, name, wrapper)


def installed() -> bool:
    return all(getattr(cls, name) is wrapper for cls, name, wrapper, _ in WRAPS.values())
