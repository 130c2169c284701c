import streamlit as st

import ui
from attention_core import ConfigError
from attention_core.claims import say
from attention_core.lesson_masks import masks_trace, sentence_scores
from ui.masks_view import controls, panels, sink_check, slopes_markdown, torch_check
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


def why(key, *claims, checked=""):
    """(key, the step's why + the claims that hold (or their 'otherwise') + what it was checked against)."""
    words = [md_escape(w[0].upper() + w[1:]) + "." for w in (say(c, s) for c in claims) if w]
    return key, "  \n".join([t[key].why] + words + ([f":material/verified: Checked against {checked}"] if checked else []))


SDPA = "torch's SDPA with " + ("B_h as a float attn_mask" if s.heads else "the explicit bool mask") + " (tests; live below)."
items = [why("scaled_scores", checked="torch's SDPA, which scales Q Kᵀ by 1/√d_k the same way (tests).")]
if s.heads:
    items += [f"#### ALiBi: H = {s.heads} heads, a slope each\n\n" + slopes_markdown(s.heads),
              why("alibi_slopes", "masks_slopes_geometric", "masks_slopes_interleaved", checked="the paper's "
                  "published slopes for H = 8 and the reference code's get_slopes for H = 1 … 16 (tests)."),
              why("alibi_bias", "masks_alibi_both_sides"), why("biased_scores", checked=SDPA)]
if s.mask == "sliding_window":
    longer = (f" W = {s.window} is longer than the sentence (n = {s.n}): nothing is cut off, the window is the causal "
              "mask. It still works." if s.window > s.n else "")
    items += [[why("mask", "masks_window_is_causal", "masks_readings_differ") + ({"title": f"W = {s.window} keys "
               f"(torch, Longformer)", "max_w": 300},), why("mask_w1", checked="their definitions and the causal "
               "mask (tests)." + longer) + ({"title": f"W + 1 = {s.window + 1} keys (Mistral's paper)", "max_w": 300},)]]
else:
    items += [why("mask", "masks_all_hidden", checked="torch's SDPA with the explicit bool mask (tests).")]
items += [why("masked_scores"), why("weights", *(() if s.sink is not None else ("masks_rows_sum_to_one",)),
                                     checked=SDPA)]
if s.sink is not None:                                   # the row sums and the sink's share, live
    items += [why("sink_weights", checked=f"softmax over [S̃_i, z_{h}] with the sink's column dropped, live: max "
                  f"difference {sink_check(t):.1e}."), why("row_sums", "masks_rows_sum_to_one", "masks_sink_below_one")]
panels(t, items)
box = st.expander("Check it live against PyTorch", key="masks.torch", on_change="rerun")
if box.open:
    with box:
        st.markdown(torch_check(t))
