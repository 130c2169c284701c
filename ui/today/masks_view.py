"""The masks-and-biases page's parts: what the sidebar sets here (with one-click changes), the page's own
controls (the head shown, the sink), the forward pass's steps for that head, masks compared, and the checks."""
from __future__ import annotations

import math

import numpy as np
import streamlit as st

from attention_core.math.alibi import alibi_slopes
from attention_core.math.attention import softmax
from attention_core.forward.claims import say
from attention_core.math.limits import MAX_TOKENS
from attention_core.forward.config import Config
from attention_core.lessons.masks import MaskSettings, index_range, padding_compared
from attention_core.forward.trace import Trace

from .. import page_state
from ..room import hide as room_hide
from ..settings import POSITIONAL_LABELS, sidebar_back, sidebar_button
from ..text import md_escape

MASK_NAMES = {"causal": "causal", "sliding_window": "a sliding window", "padding": "padding", "none": "none"}
COMPARE_TABS = ("W or W + 1 keys", "Causal or window", "Causal or padding")


def keys(w: int) -> str:
    """'1 key', '3 keys'."""
    return f"{w} key{'s' * (w != 1)}"


def _position_name(config: Config) -> str:
    return POSITIONAL_LABELS[config.positional].split(" (")[0]


def _mask_words(config: Config) -> str:
    if config.mask == "sliding_window":
        return f"a sliding window of W = {keys(config.window)}"
    if config.mask == "padding":
        hidden = sorted(set(config.padding))
        if not hidden:
            return "padding hiding no key yet (choose positions in the sidebar)"
        return f"padding hiding key{'s' * (len(hidden) != 1)} " + ", ".join(map(str, hidden))
    return MASK_NAMES[config.mask]


def intro(config: Config) -> str:
    sym = "Ŝ" if config.score == "scaled_dot" else "S"
    return (f"Before softmax, today's models change the scores {sym} in two ways: a **bias** added to every score "
            "(ALiBi: the further away a key, the lower its score) and a **mask** that hides keys (−∞). A **sink** "
            "then adds one logit to softmax's denominator. Below: one head of the forward pass under the sidebar's "
            "settings, step by step; then masks side by side.")


def _heads_button(config: Config) -> None:
    """One click to an H that is (not) a power of two, keeping the KV heads if they still divide it."""
    h = config.n_heads
    new = 6 if h & (h - 1) == 0 else 8
    changes = {"n_heads": new} | ({} if not config.n_kv_heads or new % config.n_kv_heads == 0 else {"n_kv_heads": 0})
    sidebar_button(f"Heads = {new}" + (", one KV head each" if "n_kv_heads" in changes else ""), changes,
                   key="masks.use_heads", help=f"Sets the sidebar's Heads to {new}: ALiBi's slopes are built "
                                               f"{'differently' if new & (new - 1) else 'as one sequence'} then.")


def sidebar_part(config: Config) -> None:
    """What the sidebar sets on this page, in sight, with one-click changes; the page has no control of its own
    for any of it."""
    h = config.n_heads
    line = (f":material/tune: **From the sidebar:** Position {_position_name(config)} · H = {h} head{'s' * (h > 1)}"
            + (f" (KV heads {config.kv_heads})" if config.kv_heads < h else "")
            + f" · mask: {_mask_words(config)} · temperature T = {config.temperature:g}"
            + ("" if config.score == "scaled_dot" else f" · score: {config.score.replace('_', ' ')}"))
    if config.positional == "alibi":
        kind = "a power of two" if h & (h - 1) == 0 else "not a power of two"
        line += (f"  \nALiBi is on (the sidebar's Position is ALiBi), one slope for each of the sidebar's H = {h} "
                 f"head{'s' * (h > 1)}; H is {kind}. To see the other kind, change the sidebar's Heads."
                 + sidebar_back())
    else:
        line += (f"  \nALiBi is off: the sidebar's Position is {_position_name(config)}, so no bias is added below. "
                 "With ALiBi, H is the sidebar's Heads.")
    if config.mask == "none":
        line += "  \nNo mask (the sidebar's): every query sees every key; the masks side by side are further down."
    st.markdown(line)
    with st.container(horizontal=True):
        if config.positional == "alibi":
            _heads_button(config)
        else:
            sidebar_button("Position = ALiBi", {"positional": "alibi"}, key="masks.use_alibi",
                           help="Sets the sidebar's Position to ALiBi: a bias on the scores, nothing added to X.")
        if config.mask == "none":
            sidebar_button("Mask = causal", {"mask": "causal"}, key="masks.use_causal_top",
                           help="Sets the sidebar's mask to causal: each query sees itself and the keys before it.")


