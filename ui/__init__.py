"""Streamlit-side helpers shared by every page: sidebar, caches, views."""
from __future__ import annotations

import streamlit as st

from . import nav
from .cache import get_trace
from .charts import fmt, grouped_bars_spec, line_spec, neighbours_spec, training_curves_spec
from .settings import attention_controls, mask_controls, position_controls, query_for, sidebar_settings
from .views import chart, heatmap, notices, one_word_picker, picture, shape_badge, step, table, vector_row

__all__ = ["page", "chart", "query", "get_trace", "step", "heatmap", "table", "shape_badge", "notices", "one_word_picker",
           "vector_row", "picture", "line_spec", "neighbours_spec", "grouped_bars_spec", "fmt", "step_nav", "nav"]


def page(page_file: str, title: str, settings: bool = True, local: tuple[str, ...] = ()):
    """Every page starts here: page config, navigation, and (for the forward pass) the settings.

    Returns (config, trace) with settings, or (None, None) without.
    """
    st.set_page_config(page_title=f"{title} · Attention Explorer", page_icon=":material/visibility:",
                       layout="wide")
    with st.sidebar:
        st.markdown("### :material/visibility: Attention Explorer")
        nav_box = st.container()
        st.divider()
    st.title(title)
    config = trace = None
    if settings:
        config, trace = sidebar_settings(local)
    query = query_for(config) if config is not None else None
    with nav_box:
        nav.draw_navigation(query)
    if config is not None:
        current = dict(st.query_params)
        if current != query:
            st.query_params.from_dict(query)
    if st.session_state.get("s.page", page_file) != page_file:     # the share page links back to it
        st.session_state["s.came_from"] = st.session_state["s.page"]
    st.session_state["s.page"] = page_file
    return config, trace


def query(config) -> dict[str, str]:
    """The settings as URL parameters (only what differs from the defaults)."""
    return query_for(config)


def step_nav(page_file: str, config=None) -> None:
    nav.step_nav(page_file, query_for(config) if config is not None else None)
