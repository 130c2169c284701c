"""Every head at a glance (one chart: a small attention pattern per layer and head, BertViz's "model view"; a click
picks a head) and the picked head step by step: its queries and keys (rotated by RoPE where the model uses it), its
values, scaled scores, weights and context vectors, each a heatmap whose clicked cell is explained with the model's
own numbers (the registry's "real_attention" explainers)."""
from __future__ import annotations

import numpy as np
import streamlit as st

from ..cache import beside
from ..charts import SEQUENTIAL
from ..text import md_escape
from ..views import explained_heatmap_box, heading

GRID_CELLS = 120_000           # the grid's cells at most (layers × heads × m × m): m, the tokens drawn, is cut to fit
GRID_PX = 820                  # the grid's width
APPLIED = "real.grid_applied"  # the last grid click turned into the layer and head (a later change of the boxes stands)


def grid_tokens(n_layers: int, n_heads: int, n: int) -> int:
    """How many tokens (the first m) each small pattern of the grid shows."""
    return max(1, min(n, int((GRID_CELLS / (n_layers * n_heads)) ** 0.5)))


def grid_rows(trace, m: int) -> dict:
    """The grid's cells as columns (the causal half of each head's first m × m weights), built with numpy: positions
    as 16-bit integers and the tokens' labels dictionary-encoded (each label once), so that the table Streamlit
    serializes and hashes on every rerun is a third of its plain size; x2 and y2 (x + 1, y + 1) are computed in
    the chart."""
    import pyarrow as pa
    atts = trace.facts["attention"]
    n_layers, n_heads, side = len(atts), trace.facts["n_heads"], m + 1
    i, j = np.tril_indices(m)                                                  # (c,) each: the causal half
    w = np.stack([att["weights"].value[:, :m, :m] for att in atts])            # (L, H, m, m)
    l, h = np.meshgrid(np.arange(n_layers), np.arange(n_heads), indexing="ij")
    l, h = l.reshape(-1, 1), h.reshape(-1, 1)                                  # (L·H, 1): one row per head
    label = pa.array([f"{k} {t}" for k, t in enumerate(trace.tokens[:m])])
    shape = (n_layers * n_heads, len(i))
    small = np.int16 if side * max(n_layers, n_heads) < 2 ** 15 else np.int32  # GRID_CELLS keeps it small
    flat = lambda a: np.broadcast_to(a, shape).ravel().astype(small)
    return {"layer": flat(l), "head": flat(h), "x": flat(h * side + j), "y": flat(l * side + i),
            "A": np.round(w[:, :, i, j].reshape(-1), 4),
            "query": pa.DictionaryArray.from_arrays(flat(i), label),
            "key": pa.DictionaryArray.from_arrays(flat(j), label)}


def grid_spec(trace) -> tuple[dict, object, int]:
    """(the Vega-Lite spec of every head's weights in one chart, its cells as a pyarrow Table, m the tokens each
    pattern shows): built once per Trace (ui/cache.py beside: the Trace is cached per process and every rerun of
    every session that shows it draws the same grid)."""
    return beside(trace, "grid", None, lambda: _grid_spec(trace))


def _grid_spec(trace) -> tuple[dict, object, int]:
    import pyarrow as pa
    n_layers, n_heads, n = len(trace.facts["attention"]), trace.facts["n_heads"], trace.facts["n"]
    m = grid_tokens(n_layers, n_heads, n)
    side = m + 1                                    # a pattern and a gap
    table = pa.table(grid_rows(trace, m))
    cell = max(1.0, min(GRID_PX / (n_heads * side), 180 / side))      # px per token: the grid within GRID_PX
    axis = lambda name: {"values": [k * side + m / 2 for k in range(n_layers if name == "layer" else n_heads)],
                         "labelExpr": f"'{name} ' + floor(datum.value / {side})", "grid": False, "ticks": False,
                         "domain": False, "title": None}
    spec = {"transform": [{"calculate": "datum.x + 1", "as": "x2"}, {"calculate": "datum.y + 1", "as": "y2"}],
            "mark": {"type": "rect", "cursor": "pointer"},
            "width": cell * n_heads * side, "height": cell * n_layers * side,
            "params": [{"name": "head", "select": {"type": "point", "fields": ["layer", "head"], "on": "click"}}],
            "encoding": {"x": {"field": "x", "type": "quantitative", "axis": {**axis("head"), "orient": "top"},
                               "scale": {"domain": [0, n_heads * side - 1], "nice": False}},
                         "x2": {"field": "x2"}, "y2": {"field": "y2"},
                         "y": {"field": "y", "type": "quantitative", "axis": axis("layer"),
                               "scale": {"domain": [0, n_layers * side - 1], "reverse": True, "nice": False}},
                         "color": {"field": "A", "type": "quantitative", "title": "weight",
                                   "scale": {"range": SEQUENTIAL, "domain": [0, 1], "interpolate": "lab"},
                                   "legend": {"gradientLength": max(60, min(200, cell * n_layers * side - 30))}},
                         "opacity": {"condition": {"param": "head", "value": 1, "empty": True}, "value": 0.35},
                         "tooltip": [{"field": "layer"}, {"field": "head"}, {"field": "query"}, {"field": "key"},
                                     {"field": "A", "format": ".4f"}]}}
    return spec, table, m


