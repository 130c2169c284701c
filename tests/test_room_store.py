"""Rooms on both stores: every test runs on the in-memory store and on a real redis-server (tests/redis_server.py),
with values: the Store operations, every room function, expiry, a class answering in the same instant, 200
joiners, a flood, tampered ids and secrets, guessed and stale codes, a second process at the same Redis (a
student on another replica than the teacher's), and a Redis that is down."""
from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from bench._common import free_port
from classroom import room as rooms
from classroom.codes import ALPHABET
from classroom.redis_store import RedisStore, redis_store, where
from classroom.room import (MAX_ANSWER_CHANGES, MAX_MEMBERS, MAX_NICKNAME, TTL, BadMessage, NoRoom, NotTeacher,
                            RoomError, RoomFull, TooMany, answer, check, close_poll, join, members, my_answer,
                            open_poll, open_room, push, reveal, state, tally)
from classroom.store import ADDED, FULL, REDIS_URL_VARIABLE, THERE, MemoryStore
from classroom.which_store import store_from_env

ROOT = Path(__file__).resolve().parents[1]
POLL = {"prompt": "Which key does query 2 weigh most?", "choices": ["k0", "k1", "k2", "k3"], "answer": 2,
        "explanation": "its score 3.1 is the largest", "kind": "argmax"}
VIEW = {"page": "app_pages/4_scores.py", "query": {"d_k": "8", "cell": "scores.2.1"}}


class Clock:
    """A clock the test moves: MemoryStore(clock=...) expires keys by it."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


@pytest.fixture(params=["memory", "redis"])
def store(request):
    """A fresh store: a new MemoryStore, or the session's redis-server emptied."""
    if request.param == "memory":
        return MemoryStore()
    import redis
    url = request.getfixturevalue("redis_url")
    with redis.Redis.from_url(url) as client:
        client.flushdb()
    return redis_store(url)


def ttl(store, key) -> float | None:
    """Seconds left before the key expires, read from the store itself (PTTL on Redis)."""
    if isinstance(store, RedisStore):
        return store.ttl(key)
    when = store._expires.get(key)
    return None if when is None else when - store._clock()


def all_at_once(n: int, work) -> tuple[list, float]:
    """Run work(i) in n threads released together by a barrier: each one's result or exception, and the
    seconds from the release to the last one's end."""
    barrier = threading.Barrier(n + 1)
    results: list = [None] * n

    def run(i):
        barrier.wait()
        try:
            results[i] = work(i)
        except Exception as err:          # kept, to check its kind and message
            results[i] = err

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    barrier.wait()
    start = time.perf_counter()
    for t in threads:
        t.join(30)
    return results, time.perf_counter() - start


# -- the Store operations ---------------------------------------------------------------------------------------

def test_store_operations(store):
    assert store.create("h", {"a": "1", "b": 2}, seconds=60) is True
    assert store.create("h", {"a": "9"}, seconds=60) is False            # there already: untouched
    assert store.hgetall("h") == {"a": "1", "b": "2"}                     # values are str
    assert store.hget("h", "a") == "1" and store.hget("h", "zz") is None and store.hget("nope", "a") is None
    assert store.hgetall("nope") == {} and store.hlen("nope") == 0
    store.hset("h", {"c": "x", "a": 5})
    assert store.hgetall("h") == {"a": "5", "b": "2", "c": "x"} and store.hlen("h") == 3
    assert store.hincrby("h", "b") == 3 and store.hincrby("h", "b", 4) == 7 and store.hincrby("h", "new") == 1
    assert store.hincrby("other", "n", -2) == -2 and store.hget("other", "n") == "-2"
    assert [store.hset_capped("m", f, f.upper(), limit=2) for f in ("a", "a", "b", "c", "b")] == [
        ADDED, THERE, ADDED, FULL, THERE]
    assert store.hgetall("m") == {"a": "A", "b": "B"}                     # a field there keeps its first value
    store.expire("nope", 60)                                              # a missing key: nothing
    assert store.hgetall("nope") == {} and ttl(store, "nope") is None
    assert store.ping() is True