def sink_start(forward: Trace, head: int) -> float:
    """Where a sink is worth seeing first: the median over rows of the largest logit softmax reads (head h,
    divided by T), so that on a typical row the sink and the keys split the weight about evenly. On the 0.5
    grid, within ±30."""
    x = forward[forward.facts["softmax_input"]].value
    x = (x[head] if x.ndim == 3 else x) / forward.facts["config"].temperature                    # (n, n)
    top = np.max(np.where(np.isfinite(x), x, -np.inf), axis=1)                                   # (n,)
    top = top[np.isfinite(top)]
    return float(np.clip(round(2 * float(np.median(top))) / 2, -30.0, 30.0)) if top.size else 0.0


def _sink_on(start: float) -> None:
    """The toggle's callback: switched on, the sink starts at `start` (the link then carries it)."""
    if st.session_state.get("masks.sink_on"):
        st.session_state["masks.sink"] = start


def own_controls(config: Config, forward: Trace) -> tuple[int, float | None]:
    """The page's own controls (declared in ui/page_state.py): the head h shown and the sink. -> (h, z_h or None)."""
    h = config.n_heads
    page_state.fit("masks.head", 0, h - 1)
    row = st.container(horizontal=True, vertical_alignment="bottom", gap="large")
    if h > 1:
        row.slider("Head h shown", 0, h - 1, key="masks.head", width=300,
                   help="Every head has its own scores" + (" and its own ALiBi slope" if config.positional == "alibi"
                                                            else "") + "; the mask is the same for all.")
    head = int(page_state.value("masks.head")) if h > 1 else 0
    sink = None
    if row.toggle("Sink", key="masks.sink_on", on_change=_sink_on, args=(sink_start(forward, head),),
                  help="A learned logit z_h in softmax's denominator (not a sidebar setting: the forward pass has no "
                       "sink). Switched on, it starts at the median of the rows' largest scores (what softmax reads), "
                       "so that it takes a visible share of a typical row."):
        sink = float(row.slider("Sink logit z_h", -30.0, 30.0, step=0.5, key="masks.sink", width=300,
                                help="z_h = 0 counts like one more key with score 0."))
    return head, sink


def slopes_markdown(heads: int) -> str:
    """How m_0 … m_{H−1} are built, with the numbers: c = 2^⌊log₂ H⌋ slopes, then [0::2][:H − c] of the 2c ones."""
    c = 2 ** int(math.floor(math.log2(heads)))
    more = r", \dots" if c > 4 else ""
    first = ", ".join(f"2^{{-{8 * (h + 1)}/{c}}}" for h in range(min(c, 4))) + more
    values = ", ".join(f"{v:.4g}" for v in alibi_slopes(c)[:4]) + more
    names = index_range(0, c - 1, "m")
    text = (f"$$\nc = 2^{{\\lfloor \\log_2 {heads} \\rfloor}} = {c}:\\quad {names} = {first}"
            f" = {values}\n$$")
    if heads > c:
        extra = range(heads - c)                                  # slope 2e of the 2c sequence: 2^(−8(2e+1)/2c)
        powers = ", ".join(f"2^{{-{8 * (2 * e + 1)}/{2 * c}}}" for e in extra)
        picked = ", ".join(f"{v:.4g}" for v in alibi_slopes(2 * c)[0::2][:heads - c])
        rest = index_range(c, heads - 1, "m")
        text += (f"\n\n$$\n\\text{{then }} {rest} = (\\text{{the {2 * c}-head slopes}})"
                 f"[0::2][:{heads - c}] = {powers} = {picked}\n$$")
    return text + ("\n\n:small[:gray[Heads counted from 0: m_h = 2^(−8(h+1)/H) for H a power of two; the paper "
                   "counts from 1 and writes 2^(−8h/H).]]")


def _why(t: Trace, key: str, s: MaskSettings, *claims: str) -> tuple[str, str]:
    """(key, the step's why + the claims that hold here, or their 'otherwise')."""
    words = [md_escape(w[0].upper() + w[1:]) + "." for w in (say(c, s) for c in claims) if w]
    return key, "  \n".join([t[key].why] + words)


