"""Heatmaps of Steps: an Altair spec built once per (trace, step, head) and reused by every rerun.

Rows are the first axis (tokens where the axis is a token axis), columns the second. Colours: ui/colours.py.
"""
from __future__ import annotations

import hashlib
import json
import math
import threading
from collections import OrderedDict

import numpy as np

from attention_core import Step, Trace

from .chart_words import cell_words, chart_name, explained_sentence, heatmap_sentence, unsaid
from .colours import (DARK_FROM, DASHES, DIVERGING, MASK, NO_NUMBER, SEQUENTIAL, SERIES, TEXT_DARK,  # noqa: F401
                      TEXT_LIGHT, explained_outline, over_cells)

MAX_W, MAX_H = 620, 460
AXIS_TITLES = {"n": "token", "n_q": "query (token)", "n_k": "key (token)"}


def cell_size(rows: int, cols: int, max_w: float = MAX_W, big: bool = False) -> float:
    """Square cells that fit max_w × MAX_H; presenter mode allows larger cells (and a taller chart)
    for a projector, but never a wider one than max_w: the chart must fit its card."""
    cap, height = (BIG_CELL, 1.4 * MAX_H) if big else (44.0, MAX_H)
    return max(3.0, min(cap, max_w / cols, height / rows))


# Presenter mode (big=True): a heatmap's numbers at least BIG_NUMBER_PX (where a cell holds them; elsewhere none:
# hover, a click or the table give them), axis labels BIG_AXIS_PX; other charts' fonts grow by BIG_FONT_SCALE.
BIG_NUMBER_PX, BIG_NUMBER_MAX_PX, BIG_AXIS_PX, BIG_TITLE_PX = 16, 20, 16, 18
BIG_CELL = 80.0             # px, the largest cell in presenter mode (44 otherwise)
BIG_FONT_SCALE, BIG_FONT_MIN_PX = 1.3, 13


def number_font(size: float, chars: int, big: bool = False) -> int | None:
    """The font size (px) of the numbers in a heatmap's cells of `size` px, or None where they do not fit.

    A number takes about 0.52 em a character (digits 0.56 em, the point 0.28; "−0.96": 5 characters, "−0.012" or
    "1.2e-3": 6, a mask's "1": 1). Presenter mode never writes them under BIG_NUMBER_PX: a number too small to read
    from the back row is left to the hover, a click and the table.

    >>> number_font(80, 5, big=True), number_font(64, 5, big=True), number_font(48, 5, big=True), number_font(40, 5, big=True)
    (20, 20, 16, None)
    >>> number_font(44, 5), number_font(30, 5), number_font(30, 6), number_font(60, 6)
    (12, 10, None, 16)
    """
    if big:
        px = min(BIG_NUMBER_MAX_PX, int((size - 6) / (0.52 * chars)))
        return px if px >= BIG_NUMBER_PX else None
    if size < (28 if chars <= 5 else 40):
        return None
    return 16 if size >= 56 else 10 if size < 34 else 12


def number_chars(biggest: float, digits, negative: bool) -> int:
    """How many characters the widest number of a heatmap takes as its cells write it (see _build's text).

    >>> number_chars(0.96, 2, False), number_chars(50.13, 2, True), number_chars(0.0042, "e", True)
    (4, 6, 7)
    """
    wide = digits == "e" or biggest >= 10 ** 4                    # Vega writes 4.2e-3 (Python: 4.2e-03)
    text = f"{biggest:.1e}".replace("e-0", "e-").replace("e+0", "e+") if wide else f"{biggest:.{digits}f}"
    return len(text) + negative


def big_spec(spec: dict) -> dict:
    """A Vega-Lite spec for presenter mode: every font size it sets BIG_FONT_SCALE times larger (at least
    BIG_FONT_MIN_PX), and larger defaults for the axes, legends, titles and text it leaves unset. The data (its
    rows) is shared, not copied.

    >>> s = big_spec({"data": {"values": [{"fontSize": 1}]}, "mark": {"type": "text", "fontSize": 11},
    ...               "encoding": {"x": {"axis": {"labelFontSize": 9}}}})
    >>> s["mark"]["fontSize"], s["encoding"]["x"]["axis"]["labelFontSize"], s["data"]["values"][0]["fontSize"]
    (14, 13, 1)
    >>> s["config"]["axis"]["labelFontSize"]
    14
    """
    def grow(node):
        if isinstance(node, dict):
            return {k: v if k in ("data", "datasets", "values") else
                    max(BIG_FONT_MIN_PX, round(v * BIG_FONT_SCALE)) if k.endswith(("fontSize", "FontSize"))
                    and isinstance(v, (int, float)) and not isinstance(v, bool) else grow(v) for k, v in node.items()}
        if isinstance(node, list):
            return [grow(v) for v in node]
        return node
    out = grow(spec)
    config = out.setdefault("config", {})
    for part, sizes in (("axis", {"labelFontSize": 14, "titleFontSize": 15}),
                        ("legend", {"labelFontSize": 13, "titleFontSize": 14}),
                        ("header", {"labelFontSize": 15, "titleFontSize": 15}),
                        ("title", {"fontSize": BIG_TITLE_PX}), ("text", {"fontSize": 15})):
        config[part] = {**sizes, **config.get(part, {})}
    return out


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