def test_expiry_in_memory_by_the_clock():
    clock = Clock()
    s = MemoryStore(clock=clock)
    s.create("h", {"a": "1"}, seconds=60)
    clock.now += 59.9
    assert s.hget("h", "a") == "1" and s.create("h", {"a": "2"}, 60) is False
    s.expire("h", 30)                                                     # moved: now 30 s from here
    clock.now += 29.9
    assert s.hgetall("h") == {"a": "1"}
    clock.now += 0.2
    assert s.hgetall("h") == {} and s.hlen("h") == 0 and s.hget("h", "a") is None
    assert s.create("h", {"a": "3"}, 60) is True and s.hget("h", "a") == "3"   # the code is free again


def test_expiry_on_redis(redis_url):
    s = redis_store(redis_url)
    s.create("gone", {"a": "1"}, seconds=60)
    assert 59.0 < ttl(s, "gone") <= 60.0
    s.expire("gone", 1)
    assert 0.0 < ttl(s, "gone") <= 1.0
    time.sleep(1.1)
    assert s.hgetall("gone") == {} and s.create("gone", {"a": "2"}, 60) is True


# -- a room's life, with values ---------------------------------------------------------------------------------

def test_a_room_from_open_to_close(store):
    code, secret = open_room(store, "  Period  3  ")
    assert len(code) == 6 and set(code) <= set(ALPHABET) and len(secret) >= 32
    assert store.hget(f"room:{code}", "secret") != secret                 # only its digest is kept
    typed = f" {code[:3].lower()}-{code[3:].lower()} "
    assert check(store, typed) == code
    assert state(store, typed) == rooms.RoomState(code, "Period 3", 0, None, None)
    assert TTL - 5 < ttl(store, f"room:{code}") <= TTL                     # 4 hours

    ana = join(store, typed, "  Ana \x00 Lee\u200b ")
    ben = join(store, code, "<b>Ben</b>" + "x" * 40)
    assert len(ana) >= 20 and ana != ben
    assert members(store, typed) == {ana: "Ana Lee", ben: ("<b>Ben</b>" + "x" * 40)[:MAX_NICKNAME]}
    with pytest.raises(BadMessage, match="Type a nickname first"):
        join(store, code, " \n ")

    assert push(store, code, secret, VIEW) == 1
    assert push(store, typed, secret, {"page": "app_pages/overview.py", "query": {"n": 3}}) == 2
    now = state(store, code)
    assert now.version == 2 and now.view["page"] == "app_pages/overview.py" and now.view["query"] == {"n": "3"}
    assert now.view["version"] == 2 and abs(now.view["at"] - time.time()) < 60
    with pytest.raises(BadMessage, match="A view is a page"):
        push(store, code, secret, {"query": {}})
    with pytest.raises(BadMessage, match="too large"):
        push(store, code, secret, {"page": "p", "query": {"x": "a" * 30_000}})
    assert state(store, code).version == 2                                # the refused pushes changed nothing

    first = open_poll(store, code, secret, POLL)
    assert first == "p1" and state(store, code).poll == {**POLL, "id": "p1", "revealed": False,
                                                          "at": state(store, code).poll["at"]}
    answer(store, code, ana, first, 2)
    answer(store, code, ben, first, 0)
    answer(store, code, ben, first, 2)                                    # changes his mind
    assert tally(store, code, first) == [0, 0, 2, 0]
    assert my_answer(store, code, first, ana) == 2 and my_answer(store, code, first, "someone") is None
    with pytest.raises(BadMessage, match="Pick one of the choices"):
        answer(store, code, ana, first, 4)
    with pytest.raises(BadMessage, match="Pick one of the choices"):
        answer(store, code, ana, first, True)
    reveal(store, code, secret, first)
    assert state(store, code).poll["revealed"] is True
    with pytest.raises(BadMessage, match="answers are closed"):
        answer(store, code, ana, first, 1)
    assert tally(store, code, first) == [0, 0, 2, 0]                      # still readable once revealed

    second = open_poll(store, code, secret, {**POLL, "choices": ("yes", "no"), "answer": 0})
    assert second == "p2" and state(store, code).poll["choices"] == ["yes", "no"]
    with pytest.raises(BadMessage, match="moved on"):
        tally(store, code, first)
    assert tally(store, code, second) == [0, 0] and my_answer(store, code, second, ana) is None
    with pytest.raises(BadMessage, match="2 to 8 choices"):
        open_poll(store, code, secret, {**POLL, "choices": ["only"], "answer": 0})
    close_poll(store, code, secret)
    assert state(store, code).poll is None
    with pytest.raises(BadMessage, match="moved on"):
        answer(store, code, ana, second, 0)


