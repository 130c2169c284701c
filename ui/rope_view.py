"""The RoPE page's views: its controls, one pair turning, the shift check, the pairing panel, torch's check."""
from __future__ import annotations

import functools
import math

import numpy as np
import streamlit as st

from attention_core.claims import say
from attention_core.explain import fmt
from attention_core.lesson_rope import (BASES, FAMILIES, MAX_OFFSET, ShiftSettings, pair_path, parse_base,
                                        shift_check, torch_checks)

from . import views
from .text import md_escape

CUSTOM = "custom"


def controls() -> tuple[object, str]:
    """The base (a preset or typed) and the pairing: (base as given, pairing). parse_base checks a typed one.
    A segmented control and a toggle: a radio costs ~1.6 ms of every rerun, these ~1 and ~0.3 ms."""
    with st.container(border=True):
        choice = st.segmented_control("Base of θ_i = base^(−2i/d_k) (rope_theta in a model's config)",
                                      [*BASES, CUSTOM], default="1e4", required=True, key="rope.base",
                                      format_func=lambda k: BASES[k][1] if k in BASES else "custom")
        half = st.toggle("Half pairing (x_i, x_i+d/2) as GPT-NeoX and Hugging Face's Llama; off: interleaved "
                         "(x_2i, x_2i+1) as RoFormer, GPT-J and Meta's Llama code", key="rope.half")
        base = BASES.get(choice, (None,))[0]
        if base is None:
            base = st.text_input("Custom base", "10000", key="rope.custom", max_chars=40,
                                 help="A number above 1, up to 10¹² (e.g. 2e6).")
    return base, "half" if half else "interleaved"


def pair_spec(path: list[dict], radius: float, title: str, columns: tuple[int, int]) -> dict:
    """The pair's vector at positions 0 … p (dots on a circle), the one at p as an arrow from the origin."""
    r = radius * 1.15 or 1.0
    scale = {"domain": [-r, r], "nice": False}
    names = {"x": f"column {columns[0]}", "y": f"column {columns[1]}"}
    axis = lambda f: {"field": f, "type": "quantitative", "scale": scale, "title": names[f[0]]}
    now = {"filter": "datum.now"}
    return {"$schema": "https://vega.github.io/schema/vega-lite/v5.json", "title": title, "width": 260,
            "height": 260, "data": {"values": path},
            "layer": [
                {"mark": {"type": "point", "filled": True, "opacity": 0.45, "color": "#1f5fa8"},
                 "encoding": {"x": axis("x"), "y": axis("y"),
                              "tooltip": [{"field": "position", "type": "quantitative"},
                                          {"field": "x", "type": "quantitative", "format": ".3f"},
                                          {"field": "y", "type": "quantitative", "format": ".3f"}]}},
                {"transform": [{"filter": "datum.position == 0"}], "mark": {"type": "rule", "strokeDash": [4, 3],
                                                                            "color": "#888"},
                 "encoding": {"x": axis("x0"), "y": axis("y0"), "x2": {"field": "x"}, "y2": {"field": "y"}}},
                {"transform": [now], "mark": {"type": "rule", "strokeWidth": 3, "color": "#c2560b"},
                 "encoding": {"x": axis("x0"), "y": axis("y0"), "x2": {"field": "x"}, "y2": {"field": "y"}}},
                {"transform": [now], "mark": {"type": "point", "filled": True, "size": 90, "color": "#c2560b"},
                 "encoding": {"x": axis("x"), "y": axis("y")}},
                {"transform": [{"filter": "datum.position <= 12 || datum.now"}],        # positions as labels
                 "mark": {"type": "text", "dx": 9, "dy": -7, "fontSize": 11, "color": "#333"},
                 "encoding": {"x": axis("x"), "y": axis("y"), "text": {"field": "position", "type": "nominal"}}},
            ]}


@functools.lru_cache(maxsize=512)
def pair_chart(a: float, b: float, theta: float, p: int, i: int, columns: tuple[int, int]):
    """(Arrow rows, spec) of the pair picture, built once per content (shared by every session)."""
    import pyarrow as pa
    path = pair_path(np.array([a, b]), theta, p)
    spec = pair_spec(path, math.hypot(a, b), f"pair {i} of q (columns {columns[0]}, {columns[1]})", columns)
    return pa.Table.from_pylist(spec.pop("data")["values"]), spec


