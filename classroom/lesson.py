"""A lesson: a title and its stops. A stop is a view (a page and its link's settings: the sidebar's, the
page's own controls, the open tab, a highlighted cell), what to ask the class, a poll from the question bank
computed on that view's settings (or none), what pins the poll to the stop's own question (`poll_at`, read by
the question bank's make_poll), the numbers that answer it, hidden on students' screens until the reveal (`hide`),
and a note only the teacher sees.

A `hide` entry names a step of the stop's view, "<step key>" (the whole step, every head), or one cell of it,
"<step key>:<head or None>.<i>.<j>" (None for a step without a head axis): "scaled_scores:None.0.1"; a view a
page derives from its trace (trace.view, key "view:<name>") is named by its name alone ("cosine_tokens").
parse_hide reads one; the grammar is classroom.push's (a view's "hide").

A reveal gives away only its own stop (`hidden_at`): stops that show the same view (`same_view`: the page and its
settings, whatever the cell or the tab) share numbers, so stop i's predict state hides its own `hide` and what each
later stop of the same view not yet revealed hides, and its reveal shows its own answer and keeps those later
stops' numbers hidden until their own reveal; the last stop's reveal (nothing later) shows everything.

A lesson is saved as a JSON file and shared as a link (`lesson=` and the JSON, deflated and base64url'd);
reading either never raises anything but LessonError, whose message says what is wrong. The lessons that
ship with the app are classroom/lessons/*.json.

A lesson may carry a check (`"check"`: a list of questions), asked before its first stop ("pre") and again after its
last ("post"), so the room can say what the class learned (classroom/results.py: each question's share of right
answers before and after, the normalised gain). A check question is either a question of the bank computed on a
view's settings, as a stop's poll is (`page`, `query`, `poll`, `poll_at`), or the teacher's own (`prompt`, 2 to 6
`choices`, the index of the right one as `answer`; classroom/questions.py checks it):

    >>> lesson = from_dict({"title": "T", "stops": [{"title": "S"}], "check": [
    ...     {"page": "scores", "query": {"d_k": "4"}, "poll": "scaled_score", "poll_at": {"row": "0", "col": "1"}},
    ...     {"prompt": "Which row sums to 1?", "choices": ["a row of A", "a column of A"], "answer": 0}]})
    >>> [(q.poll or "own", q.prompt) for q in lesson.check]
    [('scaled_score', ''), ('own', 'Which row sums to 1?')]
    >>> from_dict({"title": "T", "stops": [{"title": "S"}], "check": [{"prompt": "?", "choices": ["a"], "answer": 0}]})
    Traceback (most recent call last):
    ...
    classroom.lesson.LessonError: Check question 1: give 2 to 6 “choices” (this one has 1).

    >>> stop = Stop("Scores", "scores", {"d_k": "8"}, ask="Which word does 'love' score highest?", note="Wait.")
    >>> lesson = Lesson("Tiny", "One stop.", (stop,))
    >>> from_json(to_json(lesson)) == lesson, from_link(to_link(lesson)) == lesson
    (True, True)
    >>> sorted(shipped())
    ['forward_pass', 'inside_a_transformer', 'todays_attention']
    >>> parse_hide("scaled_scores:None.0.1"), parse_hide("weights:2.1.3"), parse_hide("cosine_tokens")
    (('scaled_scores', (None, 0, 1)), ('weights', (2, 1, 3)), ('cosine_tokens', None))

    >>> a, b = Stop("A", "scores", {"cell": "hm:x.0.1"}, hide=("weights:None.0.1", "context")), Stop("B", "scores", hide=("context",))
    >>> two = Lesson("Two", "", (a, b))
    >>> hidden_at(two, 0, "predict"), hidden_at(two, 0, "revealed")
    (Hiding(hide=('weights:None.0.1', 'context'), waiting=(1,), shown_too=()), Hiding(hide=('context',), waiting=(1,), shown_too=()))
    >>> hidden_at(two, 0, "revealed", revealed={1}).hide, hidden_at(two, 1, "revealed").hide
    ((), ())
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
MAX_CHECK = 10                         # questions in a lesson's check
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


def same_view(a: Stop, b: Stop) -> bool:
    """Whether two stops show the same numbers: the same page and settings, whatever cell is opened or tab is open
    (a student can open another tab, and the numbers there are the same)."""
    def settings(stop: Stop) -> dict:
        return {k: v for k, v in stop.query.items() if k != "cell" and not k.endswith(".tab")}
    return a.page == b.page and settings(a) == settings(b)


@dataclass(frozen=True)
class Hiding:
    """What a stop's view hides on the students' screens (`hide`, classroom.push's grammar), which later stops of
    the same view keep their numbers hidden by it (`waiting`, indices), and which of them have a number in
    common with the stop's own answer, shown by its reveal (`shown_too`: the lesson hides the same number twice)."""
    hide: tuple[str, ...]
    waiting: tuple[int, ...]
    shown_too: tuple[int, ...] = ()


def _overlap(a: str, b: str) -> bool:
    """Whether two hide entries hide a number in common: the same step, and one of them whole or the same cell."""
    pa, pb = parse_hide(a.removeprefix("view:")), parse_hide(b.removeprefix("view:"))
    return bool(pa and pb) and pa[0] == pb[0] and (pa[1] is None or pb[1] is None or pa[1] == pb[1])


def hidden_at(lesson: Lesson, i: int, stage: str, revealed=()) -> Hiding:
    """Stop i's hidden numbers when it is shown to predict (stage "predict") or revealed ("revealed"), the stops of
    `revealed` (indices) already revealed in this room. A later stop of the same view (`same_view`) not yet revealed
    keeps its `hide` hidden either way; to predict, the stop's own `hide` is hidden too; revealed, its own answer
    (its entries that no such later stop names) is shown, a later entry that would hide one of its numbers too
    (that later stop is then in `shown_too`)."""
    stop = lesson.stops[i]
    later = [j for j in range(i + 1, len(lesson.stops))
             if j not in set(revealed) and lesson.stops[j].hide and same_view(stop, lesson.stops[j])]
    kept = {h: j for j in reversed(later) for h in lesson.stops[j].hide}      # each entry: the first stop hiding it
    if stage == "predict":
        return Hiding(tuple(dict.fromkeys((*stop.hide, *sorted(kept, key=lambda h: (kept[h], h))))), tuple(later))
    own = [h for h in stop.hide if h not in kept]
    shown = {h for h in kept if any(_overlap(h, o) for o in own)}
    hide = tuple(sorted((h for h in kept if h not in shown), key=lambda h: (kept[h], h)))
    return Hiding(hide, tuple(j for j in later if set(lesson.stops[j].hide) - shown),
                  tuple(sorted({kept[h] for h in shown})))


@dataclass(frozen=True)
class Check:
    """One question of a lesson's check: the bank's (`poll` computed on the view `page` + `query`, pinned by
    `poll_at`) or the teacher's own (`prompt`, `choices`, `answer`)."""
    page: str = ""
    query: dict = field(default_factory=dict)
    poll: str = ""
    poll_at: dict = field(default_factory=dict)
    prompt: str = ""
    choices: tuple[str, ...] = ()
    answer: int | None = None

    def __hash__(self):
        return hash((self.page, tuple(sorted(self.query.items())), self.poll, tuple(sorted(self.poll_at.items())),
                     self.prompt, self.choices, self.answer))

    @property
    def own(self) -> bool:
        return not self.poll


@dataclass(frozen=True)
class Lesson:
    title: str
    about: str
    stops: tuple[Stop, ...]
    check: tuple[Check, ...] = ()


def to_dict(lesson: Lesson) -> dict:
    return {"title": lesson.title, "about": lesson.about,
            "stops": [{"title": s.title, "page": s.page, "query": dict(s.query), "ask": s.ask, "poll": s.poll,
                       "poll_at": dict(s.poll_at), "hide": list(s.hide), "note": s.note} for s in lesson.stops],
            **({"check": [check_dict(q) for q in lesson.check]} if lesson.check else {})}


def check_dict(q: Check) -> dict:
    if q.own:
        return {"prompt": q.prompt, "choices": list(q.choices), "answer": q.answer}
    return {"page": q.page, "query": dict(q.query), "poll": q.poll, "poll_at": dict(q.poll_at)}


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
    out = []
    for where, s in _objects(stops, MAX_STOPS, "A lesson has at most {most} stops", "Stop"):
        out.append(Stop(_text(s, "title", where, True), _text(s, "page", where), _query(s, where),
                        _text(s, "ask", where), _text(s, "poll", where), _text(s, "note", where), _poll_at(s, where),
                        _hide(s, where)))
    return Lesson(_text(d, "title", "The lesson", True), _text(d, "about", "The lesson"), tuple(out),
                  _check(d))


def _query(s: dict, where: str) -> dict:
    query = s.get("query", {})
    if not isinstance(query, dict) or not all(isinstance(k, str) and isinstance(v, (str, int, float))
                                              for k, v in query.items()):
        raise LessonError(f"{where}: “query” must map parameter names to values.")
    return {k: str(v) for k, v in query.items()}


def _objects(items: list, most: int, too_many: str, name: str):
    """(where, item) for each item of a lesson's list (its stops, its check), numbered from 1 in `where`; a
    LessonError for too many items or one that is not an object."""
    if len(items) > most:
        raise LessonError(too_many.format(most=most) + f"; this one has {len(items)}.")
    for n, item in enumerate(items, start=1):
        if not isinstance(item, dict):
            raise LessonError(f"{name} {n} is not an object.")
        yield f"{name} {n}", item


def _check(d: dict) -> tuple[Check, ...]:
    """The lesson's check: a list of at most MAX_CHECK questions, each the bank's or the teacher's own."""
    from .questions import MAX_OWN, MIN_OWN, choices_of, problem
    items = d.get("check", [])
    if not isinstance(items, list):
        raise LessonError("The lesson's “check” must be a list of questions.")
    out = []
    for where, q in _objects(items, MAX_CHECK, "A lesson's check has at most {most} questions", "Check question"):
        bank, own = bool(q.get("poll")), any(k in q for k in ("prompt", "choices", "answer"))
        if bank == own:
            raise LessonError(f"{where}: give either a question of the bank (“page”, “query”, “poll”, “poll_at”) or "
                              "your own (“prompt”, “choices”, “answer”)" + (", not both." if bank else "."))
        if bank:
            out.append(Check(_text(q, "page", where), _query(q, where), _text(q, "poll", where, True),
                             _poll_at(q, where)))
            continue
        prompt, choices, answer = q.get("prompt"), q.get("choices"), q.get("answer")
        if not isinstance(choices, list) or not all(isinstance(c, str) for c in choices):
            raise LessonError(f"{where}: “choices” must be a list of texts, e.g. [\"yes\", \"no\"].")
        if len(choices_of(choices)) != len(choices):            # first: an empty choice would change the count
            raise LessonError(f"{where}: a choice is empty: write it or remove it.")
        if not MIN_OWN <= len(choices) <= MAX_OWN:
            raise LessonError(f"{where}: give {MIN_OWN} to {MAX_OWN} “choices” (this one has {len(choices)}).")
        if isinstance(answer, bool) or not isinstance(answer, int) or not 0 <= answer < len(choices):
            raise LessonError(f"{where}: “answer” must be the place of the right choice in “choices”, counted from "
                              f"0: 0 to {len(choices) - 1} here" + ("" if answer is None else
                                                                  f" (it is {json.dumps(answer, default=str)[:20]})") + ".")
        wrong = problem(prompt, choices, answer)                # the question's text, a long or repeated choice
        if wrong:
            raise LessonError(f"{where}: {wrong}")
        out.append(Check(prompt=_text(q, "prompt", where, True), choices=tuple(choices_of(choices)), answer=answer))
    return tuple(out)


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