def test_a_push_keeps_the_room_alive(store):
    code, secret = open_room(store, "t")
    join(store, code, "Ana")
    for key in (f"room:{code}", f"room:{code}:members"):
        store.expire(key, 100)
    push(store, code, secret, VIEW)
    assert TTL - 5 < ttl(store, f"room:{code}") <= TTL and TTL - 5 < ttl(store, f"room:{code}:members") <= TTL


def test_thirty_answers_in_the_same_instant_all_count(store):
    code, secret = open_room(store, "t")
    ids = [join(store, code, f"s{i}") for i in range(30)]
    poll = open_poll(store, code, secret, POLL)
    results, seconds = all_at_once(30, lambda i: answer(store, code, ids[i], poll, i % 4))
    assert results == [None] * 30, [r for r in results if r is not None][:3]
    assert tally(store, code, poll) == [8, 8, 7, 7]
    assert [my_answer(store, code, poll, m) for m in ids] == [i % 4 for i in range(30)]
    print(f"30 simultaneous answers on {store.name}: {seconds * 1000:.0f} ms")


def test_two_hundred_joiners_at_once(store):
    code, _ = open_room(store, "t")
    results, seconds = all_at_once(200, lambda i: join(store, code, f"s{i}"))
    joined = [r for r in results if isinstance(r, str)]
    full = [r for r in results if isinstance(r, RoomFull)]
    assert len(joined) == MAX_MEMBERS and len(full) == 200 - MAX_MEMBERS and len(set(joined)) == MAX_MEMBERS
    assert str(full[0]) == (f"Room {code} is full: {MAX_MEMBERS} students have joined. Ask your teacher to open a "
                            "second room, or follow on the projector.")
    assert len(members(store, code)) == MAX_MEMBERS
    print(f"200 simultaneous joiners on {store.name}: {seconds * 1000:.0f} ms")


def test_a_flood_from_one_student(store):
    code, secret = open_room(store, "t")
    ana, ben = join(store, code, "Ana"), join(store, code, "Ben")
    poll = open_poll(store, code, secret, POLL)
    answer(store, code, ben, poll, 3)
    outcomes = []
    for i in range(12):
        try:
            answer(store, code, ana, poll, i % 4)
            outcomes.append("ok")
        except TooMany as err:
            outcomes.append(str(err))
    assert outcomes == ["ok"] * MAX_ANSWER_CHANGES + [
        f"You have answered {MAX_ANSWER_CHANGES} times: your last answer stands."] * (12 - MAX_ANSWER_CHANGES)
    assert my_answer(store, code, poll, ana) == (MAX_ANSWER_CHANGES - 1) % 4 == 0
    assert tally(store, code, poll) == [1, 0, 0, 1]

    carl = join(store, code, "Carl")                                       # the same flood, all at once
    results, _ = all_at_once(20, lambda i: answer(store, code, carl, poll, 1 + i % 2))
    assert results.count(None) == MAX_ANSWER_CHANGES
    assert all(isinstance(r, TooMany) for r in results if r is not None)
    assert my_answer(store, code, poll, carl) in (1, 2) and sum(tally(store, code, poll)) == 3


def test_a_guessed_member_id_cannot_answer(store):
    code, secret = open_room(store, "t")
    ana = join(store, code, "Ana")
    other_code, _ = open_room(store, "another class")
    stranger = join(store, other_code, "Zed")
    poll = open_poll(store, code, secret, POLL)
    answer(store, code, ana, poll, 1)
    for forged in (secrets.token_urlsafe(16), stranger, "Ana", "", None, 7):
        with pytest.raises(BadMessage, match=f"You are not in room {code}"):
            answer(store, code, forged, poll, 3)
    assert tally(store, code, poll) == [0, 1, 0, 0] and my_answer(store, code, poll, ana) == 1


def test_without_the_secret_nothing_changes(store):
    code, secret = open_room(store, "t")
    ana = join(store, code, "Ana")
    poll = open_poll(store, code, secret, POLL)
    message = f"Only the teacher who opened room {code} can do that."
    for wrong in ("a guess", "", None, ana, secret[:-1], secret + "x", 12345):
        for act in (lambda: push(store, code, wrong, VIEW), lambda: open_poll(store, code, wrong, POLL),
                    lambda: reveal(store, code, wrong, poll), lambda: close_poll(store, code, wrong)):
            with pytest.raises(NotTeacher) as err:
                act()
            assert str(err.value) == message
    now = state(store, code)
    assert now.version == 0 and now.view is None and now.poll["id"] == poll and now.poll["revealed"] is False


