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
'columns 2 of n_k=3 left out (2 of 3 shown)'
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


def _cut(size: int, limit: int) -> tuple[list[int], str]:
    """The indices kept (the first limit) and the words for what was left out."""
    if size <= limit:
        return list(range(size)), ""
    return list(range(limit)), f"{limit} of {size} shown"


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
        notes.append(f"rows {max_rows} to {v.shape[0] - 1} of {axes[0]}={v.shape[0]} left out ({row_cut})")
    if col_cut:
        notes.append(f"columns {max_cols}{'' if v.shape[1] == max_cols + 1 else f' to {v.shape[1] - 1}'} of "
                     f"{axes[1]}={v.shape[1]} left out ({col_cut})")
    row_labels = labels(axes[0], v.shape[0]) if axes[0] else [""]
    col_labels = labels(axes[1], v.shape[1])
    shown = tuple(tuple(float(x) if not np.isfinite(x) else round(float(x), digits) + 0.0 for x in v[i, cols])
                  for i in rows)
    return Table(axes[0], axes[1], tuple(row_labels[i] for i in rows), tuple(col_labels[j] for j in cols), shown,
                 "; ".join(notes), scale, lo, hi)


def section_of(trace: Trace, key: str, head: int = 0, title: str | None = None) -> Section:
    """A Step of the trace as a section; a 3-D step (a head, or a layer, first) shows its slice `head`."""
    step: Step = trace[key]
    value, axes, head_note = step.value, step.axes, ""
    if value.ndim == 3:
        h = min(max(int(head), 0), value.shape[0] - 1)
        head_note = f"{axes[0]} {h} of {axes[0]}={value.shape[0]} shown" if value.shape[0] > 1 else ""
        value, axes = value[h], axes[1:]
    elif value.ndim > 3:
        raise ValueError(f"step {key}: a {value.ndim}-D value has no printed table")
    return Section(key, title or step.title, step.formula, step.shape_text, step.why,
                   table_of(value, axes, trace.labels, step.scale), head_note)
