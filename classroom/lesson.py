"""A lesson: a title and its stops. A stop is a view (a page and its link's settings: the sidebar's, the
page's own controls, the open tab, a highlighted cell), what to ask the class, a poll from the question bank
computed on that view's settings (or none), what pins the poll to the stop's own question (`poll_at`, read by
the question bank's make_poll), the numbers that answer it, hidden on students' screens until the reveal (`hide`),
and a note only the teacher sees.

A `hide` entry names a step of the stop's view, "<step key>" (the whole step, every head), or one cell of it,
"<step key>:<head or None>.<i>.<j>" (None for a step without a head axis): "scaled_scores:None.0.1"; a view a
page derives from its trace (trace.view, key "view:<name>") is named by its name alone ("cosine_tokens").
parse_hide reads one; the grammar is classroom.push's (a view's "hide").

A lesson is saved as a JSON file and shared as a link (`lesson=` and the JSON, deflated and base64url'd);
reading either never raises anything but LessonError, whose message says what is wrong. The lessons that
ship with the app are classroom/lessons/*.json.

    >>> stop = Stop("Scores", "scores", {"d_k": "8"}, ask="Which word does 'love' score highest?", note="Wait.")
    >>> lesson = Lesson("Tiny", "One stop.", (stop,))
    >>> from_json(to_json(lesson)) == lesson, from_link(to_link(lesson)) == lesson
    (True, True)
    >>> sorted(shipped())
    ['forward_pass', 'inside_a_transformer', 'todays_attention']
    >>> parse_hide("scaled_scores:None.0.1"), parse_hide("weights:2.1.3"), parse_hide("cosine_tokens")
    (('scaled_scores', (None, 0, 1)), ('weights', (2, 1, 3)), ('cosine_tokens', None))
"""
from __future__ import annotations

import base64
import binascii
import json
import re
import zlib
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent / "lessons"
MAX_STOPS = 40
MAX_TEXT = 2000
MAX_BYTES = 200_000
MAX_PINS, MAX_PIN = 16, 80             # poll_at: entries, characters of a key or a value
MAX_HIDE, MAX_HIDE_TEXT = 64, 80       # hide: entries, characters of one
STEP_KEY = r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)*"   # a step's key ("weights", the block's "l0.mid"); a view's without "view:"
HIDE_CELL = re.compile(rf"({STEP_KEY}):(None|\d{{1,4}})\.(\d{{1,5}})\.(\d{{1,5}})")
HIDE_STEP = re.compile(STEP_KEY)


class LessonError(ValueError):
    """What is wrong with a lesson file or link, in words."""


@dataclass(frozen=True)
class Stop:
    title: str
    page: str                                   # the page's URL path: "" (the Overview), "qkv", "rope", ...
    query: dict = field(default_factory=dict)   # the link's parameters, as text
    ask: str = ""                               # the question to put to the class
    poll: str = ""                              # a poll kind of the question bank, or ""
    note: str = ""                              # for the teacher's eyes only
    poll_at: dict = field(default_factory=dict)  # what pins the poll to this question, text -> text: {"row": "0"}
    hide: tuple[str, ...] = ()                  # the steps or cells that answer it, hidden until the reveal

    def __hash__(self):
        return hash((self.title, self.page, tuple(sorted(self.query.items())), self.ask, self.poll, self.note,
                     tuple(sorted(self.poll_at.items())), self.hide))


def parse_hide(entry: str) -> tuple[str, tuple[int | None, int, int] | None] | None:
    """'weights:None.1.3' -> ('weights', (None, 1, 3)); 'weights' -> ('weights', None) (the whole step, every head);
    None for text that names neither."""
    if not isinstance(entry, str) or len(entry) > MAX_HIDE_TEXT:
        return None
    cell = HIDE_CELL.fullmatch(entry)
    if cell:
        step, head, i, j = cell.groups()
        return step, (None if head == "None" else int(head), int(i), int(j))
    return (entry, None) if HIDE_STEP.fullmatch(entry) else None


@dataclass(frozen=True)
class Lesson:
    title: str
    about: str
    stops: tuple[Stop, ...]


def to_dict(lesson: Lesson) -> dict:
    return {"title": lesson.title, "about": lesson.about,
            "stops": [{"title": s.title, "page": s.page, "query": dict(s.query), "ask": s.ask, "poll": s.poll,
                       "poll_at": dict(s.poll_at), "hide": list(s.hide), "note": s.note} for s in lesson.stops]}


def to_json(lesson: Lesson) -> str:
    return json.dumps(to_dict(lesson), indent=2, ensure_ascii=False) + "\n"


def _text(d: dict, name: str, where: str, required: bool = False) -> str:
    value = d.get(name, "")
    if not isinstance(value, str):
        raise LessonError(f"{where}: “{name}” must be text.")
    if required and not value.strip():
        raise LessonError(f"{where}: “{name}” is missing.")
    if len(value) > MAX_TEXT:
        raise LessonError(f"{where}: “{name}” is longer than {MAX_TEXT} characters.")
    return value


