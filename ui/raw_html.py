"""The app's one door to raw HTML (tests/test_bad_input.py allows exactly this st.html): the chart CSS sent
with every page run, the script that scrolls a clicked cell's explanation into view (and the page's scripts: in-app
links stay in the tab, clicks on charts are watched), and the handout's tables.
Nothing a learner types reaches it as HTML: the CSS and scripts' variable parts are letters, digits, _ and -
(safe_token); a handout table's every label and number went through html.escape
(attention_core.labs.handout.table_html)."""
from __future__ import annotations

import re

import streamlit as st

from .phone import PHONE_CSS

CAPTION_COLOUR = "#62615f"       # captions' text (FIT_CSS), ≥ 4.5:1 on every background they sit on

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
           "[class*='st-key-xp-'] .katex-display{padding-bottom:4px}"
           "[class*='st-key-xp-'] .katex{font-size:1.05em}"
           # a formula wider than its box says so: a scrollbar that is always drawn (not an overlay that shows only
           # while scrolling) and its right edge fading out until it is scrolled to the end (a scroll-driven
           # animation: a formula that fits has no scroll timeline, so neither the fade)
           "[data-testid='stMarkdownContainer'] .katex-display{overflow-x:auto;overflow-y:hidden;"
           "scrollbar-width:thin;scrollbar-color:rgba(128,132,149,.75) transparent;"
           "animation:ae-more linear both;animation-timeline:scroll(self inline)}"
           "@keyframes ae-more{from,97%{mask-image:linear-gradient(to right,#000 calc(100% - 40px),transparent)}"
           "to{mask-image:none}}"
           # captions (the shapes, the notes under a chart, the sidebar's notes): Streamlit draws them at opacity 0.6
           # (3.9:1 on white, under WCAG's 4.5:1 for text); a solid muted colour instead (CAPTION_COLOUR: 6.2:1 on
           # white, 5.8:1 on the sidebar's grey; tests/test_accessibility.py computes it), code in them keeps its own
           f"[data-testid='stCaptionContainer']{{opacity:1;color:{CAPTION_COLOUR}}}"
           # a slider's min and max, shown while it has the focus: Streamlit's 70 % text (4.5:1 only just missed)
           f"[data-testid='stSliderTickBar']{{color:{CAPTION_COLOUR}}}"
           "</style>")

# Where the keyboard's focus is, on Streamlit's own chrome that shows none of its own in 1.67 (WCAG 2.4.7, 1.4.11): a
# chart's toolbar buttons (Show data, Download as PNG, Fullscreen, …: the toolbar stays at opacity 0 while one has
# the focus), a heading's "Link to heading" anchor (opacity 0 until pointed at, its ring with it), a page link (the
# previous/next links: only its hover's faint grey) and the header's main menu and toolbar buttons where Streamlit
# draws them; and, where Streamlit's own ring is its primary colour at 50 % opacity (2.2:1 on white, under 1.4.11's
# 3:1: its buttons, tabs, expanders, the skip link), the same ring instead. A solid ring in the theme's primary colour
# (FOCUS_RING: 5.7:1 on white, 5.3:1 on the sidebar's grey) with a white gap between it and the element (what
# keeps it told apart on a dark chart under a toolbar). Presenter mode changes sizes, not colours: the same ring.
FOCUS_RING = "#3b5bdb"
FOCUS_CSS = ("[data-testid='stElementToolbar']:has(:focus-visible){opacity:1 !important;transition:none !important;"
             "z-index:1000 !important}"
             "[data-testid='stElementToolbar'] button:focus-visible,"
             "[data-testid='stHeaderActionElements'] a:focus-visible,[data-testid='stPageLink-NavLink']:focus-visible,"
             "[data-testid='stMainMenu'] button:focus-visible,[data-testid='stToolbar'] button:focus-visible,"
             # Streamlit's own ring on its buttons, tabs, expanders and the skip link: the primary at 50 % (2.2:1)
             "button[data-testid^='stBaseButton']:focus-visible,[data-testid='stTab']:focus-visible,"
             "[data-testid='stExpander'] summary:focus-visible,[data-testid='stSkipToContent']:focus-visible"
             f"{{opacity:1 !important;transition:none !important;outline:2px solid {FOCUS_RING} !important;"
             "outline-offset:2px;"
             "box-shadow:0 0 0 2px #fff !important}"
             # a tab: inside its edge (the row of tabs scrolls sideways, so it clips what is drawn outside)
             "[data-testid='stTab']:focus-visible{outline-offset:-2px;box-shadow:none !important}")

