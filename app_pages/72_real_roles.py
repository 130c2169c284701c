import streamlit as st

import ui
from ui.real import model as real
from ui.real import roles_view as view

PAGE = "app_pages/72_real_roles.py"
config, _ = ui.page(PAGE, "Heads by what they do", settings="sentence")
st.markdown(
    "Nobody tells a head what to do: training finds it. Some jobs are found again and again, in model after model, and "
    "each can be read off a head's attention weights as one number between 0 and 1:\n"
    "- a **previous-token head** sends its weight to the token just before (the mean of A[i, i−1]);\n"
    "- an **induction head** looks for an earlier copy of the current token and attends to the token that came "
    "**after** it, so the model can continue a repeated phrase (the mean weight on those tokens);\n"
    "- an **attention sink** parks its weight on the first token when it has nothing better to look at (the mean "
    "of A[i, 0]; the masks page shows a learned sink).")
model = real.picker()
if model is None:
    st.stop()
with st.spinner("Running the model on repeated random tokens…"):
    roles = real.roles(model)
st.markdown(view.sequence_text(roles))
view.strongest_buttons(roles)
view.scores(roles)
