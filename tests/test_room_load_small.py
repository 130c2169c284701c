"""A class answering a poll in the same second loses no answer (tests/load/room.py's part (b), small enough for
CI): a teacher and 30 students on the websocket protocol, one app process; a barrier releases all 30 answers at
once (student i picks choice i mod the number of choices), then the counts are read back from the teacher's live
chart, the teacher's "30 of 30 students answered", each student's own answer, each student's screen after the
reveal, and (with Debian's redis-server: the app's store is then Redis) the store itself."""
from __future__ import annotations

import time

import pytest

from bench._common import Server
from tests.load import room

STUDENTS = 30


@pytest.fixture(scope="module")
def app(request):
    from tests.redis_server import available
    url = request.getfixturevalue("redis_url") if available()[0] else None
    server = Server("app.py", env={room.REDIS_URL_VARIABLE: url}).start()
    try:
        server.wait_healthy(120)
        yield server, url
    finally:
        server.stop()


def test_thirty_answers_in_one_second_are_all_counted(app):
    server, url = app
    store = None
    if url:
        from classroom.redis_store import RedisStore
        store = RedisStore(url)
    klass = room.open_class([server.port], STUDENTS)
    try:
        klass.teacher.go(room.PUSH_PAGES[0])                   # a page with the settings: the question bank's trace
        poll = room.poll_in_one_second(klass, store)
    finally:
        klass.close()
    assert poll["problems"] == []
    assert poll["answered"] == STUDENTS
    n_choices = len(poll["expected"])
    assert poll["expected"] == [len(range(c, STUDENTS, n_choices)) for c in range(n_choices)]   # i mod choices
    assert poll["chart"] == poll["expected"]
    assert f"{STUDENTS} of {STUDENTS} students answered" in poll["answered_line"]
    if store is not None:
        assert poll["store"] == poll["expected"]
    assert poll["own_ok"] == STUDENTS and poll["revealed_ok"] == STUDENTS
    assert poll["send_spread"] < 1.0                             # released together: the same second
    assert "Traceback" not in server.log_tail(100_000)


def test_a_push_reaches_screens_that_do_not_ask(app):
    """ui/room/wake.py: the students' screens send nothing after joining but the one tick a browser's timer sends
    within FOLLOW_SECONDS of its page (a wake waits for it: the browser has then drawn that page), yet each gets
    the run the push causes and shows the new page and setting."""
    from ui.room.follow import FOLLOW_SECONDS

    server, _ = app
    klass = room.open_class([server.port], 3, nick=lambda i: f"listener {i + 1}")
    try:
        assert [s.interval() for s in klass.students] == [FOLLOW_SECONDS] * 3
        for s in klass.students:
            assert s.tick() is not None
        klass.teacher.go(room.PUSH_PAGES[1])
        klass.teacher.set_temperature(1.35)
        shown = (room.PUSH_PAGES[1], room.temperature_of(klass.teacher.s.query))
        assert shown[1] is not None
        klass.teacher.push()
        for s in klass.students:
            deadline = time.perf_counter() + 30                    # a bound: it comes (tests/load measures how fast)
            while (s.s.page, room.temperature_of(s.s.query)) != shown:
                assert time.perf_counter() < deadline, (s.s.page, s.s.query)
                s.listen(deadline - time.perf_counter())
    finally:
        klass.close()
    assert "Traceback" not in server.log_tail(100_000)
