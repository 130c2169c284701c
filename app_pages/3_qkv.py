import streamlit as st

import ui
from ui.text import md_escape

PAGE = "app_pages/3_qkv.py"


@st.fragment
def one_word(trace, bias: bool) -> None:
    """One token's three projections; picking another word reruns only this part."""
    i = ui.one_word_picker(trace, "Pick a word")
    x_i = trace["x"].value[i]
    b = (r" + b_Q", r" + b_K", r" + b_V") if bias else ("", "", "")
    st.latex(rf"q_i = x_i W_Q{b[0]},\quad k_i = x_i W_K{b[1]},\quad v_i = x_i W_V{b[2]}")
    st.caption(f"x_{i} (the row of **{md_escape(trace.tokens[i])}**), shape d_model={x_i.size}:")
    ui.vector_row(x_i)
    shapes = ", ".join(f"{name}_{i}: {trace[name].axes[1]}={trace[name].value[i].size}" for name in ("q", "k", "v"))
    st.caption(f"q_{i}, k_{i} and v_{i}, one row each ({shapes}):")
    ui.views.vector_rows({f"{name}_{i}": trace[name].value[i] for name in ("q", "k", "v")})
    if "q_rot" in trace:                                     # RoPE: the same rows turned by position i
        st.caption(f"RoPE turns q_{i} and k_{i} by their position p = {i} (pair i of columns by p·θ_i; head 0 shown "
                   "with several heads): q^R and k^R are what the scores read.")
        rot = {f"{name}^R_{i}": trace[f"{name}_rot"].value[(0, i) if trace[f"{name}_rot"].value.ndim == 3 else i]
               for name in ("q", "k")}
        ui.views.vector_rows(rot)


@st.fragment
def all_words(trace, bias: bool) -> None:
    """X, then each weight matrix beside its product; one fragment for the seven boxes (a click or
    a table toggle reruns them, not the page; a page run pays for one fragment, not seven)."""
    b = (r" + b_Q", r" + b_K", r" + b_V") if bias else ("", "", "")
    st.latex(rf"Q = X W_Q{b[0]},\quad K = X W_K{b[1]},\quad V = X W_V{b[2]}")
    ui.views.step_box(trace, "x")
    for name in ("q", "k", "v"):
        c1, c2 = st.columns(2)
        with c1:
            ui.views.step_box(trace, f"w_{name}")
        with c2:
            ui.views.step_box(trace, name)
    if "q_rot" in trace:                                     # RoPE: Q and K before (above) and after rotation
        st.markdown("**RoPE: Q and K rotated by position.** Nothing was added to X; instead each row of Q and K "
                    "is turned by its position, so the scores Q^R K^Rᵀ depend on how far apart two tokens are.")
        c1, c2 = st.columns(2)
        for col, name in ((c1, "q_rot"), (c2, "k_rot")):
            with col:
                ui.views.step_box(trace, name)


config, trace = ui.page(PAGE, "Queries, keys and values")
ui.notices(trace)
st.markdown(
    "Each token's row of X is multiplied by three learned matrices. The **query** says what the token is "
    "looking for, the **key** what it can be found by, the **value** what it hands on once found. "
    "The weights' shapes depend only on d_model, d_k and d_v, never on the sentence length: "
    "that is how one attention layer handles sentences of any length.")

ui.views.word_tabs("qkv.tab", lambda: one_word(trace, config.bias), lambda: all_words(trace, config.bias))   # only the open tab runs
