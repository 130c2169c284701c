"""The room store on a Redis server: what several app replicas share, so a student on one replica follows a
teacher on another.

Every Store operation is one Redis command, or one Lua script where it must be one atomic step on the
server (`create`: EXISTS, then HSET and EXPIRE; `hset_capped`: HEXISTS, HLEN, HSET; `hswap`: HGET, then HSET
if the value is the expected one; `hset_if`: EXISTS, then HSET; `hsetnx` is Redis's HSETNX), so 30 answers or 200
joiners arriving together from different replicas are counted exactly. One client (a connection pool) per
URL per process: `redis_store(url)`. A Redis that does not answer within about 2 s raises Unavailable (a
RoomError) with a message for the screen, never a traceback; the rest of the explorer works without it, and a
session in a room stays in it (ui tells Unavailable from NoRoom: a room that has ended).

    >>> redis_store("redis://127.0.0.1:6379/0") is redis_store(" redis://127.0.0.1:6379/0 ")   # one per URL
    True
    >>> down = RedisStore("redis://:hunter2@127.0.0.1:1/0")     # nothing listens on port 1
    >>> try:
    ...     down.hget("room:K7MQ2D", "title")
    ... except RoomError as err:
    ...     print(err)                                          # the password is never shown
    Rooms are unavailable: their server (Redis at 127.0.0.1:1) does not answer. The rest of the explorer works;
    whoever runs this app should start Redis or fix ATTENTION_EXPLORER_REDIS_URL, then try again.
"""
from __future__ import annotations

import threading
from urllib.parse import urlsplit

from .room import RoomError, Unavailable
from .store import REDIS_URL_VARIABLE, Store

TIMEOUT_SECONDS = 2.0                 # to connect and to answer: a dead server costs a click about this much
MAX_CONNECTIONS = 64                  # per process: 200 students joining at once share them

# KEYS[1] the hash; ARGV[1] seconds, then field, value, field, value, ...
CREATE = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV, 2))
redis.call('EXPIRE', KEYS[1], ARGV[1])
return 1
"""

# KEYS[1] the hash; ARGV field, value, limit. Answers as store.ADDED (2), THERE (1), FULL (0).
CAPPED = """
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then return 1 end
if redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[3]) then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 2
"""

# KEYS[1] the hash; ARGV field, old, new. 1 if swapped.
SWAP = """
if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
return 1
"""

# KEYS[1] the hash; ARGV field, value. 1 if set (only in a hash that exists: its expiry stays).
SET_IF = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1
"""


def where(url: str) -> str:
    """The server a URL names, without its user or password: what a message may show.

    >>> where("redis://:s3cret@redis:6379/0"), where("rediss://u:pw@cache.example.org:6380"), where("unix:///run/r.sock")
    ('redis:6379', 'cache.example.org:6380', '/run/r.sock')
    >>> where("redis://:s3cret@redis:63x9")
    'redis:63x9'
    """
    parts = urlsplit(url)
    if parts.scheme == "unix":
        return parts.path
    host = parts.hostname or "localhost"
    try:
        port = parts.port or 6379
    except ValueError:                        # not a port: shown as typed, still without the password
        return parts.netloc.rpartition("@")[2]
    return f"{f'[{host}]' if ':' in host else host}:{port}"