class _SpecCache:
    """A bounded, thread-safe LRU of built heatmaps, shared by every session of the process.

    Keyed by the *content* (a digest of the numbers, the labels and the view options), so a
    slider that changes only the weights does not rebuild the charts of X or W_Q.
    """

    def __init__(self, max_entries: int = 256):
        self.max_entries, self.items, self.lock = max_entries, OrderedDict(), threading.Lock()

    def get(self, key, build):
        with self.lock:
            if key in self.items:
                self.items.move_to_end(key)
                return self.items[key]
        value = build()
        with self.lock:
            self.items[key] = value
            while len(self.items) > self.max_entries:
                self.items.popitem(last=False)
        return value


_SPECS = _SpecCache()


def heatmap_spec(trace: Trace, step: Step, head: int | None = None, title: str | None = None,
                 domain: tuple[float, float] | None = None, max_w: float = MAX_W, highlight=None,
                 big: bool = False, hidden=(), marked=(), explained=None) -> tuple[dict, object]:
    """(Vega-Lite spec, cells frame) for a Step (one head of a 3-D step), built once per content.

    The spec is a plain Vega-Lite dict (the same chart Altair would write, without its per-call
    cost); the cells travel separately as a small pyarrow Table, one row per cell:
    i, j, v (and h for highlighted cells). highlight: (row, col) cells to outline; big: presenter mode.
    hidden: (row, col) cells drawn as "?" (a lesson stop's predict state on a student's screen): their numbers
    are not in the cells (v is NaN there, q is 1), the tooltip or the colour bar's ends. marked: cells outlined
    with dashes (the teacher's screen: hidden on the students' until the reveal). explained: the (row, col) whose
    arithmetic the page shows, outlined (colours.explained_outline) and named in the text alternative; the same
    cells (frame) as without it.
    """
    m, (row_axis, col_axis) = _matrix(step, head)
    row_labels = tuple(trace.labels(row_axis, m.shape[0])) if row_axis else ("",)
    col_labels = tuple(trace.labels(col_axis, m.shape[1]))
    highlight = tuple(sorted({(int(i), int(j)) for i, j in highlight})) if highlight else ()
    hidden = tuple(sorted({(int(i), int(j)) for i, j in hidden})) if hidden else ()
    marked = tuple(sorted({(int(i), int(j)) for i, j in marked})) if marked else ()
    digest = hashlib.blake2b(np.ascontiguousarray(m).tobytes(), digest_size=16).hexdigest()
    key = (digest, m.shape, row_labels, col_labels, row_axis, col_axis, step.key, step.scale, title,
           domain, max_w, highlight, big, hidden, marked)
    spec, frame = _SPECS.get(key, lambda: _build(m, row_labels, col_labels, row_axis, col_axis, step, title, domain,
                                                 max_w, highlight, big, hidden, marked))
    if explained is None or not (0 <= explained[0] < m.shape[0] and 0 <= explained[1] < m.shape[1]):
        return spec, frame
    cell = (int(explained[0]), int(explained[1]))
    cells = spec["layer"][0]["encoding"]
    return _SPECS.get(key + cell, lambda: ({
        **spec, "description": f"{spec['description']} {explained_sentence(cell, row_labels, col_labels)}",
        "layer": spec["layer"] + explained_outline(cells["x"], cells["y"], cell, spec["width"] / m.shape[1],
                                                   spec["height"] / m.shape[0], big)}, frame))


def _labels_expr(labels) -> str:
    """A Vega expression mapping an index to its label: ["the","cat"][datum.value]."""
    return json.dumps(list(map(str, labels)), ensure_ascii=False) + "[datum.value]"


def _flags(rows: int, cols: int, cells) -> np.ndarray:
    flags = np.zeros((rows, cols), dtype=np.int8)
    for a, b in cells:
        if a < rows and b < cols:
            flags[a, b] = 1
    return flags