def pipeline(t: Trace, config: Config) -> list:
    """The boxes from head h's scores to its weights (and the sink), in the order the forward pass computes."""
    s = t.facts["settings"]
    first = "scaled_scores" if "scaled_scores" in t else "scores"
    items: list = [_why(t, first, s)]
    if "alibi" in t:
        items += [f"#### ALiBi: H = {config.n_heads} head{'s' * (config.n_heads > 1)}, a slope each\n\n"
                  + slopes_markdown(config.n_heads),
                  _why(t, "alibi_slopes", s, "masks_slopes_geometric", "masks_slopes_interleaved"),
                  _why(t, "alibi", s, "masks_alibi_both_sides", "masks_alibi_one_side"), _why(t, "biased_scores", s)]
    if "mask" in t:
        claims = {"sliding_window": ("masks_window_is_causal",), "padding": ("masks_all_hidden",)}.get(config.mask, ())
        items += [_why(t, "mask", s, *claims), _why(t, "masked_scores", s)]
    items += [_why(t, "weights", s, "masks_rows_sum_to_one")]
    if s.sink is not None:
        items += [_why(t, "sink_weights", s), _why(t, "row_sums", s, "masks_sink_below_one")]
    return items


@st.fragment
def panels(trace: Trace, items: list) -> None:
    """The page's step boxes in order, in one fragment (a click or a table toggle reruns these, not the page).
    An item is Markdown (str), a box (key, why[, step_box options]) or a list of boxes side by side."""
    from ..views import step_box

    def box(key, why, options=None):          # a step a lesson stop hides: its words (its rule) wait for the reveal
        step_box(trace, key, why=room_hide.WHY_WAITS if why and room_hide.whole(key) else why, **(options or {}))
    for item in items:
        if isinstance(item, str):
            st.markdown(item)
        elif isinstance(item, list):
            for col, part in zip(st.columns(len(item)), item):
                with col:
                    box(*part)
        else:
            box(*item)


def _compared(t: Trace, key: str, title: str) -> tuple:
    return key, t[key].why, {"title": title, "max_w": 300}


def compare(t: Trace, config: Config) -> None:
    """Masks side by side, in lazy tabs (declared in ui/page_state.py): the one open runs. Where a mask shown is
    not the sidebar's, the tab says so with one click to make it so."""
    s, n, w = t.facts["settings"], t.n, config.window
    st.markdown("#### Masks side by side\n\nWhich keys each query may see (1) under masks the sidebar offers, "
                "on this sentence.")
    tabs = st.tabs(list(COMPARE_TABS), key="masks.compare", on_change="rerun")
    opened = [tab.open for tab in tabs]
    which = next((k for k, o in enumerate(opened) if o), 0)
    with tabs[which]:
        if which == 0:
            _readings(t, config, s)
        elif which == 1:
            notes = [_in_force(config, "causal", {"mask": "causal"}, "masks.use_causal"),
                     _in_force(config, "sliding_window", {"mask": "sliding_window"}, "masks.use_window",
                               f"a sliding window of W = {keys(w)}")]
            _notes(notes, say("masks_window_is_causal", s) or f"a window of W = {keys(w)} hides every key more than "
                                                               f"W − 1 = {w - 1} before its query; causal keeps them all")
            panels(t, [[_compared(t, "mask_causal", "Causal"),
                        _compared(t, "mask_w", f"Window of W = {keys(w)}")]])
        else:
            hidden = padding_compared(config, n)
            notes = [_in_force(config, "causal", {"mask": "causal"}, "masks.use_causal"),
                     _in_force(config, "padding", {"mask": "padding", "padding": hidden}, "masks.use_padding",
                               f"padding hiding key{'s' * (len(hidden) > 1)} {', '.join(map(str, hidden))}")]
            _notes(notes, "causal hides a triangle, different for each query; padding hides the same keys "
                          "(columns) from every query, before it or after it")
            panels(t, [[_compared(t, "mask_causal", "Causal"),
                        _compared(t, "mask_padding", f"Padding: key{'s' * (len(hidden) > 1)} "
                                                     f"{', '.join(map(str, hidden))} hidden")]])


