import streamlit as st

import ui
from ui.classroom import handout_view as view

PAGE = "app_pages/62_handout.py"
arrived = st.session_state.get("s.page") != PAGE          # just came from another page (or a link)
config, trace = ui.page(PAGE, "Handout")
target = view.choose(arrived)
doc = view.document(target, config)
view.write_link(target)
if doc is not None:
    view.draw(doc, target)