PAGE_CSS = FIT_CSS.replace("</style>", PHONE_CSS + FOCUS_CSS + "</style>")


def trusted_html(body: str, script: bool = False) -> None:
    """The app's one door to raw HTML (tests/test_bad_input.py allows exactly this call): constant
    CSS, and a scroll script whose only variable parts went through anchor_class / safe_token
    (letters, digits, _ and -), never user text as typed."""
    st.html(body, unsafe_allow_javascript=script)


def fit_css() -> None:
    """Once per page run (ui.page); a fragment that reruns alone sends it again with its charts. With it, the phone's
    CSS (ui/phone.py), in the same style element."""
    trusted_html(PAGE_CSS)


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


# Where the last click on a chart or a table landed: its element container's st-key class (the chart may be drawn
# anew by the click's rerun) and how far down the chart the click was. Installed once per document.
CLICK_WATCH = ("if (!window.__xpClick) { window.__xpClick = {}; document.addEventListener('pointerdown', e => {"
               " const c = e.target.closest && e.target.closest(\"[data-testid='stVegaLiteChart'], "
               "[data-testid='stDataFrame']\"); if (!c) return;"
               " const box = c.closest('.stElementContainer'); const r = c.getBoundingClientRect();"
               " const key = box ? [...box.classList].find(k => k.startsWith('st-key-')) : null;"
               " window.__xpClick = {el: c, key: key, dy: e.clientY - r.top, t: Date.now()}; }, true); }")

# Scroll the explanation into view by the least amount, but never so far that the clicked cell leaves the screen:
# the cell stays at least 24 px below the top bar (or above the bottom edge when scrolling up).
SCROLL = ("const el = document.querySelector('.st-key-{cls}'); if (!el) return;"
          " const head = document.querySelector(\"[data-testid='stHeader']\");"
          " const top = Math.max(0, head ? head.getBoundingClientRect().bottom : 0), bottom = window.innerHeight;"
          " const r = el.getBoundingClientRect();"
          " let dy = r.bottom > bottom - 8 ? Math.min(r.bottom - bottom + 8, r.top - top - 8) : r.top < top ? r.top - top - 8 : 0;"
          " const c = window.__xpClick || {};"
          " let chart = c.el && c.el.isConnected ? c.el : (c.key ? document.querySelector('.' + c.key + \" "
          "[data-testid='stVegaLiteChart'], .\" + c.key + \" [data-testid='stDataFrame']\") : null);"
          " if (chart && Date.now() - c.t < 15000) { const cell = chart.getBoundingClientRect().top + c.dy;"
          " if (dy > 0) dy = Math.min(dy, cell - top - 24); else if (dy < 0) dy = Math.max(dy, cell - bottom + 24); }"
          " if (dy === 0) return;"
          " let s = el.parentElement; while (s && !(s.scrollHeight > s.clientHeight + 1 &&"
          " /(auto|scroll)/.test(getComputedStyle(s).overflowY))) s = s.parentElement;"
          " (s || window).scrollBy({top: dy});")


def scroll_into_view(anchor: str, nonce: str) -> None:
    """Bring the explanation into view (the least scroll that shows it: none if it is on screen), keeping the
    clicked cell on screen. Run when its element is new, i.e. on each new click (the nonce names the cell)."""
    cls, nonce = anchor_class(anchor), safe_token(nonce)
    trusted_html(f"<span hidden data-cell='{nonce}'></span><script>{CLICK_WATCH}"
                 f"for (const t of [60, 400]) setTimeout(() => {{ {SCROLL.replace('{cls}', cls)} }}, t);</script>",
                 script=True)


