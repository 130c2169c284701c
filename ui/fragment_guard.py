"""A fragment rerun that names a page the session no longer shows is dropped before it runs (Streamlit 1.67.0).

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
push. Measured: docs/upstream/fragment-switch-page-race/README.md (a 40-line app: 17 of 40 screens blank at 4x
CPU throttling, 0 of 40 with this guard) and tests/load/soak.py (the app, 2 processes and Redis).

The guard: `ScriptRunner._run_script` is wrapped so that a run of fragments only (rerun_data.fragment_id_queue)
whose page is not the session's page (PagesManager.current_page_script_hash: the page of the session's last run,
as st.navigation resolved it; a fragment run that passes here keeps it) is dropped: nothing runs, nothing is
sent, the page stays as drawn, and the next tick (naming the new page) runs as usual. A full run, a fragment rerun
of the page shown, and a request naming no page (an empty hash) run as before. Dropping at this point, not when
the request arrives (AppSession.request_rerun), also catches a tick that arrives before the new page's run has
been announced: the check happens when the script thread is about to run it, after the page's run ended.

Installed once per process by app.py (`install()`; a second call does nothing). Remove it when Streamlit no longer
runs a fragment rerun naming another page (the report: docs/upstream/fragment-switch-page-race/); until then
tests/test_fragment_guard.py fails when the installed Streamlit is not STREAMLIT_VERSION or the wrapped method's
source changed, so an upgrade re-checks the race (run docs/upstream/fragment-switch-page-race/repro.py).
"""
from __future__ import annotations

import hashlib
import inspect

from streamlit.logger import get_logger
from streamlit.runtime.scriptrunner.script_runner import ScriptRunner

STREAMLIT_VERSION = "1.67.0"
# sha256 of inspect.getsource(ScriptRunner._run_script) in STREAMLIT_VERSION (tests/test_fragment_guard.py checks it)
RUN_SCRIPT_SOURCE_SHA256 = "b576d3acf1a5b9055b213b293b991737bf9e6dc5ab0af03d0139781b444e3851"

_LOGGER = get_logger(__name__)          # Streamlit's handler and level (the server log)
# Streamlit's own method (if this module is imported again, e.g. by a developer's file watcher: not the wrapper)
_original = getattr(ScriptRunner._run_script, "__wrapped__", ScriptRunner._run_script)


def stale(rerun_data, current_page: str) -> bool:
    """A run of fragments only, naming a page other than the session's current one (both known)."""
    asked = rerun_data.page_script_hash
    return bool(rerun_data.fragment_id_queue) and bool(asked) and bool(current_page) and asked != current_page


def _run_script(self, rerun_data) -> None:
    if stale(rerun_data, self._pages_manager.current_page_script_hash):
        _LOGGER.info("Dropped a fragment rerun naming page %s: the session now shows page %s.",
                     rerun_data.page_script_hash, self._pages_manager.current_page_script_hash)
        return
    _original(self, rerun_data)


_run_script.__wrapped__ = _original


def source_sha256() -> str:
    """The digest of the wrapped method's source, as installed."""
    return hashlib.sha256(inspect.getsource(_original).encode()).hexdigest()


def install() -> None:
    """Wrap ScriptRunner._run_script, once per process."""
    if ScriptRunner._run_script is not _run_script:
        ScriptRunner._run_script = _run_script


def installed() -> bool:
    return ScriptRunner._run_script is _run_script