def test_mistyped_and_stale_codes(store):
    with pytest.raises(NoRoom) as err:
        join(store, "K7MQ2", "Ana")
    assert str(err.value) == ("“K7MQ2” is not a room code: a code is 6 letters and digits, like K7MQ2D "
                              "(no 0, O, 1, I or L).")
    with pytest.raises(NoRoom, match="“k7mq0d” is not a room code"):
        state(store, "k7mq0d")
    with pytest.raises(NoRoom, match="is not a room code"):
        check(store, None)
    code, secret = open_room(store, "t")
    unused = next(c for c in ("K7MQ2D", "K7MQ2E") if c != code)
    with pytest.raises(NoRoom) as err:
        join(store, unused.lower(), "Ana")
    assert str(err.value) == (f"There is no room {unused}: the code may be mistyped, or the room has ended (its "
                              "teacher ended it, or it closed 4 hours after its teacher's last step). Ask your teacher "
                              "for the code on the screen.")
    ana = join(store, code, "Ana")
    poll = open_poll(store, code, secret, POLL)
    store.expire(f"room:{code}", 0)                                       # the room ends (4 h later)
    for stale in (lambda: state(store, code), lambda: join(store, code, "Ben"),
                  lambda: answer(store, code, ana, poll, 1), lambda: push(store, code, secret, VIEW)):
        with pytest.raises(NoRoom, match=f"There is no room {code}"):
            stale()


def test_the_teacher_ends_the_room_for_everyone(store):
    code, secret = open_room(store, "t")
    ana = join(store, code, "Ana")
    poll = open_poll(store, code, secret, POLL)
    answer(store, code, ana, poll, 1)
    with pytest.raises(NotTeacher):
        rooms.end_room(store, code, "a guess")
    assert state(store, code).poll["id"] == poll                         # a guess ends nothing
    rooms.end_room(store, code, secret)
    for gone in (lambda: state(store, code), lambda: join(store, code, "Ben"), lambda: answer(store, code, ana, poll, 0)):
        with pytest.raises(NoRoom):
            gone()
    assert store.hgetall(f"room:{code}:answers:{poll}") == {} and store.hgetall(f"room:{code}:members") == {}
    assert rooms.ended(code).startswith(f"Room {code} has ended: its teacher ended it, or 4 hours passed")


def test_a_student_who_leaves_is_off_the_list_and_the_count(store):
    code, secret = open_room(store, "t")
    ana, ben = join(store, code, "Ana"), join(store, code, "Ben")
    poll = open_poll(store, code, secret, POLL)
    answer(store, code, ana, poll, 1), answer(store, code, ben, poll, 0)
    rooms.leave(store, code, ben)
    assert sorted(members(store, code).values()) == ["Ana"]
    assert sum(tally(store, code, poll)) == 1                            # not "2 of 1 students answered"
    with pytest.raises(BadMessage, match="You are not in room"):
        answer(store, code, ben, poll, 1)
    rooms.leave(store, code, "not a member"), rooms.leave(store, code, None)   # nothing
    assert sorted(members(store, code).values()) == ["Ana"]


def test_a_nickname_keeps_its_emoji_and_loses_control_characters(store):
    code, _ = open_room(store, "t")
    for typed, kept in (("👩\u200d🔬 Ana", "👩\u200d🔬 Ana"), ("a\tb\nc", "a b c"), ("x\u202eevil", "x evil"),
                        ("مرحبا بالعالم", "مرحبا بالعالم"), ("y" * 300, "y" * MAX_NICKNAME)):
        member = join(store, code, typed)
        assert store.hget(f"room:{code}:members", member) == kept


def test_a_room_expires_four_hours_after_the_last_step():
    clock = Clock()
    s = MemoryStore(clock=clock)
    code, secret = open_room(s, "t")
    clock.now += 3 * 3600
    push(s, code, secret, VIEW)                                            # the teacher's step: 4 h from here
    clock.now += 3.99 * 3600
    assert state(s, code).version == 1
    clock.now += 0.02 * 3600
    with pytest.raises(NoRoom, match="closed 4 hours after"):
        state(s, code)


