"""The handout's document: sections made from Steps, their numbers rounded and large matrices cut.

A Section copies what a Step says (title, formula, named axes, why) and a table of its numbers: a head's slice
for a 3-D step, at most MAX_ROWS × MAX_COLS values, with a note that says what was left out.

>>> import numpy as np
>>> from attention_core.forward.trace import Step
>>> s = Step("w", "Weights", np.arange(6.0).reshape(2, 3) / 3, ("n_q", "n_k"), r"A", why="Rows sum to 1.")
>>> t = table_of(s.value, ("n_q", "n_k"), lambda axis, size: [f"{axis}{i}" for i in range(size)], max_cols=2)
>>> t.values
((0.0, 0.333), (1.0, 1.333))
>>> t.note
'column 2 of n_k=3 left out (2 of 3 shown)'
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ...forward.trace import Step, Trace

MAX_ROWS = 16          # a printed page holds ~16 rows of a table beside its formula
MAX_COLS = 12          # and ~12 columns of four-digit numbers across A4 / Letter
DIGITS = 3


@dataclass(frozen=True)
class Table:
    """The numbers a section prints: rows × columns of rounded values, their labels, what was cut."""
    row_axis: str
    col_axis: str
    rows: tuple[str, ...]
    cols: tuple[str, ...]
    values: tuple[tuple[float, ...], ...]
    note: str = ""                      # what was left out, in words ("" when nothing was)
    scale: str = "diverging"
    lo: float = 0.0                     # the shading's range, over the whole value (not just what is shown)
    hi: float = 0.0


@dataclass(frozen=True)
class Section:
    key: str
    title: str
    formula: str                        # LaTeX
    shape: str                          # "n=4 × d_k=6"
    why: str
    table: Table
    head_note: str = ""                 # "head 1 of H=2 shown" for a 3-D step


@dataclass(frozen=True)
class Handout:
    page: str                           # the page's URL path ("" for the Overview)
    title: str
    sentence: str                       # as typed
    tokens: str                         # the words the page computes with, one space apart
    settings: tuple[str, ...]           # the settings that differ from the defaults, in words
    controls: tuple[str, ...]           # the page's own controls that shape what is shown, in words
    notes: tuple[str, ...]              # what the handout says about where its numbers come from
    sections: tuple[Section, ...]


def number_text(v: float, digits: int = DIGITS) -> str:
    """A printed number: 3 decimals; a hidden score's −∞ as the formulas write it.

    >>> number_text(-float("inf")), number_text(0.12345), number_text(float("nan"))
    ('−∞', '0.123', 'NaN')
    """
    if np.isnan(v):
        return "NaN"
    if np.isinf(v):
        return "∞" if v > 0 else "−∞"
    return f"{v:.{digits}f}"


def note_sentence(note: str) -> str:
    """A table's note as the sentence printed under it (the note already says 'left out').

    >>> note_sentence("rows 16 to 49 of d_model=50 left out (16 of 50 shown)")
    'Rows 16 to 49 of d_model=50 left out (16 of 50 shown).'
    """
    return note[:1].upper() + note[1:] + "." if note else ""


def _cut(size: int, limit: int) -> tuple[list[int], str]:
    """The indices kept (the first limit) and the words for what was left out."""
    if size <= limit:
        return list(range(size)), ""
    return list(range(limit)), f"{limit} of {size} shown"


def _left_out(what: str, first: int, size: int) -> str:
    """'rows 16 to 49', or 'row 16' when one is left out (counted from 0, as the labels are).

    >>> _left_out("row", 16, 17), _left_out("column", 12, 50)
    ('row 16', 'columns 12 to 49')
    """
    return f"{what} {first}" if size == first + 1 else f"{what}s {first} to {size - 1}"


def table_of(value: np.ndarray, axes: tuple[str, ...], labels: Callable[[str, int], list[str]],
             scale: str = "diverging", max_rows: int = MAX_ROWS, max_cols: int = MAX_COLS,
             digits: int = DIGITS) -> Table:
    """A 0-, 1- or 2-D value as a table (a vector is one row; a scalar one cell)."""
    v = np.asarray(value, dtype=np.float64)
    if v.ndim == 0:
        v, axes = v.reshape(1, 1), ("", "")
    elif v.ndim == 1:
        v, axes = v.reshape(1, -1), ("", axes[0])
    if v.ndim != 2:
        raise ValueError(f"a table is at most 2-D, not {v.ndim}-D")
    finite = v[np.isfinite(v)]
    lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 0.0)
    rows, row_cut = _cut(v.shape[0], max_rows)
    cols, col_cut = _cut(v.shape[1], max_cols)
    notes = []
    if row_cut:
        notes.append(f"{_left_out('row', max_rows, v.shape[0])} of {axes[0]}={v.shape[0]} left out ({row_cut})")
    if col_cut:
        notes.append(f"{_left_out('column', max_cols, v.shape[1])} of {axes[1]}={v.shape[1]} left out ({col_cut})")
    row_labels = labels(axes[0], v.shape[0]) if axes[0] else [""]
    col_labels = labels(axes[1], v.shape[1])
    shown = tuple(tuple(float(x) if not np.isfinite(x) else round(float(x), digits) + 0.0 for x in v[i, cols])
                  for i in rows)
    return Table(axes[0], axes[1], tuple(row_labels[i] for i in rows), tuple(col_labels[j] for j in cols), shown,
                 "; ".join(notes), scale, lo, hi)


# What counts a 3-D step's first axis, as docs/notation.md writes it: "head 1 of H=2 shown", not "of head=2".
COUNTS = {"head": ("head", "H"), "query head": ("query head", "H"), "KV head": ("KV head", "H_kv"),
          "layer": ("layer", "L")}


def _slice_note(trace: Trace, step: Step, h: int) -> str:
    """'head 1 of H=2 shown'; a K or V split into KV heads (grouped-query attention): 'KV head 1 of H_kv=2 shown';
    '' when the axis has one slice."""
    from ..quiz.notation import heads_letter
    axis, size = step.axes[0], step.value.shape[0]
    if size <= 1:
        return ""
    what, letter = COUNTS.get(axis, (axis, axis))
    if axis == "head" and heads_letter(step, trace) == "H_kv":
        what, letter = "KV head", "H_kv"
    return f"{what} {h} of {letter}={size} shown"


def section_of(trace: Trace, key: str, head: int = 0, title: str | None = None) -> Section:
    """A Step of the trace as a section; a 3-D step (a head, or a layer, first) shows its slice `head`."""
    step: Step = trace[key]
    value, axes, head_note = step.value, step.axes, ""
    if value.ndim == 3:
        h = min(max(int(head), 0), value.shape[0] - 1)
        head_note = _slice_note(trace, step, h)
        value, axes = value[h], axes[1:]
    elif value.ndim > 3:
        raise ValueError(f"step {key}: a {value.ndim}-D value has no printed table")
    return Section(key, title or step.title, step.formula, step.shape_text, step.why,
                   table_of(value, axes, trace.labels, step.scale), head_note)
