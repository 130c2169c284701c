"""A page's own control as a link carries it (ui/page_state.py declares each page's): its widget key, which is
also the link's parameter name, its one default, how a link's text is read (a value the control cannot take is a
ValueError, said as a notice) and written, and its name in words for that notice. The kinds: a whole number, a
number, one of some options, a switch, a lazy tab."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

@dataclass(frozen=True)
class Own:
    key: str                              # the widget's key and the link's parameter name
    default: object
    parse: Callable[[str], object]        # link text -> value; raises ValueError if the control cannot take it
    text: Callable[[object], str] = str   # value -> link text
    what: str = ""                        # the control in words, for a notice: "the step t"
    show: Callable[[object], str] | None = None   # value -> words for a notice (default: the link text)

    def shown(self, value) -> str:
        return (self.show or self.text)(value)

    def link_text(self, value) -> str | None:
        """The link's text, or None for a value it cannot write: a selectbox still holding the label a browser sent
        from before its options changed (the sentence), until the control's run mends it."""
        try:
            return self.text(value)
        except (ValueError, TypeError):
            return None

    def valid(self, value) -> bool:
        """A value this control can take (a widget whose options changed can hand back an old option's label)."""
        try:
            return self.parse(self.text(value)) == value
        except (ValueError, TypeError):
            return False


class Clamped(ValueError):
    """A link's value above a control's bound that the bound stands for: `value` is used, `why` says so."""
    def __init__(self, message: str, value, why: str):
        super().__init__(message)
        self.value, self.why = value, why


def integer(key: str, default: int | None, lo: int, hi: int, what: str = "", optional: bool = False,
            clamp: str = "") -> Own:
    """A whole number from lo to hi (optional: empty in the link, or 'none', is None). clamp: a link's value above
    hi is read as hi, with a notice that ends with these words (why hi means the same)."""
    def parse(raw: str):
        if optional and raw.strip().lower() in ("", "none"):
            return None
        value = int(raw)
        if clamp and value > hi:
            raise Clamped(f"must be from {lo} to {hi}", hi, clamp)
        if not lo <= value <= hi:
            raise ValueError(f"must be from {lo} to {hi}")
        return value
    return Own(key, default, parse, lambda v: "none" if v is None else str(int(v)), what or key)


def number(key: str, default: float, lo: float, hi: float, what: str = "") -> Own:
    def parse(raw: str) -> float:
        value = float(raw)
        if not (math.isfinite(value) and lo <= value <= hi):
            raise ValueError(f"must be a number from {lo:g} to {hi:g}")
        return value
    return Own(key, default, parse, _number_text, what or key)


def _number_text(value) -> str:
    """Short when that is exact (0.5, 1500), else every digit: a link gives back the same number."""
    short = f"{float(value):g}"
    return short if float(short) == float(value) else repr(float(value))


def choice(key: str, default, options, what: str = "") -> Own:
    """One of `options` (strings or numbers), carried as its text."""
    by_text = {str(o): o for o in options}

    def parse(raw: str):
        if raw not in by_text:
            raise ValueError("must be one of " + ", ".join(by_text))
        return by_text[raw]
    return Own(key, default, parse, str, what or key)


def flag(key: str, default: bool = False, what: str = "") -> Own:
    def parse(raw: str) -> bool:
        if raw not in ("1", "0"):
            raise ValueError("must be 1 or 0")
        return raw == "1"
    return Own(key, default, parse, lambda v: "1" if v else "0", what or key)


def tab(key: str, labels: tuple[str, ...], what: str = "the open tab") -> Own:
    """A lazy st.tabs (key=…, on_change="rerun"): its state is the open tab's label; the link carries
    its place, 0 for the first. A notice names the places' tabs, so "using the default (0)" reads as a tab."""
    def parse(raw: str) -> str:
        index = int(raw)
        if not 0 <= index < len(labels):
            raise ValueError(f"must be from 0 to {len(labels) - 1}")
        return labels[index]
    return Own(key, labels[0], parse, lambda v: str(labels.index(v)) if v in labels else "0", what,
               show=lambda v: f"“{v}”")
