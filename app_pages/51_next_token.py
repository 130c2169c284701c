import streamlit as st

import ui
from ui.transformer import next_token_view as view

PAGE = "app_pages/51_next_token.py"
config, _ = ui.page(PAGE, "The next token")
st.markdown(
    "A language model reads a sentence and, at its **last position**, gives one logit z_j per token of its "
    "vocabulary. Softmax turns the logits into probabilities, and the next token is **drawn** from them. The model "
    "here is small (2 layers of attention, 4 heads each, 31 tokens, a context of 40) and was trained on one task "
    "only: **copying**, on random tokens in which a stretch repeats. What it learned does not depend on which token "
    "is which, so each distinct word of the sidebar's sentence becomes one of its tokens, in order of first "
    "appearance. A sentence with a repeated phrase can then be continued by copying: after “the”, look at what "
    "followed “the” before.")
with st.container(border=True):
    T, k, p, seed, n_new = view.controls()
trace = view.lesson(config.sentence, T, k, p, seed, n_new)
if trace is not None:
    view.notes(trace)
    view.example_button(trace)

    st.subheader("From logits to probabilities, the kept set, and a sample")
    st.latex(r"p = \mathrm{softmax}(z / T) \;\to\; \text{top-}k \;\to\; \text{top-}p \;\to\; "
             r"p'_j = \frac{p_j\,\text{kept}_j}{\sum_i p_i\,\text{kept}_i} \;\to\; "
             r"\text{the first } j \text{ with } p'_0 + \dots + p'_j > u")
    view.bars(trace)
    view.sample(trace)
    view.every_number(trace)

    st.subheader("Generating, one token at a time")
    view.generated(trace)

    st.subheader("Which heads did the copying")
    st.markdown(
        "In layer 0 a **previous-token head** writes into each position which token came before it. In layer 1 an "
        "**induction head**'s query at the last position then matches the keys whose previous token is the current "
        "word (K-composition), so it attends to the token right **after** the word's earlier occurrence, and its "
        "output raises that token's logit.")
    view.heads(trace)