class RedisStore(Store):
    """The Store operations on the Redis server at `url` (redis://host:port/db, rediss://, unix://)."""

    name = "redis"

    def __init__(self, url: str, timeout: float = TIMEOUT_SECONDS):
        import redis
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        self.url = url
        self.where = where(url)
        self._errors = redis.exceptions
        try:
            # at most MAX_CONNECTIONS sockets, shared by every session's thread; one more waits for a free one
            # (a command takes well under a millisecond) instead of failing, up to `timeout`
            pool = redis.BlockingConnectionPool.from_url(
                url, max_connections=MAX_CONNECTIONS, timeout=timeout, decode_responses=True,
                socket_timeout=timeout, socket_connect_timeout=timeout, health_check_interval=30,
                # one retry on a broken connection (a pooled socket the server closed, e.g. after its restart);
                # none on a timeout: a server that does not answer is reported after one wait, not ten
                retry=Retry(NoBackoff(), 1, supported_errors=(redis.exceptions.ConnectionError,)))
        except ValueError as err:             # not a Redis URL: said by every operation, like a server that is down
            secret = urlsplit(url).password
            why = str(err).replace(secret, "…") if secret else str(err)
            self._broken = (f"Rooms are unavailable: {REDIS_URL_VARIABLE} is not a Redis URL ({why}). Whoever runs "
                            "this app should set it like redis://host:6379/0, or unset it to keep rooms in one "
                            "process.")
            return
        self._broken = ""
        self._client = redis.Redis(connection_pool=pool)
        self._scripts = {name: self._client.register_script(script) for name, script in
                         (("create", CREATE), ("capped", CAPPED), ("swap", SWAP), ("set_if", SET_IF))}

    def _call(self, command: str, *args):
        """Run one command (or one of the scripts); a server that is down, slow or refusing, or a URL that names
        none, becomes a RoomError with a message."""
        if self._broken:
            raise Unavailable(self._broken)
        try:
            if command in self._scripts:
                return self._scripts[command](*args)
            return getattr(self._client, command)(*args)
        except self._errors.AuthenticationError as err:      # a ConnectionError: before it
            raise Unavailable(f"Rooms are unavailable: their server (Redis at {self.where}) refused this app's "
                            f"password. Whoever runs this app should check the password in {REDIS_URL_VARIABLE}."
                            ) from err
        except (self._errors.ConnectionError, self._errors.TimeoutError) as err:
            raise Unavailable(f"Rooms are unavailable: their server (Redis at {self.where}) does not answer. The rest "
                            "of the explorer works; whoever runs this app should start Redis or fix "
                            f"{REDIS_URL_VARIABLE}, then try again.") from err
        except self._errors.RedisError as err:
            raise Unavailable(f"Rooms are unavailable: their server (Redis at {self.where}) refused the request "
                            f"({str(err)[:120]}). Whoever runs this app should check that server.") from err

    def create(self, key, mapping, seconds):
        if not mapping:
            raise ValueError("a room's hash is made with at least one field")
        flat = [str(x) for pair in mapping.items() for x in pair]
        return self._call("create", [key], [int(seconds), *flat]) == 1

    def hgetall(self, key):
        return self._call("hgetall", key)

    def hget(self, key, field):
        return self._call("hget", key, field)

    def hset(self, key, mapping):
        if mapping:
            self._call("hset", key, None, None, {str(f): str(v) for f, v in mapping.items()})

    def hincrby(self, key, field, amount=1):
        return int(self._call("hincrby", key, field, int(amount)))

    def hdel(self, key, field):
        self._call("hdel", key, field)

    def hlen(self, key):
        return int(self._call("hlen", key))

    def hset_capped(self, key, field, value, limit):
        return int(self._call("capped", [key], [field, str(value), int(limit)]))

    def hsetnx(self, key, field, value):
        return bool(self._call("hsetnx", key, field, str(value)))

    def hswap(self, key, field, old, new):
        return int(self._call("swap", [key], [field, str(old), str(new)])) == 1

    def hset_if(self, key, field, value):
        return int(self._call("set_if", [key], [field, str(value)])) == 1

    def expire(self, key, seconds):
        self._call("expire", key, int(seconds))

    def ttl(self, key) -> float | None:
        """Seconds until the key disappears (None: missing or no expiry); for tests and the curious."""
        ms = int(self._call("pttl", key))
        return ms / 1000 if ms >= 0 else None

    def ping(self):
        """True when the server answers; RoomError with the message when it does not."""
        return bool(self._call("ping"))


_STORES: dict[str, RedisStore] = {}
_LOCK = threading.Lock()


def redis_store(url: str) -> RedisStore:
    """The process's one RedisStore (one connection pool) for this URL; nothing connects until first used."""
    url = url.strip()
    with _LOCK:
        store = _STORES.get(url)
        if store is None:
            store = _STORES[url] = RedisStore(url)
        return store
