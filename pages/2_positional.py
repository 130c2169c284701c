import numpy as np
import streamlit as st

import ui
from attention_core import sinusoidal_encoding
from attention_core.embeddings import cosine_similarity, vocabulary_for
from attention_core.positional import learned_encoding
from ui.demo_charts import pe_curves_chart

PAGE = "pages/2_positional.py"
# sentence pairs with the same words in another order, the first whose words the vocabulary has is suggested
SWAPS = (("dog bites man", "man bites dog"), ("the cat sat on a mat", "a mat sat on the cat"),
         ("i love you", "you love i"))


def swap_hint(vocab) -> str:
    for a, b in SWAPS:
        if vocab is None or all(w in vocab for w in a.split()):
            return f"Try “{a}” and “{b}”: the same rows of Q, K and V, only reordered."
    return "Type the sentence's words in another order: the same rows of Q, K and V, only reordered."


def similarity_note(d: int, embedding: str, sim: np.ndarray) -> str:
    """What the sinusoidal table's similarity map `sim` (positions × positions) shows, true for width d."""
    if d % 2 == 0:
        shape = ("The similarity depends only on the distance p − p′ (the same along each diagonal): "
                 "each pair of columns (sin, cos) of one frequency turns by the same angle per step.")
    else:
        shape = (f"With an odd width (d = {d}) the last column is a sine without its cosine partner, so the "
                 "similarity depends almost, but not exactly, on the distance p − p′ alone (with an even width "
                 "it would be the same along each diagonal).")
    wider = ("try a wider d_model in the sidebar" if embedding == "random" else
             "pick seeded random embeddings in the sidebar to set a wider d_model (these "
             f"{'toy' if embedding == 'toy' else 'GloVe' if embedding == 'glove' else 'uploaded'} vectors "
             "fix it)")
    p = sim.shape[0]
    near = float(np.diagonal(sim, 1).min()) if p > 1 else 1.0       # the least alike neighbours
    far = float(max(np.diagonal(sim, k).max() for k in range(9, p))) if p > 9 else None
    if far is None:
        return shape
    if far < near:
        return shape + (f" With {d} dimensions it falls off with distance: neighbours have cosine ≥ {near:.2f}, "
                        f"positions 9 or more apart at most {far:.2f}.")
    return shape + (f" With only {d} dimensions the fast sinusoids repeat, and far positions can look alike: two "
                    f"positions 9 or more apart reach cosine {far:.2f}, more than neighbours ({near:.2f}): {wider}.")
config, trace = ui.page(PAGE, "Positional encoding", local=("positional",))

if config.mask == "none":
    st.markdown("Attention compares every token with every other, but nothing in Q Kᵀ knows **where** a token "
                "is: without a positional encoding, shuffle the words and each row of the output just moves "
                "with its word. A positional encoding writes the position into the numbers.")
else:
    st.markdown("Attention compares every token with every other, but nothing in Q Kᵀ knows **where** a token "
                f"is. Only the {config.mask} mask looks at positions, and all it does is hide keys by their "
                "index; what a token is and where it stands otherwise reach attention only through a "
                "positional encoding, which writes the position into the numbers.")
with st.container(border=True):
    c1, c2 = st.columns([2, 1])
    with c1:
        ui.position_controls()
    with c2:
        max_len = st.slider("Positions to draw", min_value=4, max_value=128, value=max(32, trace.n),
                            key="pe_max_len", help="Only for the pictures below; the sentence uses its n rows.")
ui.notices(trace)
st.info(f"X: {trace.facts['position']}.", icon=":material/straighten:")

d = trace.facts["d_embed"]
if config.positional in ("sinusoidal", "learned"):
    full = trace.view(f"pe_full:{max_len}", f"{config.positional.title()} encoding, {max_len} positions",
                      lambda: sinusoidal_encoding(max_len, d, config.pe_base) if config.positional == "sinusoidal"
                      else learned_encoding(max_len, d, config.seed), ("position", "d_pe"))
    st.subheader("The whole table: positions × dimensions")
    st.caption("Left columns change fast with position, right ones slowly: each column pair is a wave of "
               "its own frequency." if config.positional == "sinusoidal" else
               "A learned table has no pattern until it is trained.")
    ui.views.explained_heatmap(trace, full, key="hm:pe_full")
    if config.positional == "sinusoidal":
        dims = st.multiselect("Dimensions as curves", list(range(d)), default=list(range(min(d, 4))), key="pe_dims")
        if dims:
            ui.chart(pe_curves_chart(tuple(dims), full.value.tobytes(), full.shape))
    st.subheader("How similar are two positions?")
    sim = trace.view(f"pe_sim:{max_len}", "Cosine similarity of position encodings",
                     lambda: cosine_similarity(full.value), ("position", "position"), r"\cos(PE_p, PE_{p'})")
    if config.positional == "sinusoidal":
        st.caption(similarity_note(d, config.embedding, sim.value))
    else:
        st.caption("An untrained learned table is random: how similar two positions are is chance, and does "
                   "not depend on their distance.")
    ui.views.explained_heatmap(trace, sim, key="hm:pe_sim")
elif config.positional == "index":
    st.caption("Seed 000 appends the position number as one more column. It is simple, but its scale "
               "grows with n (the 30th word gets a 29 next to word values near ±1), which can swamp the "
               "word features.")
else:
    st.warning("No positional encoding: the same word gets the same Q, K and V wherever it stands. "
               + swap_hint(vocabulary_for(config)))

st.subheader("This sentence")
if "pe" in trace:
    ui.step(trace, "pe")
ui.step(trace, "x")
ui.step_nav(PAGE, config)
