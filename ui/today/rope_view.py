"""The RoPE page's views: the settings in force (the sidebar's, Position = RoPE), one pair turning, the rotated rows,
the scores, the shift, the two pairings, and the one box that says how the page is checked."""
from __future__ import annotations

import functools
import math

import numpy as np
import streamlit as st

from attention_core import Config, ConfigError, Trace
from attention_core.forward.claims import holds, say
from attention_core.explanations import fmt
from attention_core.lessons.rope import (BASES, FAMILIES, RopeSettings, base_tex, kv_head_of, pair_columns,
                                         pair_path, pairings_alike, score_key, shift_check, torch_checks,
                                         with_rope)

from .. import page_state, views
from ..room import hide as room_hide
from ..cache import get_trace
from ..chart_words import number
from ..presenter import presented
from ..settings import POSITIONAL_LABELS, sidebar_button
from ..text import md_escape

MASK_WORDS = {"causal": "causal", "padding": "padding", "sliding_window": "sliding-window"}


def cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def num(v: float) -> str:
    """A measured difference: 0, 3.6e-15 or 4.99."""
    return "0" if v == 0 else f"{v:.1e}" if abs(v) < 1e-3 else f"{v:.3g}"


def score_symbol(config: Config) -> str:
    return "Ŝ" if config.score == "scaled_dot" else "S"


def forward_with_rope(config: Config, trace: Trace) -> Trace:
    """The forward pass this page reads: the sidebar's (Position = RoPE), or the same settings with Position = RoPE,
    said in sight with one click to make the sidebar match. An odd d_k: said, with a click to make it even; stops."""
    if config.positional == "rope":
        return trace
    label = POSITIONAL_LABELS[config.positional].split(" (")[0]
    try:
        forward = get_trace(with_rope(config))
    except ConfigError:
        d = config.d_k
        with st.container(border=True):
            st.warning(f"RoPE turns pairs of columns of Q and K, so it needs an even d_k; the sidebar's d_k is {d}, "
                       f"and its Position is {label}, which does not need one. Make d_k even to see RoPE here.",
                       icon=":material/warning:")
            row = st.container(horizontal=True)
            with row:
                for even in ([d - 1] if d > 1 else []) + [d + 1]:
                    sidebar_button(f"Set the sidebar's d_k to {even}", {"d_k": even}, key=f"rope.d_k.{even}",
                                   help="Every page then uses this d_k.")
        st.stop()
    gap = max(float(np.abs(forward[s].value - trace[s].value).max()) for s in ("q", "k"))
    if gap < 1e-12:
        qk = "Its Q and K are page 3's; $Q^R, K^R$ and the scores below are not on pages 3 and 4."
    else:
        trained = ", and the trained W_Q, W_K are the ones trained with that X" if config.weights == "trained" else ""
        qk = (f"Its Q and K differ from page 3's (by up to {gap:.3g}: there ${trace['x'].formula}${trained}), "
              "and $Q^R, K^R$ and the scores below are not on pages 3 and 4.")
    with st.container(border=True):
        st.markdown(f":material/info: **The sidebar's Position is {label}.** This page shows the same settings with "
                    f"Position = RoPE: nothing is added to X, and Q, K are turned by position into $Q^R, K^R$. {qk}")
        sidebar_button("Set the sidebar's Position to RoPE", {"positional": "rope"}, key="rope.use",
                       help="Every forward page then rotates Q and K, and shows these numbers.")
    return forward


