"""A quiz question, how a typed answer is read (a shape, a sign, a number, yes/no, a choice) and how it is graded.

    >>> parse_shape("(4, 6)"), parse_sign("goes up"), parse_number("1/2"), parse_yesno("No")
    ((4, 6), 'positive', 0.5, False)

A Question carries its own expected answer, so grading needs no trace.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

MAX_ANSWER = 200                 # characters of an answer that are read


@dataclass(frozen=True)
class Question:
    id: str                      # stable within a trace: "shape:q", "attends:weights:1,2"
    kind: str                    # shape | choice | sign | number | yesno
    prompt: str                  # plain text
    answer: str                  # the canonical answer, shown after grading
    expected: object             # normalised: tuple of ints | frozenset of choices | "positive"… | float | bool
    choices: tuple[str, ...] = ()      # options to offer (empty: a typed answer)
    tolerance: float = 0.0             # for numbers
    explanation: str = ""              # why, shown with the verdict
    step_key: str = ""                 # the step to show alongside
    cell: tuple[int, ...] = ()
    hint: str = ""                     # how to type the answer
    value: float | None = None         # a sign question's number: the derivative whose sign is graded


# ---- normalising answers -------------------------------------------------------------------------------

def _clean(answer) -> str:
    return " ".join(str(answer)[:MAX_ANSWER].replace("−", "-").split()).strip().strip("\"'“”‘’").strip()


def parse_shape(answer) -> tuple[int, ...] | None:
    """'4x6', '(4, 6)', '4 × 6', '[4,6]', 'n=4 × d_k=6' -> (4, 6); None if no number is there."""
    numbers = re.findall(r"\d+", _clean(answer))
    return tuple(int(x) for x in numbers) if numbers else None


_SIGNS = {"positive": ("positive", "pos", "+", ">0", "> 0", "plus", "greater than zero", "above zero",
                       "up", "goes up", "up (positive)", "increase", "increases", "rises", "grows"),
          "negative": ("negative", "neg", "-", "<0", "< 0", "minus", "less than zero", "below zero",
                       "down", "goes down", "down (negative)", "decrease", "decreases", "falls", "shrinks"),
          "zero": ("zero", "0", "=0", "= 0", "0.0", "none", "neither",
                   "stay", "stays", "stay (zero)", "unchanged", "no change", "stays the same")}


def parse_sign(answer) -> str | None:
    a = _clean(answer).lower()
    return next((sign for sign, words in _SIGNS.items() if a in words), None)


def parse_number(answer) -> float | None:
    """'0.5', '.5', '-1e-3', '1/2', '50%' -> float; None when it is not a number (nothing is evaluated)."""
    a = _clean(answer)
    if re.fullmatch(r"[-+]?\d+,\d+", a):                               # a decimal comma: 0,5
        a = a.replace(",", ".")
    number = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
    if m := re.fullmatch(rf"({number})\s*/\s*({number})", a):
        top, bottom = float(m.group(1)), float(m.group(2))
        return top / bottom if bottom else None
    if m := re.fullmatch(rf"({number})\s*%", a):
        return float(m.group(1)) / 100
    if re.fullmatch(number, a):
        v = float(a)
        return v if math.isfinite(v) else None
    return None


def parse_yesno(answer) -> bool | None:
    a = _clean(answer).lower()
    return True if a in ("yes", "y", "true", "1") else False if a in ("no", "n", "false", "0") else None


def _norm_choice(answer) -> str:
    return _clean(answer).casefold()


# ---- grading -------------------------------------------------------------------------------------------

_READERS = {"shape": (parse_shape, "a shape"), "sign": (parse_sign, "a sign"), "number": (parse_number, "a number"),
            "yesno": (parse_yesno, "yes or no"), "choice": (lambda a: _norm_choice(a) or None, "one of the choices")}


def readable(question: Question, answer) -> bool:
    """Whether the answer can be read as the question's kind of answer (a page asks again if not)."""
    if question.kind not in _READERS:
        raise ValueError(f"unknown question kind {question.kind!r}")
    return _READERS[question.kind][0](answer) is not None


def grade(question: Question, answer) -> tuple[bool, str]:
    """(correct, feedback). An answer that cannot be read is wrong, and the feedback says how to type it."""
    q = question
    if not readable(q, answer):
        return False, f"That could not be read as {_READERS[q.kind][1]}. {q.hint}".strip()
    got = _READERS[q.kind][0](answer)
    ok = (got == tuple(q.expected) if q.kind == "shape" else
          abs(got - float(q.expected)) <= q.tolerance if q.kind == "number" else
          got in q.expected if q.kind == "choice" else got == q.expected)
    if ok:
        return True, f"Correct: {q.answer}. {q.explanation}".strip()
    return False, f"Not quite: the answer is {q.answer}. {q.explanation}".strip()