def _build(m, row_labels, col_labels, row_axis, col_axis, step, title, domain, max_w, highlight, big,
           hidden=(), marked=()):
    import pyarrow as pa                      # Streamlit sends a pyarrow Table as is (no pandas round trip)
    rows, cols = m.shape
    i, j = np.divmod(np.arange(rows * cols), cols)
    secret = _flags(rows, cols, hidden).astype(bool) if hidden else None
    if secret is not None:                    # a hidden number never leaves the server
        m = np.where(secret, np.nan, m)
    columns = {"i": i, "j": j, "v": m.ravel().astype(np.float64)}
    if highlight:
        columns["h"] = _flags(rows, cols, highlight).ravel()
    if secret is not None:
        columns["q"] = secret.ravel().astype(np.int8)
    if marked:
        columns["m"] = _flags(rows, cols, marked).ravel()
    frame = pa.table(columns)
    finite = m[np.isfinite(m)]
    biggest = float(np.abs(finite).max()) if finite.size else 0.0
    if biggest < 1e-12:                       # all zero up to rounding (e.g. a gradient that cancels): say so
        m = np.where(np.isfinite(m), 0.0, m)
        frame = frame.set_column(2, "v", pa.array(m.ravel().astype(np.float64)))
        finite, biggest = np.zeros(1), 0.0
    size = cell_size(rows, cols, max_w, big)
    # a wide matrix (4 × 50 embeddings) keeps its cells' width but its rows get room for their labels
    row_h = max(size, min(18.0, MAX_H / rows))
    narrow = max_w < 300                      # a small multiple: its colour bar goes underneath
    # cell text with enough digits for the matrix's own magnitude (gradients are often ~1e-3)
    digits = "e" if 0 < biggest < 0.01 else 3 if biggest < 0.1 else 2
    legend_format = ".2~g"
    chars = (1 if step.scale == "mask" else number_chars(biggest, digits, bool((finite < 0).any())) if big
             else 5 if digits == 2 else 6)
    number_px = number_font(size, chars, big) if rows * cols <= 400 else None
    bound = 1.0
    if step.scale == "sequential":
        lo, hi = domain or (0.0, 1.0)
        scale = {"range": SEQUENTIAL, "domain": [lo, hi], "interpolate": "lab"}
        dark_test = f"datum.v > {lo + DARK_FROM['sequential'] * (hi - lo)!r}"
    elif step.scale == "mask":
        scale = {"domain": [0, 1], "range": MASK}
        dark_test = "datum.v > 0.5"
    else:
        bound = biggest if biggest > 0 else 1.0
        if domain:
            bound = max(abs(domain[0]), abs(domain[1]))
        scale = {"range": DIVERGING, "domain": [-bound, 0.0, bound], "interpolate": "lab"}
        dark_test = (f"(datum.v < {-DARK_FROM['negative'] * bound!r} || datum.v > "
                     f"{DARK_FROM['positive'] * bound!r})")
    row_title = AXIS_TITLES.get(row_axis, row_axis)
    col_title = AXIS_TITLES.get(col_axis, col_axis)
    fits = max(len(str(c)) for c in col_labels) * 6 <= size     # ~6 px a character at 11 px
    font = BIG_AXIS_PX if big else 11
    x = {"field": "j", "type": "ordinal", "title": col_title or None,
         "axis": {"orient": "top", "labelExpr": _labels_expr(col_labels), "labelAngle": 0 if cols <= 16 and fits else -90,
                  "labelOverlap": bool(size < 12), "labelFontSize": font, "titleFontSize": font,
                  "titleFontWeight": "normal"}}
    y = {"field": "i", "type": "ordinal", "title": row_title or None,
         "axis": {"labelExpr": _labels_expr(row_labels), "labelOverlap": bool(row_h < 14), "labelFontSize": font,
                  "titleFontSize": font, "titleFontWeight": "normal"}}
    if step.scale == "mask":
        number = "datum.v > 0.5 ? '1' : '0'"
    elif digits == "e":
        number = "datum.v == 0 ? '0' : format(datum.v, '.1e')"
    else:
        zero = "0." + "0" * digits
        number = (f"abs(datum.v) >= 10000 ? format(datum.v, '.1e') : abs(datum.v) < {0.5 * 10 ** -digits!r} ? "
                  f"'{zero}' : format(datum.v, '.{digits}f')")
    text_expr = f"!isFinite(datum.v) ? (isNaN(datum.v) ? 'NaN' : datum.v < 0 ? '−∞' : '∞') : {number}"
    if secret is not None:
        text_expr = f"datum.q == 1 ? '?' : {text_expr}"
    label_of = lambda labels, field: f"{json.dumps(list(map(str, labels)), ensure_ascii=False)}[datum.{field}]"
    calc = [{"calculate": text_expr, "as": "t"},
            {"calculate": ("datum.q == 1 ? '? (hidden until your teacher reveals it)' : " if secret is not None
                           else "") + "isFinite(datum.v) ? format(datum.v, '.6g') : datum.t", "as": "exact"},
            {"calculate": label_of(row_labels, "i"), "as": "row"},
            {"calculate": label_of(col_labels, "j"), "as": "col"},
            {"calculate": cell_words(row_title, col_title), "as": "say"}]       # a cell's words for a screen reader
    stroke = 0.5 if size >= 8 else 0
    rects = {
        # a hidden cell (v NaN) is still drawn and clickable: Vega-Lite would drop a datum its colour cannot use
        # the explained cell is outlined by its own layers (heatmap_spec's explained), not by the click's selection:
        # the chart keeps that after a pick with the keyboard has moved the explanation to another cell
        "mark": {"type": "rect", "stroke": "white", "strokeWidth": stroke,
                 **({"invalid": None} if secret is not None else {})},
        "encoding": {
            "x": x, "y": y,
            "color": {"condition": {"test": "isFinite(datum.v)", "field": "v", "type": "quantitative", "scale": scale,
                                    "legend": None if step.scale == "mask" else {"title": None, "format": legend_format,
                                               **({"orient": "bottom", "direction": "horizontal",
                                                   "gradientLength": max(60, min(160, size * cols))} if narrow else
                                                  {"orient": "right",
                                                   "gradientLength": min(200, max(60, size * rows))})}},
                      "value": NO_NUMBER},
            "description": {"field": "say", "type": "nominal"},
            "tooltip": [{"field": "row", "type": "nominal", "title": row_title or "row"},
                        {"field": "col", "type": "nominal", "title": col_title or "column"},
                        {"field": "exact", "type": "nominal", "title": step.title}],
        },
        "params": [{"name": "cell", "select": {"type": "point", "fields": ["i", "j"], "on": "click",
                                                "clear": "dblclick"}}],
    }
    signed = step.scale not in ("sequential", "mask")
    glyph_px = 0 if number_px else min(BIG_NUMBER_MAX_PX if big else 16, int(min(size, row_h) * 0.8))
    layers = [rects] + over_cells(x, y, size, glyph_px, highlight, marked, dark_test, signed and bound,
                                  secret is not None, not np.isfinite(m).all(), BIG_NUMBER_PX if big else 6)
    if number_px:
        layers.append({"mark": {"type": "text", "fontSize": number_px},
                       "encoding": {"x": x, "y": y, "text": {"field": "t", "type": "nominal"},
                                    "color": {"condition": {"test": f"isFinite(datum.v) && {dark_test}",
                                                            "value": TEXT_LIGHT}, "value": TEXT_DARK}}})
    unsaid(layers, x, y, row_title, col_title, row_labels, col_labels)   # the cells' words are said once
    spec = {"$schema": "https://vega.github.io/schema/vega-lite/v5.json",
            "description": heatmap_sentence(chart_name(step.title, title), m, row_labels, col_labels, row_title, col_title,
                                            step.scale, int(secret.sum()) if secret is not None else 0),
            "title": title or "", "width": size * cols, "height": row_h * rows, "transform": calc,
            "layer": layers, "config": {"view": {"strokeWidth": 0},
                                        **({"title": {"fontSize": BIG_TITLE_PX}, "legend": {"labelFontSize": 14}}
                                           if big else {})},
            "autosize": {"type": "pad", "contains": "padding"}}          # cells keep their size
    return spec, frame


