"""The masks-and-biases page's controls, the slopes' construction, and its live checks."""
from __future__ import annotations

import math

import numpy as np
import streamlit as st

from attention_core.alibi import alibi_slopes
from attention_core.attention import softmax
from attention_core.config import MAX_HEADS
from attention_core.explain import fmt
from attention_core.trace import Trace

MASK_NAMES = {"causal": "causal", "sliding_window": "sliding window", "padding": "padding", "none": "none"}


def _keep_in(key: str, low: int, high: int, default: int, name: str = "") -> None:
    """A slider's value (its default the first time) clamped to its (new) range (a shorter sentence, fewer
    heads, a tampered session); with a name, a warning says so. The slider then takes it from the state."""
    v = st.session_state.setdefault(key, default)
    if isinstance(v, (int, float)) and not isinstance(v, bool) and not low <= v <= high:
        st.session_state[key] = min(max(int(v), low), high)
        if name:
            st.warning(f"{name} = {v} is out of range: use {low} to {high}. Showing {st.session_state[key]}.",
                       icon=":material/warning:")


def sink_default(scaled: np.ndarray) -> float:
    """A sink logit where it is worth seeing: the median over rows of the largest visible (causal) score, so
    that on a typical row the sink and the keys split the weight about evenly. On the 0.5 grid, in ±30."""
    top = np.max(np.where(np.tril(np.ones_like(scaled, dtype=bool)), scaled, -np.inf), axis=1)     # (n,)
    return float(np.clip(round(2 * float(np.median(top))) / 2, -30.0, 30.0))


def controls(tokens: tuple[str, ...], scaled: np.ndarray) -> dict:
    """The page's controls (keys masks.*) -> the arguments of lesson_masks.masks_trace. scaled: Ŝ (n, n)."""
    n = len(tokens)
    with st.container(border=True):
        left, right = st.columns([3, 2])
        mask = left.segmented_control("Mask", list(MASK_NAMES), format_func=MASK_NAMES.get, default="causal",
                                      key="masks.mask") or "causal"
        window, hidden = 3, ()
        if mask == "sliding_window":
            _keep_in("masks.window", 0, n + 2, min(3, n))
            window = right.slider("Window W (keys a query sees, itself included)", 0, n + 2,
                                  key="masks.window", help="0 is allowed here so you can see what it would mean.")
        elif mask == "padding":
            st.session_state["masks.hidden"] = [j for j in st.session_state.get("masks.hidden", [n - 1]) if j < n]
            hidden = tuple(right.multiselect("Hidden keys (padding)", range(n), key="masks.hidden",
                                             format_func=lambda j: f"{j} “{tokens[j]}”"))
        a, b, c, d = st.columns([2, 3, 3, 3])
        heads = head = 0
        if a.toggle("ALiBi", key="masks.alibi", help="Add ALiBi's bias −m_h·(i − j) to the scores."):
            _keep_in("masks.heads", 1, MAX_HEADS, 8, "ALiBi heads H")
            heads = b.slider("ALiBi heads H", 1, MAX_HEADS, key="masks.heads")
            _keep_in("masks.head", 0, heads - 1, 0)
            head = c.slider("Head h shown", 0, max(heads - 1, 1), key="masks.head", disabled=heads == 1)
        sink = None
        if a.toggle("Sink", key="masks.sink_on", help="A learned logit z_h in softmax's denominator."):
            st.session_state.setdefault("masks.sink", sink_default(scaled))
            sink = float(d.slider("Sink logit z_h", -30.0, 30.0, step=0.5, key="masks.sink",
                                  help="Starts near the typical row's largest score, where the sink and the keys "
                                       "share the weight about evenly."))
    return dict(mask=mask, window=window, hidden=hidden, heads=heads, head=head, sink=sink)