def test_nicknames_expire_even_if_the_teacher_never_pushes():
    """The members' hash gets its expiry when a student joins, not only at the teacher's first push: a room
    opened and joined but never used keeps no nickname past 4 hours (and Redis's volatile-ttl can evict it)."""
    clock = Clock()
    s = MemoryStore(clock=clock)
    code, _ = open_room(s, "t")
    join(s, code, "Ana")
    clock.now += 4.01 * 3600
    assert s.hgetall(f"room:{code}:members") == {} and s.hgetall(f"room:{code}") == {}


# -- replicas, the environment, a Redis that is down -------------------------------------------------------------

TEACHER = """
import json, sys
from classroom import open_room, push, open_poll, store_from_env
store = store_from_env()
code, secret = open_room(store, "Replica A")
push(store, code, secret, {"page": "app_pages/4_scores.py", "query": {"d_k": "8"}})
print(json.dumps({"code": code, "poll": open_poll(store, code, secret, json.loads(sys.argv[1])), "store": store.name}))
"""

COUNT = """
import json, sys
from classroom import members, tally, store_from_env
store = store_from_env()
code, poll = sys.argv[1:3]
print(json.dumps({"members": sorted(members(store, code).values()), "tally": tally(store, code, poll)}))
"""


def other_process(script: str, *args: str, url: str) -> dict:
    """Run a script in another Python process with the Redis URL set: another replica of the app."""
    env = dict(os.environ, **{REDIS_URL_VARIABLE: url})
    done = subprocess.run([sys.executable, "-c", script, *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=30)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_student_on_another_replica_follows_the_teacher(redis_url):
    teacher = other_process(TEACHER, json.dumps(POLL), url=redis_url)     # replica A: the teacher
    assert teacher["store"] == "redis"
    code, poll = teacher["code"], teacher["poll"]
    here = redis_store(redis_url)                                         # replica B: this process, a student
    now = state(here, code)
    assert (now.title, now.version, now.view["page"], now.view["query"]) == (
        "Replica A", 1, "app_pages/4_scores.py", {"d_k": "8"})
    assert now.poll["prompt"] == POLL["prompt"] and now.poll["id"] == poll
    ana = join(here, code.lower(), "Ana")
    answer(here, code, ana, poll, 2)
    assert other_process(COUNT, code, poll, url=redis_url) == {"members": ["Ana"], "tally": [0, 0, 1, 0]}


def test_store_from_env():
    memory = store_from_env({})
    assert isinstance(memory, MemoryStore) and store_from_env({REDIS_URL_VARIABLE: "  "}) is memory
    url = "redis://127.0.0.1:6390/2"
    chosen = store_from_env({REDIS_URL_VARIABLE: f" {url} "})
    assert isinstance(chosen, RedisStore) and chosen.url == url and chosen is redis_store(url)
    assert chosen.name == "redis" and memory.name == "memory"


def test_store_from_env_reaches_the_server(redis_url):
    s = store_from_env({REDIS_URL_VARIABLE: redis_url})
    assert s.ping() is True and s is redis_store(redis_url)


def test_a_redis_that_is_down_says_so_quickly():
    port = free_port()                                                    # nothing listens there
    down = RedisStore(f"redis://:topsecret@127.0.0.1:{port}/0")
    message = (f"Rooms are unavailable: their server (Redis at 127.0.0.1:{port}) does not answer. The rest of the "
               f"explorer works; whoever runs this app should start Redis or fix {REDIS_URL_VARIABLE}, then try again.")
    start = time.perf_counter()
    for act in (lambda: open_room(down, "t"), lambda: join(down, "K7MQ2D", "Ana"), lambda: state(down, "K7MQ2D"),
                down.ping, lambda: down.hset("k", {"a": "1"}), lambda: down.hset_capped("k", "a", "1", 2)):
        with pytest.raises(RoomError) as err:
            act()
        assert str(err.value) == message and "topsecret" not in str(err.value)
        assert isinstance(err.value, rooms.Unavailable) and not isinstance(err.value, NoRoom)   # not an ended room
    assert time.perf_counter() - start < 2.0


def test_a_bad_url_says_so_at_the_first_operation():
    bad = store_from_env({REDIS_URL_VARIABLE: "http://example.org:6379"})    # choosing the store never fails
    for act in (bad.ping, lambda: open_room(bad, "t"), lambda: state(bad, "K7MQ2D")):
        with pytest.raises(RoomError) as err:
            act()
        assert str(err.value).startswith(f"Rooms are unavailable: {REDIS_URL_VARIABLE} is not a Redis URL (")
        assert str(err.value).endswith("set it like redis://host:6379/0, or unset it to keep rooms in one process.")
    assert where("redis://u:p@[::1]:7000/1") == "[::1]:7000" and where("redis://redis") == "redis:6379"


def test_a_refused_command_says_so(redis_url):
    s = redis_store(redis_url)
    s.hset("h", {"n": "three"})
    with pytest.raises(RoomError) as err:
        s.hincrby("h", "n")
    assert str(err.value) == (f"Rooms are unavailable: their server (Redis at {where(redis_url)}) refused the request "
                              "(hash value is not an integer). Whoever runs this app should check that server.")


def test_a_wrong_password_says_so(redis_url):                         # redis_url: skips or fails as it does
    from tests.redis_server import RedisServer
    with RedisServer(args=("--requirepass", "right")) as server:
        wrong = RedisStore(server.url.replace("redis://", "redis://:wrong@"))
        with pytest.raises(RoomError, match=r"refused this app's password"):
            wrong.hget("k", "f")
        right = RedisStore(server.url.replace("redis://", "redis://:right@"))
        assert right.create("k", {"f": "v"}, 60) and right.hget("k", "f") == "v"


def test_a_restarted_redis_is_used_again_without_a_message(redis_url):
    """Its pooled sockets break when Redis restarts: the next operation reconnects (one retry), no RoomError."""
    from tests.redis_server import RedisServer
    server = RedisServer().start()
    try:
        s = RedisStore(server.url)
        all_at_once(8, lambda i: s.hset("k", {f"f{i}": "v"}))                # several pooled sockets
        assert s.hlen("k") == 8
        server.stop()
        with pytest.raises(RoomError, match="does not answer"):
            s.hlen("k")
        server = RedisServer(port=server.port).start()                       # empty again: no persistence
        results, _ = all_at_once(8, lambda i: s.hset_capped("k", f"f{i}", "v", 5))
        assert sorted(results) == [FULL] * 3 + [ADDED] * 5 and s.hlen("k") == 5
    finally:
        server.stop()


def test_the_deploy_recipes_start_redis_beside_the_app():
    """compose and Kubernetes: the app's ATTENTION_EXPLORER_REDIS_URL names the Redis they start, at its port, and
    that Redis keeps nothing on disk (rooms live hours). Read as text: no YAML library is a dependency."""
    import re
    from urllib.parse import urlsplit
    compose = (ROOT / "deploy" / "docker-compose.yml").read_text()
    url = urlsplit(re.search(rf"^ +{REDIS_URL_VARIABLE}: (\S+)$", compose, flags=re.M).group(1))
    assert (url.scheme, url.hostname, url.port) == ("redis", "redis", 6379)
    service = re.search(r"^  redis:\n((?:    .*\n|\s*\n)+)", compose + "\n", flags=re.M).group(1)
    assert "image: redis:7-alpine" in service and '"--save", "", "--appendonly", "no"' in service
    assert "depends_on:\n      redis: {condition: service_healthy}" in compose

    parts = {re.search(r"^kind: (\w+)", d, flags=re.M).group(1) + " " + re.search(r"name: ([\w-]+)", d).group(1): d
             for d in (ROOT / "deploy" / "k8s.yaml").read_text().split("\n---\n")}
    app = parts["Deployment attention-explorer"]
    url = urlsplit(re.search(rf"name: {REDIS_URL_VARIABLE}\n +value: (\S+)", app).group(1))
    assert url.scheme == "redis" and url.port == 6379
    assert f"ports: [{{port: {url.port}, targetPort: 6379}}]" in parts[f"Service {url.hostname}"]
    assert f"selector: {{app: {url.hostname}}}" in parts[f"Service {url.hostname}"]
    redis_pod = parts[f"Deployment {url.hostname}"]
    assert f"labels: {{app: {url.hostname}}}" in redis_pod and "image: redis:7-alpine" in redis_pod
    assert 'args: ["--save", "", "--appendonly", "no"' in redis_pod
    assert "from: [{podSelector: {matchLabels: {app: attention-explorer}}}]" in parts[f"NetworkPolicy {url.hostname}"]


# -- unique nicknames, rejoining, presence (classroom/presence.py) -------------------------------------------------

from classroom.presence import PRESENT_SECONDS, Elsewhere, NotYours, new_token, present, rejoin  # noqa: E402
from classroom.presence import seen as mark_seen  # noqa: E402
from classroom.room import NameTaken, leave  # noqa: E402


def test_the_store_operations_for_names_and_tokens(store):
    assert store.hsetnx("n", "ada", "m1") is True and store.hsetnx("n", "ada", "m2") is False
    assert store.hget("n", "ada") == "m1"
    assert store.hswap("n", "ada", "m2", "m3") is False and store.hget("n", "ada") == "m1"     # not the old value
    assert store.hswap("n", "ada", "m1", "m3") is True and store.hget("n", "ada") == "m3"
    assert store.hswap("n", "zed", "m1", "m3") is False and store.hget("n", "zed") is None     # no field: no swap
    assert store.hset_if("nope", "a", "1") is False and store.hgetall("nope") == {}            # no hash: none made
    assert store.hset_if("n", "bo", "m4") is True and store.hgetall("n") == {"ada": "m3", "bo": "m4"}


def test_a_second_ada_is_asked_for_another_name(store):
    code, _ = open_room(store, "t")
    ada = join(store, code, "Ada")
    for same in ("Ada", "ada", "  ADA ", "Ａｄａ", "ADA\t"):
        with pytest.raises(NameTaken) as err:
            join(store, code, same)
        assert str(err.value) == (f"Someone in room {code} is already called “{rooms.clean_text(same, 24)}”: type "
                                  "another nickname (add an initial or a number, say), so your teacher can tell you "
                                  "apart.")
    assert join(store, code, "Ada L") != ada and join(store, code, "Ben  Ng") and len(members(store, code)) == 3
    with pytest.raises(NameTaken):
        join(store, code, "ben ng")
    other, _ = open_room(store, "another class")
    assert join(store, other, "Ada")                               # another room: another class, free
    leave(store, code, ada)
    assert join(store, code, "ADA") and sorted(members(store, code).values()) == ["ADA", "Ada L", "Ben Ng"]


def test_twenty_adas_in_the_same_instant_exactly_one_gets_the_name(store):
    code, _ = open_room(store, "t")
    results, _ = all_at_once(20, lambda i: join(store, code, "Ada" if i % 2 else "ADA"))
    joined = [r for r in results if isinstance(r, str)]
    assert len(joined) == 1 and all(isinstance(r, NameTaken) for r in results if not isinstance(r, str))
    assert list(members(store, code)) == joined and store.hgetall(f"room:{code}:names") == {"ada": joined[0]}


def test_a_full_room_keeps_no_name_it_refused(store):
    code, _ = open_room(store, "t")
    for i in range(MAX_MEMBERS):
        join(store, code, f"s{i}")
    with pytest.raises(RoomFull):
        join(store, code, "Zoe")
    assert store.hget(f"room:{code}:names", "zoe") is None and store.hlen(f"room:{code}:names") == MAX_MEMBERS


def test_a_reload_comes_back_as_the_same_student_with_the_same_answer(store):
    code, secret = open_room(store, "t")
    ada = join(store, code, "Ada", now=1000.0)
    token = new_token(store, code, ada)
    assert store.hget(f"room:{code}:tokens", ada) == rooms.digest(token) != token     # only the digest is kept
    assert len(token) == 22 and token not in json.dumps([store.hgetall(f"room:{code}:{part}")
                                                          for part in ("", "members", "names", "tokens", "seen")])
    poll = open_poll(store, code, secret, POLL)
    answer(store, code, ada, poll, 2)
    name, token2 = rejoin(store, code, ada, token, now=1000.0 + PRESENT_SECONDS + 0.1)
    assert (name, my_answer(store, code, poll, ada), list(members(store, code))) == ("Ada", 2, [ada])
    assert token2 != token and store.hget(f"room:{code}:tokens", ada) == rooms.digest(token2)
    answer(store, code, ada, poll, 1)                                      # and answers on as herself
    assert tally(store, code, poll) == [0, 1, 0, 0]
    with pytest.raises(NameTaken):                                         # her name stays hers
        join(store, code, "ada")


def test_a_rejoin_token_is_single_use(store):
    code, _ = open_room(store, "t")
    ada = join(store, code, "Ada", now=1000.0)
    token = new_token(store, code, ada)
    _, token2 = rejoin(store, code, ada, token, now=2000.0)
    for t, when in ((token, 3000.0), (token, 4000.0)):
        with pytest.raises(NotYours, match="was used already"):
            rejoin(store, code, ada, t, now=when)
    _, token3 = rejoin(store, code, ada, token2, now=5000.0)               # the current one works, once
    with pytest.raises(NotYours):
        rejoin(store, code, ada, token2, now=6000.0)
    ben = join(store, code, "Ben", now=1000.0)
    for forged in (secrets.token_urlsafe(16), token3, rooms.digest(token3), "", None, 7):   # not Ben's
        with pytest.raises(NotYours):
            rejoin(store, code, ben, forged, now=7000.0)
        with pytest.raises(NotYours):
            rejoin(store, code, "not a member", forged, now=7000.0)


def test_two_browsers_with_the_same_token_at_once_only_one_gets_in(store):
    code, _ = open_room(store, "t")
    ada = join(store, code, "Ada", now=1000.0)
    token = new_token(store, code, ada)
    results, _ = all_at_once(12, lambda i: rejoin(store, code, ada, token, now=2000.0))
    won = [r for r in results if isinstance(r, tuple)]
    assert len(won) == 1 and all(isinstance(r, (NotYours, Elsewhere)) for r in results if not isinstance(r, tuple))
    assert store.hget(f"room:{code}:tokens", ada) == rooms.digest(won[0][1])


def test_a_token_is_refused_while_its_student_is_here_in_another_session(store):
    code, _ = open_room(store, "t")
    ada = join(store, code, "Ada", now=1000.0)
    token = new_token(store, code, ada)
    assert mark_seen(store, code, ada, token, now=1010.0) is True
    with pytest.raises(Elsewhere) as err:                                  # her tab is open and ticking
        rejoin(store, code, ada, token, now=1012.0)
    assert str(err.value) == (f"Coming back to room {code} as “Ada”: your place was in use 2 s ago (by this page "
                              "before it reloaded, or by another tab or device). This tab takes it by itself once that "
                              "screen has been quiet for 5 s; if it is another tab, close that one.")
    assert err.value.wait == pytest.approx(PRESENT_SECONDS - 2)
    assert store.hget(f"room:{code}:tokens", ada) == rooms.digest(token)   # refused: nothing used up
    _, token2 = rejoin(store, code, ada, token, now=1010.0 + PRESENT_SECONDS)   # quiet that long: gone
    assert mark_seen(store, code, ada, token, now=1020.0) is False         # the old tab learns it was replaced
    assert mark_seen(store, code, ada, token2, now=1020.0) is True


def test_present_counts_the_students_seen_in_the_last_seconds(store):
    code, _ = open_room(store, "t")
    ada, ben, cy = (join(store, code, n, now=1000.0) for n in ("Ada", "Ben", "Cy"))
    tokens = {m: new_token(store, code, m) for m in (ada, ben, cy)}
    assert present(store, code, now=1000.0 + PRESENT_SECONDS - 0.01) == {ada: "Ada", ben: "Ben", cy: "Cy"}
    for t in (1002.0, 1004.0, 1006.0, 1008.0):                             # Ada and Ben tick; Cy closed her tab
        mark_seen(store, code, ada, tokens[ada], now=t), mark_seen(store, code, ben, tokens[ben], now=t)
    assert present(store, code, now=1008.0) == {ada: "Ada", ben: "Ben"} and len(members(store, code)) == 3
    assert present(store, code, now=1008.0 + PRESENT_SECONDS) == {}
    leave(store, code, ben)
    assert present(store, code, now=1009.0) == {ada: "Ada"}
    assert store.hget(f"room:{code}:seen", ben) is None and store.hget(f"room:{code}:tokens", ben) is None
    with pytest.raises(NotYours, match="is gone"):
        rejoin(store, code, ben, tokens[ben], now=2000.0)


def test_names_tokens_and_times_expire_with_the_room(store):
    code, secret = open_room(store, "t")
    ada = join(store, code, "Ada")
    token = new_token(store, code, ada)
    for part in ("members", "names", "tokens", "seen"):
        left = ttl(store, f"room:{code}:{part}")
        assert left is not None and TTL - 5 < left <= TTL, (part, left)
    rooms.end_room(store, code, secret)
    for part in ("members", "names", "tokens", "seen"):
        assert store.hgetall(f"room:{code}:{part}") == {}
    with pytest.raises(NoRoom):
        rejoin(store, code, ada, token)
    assert mark_seen(store, code, ada, token) is False and store.hgetall(f"room:{code}:seen") == {}   # none made
