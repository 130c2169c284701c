"""Links to the app's pages as the browser sees them: the app's root URL (through any proxy) and a full link
to a page with its settings. The Share page builds its links here; so does a room (its join link and the
teacher's own link). And in-app links stay in the tab (stay_in_tab).
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


# A page's mention of another page inside a sentence is a Markdown link (nav.md_link: "./next_token?…"), which
# Streamlit opens in a new browser tab: a new session, the sidebar's settings from the link and nothing else (a
# trained run, the other pages' controls, a room). This listener turns a plain click on such a link into the
# navigation the browser's Back button makes (the address changes, then Streamlit is told with a popstate event
# and opens that page in this session), as the top bar's menu does. A click with a modifier key (a new tab or
# window asked for) and every link that does not start with "./" (the world outside the app) are left alone.
STAY_IN_TAB = ("<span hidden></span><script>if (!window.__inAppLinks) { window.__inAppLinks = true;"
               " document.addEventListener('click', e => {"
               " if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;"
               " const a = e.target.closest && e.target.closest(\"[data-testid='stMarkdownContainer'] a[href^='./']\");"
               " if (!a) return;"
               " e.preventDefault(); e.stopPropagation();"
               " history.pushState(null, '', new URL(a.getAttribute('href'), document.location.href).toString());"
               " window.dispatchEvent(new PopStateEvent('popstate', {state: null}));"
               " }, true); }</script>")


def stay_in_tab() -> None:
    """Once per page run (app.py, after the page): in-app Markdown links open their page in this tab and session."""
    from .raw_html import trusted_html
    trusted_html(STAY_IN_TAB, script=True)
