"""The Share page's box: a full link to a page with the learner's settings, ready to paste (ui/links.py builds it)."""
from __future__ import annotations

from pathlib import Path

import streamlit as st

from .. import nav, page_state
from ..links import OWN_CONTROLS, app_base, share_link, url_path

__all__ = ["share_box", "app_base", "share_link", "url_path", "OWN_CONTROLS"]


def share_box(current_page: str, query: dict[str, str]) -> str:
    """A page chooser (the page the learner came from first), the link with a copy button, an open button.

    The link carries the settings, the chosen page's own controls and clicked cell (ui/page_state.py),
    and presenter mode only if asked for here (a teacher's projector link; a student's link opens without)."""
    pages = [entry[0] for _, section in nav.SECTIONS for entry in nav.existing(section)]
    came_from = st.session_state.get("s.came_from")
    start = came_from if came_from in pages else nav.HOME
    page_file = st.selectbox("Page to share", pages, index=pages.index(start), format_func=nav.label_of,
                             key="export_share_page", help="The page you came from, unless you pick another.")
    presenter = st.toggle("Open in presenter mode (for a projector)", key="export_share_presenter",
                          help="Adds presenter=1: the page opens with its Presenter mode switch on (no sidebar, larger "
                               "text, formulas and heatmaps; the switch over the title turns it off). Leave it off "
                               "for links meant for students.")
    base, from_browser = app_base(current_page)
    alone = Path(page_file).name in OWN_CONTROLS          # reads none of the shared settings: none in its link
    settings, own = ({} if alone else query), page_state.params(page_file)
    link = share_link(base, page_file, {**settings, **own, **({"presenter": "1"} if presenter else {})})
    st.code(link, language=None, wrap_lines=True)
    st.link_button("Open this link in a new tab", link, icon=":material/open_in_new:")
    notes = ["Copy it with the button at the box's right (it shows when you point at the box): whoever opens it sees that page with the **same "
             "numbers**." if not alone else
             "This page draws its own controls and reads none of the shared settings" +
             (": the link opens it as it starts." if not own else ".")]
    if not settings and not own:
        notes.append("Your settings are the defaults, so the link needs " + ("only presenter=1." if presenter else
                                                                             "no parameters."))
    carried = [what for what, on in (("its own controls as you left them", set(own) - {page_state.CELL}),
                                     ("the cell you clicked", page_state.CELL in own)) if on]
    if carried:
        notes.append(f"On {nav.label_of(page_file)} it also keeps " + " and ".join(carried) + ".")
    if not from_browser:
        notes.append(f"Your browser did not say its address, so the link uses this server's configured one "
                     f"({base}); check it before you share.")
    st.caption(" ".join(notes))
    return link
