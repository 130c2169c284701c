import numpy as np
import streamlit as st

import ui
from attention_core import sinusoidal_encoding
from attention_core.math.embeddings import cosine_similarity
from attention_core.math.positional import learned_encoding
from ui.forward.demo_charts import pe_curves_chart
from ui.forward.page_text import position_intro, swap_hint

PAGE = "app_pages/2_positional.py"


@st.fragment
def whole_table(trace, config, max_len: int) -> None:
    """The table over max_len positions, a few of its columns as curves, and how similar two
    positions are: one fragment (a click, or picking other curves, reruns this part, not the page)."""
    from ui.forward.page_text import similarity_note
    d = trace.facts["d_embed"]
    full = trace.view(f"pe_full:{max_len}", f"{config.positional.title()} encoding, {max_len} positions",
                      lambda: sinusoidal_encoding(max_len, d, config.pe_base) if config.positional == "sinusoidal"
                      else learned_encoding(max_len, d, config.seed), ("position", "d_pe"))
    st.subheader("The whole table: positions × dimensions")
    st.caption("Left columns change fast with position, right ones slowly: each column pair is a wave of "
               "its own frequency." if config.positional == "sinusoidal" else
               "A learned table has no pattern until it is trained.")
    ui.views.explained_heatmap_box(trace, full, key="hm:pe_full")
    if config.positional == "sinusoidal":
        dims = st.multiselect("Dimensions as curves", list(range(d)), default=list(range(min(d, 4))), key="pe_dims")
        if dims:
            ui.chart(pe_curves_chart(tuple(dims), full.value.tobytes(), full.shape))
    st.subheader("How similar are two positions?")
    sim = trace.view(f"pe_sim:{max_len}", "Cosine similarity of position encodings",
                     lambda: cosine_similarity(full.value), ("position", "position"), r"\cos(PE_p, PE_{p'})")
    if config.positional == "sinusoidal":
        note = similarity_note(d, config.embedding, sim.value)
        st.caption(note + (ui.settings.sidebar_back() if "in the sidebar" in note else ""))
    else:
        st.caption("An untrained learned table is random: how similar two positions are is chance, and does "
                   "not depend on their distance.")
    ui.views.explained_heatmap_box(trace, sim, key="hm:pe_sim")

config, trace = ui.page(PAGE, "Positional encoding")

st.markdown(position_intro(config, ui.query(config)))
ui.settings_summary(config, "position")
if config.positional in ("sinusoidal", "learned"):      # the table's pictures: only for a table
    max_len = st.slider("Positions to draw", min_value=4, max_value=128, value=max(32, trace.n),
                        key="pe_max_len", help="Only for the pictures below; the sentence uses its n rows.")
ui.notices(trace)
st.info(f"Position in X: {trace.facts['position']}.", icon=":material/straighten:")

if config.positional in ("sinusoidal", "learned"):
    whole_table(trace, config, max_len)
elif config.positional == "index":
    st.caption("Tutorial 1 appends the position number as one more column. It is simple, but its scale "
               "grows with n (the 30th word gets a 29 next to word values near ±1), which can swamp the "
               "word features.")
elif config.positional == "none":
    st.warning("No positional encoding: the same word gets the same Q, K and V wherever it stands. "
               + swap_hint(config))

st.subheader("This sentence")
ui.views.step_boxes(trace, ["pe", "x"] if "pe" in trace else ["x"])       # one fragment for both boxes
