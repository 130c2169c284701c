"""Where room state lives: a few atomic operations on hashes (string fields to string values) with an expiry.

One process needs nothing set up: MemoryStore keeps the hashes in a dict behind a lock, shared by every
session of the process. Several replicas share a Redis server instead (redis_store.RedisStore, the same
operations, each one atomic on the server). Which one a process uses is which_store.store_from_env's choice:
the environment variable ATTENTION_EXPLORER_REDIS_URL (e.g. redis://redis:6379/0) switches to Redis; unset,
the memory store.

    >>> s = MemoryStore()
    >>> s.create("room:A", {"n": "1"}, seconds=60), s.create("room:A", {"n": "2"}, seconds=60)
    (True, False)
    >>> s.hincrby("room:A", "n", 2), s.hget("room:A", "n")
    (3, '3')
    >>> [s.hset_capped("m", f, "x", limit=2) for f in ("a", "a", "b", "c")]   # added, there already, added, full
    [2, 1, 2, 0]
    >>> s.hsetnx("m", "a", "y"), s.hswap("m", "a", "x", "z"), s.hswap("m", "a", "x", "w"), s.hset_if("gone", "a", "1")
    (False, True, False, False)
"""
from __future__ import annotations

import threading
import time

REDIS_URL_VARIABLE = "ATTENTION_EXPLORER_REDIS_URL"

ADDED, THERE, FULL = 2, 1, 0                 # hset_capped's answers


class Store:
    """The operations a room needs. Keys and fields are str; values are str. A missing hash reads as empty."""

    def create(self, key: str, mapping: dict[str, str], seconds: int) -> bool:
        """Make the hash with these fields and an expiry, only if the key does not exist: True if made."""
        raise NotImplementedError

    def hgetall(self, key: str) -> dict[str, str]:
        raise NotImplementedError

    def hget(self, key: str, field: str) -> str | None:
        raise NotImplementedError

    def hset(self, key: str, mapping: dict[str, str]) -> None:
        raise NotImplementedError

    def hincrby(self, key: str, field: str, amount: int = 1) -> int:
        raise NotImplementedError

    def hlen(self, key: str) -> int:
        raise NotImplementedError

    def hdel(self, key: str, field: str) -> None:
        """Remove one field (a missing key or field: nothing)."""
        raise NotImplementedError

    def hset_capped(self, key: str, field: str, value: str, limit: int) -> int:
        """Set the field if it is new and the hash has fewer than `limit` fields: ADDED (2); a field already
        there keeps its value: THERE (1); a full hash: FULL (0). One atomic step."""
        raise NotImplementedError

    def hsetnx(self, key: str, field: str, value: str) -> bool:
        """Set the field only if it is not there: True if set. One atomic step (a nickname taken by exactly one)."""
        raise NotImplementedError

    def hswap(self, key: str, field: str, old: str, new: str) -> bool:
        """Set the field to `new` only if its value is `old`: True if swapped. One atomic step (a token used once)."""
        raise NotImplementedError

    def hset_if(self, key: str, field: str, value: str) -> bool:
        """Set the field only if the hash exists (its expiry unchanged): True if set. One atomic step, so a
        write after the hash expired does not make a hash that never expires."""
        raise NotImplementedError

    def expire(self, key: str, seconds: int) -> None:
        """The key disappears `seconds` from now (a missing key: nothing)."""
        raise NotImplementedError

    def ping(self) -> bool:
        return True

    name = "store"


class MemoryStore(Store):
    """In this process only: every session of one server sees the same rooms; a restart forgets them."""

    name = "memory"

    def __init__(self, clock=time.monotonic):
        self._data: dict[str, dict[str, str]] = {}
        self._expires: dict[str, float] = {}
        self._lock = threading.Lock()
        self._clock = clock
        self._next_sweep = 0.0

    def _live(self, key: str) -> dict[str, str] | None:
        """The hash if it exists and has not expired (call with the lock held)."""
        when = self._expires.get(key)
        if when is not None and when <= self._clock():
            self._data.pop(key, None)
            self._expires.pop(key, None)
        return self._data.get(key)

    def _sweep(self) -> None:
        now = self._clock()
        if now < self._next_sweep:
            return
        self._next_sweep = now + 60.0
        for key in [k for k, when in self._expires.items() if when <= now]:
            self._data.pop(key, None)
            self._expires.pop(key, None)

    def create(self, key, mapping, seconds):
        with self._lock:
            self._sweep()
            if self._live(key) is not None:
                return False
            self._data[key] = {str(f): str(v) for f, v in mapping.items()}
            self._expires[key] = self._clock() + seconds
            return True

    def hgetall(self, key):
        with self._lock:
            return dict(self._live(key) or {})

    def hget(self, key, field):
        with self._lock:
            return (self._live(key) or {}).get(field)

    def hset(self, key, mapping):
        with self._lock:
            h = self._live(key)
            if h is None:
                h = self._data[key] = {}
            h.update({str(f): str(v) for f, v in mapping.items()})

    def hincrby(self, key, field, amount=1):
        with self._lock:
            h = self._live(key)
            if h is None:
                h = self._data[key] = {}
            value = int(h.get(field, "0")) + int(amount)
            h[field] = str(value)
            return value

    def hdel(self, key, field):
        with self._lock:
            (self._live(key) or {}).pop(field, None)

    def hlen(self, key):
        with self._lock:
            return len(self._live(key) or {})

    def hset_capped(self, key, field, value, limit):
        with self._lock:
            h = self._live(key)
            if h is None:
                h = self._data[key] = {}
            if field in h:
                return THERE
            if len(h) >= limit:
                return FULL
            h[field] = str(value)
            return ADDED

    def hsetnx(self, key, field, value):
        with self._lock:
            h = self._live(key)
            if h is None:
                h = self._data[key] = {}
            if field in h:
                return False
            h[field] = str(value)
            return True

    def hswap(self, key, field, old, new):
        with self._lock:
            h = self._live(key)
            if h is None or h.get(field) != old:
                return False
            h[field] = str(new)
            return True

    def hset_if(self, key, field, value):
        with self._lock:
            h = self._live(key)
            if h is None:
                return False
            h[field] = str(value)
            return True

    def expire(self, key, seconds):
        with self._lock:
            if self._live(key) is not None:
                self._expires[key] = self._clock() + seconds