def standalone(spec: dict, frame) -> dict:
    """The spec with its cells inline, for tools that take one JSON document (vl-convert, files)."""
    values = [{k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in r.items()}
              for r in frame.to_pylist()]
    return {**spec, "data": {"values": values}}


def neighbours_spec(word: str, rows: list[tuple[str, float]]) -> dict:
    """Nearest neighbours as horizontal bars of cosine similarity, closest first (plain Vega-Lite:
    the words are drawn as SVG text, never as HTML)."""
    values = [{"word": w, "cosine similarity": float(c), "rank": k} for k, (w, c) in enumerate(rows)]
    return {"$schema": "https://vega.github.io/schema/vega-lite/v5.json", "data": {"values": values},
            "title": f"Closest to “{word}”", "width": 300, "height": 22 * max(1, len(values)),
            "encoding": {"y": {"field": "word", "type": "nominal", "title": None,
                               "sort": {"field": "rank", "order": "ascending"}, "axis": {"labelFontSize": 12}},
                         "x": {"field": "cosine similarity", "type": "quantitative", "scale": {"domain": [-1, 1]},
                               "title": "cosine similarity"}},
            "layer": [{"mark": {"type": "bar", "color": "#3b5bdb"},
                       "encoding": {"tooltip": [{"field": "word", "type": "nominal"},
                                                {"field": "cosine similarity", "type": "quantitative",
                                                 "format": ".3f"}]}},
                      {"mark": {"type": "text", "align": "left", "dx": 4, "fontSize": 11},
                       "encoding": {"text": {"field": "cosine similarity", "type": "quantitative", "format": ".3f"},
                                    "x": {"value": 305}}}],
            "autosize": {"type": "pad", "contains": "padding"}}