# A page's mention of another page inside a sentence is a Markdown link (nav.md_link: "./next_token?…"), which
# Streamlit opens in a new browser tab: a new session, the sidebar's settings from the link and nothing else (a
# trained run, the other pages' controls, a room). This listener turns a plain click on such a link into the
# navigation the browser's Back button makes (the address changes, then Streamlit is told with a popstate event
# and opens that page in this session), as the top bar's menu does. A click with a modifier key (a new tab or
# window asked for) and every link that does not start with "./" (the world outside the app) are left alone.
STAY_IN_TAB = ("if (!window.__inAppLinks) { window.__inAppLinks = true;"
               " document.addEventListener('click', e => {"
               " if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;"
               " const a = e.target.closest && e.target.closest(\"[data-testid='stMarkdownContainer'] a[href^='./']\");"
               " if (!a) return;"
               " e.preventDefault(); e.stopPropagation();"
               " history.pushState(null, '', new URL(a.getAttribute('href'), document.location.href).toString());"
               " window.dispatchEvent(new PopStateEvent('popstate', {state: null}));"
               " }, true); }")


# What a keyboard and a screen reader need that Streamlit's elements do not give, put on the page after each change
# of it or of the window (at most once a frame; installed once a document):
# - a region that scrolls (a formula wider than its place, FIT_CSS; a code block; a box of fixed height) can be
#   scrolled from the keyboard only when it can take the focus (WCAG 2.1.1; axe-core's scrollable-region-focusable):
#   such a region with nothing focusable inside gets tabindex=0 (the arrow keys then scroll it), and loses it when
#   it fits again;
# - the headings form an outline: a page's sections are h2 to h4 and a step's title h5 wherever it stands, so a
#   screen reader's list of headings would skip levels (h1 -> h5); each heading of the page gets the level its
#   place gives it (one below the nearest heading before it of a smaller tag level, as aria-level; drawn as before).
A11Y_SCRIPT = ("if (!window.__a11y) { let queued = false; const main = \"[data-testid='stMain'] \";"
               " const scrollers = () => {"
               " for (const el of document.querySelectorAll(main + '.katex-display, ' + main + 'pre, ' + main + 'div')) {"
               " const cs = getComputedStyle(el);"
               " const over = (/(auto|scroll)/.test(cs.overflowX) && el.scrollWidth > el.clientWidth + 1)"
               " || (/(auto|scroll)/.test(cs.overflowY) && el.scrollHeight > el.clientHeight + 1);"
               " const inner = el.querySelector('a[href], button, input, select, textarea, [tabindex]');"
               " if (over && !inner && !el.hasAttribute('tabindex')) { el.tabIndex = 0; el.dataset.kbScroll = '1'; }"
               " else if (!over && el.dataset.kbScroll) { el.removeAttribute('tabindex'); delete el.dataset.kbScroll; }"
               " } };"
               " const outline = () => { const open = [];"
               " for (const h of document.querySelectorAll(['h1', 'h2', 'h3', 'h4', 'h5', 'h6']"
               ".map(t => main + t).join(', '))) {"
               " const tag = +h.tagName[1];"
               " while (open.length && open[open.length - 1][0] >= tag) open.pop();"
               " const level = open.length ? open[open.length - 1][1] + 1 : 1; open.push([tag, level]);"
               " if (level !== tag) h.setAttribute('aria-level', String(level)); else h.removeAttribute('aria-level');"
               " } };"
               " const pass = () => { queued = false; scrollers(); outline(); };"
               " window.__a11y = () => { if (!queued) { queued = true; requestAnimationFrame(pass); } };"
               " new MutationObserver(window.__a11y).observe(document.body, {childList: true, subtree: true});"
               " window.addEventListener('resize', window.__a11y); window.__a11y(); }")


def page_scripts() -> None:
    """Once per page run (app.py, after the page): in-app links stay in the tab, clicks on charts are watched
    (so that the first click's explanation keeps its cell on screen too), and what a keyboard and a screen reader
    need (A11Y_SCRIPT: regions that scroll take the focus, the headings form an outline). Constant text."""
    trusted_html(f"<span hidden></span><script>{STAY_IN_TAB}{CLICK_WATCH}{A11Y_SCRIPT}</script>", script=True)


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
