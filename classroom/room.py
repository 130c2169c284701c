"""A room's life, on any Store: open it, join it, push a view to it, run polls in it.

    >>> from classroom.store import MemoryStore
    >>> s = MemoryStore()
    >>> code, secret = open_room(s, "Period 3")
    >>> ana, ben = join(s, code, "Ana"), join(s, code, "<b>Ben</b>")
    >>> sorted(members(s, code).values())                # a nickname is kept as typed: ui shows it as text
    ['<b>Ben</b>', 'Ana']
    >>> push(s, code, secret, {"page": "app_pages/4_scores.py", "query": {"d_k": "8"}})
    1
    >>> state(s, code).view["query"]
    {'d_k': '8'}
    >>> poll = open_poll(s, code, secret, {"prompt": "2 + 2?", "choices": ["3", "4"], "answer": 1, "explanation": "2 + 2 = 4"})
    >>> answer(s, code, ana, poll, 1); answer(s, code, ben, poll, 0); tally(s, code, poll)
    [1, 1]
    >>> try:                                             # a student's guess at the secret
    ...     push(s, code, "a guess", {"page": "app_pages/overview.py", "query": {}})
    ... except NotTeacher as err:
    ...     print(str(err).replace(code, "<code>"))
    Only the teacher who opened room <code> can do that.

Keys (every one expires ROOM_HOURS after the teacher's last push or poll, or at once when the teacher ends the room):
    room:<code>                    title, the secret's digest, created, version, view (JSON), poll (JSON or "")
    room:<code>:members            member id -> nickname (at most MAX_MEMBERS; removed when the student leaves)
    room:<code>:names              the nickname's name_key -> member id (one student per name; removed on leaving)
    room:<code>:tokens             member id -> the SHA-256 of the student's rejoin token (classroom/presence.py)
    room:<code>:seen               member id -> when their screen last checked the room (Unix seconds)
    room:<code>:answers:<poll id>  member id -> the index of the chosen answer
    room:<code>:changes:<poll id>  member id -> how many times that member answered (at most MAX_ANSWER_CHANGES)
    room:<code>:times:<poll id>    member id -> seconds from the question's opening to that member's last answer
    room:<code>:where              member id -> what their screen shows: "following" or "out:<page file>"
                                   (classroom/pacing.py report; written only when it changes)
    room:<code>:removed            member id -> when the teacher removed them (pacing.remove; their cookie is dead)
    room:<code>:log                poll id -> the question as asked (JSON: prompt, choices, answer, "phase": "pre",
                                   "post" or "poll", a check's question number): every question the room asked, for
                                   what the class learned (classroom/results.py: shares, the gain, the CSV)
    room:<code>:runs               a run's digest -> its bytes as base64 text; "order": the digests, oldest first
                                   (at most MAX_RUNS runs of at most MAX_RUN_BYTES; put_run, get_run)

A member id is 128 random bits that only its student's session holds: it is never shown to anyone, so no
one can answer for another student. Only the teacher's secret can push a view, open, reveal or close a
poll. About a student the room keeps their nickname, their answers (the index of the choice, how many times they
answered each question and how many seconds after it opened their last answer came), the digest of their rejoin
token, when their screen last checked the room and whether it follows the teacher or shows another page (which);
nothing else. The teacher's screen shows each student's (classroom/pacing.py roster); the projector and the
students see counts.
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
import secrets
import time
import unicodedata
from dataclasses import dataclass

from .codes import digest, new_code, normal_code, same_secret
from .store import FULL, Store

ROOM_HOURS = 4
TTL = ROOM_HOURS * 3600
MAX_MEMBERS = 150                     # a lecture hall; the 151st joiner is told the room is full
MAX_ANSWER_CHANGES = 5                # per student and poll: more is a flood, answered with a message
MAX_NICKNAME = 24
MAX_VIEW_BYTES = 20_000
MAX_CHOICES = 8
JOINERS = "\u200c\u200d"
MAX_HIDE, MAX_HIDE_CHARS = 64, 80       # a view's hidden numbers: at most this many names, each this long
# a step's key (a page's own view of the trace: "view:<key>") and, for one cell, ":<head or None>.<i>.<j>"
HIDE = re.compile(r"(?:view:)?[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)*(?::(?:None|[0-9]{1,4})\.[0-9]{1,5}\.[0-9]{1,5})?")
STAGES = ("predict", "revealed")                # zero-width non-joiner and joiner: kept in a name


class RoomError(Exception):
    """A message for the person at the screen: what happened and what to do."""


class NoRoom(RoomError):
    pass


class RoomFull(RoomError):
    pass


class NotTeacher(RoomError):
    pass


class BadMessage(RoomError):
    pass


class TooMany(RoomError):
    pass


class NameTaken(RoomError):
    """Another student in the room has this nickname (compared by name_key)."""


class Unavailable(RoomError):
    """The store does not answer (a Redis server down or refusing): the room may well still be there."""


@dataclass(frozen=True)
class RoomState:
    code: str
    title: str
    version: int                      # 0 before the first push
    view: dict | None                 # {"page": page file, "query": {param: text}, "version": n, "at": time,
                                      #  and, for a lesson stop, "hide": [...] and "stage": "predict" | "revealed"}
    poll: dict | None                 # {"id", "prompt", "choices", "answer", "explanation", "revealed", ...}
    locked: bool = False              # the teacher has locked the class to their view (classroom/pacing.py)


def _key(code: str, *parts: str) -> str:
    return ":".join(("room", code) + parts)


def _code(code) -> str:
    normal = normal_code(code)
    if normal is None and not str(code).strip():          # a click before typing: not a wrong code (no miss counted)
        raise BadMessage("Type the room code first: the 6 letters and digits on your teacher's screen, like K7MQ2D.")
    if normal is None:
        raise NoRoom(f"“{str(code)[:40]}” is not a room code: a code is 6 letters and digits, like K7MQ2D "
                     "(no 0, O, 1, I or L).")
    return normal


def _room(store: Store, code: str) -> dict[str, str]:
    room = store.hgetall(_key(code))
    if not room:
        raise NoRoom(f"There is no room {code}: the code may be mistyped, or the room has ended (its teacher ended "
                     f"it, or it closed {ROOM_HOURS} hours after its teacher's last step). Ask your teacher for the code "
                     "on the screen.")
    return room


def _teacher(store: Store, code: str, secret) -> dict[str, str]:
    room = _room(store, code)
    if not same_secret(secret, room.get("secret", "")):
        raise NotTeacher(f"Only the teacher who opened room {code} can do that.")
    return room


MEMBER_KEYS = ("members", "names", "tokens", "seen", "where", "removed")      # what the room keeps per student: expire together


POLL_KEYS = ("answers", "changes", "times")                                    # per question asked


def _refresh(store: Store, code: str, *more: str) -> None:
    """The room's keys live TTL from now: the room, its log of questions, what it keeps per student, and every
    asked question's answers (else a question's answers went TTL after its last answer while the log kept the
    question, and a long day's check before the lesson lost its answers before the check after)."""
    polls = _int_or_0(store.hget(_key(code), "polls"))
    for key in (_key(code), _key(code, "log")) + tuple(_key(code, part) for part in MEMBER_KEYS) + tuple(
            _key(code, kind, f"p{n}") for n in range(1, polls + 1) for kind in POLL_KEYS) + more:
        store.expire(key, TTL)


