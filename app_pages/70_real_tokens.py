import streamlit as st

import ui
from ui.real import model as real
from ui.real import tokens_view as view

PAGE = "app_pages/70_real_tokens.py"
config, _ = ui.page(PAGE, "Tokens as the model sees them")
st.markdown(
    "The attention pages compute on a toy model: word vectors and weights the project made. These pages run a **real** "
    "language model, a checkpoint published on Hugging Face, through the same arithmetic: the project reads its "
    "weights and computes every step itself, in numpy, so every number can be clicked and explained. The sidebar's "
    "sentence is the text it reads; of the sidebar, only the sentence is used here.")
model = real.picker()
if model is None:
    st.stop()
trace = real.sentence_trace(model, config.sentence)
if trace is None:
    st.stop()
st.subheader("Your sentence, as token ids")
st.markdown("A model does not read words. Its tokenizer cuts the text into **pieces** from a fixed vocabulary "
            f"({model.config.vocab:,} of them here), learned from text by byte-pair encoding (BPE): the most "
            "frequent pairs of symbols were merged into one piece, again and again.")
view.pieces_table(trace)
st.markdown(view.why_marks(trace, config.sentence))
st.subheader("Then")
st.markdown("Each id picks a row of the embedding table E: X₀ = E[ids]" +
            (" plus a learned row per position (GPT-2)." if model.config.family == "gpt2" else
             ", with no position added: RoPE turns each query and key by its position inside attention.") +
            " The next pages follow X₀ through every head of every layer.")
