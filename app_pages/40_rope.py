import streamlit as st

import ui
from attention_core import ConfigError
from attention_core.lessons.rope import RopeSettings, rope_lesson
from ui import page_state
from ui.room import hide as room_hide
from ui.today.rope_view import (angles_intro, checked_text, controls, forward_with_rope, pair_turning, pairing_panel,
                          rotated_rows, scores_box, shift_panel)

PAGE = "app_pages/40_rope.py"


@st.fragment
def angles_and_pair(t) -> None:
    """Sections 1 and 2: a click on an angle or the pair's controls rerun this fragment, not the page."""
    st.markdown(angles_intro(t))
    ui.views.step_box(t, "angles", domain=(0.0, max(float(t["angles"].value.max()), 1e-9)), key_prefix="rope.")
    st.markdown("## 2 · One pair, turning")
    pair_turning(t)
    page_state.sync()                       # the word, pair and position in the link (a fragment's own run)


@st.fragment
def rotated_and_scores(t, s, sidebar_rope: bool) -> None:
    """Sections 3 and 4: Q beside Q^R, K beside K^R (one tab each, only the open one drawn), then the scores."""
    rotated_rows(t, s, sidebar_rope)
    scores_box(t, s)
    page_state.sync()                       # the open tab in the link (a fragment's own run)


config, trace = ui.page(PAGE, "RoPE: rotary positions")
# what a shift of the whole sentence does to a score answers a stop that hides one: those words wait for the reveal
SHIFT_WAITS = room_hide.waits("scaled_scores", "scores")
st.markdown(
    "Llama, Mistral, Qwen and Gemma add **nothing** to X for position. After the projections, **RoPE** turns "
    "each pair of columns of every query and key by an angle proportional to its position p (RoFormer, Su et "
    "al. 2021)." + ("" if SHIFT_WAITS else " The angle between a query's pair and a key's pair then changes with how "
                    "far apart the two tokens are, not with where they stand."))
try:
    forward = forward_with_rope(config, trace)
    ui.notices(forward)
    head, pairing = controls(forward.facts["config"])
    t = rope_lesson(forward, head, pairing)
except ConfigError as err:
    st.error(str(err), icon=":material/error:")
    st.stop()
s = RopeSettings(forward.facts["config"], pairing, int(page_state.value("rope.offset")), forward.n)
ui.views.claims_shown("rope", s)

angles_and_pair(t)
rotated_and_scores(t, s, config.positional == "rope")
st.markdown(
    "## 5 · Shift the whole sentence" if SHIFT_WAITS else
    "## 5 · Shift the whole sentence\n\n"
    "$$\n(R_p\\, q)\\cdot(R_{p'}\\, k) = q^\\top R_p^\\top R_{p'}\\, k = q \\cdot R_{p'-p}\\, k\n$$\n\n"
    ":small[A rotation is undone by its transpose, so $R_p^\\top R_{p'} = R_{p'-p}$. Move every token by the same "
    "offset: p and p′ change, p′ − p does not.]")
shift_panel(forward, s, head)
pairing_panel(t, s)
ui.views.checked_box(checked_text(t, forward, s), key="rope.checked")
