"""The shared views: a Step as formula, shape badge, why, heatmap (or table) and inputs."""
from __future__ import annotations

import functools
import re

import numpy as np
import streamlit as st

from attention_core import Step, Trace

from . import page_state
from .charts import heatmap_spec

NAMES = {"x_embed": "X_emb", "pe": "PE", "x": "X", "w_q": "W_Q", "w_k": "W_K", "w_v": "W_V", "q": "Q", "k": "K",
         "v": "V", "w_o": "W_O", "weights": "A", "context": "C", "scores": "S", "scaled_scores": "S/√d_k"}


# Charts never wider than their card: an SVG chart wider than its container is scaled down with
# its aspect ratio kept (Vega's SVG carries a viewBox; clicks still hit their cell, as Vega's SVG
# renderer finds the item from the event's target). Sent with every chart: a style-only st.html
# goes to Streamlit's event container and takes no room on the page.
# The explanation beside a chart (the row's second child, drawn only once a cell is clicked) takes the
# rest of the row, and wraps under the chart below 360 px.
FIT_CSS = ("<style>.stElementContainer:has([data-testid='stVegaLiteChart']){max-width:100%}"
           "[data-testid='stVegaLiteChart']{max-width:100%}"
           "[data-testid='stVegaLiteChart'] svg.marks{max-width:100%;height:auto}"
           "[class*='st-key-side-']>*:first-child{max-width:100%}"
           "[class*='st-key-side-']>*:last-child:not(:first-child){flex:1 1 360px !important;width:auto !important;"
           "min-width:0}"
           # an explanation's long line of terms: a little smaller, and scrolls sideways rather than being cut
           "[class*='st-key-xp-'] .katex-display{overflow-x:auto;overflow-y:hidden;padding-bottom:4px}"
           "[class*='st-key-xp-'] .katex{font-size:1.05em}</style>")


def trusted_html(body: str, script: bool = False) -> None:
    """The app's one door to raw HTML (tests/test_bad_input.py allows exactly this call): constant
    CSS, and a scroll script whose only variable parts went through anchor_class / safe_token
    (letters, digits, _ and -), never user text as typed."""
    st.html(body, unsafe_allow_javascript=script)


def fit_css() -> None:
    """Once per page run (ui.page); a fragment that reruns alone sends it again with its charts."""
    trusted_html(FIT_CSS)


def fit_css_in_fragment() -> None:
    """The chart CSS again only when a fragment reruns alone (a full run sent it from ui.page):
    one element per page instead of one per chart."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx
    ctx = get_script_run_ctx()
    if ctx is not None and ctx.fragment_ids_this_run:
        fit_css()


def presenting() -> bool:
    """Presenter mode (for a projector): larger charts and text, fewer panels."""
    return bool(st.session_state.get("s.presenter", False))


def badge_text(step: Step) -> str:
    """The shape with its named axes as a blue badge, in Streamlit's markdown."""
    return f":blue-badge[:material/straighten: {step.shape_text}]"


def heading(title: str, step: Step, formula: str | None = None) -> str:
    """A step's title, shape badge and (display) formula as one Markdown body: Streamlit's
    Markdown renders $$…$$ with KaTeX exactly as st.latex does, in one element instead of two."""
    text = f"##### {title} &nbsp; {badge_text(step)}"
    return text + (f"\n\n$$\n{formula}\n$$" if formula else "")


def shape_badge(step: Step) -> None:
    st.markdown(badge_text(step))


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
    if key is None:
        st.dataframe(frame, column_config=config, width="content")
        state = None
    else:
        state = st.dataframe(frame, column_config=config, width="content", key=key, on_select="rerun",
                             selection_mode="single-cell")
    if np.isneginf(value).any():
        st.caption("Empty cells are −∞ (masked).")
    cells = list(state.selection.cells) if state is not None and "selection" in state else []
    if not cells:
        return None
    row, name = cells[0]
    return int(row), int(str(name)[1:])


