import streamlit as st

import ui
from ui.transformer import induction_run as runs
from ui.transformer import induction_steps as step_view
from ui.transformer import induction_view as view
from attention_core.training.lm.model import N_CTX
from attention_core.training.lm.task import BATCH
from attention_core.training.lm.train import LR

PAGE = "app_pages/52_induction_heads.py"
ui.page(PAGE, "Induction heads", settings=False)
for notice in st.session_state.get("s.url_notices") or []:    # a link's control out of range: said, as the
    st.warning(notice, icon=":material/link_off:")              # settings pages say it (ui.page skips it here)
st.markdown(view.INTRO)
runs.interrupted_notice()

with st.container(border=True):
    c1, c2, c3 = st.columns([1, 1, 2.2], vertical_alignment="bottom")
    seed = c1.number_input("Seed", min_value=0, max_value=9999, step=1, key="induction.seed",
                           help="Fixes the random start and the batches. Seed 0 is the shipped run's start.")
    steps = c2.number_input("Training steps", min_value=50, max_value=10000, step=250, key="induction.steps",
                            help=f"AdamW, learning rate {LR:g}, batches of {BATCH} sequences of {N_CTX} tokens.")
    go = c3.button("Train from a seeded random start", type="primary", icon=":material/play_arrow:",
                   key="induction.train", help="Trains with torch here, now; the run shown stays until it finishes.")
    st.caption(runs.timing_text() + " Leaving the page or changing a control stops a run (the previous weights stay).")
if go:
    runs.train_live(int(seed), int(steps))
    st.rerun()                                  # the page again, with the new run (or the message and the old one)

try:
    run, an = runs.current()
except (OSError, KeyError, ValueError) as err:
    st.error(f"The shipped run could not be read: {err}", icon=":material/error:")
    st.stop()
if run["source"] == "session" and st.button("Back to the shipped run", icon=":material/undo:", key="induction.shipped",
                                           help="Your run is forgotten; the shipped run's weights come back."):
    runs.forget()
    st.rerun()
with st.expander("Why the repeat starts at a random offset", icon=":material/shuffle:"):
    st.markdown(view.why_random_text(run))
st.markdown(view.run_text(run, an))
view.curves(run, an, step_view.snap_step(run))
row = step_view.step_slider(run, an)
with st.expander("Every head's scores, at step 0, at the step shown and at the end", icon=":material/table:"):
    view.scores_table(run, an, row)

tabs = st.tabs(view.TABS, key="induction.tab", on_change="rerun")
with tabs[0]:
    if tabs[0].open is not False:
        view.patterns_panel(run, an, row)
with tabs[1]:
    if tabs[1].open:
        i = st.slider("Query position i (in the second copy)", 20, 39, key="induction.i")
        view.composition_panel(run, an, int(i), row)
with tabs[2]:
    if tabs[2].open:
        chosen = st.columns([1, 3])[0].selectbox("Head", view.INDUCTION_ABLATE, key="induction.ablate",
                              format_func=lambda v: "all heads" if v == "all" else
                              view.head_label(*map(int, v.split(","))))
        view.ablation_panel(an, chosen)
with tabs[3]:
    if tabs[3].open:
        sentence = st.text_input("Your sentence", key="induction.sentence", max_chars=view.MAX_CHARS,
                                 help="Each distinct word becomes one of the model's 31 tokens; punctuation is set "
                                      "aside. Press Enter to run the model on it.")
        view.sentence_panel(run, an, sentence)
