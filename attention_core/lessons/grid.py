"""Attention over a grid of image features (seed 003, tutorial 4): the inputs need not be a sequence.

An image captioner's encoder is a CNN whose output is a grid of feature vectors, one per
image region; the decoder attends over that grid. Here the CNN is replaced by a stand-in
that anyone can check by eye: the image is drawn in code, cut into cells, and each cell's
features come from a small hand-made filter bank (mean colour, redness, brightness, edge
energy, a roundness proxy) plus its position. Then seed 003's abstractions, in order:

    (a) one query q (D_x,) against every cell:  s = X q,  a = softmax(s),  c = a X
    (b) many queries Q (N_q, D_x) at once:      S = Q Xᵀ (N_q, N_x), A = softmax rows, C = A X
    (c) keys and values transformed from X:     K = X W_K, V = X W_V, C = softmax(Q Kᵀ/√d_k) V

In the app's notation (docs/notation.md): S scores, Ŝ scaled, A weights, C context; d_k the
width of the queries and keys (the code's d_q), d_v of the values.

Rows are cells, read row by row from the top left: cell (r, c) is row r·cols + c of X.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..math import attention as att
from ..math.limits import ConfigError, _check_int
from ..forward.weights import init_weight
from ..forward.trace import Trace

BACKGROUND = (0.08, 0.09, 0.12)
RED, GREEN, BLUE = (0.9, 0.1, 0.1), (0.15, 0.75, 0.2), (0.15, 0.3, 0.9)
YELLOW, ORANGE, WHITE, GREY = (0.95, 0.85, 0.1), (1.0, 0.55, 0.05), (0.95, 0.95, 0.95), (0.3, 0.3, 0.32)

# Shapes in canvas units (0..1, x to the right, y down): drawn in order, later on top.
SCENES = {
    "shapes": [("disc", (0.27, 0.27), 0.17, RED), ("rect", (0.58, 0.58), (0.92, 0.92), BLUE),
               ("triangle", ((0.08, 0.92), (0.42, 0.92), (0.25, 0.58)), GREEN),
               ("disc", (0.78, 0.22), 0.09, YELLOW)],
    "balls": [("disc", (0.32, 0.66), 0.22, RED), ("disc", (0.74, 0.3), 0.14, ORANGE),
              ("disc", (0.8, 0.8), 0.08, WHITE)],
    "traffic light": [("rect", (0.34, 0.04), (0.66, 0.96), GREY), ("disc", (0.5, 0.2), 0.11, RED),
                      ("disc", (0.5, 0.5), 0.11, YELLOW), ("disc", (0.5, 0.8), 0.11, GREEN)],
    # bands 1/12 wide: with a 6×6 grid each cell holds one band, so two edges, all one way
    "stripes": [("rect", (0.0, (2 * i + 0.5) / 12), (0.5, (2 * i + 1.5) / 12), WHITE) for i in range(6)]
               + [("rect", ((2 * i + 0.5) / 12, 0.0), ((2 * i + 1.5) / 12, 1.0), RED) for i in range(3, 6)],
}



def redness(rgb) -> np.ndarray:
    """max(0, R − max(G, B)) of each pixel (..., 3) -> (...): how much redder than green or blue.

    >>> [round(float(redness(c)), 12) for c in ((1.0, 0.0, 0.0), RED, YELLOW, WHITE)]
    [1.0, 0.8, 0.1, 0.0]
    """
    rgb = np.asarray(rgb, dtype=np.float64)
    return np.clip(rgb[..., 0] - np.maximum(rgb[..., 1], rgb[..., 2]), 0, None)


# Colours named in the redness feature's description; its numbers are computed from redness() itself.
REDNESS_EXAMPLES = (("pure red (1, 0, 0)", (1.0, 0.0, 0.0)), ("the scenes' red", RED), ("their orange", ORANGE),
                    ("their yellow", YELLOW))
REDNESS_ZERO = (("green", GREEN), ("blue", BLUE), ("white", WHITE), ("grey", GREY), ("the background", BACKGROUND))


def _redness_text() -> str:
    some = ", ".join(f"{float(redness(c)):.3g} for {name}" for name, c in REDNESS_EXAMPLES)
    zero = [name for name, c in REDNESS_ZERO if float(redness(c)) == 0]
    return (f"mean of max(0, R − max(G, B)) over the cell's pixels: {some}; 0 for "
            f"{', '.join(zero[:-1])} and {zero[-1]}")


# The filter bank: what each column of a cell's feature vector means.
FEATURES = {
    "red": "mean red channel (0..1)",
    "green": "mean green channel (0..1)",
    "blue": "mean blue channel (0..1)",
    "redness": _redness_text(),
    "brightness": "mean luminance 0.299 R + 0.587 G + 0.114 B",
    "h_edges": "horizontal edge energy: Σ over the cell of max-channel |I[y+1, x] − I[y, x]|, "
               "divided by the cell's width (1 ≈ one full-contrast edge straight across)",
    "v_edges": "vertical edge energy: the same with |I[y, x+1] − I[y, x]|, divided by the cell's height",
    "round": "diagonal edge energy Σ √(|∂x|·|∂y|) / cell width: fires where an outline runs "
             "neither horizontally nor vertically (circles, slanted sides), ~0 on axis-aligned edges "
             "and flat areas; a crude roundness proxy, not a shape detector",
    "up": "position: +1 in the top row of cells, −1 in the bottom row",
    "left": "position: +1 in the left column of cells, −1 in the right column",
}
FEATURE_NAMES = tuple(FEATURES)
D_X = len(FEATURE_NAMES)
MAX_SIZE = 256
MAX_CELLS = 32


def _unit(**weights) -> np.ndarray:
    """A feature-space direction from named components: _unit(up=1, left=1) -> (D_X,)."""
    q = np.zeros(D_X)
    for name, w in weights.items():
        q[FEATURE_NAMES.index(name)] = w
    return q / np.linalg.norm(q)


# Named queries, built in the feature space: what a decoder might be looking for.
QUERIES = {
    "red": _unit(redness=1.0),
    "blue": _unit(blue=1.0, red=-0.5, green=-0.5),
    "green": _unit(green=1.0, red=-0.5, blue=-0.5),
    "bright": _unit(brightness=1.0),
    "round": _unit(round=1.0),
    "straight edges": _unit(h_edges=1.0, v_edges=1.0, round=-1.0),
    "top-left": _unit(up=1.0, left=1.0),
    "bottom-right": _unit(up=-1.0, left=-1.0),
}


# ---- the image ---------------------------------------------------------------------------

def scene(name: str = "shapes", size: int = 48, supersample: int = 4) -> np.ndarray:
    """A preset scene drawn with numpy: (size, size, 3) RGB in [0, 1], edges anti-aliased."""
    if name not in SCENES:
        raise ConfigError(f"scene={name!r} is not one of {', '.join(repr(s) for s in SCENES)}.")
    _check_int("size", size, 4, MAX_SIZE)
    big = size * supersample
    y, x = (np.mgrid[0:big, 0:big] + 0.5) / big                        # pixel centres, (big, big) each
    canvas = np.broadcast_to(np.array(BACKGROUND), (big, big, 3)).copy()
    for kind, *geometry, colour in SCENES[name]:
        if kind == "disc":
            (cx, cy), r = geometry
            inside = (x - cx) ** 2 + (y - cy) ** 2 <= r ** 2
        elif kind == "rect":
            (x0, y0), (x1, y1) = geometry
            inside = (x >= x0) & (x < x1) & (y >= y0) & (y < y1)
        else:                                                           # triangle: same side of all 3 edges
            (p,) = geometry
            sides = [(x - p[i][0]) * (p[(i + 1) % 3][1] - p[i][1]) - (y - p[i][1]) * (p[(i + 1) % 3][0] - p[i][0])
                     for i in range(3)]
            inside = np.all([s >= 0 for s in sides], axis=0) | np.all([s <= 0 for s in sides], axis=0)
        canvas[inside] = colour
    # average each supersample × supersample block: (big, big, 3) -> (size, size, 3)
    return canvas.reshape(size, supersample, size, supersample, 3).mean(axis=(1, 3))


# ---- the filter bank ---------------------------------------------------------------------

def _check_grid(image: np.ndarray, grid_shape: tuple[int, int]) -> tuple[int, int]:
    if image.ndim != 3 or image.shape[2] != 3:
        raise ConfigError(f"The image must be (height, width, 3) RGB, not {image.shape}.")
    rows, cols = grid_shape
    _check_int("grid rows", rows, 1, MAX_CELLS)
    _check_int("grid cols", cols, 1, MAX_CELLS)
    height, width, _ = image.shape
    if height % rows or width % cols:
        raise ConfigError(f"A {height}×{width} image does not split into {rows}×{cols} equal cells; "
                          f"use a number of rows dividing {height} and of columns dividing {width}.")
    return height // rows, width // cols


def cell_features(image, grid_shape: tuple[int, int] = (6, 6)) -> np.ndarray:
    """The filter bank on every cell: (rows·cols, D_X), columns named by FEATURE_NAMES.

    A stand-in for a CNN's feature map: the same kind of object (a vector per region, some
    entries about colour, some about edges, position known), but each number is readable.
    """
    image = np.asarray(image, dtype=np.float64)
    ch, cw = _check_grid(image, grid_shape)
    rows, cols = grid_shape
    gy = np.zeros(image.shape[:2])
    gx = np.zeros(image.shape[:2])
    gy[:-1] = np.abs(np.diff(image, axis=0)).max(axis=2)               # (H, W): change to the pixel below
    gx[:, :-1] = np.abs(np.diff(image, axis=1)).max(axis=2)            # (H, W): change to the pixel right
    r, g, b = image[..., 0], image[..., 1], image[..., 2]

    def total(a):                                                       # (H, W) -> (rows·cols,): sum per cell
        return a.reshape(rows, ch, cols, cw).sum(axis=(1, 3)).ravel()

    def mean(a):
        return total(a) / (ch * cw)

    up = np.repeat(1 - 2 * np.arange(rows) / max(rows - 1, 1), cols) if rows > 1 else np.zeros(rows * cols)
    left = np.tile(1 - 2 * np.arange(cols) / max(cols - 1, 1), rows) if cols > 1 else np.zeros(rows * cols)
    columns = {
        "red": mean(r), "green": mean(g), "blue": mean(b),
        "redness": mean(redness(image)),
        "brightness": mean(0.299 * r + 0.587 * g + 0.114 * b),
        "h_edges": total(gy) / cw, "v_edges": total(gx) / ch, "round": total(np.sqrt(gx * gy)) / cw,
        "up": up, "left": left,
    }
    return np.stack([columns[name] for name in FEATURE_NAMES], axis=1)  # (N_x, D_X)


@dataclass(frozen=True, eq=False)
class Grid:
    image: np.ndarray                 # (H, W, 3)
    x: np.ndarray                     # (N_x, D_X): one feature row per cell
    shape: tuple[int, int]            # (rows, cols) of cells

    @property
    def cells(self) -> tuple[str, ...]:
        """'r0c0', 'r0c1', ...: the row labels of x."""
        return tuple(f"r{r}c{c}" for r in range(self.shape[0]) for c in range(self.shape[1]))


def make_grid(scene_name: str = "shapes", grid_shape: tuple[int, int] = (6, 6), size: int = 48) -> Grid:
    image = scene(scene_name, size)
    return Grid(image, cell_features(image, grid_shape), tuple(grid_shape))


def named_queries(names, sharpness: float = 10.0) -> np.ndarray:
    """Stack QUERIES[name] × sharpness: (N_q, D_X). Larger sharpness, more peaked weights."""
    unknown = [n for n in names if n not in QUERIES]
    if unknown or not names:
        raise ConfigError(f"Unknown query {unknown[0]!r}; choose from {', '.join(QUERIES)}." if unknown
                          else "Choose at least one query.")
    if not 0 < sharpness <= 100:
        raise ConfigError(f"sharpness={sharpness:g} is out of range; use a value in (0, 100].")
    return sharpness * np.stack([QUERIES[n] for n in names])


def overlay(weights_row, grid_shape: tuple[int, int]) -> np.ndarray:
    """One query's weights over the cells, (N_x,), back onto the grid: (rows, cols).

    >>> overlay(np.arange(6) / 15, (2, 3)).round(2)
    array([[0.  , 0.07, 0.13],
           [0.2 , 0.27, 0.33]])
    """
    weights_row = np.asarray(weights_row, dtype=np.float64)
    rows, cols = grid_shape
    if weights_row.shape != (rows * cols,):
        raise ConfigError(f"{weights_row.shape} weights do not fill a {rows}×{cols} grid.")
    return weights_row.reshape(rows, cols)


def blend(image, weights_grid, floor: float = 0.2) -> np.ndarray:
    """The image dimmed where attention is low: pixel × (floor + (1 − floor) · w / max w); (H, W, 3)."""
    image = np.asarray(image, dtype=np.float64)
    w = np.asarray(weights_grid, dtype=np.float64)
    ch, cw = _check_grid(image, w.shape)
    light = floor + (1 - floor) * w / (w.max() if w.max() > 0 else 1.0)
    return image * np.kron(light, np.ones((ch, cw)))[..., None]


# ---- (a) one query -----------------------------------------------------------------------

def _start(grid: Grid) -> Trace:
    trace = Trace(grid.cells)
    trace.add("x", "Cell features X", grid.x, ("n_x", "d_x"), r"X \in \mathbb{R}^{N_x \times D_x}",
              why=f"One row per cell of the {grid.shape[0]}×{grid.shape[1]} grid, from a hand-made filter bank "
                  "standing in for a CNN's feature map: colour, redness, brightness, edges, a roundness proxy, position.")
    trace.facts.update(grid_shape=grid.shape, axis_labels={"n_x": list(grid.cells), "d_x": list(FEATURE_NAMES)})
    return trace


def one_query(grid: Grid, q, name: str = "query") -> Trace:
    """Abstraction (a): a single query against every cell, with a plain dot product.

    Steps: x (N_x, D_x), q (D_x,), scores (N_x,), weights (N_x,), weights_grid (rows, cols),
    context (D_x,).
    """
    q = np.asarray(q, dtype=np.float64)
    if q.shape != (grid.x.shape[1],):
        raise ConfigError(f"The query has shape {q.shape}; it must be ({grid.x.shape[1]},), one number per feature.")
    trace = _start(grid)
    trace.add("q", f"Query “{name}”", q, ("d_x",), r"q \in \mathbb{R}^{D_x}",
              why="What the decoder is looking for, in the same feature space as the cells.")
    scores = grid.x @ q                                                 # (N_x,)
    trace.add("scores", "Scores s = X q", scores, ("n_x",), r"s_j = x_j \cdot q", ("x", "q"),
              why="A dot product replaces the learned scoring network tutorial 4 starts from: large where a cell's "
                  "features point the way the query does.")
    weights = att.softmax(scores)                                       # (N_x,)
    trace.add("weights", "Weights a = softmax(s)", weights, ("n_x",),
              r"a_j = \frac{\exp s_j}{\sum_{j'} \exp s_{j'}}", ("scores",), scale="sequential",
              why="A distribution over the cells: where to look.")
    trace.add("weights_grid", "Weights on the grid", overlay(weights, grid.shape), ("row", "col"),
              r"\text{grid}_{r,c} = a_{r \cdot \text{cols} + c}", ("weights",), scale="sequential",
              why="The same weights put back where the cells are, to lay over the image.")
    trace.add("context", "Context c = a X", weights @ grid.x, ("d_x",), r"c = a X = \sum_j a_j x_j",
              ("weights", "x"), why="Each feature averaged over the cells with the weights: what was found.")
    return trace


# ---- (b) many queries --------------------------------------------------------------------

def many_queries(grid: Grid, queries, names=None) -> Trace:
    """Abstraction (b): N_q queries at once, one matrix product.

    queries (N_q, D_x). Steps: x, queries (N_q, D_x), scores (N_q, N_x), weights (N_q, N_x),
    context (N_q, D_x).
    """
    queries = np.atleast_2d(np.asarray(queries, dtype=np.float64))
    if queries.shape[1] != grid.x.shape[1]:
        raise ConfigError(f"Queries have {queries.shape[1]} columns; the cells have {grid.x.shape[1]} features.")
    names = list(names) if names is not None else [f"q{i}" for i in range(len(queries))]
    trace = _start(grid)
    trace.add("queries", "Queries Q", queries, ("n_q", "d_x"), r"Q \in \mathbb{R}^{N_q \times D_x}",
              why="Several queries stacked as rows: every question asked in one go.")
    scores = att.dot_scores(queries, grid.x)                            # (N_q, N_x)
    trace.add("scores", "Scores S = Q Xᵀ", scores, ("n_q", "n_x"), r"S = Q X^\top", ("queries", "x"),
              why="Row i holds query i's dot product with every cell: the single-query step, for all rows at once.")
    weights = att.softmax(scores, axis=-1)                              # (N_q, N_x)
    trace.add("weights", "Weights A = softmax(S) by rows", weights, ("n_q", "n_x"),
              r"A_{ij} = \frac{\exp S_{ij}}{\sum_{j'} \exp S_{ij'}}", ("scores",), scale="sequential",
              why="Softmax along each row: each query gets its own distribution over the cells.")
    trace.add("context", "Context C = A X", weights @ grid.x, ("n_q", "d_x"), r"C = A X", ("weights", "x"),
              why="One output row per query. X plays two parts here: it is matched against (keys) and returned (values).")
    trace.facts["axis_labels"].update(n_q=names)
    return trace


# ---- (c) keys and values transformed: cross-attention --------------------------------------

VALUE_FEATURES = ("red", "green", "blue", "up", "left")


def hand_transforms(d_q: int = D_X) -> tuple[np.ndarray, np.ndarray]:
    """Hand-set stand-ins for learned W_K (D_x, d_q) and W_V (D_x, d_v = 5).

    W_K = √d_q · I: keys keep the features' meaning (so the named queries still match), and
    the √d_q cancels the 1/√d_q of scaled dot-product attention, so the weights equal (b)'s.
    W_V picks colour and position: the output says what colour the attended cells are and
    where they are, not how they matched. Keys for matching, values for returning.
    """
    if d_q != D_X:
        raise ConfigError(f"The hand-set W_K keeps the {D_X} features, so the key width d_k must be {D_X}; "
                          "use random_transforms for another width.")
    w_k = np.sqrt(d_q) * np.eye(D_X)
    w_v = np.zeros((D_X, len(VALUE_FEATURES)))
    w_v[[FEATURE_NAMES.index(f) for f in VALUE_FEATURES], np.arange(len(VALUE_FEATURES))] = 1.0
    return w_k, w_v


def random_transforms(d_q: int = D_X, d_v: int = 5, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Seeded N(0, 1/D_x) W_K (D_x, d_q) and W_V (D_x, d_v): an untrained model's transforms."""
    _check_int("d_k", d_q, 1, 64)
    _check_int("d_v", d_v, 1, 64)
    return init_weight(seed, "grid_w_k", (D_X, d_q), D_X), init_weight(seed, "grid_w_v", (D_X, d_v), D_X)