def heatmap(trace: Trace, step: Step, head: int | None = None, title: str | None = None,
            key: str | None = None, domain=None, max_w: float = 620, explain: bool = False, highlight=None):
    """Draw one heatmap; returns the clicked cell (i, j) or None (or shows its arithmetic if `explain`).

    highlight: (row, col) cells to outline."""
    spec, cells = heatmap_spec(trace, step, head, title, domain, max_w, highlight, presenting())
    fit_css_in_fragment()
    state = st.vega_lite_chart(cells, spec=spec, key=key or f"hm:{step.key}:{head}", on_select="rerun",
                               selection_mode="cell", width="content")
    points = (state or {}).get("selection", {}).get("cell") if state else None
    chart_key = key or f"hm:{step.key}:{head}"
    cell = (int(points[0]["i"]), int(points[0]["j"])) if points else None
    if cell is not None and not in_bounds(step, head, cell):
        cell = None            # a selection the chart kept from a matrix of another shape (the settings changed)
    page_state.click(chart_key, cell)                  # the link carries the last clicked cell
    if cell is None:
        cell = page_state.restored(chart_key)          # … and opens it again
        if cell is not None and not in_bounds(step, head, cell):
            cell = None                                # a link's cell outside this matrix: none opened
    if cell is None:
        return None
    if explain:
        _explain_cell(trace, step.key, (head, cell), anchor=key)
    return cell


def in_bounds(step: Step, head: int | None, cell: tuple[int, int]) -> bool:
    """Is (row, column) a cell of the step's matrix (one head's; a vector is one row)?"""
    try:
        value = step.value if head is None else step.value[head]
    except IndexError:
        return False
    rows, cols = value.shape if value.ndim == 2 else (1, value.shape[-1])
    return 0 <= cell[0] < rows and 0 <= cell[1] < cols


def chart(spec: dict, target=None):
    """A small Vega-Lite chart whose inline rows travel as a pyarrow Table (Streamlit would
    otherwise build a pandas frame from them on every rerun). target: a placeholder (st.empty)."""
    import pyarrow as pa
    if target is None:
        fit_css_in_fragment()
    draw = (target or st).vega_lite_chart
    values = spec.get("data", {}).get("values") if isinstance(spec.get("data"), dict) else None
    width = "stretch" if spec.get("width") == "container" else "content"
    if values is None:
        return draw(spec=spec, width=width)
    return draw(pa.Table.from_pylist(values), spec={k: v for k, v in spec.items() if k != "data"}, width=width)


def beside(anchor: str):
    """(chart area, explanation area) in one wrapping row: the explanation sits to the right of
    the chart when the card has room for both (it appears where the student is looking), and
    wraps under the chart when it has not (a half-width card, a narrow window, a wide matrix)."""
    row = side_row(anchor)
    return row.container(width="content"), side_info(row, anchor)


def side_row(anchor: str):
    """The wrapping row of a chart and (once a cell is clicked) its explanation: a chart drawn
    straight into it is its first child, the explanation (side_info) its second."""
    return st.container(horizontal=True, gap="medium", key=f"side-{anchor_class(anchor)}")


def side_info(row, anchor: str):
    """The explanation's place in a side_row, after the chart: the rest of the row (FIT_CSS)."""
    return row.container(key=f"sideinfo-{anchor_class(anchor)}")


def click_hint(explainable: bool, as_table: bool = False, here: bool = False) -> str:
    """here: the hint stands where the answer will (beside the chart); else in the card's notes."""
    return (":material/touch_app: Click a cell" + (" or select one in the table" if as_table else "")
            + (f" to see {'here ' if here else ''}the arithmetic behind its number." if explainable
               else f" to see its value{' here' if here else ''}."))


