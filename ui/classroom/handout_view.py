"""The Handout page's views: which page, then that page's formulas, numbers and sentences of why as a document a
teacher prints (or saves as PDF) and hands out. The document is attention_core.labs.handout's; here it is drawn,
with the print CSS that leaves the app's chrome off the paper."""
from __future__ import annotations

import functools
from urllib.parse import quote, urlencode

import streamlit as st

from attention_core import Config, ConfigError
from attention_core.labs.handout import PAGES, Handout, Section, make_handout, table_html, to_html

from .. import nav, page_state
from ..room import hide as room_hide
from ..cache import get_trace
from ..phone import scroll_region
from ..raw_html import trusted_html

KEY = "handout.of"                       # the page control (ui/page_state.py) and the link's parameter
HANDOUT = "app_pages/62_handout.py"

# On paper: no top navigation, sidebar, toolbar, buttons or pickers; a section never split across two pages;
# black text on white (the shading is kept: print-color-adjust). Streamlit's main area is a scroll container of
# the window's height: on paper it must grow with its content, or only the first page prints.
PRINT_CSS = """<style>
@media print {
  @page { margin: 14mm 12mm; }
  html, body, .stApp, [data-testid="stAppViewContainer"], [data-testid="stMain"], [data-testid="stMainBlockContainer"],
  section.main { position: static !important; overflow: visible !important; height: auto !important;
                 background: #fff !important; color: #000 !important; }
  [data-testid="stHeader"], header, [data-testid="stToolbar"], [data-testid="stDecoration"],
  [data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"], [data-testid="stStatusWidget"],
  [data-testid="stTopNav"], nav, footer, .stButton, .stDownloadButton, [data-testid="stPageLink"],
  [data-testid="stSelectbox"], [data-testid="stCaptionContainer"]:has(span[role="img"]),
  [data-testid="stHeading"]:has(h1), [class*="st-key-handout-tools"], hr { display: none !important; }
  [data-testid="stMainBlockContainer"] { padding: 0 !important; max-width: 100% !important; }
  [class*="st-key-handout-sec-"] { break-inside: avoid; page-break-inside: avoid; }
  * { color: #000 !important; -webkit-print-color-adjust: exact; print-color-adjust: exact; }
  a { text-decoration: none !important; }
  table { font-size: 10pt !important; }
}
[class*="st-key-handout-sec-"] table { border-collapse: collapse; font: 0.8rem 'Source Code Pro', Menlo, monospace; }
[class*="st-key-handout-sec-"] table td, [class*="st-key-handout-sec-"] table th { border: 1px solid #bbb;
  padding: 2px 6px !important; text-align: right; color: #000; }
[class*="st-key-handout-sec-"] table th { background: #eee; font-weight: normal; }
[class*="st-key-handout-sec-"] p.small { color: #555; font-size: 0.85rem; margin-top: 0.3rem; }
</style>"""

# A section's table as HTML, made once per table (a table is a frozen value): a pandas Styler made and marshalled
# each run cost 8.5 ms a section, 91 ms a rerun of a 9-section handout.
_table = functools.lru_cache(maxsize=512)(table_html)

# The print dialog: a constant script, sent only in the run where the button was pressed.
PRINT_SCRIPT = "<script>setTimeout(function () { window.print(); }, 300);</script>"


def targets() -> list[tuple[str, str, str]]:
    """(file, label, URL path) of every page with a handout, in the navigation's order (the Classroom's pages have
    none: they show no Steps)."""
    return [e[:2] + (e[3],) for _, pages in nav.SECTIONS for e in nav.existing(pages) if e[3] in PAGES]


def file_of(path: str) -> str:
    return next(f for f, _, p in targets() if p == path)


def choose(arrived: bool) -> str:
    """The page whose handout is drawn (its file): on arriving, the page the user came from, unless the page
    opens a view put into the session (a teacher's push: its own "handout.of" stands); then the select box's
    choice, which the link carries (handout.of=qkv)."""
    paths = [p for _, _, p in targets()]
    came = st.session_state.get("s.came_from")
    pushed = page_state.just_put(HANDOUT)
    if arrived and came and came != HANDOUT and not pushed:
        try:
            st.session_state[KEY] = nav.url_path_of(came) if nav.url_path_of(came) in paths else st.session_state[KEY]
        except KeyError:
            pass
    if st.session_state.get(KEY) not in paths:
        st.session_state[KEY] = paths[0]
    labels = {p: label for _, label, p in targets()}
    with st.container(key="handout-tools"):
        st.markdown("Any page's formulas, numbers and sentences of why, for the sentence and settings in the sidebar, "
                    "as a document to print or save as PDF and hand out. It shows the page as you left it: its own "
                    "controls (a head, a step, a block size) as they were set there. A few pages' controls (the PyTorch "
                    "layer's, the alignment's, a training page's label) are not kept across pages: their "
                    "handouts take the defaults, and a note under the settings says so.")
        st.selectbox("The handout of", paths, key=KEY,
                     format_func=lambda p: f"{nav.section_of(file_of(p))} › {labels[p]}",
                     help="Any page's formulas, numbers and sentences of why, for the sentence and settings in the "
                          "sidebar and the page's own controls as you left them.")
    return file_of(st.session_state[KEY])


def page_controls(page_file: str) -> dict:
    """The page's own controls as the learner left them (kept across pages by ui/page_state.py), else defaults."""
    return {c.key: page_state.value(c.key) for c in page_state.controls_of(page_file)}


