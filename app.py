"""The router: page config and the navigation (one message), then the chosen page runs, then its
previous / next links.

    streamlit run app.py
"""
import streamlit as st

from ui import fragment_guard, nav, page_state, raw_html
from ui.real import state as _real_state  # noqa: F401  (declares the real-model pages' own controls, as page_state's)

fragment_guard.install()    # once per process: a fragment rerun naming a page no longer shown is dropped (issue 29)
st.set_page_config(page_title="Attention Explorer", page_icon=":material/visibility:", layout="wide")
nav.navigation().run()
# every page ends with its previous / next links along the navigation (a page that stopped early has none)
nav.step_nav(st.session_state.get("s.page", nav.HOME), st.session_state.get("s.query"))
raw_html.page_scripts()     # in-text links to other pages open them here, in this session; clicks watched
page_state.sync()           # the address bar again: a page may have moved a control into its bounds