def _int_or_0(text) -> int:
    return int(text) if isinstance(text, str) and text.isdigit() else 0


def open_room(store: Store, title: str = "") -> tuple[str, str]:
    """A new room: (its code, the teacher's secret). The secret is shown to no one but the teacher."""
    secret = secrets.token_urlsafe(24)
    for _ in range(20):
        code = new_code()
        if store.create(_key(code), {"title": clean_text(title, 60), "secret": digest(secret),
                                     "created": f"{time.time():.3f}", "version": "0", "view": "", "poll": ""}, TTL):
            return code, secret
    raise RoomError("Could not find a free room code; try again.")


def ended(code: str) -> str:
    """What a session that was in room `code` is told when the room is gone (NoRoom's message is for a typed code)."""
    return (f"Room {code} has ended: its teacher ended it, or {ROOM_HOURS} hours passed after the teacher's last "
            "step.")


def check(store: Store, code) -> str:
    """The normalised code of a room that exists; NoRoom with a message if it does not."""
    code = _code(code)
    _room(store, code)
    return code


def clean_text(text, limit: int) -> str:
    """Printable characters only, spaces collapsed, at most `limit` characters (still shown as text by ui). The
    joiners that emoji and some scripts need stay (👩‍🔬 is 👩, U+200D, 🔬); other control and format characters
    (a tab, a newline, a right-to-left override) become a space.

        >>> clean_text("👩\u200d🔬 Ana\tB\u202eC", 24)
        '👩\u200d🔬 Ana B C'
    """
    text = "".join(" " if unicodedata.category(ch)[0] == "C" and ch not in JOINERS else ch for ch in str(text))
    return " ".join(text.split())[:limit]


