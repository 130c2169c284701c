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
