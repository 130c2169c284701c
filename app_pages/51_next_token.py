import streamlit as st

import ui
from ui.transformer import next_token_view as view

PAGE = "app_pages/51_next_token.py"
config, _ = ui.page(PAGE, "The next token")
view.intro()
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

    repeat = bool(trace.facts["targets"])
    st.subheader("Which heads did the copying" if repeat else "The heads that copy (nothing to copy here)")
    st.markdown(
        "In layer 0 a **previous-token head** writes into each position which token came before it. In layer 1 an "
        "**induction head**'s query at the last position then matches the keys whose previous token is the current "
        "word (K-composition), so it attends to the token right **after** the word's earlier occurrence, and its "
        "output raises that token's logit." + ("" if repeat else " Here the last word has no earlier occurrence: "
                                               "no key follows one, so an induction head has nothing to find."))
    view.heads(trace)
