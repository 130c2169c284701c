"""The teacher's own question: a multiple-choice question written in the room or in a lesson's check (the question,
2 to 6 choices, the right one), checked here for the room (room.BadMessage) and the lesson file (lesson.LessonError)
alike. Its text is kept as typed (printable characters, spaces collapsed): every screen shows it as text, never as
Markdown or HTML.

    >>> own_poll("What is **2 + 2**?", ["3", " 4 ", ""], 1)["choices"]          # blank lines are not choices
    ['3', '4']
    >>> problem("", ["a", "b"], 0)
    'Write the question first.'
    >>> problem("Which?", ["yes", "Yes"], 0)
    'Two choices read the same (“yes” and “Yes”): make each one different.'
    >>> problem("Which?", ["a", "b", "c"], 5)
    'The right choice is F, but there are only 3 choices: pick one of A to C.'
"""
from __future__ import annotations

from .room import BadMessage, clean_text

MIN_OWN, MAX_OWN = 2, 6               # choices of a teacher's own question
MAX_PROMPT, MAX_CHOICE = 300, 120     # characters
LETTERS = "ABCDEF"
PHASES = ("pre", "post", "poll")      # a check before the lesson, the same after it, or any other question


def choices_of(choices) -> list[str]:
    """The choices as the room keeps them: each cleaned (clean_text), the blank ones left out."""
    if isinstance(choices, str):
        choices = choices.splitlines()
    if not isinstance(choices, (list, tuple)):
        return []
    return [c for c in (clean_text(c, MAX_CHOICE + 1) for c in choices) if c]


def problem(prompt, choices, answer) -> str | None:
    """What is wrong with this question, in words (None: nothing). `choices` as typed (blank ones are dropped),
    `answer` the index of the right one."""
    text = clean_text(prompt, MAX_PROMPT + 1) if isinstance(prompt, str) else ""
    if not text:
        return "Write the question first."
    if len(text) > MAX_PROMPT:
        return f"The question is longer than {MAX_PROMPT} characters: shorten it."
    kept = choices_of(choices)
    if len(kept) < MIN_OWN:
        return f"Write at least {MIN_OWN} choices, one a line (you wrote {len(kept)})."
    if len(kept) > MAX_OWN:
        return f"Write at most {MAX_OWN} choices (you wrote {len(kept)}): a class reads them on a phone."
    long = next((c for c in kept if len(c) > MAX_CHOICE), None)
    if long is not None:
        return f"A choice is longer than {MAX_CHOICE} characters (“{long[:30]}…”): shorten it."
    seen: dict[str, str] = {}
    for c in kept:
        if c.casefold() in seen:
            return f"Two choices read the same (“{seen[c.casefold()]}” and “{c}”): make each one different."
        seen[c.casefold()] = c
    if isinstance(answer, bool) or not isinstance(answer, int):
        return "Pick the right choice."
    if not 0 <= answer < len(kept):
        return (f"The right choice is {LETTERS[answer] if 0 <= answer < len(LETTERS) else answer + 1}, but there are "
                f"only {len(kept)} choices: pick " + ("A or B." if len(kept) == 2 else
                                                      f"one of A to {LETTERS[len(kept) - 1]}."))
    return None


def own_poll(prompt, choices, answer, explanation: str = "") -> dict:
    """The poll a room opens for the teacher's own question (classroom.open_poll's argument); BadMessage with
    problem()'s words when something is wrong."""
    wrong = problem(prompt, choices, answer)
    if wrong:
        raise BadMessage(wrong)
    return {"kind": "own", "prompt": clean_text(prompt, MAX_PROMPT), "choices": choices_of(choices),
            "answer": int(answer), "explanation": clean_text(explanation, MAX_PROMPT)}
