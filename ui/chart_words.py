"""What a chart shows, in one or two sentences a screen reader reads (the chart's Vega-Lite `description`, which
Streamlit's chart puts on its element as aria-label), computed from the chart's own numbers: what it is, its axes,
its extremes or main pattern. No Streamlit here: plain functions of the numbers, tested in tests/test_chart_words.py.

    heatmap_sentence   a matrix drawn as a heatmap (the extremes; for weights, the largest share of a row)
    explained_sentence the cell a heatmap explains (its outlined cell), by its row and column
    spec_sentence      a line or bar chart from its spec's rows and encoding (each series' ends and extremes)
    patterns_sentence  a grid of heads' attention patterns (each layer's most focused head and where it looks)
"""
from __future__ import annotations

import math

import numpy as np

MINUS = "\u2212"


def number(v: float, biggest: float | None = None) -> str:
    """A number as the heatmaps write it: 2 decimals, 3 under 0.1, one significant digit with an exponent under
    0.01 or from 10,000; the minus sign a real one.

    >>> number(0.9612), number(-1.5), number(0.0421), number(0.0042), number(123456.0), number(0.0, 0.5)
    ('0.96', '−1.50', '0.042', '4.2e-3', '1.2e+5', '0.00')
    >>> number(-0.004, 0.5), number(0.0, 0.005)
    ('0.00', '0')
    """
    big = abs(v) if biggest is None else biggest
    if not math.isfinite(v):
        return "NaN" if math.isnan(v) else (MINUS + "∞" if v < 0 else "∞")
    if 0 < big < 0.01 and v == 0:
        return "0"                                 # as a cell of a matrix this small writes it
    if abs(v) >= 1e4 or (0 < big < 0.01 and v != 0):
        text = f"{v:.1e}".replace("e-0", "e-").replace("e+0", "e+")
    else:
        text = f"{v:.{3 if big < 0.1 else 2}f}"
    if not text.strip("-0."):                      # rounds to zero: the cell writes 0.00, never −0.00
        return text.lstrip("-")
    return text.replace("-", MINUS, 1) if text.startswith("-") else text


def _q(label) -> str:
    return f"“{label}”"


def _ends(labels) -> str:
    """'“the” … “movie”' for a long axis, all of them for three or fewer."""
    labels = [str(x) for x in labels]
    if len(labels) <= 3:
        return ", ".join(map(_q, labels))
    return f"{_q(labels[0])} … {_q(labels[-1])}"


def _axis(count: int, noun: str, title: str | None, labels) -> str:
    numbered = [str(x) for x in labels] in ([str(k) for k in range(len(labels))], [""] * len(labels))
    what = f"{count} {noun}{'' if count == 1 else 's'}"
    about = f"{title}, " if title else ""
    return f"{what} ({about}{_ends(labels)})" if not numbered else f"{what}" + (f" ({title})" if title else "")


