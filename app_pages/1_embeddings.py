import streamlit as st

import ui
from ui.cache import get_neighbours
from ui.room import hide as room_hide
from ui.text import md_escape
from attention_core.math.embeddings import cosine_similarity, vocabulary_for

COS = "view:cosine_tokens"                           # the sentence's similarities (trace.view's key)

PAGE = "app_pages/1_embeddings.py"
config, trace = ui.page(PAGE, "Tokens & embeddings")

st.markdown("A sentence becomes **tokens** (lower-case words), and each token becomes a **row of numbers** "
            "looked up in an embedding table. Everything attention does afterwards is arithmetic on these rows.")
st.markdown("**Tokens:** " + " ".join(f"`{w}`" for w in trace.tokens) + f"  ·  n = {trace.n}")
ui.notices(trace)
st.caption(f"Source: {trace.facts['source']}.")

vocab = vocabulary_for(config)
ui.step(trace, "x_embed")

st.subheader("Which words are close?")
if vocab is None:
    st.caption("Seeded random vectors carry no meaning, so their neighbours are arbitrary: compare the "
               "cosine similarities of this sentence's words below with GloVe's.")
else:
    meaning = {"glove": "In trained vectors like these, similar meanings give similar directions.",
               "upload": "If your vectors were trained, similar meanings give similar directions.",
               "toy": "The toy vectors are hand-made, not trained: their neighbours show the arithmetic, "
                      "not meaning."}[config.embedding]
    st.caption(f"Cosine similarity cos(a, b) = a·b / (|a||b|), over the {len(vocab.words):,} words of the "
               f"{vocab.name} table. {meaning}")
    choices = [w for w in dict.fromkeys(trace.tokens) if w in vocab]
    if choices and room_hide.any_hidden(COS):        # a lesson stop's hidden similarity: its bar would give it away
        st.caption(":material/visibility_off: The nearest neighbours come back when your teacher reveals the "
                   "answer: they show the sentence's similarities too.")
    elif choices:
        word = st.selectbox("Nearest neighbours of", choices, key="nn_word")
        rows = get_neighbours(config, word, 8)           # once per vocabulary and word (ui.cache)
        ui.chart(ui.neighbours_spec(word, rows))
    else:
        st.caption("None of the sentence's words is in the table (they were mapped to <unk>).")

st.markdown("**Cosine similarity between the sentence's words**")
cos = trace.view(COS.split(":", 1)[1], "Cosine similarity of embeddings",
                 lambda: cosine_similarity(trace["x_embed"].value), ("n", "n"), r"\cos(x_i, x_j)")
st.latex(r"\cos(x_i, x_j) = \frac{x_i \cdot x_j}{\lVert x_i \rVert\, \lVert x_j \rVert}")
ui.views.explained_heatmap(trace, cos, key="hm:cos")
zero = [w for w, row in zip(trace.token_labels(), trace["x_embed"].value) if not row.any()]
if zero:
    st.caption(f"{md_escape(', '.join(zero))}: the zero vector here, which has no direction: its cosine with any word "
               "(itself included) is undefined, and is drawn as 0.")