def slopes_markdown(heads: int) -> str:
    """How m_0 … m_{H−1} are built, with the numbers: c = 2^⌊log₂ H⌋ slopes, then [0::2][:H − c] of the 2c ones."""
    c = 2 ** int(math.floor(math.log2(heads)))
    more = r", \dots" if c > 4 else ""
    first = ", ".join(f"2^{{-{8 * (h + 1)}/{c}}}" for h in range(min(c, 4))) + more
    values = ", ".join(f"{v:.4g}" for v in alibi_slopes(c)[:4]) + more
    text = (f"$$\nc = 2^{{\\lfloor \\log_2 {heads} \\rfloor}} = {c}:\\quad m_0, \\dots, m_{{{c - 1}}} = {first}"
            f" = {values}\n$$")
    if heads > c:
        extra = range(heads - c)                                  # slope 2e of the 2c sequence: 2^(−8(2e+1)/2c)
        powers = ", ".join(f"2^{{-{8 * (2 * e + 1)}/{2 * c}}}" for e in extra)
        picked = ", ".join(f"{v:.4g}" for v in alibi_slopes(2 * c)[0::2][:heads - c])
        text += (f"\n\n$$\n\\text{{then }} m_{{{c}}}, \\dots, m_{{{heads - 1}}} = (\\text{{the {2 * c}-head slopes}})"
                 f"[0::2][:{heads - c}] = {powers} = {picked}\n$$")
    return text + ("\n\n:small[:gray[Heads counted from 0: m_h = 2^(−8(h+1)/H) for H a power of two; the paper "
                   "counts from 1 and writes 2^(−8h/H).]]")


@st.fragment
def panels(trace: Trace, items: list) -> None:
    """The page's step boxes in order, in one fragment (a click or a table toggle reruns these, not the page).
    An item is Markdown (str), a box (key, why[, step_box options]) or a list of boxes side by side."""
    from .views import step_box

    def box(key, why, options=None):
        step_box(trace, key, why=why, **(options or {}))
    for item in items:
        if isinstance(item, str):
            st.markdown(item)
        elif isinstance(item, list):
            for col, part in zip(st.columns(len(item)), item):
                with col:
                    box(*part)
        else:
            box(*item)


def sink_check(trace: Trace) -> float:
    """max |A_sink − softmax([S̃_i, z_h])[:-1]|: the sink as an ordinary softmax over one more column, dropped."""
    s = trace["masked_scores"].value                                            # (n, n)
    z = np.full((s.shape[0], 1), trace.facts["settings"].sink)
    return float(np.abs(softmax(np.concatenate([s, z], axis=1))[:, :-1] - trace["sink_weights"].value).max())


def torch_check(trace: Trace) -> str:
    """torch's scaled_dot_product_attention on Q_0, K_0 with the mask (bool) or bias + mask (float) and V = I,
    so its output is the weights A: the largest difference from this page's A."""
    import torch
    import torch.nn.functional as F
    q, k = (torch.from_numpy(np.array(trace[key].value)) for key in ("q", "k"))
    n = q.shape[0]
    eye = torch.eye(n, dtype=torch.float64)                                      # V = I: the output is A itself
    mask = torch.from_numpy(trace["mask"].value == 1)
    if "alibi_bias" in trace:
        bias = torch.from_numpy(np.array(trace["alibi_bias"].value)).masked_fill(~mask, float("-inf"))
        a, how = F.scaled_dot_product_attention(q, k, eye, attn_mask=bias), "a float attn_mask (B_h, −∞ where hidden)"
    else:
        a, how = F.scaled_dot_product_attention(q, k, eye, attn_mask=mask), "an explicit bool attn_mask"
    diff = float(np.nan_to_num(np.abs(a.numpy() - trace["weights"].value), nan=np.inf).max())
    return (f"torch {torch.__version__} `scaled_dot_product_attention(Q₀, K₀, I, attn_mask=…)` with {how}: "
            f"max |A_torch − A| = {diff:.1e}.")
