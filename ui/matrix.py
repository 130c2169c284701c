"""A matrix or a vector on screen: a Step's heatmap (its clicked cell kept in the link) or table, a small
Vega-Lite chart, short vectors as one-row tables."""
from __future__ import annotations

import collections
import functools
import re

import numpy as np
import streamlit as st

from attention_core import Step, Trace

from . import page_state
from .room import hide as room_hide
from .charts import heatmap_spec
from .chart_words import spec_sentence
from .explain_view import explain_cell, in_bounds
from .presenter import presented
from .raw_html import anchor_class, fit_css_in_fragment
from .settings_state import presenting


def table(trace: Trace, step: Step, head: int | None = None, digits: int = 3, key: str | None = None):
    """The numbers of a step (one head) as a table. With a key, a cell can be selected, with the
    mouse or the keyboard (arrow keys in the grid): returns the selected (row, col) or None."""
    import pandas as pd
    value, axes = (step.value[head], step.axes[1:]) if head is not None else (step.value, step.axes)
    if value.ndim == 1:
        value, axes = value[None, :], ("",) + axes
    rows = trace.labels(axes[0], value.shape[0]) if axes[0] else [step.key]
    cols = trace.labels(axes[1], value.shape[1])
    names = [f"c{j}" for j in range(value.shape[1])]          # positional names, the labels are shown
    frame = pd.DataFrame(np.where(np.isneginf(value), np.nan, value), index=rows, columns=names)
    config = {n: st.column_config.NumberColumn(str(c), format=f"%.{digits}f") for n, c in zip(names, cols)}
    secret = room_hide.hidden_cells(step.key, head, value.shape)
    for j in sorted({b for _, b in secret}):       # a column with a hidden number: text, "?" there (never the number)
        out = ["" if np.isnan(x) else f"{x:.{digits}f}" for x in frame[names[j]].to_numpy(dtype=np.float64)]
        for a, b in secret:
            if b == j:
                out[a] = room_hide.HIDDEN_SAYS
        frame[names[j]] = out
        config[names[j]] = st.column_config.TextColumn(str(cols[j]), alignment="right")
    if key is None:
        st.dataframe(frame, column_config=config, width="content")
        state = None
    else:
        state = st.dataframe(frame, column_config=config, width="content", key=key, on_select="rerun",
                             selection_mode="single-cell")
    if np.isneginf(value).any():
        st.caption("Empty cells are −∞ (masked).")
    if secret:
        st.caption(room_hide.STUDENT_CAPTION)
    elif "room.secret" in st.session_state and room_hide.marked_cells(step.key, head, value.shape):
        st.caption(":material/visibility_off: " + _marked_text(room_hide.marked_cells(step.key, head, value.shape),
                                                               value.shape))
    cells = list(state.selection.cells) if state is not None and "selection" in state else []
    if not cells:
        return None
    row, name = cells[0]
    return int(row), int(str(name)[1:])


def _marked_text(cells, shape) -> str:
    """The teacher's table: which cells the students' screens hide (a table cannot be outlined)."""
    if len(cells) == shape[0] * shape[1]:
        return "Every number here is hidden on the students' screens until you reveal."
    where = ", ".join(f"[{i}, {j}]" for i, j in cells[:8]) + (" …" if len(cells) > 8 else "")
    return f"Hidden on the students' screens until you reveal: {where} (row, column)."


PRESENTER_MIN_W = 260


def _shape(step: Step, head: int | None) -> tuple[int, int]:
    """(rows, columns) of the step's matrix as a heatmap draws it (one head's; a vector is one row)."""
    shape = step.value.shape[1:] if head is not None else step.value.shape
    return tuple(shape) if len(shape) == 2 else (1, shape[0]) if len(shape) == 1 else (1, 1)