def heatmap_sentence(what: str, m: np.ndarray, row_labels, col_labels, row_title: str | None = None,
                     col_title: str | None = None, scale: str = "diverging", hidden: int = 0) -> str:
    """The text alternative of a heatmap of matrix m. With hidden numbers (NaN in m: a lesson stop before the
    reveal), only its axes and how many wait: no extreme or pattern of the rest, which could give them away.

    >>> a = np.array([[0.02, 0.96, 0.02], [0.5, 0.25, 0.25]])
    >>> heatmap_sentence("weights A", a, ["i", "love"], ["i", "love", "it"], "query (token)", "key (token)",
    ...                  "sequential")
    'Heatmap of weights A: 2 rows (query (token), “i”, “love”) by 3 columns (key (token), “i”, “love”, “it”). Each row sums to 1; the largest weight: “love” takes 0.96 of row “i”; the smallest: 0.02, “i” in row “i”.'
    """
    rows, cols = m.shape
    head = (f"Heatmap of {what}: {_axis(rows, 'row', row_title, row_labels)} by "
            f"{_axis(cols, 'column', col_title, col_labels)}.")
    shown = ~np.isnan(m)
    finite = np.isfinite(m)
    parts = []
    if hidden:                                 # a stop's predict state: no number of it is said (the extremes of
        pass                                   # the rest could give the hidden one away), only what waits
    elif scale == "mask":
        ones = int(((m > 0.5) & finite).sum())
        parts.append(f"{ones} of {int(shown.sum())} cells are 1, the rest 0")
    elif finite.any():
        values = np.where(finite, m, np.nan)
        big = float(np.nanmax(np.abs(values)))
        hi, lo = np.unravel_index(np.nanargmax(values), m.shape), np.unravel_index(np.nanargmin(values), m.shape)
        one = rows == 1 and not str(row_labels[0])            # a vector: its cells are named by their column
        at = lambda ij: (f"row {_q(row_labels[ij[0]])}, " if not one else "") + f"column {_q(col_labels[ij[1]])}"
        of = lambda ij: "" if one else f" of row {_q(row_labels[ij[0]])}"
        in_row = lambda ij: "" if one else f" in row {_q(row_labels[ij[0]])}"
        full_rows = [r for r in range(rows) if shown[r].all()]
        sums = [float(m[r][finite[r]].sum()) for r in full_rows]
        weights = (scale == "sequential" and rows > 0 and cols > 1 and full_rows and float(np.nanmin(values)) >= 0
                   and all(abs(s - 1) < 1e-6 for s in sums))
        if weights:
            parts.append(f"{'Each row sums' if not one else 'It sums'} to 1; the largest weight: "
                         f"{_q(col_labels[hi[1]])} takes {number(float(m[hi]), big)}{of(hi)}; the smallest: "
                         f"{number(float(m[lo]), big)}, {_q(col_labels[lo[1]])}{in_row(lo)}")
        elif float(m[hi]) == float(m[lo]):
            parts.append(f"Every {'unmasked ' if np.isneginf(m).any() else ''}value is {number(float(m[hi]), big)}")
        else:                                  # −∞ cells are below any value: the range is of the others
            parts.append(f"{'Unmasked values' if np.isneginf(m).any() else 'Values'} run from "
                         f"{number(float(m[lo]), big)} ({at(lo)}) to {number(float(m[hi]), big)} ({at(hi)})")
    masked = int((np.isneginf(m)).sum())
    if masked:
        parts.append(f"{masked} cell{'' if masked == 1 else 's'} masked ({MINUS}∞)")
    if hidden:
        parts.append(f"{hidden} number{' is' if hidden == 1 else 's are'} hidden until your teacher reveals "
                     f"{'it' if hidden == 1 else 'them'}")
    return head + (" " + "; ".join(parts) + "." if parts else "")


def explained_sentence(cell, row_labels, col_labels) -> str:
    """The heatmap's text alternative says which cell is explained (outlined on the chart): where it is, never its
    number (a hidden one's "?" is outlined too).

    >>> explained_sentence((1, 0), ["i", "love"], ["i", "love", "it"]), explained_sentence((0, 3), [""], range(5))
    ('The explained cell: row 1 (“love”), column 0 (“i”).', 'The explained cell: column 3.')
    """
    def at(noun: str, k: int, labels) -> str:
        label = str(list(labels)[k])
        return f"{noun} {k}" + ("" if label in ("", str(k)) else f" ({_q(label)})")
    i, j = int(cell[0]), int(cell[1])
    one = len(row_labels) == 1 and not str(row_labels[0])             # a vector: its cells are named by their column
    return "The explained cell: " + ("" if one else at("row", i, row_labels) + ", ") + at("column", j, col_labels) + "."


def chart_name(step_title: str, title: str | None) -> str:
    """What a heatmap shows: its step's title, with the chart's own title when it adds to it ('head 0' of
    Attention weights: three charts of one page are each "head 0")."""
    if not title or title == step_title or step_title in title:
        return title or step_title
    return f"{step_title}, {title}"


def cell_words(row_title: str | None, col_title: str | None) -> str:
    """A heatmap cell's own words (its rect's aria-label), a Vega expression: 'query (token) “i”, key (token) “love”:
    0.955186' (`exact`: the number, or the words of a hidden one)."""
    import json
    said = lambda title, default: json.dumps(f"{title or default} ", ensure_ascii=False)
    row = f"(datum.row ? {said(row_title, 'row')} + datum.row + ', ' : '')"    # a vector's cells: by column only
    return f"{row} + {said(col_title, 'column')} + datum.col + ': ' + datum.exact"


def unsaid(layers, x: dict, y: dict, row_title, col_title, row_labels, col_labels) -> None:
    """A heatmap's layers drawn over its cells (layers[1:]: the numbers, outlines) say nothing of their own (the cells
    do), its axes name their words (Vega would list the indices 0, 1, … the labels are drawn from), and its colour bar
    says what it is (Vega: "Gradient legend for fill color with values from −27 to 27", the scale's ends, which read
    as values where every score is negative)."""
    for layer in layers[1:]:
        layer["mark"]["aria"] = False
    colour = layers[0]["encoding"]["color"].get("condition", {})
    if colour.get("legend") is not None:
        ends = colour["scale"]["domain"]
        big = max(abs(float(v)) for v in ends)
        secret = "invalid" in layers[0]["mark"]       # hidden cells (drawn as "?"): the ends are the visible cells'
        colour["legend"]["description"] = ("Colour key" + ("" if secret else     # extremes, which could equal a
                                           f" from {number(float(ends[0]), big)} to {number(float(ends[-1]), big)}")
                                           + (", palest at 0" if len(ends) == 3 else ""))         # hidden one: unsaid
    for axis, title, labels in ((x, col_title, col_labels), (y, row_title, row_labels)):
        if axis.get("axis") is not None and any(str(v) for v in labels):
            shown = ", ".join(map(str, labels[:24])) + (f", … ({len(labels)} in all)" if len(labels) > 24 else "")
            axis["axis"]["description"] = f"{title or 'axis'}: {shown}"