def line_spec(data: list[dict], x: str, y: str, color: str | None = None, title: str = "",
              x_title: str | None = None, y_title: str | None = None, width: int = 520, height: int = 220,
              log: bool = False) -> dict:
    """A small line chart (curves of a few PE dimensions, loss curves)."""
    import altair as alt
    scale = alt.Scale(type="log") if log else alt.Scale()
    x_scale = alt.Scale(type="log", nice=False) if log else alt.Scale(nice=False)   # the axis ends with the data
    enc = {"x": alt.X(f"{x}:Q", title=x_title or x, scale=x_scale),
           "y": alt.Y(f"{y}:Q", title=y_title or y, scale=scale)}
    if color:                   # a series is told by its colour and its dash (one legend, a line sample each)
        legend = alt.Legend(orient="bottom", direction="vertical", symbolType="stroke", symbolStrokeWidth=2.5)
        enc["color"] = alt.Color(f"{color}:N", scale=alt.Scale(range=SERIES), title=None, legend=legend)
        enc["strokeDash"] = alt.StrokeDash(f"{color}:N", scale=alt.Scale(range=DASHES), title=None, legend=legend)
    chart = alt.Chart(alt.Data(values=data)).mark_line(point=len(data) <= 60).encode(
        **enc, tooltip=[f"{x}:Q", f"{y}:Q"] + ([f"{color}:N"] if color else [])).properties(width=width, height=height, title=title)
    spec = chart.to_dict()
    spec["autosize"] = {"type": "pad", "contains": "padding"}
    return spec


def grouped_bars_spec(data: list[dict], x: str, y: str, group: str, title: str = "", width: int = 260,
                      height: int = 200, y_domain=(0, 1)) -> dict:
    """Bars per x, one colour per group side by side (e.g. softmax with and without scaling)."""
    import altair as alt
    chart = alt.Chart(alt.Data(values=data)).mark_bar().encode(
        x=alt.X(f"{x}:O", title=x), xOffset=alt.XOffset(f"{group}:N"),
        y=alt.Y(f"{y}:Q", title=y, scale=alt.Scale(domain=list(y_domain))),
        color=alt.Color(f"{group}:N", scale=alt.Scale(range=SERIES), title=None,
                        legend=alt.Legend(orient="bottom", direction="vertical")),
        tooltip=[f"{x}:O", f"{group}:N", alt.Tooltip(f"{y}:Q", format=".4f")],
    ).properties(width=width, height=height, title=title)
    spec = chart.to_dict()
    spec["autosize"] = {"type": "pad", "contains": "padding"}
    return spec


def training_curves_spec(history: list[dict]) -> dict:
    """Loss and accuracy per epoch, side by side (train and, if present, test)."""
    import altair as alt
    rows = [{"epoch": h["epoch"], "value": h[k], "set": k.split()[0], "measure": k.split()[1]}
            for h in history for k in h if k != "epoch"]
    base = alt.Chart(alt.Data(values=rows)).mark_line(point=len(history) <= 40).encode(
        x=alt.X("epoch:Q", title="epoch"), color=alt.Color("set:N", title=None, scale=alt.Scale(range=SERIES)),
        strokeDash=alt.StrokeDash("set:N", title=None, scale=alt.Scale(range=DASHES)),
        tooltip=["epoch:Q", "set:N", alt.Tooltip("value:Q", format=".4f")])
    loss = base.transform_filter(alt.datum.measure == "loss").encode(
        y=alt.Y("value:Q", title="loss")).properties(width=300, height=200, title="Cross-entropy loss")
    acc = base.transform_filter(alt.datum.measure == "accuracy").encode(
        y=alt.Y("value:Q", title="accuracy", scale=alt.Scale(domain=[0, 1]))).properties(
        width=300, height=200, title="Accuracy")
    spec = alt.hconcat(loss, acc).to_dict()
    spec["autosize"] = {"type": "pad", "contains": "padding"}
    return spec
