"""A student who reloads comes back as themselves; who is here now.

A rejoin token is what a student's browser keeps (ui puts it in a cookie) so that a reload, a dropped connection
or another replica brings them back under the same member id, nickname and answers. It is 128 random bits; the
room keeps only its SHA-256 (room:<code>:tokens, member id -> digest), so a copy of the store opens no place.
It is single use: `rejoin` swaps the digest for a new token's in one atomic step (HGET then HSET in a Lua script
on Redis, under the lock in memory), so of two browsers holding the same token at most one gets in, and the
other's copy is worthless from then on. It is refused while the member is present from another session (its
screen checked the room within PRESENT_SECONDS): a copied cookie does not open a place its student is using.
It expires with the room (every key of the room's members does), and `leave` deletes it.

Presence: each following screen's ticks call `seen` (ui throttles them to one write every SEEN_EVERY seconds),
which writes the time into room:<code>:seen; `present` is the students seen in the last PRESENT_SECONDS, so a
closed tab leaves the count within PRESENT_SECONDS (plus the teacher's next refresh). The times are the app
processes' clocks (time.time()): replicas sharing Redis must keep their clocks within a second (NTP).

    >>> from classroom.store import MemoryStore
    >>> from classroom.room import open_room, join
    >>> s = MemoryStore()
    >>> code, _ = open_room(s, "Period 3")
    >>> ada = join(s, code, "Ada", now=100.0)
    >>> token = new_token(s, code, ada)
    >>> sorted(present(s, code, now=103.0).values()), present(s, code, now=106.0)
    (['Ada'], {})
    >>> name, again = rejoin(s, code, ada, token, now=106.0)        # a reload, 6 s after her last tick
    >>> name, again != token
    ('Ada', True)
    >>> try:
    ...     rejoin(s, code, ada, token, now=120.0)                  # the old token: used once already
    ... except NotYours as err:
    ...     print(str(err).replace(code, "<code>"))
    This browser's place in room <code> was used already (by a reload in another tab, or a copy of this browser's cookie): join again with the code and another nickname (yours stays with that place).
"""
from __future__ import annotations

import secrets
import time

from .codes import digest, same_secret
from .room import TTL, RoomError, _key, check

PRESENT_SECONDS = 5.0          # a student is here while their screen checked the room this recently
SEEN_EVERY = 1.8               # ui writes a session's "seen" at most this often (a following tick is 0.3 s)


class NotYours(RoomError):
    """The token opens no place: wrong, used already, or its student left."""


class Elsewhere(RoomError):
    """The member is present from another session right now: try again when that one has gone quiet."""

    def __init__(self, message: str, wait: float):
        super().__init__(message)
        self.wait = wait                     # seconds until the other session counts as gone, if it stays quiet


def _now(now: float | None) -> float:
    return time.time() if now is None else float(now)


def new_token(store, code, member) -> str:
    """A fresh rejoin token for a member who just joined (the room keeps its digest only); its place must exist."""
    code = check(store, code)
    if not isinstance(member, str) or store.hget(_key(code, "members"), member) is None:
        raise NotYours(f"You are not in room {code}: join it with its code and a nickname.")
    token = secrets.token_urlsafe(16)                          # 128 bits
    store.hset(_key(code, "tokens"), {member: digest(token)})
    store.expire(_key(code, "tokens"), TTL)
    return token


def last_seen(store, code, member) -> float | None:
    value = store.hget(_key(code, "seen"), str(member))
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def _used(code: str) -> str:
    return (f"This browser's place in room {code} was used already (by a reload in another tab, or a copy of this "
            "browser's cookie): join again with the code and another nickname (yours stays with that place).")


def removed_words(code: str) -> str:
    """What a student's screen says when the teacher removed them from room `code` (now, and on every return)."""
    return (f"Your teacher removed you from room {code}: your place in it is gone, and this browser no longer brings "
            "you back by itself. You keep exploring on your own; ask your teacher before joining again.")


def rejoin(store, code, member, token, now: float | None = None) -> tuple[str, str]:
    """A browser comes back with its member id and token: (the nickname, the next token). NoRoom if the room has
    ended; NotYours if the token is not the member's current one (wrong, used, or the student left); Elsewhere
    while the member's screen is present from another session."""
    code = check(store, code)
    now = _now(now)
    if not isinstance(member, str) or not isinstance(token, str):
        raise NotYours(f"This browser has no place in room {code}: join it with its code and a nickname.")
    name = store.hget(_key(code, "members"), member)
    stored = store.hget(_key(code, "tokens"), member)
    if name is None and store.hget(_key(code, "removed"), member) is not None:
        raise NotYours(removed_words(code))
    if name is None or not stored:
        raise NotYours(f"This browser's place in room {code} is gone (you left the room): join it again with its "
                       "code and a nickname.")
    if not same_secret(token, stored):
        raise NotYours(_used(code))
    seen = last_seen(store, code, member)
    if seen is not None and 0 <= now - seen < PRESENT_SECONDS:
        raise Elsewhere(f"Coming back to room {code} as “{name}”: your place was in use {now - seen:.0f} s ago (by "
                        "this page before it reloaded, or by another tab or device). This tab takes it by itself "
                        f"once that screen has been quiet for {PRESENT_SECONDS:.0f} s; if it is another tab, close "
                        "that one.", wait=PRESENT_SECONDS - (now - seen))
    fresh = secrets.token_urlsafe(16)
    if not store.hswap(_key(code, "tokens"), member, stored, digest(fresh)):     # another browser got in first
        raise NotYours(_used(code))
    store.hset_if(_key(code, "seen"), member, f"{now:.3f}")
    return name, fresh


def seen(store, code, member, token, now: float | None = None) -> bool:
    """A following screen's tick: its member is here now. False (and nothing written) if this session's token is
    no longer the member's (another tab or device came back as them, or they left): the session should leave."""
    stored = store.hget(_key(code, "tokens"), str(member))
    if not stored or not same_secret(token, stored):
        return False
    store.hset_if(_key(code, "seen"), member, f"{_now(now):.3f}")
    return True


def present(store, code, now: float | None = None) -> dict[str, str]:
    """member id -> nickname of the students whose screens checked the room in the last PRESENT_SECONDS (for the
    teacher's count and list; never sent to a student)."""
    code = check(store, code)
    now = _now(now)
    names = store.hgetall(_key(code, "members"))
    times = store.hgetall(_key(code, "seen"))
    here = {}
    for member, name in names.items():
        try:
            if now - float(times.get(member, "nan")) < PRESENT_SECONDS:
                here[member] = name
        except ValueError:
            continue
    return here

