"""Heatmaps of Steps: an Altair spec built once per (trace, step, head) and reused by every rerun.

Rows are the first axis (tokens where the axis is a token axis), columns the second.
Signed values: a diverging, colour-blind-safe scale centred at 0. Weights: a sequential one.
"""
from __future__ import annotations

import math
import threading

import altair as alt
import numpy as np

from attention_core import Step, Trace

_LOCK = threading.Lock()
MAX_W, MAX_H = 620, 460
# Colour-blind-safe ranges (checked under deuteranopia and protanopia simulation in tests/test_colors.py):
# signed values run blue - near white - orange, centred at 0; weights run from near white to dark blue.
DIVERGING = ["#1f5fa8", "#f7f7f7", "#c2560b"]
SEQUENTIAL = ["#f7fbff", "#08306b"]
AXIS_TITLES = {"n": "token", "n_q": "query (token)", "n_k": "key (token)"}


def cell_size(rows: int, cols: int, max_w: float = MAX_W, big: bool = False) -> float:
    """Square cells that fit max_w × MAX_H; presenter mode allows larger cells for a projector."""
    cap, height = (64.0, 1.4 * MAX_H) if big else (44.0, MAX_H)
    return max(3.0, min(cap, (1.4 * max_w if big else max_w) / cols, height / rows))


def fmt(v: float, digits: int = 2) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "NaN"
    if np.isneginf(v):
        return "−∞"
    a = abs(v)
    if a >= 10 ** 4:
        return f"{v:.{max(digits - 1, 1)}e}"
    if a < 0.5 * 10 ** -digits:          # cells show 2 decimals; hover or the table for the exact value
        return f"{0.0:.{digits}f}"
    return f"{v:.{digits}f}"


def _matrix(step: Step, head: int | None) -> tuple[np.ndarray, tuple[str, str]]:
    value, axes = step.value, step.axes
    if head is not None:
        value, axes = value[head], axes[1:]
    if value.ndim == 1:
        return value[None, :], ("", axes[0])
    if value.ndim == 0:
        return value.reshape(1, 1), ("", "")
    return value, axes


def heatmap_spec(trace: Trace, step: Step, head: int | None = None, title: str | None = None,
                 domain: tuple[float, float] | None = None, max_w: float = MAX_W, highlight=None,
                 big: bool = False) -> dict:
    """The Vega-Lite dict for a Step (one head of a 3-D step); cached on the trace object.

    highlight: (row, col) cells to outline (e.g. each row's largest weight); big: presenter mode.
    """
    highlight = tuple(sorted({(int(i), int(j)) for i, j in highlight})) if highlight else ()
    cache_key = ("heatmap", step.key, head, title, domain, max_w, highlight, big)
    specs = trace.facts.setdefault("_specs", {})
    if cache_key in specs:
        return specs[cache_key]
    spec = _build(trace, step, head, title, domain, max_w, highlight, big)
    with _LOCK:
        specs[cache_key] = spec
    return spec


def _build(trace, step, head, title, domain, max_w, highlight=(), big=False) -> dict:
    m, (row_axis, col_axis) = _matrix(step, head)
    rows, cols = m.shape
    row_labels = trace.labels(row_axis, rows) if row_axis else [""]
    col_labels = trace.labels(col_axis, cols)
    finite = m[np.isfinite(m)]
    records = []
    for i in range(rows):
        for j in range(cols):
            v = float(m[i, j])
            records.append({"row": row_labels[i], "col": col_labels[j], "i": i, "j": j,
                            "value": v if math.isfinite(v) else None, "text": fmt(v)})
    size = cell_size(rows, cols, max_w, big)
    show_text = size >= 28 and rows * cols <= 400
    if step.scale == "sequential":
        scale = alt.Scale(range=SEQUENTIAL, domain=list(domain or (0.0, 1.0)), interpolate="lab")
        dark = 0.55 * (domain[1] if domain else 1.0)
        text_dark = alt.datum.value > dark
    elif step.scale == "mask":
        scale = alt.Scale(domain=[0, 1], range=["#d9d9d9", "#3b5bdb"])
        text_dark = alt.datum.value > 0.5
    else:
        bound = float(np.abs(finite).max()) if finite.size else 1.0
        bound = bound if bound > 0 else 1.0
        if domain:
            bound = max(abs(domain[0]), abs(domain[1]))
        scale = alt.Scale(range=DIVERGING, domain=[-bound, 0.0, bound], interpolate="lab")
        text_dark = (alt.datum.value > 0.6 * bound) | (alt.datum.value < -0.6 * bound)
    row_title = AXIS_TITLES.get(row_axis, row_axis)
    col_title = AXIS_TITLES.get(col_axis, col_axis)
    cell = alt.selection_point(name="cell", fields=["i", "j"], on="click", clear="dblclick", empty=False)
    # ~6 px a character at 11 px: labels that do not fit are turned on end; from 12 px a cell all are drawn
    fits = max(len(str(c)) for c in col_labels) * 6 <= size
    base = alt.Chart(alt.Data(values=records)).encode(
        x=alt.X("col:O", sort=col_labels, title=col_title,
                axis=alt.Axis(labelAngle=0 if cols <= 16 and fits else -90, labelOverlap=size < 12, orient="top")),
        y=alt.Y("row:O", sort=row_labels, title=row_title, axis=alt.Axis(labelOverlap=size < 12)),
    )
    rects = base.mark_rect(stroke="white", strokeWidth=0.5 if size >= 8 else 0).encode(
        color=alt.condition("isValid(datum.value)", alt.Color("value:Q", scale=scale, legend=alt.Legend(
            title=None, orient="right", gradientLength=min(200, max(60, size * rows)))), alt.value("#f0f0f0")),
        opacity=alt.condition(cell, alt.value(1.0), alt.value(0.92)),
        strokeWidth=alt.condition(cell, alt.value(3), alt.value(0.5 if size >= 8 else 0)),
        tooltip=[alt.Tooltip("row:N", title=row_title or "row"), alt.Tooltip("col:N", title=col_title),
                 alt.Tooltip("text:N", title=step.key)],
    ).add_params(cell)
    layers = [rects]
    if highlight:
        marked = set(highlight)
        layers.append(alt.Chart(alt.Data(values=[r for r in records if (r["i"], r["j"]) in marked])).mark_rect(
            filled=False, stroke="#e8590c", strokeWidth=max(1.5, min(3.0, size / 8))).encode(
            x=alt.X("col:O", sort=col_labels), y=alt.Y("row:O", sort=row_labels)))
    if show_text:
        layers.append(base.mark_text(fontSize=16 if size >= 56 else 10 if size < 34 else 12).encode(
            text="text:N", color=alt.condition(text_dark, alt.value("white"), alt.value("#222"))))
    chart = alt.layer(*layers).properties(width=size * cols, height=size * rows, title=title or "")
    spec = chart.configure_view(strokeWidth=0).configure_axis(labelFontSize=15 if big else 11,
                                                              titleFontSize=15 if big else 11,
                                                              titleFontWeight="normal").to_dict()
    spec["autosize"] = {"type": "pad", "contains": "padding"}   # cells keep their size; axes go around them
    return spec


