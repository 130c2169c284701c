"""Links to the app's pages as the browser sees them: the app's root URL (through any proxy) and a full link
to a page with its settings. The Share page builds its links here; so does a room (its join link and the
teacher's own link). In-app links in a page's text stay in the tab: raw_html.page_scripts.
"""
from __future__ import annotations

from urllib.parse import quote, urlencode

import streamlit as st

from . import nav

# Pages that draw their own controls and read none of the shared settings: a link to one carries none of them
# (only its own controls a page declares in ui/page_state.py, as the grid's).
OWN_CONTROLS = {"11_train.py", "21_alignment.py", "22_grid.py"}


url_path = nav.url_path_of      # the path Streamlit serves a page file at ('' for the Overview)


def app_base(current_page: str) -> tuple[str, bool]:
    """(the app's root URL as the browser sees it, True) — through any proxy, since the browser sends
    its own address; or (the server's configured address, False) when the client sent none."""
    url = st.context.url
    if url:
        url = url.split("?")[0].split("#")[0].removesuffix("/")
        here = url_path(current_page)
        return (url.removesuffix("/" + here) if here else url), True
    from streamlit import config
    host = config.get_option("browser.serverAddress") or "localhost"
    port = config.get_option("browser.serverPort") or config.get_option("server.port")
    base = (config.get_option("server.baseUrlPath") or "").strip("/")
    return f"http://{host}:{port}" + (f"/{base}" if base else ""), False


def share_link(base: str, page_file: str, query: dict[str, str]) -> str:
    """base + page path + the query (the caller leaves out the settings of a page in OWN_CONTROLS), each value
    percent-encoded (spaces as %20)."""
    path = url_path(page_file)
    link = base + (f"/{path}" if path else "/")
    if query:
        link += "?" + urlencode(query, quote_via=quote, safe=",")
    return link

