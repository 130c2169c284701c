"""The router: page config and the navigation (one message), then the chosen page runs.

    streamlit run app.py
"""
import streamlit as st

from ui import nav

st.set_page_config(page_title="Attention Explorer", page_icon=":material/visibility:", layout="wide")
nav.navigation().run()