def cross_attention(grid: Grid, queries, names=None, w_k=None, w_v=None, value_names=None) -> Trace:
    """Abstraction (c): queries from one source, keys and values transformed from the grid.

    queries (N_q, d_q), w_k (D_x, d_q), w_v (D_x, d_v); default: hand_transforms().
    Steps: x, queries, w_k, w_v, k (N_x, d_q), v (N_x, d_v), scores (N_q, N_x) = Q Kᵀ/√d_q,
    weights (N_q, N_x), context (N_q, d_v). Weights and context come from
    attention.scaled_dot_product_attention.
    """
    key_names = None
    if w_k is None and w_v is None:
        w_k, w_v = hand_transforms()
        key_names, value_names = list(FEATURE_NAMES), list(VALUE_FEATURES)
    elif w_k is None or w_v is None:
        raise ConfigError("Give both W_K and W_V, or neither (for the hand-set pair).")
    queries = np.atleast_2d(np.asarray(queries, dtype=np.float64))
    w_k, w_v = np.asarray(w_k, dtype=np.float64), np.asarray(w_v, dtype=np.float64)
    if w_k.shape[0] != D_X or w_v.shape[0] != D_X or queries.shape[1] != w_k.shape[1]:
        raise ConfigError(f"Shapes do not fit: queries {queries.shape}, W_K {w_k.shape}, W_V {w_v.shape}; "
                          f"need W_K ({D_X}, d_k), W_V ({D_X}, d_v) and queries (N_q, d_k).")
    d_q, d_v = w_k.shape[1], w_v.shape[1]
    names = list(names) if names is not None else [f"q{i}" for i in range(len(queries))]
    trace = _start(grid)
    trace.add("queries", "Queries Q (from another source)", queries, ("n_q", "d_k"),
              r"Q \in \mathbb{R}^{N_q \times d_k}",
              why="The queries come from elsewhere (a decoder, a question), not from the image: cross-attention.")
    trace.add("w_k", "W_K", w_k, ("d_x", "d_k"), r"W_K \in \mathbb{R}^{D_x \times d_k}",
              why="The key transform (learned in a real model; here set by hand or seeded at random).")
    trace.add("w_v", "W_V", w_v, ("d_x", "d_v"), r"W_V \in \mathbb{R}^{D_x \times d_v}",
              why="The value transform: what a cell hands back once it is chosen can differ from how it is matched.")
    k = grid.x @ w_k                                                    # (N_x, d_q)
    trace.add("k", "Keys K = X W_K", k, ("n_x", "d_k"), r"K = X W_K", ("x", "w_k"),
              why="What each cell offers to be matched by.")
    v = grid.x @ w_v                                                    # (N_x, d_v)
    trace.add("v", "Values V = X W_V", v, ("n_x", "d_v"), r"V = X W_V", ("x", "w_v"),
              why="What each cell passes on when attended to.")
    trace.add("scores", "Scaled scores Q Kᵀ / √d_k", att.scaled_dot_scores(queries, k), ("n_q", "n_x"),
              rf"\hat S = \frac{{Q K^\top}}{{\sqrt{{d_k}}}} = \frac{{Q K^\top}}{{\sqrt{{{d_q}}}}}", ("queries", "k"),
              why=f"Query i against every key, divided by √d_k = {np.sqrt(d_q):.3g} as in the Transformer.")
    context, weights = att.scaled_dot_product_attention(queries, k, v)  # (N_q, d_v), (N_q, N_x)
    trace.add("weights", "Weights A", weights, ("n_q", "n_x"), r"A = \mathrm{softmax}(\hat S) \text{ by rows}",
              ("scores",), scale="sequential", why="Each query's distribution over the cells.")
    trace.add("context", "Context C = A V", context, ("n_q", "d_v"), r"C = A V", ("weights", "v"),
              why="Each query's blend of the values: with the hand-set W_V, the colour and position of what it found.")
    trace.facts.update(d_q=d_q, d_v=d_v)
    trace.facts["axis_labels"].update(n_q=names, d_v=list(value_names) if value_names is not None
                                      else [f"v{i}" for i in range(d_v)],
                                      d_k=key_names or [f"k{i}" for i in range(d_q)])
    return trace