def _in_force(config: Config, mask: str, changes: dict, key: str, words: str = "") -> tuple[str, dict, str] | None:
    """None when the sidebar's mask is this one (with these settings); else (words, changes, button key)."""
    same = (lambda f, v: set(getattr(config, f)) == set(v)) if mask == "padding" else (lambda f, v: getattr(config, f) == v)
    if config.mask == mask and all(same(f, v) for f, v in changes.items() if f != "mask"):
        return None
    return (words or MASK_NAMES[mask]), changes, key


def _notes(notes: list, lesson: str) -> None:
    """The lesson's sentence, which of the masks shown is the sidebar's, and a button for each that is not."""
    shown = [n for n in notes if n is not None]
    lines = [md_escape(lesson[0].upper() + lesson[1:]) + "."] if lesson else []
    if len(shown) < len(notes):
        lines.append("One of the two is the sidebar's mask, in force above.")
    if shown:
        lines.append("Not the sidebar's: " + "; ".join(n[0] for n in shown) + ". One click makes it the sidebar's:")
    st.markdown("  \n".join(lines))
    if shown:
        cols = st.columns(len(shown))
        for col, (words, changes, key) in zip(cols, shown):
            with col:
                sidebar_button(f"Mask = {words}", changes, key=key)


def _readings(t: Trace, config: Config, s: MaskSettings) -> None:
    w = config.window
    lines = [md_escape(say("masks_readings_differ", s)[0].upper() + say("masks_readings_differ", s)[1:]) + "."]
    if say("masks_window_is_causal", s):
        lines.append(md_escape(say("masks_window_is_causal", s)[0].upper() + say("masks_window_is_causal", s)[1:]) + ".")
    in_force = config.mask == "sliding_window"
    lines.append(("The left one is the sidebar's mask, in force above. " if in_force else
                  f"The sidebar's mask is {_mask_words(config)}; the left one is the sliding window of W = "
                  f"{keys(w)} the button under it makes the sidebar's. ")
                 + "The right one is not a reading the sidebar has (the sidebar's W counts the query; this "
                   "reading's W does not)"
                 + (f": the sidebar makes the same mask as a window of W = {w + 1} keys." if w + 1 <= MAX_TOKENS else
                    "; here it is the same mask as the left one."))
    st.markdown("  \n".join(lines))
    cols = st.columns(2)
    if not in_force:
        with cols[0]:
            sidebar_button(f"Mask = sliding window, W = {w}", {"mask": "sliding_window", "window": w},
                           key="masks.use_window_w")
    if w + 1 <= MAX_TOKENS:
        with cols[1]:
            sidebar_button(f"Mask = sliding window, W = {w + 1}", {"mask": "sliding_window", "window": w + 1},
                           key="masks.use_window_w1")
    panels(t, [[_compared(t, "mask_w", f"Up to W = {keys(w)} (Hugging Face, flash-attn)"),
                _compared(t, "mask_w1", f"Up to W + 1 = {w + 1} keys (Mistral's paper, PyTorch's example)")]])


# ---- "How this page is checked" -------------------------------------------------------------------------

def torch_difference(t: Trace) -> tuple[float, str]:
    """(max |A_torch − A_h| over the rows that see a key, how torch computed it): head h's weights by torch's own
    attention (dot-product scores: Q, K, the bias and the mask given to it) or torch's softmax (other scores)."""
    import torch
    import torch.nn.functional as F
    config, fwd, h = t.facts["config"], t.facts["forward"], t.facts["head"]
    temp, n = config.temperature, t.n
    mask = torch.from_numpy(fwd["mask"].value == 1) if "mask" in fwd else torch.ones(n, n, dtype=torch.bool)
    bias = torch.from_numpy(np.array(t["alibi"].value)) if "alibi" in t else torch.zeros(n, n, dtype=torch.float64)
    if config.score in ("dot", "scaled_dot"):
        q_key = "q_rot" if "q_rot" in fwd else "q_heads" if config.n_heads > 1 else "q"
        q, k = fwd[q_key].value, fwd[q_key.replace("q", "k", 1)].value
        kv = h // (config.n_heads // config.kv_heads)
        q, k = (q[h], k[kv]) if q.ndim == 3 else (q, k)
        scale = (1 / math.sqrt(config.d_k) if config.score == "scaled_dot" else 1.0) / temp
        attn = (bias / temp).masked_fill(~mask, float("-inf"))
        a = F.scaled_dot_product_attention(torch.from_numpy(np.array(q)), torch.from_numpy(np.array(k)),
                                           torch.eye(n, dtype=torch.float64), attn_mask=attn, scale=scale).numpy()
        given = [f"this head's {'rotated ' if 'q_rot' in fwd else ''}queries and keys"]
        given += ["ALiBi's bias"] * ("alibi" in t) + ["the mask"] * ("mask" in fwd)
        given += [f"the temperature T = {temp:g}"] * (temp != 1)
        how = "PyTorch's own attention function, given " + (given[0] if len(given) == 1 else
                                                             ", ".join(given[:-1]) + " and " + given[-1])
    else:
        first = "scaled_scores" if "scaled_scores" in t else "scores"
        x = (torch.from_numpy(np.array(t[first].value)) + bias).masked_fill(~mask, float("-inf")) / temp
        a = torch.softmax(x, dim=-1).numpy()
        how = ("PyTorch's softmax of the same scores" + (", ALiBi's bias added" if "alibi" in t else "")
               + (", the mask applied" if "mask" in fwd else "")
               + " (its attention function has no additive or bilinear score)")
    rows = mask.numpy().any(axis=1)
    diff = float(np.abs(a[rows] - t["weights"].value[rows]).max()) if rows.any() else math.nan
    return diff, how


