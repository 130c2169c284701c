"""A push wakes the class (ui/room/wake.py): the watcher's bookkeeping on a real store with a recording wake; that a
real server's students come to the pushed view without their screens asking is in tests/test_room_load_small.py."""
from __future__ import annotations

import classroom
from classroom.store import MemoryStore
from ui.room import follow, wake


def hub_on(store):
    asked = []
    gone = set()

    def wake_one(session_id, fragment_id):
        if session_id in gone:
            return False
        asked.append((session_id, fragment_id))
        return True

    return wake.Hub(lambda s, code: classroom.room.shown(s, code), wake_one), asked, gone


def test_a_change_of_the_room_wakes_its_sessions_once_and_nothing_else_does():
    store = MemoryStore()
    code, secret = classroom.open_room(store, "Period 3")
    other, other_secret = classroom.open_room(store, "Period 4")
    hub, asked, _ = hub_on(store)
    hub.start = lambda: None                        # no thread: the passes are made here, one by one
    hub.follow(store, code, "ana", "f1")
    hub.follow(store, code, "ben", "f2")
    hub.follow(store, other, "cy", "f3")
    assert hub.check() == 0 and asked == []         # nothing changed since they followed
    classroom.push(store, code, secret, {"page": "app_pages/4_scores.py", "query": {"d_k": "4"}})
    assert hub.check() == 2 and sorted(asked) == [("ana", "f1"), ("ben", "f2")]
    assert hub.check() == 0 and len(asked) == 2     # once per change
    poll = classroom.open_poll(store, code, secret, {"prompt": "2 + 2?", "choices": ["3", "4"], "answer": 1})
    assert hub.check() == 2                         # a question opened
    classroom.reveal(store, code, secret, poll)
    assert hub.check() == 2                         # and revealed
    classroom.push(store, other, other_secret, {"page": "app_pages/4_scores.py", "query": {}})
    asked.clear()
    assert hub.check() == 1 and asked == [("cy", "f3")]
    classroom.end_room(store, code, secret)
    asked.clear()
    assert hub.check() == 2 and {a for a, _ in asked} == {"ana", "ben"}    # ended: they read it on their run


def test_a_session_is_woken_with_its_latest_fragment_in_its_latest_room_and_forgotten_when_gone():
    store = MemoryStore()
    code, secret = classroom.open_room(store)
    second, second_secret = classroom.open_room(store)
    hub, asked, gone = hub_on(store)
    hub.start = lambda: None
    hub.follow(store, code, "ana", "f1")
    hub.follow(store, code, "ana", "f9")            # a full run: a new fragment id
    hub.follow(store, second, "ben", "f2")
    hub.follow(store, code, "ben", "f3")            # ben moved to the first room
    classroom.push(store, second, second_secret, {"page": "app_pages/4_scores.py", "query": {}})
    assert hub.check() == 0                         # nobody follows the second room now
    gone.add("ben")                                 # ben's tab closed
    classroom.push(store, code, secret, {"page": "app_pages/4_scores.py", "query": {}})
    assert hub.check() == 1 and asked == [("ana", "f9")]
    assert "ben" not in hub.rooms[code]
    hub.forget("ana")                               # ana left the room
    classroom.push(store, code, secret, {"page": "app_pages/4_scores.py", "query": {"d_k": "2"}})
    assert hub.check() == 0 and code not in hub.rooms


def test_a_store_that_does_not_answer_wakes_no_one_and_the_next_pass_catches_up():
    store = MemoryStore()
    code, secret = classroom.open_room(store)
    hub, asked, _ = hub_on(store)
    hub.start = lambda: None
    hub.follow(store, code, "ana", "f1")
    classroom.push(store, code, secret, {"page": "app_pages/4_scores.py", "query": {}})
    real = hub._read
    hub._read = lambda s, c: (_ for _ in ()).throw(classroom.Unavailable("down"))
    assert hub.check() == 0 and hub.failures == 1
    hub._read = real
    assert hub.check() == 1 and asked == [("ana", "f1")]


def test_this_streamlit_can_wake_a_session_and_the_slow_timer_still_keeps_a_student_present():
    from classroom.presence import PRESENT_SECONDS, SEEN_EVERY

    assert wake.available()                         # Streamlit 1.67's internals that wake_session uses
    assert follow.POLL_SECONDS < follow.FOLLOW_SECONDS
    assert SEEN_EVERY <= follow.FOLLOW_SECONDS      # every slow tick writes "seen" ...
    assert follow.FOLLOW_SECONDS + 2 < PRESENT_SECONDS     # ... often enough to stay "here" with a late tick


def test_a_session_running_when_woken_is_asked_again_on_the_next_pass_only():
    store = MemoryStore()
    code, secret = classroom.open_room(store)
    asked = []

    def wake_one(session_id, fragment_id):              # busy the first time: it says so, as wake_session's callback does
        asked.append(session_id)
        if asked.count(session_id) == 1:
            hub.later(session_id, fragment_id)
        return True

    hub = wake.Hub(lambda s, c: classroom.room.shown(s, c), wake_one)
    hub.start = lambda: None
    hub.follow(store, code, "ana", "f1")
    classroom.push(store, code, secret, {"page": "app_pages/4_scores.py", "query": {}})
    assert hub.check() == 1 and asked == ["ana"]
    assert hub.check() == 1 and asked == ["ana", "ana"]     # asked again: it had been running
    assert hub.check() == 0 and asked == ["ana", "ana"]     # and then no more


