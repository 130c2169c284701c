import numpy as np
import pyarrow as pa
import streamlit as st

import ui
from ui.room import hide as room_hide
from ui.cache import get_trace
from ui.forward.demo_charts import D_VALUES, saturation_chart, spread_chart

PAGE = "app_pages/4_scores.py"


@st.fragment
def one_word(trace, n_heads: int) -> None:
    """One query against every key; picking another word reruns only this part."""
    i = ui.one_word_picker(trace, "Query word")
    q, k = trace["q"].value, trace["k"].value
    if n_heads > 1:
        st.caption("With several heads each head scores with its own columns; this shows head 0.")
        q, k = trace["q_heads"].value[0], trace["k_heads"].value[0]
    st.latex(rf"S_{{{i},j}} = q_{{{i}}} \cdot k_j = \sum_{{m=0}}^{{d_k-1}} q_{{{i},m}}\, k_{{j,m}}")
    st.caption(f"Tokens, keys and dimensions are counted from 0, as on the heatmaps: m runs over the "
               f"d_k = {q.shape[1]} columns 0 … {q.shape[1] - 1}.")
    dots = k @ q[i]                                                   # (n_k,): q_i · k_j for every key j
    head = None if n_heads == 1 else 0
    columns, config, said = {"key word": trace.token_labels()}, {}, False
    for name, key, values in (("q·k", "scores", dots), ("q·k / √d_k", "scaled_scores", dots / np.sqrt(q.shape[1]))):
        # a lesson stop's hidden number (a student's screen, before the reveal): "?" (ui/room/hide.py)
        columns[name], text = room_hide.column(values, 3, [room_hide.hidden(key, head, i, j) for j in range(len(dots))])
        config[name] = (st.column_config.TextColumn(alignment="right") if text else
                        st.column_config.NumberColumn(format="%.3f"))
        said = said or text
    st.dataframe(pa.table(columns), hide_index=True, width="content", column_config=config)
    if said:
        st.caption(room_hide.STUDENT_CAPTION)


@st.fragment
def saturation_experiment() -> None:
    """The experiment's own slider reruns only the experiment (no settings involved)."""
    demo_dk = st.select_slider("d_k for the experiment", options=list(D_VALUES), key="demo_dk")
    ui.page_state.keep("demo_dk")                                     # a fragment's pick: kept, in the link
    c1, c2 = st.columns(2)
    with c1:
        ui.chart(spread_chart())
    with c2:
        chart, top_u, top_s = saturation_chart(demo_dk)
        ui.chart(chart)
        st.caption(f"Largest weight without scaling: {top_u:.3f}; with scaling: {top_s:.3f}.")

config, trace = ui.page(PAGE, "Scores and scaling")
ui.notices(trace)
st.markdown("How well does each query match each key? The **score** S[i, j] answers with one number per "
            "(query i, key j) pair; softmax will turn each row of scores into attention weights.")

if config.score in ("dot", "scaled_dot"):
    def all_words() -> None:
        for key in ("scores", "scaled_scores"):
            if key in trace:
                ui.step(trace, key)
    ui.views.word_tabs("scores.tab", lambda: one_word(trace, config.n_heads), all_words)   # only the open tab runs
else:
    ui.step(trace, "scores")

st.subheader("Why divide by √d_k?")
st.markdown("If the entries of q and k have variance 1, their dot product is a sum of d_k products and "
            "has **variance d_k**. Large scores push softmax to put almost all weight on one key, where its "
            "gradient is almost zero. Dividing by √d_k brings the variance back to 1.")
saturation_experiment()

# A side-by-side of the four score functions (the Score functions page goes further): in a lazy
# expander, its four traces and heatmaps run only while it is open
box = st.expander("Four score functions on the same queries and keys", icon=":material/compare:",
                  key="scores.compare", on_change="rerun")
if box.open:
    with box:
        st.caption("Each panel is the same sentence and the same Q and K, scored four ways (head 0 if several heads).")
        cols = [c for _ in range(2) for c in st.columns(2)]
        formulas = {"dot": r"q_i \cdot k_j", "scaled_dot": r"\frac{q_i \cdot k_j}{\sqrt{d_k}}",
                    "additive": r"v^\top \tanh(W_1^\top q_i + W_2^\top k_j)", "bilinear": r"q_i^\top W k_j"}
        for col, score in zip(cols, ("dot", "scaled_dot", "additive", "bilinear")):
            with col:
                # scores come before masking and softmax: those settings do not change them, so
                # every temperature and mask shares these four traces (computed once, cached)
                other = get_trace(config.replace(score=score, mask="none", padding=(), temperature=1.0))
                step = other["scaled_scores" if score == "scaled_dot" else "scores"]
                st.markdown(f"**{score.replace('_', ' ')}**\n\n$$\n{formulas[score]}\n$$")   # name, formula: one element
                ui.views.explained_heatmap(other, step, key=f"hm:cmp:{score}", max_w=220,
                                           head=0 if config.n_heads > 1 else None)