# ---- line and bar charts from their Vega-Lite spec --------------------------------------------------------

def _title(spec: dict) -> str:
    t = spec.get("title")
    if isinstance(t, dict):
        t = t.get("text")
    if isinstance(t, (list, tuple)):
        t = " ".join(map(str, t))
    return str(t).strip() if t else ""


def _rows(spec: dict, top: dict) -> list[dict] | None:
    for where in (spec, top):
        data = where.get("data")
        if isinstance(data, dict):
            if isinstance(data.get("values"), list):
                return data["values"]
            if data.get("name") and isinstance(top.get("datasets", {}).get(data["name"]), list):
                return top["datasets"][data["name"]]
    return None


def _channels(spec: dict) -> tuple[str | None, dict, dict]:
    """(mark type, encoding, the view holding the data) of a view, or of a layered view's first layer that draws
    a line, bars or points (the shaded bands and rules of the others are not its numbers)."""
    def kind(view):
        mark = view.get("mark")
        return mark.get("type") if isinstance(mark, dict) else mark
    if spec.get("layer"):
        for layer in spec["layer"]:
            enc = {**(spec.get("encoding") or {}), **(layer.get("encoding") or {})}
            if kind(layer) in ("line", "bar", "point", "area") and "x" in enc and "y" in enc:
                return kind(layer), enc, layer
        return None, {}, spec
    return kind(spec), dict(spec.get("encoding") or {}), spec


def _field(channel) -> tuple[str | None, str | None, str | None]:
    """(field, title, type) of an encoding channel."""
    if not isinstance(channel, dict) or "field" not in channel:
        return None, None, None
    field = str(channel["field"])
    kind = channel.get("type")
    if field.endswith((":Q", ":N", ":O", ":T")):
        field, kind = field[:-2], {"Q": "quantitative", "N": "nominal", "O": "ordinal", "T": "temporal"}[field[-1]]
    title = channel.get("title")
    return field, (str(title) if title else field), kind


def _value(row: dict, field: str):
    v = row.get(field)
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


def _say(v) -> str:
    if isinstance(v, float):
        return number(v) if not v.is_integer() or abs(v) >= 1e4 else f"{int(v):,}"
    return str(v)


