import streamlit as st

import ui
from attention_core import ConfigError
from ui.real import model as real
from ui.real import next_view as view

PAGE = "app_pages/73_real_next_token.py"
config, _ = ui.page(PAGE, "A real model's next token")
st.markdown(
    "At the last position the model scores every token of its vocabulary: one logit z_j each, the last row of "
    "Z = N_f(X_L) W_U. The next token is drawn from them exactly as on the small model's next-token page: "
    "temperature before softmax, then top-k, then top-p, renormalised, and a seeded draw.")
model = real.picker()
if model is None:
    st.stop()
trace = real.sentence_trace(model, config.sentence)
if trace is None:
    st.stop()
with st.container(border=True):
    T, k, p, seed = view.controls(model.config.vocab)
try:
    out = view.sample(trace, T, k, p, seed)
except ConfigError as err:
    st.error(str(err), icon=":material/error:")
    st.stop()
st.markdown(view.said(trace, out, T, k, p))
st.latex(r"p = \mathrm{softmax}(z / T) \;\to\; \text{top-}k \;\to\; \text{top-}p \;\to\; "
         r"p'_j = \frac{p_j\,\text{kept}_j}{\sum_i p_i\,\text{kept}_i} \;\to\; "
         r"\text{the first } j \text{ with } p'_0 + \dots + p'_j > u")
st.caption(f"The {view.SHOWN} most probable tokens (a token's id, then its piece as the vocabulary stores it).")
ui.chart(view.bars_spec(trace, out))