def controls(config: Config) -> tuple[int, str]:
    """The base in force (the sidebar's, with one-click presets), the pairing toggle, the head: (head, pairing)."""
    base = float(config.pe_base)
    with st.container(border=True):
        st.markdown(f"Base **{base:,.10g}** in $\\theta_i = \\text{{base}}^{{-2i/d_k}}$: the sidebar's Base (rope_theta "
                    "in a model's config). Set the sidebar's Base to a published one:")
        row = st.container(horizontal=True)
        with row:
            for value, models in BASES.items():
                if value != base:
                    sidebar_button(f"{models}: base {value:,.0f}", {"pe_base": value},
                                   key=f"rope.base.{value:g}",
                                   help=f"The sidebar's Base becomes {value:,.0f}; every page uses it (the sinusoids "
                                        "too).")
        h = config.n_heads
        left, right = st.columns([3, 2], vertical_alignment="center") if h > 1 else (st.container(), None)
        half = left.toggle("Half pairing $(x_i, x_{i+d_k/2})$", key="rope.half",
                         help="On: pairs $(x_i, x_{i+d_k/2})$, as GPT-NeoX and Hugging Face's Llama, a comparison on "
                              "this page only: the forward pass (pages 3–7) keeps interleaved pairs. Off: interleaved "
                              "pairs $(x_{2i}, x_{2i+1})$, as RoFormer, GPT-J, Meta's Llama code and this app's "
                              "forward pass.")
        head = 0
        page_state.fit("rope.head", 0, h - 1)          # a head the sidebar no longer has is not kept in the link
        if h > 1:
            g = h // config.kv_heads
            head = right.selectbox(f"Head h (of the sidebar's H = {h})", range(h), key="rope.head",
                                format_func=lambda x: f"head {x}" + (f" · reads KV head {x // g}" if g > 1 else ""))
    return int(head), "half" if half else "interleaved"


def angles_intro(t: Trace) -> str:
    f = t.facts
    config, d, head = f["config"], f["d_k"], f["head"]
    bias = {name: f" + b_{name}" if config.bias else "" for name in ("Q", "K")}
    pairs = "one pair, i = 0" if d == 2 else f"{d // 2} pairs, i = 0 … {d // 2 - 1}"
    heads = ""
    if f["n_heads"] > 1:
        heads = (f" Head h = {head} of H = {f['n_heads']}: its queries are columns {head * d} … {(head + 1) * d - 1} "
                 f"of Q")
        if f["n_kv_heads"] == f["n_heads"]:
            heads += ", its keys the same columns of K"
        else:
            kv = f["kv_head"]
            heads += (f"; its keys come from KV head ⌊{head}/{f['n_heads'] // f['n_kv_heads']}⌋ = {kv} of "
                      f"H_kv = {f['n_kv_heads']}, columns {kv * d} … {(kv + 1) * d - 1} of K")
        heads += "."
    values = [fmt(v, 4) for v in f["theta"]]
    theta = ", ".join(values if len(values) <= 6 else values[:4] + [r"\dots"] + values[-1:])
    return ("## 1 · The angles $p\\,\\theta_i$\n\n"
            f"$$\n\\begin{{aligned}}\\theta_i &= \\text{{base}}^{{-2i/d_k}} = {base_tex(f['base'])}^{{-2i/{d}}},"
            f"\\quad i = 0 \\dots {d // 2 - 1} \\\\ \\theta &= [{theta}]\\ \\text{{rad per position}}"
            "\\end{aligned}\n$$\n\n"
            f":small[Q = X W_Q{bias['Q']} and K = X W_K{bias['K']} of your sentence, with X = X_emb: RoPE adds nothing "
            f"to X. d_k = {d}: {pairs}, counted from 0 here (θ_0 = 1; the RoFormer paper counts from 1, its θ_1 = 1)."
            f"{heads}]")


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
def pair_chart(a: float, b: float, theta: float, p: int, i: int, word: int, columns: tuple[int, int]):
    """(Arrow rows, spec) of the pair picture, built once per content (shared by every session)."""
    import pyarrow as pa
    path = pair_path(np.array([a, b]), theta, p)
    spec = pair_spec(path, math.hypot(a, b), f"pair {i} of q_{word} (columns {columns[0]}, {columns[1]})", columns)
    end = path[-1]                                  # what the picture shows, for a screen reader (its aria-label)
    r = math.hypot(a, b)
    num = lambda v: number(v, max(r, 0.1))          # as the heatmaps write numbers (a real minus, no −0.00)
    spec["description"] = (f"Pair {i} of q_{word} as a point in the plane: ({num(a)}, {num(b)}) at position 0, turned "
                           f"to position p = {p} by p·θ_{i} = {p * theta:.2f} rad: ({num(end['x'])}, {num(end['y'])}); "
                           f"its length {num(r)} stays.")
    return pa.Table.from_pylist(spec.pop("data")["values"]), spec


def turns_every(theta: float) -> str:
    period = 2 * math.pi / theta
    return f"{period:,.1f}" if period < 100 else f"{period:,.0f}"