def name_key(name) -> str:
    """What makes two nicknames the same in a room: after clean_text, compatibility-normalised (NFKC: a
    full-width Ａｄａ is Ada), casefolded, spaces collapsed.

        >>> name_key("  ADA \t lovelace"), name_key("Ａｄａ") == name_key("ada")
        ('ada lovelace', True)
        >>> name_key("Straße") == name_key("STRASSE")
        True
    """
    return " ".join(unicodedata.normalize("NFKC", clean_text(name, MAX_NICKNAME)).casefold().split())


def join(store: Store, code, nickname, now: float | None = None) -> str:
    """A student joins: their member id (their session keeps it; nobody else ever sees it). A nickname already in
    the room (name_key) is refused (NameTaken): the name is taken in one atomic step (HSETNX), so of two "Ada"s
    joining in the same instant exactly one gets it."""
    code = check(store, code)
    name = clean_text(nickname, MAX_NICKNAME)
    if not name:
        raise BadMessage("Type a nickname first: any name your class will recognise (no account needed).")
    member = secrets.token_urlsafe(16)
    if not store.hsetnx(_key(code, "names"), name_key(name), member):
        raise NameTaken(f"Someone in room {code} is already called “{name}”: type another nickname (add an initial "
                        "or a number, say), so your teacher can tell you apart.")
    if store.hset_capped(_key(code, "members"), member, name, MAX_MEMBERS) == FULL:
        store.hdel(_key(code, "names"), name_key(name))
        raise RoomFull(f"Room {code} is full: {MAX_MEMBERS} students have joined. Ask your teacher to open a "
                       "second room, or follow on the projector.")
    store.hset(_key(code, "seen"), {member: f"{time.time() if now is None else now:.3f}"})
    for part in MEMBER_KEYS:                     # the nicknames go too, even if the teacher never pushes
        store.expire(_key(code, part), TTL)
    return member


def leave(store: Store, code, member) -> None:
    """A student leaves: their nickname (free for another), their rejoin token, their last-seen time and their answer
    to the question in progress go (the teacher's count and "n of m answered" stay true). Nothing if the room has
    ended."""
    code = _code(code)
    room = store.hgetall(_key(code))
    if not room or not isinstance(member, str):
        return
    name = store.hget(_key(code, "members"), member)
    store.hdel(_key(code, "members"), member)
    if name is not None and store.hget(_key(code, "names"), name_key(name)) == member:
        store.hdel(_key(code, "names"), name_key(name))         # the name is free again
    store.hdel(_key(code, "tokens"), member)                    # this browser cannot come back as them
    store.hdel(_key(code, "seen"), member)
    store.hdel(_key(code, "where"), member)
    poll = json.loads(room["poll"]) if room.get("poll") else None
    if poll and not poll.get("revealed"):
        store.hdel(_key(code, "answers", poll["id"]), member)
        store.hdel(_key(code, "times", poll["id"]), member)