def step_box(trace: Trace, key: str, *, title: str | None = None, why: bool | str = True, formula: bool | str = True,
             key_prefix: str = "", domain=None, max_w: float = 620) -> None:
    """Formula, shape, why, heatmap (one per head for a 3-D step) with a table toggle; a clicked
    cell's arithmetic beside the chart (under it in a half-width card, scrolled into view).

    why / formula: True for the step's own, False for none, or a text to show instead.
    As ui.step (a fragment), the table toggle and a click on a cell rerun this box only, not the
    page; inside a fragment of the page's own (step_boxes), that fragment. A rerun's cost is per element: heading, badge and formula are one Markdown; why, inputs and
    the click hint one caption; a single heatmap goes straight into its row, and the explanation's
    place in the row is made only once a cell is clicked."""
    from attention_core.explanations import can_explain
    s = trace[key]
    with st.container(border=True):
        st.markdown(heading(title or s.title, s, formula if isinstance(formula, str) else s.formula if formula else None))
        why_text = why if isinstance(why, str) else s.why if why else ""
        notes = [why_text] if why_text else []
        show = presenting()
        if s.inputs and not show:
            notes.append("Computed from: " + ", ".join(f"`{trace[i].title}`" for i in s.inputs if i in trace))
        as_table = False if show else bool(st.session_state.get(f"{key_prefix}tbl:{key}", False))
        hint = click_hint(can_explain(trace, key), as_table)
        if show:
            if notes:
                st.markdown("  \n".join(notes))
            st.caption(hint)
        else:
            st.caption("  \n".join(notes + [hint]))
            as_table = st.toggle(
                "Numbers as a table", key=f"{key_prefix}tbl:{key}",
                help="Select a cell of the table (click, or arrow keys) to see how that number was made.")
        heads = [None] if s.axes[:1] != ("head",) else list(range(s.shape[0]))
        if heads != [None] and domain is None and s.scale == "diverging":   # one colour scale for all heads
            finite = s.value[np.isfinite(s.value)]
            bound = float(np.abs(finite).max()) if finite.size else 1.0
            domain = (-bound, bound) if bound > 0 else None
        per_row = 1 if heads == [None] else min(len(heads), 2 if s.shape[-1] > 8 else 4)
        anchor = f"{key_prefix}{key}"
        row = side_row(anchor)
        # one heatmap: straight into the row; a table (and its note) or several heads: one area for them
        charts = row if heads == [None] and not as_table else row.container(width="content")
        clicked = None
        with charts:
            for start in range(0, len(heads), per_row):
                cols = st.columns(per_row) if per_row > 1 else [charts]
                for col, h in zip(cols, heads[start:start + per_row]):
                    with col:
                        label = None if h is None else f"head {h}"
                        if as_table:
                            if label:
                                st.caption(label)
                            cell = table(trace, s, h, key=f"{key_prefix}tb:{key}:{h}")
                        else:
                            cell = heatmap(trace, s, h, title=label, key=f"{key_prefix}hm:{key}:{h}", domain=domain,
                                           max_w=max_w / per_row - 60 * (per_row > 1))
                        if cell is not None:
                            clicked = (h, cell)
        if clicked is not None:
            with side_info(row, anchor):
                _explain_cell(trace, key, clicked, anchor=anchor)


# ui.step: one box, a fragment (its toggle and clicks rerun this box only). A fragment costs a
# copy of Streamlit's cursors and container stack on every page run (~0.7 ms here), so a page that
# draws several boxes one after another can draw them in one fragment with step_boxes.
step = st.fragment(step_box)


@st.fragment
def step_boxes(trace: Trace, keys, **options) -> None:
    """Several step boxes, one under the other, in one fragment: a click or a table toggle in any
    of them reruns these boxes (not the page); the page run pays for one fragment, not one each."""
    for key in keys:
        step_box(trace, key, **options)


def explained_heatmap_box(trace: Trace, step: Step, key: str, max_w: float = 620, title: str | None = None,
                          head: int | None = None) -> None:
    """A heatmap of its own (not a step's box), its clicked cell explained beside it (or under it
    where there is no room, scrolled into view). explained_heatmap is this as a fragment; call
    this one inside a fragment of your own that holds several."""
    from attention_core.explanations import can_explain
    row = side_row(key)
    with row:
        cell = heatmap(trace, step, head, title=title, key=key, max_w=max_w)
    with side_info(row, key):
        if cell is not None:
            _explain_cell(trace, step.key, (head, cell), anchor=key)
        else:
            st.caption(click_hint(step.key in trace and can_explain(trace, step.key), here=True))


# a fragment: a click reruns only this part
explained_heatmap = st.fragment(explained_heatmap_box)


def safe_token(text: str) -> str:
    """Only letters, digits, _ and - (anything else becomes -): safe in a CSS class and in HTML."""
    return re.sub(r"[^A-Za-z0-9_-]", "-", str(text))


def anchor_class(anchor: str) -> str:
    """The CSS class part of an explanation's container key (Streamlit adds st-key-)."""
    return "xp-" + safe_token(anchor)


