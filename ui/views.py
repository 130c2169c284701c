"""The shared views: a Step as formula, shape badge, why, heatmap (or table) and inputs."""
from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from attention_core import Step, Trace

from .charts import heatmap_spec

NAMES = {"x_embed": "X_emb", "pe": "PE", "x": "X", "w_q": "W_Q", "w_k": "W_K", "w_v": "W_V", "q": "Q", "k": "K",
         "v": "V", "w_o": "W_O", "weights": "A", "context": "C", "scores": "S", "scaled_scores": "S/√d_k"}


def shape_badge(step: Step) -> None:
    st.badge(step.shape_text, icon=":material/straighten:", color="blue")


def table(trace: Trace, step: Step, head: int | None = None, digits: int = 3) -> None:
    value, axes = (step.value[head], step.axes[1:]) if head is not None else (step.value, step.axes)
    if value.ndim == 1:
        value, axes = value[None, :], ("",) + axes
    rows = trace.labels(axes[0], value.shape[0]) if axes[0] else [step.key]
    cols = trace.labels(axes[1], value.shape[1])
    frame = pd.DataFrame(np.where(np.isneginf(value), np.nan, value), index=rows,
                         columns=[str(c) for c in cols])
    st.dataframe(frame, column_config={c: st.column_config.NumberColumn(format=f"%.{digits}f") for c in frame.columns},
                 width="content")
    if np.isneginf(value).any():
        st.caption("Empty cells are −∞ (masked).")


def heatmap(trace: Trace, step: Step, head: int | None = None, title: str | None = None,
            key: str | None = None, domain=None, max_w: float = 620, explain: bool = False):
    """Draw one heatmap; returns the clicked cell (i, j) or None (or shows its arithmetic if `explain`)."""
    spec = heatmap_spec(trace, step, head, title, domain, max_w)
    state = st.vega_lite_chart(spec=spec, key=key or f"hm:{step.key}:{head}", on_select="rerun",
                               selection_mode="cell", width="content")
    points = (state or {}).get("selection", {}).get("cell") if state else None
    if not points:
        return None
    cell = int(points[0]["i"]), int(points[0]["j"])
    if explain:
        _explain_cell(trace, step.key, (head, cell))
    return cell


def step(trace: Trace, key: str, *, title: str | None = None, why: bool = True, formula: bool = True,
         key_prefix: str = "", domain=None) -> None:
    """Formula, shape, why, heatmap (one per head for a 3-D step) with a table toggle."""
    s = trace[key]
    with st.container(border=True):
        head_row = st.columns([5, 2])
        with head_row[0]:
            st.markdown(f"##### {title or s.title}")
        with head_row[1]:
            shape_badge(s)
        if formula:
            st.latex(s.formula)
        if why and s.why:
            st.caption(s.why)
        if s.inputs:
            st.caption("Computed from: " + ", ".join(f"`{trace[i].title}`" for i in s.inputs if i in trace))
        as_table = st.toggle("Numbers as a table", key=f"{key_prefix}tbl:{key}")
        heads = [None] if s.axes[:1] != ("head",) else list(range(s.shape[0]))
        if heads != [None] and domain is None and s.scale == "diverging":   # one colour scale for all heads
            finite = s.value[np.isfinite(s.value)]
            bound = float(np.abs(finite).max()) if finite.size else 1.0
            domain = (-bound, bound) if bound > 0 else None
        per_row = 1 if heads == [None] else min(len(heads), 2 if s.shape[-1] > 8 else 4)
        clicked = None
        for start in range(0, len(heads), per_row):
            cols = st.columns(per_row)
            for col, h in zip(cols, heads[start:start + per_row]):
                with col:
                    label = None if h is None else f"head {h}"
                    if as_table:
                        if label:
                            st.caption(label)
                        table(trace, s, h)
                    else:
                        cell = heatmap(trace, s, h, title=label, key=f"{key_prefix}hm:{key}:{h}", domain=domain,
                                       max_w=620 / per_row - 60 * (per_row > 1))
                        if cell is not None:
                            clicked = (h, cell)
        if clicked is not None:
            _explain_cell(trace, key, clicked)


def _explain_cell(trace: Trace, key: str, clicked) -> None:
    head, (i, j) = clicked
    s = trace[key]
    cell = (head, i, j) if head is not None else ((j,) if s.value.ndim == 1 else (i, j))
    try:
        from attention_core.explain import explain
    except ImportError:
        st.info(f"{s.key}{list(cell)} = {s.value[cell]:.6g}")
        return
    from .explain_view import explanation
    explanation(explain(trace, key, cell, precision=st.session_state.get("s.precision", 3)))


def notices(trace: Trace) -> None:
    for n in trace.notices:
        st.info(n, icon=":material/info:")


def one_word_picker(trace: Trace, label: str = "One word", key: str = "one_word", default: int = 1) -> int:
    labels = trace.token_labels()
    idx = min(default, len(labels) - 1)
    choice = st.selectbox(label, options=list(range(len(labels))), index=idx,
                          format_func=lambda i: f"{i}: {labels[i]}", key=key)
    return int(choice)


def vector_row(values: np.ndarray, labels: list[str] | None = None, digits: int = 3) -> None:
    """A short vector as a one-row table."""
    v = np.atleast_1d(values)
    frame = pd.DataFrame([v], columns=labels or [str(i) for i in range(v.size)])
    st.dataframe(frame, hide_index=True, width="content",
                 column_config={c: st.column_config.NumberColumn(format=f"%.{digits}f") for c in frame.columns})