def members(store: Store, code) -> dict[str, str]:
    """member id -> nickname (for the teacher's count and list; never sent to a student)."""
    return store.hgetall(_key(check(store, code), "members"))


def is_member(store: Store, code, member) -> bool:
    return isinstance(member, str) and store.hget(_key(_code(code), "members"), member) is not None


def state(store: Store, code) -> RoomState:
    """What a following screen needs, in one read: the view in force and the poll."""
    code = _code(code)
    room = _room(store, code)
    return RoomState(code, room.get("title", ""), int(room.get("version", "0") or 0),
                     json.loads(room["view"]) if room.get("view") else None,
                     json.loads(room["poll"]) if room.get("poll") else None, room.get("locked") == "1")


def shown(store: Store, code) -> tuple | None:
    """What a following screen draws from the room, as one comparable value (the view's version, the question and
    its reveal, the lock), read in one step: a watcher that sees it change wakes the room's screens at once
    (ui/room/wake.py). None once the room has ended (its screens then learn it on their run).

        >>> from classroom.store import MemoryStore
        >>> s = MemoryStore()
        >>> code, secret = open_room(s, "Period 3")
        >>> before = shown(s, code)
        >>> push(s, code, secret, {"page": "app_pages/4_scores.py", "query": {}}) and shown(s, code) != before
        True
        >>> end_room(s, code, secret); shown(s, code) is None
        True
    """
    room = store.hgetall(_key(_code(code)))
    if not room:
        return None
    return room.get("version", "0"), room.get("poll", ""), room.get("locked", "")


def _stage(view: dict) -> dict:
    """A view's predict state, checked: {"hide": [...], "stage": "predict" | "revealed"}, each only if given.

        >>> _stage({"hide": ["weights:None.1.3", "view:cosine_tokens:None.0.2"], "stage": "predict"})
        {'hide': ['weights:None.1.3', 'view:cosine_tokens:None.0.2'], 'stage': 'predict'}
        >>> _stage({"page": "p"})
        {}
    """
    out = {}
    hide = view.get("hide")
    if hide is not None:
        if (not isinstance(hide, (list, tuple)) or len(hide) > MAX_HIDE
                or not all(isinstance(h, str) and len(h) <= MAX_HIDE_CHARS and HIDE.fullmatch(h) for h in hide)):
            raise BadMessage(f"The numbers to hide are at most {MAX_HIDE} names of a step or of one of its cells "
                             "(like weights or weights:None.1.3); nothing was sent.")
        out["hide"] = list(dict.fromkeys(hide))
    stage = view.get("stage")
    if stage is not None:
        if stage not in STAGES:
            raise BadMessage("A view is shown either to predict or revealed; nothing was sent.")
        out["stage"] = stage
    return out


def push(store: Store, code, secret, view: dict) -> int:
    """The teacher shows a view to the class: {"page": page file, "query": {param: text}}, and optionally its
    predict state: "hide" (the numbers hidden on students' screens until the reveal: a step's key, or one cell,
    "<step key>:<head or None>.<i>.<j>") and "stage" ("predict" or "revealed"). Its version."""
    code = _code(code)
    _teacher(store, code, secret)
    if (not isinstance(view, dict) or not isinstance(view.get("page"), str)
            or not isinstance(view.get("query", {}), dict)):
        raise BadMessage("A view is a page and its link's settings.")
    body = {"page": view["page"], "query": {str(k): str(v) for k, v in view.get("query", {}).items()},
            **_stage(view)}
    if len(json.dumps(body)) > MAX_VIEW_BYTES:
        raise BadMessage("This view is too large to send to the class (an uploaded file?); share it as a link instead.")
    version = store.hincrby(_key(code), "version", 1)
    store.hset(_key(code), {"view": json.dumps({**body, "version": version, "at": time.time()})})
    _refresh(store, code)
    return version


