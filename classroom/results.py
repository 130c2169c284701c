"""What the class learned, from the room's log of every question asked (room:<code>:log) and its answers: each
question's share of right answers, a lesson's check before and after with the class's normalised gain, the
responses as CSV (for the teacher) and a one-page summary without names (for the projector or a report).

The gain is Hake's (1998): ⟨g⟩ = (post − pre) / (100 − pre), pre and post the class's average percentage of right
answers on the check before and after the lesson, over the students who answered every question of the check both
times (a student who missed one is left out of both averages, so the two are the same students); while the check after
the lesson is under way, over the questions asked both times so far (the sentence names them). pre = 100 leaves
nothing to gain: ⟨g⟩ is undefined, never a division by zero.

    >>> from classroom.store import MemoryStore
    >>> from classroom.room import open_room, join, open_poll, answer, close_poll
    >>> s = MemoryStore()
    >>> code, secret = open_room(s, "Period 3")
    >>> ana, ben = join(s, code, "Ana"), join(s, code, "=Ben")
    >>> q = {"prompt": "2 + 2?", "choices": ["3", "4"], "answer": 1}
    >>> for phase, picks in (("pre", (1, 0)), ("post", (1, 1))):
    ...     p = open_poll(s, code, secret, {**q, "phase": phase, "check": 0})
    ...     answer(s, code, ana, p, picks[0]); answer(s, code, ben, p, picks[1])
    >>> g = gain(s, code, secret)
    >>> (g.pre, g.post, g.g, g.students), g.questions[0].before, g.questions[0].after
    ((50.0, 100.0, 1.0, 2), (1, 2), (2, 2))
    >>> print(csv_text(responses(s, code, secret)).replace(chr(13), ""))  # doctest: +ELLIPSIS
    nickname,phase,question,answer,right,seconds
    '=Ben,pre,2 + 2?,A. 3,no,...
    Ana,pre,2 + 2?,B. 4,yes,...
    '=Ben,post,2 + 2?,B. 4,yes,...
    Ana,post,2 + 2?,B. 4,yes,...
    <BLANKLINE>
"""
from __future__ import annotations

import csv
import html
import io
import json
from dataclasses import dataclass

from .room import _code, _key, _teacher

LETTERS = "ABCDEFGH"
LEFT = "(left the room)"              # a student who left or was removed: their answers stay, without a name


@dataclass(frozen=True)
class Asked:
    """One question the room asked, with its answers (member id -> choice index) and their seconds."""
    id: str
    prompt: str
    choices: tuple[str, ...]
    answer: int
    phase: str                        # "pre", "post" or "poll"
    check: int | None                 # the question's place in the lesson's check (pre and post share it)
    answers: dict
    seconds: dict

    def right(self) -> int:
        return sum(a == self.answer for a in self.answers.values())


@dataclass(frozen=True)
class CheckQuestion:
    number: int                       # 0-based place in the check
    prompt: str
    before: tuple[int, int] | None    # (right, answered) in the check before the lesson; None: not asked
    after: tuple[int, int] | None


@dataclass(frozen=True)
class Gain:
    questions: tuple[CheckQuestion, ...]
    students: int                     # who answered every question of the check before and after
    pre: float | None                 # their average % right before; None with no such student
    post: float | None
    g: float | None                   # (post − pre) / (100 − pre); None when undefined (pre = 100, or no student)
    over: tuple[int, ...] = ()        # the rows of `questions` asked both times: the gain's questions


def _int(text) -> int | None:
    return int(text) if isinstance(text, str) and text.isdigit() else None


def asked(store, code, secret) -> list[Asked]:
    """Every question asked in the room, in the order asked, with its answers. The teacher's secret only."""
    code = _code(code)
    _teacher(store, code, secret)
    log = store.hgetall(_key(code, "log"))
    out = []
    for poll_id in sorted(log, key=lambda p: _int(p[1:]) or 0):
        try:
            poll = json.loads(log[poll_id])
        except ValueError:
            continue
        answers = {m: _int(v) for m, v in store.hgetall(_key(code, "answers", poll_id)).items()}
        answers = {m: a for m, a in answers.items() if a is not None and a < len(poll.get("choices", ()))}
        times = store.hgetall(_key(code, "times", poll_id))
        check = poll.get("check")
        out.append(Asked(poll_id, str(poll.get("prompt", "")), tuple(map(str, poll.get("choices", ()))),
                         int(poll.get("answer", 0)), poll.get("phase", "poll") if poll.get("phase") in ("pre", "post")
                         else "poll", check if isinstance(check, int) and not isinstance(check, bool) else None,
                         answers, {m: times.get(m, "") for m in answers}))
    return out


