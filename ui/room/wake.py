"""A push wakes the class at once: one watcher a process, instead of every student's screen asking on a timer.

Every run of a student's room fragment (ui/room/follow.py) says which room it is in and its own fragment id
(`follow`, before it reads the room). One daemon thread of this process (started with the first follower) reads
each of those rooms' `classroom.room.shown` every WATCH_SECONDS (one hash read a room, whatever the class size)
and, when it changed (a push, a question opened or revealed, the lock, the room ended), asks each of that room's
sessions in this process for a run of its fragment, as the browser's timer does: Streamlit's own
`AppSession.request_rerun`, called on the session's event loop when the session is not running (else on the next
pass), with the session's last client state (the page and query its browser shows) and the fragment's id. Its run is then a tick like any other (it reads the room, goes to the pushed page). Over replicas
each process watches its own sessions' rooms in the shared store. The fragment keeps a timer, slower
(follow.FOLLOW_SECONDS): presence, a removal, and the fallback when no wake can be made.

Why (issue 31, a lecture hall, measured with tests/load/room.py): 150 screens each asking every 0.3 s are 500
runs a second of ~3 ms, 1.5 of the 2 cores spent before any push; a push then waited for each screen's next tick.
Woken, an idle class costs its slower timer only, and a push starts every screen's run within WATCH_SECONDS.

No wake into a page its browser may not have drawn (issue 31, the blank screen the CI soak caught: about 1 in 70
screens at 4x CPU throttling). Why: a fragment run's first message (new_session, naming the new page) that a busy
browser handles before React has committed the page switch's state is taken by Streamlit 1.67's frontend for a
page change (App.handleNewSession compares it with `this.state.currentPageScriptHash`, still the old page), and
clearAppState drops what the new page drew: the screen keeps app.py's ←/→ links and the room bar, nothing else,
until the next push. Seen with `tests/load/soak.py --frames`: the switch's full run, its script_finished, then at
once the wake's fragment run (the watcher had found the session running and asked again right after it). So a
session's run that shows its browser a new page (a push's switch, the student's own click, the session's first
run) is recorded (`page_shown`, from ui.page), and so is each fragment run its browser asks for (`browser_asked`,
from ui/fragment_guard.py's wrap of the browser's rerun request): a fragment's request names the page the browser
has committed (a tick naming the old page is dropped by the guard). Until the browser has asked for a fragment run
naming the new page, no wake is made: its own tick on that page, within follow.FOLLOW_SECONDS (OUT_SECONDS once
stepped out; later in a background tab, whose timers the browser slows), reads the room. A push that comes within
those seconds of the previous page switch therefore reaches that screen with its tick, not at once. A full
request (a click) is not counted: a link's click names the page it goes to, committed or not.

`request_rerun`, `_session_mgr`, `_event_loop`, `_client_state` and `_scriptrunner` are Streamlit 1.67's internals, not its API:
`available()` checks they are there (tests/test_room_wake.py runs a real server's wake), and where they are not,
follow.py keeps the fast timer, as before.
"""
from __future__ import annotations

import os
import threading
import time

WATCH_SECONDS = 0.05
TRACE_VARIABLE = "ATTENTION_EXPLORER_ROOM_TRACE"      # a directory: each process writes what its wakes did there
_trace_dir = os.environ.get(TRACE_VARIABLE, "").strip()
_trace_lock = threading.Lock()


def trace(event: str, session_id: str = "", *details) -> None:
    """One line of the room's trace (TRACE_VARIABLE set: tests/load/room.py --trace): what a wake asked for and what
    became of it, what a follower's run did, what the fragment guard dropped; nothing when it is not set."""
    if not _trace_dir:
        return
    line = " ".join([f"{time.time():.3f}", event, session_id, *map(str, details)]) + "\n"
    with _trace_lock, open(os.path.join(_trace_dir, f"trace-{os.getpid()}.log"), "a", encoding="utf-8") as f:
        f.write(line)