def open_poll(store: Store, code, secret, poll: dict) -> str:
    """The teacher asks the class: {"prompt", "choices", "answer" (index), "explanation"} and anything else the
    views need (kept as given). Replaces any poll in progress. Its id."""
    code = _code(code)
    _teacher(store, code, secret)
    choices = poll.get("choices")
    if (not isinstance(choices, (list, tuple)) or not 2 <= len(choices) <= MAX_CHOICES
            or not isinstance(poll.get("answer"), int) or not 0 <= poll["answer"] < len(choices)):
        raise BadMessage(f"A poll needs 2 to {MAX_CHOICES} choices and the index of the right one.")
    if poll.get("phase", "poll") not in ("pre", "post", "poll"):
        raise BadMessage("A question is asked before the lesson (pre), after it (post) or on its own (poll).")
    poll_id = f"p{store.hincrby(_key(code), 'polls', 1)}"
    body = {**poll, "choices": [str(c) for c in choices], "id": poll_id, "revealed": False, "at": time.time()}
    store.hset(_key(code), {"poll": json.dumps(body)})
    store.hset(_key(code, "log"), {poll_id: json.dumps(body)})      # every question asked: classroom/results.py
    _refresh(store, code)
    return poll_id


def _poll(store: Store, code: str, poll_id) -> dict:
    room = _room(store, code)
    poll = json.loads(room["poll"]) if room.get("poll") else None
    if poll is None or poll["id"] != poll_id:
        raise BadMessage("That question is over: your teacher has moved on.")
    return poll


def answer(store: Store, code, member, poll_id, choice) -> None:
    """A student's answer (the index of a choice); answering again replaces it, up to MAX_ANSWER_CHANGES times."""
    code = _code(code)
    poll = _poll(store, code, poll_id)                  # first: a room that has ended says so (NoRoom)
    if not is_member(store, code, member):
        raise BadMessage(f"You are not in room {code} (or it restarted): join again with its code.")
    if poll.get("revealed"):
        raise BadMessage("The answer has been revealed: answers are closed.")
    if isinstance(choice, bool) or not isinstance(choice, int) or not 0 <= choice < len(poll["choices"]):
        raise BadMessage("Pick one of the choices.")
    changes = store.hincrby(_key(code, "changes", poll_id), member, 1)
    store.expire(_key(code, "changes", poll_id), TTL)
    if changes > MAX_ANSWER_CHANGES:
        raise TooMany(f"You have answered {MAX_ANSWER_CHANGES} times: your last answer stands.")
    store.hset(_key(code, "answers", poll_id), {member: str(choice)})
    store.expire(_key(code, "answers", poll_id), TTL)
    took = max(0.0, time.time() - float(poll.get("at") or time.time()))     # the processes' clocks: NTP-close
    store.hset(_key(code, "times", poll_id), {member: f"{took:.1f}"})
    store.expire(_key(code, "times", poll_id), TTL)


def tally(store: Store, code, poll_id) -> list[int]:
    """How many students chose each answer."""
    code = _code(code)
    poll = _poll(store, code, poll_id)
    counts = [0] * len(poll["choices"])
    for value in store.hgetall(_key(code, "answers", poll_id)).values():
        if value.isdigit() and int(value) < len(counts):
            counts[int(value)] += 1
    return counts


def my_answer(store: Store, code, poll_id, member) -> int | None:
    value = store.hget(_key(_code(code), "answers", str(poll_id)), str(member))
    return int(value) if value is not None and value.isdigit() else None


