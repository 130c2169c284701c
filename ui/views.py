"""The shared views. Here: a Step's box (formula, shape badge, why, heatmap per head or a table, a clicked
cell's arithmetic beside it) and a heatmap explained beside itself. Pages take every shared view from this
module; the parts live, one idea each, in:

    matrix.py        a Step's heatmap or table, a small chart, short vectors as tables
    widgets.py       the checks box, the claims said, notices, word tabs and picker, the notation box
    explain_view.py  a clicked cell: in the matrix?, its arithmetic, scrolled into view
    raw_html.py      the app's one door to raw HTML: the chart CSS, the scroll script
"""
from __future__ import annotations

import numpy as np
import streamlit as st

from attention_core import Step, Trace

from .room import hide as room_hide
from .explain_view import explain_cell, in_bounds
from .matrix import chart, gapped_column, heatmap, number_columns, table, vector_row, vector_rows
from .raw_html import FIT_CSS, anchor_class, fit_css, fit_css_in_fragment, safe_token, scroll_into_view, trusted_html
from .settings_state import presenting
from .widgets import checked_box, claims_shown, notation_box, notation_text, notices, one_word_picker, word_tabs

__all__ = ["badge_text", "heading", "shape_badge", "side_row", "side_info", "click_hint", "step_box", "step",
           "step_boxes", "explained_heatmap_box", "explained_heatmap",
           # the parts, found here too
           "table", "heatmap", "chart", "number_columns", "gapped_column", "vector_row", "vector_rows",
           "checked_box", "claims_shown", "notices", "word_tabs", "one_word_picker", "notation_text", "notation_box",
           "in_bounds", "explain_cell", "FIT_CSS", "trusted_html", "fit_css", "fit_css_in_fragment", "safe_token",
           "anchor_class", "scroll_into_view", "presenting"]


def badge_text(step: Step) -> str:
    """The shape with its named axes as a blue badge, in Streamlit's markdown (no icon: a screen reader read it
    out in every step's heading, "straighten icon")."""
    return f":blue-badge[{step.shape_text}]"


def heading(title: str, step: Step, formula: str | None = None) -> str:
    """A step's title, shape badge and (display) formula as one Markdown body: Streamlit's
    Markdown renders $$…$$ with KaTeX exactly as st.latex does, in one element instead of two."""
    text = f"##### {title} &nbsp; {badge_text(step)}"
    return text + (f"\n\n$$\n{formula}\n$$" if formula else "")


def shape_badge(step: Step) -> None:
    st.markdown(badge_text(step))


def side_row(anchor: str):
    """The wrapping row of a chart and (once a cell is clicked) its explanation: a chart drawn
    straight into it is its first child, the explanation (side_info) its second."""
    return st.container(horizontal=True, gap="medium", key=f"side-{anchor_class(anchor)}")


def side_info(row, anchor: str):
    """The explanation's place in a side_row, after the chart: the rest of the row (FIT_CSS)."""
    return row.container(key=f"sideinfo-{anchor_class(anchor)}")


def click_hint(explainable: bool, as_table: bool = False, here: bool = False) -> str:
    """here: the hint stands where the answer will (beside the chart); else in the card's notes."""
    return (":material/touch_app: Click a cell" + (" or select one in the table" if as_table else
                                                    " (or pick it under the chart)")
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
        if why is True and why_text and room_hide.whole(key):     # a stop hides the step: its words wait too
            why_text = room_hide.WHY_WAITS
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
        clicked, under = None, {}
        with charts:
            for start in range(0, len(heads), per_row):
                cols = st.columns(per_row) if per_row > 1 else [charts]
                if len(heads) > per_row:        # rows of heads: a clicked cell's arithmetic goes under its own row
                    under.update(dict.fromkeys(heads[start:start + per_row], st.empty()))
                for col, h in zip(cols, heads[start:start + per_row]):
                    with col:
                        label = None if h is None else f"head {h}"
                        if as_table:
                            if label:
                                st.caption(label)
                            cell = table(trace, s, h, key=f"{key_prefix}tb:{key}:{h}")
                        else:
                            cell = heatmap(trace, s, h, title=label, key=f"{key_prefix}hm:{key}:{h}", domain=domain,
                                           max_w=max_w / per_row - 60 * (per_row > 1), keys=True)
                        if cell is not None:
                            clicked = (h, cell)
        if clicked is not None:
            with under[clicked[0]].container() if clicked[0] in under else side_info(row, anchor):
                explain_cell(trace, key, clicked, anchor=anchor, table=as_table)


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
        cell = heatmap(trace, step, head, title=title, key=key, max_w=max_w, keys=True)
    with side_info(row, key):
        if cell is not None:
            explain_cell(trace, step.key, (head, cell), anchor=key)
        else:
            st.caption(click_hint(step.key in trace and can_explain(trace, step.key), here=True))


# a fragment: a click reruns only this part
explained_heatmap = st.fragment(explained_heatmap_box)