class Hub:
    """The rooms followed in this process: room code -> {session id: fragment id}. `read(store, code)` is the
    room's shown value (classroom.room.shown); `wake(session_id, fragment_id)` asks that session for a run of that
    fragment, False if the session is gone. Both are given, so the watcher runs without Streamlit in tests."""

    def __init__(self, read, wake):
        self._read, self._wake = read, wake
        self.store = None                                 # the process's room store (the followers give it)
        self.rooms: dict[str, dict[str, str]] = {}
        self.last: dict[str, object] = {}
        self.lock = threading.Lock()
        self.thread: threading.Thread | None = None
        self.waiting: dict[str, str] = {}                 # session id -> fragment id: woken while it was running
        self.woken = 0                                    # runs asked for, since the process started
        self.failures = 0                                 # passes that raised (a store that did not answer)

    def follow(self, store, code: str, session_id: str, fragment_id: str) -> None:
        """A session's fragment follows room `code` on `store` (called on each of its runs, before it reads the room,
        so a change after this call wakes it). The room's value is read here the first time this process sees it."""
        with self.lock:
            self.store = store
            for other, sessions in self.rooms.items():
                if other != code:
                    sessions.pop(session_id, None)
            new = code not in self.rooms
            self.rooms.setdefault(code, {})[session_id] = fragment_id
        if new:
            try:
                value = self._read(store, code)
            except Exception:
                value = None
            with self.lock:
                self.last.setdefault(code, value)
        self.start()

    def forget(self, session_id: str) -> None:
        with self.lock:
            for sessions in self.rooms.values():
                sessions.pop(session_id, None)

    def later(self, session_id: str, fragment_id: str) -> None:
        """A session that was running when woken: asked again on the next pass (from the session's event loop)."""
        with self.lock:
            self.waiting[session_id] = fragment_id

    def check(self) -> int:
        """One pass: each followed room read once; the sessions of a room that changed woken, and those that were
        running when woken asked again. How many."""
        with self.lock:
            waiting, self.waiting = self.waiting, {}
            for code in [c for c, sessions in self.rooms.items() if not sessions]:
                del self.rooms[code]
                self.last.pop(code, None)
            rooms = {code: dict(sessions) for code, sessions in self.rooms.items()}
            store = self.store
        woken = 0
        for session_id, fragment_id in waiting.items():
            trace("again", session_id, fragment_id)
            if self._wake(session_id, fragment_id):
                woken += 1
        for code, sessions in rooms.items():
            try:
                value = self._read(store, code)
            except Exception:                             # the store does not answer: the next pass tries again
                self.failures += 1
                continue
            with self.lock:
                changed = self.last.get(code, value) != value
                self.last[code] = value
            if not changed:
                continue
            trace("changed", code, value)
            for session_id, fragment_id in sessions.items():
                trace("wake", session_id, fragment_id)
                try:
                    ok = self._wake(session_id, fragment_id)
                except Exception:
                    ok = False
                if ok:
                    woken += 1
                else:                                     # gone (closed tab): its timer is gone with it
                    self.forget(session_id)
        self.woken += woken
        return woken

    def start(self) -> None:
        if self.thread is not None and self.thread.is_alive():
            return
        with self.lock:
            if self.thread is None or not self.thread.is_alive():
                self.thread = threading.Thread(target=self._loop, name="room-wake", daemon=True)
                self.thread.start()

    def _loop(self) -> None:
        while True:
            time.sleep(WATCH_SECONDS)
            try:
                self.check()
            except Exception:                             # never let the watcher die: the timers are the fallback
                self.failures += 1


def _runtime_sessions():
    """The server's session manager; None without a server (AppTest runs its scripts on a mock runtime)."""
    from streamlit.runtime import Runtime

    try:
        sessions = Runtime.instance()._session_mgr if Runtime.exists() else None
    except Exception:
        return None
    return sessions if callable(getattr(type(sessions), "get_active_session_info", None)) else None


ASKED, SHOWN = "_room_browser_asked", "_room_page_shown"   # on an AppSession: (page hash, time.monotonic())


def browser_asked(session, client_state) -> None:
    """Its browser asked for a fragment run naming this page, the page it has drawn (ui/fragment_guard.py calls
    this on each browser request; a full request, a click, names a page it may not have drawn yet: not kept)."""
    if client_state is not None and client_state.fragment_id:
        setattr(session, ASKED, (client_state.page_script_hash, time.monotonic()))