def gain(store, code, secret, questions: list[Asked] | None = None) -> Gain:
    """The check before and after: each question's (right, answered) both times, and the class's ⟨g⟩ over the
    students who answered every question both times. A question asked twice in a phase counts as last asked.
    Before and after are paired by the question itself (its place in the check, prompt, choices and right one), not
    by its place alone: another lesson's check in the same room is another question, never this one's "before"."""
    questions = asked(store, code, secret) if questions is None else questions
    last: dict[tuple[str, tuple], Asked] = {}
    keys: list[tuple] = []                                # each check question once, in the order first asked
    for q in questions:
        if q.phase in ("pre", "post") and q.check is not None:
            key = (q.check, q.prompt, q.choices, q.answer)
            last[(q.phase, key)] = q
            if key not in keys:
                keys.append(key)
    rows = tuple(CheckQuestion(k[0], k[1], *[(q.right(), len(q.answers)) if q else None
                                             for q in (last.get(("pre", k)), last.get(("post", k)))]) for k in keys)
    both = [k for k in keys if ("pre", k) in last and ("post", k) in last]
    over = tuple(keys.index(k) for k in both)
    if not both:
        return Gain(rows, 0, None, None, None)
    students = set.intersection(*[set(last[(phase, k)].answers) for k in both for phase in ("pre", "post")])
    if not students:
        return Gain(rows, 0, None, None, None, over)
    total = len(students) * len(both)
    pre, post = (100.0 * sum(last[(phase, k)].answers[m] == last[(phase, k)].answer for k in both for m in students)
                 / total for phase in ("pre", "post"))
    return Gain(rows, len(students), pre, post, None if pre >= 100.0 else (post - pre) / (100.0 - pre), over)


def _numbers(rows, everyone=()) -> str:
    """'question 2', 'questions 1 and 3', 'questions 1, 2 and 4' (counted from 1, as the room shows them); a number
    two check questions share (two lessons' checks in one room) comes with its question's words."""
    taken = [q.number for q in everyone or rows]
    words = [str(q.number + 1) + (f" (“{q.prompt[:40]}”)" if taken.count(q.number) > 1 else "") for q in rows]
    return ("question " if len(words) == 1 else "questions ") + (
        words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1])


def gain_words(g: Gain) -> str:
    """The gain in a sentence, with its arithmetic and how many students it is over.

        >>> gain_words(Gain((), 2, 25.0, 75.0, 2 / 3))
        '⟨g⟩ = (post − pre) / (100 − pre) = (75 − 25) / (100 − 25) = 0.67, over the 2 students who answered every question of the check before and after.'
        >>> gain_words(Gain((), 3, 100 / 3, 200 / 3, 0.5))[:63]
        '⟨g⟩ = (post − pre) / (100 − pre) = (66.7 − 33.3) / (100 − 33.3)'
        >>> gain_words(Gain((), 3, 100.0, 100.0, None))[:64]
        '⟨g⟩ is undefined: before the lesson, the 3 students who answered'
        >>> gain_words(Gain((), 2, 50.0, 25.0, -0.5))
        '⟨g⟩ = (post − pre) / (100 − pre) = (25 − 50) / (100 − 50) = −0.50, over the 2 students who answered every question of the check before and after.'

    While the check after the lesson is under way, the gain is over the questions asked both times, and says so:

        >>> qs = (CheckQuestion(0, "Q1", (0, 2), (2, 2)), CheckQuestion(1, "Q2", (1, 2), None))
        >>> gain_words(Gain(qs, 2, 0.0, 100.0, 1.0, (0,))).split("= 1.00, ")[1]
        'over the 2 students who answered question 1 of the check before and after (question 2 was not asked both times: it is left out).'
    """
    rows = set(g.over) if g.over else set(range(len(g.questions)))
    missing = [q for i, q in enumerate(g.questions) if i not in rows]
    which = f"{_numbers([q for i, q in enumerate(g.questions) if i in rows], g.questions)} of the check" \
        if missing else "every question of the check"
    who = f"the {g.students} student{'s' if g.students != 1 else ''} who answered {which} before and after"
    out = f" ({_numbers(missing, g.questions)} {'was' if len(missing) == 1 else 'were'} not asked both times: " \
          f"{'it is' if len(missing) == 1 else 'they are'} left out)" if missing else ""
    if not g.students:
        return (f"⟨g⟩ needs the same students before and after: no student has answered {which} both times "
                f"yet{out}.")
    if g.g is None:
        return (f"⟨g⟩ is undefined: before the lesson, {who} got every answer right (pre = 100%), so there was "
                f"nothing left to gain{out}.")
    post, pre = (f"{x:.1f}".removesuffix(".0") for x in (g.post, g.pre))      # 75, 33.3: as the arithmetic is
    value = f"{g.g:.2f}".replace("-", "−")                                 # the formula's minus sign
    return (f"⟨g⟩ = (post − pre) / (100 − pre) = ({post} − {pre}) / (100 − {pre}) = {value}, "
            f"over {who}{out}.")