def heatmap(trace: Trace, step: Step, head: int | None = None, title: str | None = None,
            key: str | None = None, domain=None, max_w: float = 620, explain: bool = False, highlight=None,
            keys: bool = False):
    """Draw one heatmap; returns the clicked cell (i, j) or None (or shows its arithmetic if `explain`).

    keys: a cell can be chosen without a mouse too: a row and a column picker under the chart (cell_picker), which
    set the same cell a click sets (the link's). Give it to a heatmap whose returned cell is explained.

    highlight: (row, col) cells to outline. In presenter mode a small multiple gets at least PRESENTER_MIN_W px:
    room for numbers a back row can read (its column is as wide from 1100 px, and stacks under it)."""
    big = presenting()
    hidden, marked = room_hide.hidden_cells(step.key, head, _shape(step, head)), ()
    if "room.secret" in st.session_state and not hidden:    # the teacher: what the students' screens hide, outlined
        marked = room_hide.marked_cells(step.key, head, _shape(step, head))
    if hidden and domain is not None and step.scale == "diverging":   # a bound made from every head's numbers
        domain = None                                 # could be a hidden one: the chart's own visible cells set it
    chart_key = key or f"hm:{step.key}:{head}"
    # the chart's selection as the browser sent it for this run (the same the chart returns, read before it is drawn:
    # the explained cell is outlined on it in this run)
    cell = _selected(st.session_state.get(chart_key) if chart_key in st.session_state else None)
    if cell is not None and not in_bounds(step, head, cell):
        cell = None            # a selection the chart kept from a matrix of another shape (the settings changed)
    page_state.click(chart_key, cell)                  # the link carries the last clicked cell
    held = _held(chart_key)                  # … or the one picked with the keyboard, or a link's: the page's one
    cell = held if held is not None and in_bounds(step, head, held) else None   # explained cell (a link's cell
    # outside this matrix: none opened; another chart's click left this one's selection, which explains nothing now)
    spec, cells = heatmap_spec(trace, step, head, title, domain, max(max_w, PRESENTER_MIN_W) if big else max_w,
                               highlight, big, hidden, marked, explained=cell)
    fit_css_in_fragment()
    # with hidden or marked cells, the chart and its caption share one box (a step's row keeps the place beside
    # the chart for a clicked cell's explanation)
    where = st.container(width="content") if hidden or marked or keys else st
    where.vega_lite_chart(cells, spec=spec, key=chart_key, on_select="rerun", selection_mode="cell", width="content")
    if hidden or marked:
        where.caption(room_hide.STUDENT_CAPTION if hidden else room_hide.TEACHER_CAPTION)
    if keys:
        cell_picker(where, trace, step, head, chart_key, cell)
    if cell is None:
        return None
    if explain:
        explain_cell(trace, step.key, (head, cell), anchor=key)
    return cell


def _selected(state) -> tuple[int, int] | None:
    """The cell a chart's selection holds (its "cell" parameter: the fields i, j), or None."""
    points = (state or {}).get("selection", {}).get("cell") if state else None
    return (int(points[0]["i"]), int(points[0]["j"])) if points else None


def _held(chart: str) -> tuple[int, int] | None:
    """The link's cell (page_state's "p.cell") when it is this chart's: clicked, picked with the keyboard or opened
    by a link; it wins over the chart's own selection, which a pick does not change."""
    cell = st.session_state.get("p.cell")
    return (cell[2], cell[3]) if cell is not None and cell[:2] == (st.session_state.get("s.page"), chart) else None


def _index(held) -> int | None:
    """A picker's value as its index. A browser sends a selectbox's value as the label it holds, and a label names
    the word ("row 0 · i"): after the sentence changes, the label it sends is no option any more and Streamlit
    keeps the text. Its number is still the index it meant.

        >>> _index(2), _index("row 0 · i"), _index("column 12"), _index("nonsense"), _index(None)
        (2, 0, 12, None, None)
    """
    if isinstance(held, int) and not isinstance(held, bool):
        return held
    found = re.match(r"(?:row|column) (\d{1,6})\b", held) if isinstance(held, str) else None
    return int(found.group(1)) if found else None


def _picked(chart_key: str, one_row: bool) -> None:
    """A picker changed: with a row and a column chosen, that cell is the one the chart explains (the link's)."""
    row = 0 if one_row else _index(st.session_state.get(f"pick:{chart_key}.row"))
    col = _index(st.session_state.get(f"pick:{chart_key}.col"))
    if row is not None and col is not None:
        st.session_state["p.cell"] = (st.session_state.get("s.page"), chart_key, int(row), int(col))
        st.session_state["p.picked"] = True   # the link carries it: written in the run (cell_picker), not here,
                                              # where other controls may still hold a label from before


def _head_word(trace: Trace, step: Step) -> str:
    """What a step's head index counts: "KV head" for a K or V block shared by a group of query heads (grouped-query
    attention: the real heads page shows query head 3's keys as KV head 1's block) and the KV cache's, else "head"."""
    from attention_core.labs.quiz.notation import KV_STEPS
    if step.axes[:1] == ("KV head",):
        return "KV head"
    config, f = trace.facts.get("config"), trace.facts
    h, h_kv = (config.n_heads, config.kv_heads) if config is not None else (f.get("n_heads"), f.get("n_kv_heads"))
    return "KV head" if step.key in KV_STEPS and h and h_kv and h_kv < h else "head"


