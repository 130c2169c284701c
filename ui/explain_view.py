"""The arithmetic behind one number, shown when a heatmap cell is clicked: is the cell in the matrix, its
explanation with the live numbers (or its value where no explainer exists), scrolled into view."""
from __future__ import annotations

import math

import streamlit as st

from attention_core import Step, Trace
from attention_core.explanations import Explanation

from .room import hide as room_hide
from .raw_html import anchor_class, scroll_into_view
from .text import md_escape

FLOAT32_RTOL = 1e-5      # a real model's cells are float32 sums; an explanation recomputes them in float64


def check_note(value: float, stored: float, same: bool, source: str, rtol: float = 1e-9) -> str:
    """The recomputation against the cell: ✓ or ✗, and, for a real model's float32 cell, the tolerance it was
    held to (said as met only when it is)."""
    line = f"{'✓' if same else '✗'} {source}: {value:.10g}; the cell holds {stored:.10g}"
    if rtol <= 1e-9:
        return line + "."
    exp = round(math.log10(rtol))
    tol = f"10{str(exp).translate(str.maketrans('-0123456789', '⁻⁰¹²³⁴⁵⁶⁷⁸⁹'))}" if 10.0 ** exp == rtol else f"{rtol:g}"
    within = f"{tol} × max(1, |cell|)"
    return line + (f" (the model computed it in float32: the same within {within})." if same else
                   f" (the model computed it in float32, but they differ by more than {within}).")


def explanation(e: Explanation, stored: float | None = None, rtol: float = 1e-9, table: bool = False) -> None:
    """Its title and formula as one Markdown, its notes as one caption: it stays on the page
    while the student moves a setting, and every element costs each rerun. table: the cell was selected in a
    table (no chart, no pickers: the last line says how to choose another there)."""
    with st.container(border=True):
        cell = e.text.split(" = ", 1)[0]              # the cell in the notation: Ŝ_1[0,2], dL/dW_Q[0,1]
        st.markdown(f"**How {md_escape(cell)} was made**\n\n$$\n{e.latex}\n$$")
        notes = [e.note] if e.note else []
        listed = r"\boxed{" in e.substituted            # a row looked up (one entry boxed), not a sum
        if e.n_elided and listed:
            notes.append(f"The row has {e.n_terms} entries; {e.n_elided} of them are left out above.")
        elif e.n_elided:
            notes.append(f"{e.n_terms} terms in all; the middle {e.n_elided} are left out above (the total uses all).")
        if stored is not None:
            same = abs(e.value - stored) <= rtol * max(1.0, abs(stored)) or e.value == stored
            source = ("read back from the trace" if not e.independent else
                      "recomputed from the terms above" if e.reads else "made again from its formula or source")
            notes.append(check_note(e.value, stored, same, source, rtol))
        notes.append("Select another cell of the table to explain it." if table else
                     "Click another cell (or pick another row or column under the chart) to explain it; "
                     "double-click the chart to clear.")
        st.caption("  \n".join(notes))


def in_bounds(step: Step, head: int | None, cell: tuple[int, int]) -> bool:
    """Is (row, column) a cell of the step's matrix (one head's; a vector is one row)?"""
    try:
        value = step.value if head is None else step.value[head]
    except IndexError:
        return False
    rows, cols = value.shape if value.ndim == 2 else (1, value.shape[-1])
    return 0 <= cell[0] < rows and 0 <= cell[1] < cols


def explain_cell(trace: Trace, key: str, clicked, anchor: str | None = None, table: bool = False) -> None:
    """The clicked cell's arithmetic, with the live numbers (or its value where no explainer exists); table: it
    was selected in a table, not on a chart."""
    from attention_core.explanations import can_explain, explain

    head, (i, j) = clicked
    s = trace[key] if key in trace else trace.views[key]
    if not in_bounds(s, head, (i, j)):          # a selection kept from a matrix of another shape: nothing to say
        return
    cell = (head, i, j) if head is not None else ((j,) if s.value.ndim == 1 else (i, j))
    if room_hide.hidden(key, head, i, j):       # a lesson stop's predict state: not the number, not its arithmetic
        with st.container(key=anchor_class(anchor or key)):
            st.info(f"{s.title} {list(cell)} is hidden until your teacher reveals it: predict it first, then watch "
                    "how it is made.", icon=":material/visibility_off:")
        return
    stored = float(s.value[cell])
    with st.container(key=anchor_class(anchor or key)):
        if key in trace and can_explain(trace, key):
            e = explain(trace, key, cell, precision=st.session_state.get("s.precision", 3))
            uses = [read for read in e.reads if room_hide.hidden_read(*read)]
            if uses:                            # its arithmetic would print a hidden number
                st.info(f"{s.title} {list(cell)} is made from a number hidden until your teacher reveals it: its "
                        "arithmetic is shown after the reveal.", icon=":material/visibility_off:")
            else:
                explanation(e, stored, FLOAT32_RTOL if str(trace.facts.get("kind", "")).startswith("real") else 1e-9,
                            table)
        else:
            rows, cols = _labels_of(trace, s, head)
            where = f" (row {i} “{rows[i]}”, column {j} “{cols[j]}”)" if rows and cols else ""
            st.info(f"{s.title} {list(cell)} = {stored:.6g}{where}", icon=":material/info:")
    scroll_into_view(anchor or key, "-".join(map(str, cell)))


def _labels_of(trace: Trace, s: Step, head: int | None):
    axes = s.axes[1:] if head is not None else s.axes
    if len(axes) != 2 or s.value.ndim - (head is not None) != 2:
        return None, None
    shape = s.value.shape[-2:]
    try:
        return trace.labels(axes[0], shape[0]), trace.labels(axes[1], shape[1])
    except Exception:
        return None, None