def responses(store, code, secret, questions: list[Asked] | None = None) -> list[dict]:
    """One row per answer: nickname (LEFT for a student no longer in the room), phase, question, answer, right
    ("yes" or "no"), seconds from the question's opening. For the teacher's download only."""
    code = _code(code)
    questions = asked(store, code, secret) if questions is None else questions
    names = store.hgetall(_key(code, "members"))
    rows = []
    for q in questions:
        for member, a in sorted(q.answers.items(), key=lambda ma: (ma[0] not in names, names.get(ma[0], "").casefold(), ma[0])):
            rows.append({"nickname": names.get(member, LEFT), "phase": q.phase, "question": q.prompt,
                         "answer": f"{LETTERS[a]}. {q.choices[a]}", "right": "yes" if a == q.answer else "no",
                         "seconds": q.seconds.get(member, "")})
    return rows


def _cell(text) -> str:
    """A spreadsheet must not run a nickname as a formula (=, +, -, @ first): a leading apostrophe keeps it text."""
    text = str(text)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def csv_text(rows: list[dict]) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["nickname", "phase", "question", "answer", "right", "seconds"])
    for r in rows:
        writer.writerow([_cell(r[k]) for k in ("nickname", "phase", "question", "answer", "right", "seconds")])
    return out.getvalue()


PHASE_WORDS = {"pre": "check before the lesson", "post": "check after the lesson", "poll": "class question"}


def share(right: int, answered: int) -> str:
    """'3 of 4 right (75%)'; '0 answered'."""
    return f"{right} of {answered} right ({100 * right / answered:.0f}%)" if answered else "0 answered"


def summary_html(title: str, questions: list[Asked], g: Gain) -> str:
    """The lesson on one printable page: each question (as text), its choices with how many chose each, the share
    right; the check's shares before and after and ⟨g⟩. Counts only: no names, safe for a projector; a question of
    the check before the lesson has its right choice marked only once the check after has asked it (the students
    were told its answer is not shown until then)."""
    e = html.escape
    parts = [f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{e(title)}</title>"
             "<style>body{font:15px/1.45 system-ui,sans-serif;max-width:46em;margin:2em auto;color:#111}"
             "table{border-collapse:collapse;margin:.4em 0 1.2em}td,th{border:1px solid #888;padding:.2em .6em;"
             "text-align:left}h2{font-size:1.1em;margin-top:1.4em}@media print{body{margin:0}}</style></head><body>",
             f"<h1>{e(title)}</h1>"]
    if g.questions:
        parts.append("<h2>The check, before and after the lesson</h2><table><tr><th>Question</th><th>Before</th>"
                     "<th>After</th></tr>")
        for q in g.questions:
            parts.append(f"<tr><td>{q.number + 1}. {e(q.prompt)}</td><td>{share(*q.before) if q.before else '—'}</td>"
                         f"<td>{share(*q.after) if q.after else '—'}</td></tr>")
        parts.append(f"</table><p>{e(gain_words(g))}</p>")
    parts.append("<h2>Every question asked</h2>")
    same = lambda q: (q.check, q.prompt, q.choices, q.answer)                      # as gain() pairs them
    after = {same(q) for q in questions if q.phase == "post"}
    for n, q in enumerate(questions, start=1):
        counts = [sum(a == i for a in q.answers.values()) for i in range(len(q.choices))]
        hidden = q.phase == "pre" and same(q) not in after      # its answer is not shown before the check after
        parts.append(f"<p><b>{n}. {e(q.prompt)}</b> ({PHASE_WORDS[q.phase]}) · {share(q.right(), len(q.answers))}"
                     + (" · the right choice is marked once the check after the lesson has asked it" if hidden else "")
                     + "</p><table><tr><th>Choice</th><th>Students</th></tr>" + "".join(
                         f"<tr><td>{LETTERS[i]}. {e(c)}{' ✓ right' if i == q.answer and not hidden else ''}</td>"
                         f"<td>{counts[i]}</td></tr>" for i, c in enumerate(q.choices)) + "</table>")
    if not questions:
        parts.append("<p>No question has been asked in this room yet.</p>")
    return "".join(parts) + "</body></html>\n"
