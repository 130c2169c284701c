import streamlit as st

import ui
from attention_core import ConfigError
from attention_core.claims import say
from attention_core.lesson_masks import masks_trace, sentence_scores
from ui.masks_view import controls, sink_check, slopes_markdown, torch_check
from ui.text import md_escape

PAGE = "app_pages/41_masks.py"
config, trace = ui.page(PAGE, "Masks & biases")
ui.notices(trace)
st.markdown("Before softmax, today's models change the scaled scores Ŝ in two ways: a **bias** added to every "
            "score (ALiBi: the further back a key, the lower its score) and a **mask** that hides keys (−∞). "
            "A **sink** then adds one logit to softmax's denominator. All on your sentence's head-0 Ŝ "
            "(sidebar settings); choose below.")
try:
    _, q, k = sentence_scores(config, trace)     # head 0's Q and K from the forward pass computed above
    opts = controls(trace.tokens, q @ k.T / q.shape[1] ** 0.5)
    t = masks_trace(config, **opts)
except ConfigError as err:
    st.error(str(err), icon=":material/error:")
    st.stop()
s, h = t.facts["settings"], opts["head"]


def note(*keys, checked=""):
    """The claims that hold (or their 'otherwise'), then what the panel was checked against: one caption."""
    words = [w for w in (say(k, s) for k in keys) if w]
    st.caption("  \n".join([md_escape(w[0].upper() + w[1:]) + "." for w in words]
                           + ([f":material/verified: Checked against {checked}"] if checked else [])))


ui.views.step_box(t, "scaled_scores")
note(checked="torch's SDPA, which scales Q Kᵀ by 1/√d_k the same way (tests/test_masks.py).")
if s.heads:
    st.subheader(f"ALiBi: H = {s.heads} heads, a slope each")
    st.markdown(slopes_markdown(s.heads))
    note("masks_slopes_geometric", "masks_slopes_interleaved", checked="the paper's published slopes for H = 8 and "
         "the reference code's get_slopes for H = 1 … 16 (tests).")
    ui.views.step_boxes(t, ["alibi_slopes", "alibi_bias", "biased_scores"])
    note("masks_alibi_both_sides", checked="torch's SDPA with B_h as a float attn_mask (tests; live below).")
st.subheader(f"The mask: {s.mask.replace('_', ' ')}")
if s.mask == "sliding_window":
    left, right = st.columns(2)
    with left:
        ui.views.step_box(t, "mask", title=f"W = {s.window} keys (torch, Longformer)", max_w=300)
    with right:
        ui.views.step_box(t, "mask_w1", title=f"W + 1 = {s.window + 1} keys (Mistral's paper)", max_w=300)
    if s.window > s.n:
        st.info(f"W = {s.window} is longer than the sentence (n = {s.n}): nothing is cut off, the window is "
                "the causal mask. It still works.", icon=":material/info:")
    note("masks_window_is_causal", "masks_readings_differ", checked="torch's SDPA with the explicit bool mask, "
         "and both readings against their definitions and the causal mask (tests).")
else:
    ui.views.step_box(t, "mask")
    note("masks_all_hidden", checked="torch's SDPA with the explicit bool mask (tests; live below).")
ui.views.step_boxes(t, ["masked_scores", "weights"])
note(checked="torch's SDPA with " + ("B_h as a float attn_mask" if s.heads else "the explicit bool mask")
     + " (tests; live below).")
if s.sink is not None:
    st.subheader(f"A learned sink, z_{h} = {s.sink:g}")
    ui.views.step_box(t, "sink_weights")
    note(checked=f"softmax over [S̃_i, z_{h}] with the sink's column dropped, live: max difference "
                 f"{sink_check(t):.1e}.")
ui.views.step_box(t, "row_sums")
note("masks_rows_sum_to_one", "masks_sink_below_one")
box = st.expander("Check it live against PyTorch", key="masks.torch", on_change="rerun")
if box.open:
    with box:
        st.markdown(torch_check(t))