def line_spec(data: list[dict], x: str, y: str, color: str | None = None, title: str = "",
              x_title: str | None = None, y_title: str | None = None, width: int = 520, height: int = 220,
              log: bool = False) -> dict:
    """A small line chart (curves of a few PE dimensions, loss curves)."""
    scale = alt.Scale(type="log") if log else alt.Scale()
    enc = {"x": alt.X(f"{x}:Q", title=x_title or x, scale=scale),
           "y": alt.Y(f"{y}:Q", title=y_title or y, scale=scale)}
    if color:
        enc["color"] = alt.Color(f"{color}:N", scale=alt.Scale(scheme="tableau10"), title=None,
                                 legend=alt.Legend(orient="bottom", direction="vertical"))
    chart = alt.Chart(alt.Data(values=data)).mark_line(point=len(data) <= 60).encode(
        **enc, tooltip=[f"{x}:Q", f"{y}:Q"] + ([f"{color}:N"] if color else [])).properties(width=width, height=height, title=title)
    spec = chart.to_dict()
    spec["autosize"] = {"type": "pad", "contains": "padding"}
    return spec


def grouped_bars_spec(data: list[dict], x: str, y: str, group: str, title: str = "", width: int = 260,
                      height: int = 200, y_domain=(0, 1)) -> dict:
    """Bars per x, one colour per group side by side (e.g. softmax with and without scaling)."""
    chart = alt.Chart(alt.Data(values=data)).mark_bar().encode(
        x=alt.X(f"{x}:O", title=x), xOffset=alt.XOffset(f"{group}:N"),
        y=alt.Y(f"{y}:Q", title=y, scale=alt.Scale(domain=list(y_domain))),
        color=alt.Color(f"{group}:N", scale=alt.Scale(scheme="tableau10"), title=None,
                        legend=alt.Legend(orient="bottom", direction="vertical")),
        tooltip=[f"{x}:O", f"{group}:N", alt.Tooltip(f"{y}:Q", format=".4f")],
    ).properties(width=width, height=height, title=title)
    spec = chart.to_dict()
    spec["autosize"] = {"type": "pad", "contains": "padding"}
    return spec


def training_curves_spec(history: list[dict]) -> dict:
    """Loss and accuracy per epoch, side by side (train and, if present, test)."""
    rows = [{"epoch": h["epoch"], "value": h[k], "set": k.split()[0], "measure": k.split()[1]}
            for h in history for k in h if k != "epoch"]
    base = alt.Chart(alt.Data(values=rows)).mark_line(point=len(history) <= 40).encode(
        x=alt.X("epoch:Q", title="epoch"), color=alt.Color("set:N", title=None, scale=alt.Scale(scheme="tableau10")),
        tooltip=["epoch:Q", "set:N", alt.Tooltip("value:Q", format=".4f")])
    loss = base.transform_filter(alt.datum.measure == "loss").encode(
        y=alt.Y("value:Q", title="loss")).properties(width=300, height=200, title="Cross-entropy loss")
    acc = base.transform_filter(alt.datum.measure == "accuracy").encode(
        y=alt.Y("value:Q", title="accuracy", scale=alt.Scale(domain=[0, 1]))).properties(
        width=300, height=200, title="Accuracy")
    spec = alt.hconcat(loss, acc).to_dict()
    spec["autosize"] = {"type": "pad", "contains": "padding"}
    return spec
