import numpy as np
import pyarrow as pa
import streamlit as st

import ui
from ui.room import hide as room_hide
from attention_core import entropy
from attention_core.forward.claims import say

PAGE = "app_pages/5_softmax.py"


@st.fragment
def boxes(trace) -> None:
    """The mask and the masked scores side by side (or the scores softmax takes), then the weights;
    one fragment for the boxes: a click or a table toggle reruns them, not the page."""
    if "mask" in trace:
        c1, c2 = st.columns(2)
        with c1:
            ui.views.step_box(trace, "mask", max_w=280)
        with c2:
            # "so its weight will be exactly 0" answers a stop that hides the weights: it waits for the reveal
            ui.views.step_box(trace, "masked_scores", max_w=280,
                              why="A hidden position's score becomes −∞." if room_hide.waits("weights") else True)
    else:
        st.caption("No mask: every query may look at every key (as in an encoder). Choose causal or padding in "
                   "the sidebar." + ui.settings.sidebar_back())
        ui.views.step_box(trace, trace.facts["softmax_input"])
    ui.views.step_box(trace, "weights")


config, trace = ui.page(PAGE, "Masking and softmax")
ui.settings_summary(config, "mask")
ui.notices(trace)
st.markdown("A **mask** hides keys a query must not see by setting their scores to −∞. **Softmax** then "
            f"turns each row of scores into weights, {say('rows_sum_to_one', config)}"
            + (". What weight a hidden key gets: predict first, revealed by your teacher." if room_hide.waits("weights")
               else ": exp(−∞) = 0, so a hidden key gets weight exactly 0."))

boxes(trace)

w = trace["weights"].value
heads = [None] if w.ndim == 2 else list(range(w.shape[0]))
st.subheader("Check each row")
st.caption("Each row sums to 1 (0 for a row whose keys are all hidden). Its entropy −Σ w log w measures how "
           f"spread it is: 0 = all weight on one key, log n = {np.log(trace.n):.3f} = uniform over the n={trace.n} keys.")
labels = trace.token_labels()
for h in heads:
    rows = w if h is None else w[h]
    top = rows.argmax(axis=1)
    # a lesson stop's hidden weight (a student's screen, before the reveal): its row's ranking and spread say "?"
    secret = [room_hide.row_hidden("weights", h, i, rows.shape[1]) for i in range(rows.shape[0])]
    entropies, entropy_text = room_hide.column(entropy(rows).round(4), 4, secret)
    biggest, biggest_text = room_hide.column(rows.max(axis=1).round(4), 4, secret)
    table = pa.table({"query": labels, "row sum": rows.sum(axis=1).round(12), "entropy (nats)": entropies,
             "looks most at": [room_hide.HIDDEN_SAYS if secret[i] else labels[j] if rows[i].sum() > 0 else "—"
                               for i, j in enumerate(top)],
             "its weight": biggest})
    if h is not None:
        st.caption(f"head {h}")
    right = st.column_config.TextColumn(alignment="right")
    st.dataframe(table, hide_index=True, width="content",
                 column_config={"row sum": st.column_config.NumberColumn(format="%.6f"),
                                "entropy (nats)": right if entropy_text else st.column_config.NumberColumn(format="%.4f"),
                                "its weight": right if biggest_text else st.column_config.NumberColumn(format="%.4f")})
    if any(secret):
        st.caption(room_hide.STUDENT_CAPTION)