def scroll_into_view(anchor: str, nonce: str) -> None:
    """Scroll the explanation into view (the least scroll that shows it: none if it is on screen).
    Run when its element is new, i.e. on each new click (the nonce names the cell)."""
    cls, nonce = anchor_class(anchor), safe_token(nonce)
    trusted_html(f"<span hidden data-cell='{nonce}'></span><script>"
                 f"for (const t of [60, 400]) setTimeout(() => {{ const el = document.querySelector('.st-key-{cls}');"
                 f" if (el) el.scrollIntoView({{block: 'nearest', inline: 'nearest'}}); }}, t);</script>", script=True)


def _explain_cell(trace: Trace, key: str, clicked, anchor: str | None = None) -> None:
    """The clicked cell's arithmetic, with the live numbers (or its value where no explainer exists)."""
    from attention_core.explanations import can_explain, explain

    from .explain_view import explanation
    head, (i, j) = clicked
    s = trace[key] if key in trace else trace.views[key]
    if not in_bounds(s, head, (i, j)):          # a selection kept from a matrix of another shape: nothing to say
        return
    cell = (head, i, j) if head is not None else ((j,) if s.value.ndim == 1 else (i, j))
    stored = float(s.value[cell])
    with st.container(key=anchor_class(anchor or key)):
        if key in trace and can_explain(trace, key):
            explanation(explain(trace, key, cell, precision=st.session_state.get("s.precision", 3)), stored)
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


def checked_box(text, key: str) -> None:
    """The page's one closed box "How this page is checked": what its numbers were checked against (torch,
    another form of the same formula, published figures), in words a curious student follows. Lazy: `text`
    may be a function, run only when the box is open."""
    box = st.expander("How this page is checked", icon=":material/verified:", key=key, on_change="rerun")
    if box.open:
        with box:
            st.markdown(text() if callable(text) else text)


def claims_shown(about: str, settings) -> None:
    """Record the settings a lesson page's claims (claims.py, about=`about`) were said under this run:
    tests/test_claims.py's walk checks that no claim of `about` is on the page where it does not hold."""
    st.session_state.setdefault("s.claims", {})[about] = settings


def notices(trace: Trace) -> None:
    for n in trace.notices:
        st.info(n, icon=":material/info:")


def word_tabs(key: str, one_word, all_words) -> None:
    """"One word" and "All words" as lazy tabs (st.tabs with on_change="rerun"): only the open tab's
    function runs; on a first run .open is None and the first tab is the one shown."""
    one, every = st.tabs(["One word", "All words"], key=key, on_change="rerun")
    if one.open is not False:
        with one:
            one_word()
    if every.open:
        with every:
            all_words()


def one_word_picker(trace: Trace, label: str = "One word", key: str = "one_word", default: int = 1) -> int:
    """A word of the sentence by its row. Where the key is a page control (ui/page_state.py: it travels in the
    link) its value is in the session already: kept inside the sentence and drawn without a default."""
    labels = trace.token_labels()
    options = list(range(len(labels)))
    fmt_word = lambda i: f"{i}: {labels[i]}"
    if key in st.session_state:
        held = st.session_state[key]
        if not isinstance(held, int) or isinstance(held, bool) or not 0 <= held < len(labels):
            st.session_state[key] = min(default, len(labels) - 1)
        return int(st.selectbox(label, options=options, format_func=fmt_word, key=key))
    return int(st.selectbox(label, options=options, index=min(default, len(labels) - 1), format_func=fmt_word,
                            key=key))


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


def vector_row(values: np.ndarray, labels: list[str] | None = None, digits: int = 3) -> None:
    """A short vector as a one-row table."""
    import pyarrow as pa
    v = np.atleast_1d(np.asarray(values, dtype=np.float64))
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


@functools.cache
def notation_text() -> str:
    """docs/notation.md, the app's one notation, read once per process."""
    from pathlib import Path
    return (Path(__file__).resolve().parents[1] / "docs" / "notation.md").read_text(encoding="utf-8")


def notation_box() -> None:
    """The notation page in a lazy expander: closed, it draws nothing."""
    box = st.expander("Notation: the symbols, how things are counted, the five tutorials",
                      icon=":material/menu_book:", key="notation.open", on_change="rerun")
    if box.open:
        with box:
            st.markdown(notation_text().split("\n", 1)[1])       # without its "# Notation" title
