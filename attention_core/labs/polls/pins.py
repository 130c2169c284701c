"""What pins a poll to one question: a lesson stop's `poll_at`, text -> text ({"row": "0", "col": "1"}), read by
each kind's maker. A pin that names no question these settings can ask (a key the kind does not read, a row past
the sentence, a cell whose choices would not differ) makes the maker raise Unfit, and make_poll returns None.

    >>> pin_int({"row": "2"}, "row", 0, 3), pin_int({}, "row", 0, 3)
    (2, None)
    >>> pin_int({"row": "9"}, "row", 0, 3)
    Traceback (most recent call last):
    ...
    attention_core.labs.polls.pins.Unfit: row = 9 is not in 0 … 3
"""
from __future__ import annotations

import re


class Unfit(Exception):
    """A pinned question that cannot be asked on these settings."""


def valid(at, allowed) -> bool:
    """Whether `at` is a dict of text -> text whose keys the kind reads."""
    return (isinstance(at, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in at.items())
            and set(at) <= set(allowed))


def pin_int(at: dict | None, name: str, lo: int, hi: int) -> int | None:
    """The pinned integer `name` in lo … hi, None when `at` does not pin it; Unfit for anything else."""
    if not at or name not in at:
        return None
    text = at[name].strip()
    if not re.fullmatch(r"-?\d{1,9}", text):
        raise Unfit(f"{name} = {at[name]!r} is not a whole number")
    value = int(text)
    if not lo <= value <= hi:
        raise Unfit(f"{name} = {value} is not in {lo} … {hi}")
    return value


def pin_text(at: dict | None, name: str, options) -> str | None:
    """The pinned text `name`, one of `options`; None when not pinned; Unfit for anything else."""
    if not at or name not in at:
        return None
    if at[name] not in options:
        raise Unfit(f"{name} = {at[name]!r} is not one of {sorted(options)}")
    return at[name]


def pinned(items, test) -> list:
    """The items that pass `test`; Unfit when none does (the pinned question does not fit)."""
    kept = [x for x in items if test(x)]
    if not kept:
        raise Unfit("the pinned question has no fitting cell on these settings")
    return kept
