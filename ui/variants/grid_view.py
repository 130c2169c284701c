"""The grid page's computations and pictures, cached once per process (shared read-only by every
session). A page script runs anew on every rerun, so its caches live here, in a module: plain
functools caches keyed by the page's own settings (strings, ints, floats, tuples), with none of
st.cache_resource's per-call hashing.
"""
from __future__ import annotations

import functools
import io
import json

import numpy as np
import streamlit as st

from attention_core import grid as g

from ..chart_words import number
from ..charts import DIVERGING
from ..presenter import presented


def _kind(trace):
    trace.facts["kind"] = "grid"     # not the forward pass: no forward-pass explainer applies to its cells
    return trace


@functools.lru_cache(maxsize=64)
def grid_of(scene_name: str, cells: int) -> g.Grid:
    return g.make_grid(scene_name, (cells, cells), 48)


@functools.lru_cache(maxsize=256)
def single(scene_name: str, cells: int, query: str, sharpness: float):
    """(a) One named query against every cell."""
    return _kind(g.one_query(grid_of(scene_name, cells), g.named_queries([query], sharpness)[0], query))


@functools.lru_cache(maxsize=256)
def several(scene_name: str, cells: int, queries: tuple[str, ...], sharpness: float):
    """(b) The chosen queries at once."""
    return _kind(g.many_queries(grid_of(scene_name, cells), g.named_queries(queries, sharpness), queries))


@functools.lru_cache(maxsize=256)
def crossed(scene_name: str, cells: int, queries: tuple[str, ...], sharpness: float, transforms: str, seed: int):
    """(c) Cross-attention with hand-set or random W_K, W_V."""
    grid = grid_of(scene_name, cells)
    q = g.named_queries(queries, sharpness)
    if transforms == "hand":
        return _kind(g.cross_attention(grid, q, queries))
    w_k, w_v = g.random_transforms(g.D_X, len(g.VALUE_FEATURES), seed)
    return _kind(g.cross_attention(grid, q, queries, w_k, w_v, value_names=[f"v{i}" for i in range(w_v.shape[1])]))


@functools.lru_cache(maxsize=1)
def features_table():
    """What each of the ten features measures, one row per feature."""
    import pandas as pd
    return pd.DataFrame({"what it measures in a cell": list(g.FEATURES.values())}, index=list(g.FEATURES))


def strongest(weights_grid) -> tuple[tuple[int, int], ...]:
    """The cells holding at least half the largest weight: framed on the picture (dark cells dim invisibly)."""
    return tuple((int(r), int(c)) for r, c in np.argwhere(weights_grid >= 0.5 * weights_grid.max()))


