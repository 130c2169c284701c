"""The teacher paces the class and sees it: lock the class to the teacher's view, remove a student, and the roster
(each student's state, their answer to the open question and how long it took).

A student's screen reports what it shows with `report` ("following", or "out" and the page it shows), written only
when it changes (ui keeps the last value it wrote), so the following fragment's 0.3 s ticks cost no write. Who is
disconnected comes from presence's "seen" times (a screen that has not checked the room in PRESENT_SECONDS).
`roster` reads the room and five of its hashes, whatever its size: the teacher's screen calls it every two seconds.

    >>> from classroom.store import MemoryStore
    >>> from classroom.room import open_room, join, open_poll, answer, state
    >>> s = MemoryStore()
    >>> code, secret = open_room(s, "Period 3")
    >>> ana, ben, cy = (join(s, code, name, now=100.0) for name in ("Ana", "Ben", "Cy"))
    >>> report(s, code, ana, "following"); report(s, code, ben, "out", "app_pages/40_rope.py")
    >>> poll = open_poll(s, code, secret, {"prompt": "2 + 2?", "choices": ["3", "4"], "answer": 1})
    >>> answer(s, code, ana, poll, 1)
    >>> [(r.name, r.state, r.page, r.answer) for r in roster(s, code, now=103.0)]
    [('Ana', 'following', None, 1), ('Ben', 'out', 'app_pages/40_rope.py', None), ('Cy', 'following', None, None)]
    >>> [r.state for r in roster(s, code, now=110.0)]          # no screen checked the room for 10 s
    ['gone', 'gone', 'gone']
    >>> lock(s, code, secret, True); state(s, code).locked
    True
    >>> remove(s, code, secret, ben); sorted(r.name for r in roster(s, code, now=103.0)), removed(s, code, ben)
    (['Ana', 'Cy'], True)
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass

from .presence import PRESENT_SECONDS
from .room import TTL, BadMessage, _code, _key, _room, _teacher, leave

STATES = ("following", "out", "gone")          # following the teacher; stepped out (on `page`); not seen lately


@dataclass(frozen=True)
class Student:
    member: str                       # never shown: the teacher's screen names a student by nickname
    name: str
    state: str                        # one of STATES
    page: str | None                  # the page file a student who stepped out shows (None: unknown or following)
    answer: int | None                # their choice in the question open now (None: not answered, or no question)
    seconds: float | None             # from the question's opening to their last answer


def report(store, code, member, state: str, page: str | None = None) -> None:
    """A student's screen says what it shows: "following" the teacher, or "out" on `page` (a page file). Call it
    when that changes (ui keeps the last value written): one HSET."""
    if state not in ("following", "out"):
        raise BadMessage("A screen either follows the teacher or has stepped out.")
    value = "following" if state == "following" else f"out:{str(page or '')[:200]}"
    store.hset(_key(_code(code), "where"), {str(member): value})
    store.expire(_key(_code(code), "where"), TTL)


def lock(store, code, secret, on: bool) -> None:
    """The teacher locks the class to their view (every screen follows it; a student's own change is undone) or
    unlocks it (students may step out again). Only the teacher's secret can."""
    code = _code(code)
    _teacher(store, code, secret)
    store.hset(_key(code), {"locked": "1" if on else ""})


def remove(store, code, secret, member) -> None:
    """The teacher removes a student: they leave the room as if they had left (nickname, rejoin token, last-seen time,
    their answer to the open question go), and the room remembers that they were removed, so their screen says so
    and their cookie no longer brings them back. Only the teacher's secret can."""
    code = _code(code)
    _teacher(store, code, secret)
    if not isinstance(member, str) or store.hget(_key(code, "members"), member) is None:
        raise BadMessage("That student is no longer in the room.")
    leave(store, code, member)
    store.hset(_key(code, "removed"), {member: f"{time.time():.3f}"})
    store.expire(_key(code, "removed"), TTL)


def removed(store, code, member) -> bool:
    """Whether the teacher removed this member from the room."""
    return isinstance(member, str) and store.hget(_key(_code(code), "removed"), member) is not None


def _float(text) -> float | None:
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def roster(store, code, now: float | None = None) -> list[Student]:
    """Every student in the room, by nickname (casefolded), with their state and their answer to the question open
    now (revealed or not). For the teacher's screen only: never sent to a student or drawn in presenter mode."""
    code = _code(code)
    room = _room(store, code)
    now = time.time() if now is None else float(now)
    names = store.hgetall(_key(code, "members"))
    seen = store.hgetall(_key(code, "seen"))
    where = store.hgetall(_key(code, "where"))
    poll = json.loads(room["poll"]) if room.get("poll") else None
    answers = store.hgetall(_key(code, "answers", poll["id"])) if poll else {}
    times = store.hgetall(_key(code, "times", poll["id"])) if poll else {}
    out = []
    for member, name in names.items():
        last = _float(seen.get(member))
        said = where.get(member, "following")
        if last is None or not now - last < PRESENT_SECONDS:
            kind, page = "gone", None
        elif said.startswith("out:"):
            kind, page = "out", said[4:] or None
        else:
            kind, page = "following", None
        choice = answers.get(member)
        pick = int(choice) if choice is not None and choice.isdigit() else None
        out.append(Student(member, name, kind, page, pick, _float(times.get(member)) if pick is not None else None))
    return sorted(out, key=lambda s: (s.name.casefold(), s.name))


def counts(students: list[Student]) -> dict[str, int]:
    """{"following": n, "out": n, "gone": n, "answered": n, "joined": n}: what the projector and a student may see.

    >>> counts([Student("m", "Ana", "out", None, 1, 2.0), Student("n", "Ben", "gone", None, None, None)])
    {'following': 0, 'out': 1, 'gone': 1, 'answered': 1, 'joined': 2}
    """
    tally = {kind: sum(s.state == kind for s in students) for kind in STATES}
    return {**tally, "answered": sum(s.answer is not None for s in students), "joined": len(students)}
