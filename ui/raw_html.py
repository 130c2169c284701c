"""The app's one door to raw HTML (tests/test_bad_input.py allows exactly this st.html): the chart CSS sent
with every page run, the script that scrolls a clicked cell's explanation into view, and the handout's tables.
Nothing a learner types reaches it as HTML: the CSS and scripts' variable parts are letters, digits, _ and -
(safe_token); a handout table's every label and number went through html.escape
(attention_core.labs.handout.table_html)."""
from __future__ import annotations

import re

import streamlit as st

# Charts never wider than their card: an SVG chart wider than its container is scaled down with
# its aspect ratio kept (Vega's SVG carries a viewBox; clicks still hit their cell, as Vega's SVG
# renderer finds the item from the event's target). Sent with every chart: a style-only st.html
# goes to Streamlit's event container and takes no room on the page.
# The explanation beside a chart (the row's second child, drawn only once a cell is clicked) takes the
# rest of the row, and wraps under the chart below 360 px.
FIT_CSS = ("<style>.stElementContainer:has([data-testid='stVegaLiteChart']){max-width:100%}"
           "[data-testid='stVegaLiteChart']{max-width:100%}"
           "[data-testid='stVegaLiteChart'] svg.marks{max-width:100%;height:auto}"
           "[class*='st-key-side-']>*:first-child{max-width:100%}"
           "[class*='st-key-side-']>*:last-child:not(:first-child){flex:1 1 360px !important;width:auto !important;"
           "min-width:0}"
           # an explanation's long line of terms: a little smaller, and scrolls sideways rather than being cut
           "[class*='st-key-xp-'] .katex-display{overflow-x:auto;overflow-y:hidden;padding-bottom:4px}"
           "[class*='st-key-xp-'] .katex{font-size:1.05em}</style>")


def trusted_html(body: str, script: bool = False) -> None:
    """The app's one door to raw HTML (tests/test_bad_input.py allows exactly this call): constant
    CSS, and a scroll script whose only variable parts went through anchor_class / safe_token
    (letters, digits, _ and -), never user text as typed."""
    st.html(body, unsafe_allow_javascript=script)


def fit_css() -> None:
    """Once per page run (ui.page); a fragment that reruns alone sends it again with its charts."""
    trusted_html(FIT_CSS)


def fit_css_in_fragment() -> None:
    """The chart CSS again only when a fragment reruns alone (a full run sent it from ui.page):
    one element per page instead of one per chart."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx
    ctx = get_script_run_ctx()
    if ctx is not None and ctx.fragment_ids_this_run:
        fit_css()


def safe_token(text: str) -> str:
    """Only letters, digits, _ and - (anything else becomes -): safe in a CSS class and in HTML."""
    return re.sub(r"[^A-Za-z0-9_-]", "-", str(text))


def anchor_class(anchor: str) -> str:
    """The CSS class part of an explanation's container key (Streamlit adds st-key-)."""
    return "xp-" + safe_token(anchor)


def scroll_into_view(anchor: str, nonce: str) -> None:
    """Scroll the explanation into view (the least scroll that shows it: none if it is on screen).
    Run when its element is new, i.e. on each new click (the nonce names the cell)."""
    cls, nonce = anchor_class(anchor), safe_token(nonce)
    trusted_html(f"<span hidden data-cell='{nonce}'></span><script>"
                 f"for (const t of [60, 400]) setTimeout(() => {{ const el = document.querySelector('.st-key-{cls}');"
                 f" if (el) el.scrollIntoView({{block: 'nearest', inline: 'nearest'}}); }}, t);</script>", script=True)


COOKIE_VALUE = re.compile(r"[A-Za-z0-9_.-]{0,200}")
COOKIE_PATH = re.compile(r"/[A-Za-z0-9_./-]{0,200}")


def set_cookie(name: str, value: str, path: str, max_age: int) -> None:
    """Write (value) or delete ("") one cookie of this browser for the app's path, SameSite=Strict (never sent by
    another site's link or form), Secure over https. Its name, value and path are only letters, digits, '.', '_',
    '-' (and '/' in the path): anything else is refused, never written. The element takes no room on the page."""
    if not (COOKIE_VALUE.fullmatch(name) and COOKIE_VALUE.fullmatch(value) and COOKIE_PATH.fullmatch(path)):
        raise ValueError("a cookie is letters, digits, '.', '_' and '-'")
    age = int(max_age) if value else 0
    trusted_html(f"<span hidden data-room-cookie='{len(value)}'></span>"
                 "<style>.stElementContainer:has([data-room-cookie]){display:none}</style>"
                 f"<script>document.cookie = '{name}={value}; path={path}; max-age={age}; SameSite=Strict'"
                 " + (location.protocol === 'https:' ? '; Secure' : '');</script>", script=True)