@functools.lru_cache(maxsize=512)
def _png(image_bytes: bytes, shape: tuple[int, ...], grid_shape, width: int, outline) -> bytes:
    """A small RGB image (H, W, 3) in [0, 1] scaled up by whole pixels (nearest neighbour: a pixel stays
    a crisp square) to about `width` px, the rows × cols grid lines drawn on and the cells (row, col)
    in `outline` framed in orange, as PNG bytes: encoded once per content (st.image would encode an
    array again on every rerun)."""
    from PIL import Image
    image = np.clip(np.frombuffer(image_bytes, dtype=np.float64).reshape(shape), 0.0, 1.0)
    factor = max(1, int(width // max(image.shape[:2])))
    big = np.repeat(np.repeat(image, factor, axis=0), factor, axis=1)       # (H·f, W·f, 3)
    rows, cols = grid_shape
    height, wide = big.shape[:2]
    for r in range(1, rows):
        big[r * height // rows, :] = 1.0
    for c in range(1, cols):
        big[:, c * wide // cols] = 1.0
    t = max(2, factor // 2)                                                  # frame thickness, px
    for r, c in outline:
        y0, y1, x0, x1 = r * height // rows, (r + 1) * height // rows, c * wide // cols, (c + 1) * wide // cols
        for ys, xs in ((slice(y0, y0 + t), slice(x0, x1)), (slice(y1 - t, y1), slice(x0, x1)),
                       (slice(y0, y1), slice(x0, x0 + t)), (slice(y0, y1), slice(x1 - t, x1))):
            big[ys, xs] = (0.91, 0.35, 0.05)
    out = io.BytesIO()
    Image.fromarray((big * 255).round().astype(np.uint8)).save(out, format="PNG")
    return out.getvalue()


def picture(image: np.ndarray, grid_shape: tuple[int, int], width: int = 384, caption: str | None = None,
            outline=(), alt: str = "") -> None:
    """The image as _png draws it, its PNG cached per content and sent as it is; `alt` is what a screen reader
    reads for it (the framed cells named, when there are any)."""
    image = np.ascontiguousarray(image, dtype=np.float64)
    png = _png(image.tobytes(), image.shape, tuple(grid_shape), int(width), tuple(map(tuple, outline)))
    rows, cols = grid_shape
    said = alt or f"The image cut into {rows}×{cols} cells"
    if outline:
        said += "; framed (at least half the largest weight): " + ", ".join(f"cell r{r}c{c}" for r, c in outline)
    st.image(png, caption=caption, width="content", output_format="PNG", alt=said + ".")   # sent as is


def looks(grid: g.Grid, weights_row, width: int, caption: str) -> None:
    """One query's weights on the image: dimmed where low, the strongest cells framed."""
    w = g.overlay(weights_row, grid.shape)
    picture(g.blend(grid.image, w), grid.shape, width=width, caption=caption, outline=strongest(w),
            alt="The image dimmed where the weight is low")


@functools.lru_cache(maxsize=64)
def channels_spec(scene_name: str, cells: int) -> tuple[dict, object]:
    """(Vega-Lite spec, cells table): the ten feature channels of X, each laid back on the grid, as
    ONE faceted chart (five per row, one shared colour scale) instead of ten charts: a rerun costs per
    element. Hovering a cell shows its row, column and value."""
    import pyarrow as pa
    grid = grid_of(scene_name, cells)
    x = grid.x                                                    # (cells², D_X), rows read row by row
    n = x.shape[0]
    r, c = np.divmod(np.arange(n), cells)
    frame = pa.table({"feature": np.repeat(np.array(g.FEATURE_NAMES, dtype=object), n).tolist(),
                      "order": np.repeat(np.arange(len(g.FEATURE_NAMES)), n),
                      "row": np.tile(r, len(g.FEATURE_NAMES)), "col": np.tile(c, len(g.FEATURE_NAMES)),
                      "v": x.T.ravel().astype(np.float64)})
    lo, hi = float(x.min()), float(x.max())
    size = max(6.0, min(16.0, 95.0 / cells))                       # ~95 px a map, as ten max_w=95 heatmaps were
    bound = max(abs(lo), abs(hi)) or 1.0
    spec = {
        "$schema": "https://vega.github.io/schema/vega-lite/v5.json",
        "description": (f"The image as {len(g.FEATURE_NAMES)} feature maps ({', '.join(g.FEATURE_NAMES)}), each a "
                        f"{cells} × {cells} heatmap of the cells' values, from {number(lo, bound)} to {number(hi, bound)}."),
        "transform": [{"calculate": "format(datum.v, '.6g')", "as": "value"}],
        "facet": {"field": "feature", "type": "nominal", "title": None,
                  "sort": {"field": "order", "op": "min"},
                  "header": {"labelFontSize": 12, "labelPadding": 2}},
        "columns": 5,
        "spec": {
            "width": size * cells, "height": size * cells,
            "mark": {"type": "rect", "stroke": "white", "strokeWidth": 0.5 if size >= 8 else 0},
            "encoding": {
                "x": {"field": "col", "type": "ordinal", "title": None,
                      "axis": {"orient": "top", "labelAngle": 0, "labelFontSize": 9, "ticks": False}},
                "y": {"field": "row", "type": "ordinal", "title": None,
                      "axis": {"labelFontSize": 9, "ticks": False}},
                "color": {"field": "v", "type": "quantitative", "title": None,
                          "scale": {"range": DIVERGING, "domain": [-bound, 0.0, bound],
                                    "interpolate": "lab"},
                          "legend": {"orient": "bottom", "direction": "horizontal", "gradientLength": 200,
                                     "format": ".2~g"}},
                "tooltip": [{"field": "feature", "type": "nominal"}, {"field": "row", "type": "ordinal"},
                            {"field": "col", "type": "ordinal", "title": "column"},
                            {"field": "value", "type": "nominal"}]}},
        "spacing": 10, "config": {"view": {"strokeWidth": 0}},
        "autosize": {"type": "pad", "contains": "padding"}}
    json.dumps(spec)                                              # a spec must be plain JSON
    return spec, frame


def channels(scene_name: str, cells: int) -> None:
    spec, frame = channels_spec(scene_name, cells)
    st.vega_lite_chart(frame, spec=presented(spec), width="content")

