import streamlit as st

import ui
from attention_core import ConfigError
from ui.real import model as real
from ui.real import next_view
from ui.real import tokens_view as view

PAGE = "app_pages/70_real_tokens.py"
config, _ = ui.page(PAGE, "Tokens in, the next token out", settings="sentence")
st.markdown(
    "The attention pages compute on a toy model: GloVe word vectors and weights the project trained. These pages run "
    "a whole language model with its trained weights through the same arithmetic: the project's own small model "
    "(the one the induction page trains, shipped with the app) or a checkpoint published on Hugging Face. The project "
    "reads its weights and computes every step itself, in numpy, so every number can be clicked and explained. The "
    "sidebar's sentence is the text it reads (the only setting the sidebar shows here).")
model, trace = real.model_and_trace(config.sentence)
st.subheader("In: your sentence, as token ids")
st.markdown(view.reading(model))
view.pieces_table(trace)
st.markdown(view.why_marks(trace, config.sentence))
st.markdown("Each id picks a row of the embedding table E: X₀ = E[ids]" +
            (" plus a learned row per position" + (" (GPT-2)." if model.config.model_type == "gpt2" else ".")
             if model.config.family == "gpt2" else
             ", with no position added: RoPE turns each query and key by its position inside attention.") +
            " The next pages follow X₀ through every head of every layer.")

st.subheader("Out: the next token")
st.markdown("At the last position the model scores every token of its vocabulary: one logit z_j each, the last row "
            "of Z = N_f(X_L) W_U. The next token is drawn from them exactly as on the small model's next-token page: "
            "temperature before softmax, then top-k, then top-p, renormalised, and a seeded draw.")
with st.container(border=True):
    T, k, p, seed = next_view.controls(model.config.vocab)
try:
    said, bars = next_view.drawn(trace, T, k, p, seed)
except ConfigError as err:
    st.error(str(err), icon=":material/error:")
    st.stop()
st.markdown(said)
st.latex(r"T = 0:\; \text{the next token is } \arg\max_j z_j \text{ (the first, at a tie)}" if T == 0 else
         r"p = \mathrm{softmax}(z / T) \;\to\; \text{top-}k \;\to\; \text{top-}p \;\to\; "
         r"p'_j = \frac{p_j\,\text{kept}_j}{\sum_i p_i\,\text{kept}_i} \;\to\; "
         r"\text{the first } j \text{ with } p'_0 + \dots + p'_j > u")
st.caption(f"The {next_view.SHOWN} most probable tokens (a token's id, then " +
           ("its word, or “token k” for an id no word was given)." if view.small(trace) else
            "its piece as the vocabulary stores it)."))
ui.chart(bars)