def spec_sentence(spec: dict, top: dict | None = None, most: int = 4) -> str:
    """A line or bar chart's text alternative from its rows and encoding: for a line each series' first and last
    point and its extremes, for bars the largest and the smallest; side-by-side panels one after another.

    >>> spec = {"title": "Loss", "mark": "line", "data": {"values": [{"epoch": 0, "loss": 1.1},
    ...         {"epoch": 5, "loss": 0.4}, {"epoch": 10, "loss": 0.2}]},
    ...         "encoding": {"x": {"field": "epoch", "type": "quantitative"},
    ...                      "y": {"field": "loss", "type": "quantitative", "title": "cross-entropy"}}}
    >>> spec_sentence(spec)
    'Line chart “Loss”: cross-entropy against epoch, 1.10 at 0 to 0.20 at 10.'
    """
    top = top or spec
    panels = spec.get("hconcat") or spec.get("vconcat") or spec.get("concat")
    if panels:
        said = [spec_sentence({**p, "data": p.get("data") or spec.get("data")}, top, most) for p in panels]
        title = _title(spec)
        return (f"{title}: " if title else "") + " ".join(s for s in said if s)
    mark, enc, view = _channels(spec)
    rows = _rows(view, spec) or _rows(spec, top)
    title = _title(spec)
    named = f" {_q(title)}" if title else ""
    x, xt, xk = _field(enc.get("x"))
    y, yt, yk = _field(enc.get("y"))
    if not rows or not x or not y or mark not in ("line", "bar", "point", "area"):
        return f"Chart{named}." if title else ""
    rows = [r for r in rows if all(_filter_ok(r, f) for f in (spec.get("transform") or []) + (
        view.get("transform") or [] if view is not spec else []))]
    offset = enc.get("xOffset") or enc.get("yOffset")                 # grouped bars; lines: one a colour
    group, _, _ = _field(offset if mark == "bar" else enc.get("color") or enc.get("stroke") or enc.get("detail"))
    if mark == "bar" and xk == "quantitative" and yk != "quantitative":   # horizontal bars: the value is x
        x, xt, y, yt = y, yt, x, xt
    series: dict = {}
    for r in rows:
        if _value(r, y) is not None:
            series.setdefault(str(r.get(group)) if group else "", []).append(r)
    if not series:
        return f"Chart{named}." if title else ""
    kind = "Bar chart" if mark == "bar" else "Line chart" if mark in ("line", "area") else "Chart"
    lines = []
    chosen = list(series.items())
    if len(chosen) > most:                         # many series (a line per head): the ones that end highest
        chosen = sorted(chosen, key=lambda kv: -(_value(kv[1][-1], y) or 0))[:most]
    for name, pts in chosen:
        who = f"{name}: " if name else ""
        ys = [_value(r, y) for r in pts]
        whole = all(v.is_integer() for v in ys)           # counts (FLOPs, bytes) as counts, measures as measures
        top_y = max(abs(v) for v in ys)
        _y = (lambda v: _say(v)) if whole else (lambda v, top=top_y: number(v, top))
        k_hi, k_lo = int(np.argmax(ys)), int(np.argmin(ys))
        if mark == "bar":
            lines.append(f"{who}largest {_y(ys[k_hi])} ({_say(pts[k_hi].get(x))}), smallest {_y(ys[k_lo])} "
                         f"({_say(pts[k_lo].get(x))})" if len(pts) > 1 else f"{who}{_y(ys[0])}")
        else:
            px = [_say(r.get(x)) for r in pts]
            ends = {0, len(pts) - 1}
            peaks = [f"{word} {_y(ys[k])} at {px[k]}" for word, k in (("highest", k_hi), ("lowest", k_lo))
                     if k not in ends]
            lines.append(f"{who}{_y(ys[0])} at {px[0]} to {_y(ys[-1])} at {px[-1]}"
                         + (f" ({', '.join(peaks)})" if peaks else ""))
    more = len(series) - most
    tail = f"; {more} more series end lower" if more > 0 else ""
    per = f"{yt} for each {xt}" if mark == "bar" else f"{yt} against {xt}"
    return f"{kind}{named}: {per}, " + "; ".join(lines) + tail + "."


def _filter_ok(row: dict, transform: dict) -> bool:
    """Altair's simple filter `datum.f === 'v'` (a panel of one measure); any other transform keeps the row."""
    import re
    f = transform.get("filter") if isinstance(transform, dict) else None
    if isinstance(f, dict) and "field" in f and "equal" in f:             # {"field": "kind", "equal": "…"}
        return row.get(f["field"]) == f["equal"]
    if not isinstance(f, str):
        return True
    m = re.fullmatch(r"\(?datum\.(\w+) === '([^']*)'\)?", f.strip())
    return True if not m else str(row.get(m.group(1))) == m.group(2)


def patterns_sentence(named, n_heads_shown: int | None = None) -> str:
    """Attention patterns of several heads (each (layer, head, n, n), rows queries, only j ≤ i): for each layer
    the head whose weight is most concentrated on one offset i − j, the offset and its mean weight.

    >>> a = np.zeros((1, 2, 3, 3)); a[0, 0] = np.eye(3); a[0, 1, :, 0] = 1
    >>> patterns_sentence([("step 0", a)])
    "Attention patterns, step 0: 2 heads in 1 layer, query position i down, key position j ≤ i across, weights from 0 to 1. Most focused: layer 0's head 0 puts 1.00 on average on the token itself (j = i)."
    """
    out = []
    for stage, a in named:
        n_layers, n_heads, n = a.shape[0], a.shape[1], a.shape[-1]
        said = []
        for layer in range(n_layers):
            best = (-1.0, 0, 0)
            for h in range(n_heads):
                for d in range(n - 1 if n > 1 else 1):
                    share = float(np.mean(np.diagonal(a[layer, h], offset=-d)))
                    if share > best[0]:
                        best = (share, h, d)
            share, h, d = best
            where = ("the token itself (j = i)" if d == 0 else "the previous token (j = i − 1)" if d == 1
                     else f"the token {d} back (j = i − {d})")
            said.append(f"layer {layer}'s head {h} puts {share:.2f} on average on {where}")
        out.append(f"Attention patterns, {stage}: {n_heads * n_layers} heads in "
                   f"{n_layers} layer{'' if n_layers == 1 else 's'}, query position i down, key position j ≤ i "
                   f"across, weights from 0 to 1. Most focused: " + "; ".join(said) + ".")
    return " ".join(out)