def reveal(store: Store, code, secret, poll_id) -> None:
    code = _code(code)
    _teacher(store, code, secret)
    poll = _poll(store, code, poll_id)
    if poll.get("phase") == "pre":
        raise BadMessage("A question of the check before the lesson is not revealed: the same question comes back "
                         "after the lesson.")
    store.hset(_key(code), {"poll": json.dumps({**poll, "revealed": True})})


def close_poll(store: Store, code, secret) -> None:
    code = _code(code)
    _teacher(store, code, secret)
    store.hset(_key(code), {"poll": ""})


MAX_RUN_BYTES = 400_000               # a session-trained run of the small model is ~292 KB (attention_core run_blob)
MAX_RUNS = 4                          # a room keeps the teacher's last 4 runs; an older one goes
RUN_DIGEST = re.compile(r"[0-9a-f]{32}")


def run_digest(blob: bytes) -> str:
    """A run's name in a view's query: the first 32 hex digits (128 bits) of the SHA-256 of its bytes."""
    return hashlib.sha256(blob).hexdigest()[:32]


def put_run(store: Store, code, secret, blob: bytes) -> str:
    """The teacher puts a run (bytes: a session-trained model, attention_core.training.lm.run_blob) beside the room,
    for the views that name it by its digest (returned). Only the teacher's secret can; at most MAX_RUN_BYTES; the
    room keeps its last MAX_RUNS runs (an older one goes). Putting a run the room has again only renews its expiry:
    the runs live as long as the room (ROOM_HOURS after the teacher's last push)."""
    code = _code(code)
    _teacher(store, code, secret)
    if not isinstance(blob, (bytes, bytearray)) or not blob:
        raise BadMessage("A run is the bytes of a trained model.")
    if len(blob) > MAX_RUN_BYTES:
        raise BadMessage(f"This run is {len(blob):,} bytes, more than the {MAX_RUN_BYTES:,} a room keeps: it cannot "
                         "be sent to the class.")
    name = run_digest(bytes(blob))
    key = _key(code, "runs")
    order = [d for d in (store.hget(key, "order") or "").split(",") if RUN_DIGEST.fullmatch(d)]
    if name not in order:
        order.append(name)
        for old in order[:-MAX_RUNS]:
            store.hdel(key, old)
        order = order[-MAX_RUNS:]
        store.hset(key, {name: base64.b64encode(bytes(blob)).decode("ascii"), "order": ",".join(order)})
    store.expire(key, TTL)
    _refresh(store, code)
    return name


def get_run(store: Store, code, name) -> bytes | None:
    """The bytes of the run `name` (a digest put_run returned) beside room `code`; None if the room no longer keeps
    it (or `name` is not a digest). Anyone in the room may read it: it is what the class is shown."""
    code = _code(code)
    if not isinstance(name, str) or not RUN_DIGEST.fullmatch(name):
        return None
    text = store.hget(_key(code, "runs"), name)
    if text is None:
        return None
    try:
        blob = base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError):
        return None
    return blob if run_digest(blob) == name else None


def end_room(store: Store, code, secret) -> None:
    """The teacher ends the room for everyone: its keys expire now, so its code opens nothing and each following
    screen is told on its next read (NoRoom)."""
    code = _code(code)
    room = _teacher(store, code, secret)
    store.expire(_key(code, "runs"), 0)          # the teacher's runs beside the room (put_run) go too
    polls = int(room.get("polls", "0") or 0)
    for key in [_key(code, part) for part in MEMBER_KEYS + ("log",)] + [
            _key(code, kind, f"p{n}") for n in range(1, polls + 1) for kind in POLL_KEYS] + [
            _key(code)]:
        store.expire(key, 0)


def is_teacher(store: Store, code, secret) -> bool:
    """Whether `secret` is the teacher's of room `code` (a reclaimed session): NoRoom if there is no such room."""
    code = _code(code)
    return same_secret(secret, _room(store, code).get("secret", ""))
