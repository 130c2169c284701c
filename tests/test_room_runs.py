"""A teacher's session-trained run beside the room, on both stores (the in-memory one and a real redis-server,
tests/test_room_store.py's fixture): the run as bytes and back (exact), put by the teacher's secret only, bounded
in size and number, read back by its digest from another process at the same Redis, gone with the room."""
from __future__ import annotations

import base64
import subprocess
import sys
import zlib

import numpy as np
import pytest

from attention_core.training.lm import run_blob, shipped
from attention_core.training.lm.train import STEPS
from classroom import room as rooms
from classroom.room import MAX_RUN_BYTES, MAX_RUNS, TTL, BadMessage, NotTeacher, end_room, get_run, join, open_room, \
    put_run
from tests.test_room_store import ROOT, store, ttl  # noqa: F401  (store: the fixture, on both stores)


def shipped_run(steps: int | None = None) -> dict:
    """The shipped run as a session holds a trained one: float32 weights as trained, its history."""
    got = shipped.load()
    h = got.history
    if steps is not None:                       # a shorter run: its history up to `steps`
        keep = h["step"] <= steps
        h = {k: v[keep] for k, v in h.items()}
    return {"params": {k: v.astype(np.float32) for k, v in got.params.items()}, "history": h,
            "seed": 0, "steps": int(h["step"][-1]), "seconds": 12.345}


def test_a_run_as_bytes_and_back_is_exact():
    run = shipped_run()
    blob = run_blob.to_bytes(run)
    assert blob == run_blob.to_bytes(run)                       # the same run, the same bytes: the digest names it
    assert 250_000 < len(blob) < 350_000                        # 292 KB: 39,680 float32 weights and the history, each
                                                                # logged step's patterns (uint8) and K-composition
    back = run_blob.from_bytes(blob)
    assert (back["seed"], back["steps"], back["seconds"]) == (0, STEPS, 12.345)
    for k, v in run["params"].items():
        assert back["params"][k].dtype == np.float32 and np.array_equal(back["params"][k], v)
    for k, v in run["history"].items():
        assert np.array_equal(back["history"][k], v)
    start = shipped.load().start                                # the step-0 weights are the seed's, made again
    assert all(np.array_equal(back["start"][k].astype(np.float64), start[k]) for k in start)


@pytest.mark.parametrize("damage, words", [
    (lambda b: b[:-100], "cut short"),
    (lambda b: b"not a run", "not a run"),
    (lambda b: zlib.compress(b"{}\n"), "another format"),
    (lambda b: zlib.compress(zlib.decompress(b).replace(b'"steps":%d' % STEPS, b'"steps":2300', 1)), "steps"),
    (lambda b: zlib.compress(zlib.decompress(b).replace(b'"params.l0.w_q","<f4",[64,64]',
                                                                 b'"params.l0.w_q","<f4",[64,65]', 1)),
     "shape"),
    (lambda b: zlib.compress(b"\0" * (run_blob.MAX_INFLATED + 10)), "too large"),
])
def test_bytes_that_are_not_a_run_say_so(damage, words):
    with pytest.raises(run_blob.RunBlobError, match=words):
        run_blob.from_bytes(damage(run_blob.to_bytes(shipped_run())))


def test_a_run_with_a_number_that_is_not_finite_is_refused():
    run = shipped_run()
    run["params"]["w_u"] = run["params"]["w_u"].copy()
    run["params"]["w_u"][0, 0] = np.nan
    with pytest.raises(run_blob.RunBlobError, match="not finite"):
        run_blob.from_bytes(run_blob.to_bytes(run))


def test_the_teacher_puts_a_run_and_the_class_reads_it(store):  # noqa: F811
    code, secret = open_room(store, "Runs")
    blob = run_blob.to_bytes(shipped_run())
    name = put_run(store, code, secret, blob)
    assert name == run_blob.digest(blob) == rooms.run_digest(blob) and len(name) == 32
    assert get_run(store, code, name) == blob
    assert get_run(store, code.lower(), name) == blob                       # the code as typed
    assert run_blob.from_bytes(get_run(store, code, name))["steps"] == STEPS
    assert store.hget(f"room:{code}:runs", name) == base64.b64encode(blob).decode()    # base64 text in the hash
    assert 0.99 * TTL < ttl(store, f"room:{code}:runs") <= TTL              # the room's expiry
    assert put_run(store, code, secret, blob) == name                       # again: the same run, kept once
    assert store.hget(f"room:{code}:runs", "order") == name
    for other in ("", "0" * 31, "Z" * 32, name.upper(), None, 7, "0" * 32):
        assert get_run(store, code, other) is None


def test_only_the_teacher_puts_and_a_run_is_bounded(store):  # noqa: F811
    code, secret = open_room(store, "Runs")
    ana = join(store, code, "Ana")
    blob = run_blob.to_bytes(shipped_run(100))
    for guess in ("a guess", ana, "", None):
        with pytest.raises(NotTeacher, match="Only the teacher"):
            put_run(store, code, guess, blob)
    with pytest.raises(BadMessage, match=f"{MAX_RUN_BYTES + 1:,} bytes, more than the {MAX_RUN_BYTES:,}"):
        put_run(store, code, secret, b"x" * (MAX_RUN_BYTES + 1))
    with pytest.raises(BadMessage, match="bytes of a trained model"):
        put_run(store, code, secret, "text")
    assert store.hgetall(f"room:{code}:runs") == {}                       # nothing was kept


def test_a_room_keeps_its_last_runs_and_a_tampered_one_reads_as_gone(store):  # noqa: F811
    code, secret = open_room(store, "Runs")
    names = [put_run(store, code, secret, run_blob.to_bytes(shipped_run(steps))) for steps in (50, 100, 150, 200, 250)]
    assert len(set(names)) == 5 and MAX_RUNS == 4
    assert get_run(store, code, names[0]) is None                           # the oldest went
    assert all(get_run(store, code, n) is not None for n in names[1:])
    assert store.hget(f"room:{code}:runs", "order").split(",") == names[1:]
    store.hset(f"room:{code}:runs", {names[1]: base64.b64encode(b"another run").decode()})
    store.hset(f"room:{code}:runs", {names[2]: "%%% not base64"})
    assert get_run(store, code, names[1]) is None and get_run(store, code, names[2]) is None


def test_a_run_goes_with_the_room(store):  # noqa: F811
    code, secret = open_room(store, "Runs")
    name = put_run(store, code, secret, run_blob.to_bytes(shipped_run(100)))
    end_room(store, code, secret)
    assert store.hgetall(f"room:{code}:runs") == {} and get_run(store, code, name) is None


READ_RUN = """
import sys
from attention_core.training.lm import run_blob
from classroom import room
from classroom.redis_store import redis_store
blob = room.get_run(redis_store(sys.argv[1]), sys.argv[2], sys.argv[3])
run = run_blob.from_bytes(blob)
print(run_blob.digest(blob), run["steps"], f"{run['history']['copy_loss'][-1]:.17g}", f"{float(run['params']['w_u'].sum()):.17g}")
"""


def test_a_run_put_on_one_replica_is_read_on_another(redis_url):
    from classroom.redis_store import redis_store
    here = redis_store(redis_url)
    code, secret = open_room(here, "Replica A")
    run = shipped_run(300)
    name = put_run(here, code, secret, run_blob.to_bytes(run))
    out = subprocess.run([sys.executable, "-c", READ_RUN, redis_url, code, name], cwd=ROOT, capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [name, "300", f"{run['history']['copy_loss'][-1]:.17g}",
                                  f"{float(run['params']['w_u'].sum()):.17g}"]