def cell_picker(where, trace: Trace, step: Step, head: int | None, chart_key: str, cell) -> None:
    """The arithmetic without a mouse: a row and a column picker under a heatmap (Tab to them, arrows and Enter),
    showing the cell the chart explains; choosing one explains it as a click does and the link carries it."""
    from .charts import _matrix
    m, (row_axis, col_axis) = _matrix(step, head)
    rows = trace.labels(row_axis, m.shape[0]) if row_axis else [""]
    cols = trace.labels(col_axis, m.shape[1])
    one_row = m.shape[0] == 1
    state = st.session_state
    names = (f"pick:{chart_key}.row", f"pick:{chart_key}.col")      # the cell: carried by a view as its `cell`
    for name in names:
        if name in state and not isinstance(state[name], int | None):
            state[name] = _index(state[name])   # a label the browser held from another sentence: its index
    if state.pop("p.picked", False):
        page_state.sync()                  # the picked cell in the link (page_state's cell), as a click's
    if cell is not None:                   # the pickers show the cell explained (a click's too)
        for name, v in zip(names, cell):
            if state.get(name) != v:
                state[name] = v
    elif state.get(names[1]) is not None and (one_row or state.get(names[0]) is not None):
        for name in names:                 # a whole pick that explains nothing: cleared (a double-click, a push)
            state[name] = None
    for name, size in zip(names, m.shape):
        if state.get(name) is not None and not 0 <= state[name] < size:
            state[name] = None             # a half pick from a larger matrix (the sentence got shorter)
    of = f" of {step.title}" + (f", {_head_word(trace, step)} {head}" if head is not None else "")
    box = where.container(horizontal=True, gap="small", key=f"pick-{anchor_class(chart_key)}")
    say = lambda noun, labels: (lambda k: f"{noun} {k}" + ("" if str(labels[k]) == str(k) else f" · {labels[k]}"))
    wide = lambda noun, labels, n: picker_width([say(noun, labels)(k) for k in range(n)], presenting())
    if not one_row:
        box.selectbox(f"Row{of} to explain", range(m.shape[0]), index=None, format_func=say("row", rows),
                      key=names[0], placeholder="Row…", label_visibility="collapsed",
                      width=wide("row", rows, m.shape[0]), on_change=_picked, args=(chart_key, one_row))
    box.selectbox(f"Column{of} to explain", range(m.shape[1]), index=None, format_func=say("column", cols),
                  key=names[1], placeholder="Column…", label_visibility="collapsed",
                  width=wide("column", cols, m.shape[1]), on_change=_picked, args=(chart_key, one_row))


PICKER_EDGES_PX = 84     # a picker's padding, clear (×) and open (⌄) icons: what its text does not get (measured)


def picker_width(labels, big: bool) -> int:
    """A cell picker's width (px): room for its longest option as chosen, "column 1 · extraordinarily" whole (at 150
    px, or 240 in presenter mode, a word longer than 3 or 4 letters was cut: "column 1 · extraordi"); at least those
    widths, at most 360 / 480 (a longer label is read whole in the open list). Source Sans averages under 0.45 em a
    character; the text is 14 px, 17.5 in presenter mode.

    >>> picker_width(["row 2"], False), picker_width(["row 2 · you"], True)
    (150, 240)
    """
    longest = max((len(str(x)) for x in labels), default=0)
    need = PICKER_EDGES_PX + 0.45 * (17.5 if big else 14) * longest
    return int(min(max(240 if big else 150, need), 480 if big else 360))


def chart(spec: dict, target=None):
    """A small Vega-Lite chart whose inline rows travel as a pyarrow Table (Streamlit would
    otherwise build a pandas frame from them on every rerun). target: a placeholder (st.empty)."""
    if target is None:
        fit_css_in_fragment()
    draw = (target or st).vega_lite_chart
    spec = presented(spec)
    if "description" not in spec:                 # what it shows, for a screen reader (its aria-label)
        said = spec_sentence(spec)
        spec = {**spec, "description": said} if said else spec
    values = spec.get("data", {}).get("values") if isinstance(spec.get("data"), dict) else None
    width = "stretch" if spec.get("width") == "container" else "content"
    if values is None:
        return draw(spec=spec, width=width)
    return draw(_arrow(values), spec={k: v for k, v in spec.items() if k != "data"}, width=width)


_TABLES: "collections.OrderedDict[tuple, tuple]" = collections.OrderedDict()


def _arrow(values: list):
    """The rows as a pyarrow Table. A large list is converted once while it lives: a cached spec (the induction
    page's shipped patterns: 25,600 rows) keeps the same list from rerun to rerun. Keyed by the list's id and
    length, holding the list so the id stays its; a drawn list is never changed in place (a live chart draws a
    new spec)."""
    import pyarrow as pa
    if len(values) < 2000:
        return pa.Table.from_pylist(values)
    key = (id(values), len(values))
    hit = _TABLES.get(key)
    if hit is not None and hit[0] is values:
        _TABLES.move_to_end(key)
        return hit[1]
    table = pa.Table.from_pylist(values)
    _TABLES[key] = (values, table)
    while len(_TABLES) > 64:
        _TABLES.popitem(last=False)
    return table