@functools.lru_cache(maxsize=64)
def _handout(path: str, config: Config, controls: tuple) -> Handout:
    return make_handout(path, config, dict(controls), forward=get_trace(config))


def document(page_file: str, config: Config) -> Handout | None:
    """The handout (once per page, settings and controls per process), or None with the message said."""
    controls = page_controls(page_file)
    try:
        return _handout(nav.url_path_of(page_file), config, tuple(sorted(controls.items())))
    except (ConfigError, ValueError) as err:
        st.error(f"This page's handout cannot be made for these settings: {err}", icon=":material/error:")
        return None


def live_query(page_file: str) -> dict[str, str]:
    """The settings and the page's own controls that differ from their defaults: the live view's link."""
    own = {c.key: c.text(v) for c in page_state.controls_of(page_file)
           for v in [page_state.value(c.key)] if v != c.default}
    return {**st.session_state.get("s.query", {}), **own}


def write_link(page_file: str) -> None:
    """The address bar: the settings, handout.of and the page's own controls, so the link opens this handout."""
    query = {**live_query(page_file), **page_state.params(HANDOUT)}
    if dict(st.query_params) != query:
        st.query_params.from_dict(query)


def live_links(doc: Handout, page_file: str) -> tuple[str, str]:
    """The live view's link: relative (works behind any proxy), and absolute as the browser sees the app ("" when
    the browser sent no address), to be read off the paper."""
    query = live_query(page_file)
    url = "./" + doc.page + ("?" + urlencode(query, quote_via=quote, safe=",") if query else "")
    base = (st.context.url or "").split("?")[0].split("#")[0].removesuffix("/").removesuffix("/handout")
    return url, (base + url[1:] if base else "")


def header(doc: Handout, page_file: str) -> None:
    """The page, the sentence, the settings that differ from the defaults, the page's controls, a link to it."""
    url, absolute = live_links(doc, page_file)
    st.header(f"{nav.section_of(page_file)} › {doc.title}", anchor=False)
    st.text(f"Sentence: {doc.sentence}")                         # typed by a student: shown as text
    if doc.tokens != doc.sentence:
        st.text(f"Tokens: {' · '.join(doc.tokens.split())}")
    settings = "; ".join(doc.settings) if doc.settings else "the defaults"
    st.markdown(f"**Settings:** {md(settings)}" + (f"  \n**On the page:** {md('; '.join(doc.controls))}"
                                                      if doc.controls else ""))
    for note in doc.notes:
        st.caption(md(note))
    st.markdown(f"[Open the live view]({url})" + (f" :small[`{absolute.replace('`', '')}`]" if absolute else ""))


def md(text: str) -> str:
    from ..text import md_escape
    return md_escape(text)


def section(s: Section, i: int) -> None:
    """A section: title, formula, shape, why, the numbers shaded (an HTML table: printable, black on a tint)."""
    with st.container(key=f"handout-sec-{i}", border=True):
        # one Markdown element for the words and the formula (each element costs a rerun ~0.3 ms; a handout has
        # dozens): the title, the formula as display math, the shape, the core's sentence of why (its math in $…$)
        st.markdown("\n\n".join(filter(None, (
            f"#### {i + 1} · {s.title}", f"$$\n{s.formula}\n$$" if s.formula else "",
            ":small[:gray[Shape: " + s.shape + (f" · {s.head_note}" if s.head_note else "") + "]]", s.why))))
        if room_hide.any_hidden(s.key):            # a lesson stop's numbers, on a student's screen before the reveal
            st.caption(HIDDEN_TABLE)
        else:
            # every label html-escaped; a tint per cell, the cut's note; sideways in a named region on a phone
            trusted_html(scroll_region(_table(s.table), f"{s.title}: its numbers as a table"))


def print_tools(doc: Handout, page_file: str) -> None:
    """The print button (the browser's dialog: a printer, or Save as PDF) and the HTML download."""
    link = live_links(doc, page_file)[1]                      # read now: the file is made later, on the click
    with st.container(key="handout-tools-print"):
        row = st.container(horizontal=True)
        if row.button("Print or save as PDF", icon=":material/print:", type="primary", key="handout.print"):
            trusted_html(PRINT_SCRIPT, script=True)
        row.download_button("Download as HTML", lambda: to_html(doc, link),
                            file_name=f"handout-{doc.page or 'overview'}.html",
                            mime="text/html", icon=":material/download:", key="handout.html",
                            help="One file, no internet needed: the numbers and sentences as here; the formulas as "
                                 "LaTeX source. Print from this page to have them typeset.")
        st.caption("Or press Ctrl+P (⌘P on a Mac): the navigation, sidebar and buttons stay off the paper.")


HIDDEN_TABLE = (":material/visibility_off: This step's numbers are hidden until your teacher reveals them: predict "
                "them first.")


def draw(doc: Handout, page_file: str) -> None:
    trusted_html(PRINT_CSS)
    if any(room_hide.any_hidden(s.key) for s in doc.sections):    # the file and the print would hold them
        st.caption(":material/visibility_off: Printing and the download come back when your teacher reveals the "
                   "numbers of the lesson's stop.")
    else:
        print_tools(doc, page_file)
    header(doc, page_file)
    for i, s in enumerate(doc.sections):
        section(s, i)