def pair_turning(t: Trace) -> None:
    """One word's query pair turned by the position slider (the page draws it inside a fragment)."""
    d, n = t.facts["d_k"], t.n
    a, b, c = st.columns(3)
    page_state.fit("rope.word", 0, n - 1)
    word = a.selectbox("Word (its query q_i)", range(n), format_func=lambda i: f"{i} · {t.tokens[i]}",
                       key="rope.word")
    page_state.fit("rope.pair", 0, d // 2 - 1)
    i = b.slider("Pair i", 0, d // 2 - 1, key="rope.pair") if d > 2 else 0
    p = c.slider("Position p", 0, 64, key="rope.p")
    c0, c1 = pair_columns(d, i, t.facts["pairing"])
    q = t["q"].value[word]
    theta = float(t.facts["theta"][i])
    path = pair_path(np.array([q[c0], q[c1]]), theta, p)
    angle, (x, y) = p * theta, (path[-1]["x"], path[-1]["y"])
    # the picture and its arithmetic side by side where there is room, the arithmetic under it where not (a
    # narrow window, presenter mode); a formula wider than its place scrolls sideways instead of being cut
    row = views.side_row("rope-pair")
    with row:
        views.fit_css_in_fragment()
        rows, spec = pair_chart(float(q[c0]), float(q[c1]), theta, p, i, word, (c0, c1))
        st.vega_lite_chart(rows, spec=presented(spec), width="content")
    right = views.side_info(row, "rope-pair").container(key=views.anchor_class("rope-pair"))
    cos, sin = math.cos(angle), math.sin(angle)
    f = lambda v: f"({fmt(v)})" if v < 0 else fmt(v)          # a factor: negatives in parentheses
    qs = t.facts["symbols"].get("q", ("Q", "Q"))[0]
    ref = lambda col: f"({qs})_{{{word},{col}}}" if "_" in qs else f"{qs}_{{{word},{col}}}"
    right.markdown(
        f"$$\np\\,\\theta_{{{i}}} = {p} \\cdot {fmt(theta, 4)} = {fmt(angle, 4)}\\ \\text{{rad}}"
        f" = {math.degrees(angle):.1f}^\\circ\n$$\n$$\n\\begin{{aligned}}"
        f"(R_p\\, q_{{{word}}})_{{{c0}}} &= {ref(c0)} \\cos {p}\\theta_{{{i}}} - {ref(c1)} \\sin {p}\\theta_{{{i}}}"
        f" \\\\ &= {f(q[c0])} \\cdot {f(cos)} - {f(q[c1])} \\cdot {f(sin)} \\\\ &= {fmt(x)} \\\\[4pt] "
        f"(R_p\\, q_{{{word}}})_{{{c1}}} &= {ref(c0)} \\sin {p}\\theta_{{{i}}} + {ref(c1)} \\cos {p}\\theta_{{{i}}}"
        f" \\\\ &= {f(q[c0])} \\cdot {f(sin)} + {f(q[c1])} \\cdot {f(cos)} \\\\ &= {fmt(y)}\\end{{aligned}}\n$$\n\n"
        f":small[The query of “{md_escape(t.tokens[word])}” (q_{word}, row {word} of "
        f"{t.facts['symbols'].get('q', ('Q', 'Q'))[1]}) placed at position p = {p}, "
        f"its pair {i} (columns {c0}, {c1}, {t.facts['pairing']} pairing) turned by {angle:.3f} rad: blue dots are "
        f"positions 0 … p, the dashed line the pair at p = 0, the orange arrow at p. The length stays "
        f"{math.hypot(q[c0], q[c1]):.3f}; pair {i} turns θ_{i} = {theta:.4g} rad per position"
        + (", one radian: a full turn every 6.3 positions.]" if i == 0 else
           f": a full turn every {turns_every(theta)} positions.]"))


def rotated_rows(t: Trace, s: RopeSettings, sidebar_rope: bool) -> None:
    """Q beside Q^R, K beside K^R (one tab each, only the open one drawn)."""
    f = t.facts
    if s.pairing == "half":
        gap = f["forward_gap"]["scores"]
        differs = holds("rope_half_not_forward", s)
        why = "" if differs else ": " + "; ".join(pairings_alike(s))              # why the numbers are the same
        pairing = (f"Half pairing $(x_i, x_{{i+{f['d_k'] // 2}}})$ is a comparison on this page"
                   f"{', ' if differs else '; '}{say('rope_half_not_forward', s)}{why} (max "
                   f"|Δ{score_symbol(s.config)}| from the forward pass's = {num(gap)}).")
    else:
        pairing = f"Interleaved pairs $(x_{{2i}}, x_{{2i+1}})$: {say('rope_half_not_forward', s)}."
    page3 = " Page 3 shows them too." if sidebar_rope and s.pairing == "interleaved" else ""
    st.markdown("## 3 · Q and K, before and after the rotation\n\n"
                "$$\nq^R_i = R_i\\, q_i,\\quad k^R_j = R_j\\, k_j\n$$\n\n"
                ":small[$R_p$ turns each pair of columns by its angle in row p of section 1. Token i stands at "
                f"position p = i, so its query and key are turned by $R_i$. {pairing}{page3}]")
    tabs = st.tabs(["Queries: Q → Q^R", "Keys: K → K^R"], key="rope.qk", on_change="rerun")
    for tab, name in zip(tabs, ("q", "k")):
        if tab.open is not False:
            with tab:
                left, right = st.columns(2)
                with left:
                    views.step_box(t, name, max_w=300, key_prefix="rope.")
                with right:
                    views.step_box(t, f"{name}_rot", max_w=300, key_prefix="rope.")


def scores_box(t: Trace, s: RopeSettings) -> None:
    config = s.config
    key = score_key(config)
    # the distance-only identity answers a stop that hides a score of the shifted sentence: it waits for the reveal
    notes = [] if room_hide.waits(key) else [cap(say("rope_distance_only", s)) + "."]
    if config.n_heads > 1 and config.kv_heads < config.n_heads:
        notes.append(f"Query head {t.facts['head']} reads KV head {t.facts['kv_head']}.")
    if config.mask != "none":
        notes.append(f"The sidebar's {MASK_WORDS[config.mask]} mask comes after these scores (page 5).")
    st.markdown("## 4 · Scores of the rotated rows" + (f"\n\n:small[{' '.join(notes)}]" if notes else ""))
    views.step_box(t, key, key_prefix="rope.")


@st.fragment
def shift_panel(forward: Trace, s: RopeSettings, head: int) -> None:
    """Positions p + offset: Q^R changes, the dot-product scores do not (and with an added encoding they do)."""
    offset = int(st.slider("Shift the whole sentence by (positions p + offset)", 0, 1000, key="rope.offset"))
    s = RopeSettings(s.config, s.pairing, offset, s.n)
    if room_hide.waits(score_key(s.config)):         # what a shift does to the scores: a stop's answer, after the reveal
        st.markdown(room_hide.WAITS)
        page_state.sync()
        return
    views.claims_shown("rope", s)                    # this fragment's own run says its words under its offset
    c = shift_check(forward, head, s.pairing, offset)
    sym = score_symbol(s.config)
    if offset == 0:
        body = (f"- {cap(say('rope_rows_move', s))} (max |ΔQ^R| = {num(c['rot'])}, max |Δ{sym}| = "
                f"{num(c['rope'])}). Move the slider to shift the sentence.")
    else:
        moved = "these scores do change" if c["added"] > 1e-9 else "these scores did not change here"
        bias = ", biases" if s.config.bias else ""
        body = (f"- **RoPE**: max |ΔQ^R| = {num(c['rot'])}: {say('rope_rows_move', s, offset=offset)}; "
                f"max |Δ{sym}| = **{num(c['rope'])}**: {say('rope_shift_invariant', s)}.\n"
                f"- **A sinusoidal encoding added to X instead** (base {s.config.pe_base:,.10g}, the same W_Q, W_K{bias} "
                f"and score): max |Δ{sym}| = **{num(c['added'])}**: {moved}.\n\n"
                f":small[Maxima over all n × n scores, against the unshifted ones above.]")
    st.markdown(body)
    if offset:
        what = "arithmetic" if s.dot else "value"
        box = st.expander(f"{sym} at positions p + {offset}, cell by cell (click one for its {what})",
                          key="rope.shifted", on_change="rerun")
        if box.open:
            with box:
                views.step_box(c["trace"], score_key(s.config), key_prefix="rope.shift.")
    page_state.sync()                                # the slider's value in the link (a fragment's own run)


def pairing_panel(t: Trace, s: RopeSettings) -> None:
    f, d = t.facts, t.facts["d_k"]
    perm = ", ".join(map(str, f["perm"]))
    bias = " (and b_Q, b_K's entries)" if s.config.bias else ""
    st.markdown(
        "## 6 · Interleaved or half: the same rotation, columns reordered\n\n"
        f"The interleaved pairing makes columns (2i, 2i + 1) pair i: {FAMILIES['interleaved']}, and this app's forward "
        f"pass. The half pairing makes (i, i + d_k/2) pair i: {FAMILIES['half']}. Reordering the columns by"
        f"\n\n$$\n\\pi = [{perm}]\n$$\n\nturns one into the other (here on Q, K of the head above, token i at "
        "position i):\n"
        f"- the half pairing of Q[:, π] against the interleaved Q^R reordered by π: max difference "
        f"**{num(f['perm_rotation_gap'])}**;\n"
        f"- the dot products Q^R K^R⊤/√d_k with W_Q, W_K's columns{bias} reordered by π under half, against them not "
        f"reordered under interleaved: max difference **{num(f['perm_scores_gap'])}** (a checkpoint converted between "
        "the two reorders its W_Q, W_K columns this way, as Hugging Face's Llama conversion does);\n"
        f"- the same weights under the other pairing, not reordered: max difference **{num(f['mismatch_gap'])}**: "
        f"{say('rope_pairings_differ', s) or '; '.join(pairings_alike(s))}.")


def checked_text(t: Trace, forward: Trace, s: RopeSettings):
    """The box's text, made when the box opens (torch is imported then)."""
    def text() -> str:
        c = torch_checks(t)
        gap = t.facts["forward_gap"]
        scores = (f" From torch's rotated rows the scores differ by **{num(c['scores'])}**." if c["scores"] is not None
                  else "")
        same = (f"- **The forward pass.** Q and K here are the forward pass's own; in the interleaved pairing without "
                f"a shift so are Q^R, K^R and the scores. Live, against its numbers: max |ΔQ^R| = "
                f"**{num(gap['q_rot'])}**, max |ΔK^R| = **{num(gap['k_rot'])}**, max |Δ{score_symbol(s.config)}| = "
                f"**{num(gap['scores'])}**" + (" (the half pairing is this page's comparison, so these are not 0)"
                                              if holds("rope_half_not_forward", s) else
                                              f" (the half pairing, yet {'; '.join(pairings_alike(s))})"
                                              if s.pairing == "half" else "") + ".")
        return "\n".join([
            same,
            f"- **Complex numbers.** RoFormer writes the rotation with complex numbers: a pair becomes one complex "
            f"number (its first column the real part, its second the imaginary part: $(x_{{2i}}, x_{{2i+1}})$ "
            f"interleaved, $(x_i, x_{{i+d_k/2}})$ half), times $e^{{\\mathrm{{i}}\\, p\\theta_i}}$. Q^R and K^R made "
            f"again that way, live: max difference **{num(t.facts['complex_gap'])}**.",
            f"- **PyTorch, as two model libraries write it** (64-bit floats, live, computed when this box opened): "
            f"complex numbers as in Meta's Llama code, max difference **{num(c['complex'])}**; cos and sin with the "
            f"halves swapped, as in Hugging Face's Llama, max difference **{num(c['rotate_half'])}**. Each is fed the "
            f"columns in the order it pairs them.{scores}",
            "- **The frequencies** are checked against RoFormer's formula θ_i = 10000^(−2(i−1)/d) for i = 1 … d/2: "
            "the paper counts pairs from 1, this page from 0, so the paper's θ_1 is this page's θ_0 = 1.",
            *([] if room_hide.waits(score_key(s.config)) else [
            "- **The shift property** is tested on random queries and keys of many widths, bases, positions and "
            "offsets, in both pairings: moving both positions by the same offset changes no dot product beyond "
            "rounding, while an additive or bilinear score, or an encoding added to X, does change. The pair "
            "picture's arrow is tested to end where the rotation puts the pair."]),
            "- **Every clicked cell** is recomputed from the numbers its explanation shows and compared with the cell."])
    return text