@functools.lru_cache(maxsize=256)
def number_columns(names: tuple[str, ...], digits: int, gaps: tuple[str, ...] = ()) -> dict:
    """A column_config of fixed-decimal number columns, built once per (names, digits): Streamlit
    copies the mapping it is given (process_config_mapping), so one shared dict is safe. The
    columns in `gaps` hold gapped_column()'s text, right-aligned like the numbers."""
    return {c: st.column_config.TextColumn(alignment="right") if c in gaps else
            st.column_config.NumberColumn(format=f"%.{digits}f") for c in names}


def gapped_column(values: np.ndarray, digits: int):
    """A number column with gaps (NaN) as text, the gaps empty: Streamlit's grid writes a null as
    'None'. Pair it with number_columns(..., gaps=...)."""
    import pyarrow as pa
    return pa.array(["" if np.isnan(x) else f"{x:.{digits}f}" for x in np.asarray(values, dtype=np.float64)])


PRESENTER_ROW = 10          # presenter mode: a long vector's entries, this many a row


def presenter_rows_note(size: int, k: int = PRESENTER_ROW) -> str:
    """How to read a vector of `size` > k entries drawn k a row: an example from its second row, named as the
    table names it (a short last row '10–11' has no column 3).

    >>> presenter_rows_note(50)
    '50 entries, 10 a row: row 10–19, column 3 is entry 13.'
    >>> presenter_rows_note(12)
    '12 entries, 10 a row: row 10–11, column 1 is entry 11.'
    >>> presenter_rows_note(11)
    '11 entries, 10 a row: row 10, column 0 is entry 10.'
    """
    c = min(3, size - k - 1)
    return f"{size} entries, {k} a row: row {_span(k, min(2 * k, size) - 1)}, column {c} is entry {k + c}."


def _span(first: int, last: int) -> str:
    """A row of entries named by its first and last: '10–19', or '10' for one."""
    return f"{first}–{last}" if last > first else f"{first}"


def vector_row(values: np.ndarray, labels: list[str] | None = None, digits: int = 3, hidden=()) -> None:
    """A short vector as a one-row table (in presenter mode, a longer one as rows of ten: no sideways scroll).
    hidden: entries shown as "?" (a lesson stop's numbers on a student's screen before the reveal: ui/room/hide.py),
    not sent."""
    import pyarrow as pa
    v = np.atleast_1d(np.asarray(values, dtype=np.float64))
    if len(hidden):
        names = tuple(labels or [str(i) for i in range(v.size)])
        row = pa.Table.from_arrays([room_hide.column(v[k:k + 1], digits, [k in hidden])[0] for k in range(v.size)],
                                   names=list(names))
        st.dataframe(row, hide_index=True, width="content",
                     column_config={**number_columns(names, digits),
                                    **{names[k]: st.column_config.TextColumn(alignment="right") for k in hidden}})
        return
    if presenting() and labels is None and v.size > PRESENTER_ROW:
        k = PRESENTER_ROW
        grid = np.full((-(-v.size // k), k), np.nan)
        grid.flat[:v.size] = v
        names = [_span(r * k, min(r * k + k, v.size) - 1) for r in range(grid.shape[0])]
        vector_rows(dict(zip(names, grid)), digits)
        st.caption(presenter_rows_note(v.size))
        return
    names = tuple(labels or [str(i) for i in range(v.size)])
    row = pa.Table.from_arrays([v[k:k + 1] for k in range(v.size)], names=list(names))
    st.dataframe(row, hide_index=True, width="content", column_config=number_columns(names, digits))


def vector_rows(rows: dict[str, np.ndarray], digits: int = 3) -> None:
    """Several short vectors as one table, one row each, named in its first column; columns are
    the entries' indices 0, 1, … (a shorter vector's missing entries stay empty). One element
    instead of one table per vector."""
    import pyarrow as pa
    width = max(np.size(v) for v in rows.values())
    grid = np.full((len(rows), width), np.nan)
    for r, v in enumerate(rows.values()):
        grid[r, :np.size(v)] = np.ravel(v)
    names = tuple(str(k) for k in range(width))
    gaps = tuple(n for k, n in enumerate(names) if np.isnan(grid[:, k]).any())
    table = pa.Table.from_arrays([pa.array(list(rows))] + [gapped_column(grid[:, k], digits) if names[k] in gaps
                                                           else grid[:, k] for k in range(width)],
                                 names=["vector", *names])
    st.dataframe(table, hide_index=True, width="content", column_config=number_columns(names, digits, gaps))
