"""The Streamlit side. Here: the page frame every page starts with (ui.page) and the views pages use most.

ui/ mirrors the navigation (ui/nav.py SECTIONS): one folder per section holds the views of that section's
pages only (nav.FOLDERS: forward/, training/, variants/, today/, labs/, each saying in its __init__ which pages
it serves); what several sections use stays here, at the top, and in room/ (shared like the top: every page
shows a room's bar):

    nav              the sections and their pages, the one st.navigation, previous / next links
    settings         the sidebar's settings -> a Config and its Trace (settings_state, settings_panel: its parts)
    page_state       a page's own controls, open tab and clicked cell, kept and carried in the link (own: the
                     kinds of control a link can carry)
    views            the shared views: a Step's box (matrix, widgets, explain_view, raw_html: its parts)
    charts           Vega-Lite specs: heatmaps of Steps, lines, bars (colours: their colours, checked for every
                     colour vision)
    phone            the CSS that makes a phone a first-class screen, a labelled scroll region for a wide matrix
    cache            process-wide caches: one Trace per Config, neighbours, pitfalls, exports
    text             user text made safe for Markdown
    links            the app's root URL as the browser sees it, a full link to a page with its settings
    room/            a room's Streamlit side, on every page of every section (its __init__ lists its modules):
                     the teacher's bar, a student's following, the class question, the hidden answers of a stop
    presenter        presenter mode: the switch on every page and the style it puts on the page
"""
from __future__ import annotations

import streamlit as st

from . import nav, page_state
from .cache import get_trace
from .charts import fmt, grouped_bars_spec, line_spec, neighbours_spec, training_curves_spec
from .presenter import presenter_line
from .room import wake
from .room.bar import room_bar
from .settings import init_state, query_for, sentence_settings, settings_summary, sidebar_settings
from .views import fit_css, chart, heatmap, notices, one_word_picker, shape_badge, step, table, vector_row

__all__ = ["page", "chart", "query", "get_trace", "step", "heatmap", "table", "shape_badge", "notices", "one_word_picker",
           "vector_row", "line_spec", "neighbours_spec", "grouped_bars_spec", "fmt", "nav",
           "settings_summary"]


def page(page_file: str, title: str, settings: bool | str = True):
    """Every page starts here: its title and (for the forward pass) the settings in the sidebar.

    The navigation is app.py's st.navigation (one message, not one element per link).
    Returns (config, trace) with settings, (config, None) with settings="sentence" (the sidebar's sentence only),
    or (None, None) without. The settings, the page's own
    controls and its clicked cell (ui/page_state.py) are written to the URL, so the address bar is
    always a link to this view. Presenter mode is not: it is a choice made on the Share page.
    """
    st.set_page_config(page_title=f"{title} · Attention Explorer")
    init_state(settings != "sentence")         # once per session: settings, own controls, presenter from the URL
    presenter_line(nav.where(page_file))       # where you are, and the presenter switch (ui/presenter.py)
    st.title(title)
    fit_css()                                  # the chart CSS, once per run (views.fit_css_in_fragment)
    config = trace = None
    st.session_state["s.claims"] = {}          # a lesson's claims settings this run (views.claims_shown)
    st.session_state["s.sidebar_back_said"] = False     # presenter mode: how to see the sidebar, said once a run
    page_state.start(page_file)                # the page's own controls get their kept values
    if settings == "sentence":                 # a page that reads the sentence only (a real model's)
        config, trace = sentence_settings()
    elif settings:
        config, trace = sidebar_settings(page_file)
    st.session_state["s.query"] = query(config) if config is not None else {}
    if st.session_state.get("s.page") != page_file:     # a new page for this browser: no room wake until it asks
        wake.page_shown()                                # for a run naming it (ui/room/wake.py)
    if st.session_state.get("s.page", page_file) != page_file:     # the share page links back to it
        st.session_state["s.came_from"] = st.session_state["s.page"]
    st.session_state["s.page"] = page_file
    page_state.sync()
    room_bar(page_file, config, trace)         # a room's teacher or student only: else nothing, no store read
    return config, trace


def query(config) -> dict[str, str]:
    """The settings as URL parameters (only what differs from the defaults)."""
    return query_for(config)

