import streamlit as st

import ui
from ui.classroom import handout_view as view

PAGE = "app_pages/62_handout.py"
arrived = st.session_state.get("s.page") != PAGE          # just came from another page (or a link)
config, trace = ui.page(PAGE, "Handout")
st.markdown("Any page's formulas, numbers and sentences of why, for the sentence and settings in the sidebar, as a "
            "document to print or save as PDF and hand out. It shows the page as you left it: its own controls "
            "(a head, a step, a block size) as they were set there.")
target = view.choose(arrived)
doc = view.document(target, config)
view.write_link(target)
if doc is not None:
    view.draw(doc, target)