class _Loop:
    def call_soon_threadsafe(self, fn):                # the session's event loop, here at once
        fn()


def _session_on(page: str):
    """A session as wake_session sees it (Streamlit's AppSession's internals it reads), its browser on `page`."""
    from types import SimpleNamespace

    from streamlit.proto.ClientState_pb2 import ClientState

    asked = []
    session = SimpleNamespace(_event_loop=_Loop(), _scriptrunner=None, _client_state=ClientState(page_script_hash=page),
                              has_fragment=lambda fragment_id: True, request_rerun=asked.append)
    return session, asked


def test_no_wake_reaches_a_browser_that_has_not_asked_for_its_new_page_yet(monkeypatch):
    """The blank screen of issue 31's soak (tests/load/soak.py --frames): a wake's fragment run that reaches the
    browser in the batch of a page switch makes Streamlit's frontend take it for a page change and clear the new page.
    Until the browser has asked for a run naming its new page (ui/fragment_guard.py records each request it sends),
    a wake is not made; its own tick on that page reads the room. The browser's own requests: a tick naming the old
    page (sent before it took in the switch), a click naming the new page (sent before the new page ran): still
    behind; a tick naming the new page after it ran: caught up, and the wake runs. A click (a full request) never
    counts: a link's click names the page it goes to, drawn or not."""
    from types import SimpleNamespace

    from streamlit.proto.ClientState_pb2 import ClientState

    from ui import fragment_guard

    session, asked = _session_on("B")
    monkeypatch.setattr(wake, "_runtime_sessions",
                        lambda: SimpleNamespace(get_active_session_info=lambda sid: SimpleNamespace(session=session)))
    monkeypatch.setattr(fragment_guard, "_original_request", lambda self, client_state: None)
    browser = lambda page, fragment="f": fragment_guard._handle_rerun_script_request(
        session, ClientState(page_script_hash=page, fragment_id=fragment))
    clock = iter(range(100))
    monkeypatch.setattr(wake.time, "monotonic", lambda: float(next(clock)))

    assert wake.wake_session("s", "f") and len(asked) == 1          # no page shown since the process began: woken
    browser("A")                                                     # the tick that switches the page to B
    setattr(session, wake.SHOWN, ("B", wake.time.monotonic()))       # page_shown, in B's run
    assert wake.browser_behind(session)
    assert wake.wake_session("s", "f") and len(asked) == 1          # behind: no wake (True: the session is there)
    browser("A")                                                     # a tick it sent before it drew B
    assert wake.browser_behind(session) and len(asked) == 1
    browser("B")                                                     # its tick on B: it has drawn B
    assert not wake.browser_behind(session)
    assert wake.wake_session("s", "f") and len(asked) == 2
    assert asked[-1].page_script_hash == "B" and asked[-1].fragment_id == "f" and asked[-1].is_auto_rerun

    setattr(session, wake.SHOWN, ("C", wake.time.monotonic()))       # the student's click on a link to C: C's run
    browser("C", fragment="")                                        # a click naming C, during or after C's run
    assert wake.browser_behind(session)                              # (not counted: drawn or not)
    browser("C")                                                     # its tick on C
    assert not wake.browser_behind(session)


def test_a_page_run_records_when_it_shows_a_new_page(monkeypatch):
    """page_shown: the page and the time of the run that shows it (nothing outside a server: AppTest); ui.page calls
    it on a session's first run and on each run of another page than the last run's, not on a rerun of the same
    page (a click on the page a browser shows is no page switch)."""
    from types import SimpleNamespace

    import streamlit.runtime.scriptrunner_utils.script_run_context as src

    from tests.apptest_util import open_page

    session, _ = _session_on("A")
    ctx = SimpleNamespace(session_id="s", page_script_hash="B")
    runtime = SimpleNamespace(get_active_session_info=lambda sid: SimpleNamespace(session=session))
    with monkeypatch.context() as m:
        m.setattr(src, "get_script_run_ctx", lambda suppress_warning=False: ctx)
        m.setattr(wake, "_runtime_sessions", lambda: runtime)
        m.setattr(wake.time, "monotonic", lambda: 7.0)
        wake.page_shown()
        assert getattr(session, wake.SHOWN) == ("B", 7.0)
        m.setattr(wake, "_runtime_sessions", lambda: None)
        ctx.page_script_hash = "C"
        wake.page_shown()                                            # AppTest: no runtime, nothing recorded
        assert getattr(session, wake.SHOWN) == ("B", 7.0)

    calls = []
    monkeypatch.setattr(wake, "page_shown", lambda: calls.append(1))
    at = open_page("app_pages/5_softmax.py")
    assert len(calls) == 1                                           # the session's first run
    at.run()
    assert len(calls) == 1                                           # the same page again
    at.switch_page("app_pages/4_scores.py").run()
    assert len(calls) == 2 and not at.exception                     # another page