def sink_difference(t: Trace) -> float:
    """max |A_sink − softmax([x_i, z_h])[:-1]|, x the row softmax reads (divided by T)."""
    x = t[t.facts["logits"]].value / t.facts["t"]                                     # (n, n)
    z = np.full((t.n, 1), t.facts["settings"].sink)
    full = softmax(np.concatenate([x, z], axis=1))                                  # a plain softmax over n + 1
    return float(np.abs(full[:, :-1] - t["sink_weights"].value).max())


def _listed(t: Trace) -> str:
    """'scores, ALiBi's bias, …, and weights': the forward steps this page shows under these settings."""
    names = [n for key, n in (("scaled_scores", "scaled scores"), ("scores", "scores"), ("alibi", "ALiBi's bias"),
                              ("biased_scores", "biased scores"), ("mask", "mask"),
                              ("masked_scores", "masked scores"), ("weights", "weights")) if key in t]
    return ", ".join(names[:-1]) + " and " + names[-1]


def checked_text(t: Trace) -> str:
    """The page's checks in words, with the live numbers (torch is imported only when the box is open)."""
    diff, how = torch_difference(t)
    lines = [
        f"- **The numbers are the forward pass's own.** The {_listed(t)} above are head {t.facts['head']} of the "
        "same computation the forward pages draw, under the sidebar's settings, not computed again here. The "
        "tests check that they are equal under RoPE, ALiBi, grouped key/value heads, a window and padding.",
        (f"- **Against PyTorch, live:** head {t.facts['head']}'s weights computed by {how}: the largest "
         f"difference from the A_h above is {diff:.1e}" + (" (rows whose every key is hidden are left out: torch "
                                                           "gives NaN there, this app 0)." if "mask" in t and not
                                                           t["mask"].value.any(axis=1).all() else ".")
         if not math.isnan(diff) else
         "- **Against PyTorch:** every key is hidden here, so there is nothing to compare live: torch gives NaN on "
         "every row, this app 0 (the tests check that no NaN appears)."),
        "- **ALiBi's slopes:** against the paper's published slopes for 8 heads (1/2, 1/4, …, 1/256) and the "
        "slope function of the authors' reference code, for every H from 1 to 16.",
        "- **The two readings of a window:** against their definitions. Hugging Face transformers keeps key j "
        "when j > i − W, and flash-attn takes W − 1 keys to the left plus the query: W keys. Mistral's paper "
        "writes positions i − W … i, and PyTorch's flexible-attention example keeps a key when i − j ≤ W: W + 1 "
        "keys. The sidebar's window is the first.",
        "- **The sink:** against PyTorch's attention with one extra key whose score is z_h and whose value is 0"
        + (f"; and live, against a plain softmax over each row with z_h appended, its column then dropped: the "
           f"largest difference is {sink_difference(t):.1e}." if "sink_weights" in t else "."),
        "- **A clicked cell:** its arithmetic is recomputed from the terms it shows and compared with the cell "
        "(the ✓ under it).",
    ]
    return "\n".join(lines)