def page_shown() -> None:
    """From a page's run that shows the browser a page other than the session's last run's (ui.page): when."""
    from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

    ctx = get_script_run_ctx(suppress_warning=True)
    sessions = _runtime_sessions() if ctx is not None else None
    info = sessions.get_active_session_info(ctx.session_id) if sessions is not None else None
    if info is not None:
        setattr(info.session, SHOWN, (ctx.page_script_hash, time.monotonic()))


def browser_behind(session) -> bool:
    """Whether the session's latest page was shown after its browser's last fragment request, or that request named
    another page: the browser may not have drawn that page yet (a wake now could blank it: see the module's doc).
    Only the last request is kept: one naming another page after it (not seen: the guard drops such ticks) makes
    the session behind again, until the next tick."""
    shown = getattr(session, SHOWN, None)
    if shown is None:
        return False
    asked = getattr(session, ASKED, None)
    return asked is None or asked[0] != shown[0] or asked[1] < shown[1]


def wake_session(session_id: str, fragment_id: str) -> bool:
    """Ask a session of this process for a run of one of its fragments, as its browser's timer would: the rerun
    is made on the session's event loop (Streamlit's AppSession is not thread-safe). False if it is gone."""
    from streamlit.proto.ClientState_pb2 import ClientState

    sessions = _runtime_sessions()
    info = sessions.get_active_session_info(session_id) if sessions is not None else None
    if info is None:
        trace("gone", session_id)
        return False
    session = info.session

    def rerun() -> None:
        if session._scriptrunner is not None:            # a run in flight (its own, or a page switch): its page and
            trace("deferred", session_id)
            HUB.later(session_id, fragment_id)            # query are not yet the browser's; asked on the next pass
            return
        if browser_behind(session):                      # a page its browser may not have drawn yet: its own tick
            trace("behind", session_id)                  # on that page comes within FOLLOW_SECONDS
            return
        state = ClientState()
        state.CopyFrom(session._client_state)            # the page and query of its last run: what its browser shows
        state.fragment_id, state.is_auto_rerun = fragment_id, True
        trace("rerun", session_id, fragment_id, state.page_script_hash[:8], session.has_fragment(fragment_id))
        session.request_rerun(state)                      # a fragment a full run dropped: ignored by Streamlit

    session._event_loop.call_soon_threadsafe(rerun)
    return True


OFF_VARIABLE = "ATTENTION_EXPLORER_ROOM_WAKE"          # "0": no wake, the screens poll (to compare, or as a way out)


def available() -> bool:
    """Whether this Streamlit has what wake_session uses (else the room's screens poll on the fast timer), and it is
    not turned off (OFF_VARIABLE=0)."""
    import os

    if os.environ.get(OFF_VARIABLE, "").strip() == "0":
        return False
    try:
        from streamlit.proto.ClientState_pb2 import ClientState
        from streamlit.runtime import Runtime
        from streamlit.runtime.app_session import AppSession
        from streamlit.runtime.scriptrunner_utils.script_run_context import ThreadState
    except ImportError:
        return False
    return (hasattr(AppSession, "request_rerun") and hasattr(Runtime, "exists") and hasattr(ThreadState, "get")
            and "fragment_id" in ClientState.DESCRIPTOR.fields_by_name)


def _read(store, code: str):
    import classroom

    return classroom.room.shown(store, code)


HUB = Hub(_read, wake_session)


def follow(store, code: str) -> None:
    """From a room fragment's run: this session follows room `code` on `store` (the process's room store; nothing
    outside a running server: AppTest)."""
    from streamlit.runtime.scriptrunner_utils.script_run_context import ThreadState, get_script_run_ctx

    ctx = get_script_run_ctx(suppress_warning=True)
    try:
        fragment_id = ThreadState.get().fragment_id
    except RuntimeError:
        fragment_id = None
    if ctx is None or not fragment_id or _runtime_sessions() is None:
        return
    HUB.follow(store, code, ctx.session_id, fragment_id)


def forget() -> None:
    """This session follows no room now (it left, or it is the teacher's)."""
    from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

    ctx = get_script_run_ctx(suppress_warning=True)
    if ctx is not None:
        HUB.forget(ctx.session_id)