def _poll_at(s: dict, where: str) -> dict:
    pins = s.get("poll_at", {})
    if not isinstance(pins, dict) or not all(isinstance(k, str) and isinstance(v, (str, int)) and not isinstance(v, bool)
                                             for k, v in pins.items()):
        raise LessonError(f"{where}: “poll_at” must map names to values, e.g. {{\"row\": \"0\", \"col\": \"1\"}}.")
    if len(pins) > MAX_PINS:
        raise LessonError(f"{where}: “poll_at” has at most {MAX_PINS} entries; this one has {len(pins)}.")
    pins = {k: str(v) for k, v in pins.items()}
    if any(not k.strip() or len(k) > MAX_PIN or len(v) > MAX_PIN for k, v in pins.items()):
        raise LessonError(f"{where}: a name or value of “poll_at” is empty or longer than {MAX_PIN} characters.")
    if pins and not _text(s, "poll", where):
        raise LessonError(f"{where}: “poll_at” pins a poll, but the stop has no “poll”.")
    return pins


def _hide(s: dict, where: str) -> tuple[str, ...]:
    hide = s.get("hide", [])
    if not isinstance(hide, list) or not all(isinstance(h, str) for h in hide):
        raise LessonError(f"{where}: “hide” must be a list of steps or cells, e.g. [\"weights:None.1.3\"].")
    if len(hide) > MAX_HIDE:
        raise LessonError(f"{where}: “hide” has at most {MAX_HIDE} entries; this one has {len(hide)}.")
    for h in hide:
        if parse_hide(h) is None:
            shown = h if len(h) <= MAX_HIDE_TEXT else h[:MAX_HIDE_TEXT] + "…"
            raise LessonError(f"{where}: “hide” entry “{shown}” is neither a step (“weights”) nor a cell of one "
                              f"(“weights:None.1.3”: the step, the head or None, the row, the column).")
    return tuple(hide)


def from_dict(d) -> Lesson:
    if not isinstance(d, dict):
        raise LessonError("A lesson is an object with a title and a list of stops.")
    stops = d.get("stops")
    if not isinstance(stops, list) or not stops:
        raise LessonError("A lesson needs at least one stop.")
    if len(stops) > MAX_STOPS:
        raise LessonError(f"A lesson has at most {MAX_STOPS} stops; this one has {len(stops)}.")
    out = []
    for n, s in enumerate(stops, start=1):
        where = f"Stop {n}"
        if not isinstance(s, dict):
            raise LessonError(f"{where} is not an object.")
        query = s.get("query", {})
        if not isinstance(query, dict) or not all(isinstance(k, str) and isinstance(v, (str, int, float))
                                                  for k, v in query.items()):
            raise LessonError(f"{where}: “query” must map parameter names to values.")
        out.append(Stop(_text(s, "title", where, True), _text(s, "page", where), {k: str(v) for k, v in query.items()},
                        _text(s, "ask", where), _text(s, "poll", where), _text(s, "note", where), _poll_at(s, where),
                        _hide(s, where)))
    return Lesson(_text(d, "title", "The lesson", True), _text(d, "about", "The lesson"), tuple(out))


def from_json(text) -> Lesson:
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError:
            raise LessonError("This file is not text (a lesson is a .json file saved from the Lessons page).") from None
    if len(text) > MAX_BYTES:
        raise LessonError(f"This file is larger than a lesson can be ({MAX_BYTES // 1000} kB).")
    try:
        d = json.loads(text)
    except json.JSONDecodeError as err:
        raise LessonError(f"This is not a lesson file: not valid JSON ({err.msg}, line {err.lineno}).") from None
    return from_dict(d)


def to_link(lesson: Lesson) -> str:
    """The lesson as one URL parameter's value."""
    raw = json.dumps(to_dict(lesson), separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    return base64.urlsafe_b64encode(zlib.compress(raw, 9)).decode("ascii").rstrip("=")


def from_link(text) -> Lesson:
    if not isinstance(text, str) or len(text) > MAX_BYTES:
        raise LessonError("This lesson link is not complete: copy it again from the Lessons page.")
    try:
        stream = zlib.decompressobj()
        raw = stream.decompress(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)), MAX_BYTES)
        if not stream.eof:                       # cut short (or larger than a lesson): not the JSON of a lesson
            raise LessonError("This lesson link is not complete: copy it again from the Lessons page.")
        return from_json(raw.decode("utf-8"))
    except (binascii.Error, zlib.error, UnicodeDecodeError, ValueError) as err:
        if isinstance(err, LessonError):
            raise
        raise LessonError("This lesson link is not complete: copy it again from the Lessons page.") from None


def shipped() -> dict[str, Lesson]:
    """The lessons that come with the app, by file name."""
    return {p.stem: from_json(p.read_text(encoding="utf-8")) for p in sorted(HERE.glob("*.json"))}