def grid(trace) -> tuple[int, int] | None:
    """The grid chart; the (layer, head) a click picked this run, if a new one."""
    spec, table, m = grid_spec(trace)
    state = st.vega_lite_chart(table, spec=spec, key="real.grid", on_select="rerun", selection_mode="head", width="content")
    n = trace.facts["n"]
    first = "the only token" if n == 1 else f"the first {m} tokens" + (f" of {n}" if m < n else "")
    st.caption(f"Each square is one head's attention weights A (rows: the queries, {first}"
               "; columns: the keys they look at), layer 0 at the top. "
               "Click a head to step through it below.")
    points = ((state or {}).get("selection") or {}).get("head") or []
    if not points:
        return None
    picked = (int(points[0]["layer"]), int(points[0]["head"]))
    if st.session_state.get(APPLIED) == picked:
        return None
    st.session_state[APPLIED] = picked
    return picked


def head_steps(trace, layer: int, head: int) -> list[tuple[str, int, str]]:
    """(step key, the head index in that step, what it is) for query head `head`: its KV head is ⌊h / g⌋."""
    att = trace.facts["attention"][layer]
    g = att.facts["n_heads"] // att.facts["n_kv_heads"]
    u = head // g
    rot = att.facts["rope"]
    kv = f" (KV head {u}, shared by query heads {u * g}–{u * g + g - 1})" if g > 1 else ""
    return [("q_rot" if rot else "q_heads", head, f"Head {head}'s queries" + (", rotated by RoPE" if rot else "")),
            ("k_rot" if rot else "k_heads", u, "The keys it reads" + (", rotated by RoPE" if rot else "") + kv),
            ("v_heads", u, "The values it mixes" + kv),
            ("scaled_scores", head, "Its scaled scores"), ("weights", head, "Its attention weights"),
            ("context", head, "Its output: the context vectors")]


def kv_formula(key: str, formula: str, why: str, head: int, g: int, d_k: int) -> tuple[str, str]:
    """With GQA, a key or value block is KV head u = ⌊h / g⌋'s (docs/notation.md's u), not query head h's: the block's
    formula and why written with u; a rotated key keeps its formula, u named after it."""
    u = head // g
    which = rf"\;(u = \lfloor {head} / {g} \rfloor = {u})"
    if key in ("k_heads", "v_heads"):
        big = key[0].upper()
        return (rf"{big}_u = {big}_{{[:,\, u \cdot d_k : (u+1) \cdot d_k]}}" + which,
                (f"KV head u takes its own block of {d_k} columns of {big}; query heads {u * g}–{u * g + g - 1} all "
                 "read it."))
    return formula + which, why


@st.fragment
def one_head(trace, layer: int, head: int) -> None:
    """The head's steps, one explained heatmap each; a click on a cell reruns this part only."""
    att = trace.facts["attention"][layer]
    g = att.facts["n_heads"] // att.facts["n_kv_heads"]
    for key, h, what in head_steps(trace, layer, head):
        s = att[key]
        formula, why = s.formula + rf"\;(h = {h})", s.why
        if g > 1 and key in ("k_rot", "k_heads", "v_heads"):       # u: a KV head (docs/notation.md), with GQA only
            formula, why = kv_formula(key, s.formula, s.why, head, g, att.facts["d_k"])
        st.markdown(heading(what, s, formula))
        st.caption(why)
        explained_heatmap_box(att, s, key=f"real.l{layer}.{key}", head=h, max_w=620)


def shapes_line(trace, layer: int, head: int) -> str:
    f = trace.facts["attention"][layer].facts
    return (f"Layer {layer}, head {head}: n = {f['n']} token{'' if f['n'] == 1 else 's'}, d_k = {f['d_k']} columns per head, "
            f"{f['n_heads']} query heads" + (f" over {f['n_kv_heads']} KV heads (query head h reads KV head ⌊h / "
                                             f"{f['n_heads'] // f['n_kv_heads']}⌋)" if f["n_kv_heads"] != f["n_heads"]
                                             else "") + ".")


def top_weights(trace, layer: int, head: int) -> str:
    """In words: where the head's last query looks most."""
    a = trace.facts["attention"][layer]["weights"].value[head]
    i = a.shape[0] - 1
    j = int(np.argmax(a[i]))
    if i == 0:                                      # one token: a causal row sees only itself
        return f"The only token, “{md_escape(trace.tokens[0])}”, can look only at itself: all of its weight, {a[0, 0]:.2f}."
    return (f"The last token, “{md_escape(trace.tokens[i])}”, gives {a[i, j]:.2f} of its weight to token {j}, "
            f"“{md_escape(trace.tokens[j])}”.")