def pair_turning(t) -> None:
    """One word's query pair turned by the position slider (the page draws it inside a fragment)."""
    d, n = t.facts["d_k"], t.n
    a, b, c = st.columns(3)
    word = a.selectbox("Word (its query q)", range(n), format_func=lambda i: f"{i} · {t.tokens[i]}", key="rope.word")
    i = b.slider("Pair i", 0, d // 2 - 1, 0, key="rope.pair") if d > 2 else 0
    p = c.slider("Position p", 0, 64, 3, key="rope.p")
    c0, c1 = (2 * i, 2 * i + 1) if t.facts["pairing"] == "interleaved" else (i, i + d // 2)
    q = t["q"].value[word]
    theta = float(t.facts["theta"][i])
    path = pair_path(np.array([q[c0], q[c1]]), theta, p)
    angle, (x, y) = p * theta, (path[-1]["x"], path[-1]["y"])
    left, right = st.columns([2, 3])
    with left:
        views.fit_css_in_fragment()
        st.vega_lite_chart(*pair_chart(float(q[c0]), float(q[c1]), theta, p, i, (c0, c1)), width="content")
    cos, sin = math.cos(angle), math.sin(angle)
    f = lambda v: f"({fmt(v)})" if v < 0 else fmt(v)          # a factor: negatives in parentheses
    right.markdown(
        f"$$\np\\,\\theta_{{{i}}} = {p} \\cdot {fmt(theta, 4)} = {fmt(angle, 4)}\\ \\text{{rad}}"
        f" = {math.degrees(angle):.1f}^\\circ\n$$\n$$\n\\begin{{aligned}}"
        f"(q^R)_{{{c0}}} &= q_{{{c0}}} \\cos {p}\\theta_{{{i}}} - q_{{{c1}}} \\sin {p}\\theta_{{{i}}}"
        f" \\\\ &= {f(q[c0])} \\cdot {f(cos)} - {f(q[c1])} \\cdot {f(sin)} = {fmt(x)} \\\\[4pt] "
        f"(q^R)_{{{c1}}} &= q_{{{c0}}} \\sin {p}\\theta_{{{i}}} + q_{{{c1}}} \\cos {p}\\theta_{{{i}}}"
        f" \\\\ &= {f(q[c0])} \\cdot {f(sin)} + {f(q[c1])} \\cdot {f(cos)} = {fmt(y)}\\end{{aligned}}\n$$\n\n"
        f":small[The query of “{md_escape(t.tokens[word])}” placed at position p = {p}, its pair {i} turned by "
        f"{angle:.3f} rad: blue dots are positions 0 … p, "
        f"the dashed line its pair at p = 0, the orange arrow at p. The length stays "
        f"{math.hypot(q[c0], q[c1]):.3f}; pair {i} turns θ_{i} = {theta:.4g} rad per position"
        + (", one radian: a full turn every 6.3 positions." if i == 0 else
           f": a full turn every {2 * math.pi / theta:,.0f} positions.")
        + " Checked against: RoPE's rotation of the same pair (rotary_embedding), in tests/test_rope.py.]")


@st.fragment
def shift_panel(t, config, base, pairing: str) -> None:
    """Positions p + offset: Q^R changes, the scores do not (and with an added PE they do)."""
    offset = st.slider("Shift the whole sentence by (positions p + offset)", 0, 1000, 100, key="rope.offset")
    offset = max(0, min(int(offset), MAX_OFFSET))
    s = shift_check(config, base, pairing, offset)
    rope, added = ShiftSettings("rope"), ShiftSettings("added")
    st.markdown(
        f"- **RoPE**: max |ΔQ^R| = {s['rot']:.3g} (the rotated rows move), max |ΔŜ| = **{s['rope']:.1e}**: "
        f"{say('rope_shift_invariant', rope)}.\n"
        f"- **Sinusoidal PE added to X** (same base, same W_Q, W_K): max |ΔŜ| = **{s['added']:.3g}**: "
        f"{say('rope_shift_invariant', added)}.\n\n"
        ":small[Maxima over all n × n scores. Checked against: the unshifted Ŝ above, recomputed by "
        "`rotary_embedding` with positions p + offset; tests/test_rope.py proves the property for random q, k, "
        "positions and bases (hypothesis), in numpy and torch.]")
    box = st.expander(f"Ŝ at positions p + {offset}, cell by cell (click one for its dot product)",
                      key="rope.shifted", on_change="rerun")
    if box.open:
        with box:
            views.step_box(s["trace"], "scaled_scores", key_prefix="rope.shift.")


def pairing_panel(t, heading: str) -> None:
    f, d = t.facts, t.facts["d_k"]
    perm = ", ".join(map(str, f["perm"]))
    st.markdown(
        f"{heading}\n\nInterleaved pairs columns (2i, 2i + 1): {FAMILIES['interleaved']}. Half pairs (i, i + d_k/2): "
        f"{FAMILIES['half']}. Reordering the columns by\n\n$$\n\\pi = [{perm}]\n$$\n\nturns one into the other:\n"
        f"- half(Q[:, π]) vs interleaved(Q)[:, π]: max difference **{f['perm_rotation_gap']:.1e}**;\n"
        f"- the scores with W_Q, W_K's columns permuted by π under half vs unpermuted under interleaved: max "
        f"difference **{f['perm_scores_gap']:.1e}** (a checkpoint converted between the two permutes its W_Q, W_K "
        "columns, as Hugging Face's Llama conversion script does);\n"
        f"- the same weights under the other pairing, not permuted: max difference **{f['mismatch_gap']:.3g}**: "
        f"{say('rope_pairings_differ', d)}.\n\n:small[Checked live on this Q, K; tests/test_rope.py checks the same "
        "identities for random widths, bases and rows (hypothesis), and each pairing against its torch form.]")


def torch_panel(t) -> None:
    box = st.expander("Check against PyTorch now (Meta's complex form, Hugging Face's rotate_half)",
                      key="rope.torch", on_change="rerun")
    if box.open:
        with box:
            c = torch_checks(t)
            st.markdown(
                f"- torch.polar / view_as_complex, as Meta's Llama `apply_rotary_emb`: max |Δ| from this page's "
                f"Q^R, K^R = **{c['complex']:.1e}**\n- cos, sin and `rotate_half`, as Hugging Face's "
                f"`apply_rotary_pos_emb`: max |Δ| = **{c['rotate_half']:.1e}**\n- Ŝ from torch's Q^R, K^R: max |Δ| = "
                f"**{c['scores']:.1e}**\n\n:small[float64; each form is fed the column order it pairs (the other "
                "order through π).]")
