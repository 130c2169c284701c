"""Small shared parts of a page: its "How this page is checked" box, the claims it said, the trace's notices,
the "One word" / "All words" tabs and the word picker, the notation box."""
from __future__ import annotations

import functools

import streamlit as st

from attention_core import Trace


def checked_box(text, key: str) -> None:
    """The page's one closed box "How this page is checked": what its numbers were checked against (torch,
    another form of the same formula, published figures), in words a curious student follows. Lazy: `text`
    may be a function, run only when the box is open."""
    box = st.expander("How this page is checked", icon=":material/verified:", key=key, on_change="rerun")
    if box.open:
        with box:
            st.markdown(text() if callable(text) else text)


def claims_shown(about: str, settings) -> None:
    """Record the settings a lesson page's claims (claims.py, about=`about`) were said under this run:
    tests/test_claims.py's walk checks that no claim of `about` is on the page where it does not hold."""
    st.session_state.setdefault("s.claims", {})[about] = settings


def notices(trace: Trace) -> None:
    for n in trace.notices:
        st.info(n, icon=":material/info:")


def word_tabs(key: str, one_word, all_words) -> None:
    """"One word" and "All words" as lazy tabs (st.tabs with on_change="rerun"): only the open tab's
    function runs; on a first run .open is None and the first tab is the one shown."""
    one, every = st.tabs(["One word", "All words"], key=key, on_change="rerun")
    if one.open is not False:
        with one:
            one_word()
    if every.open:
        with every:
            all_words()


def one_word_picker(trace: Trace, label: str = "One word", key: str = "one_word", default: int = 1) -> int:
    """A word of the sentence by its row. Where the key is a page control (ui/page_state.py: it travels in the
    link) its value is in the session already: kept inside the sentence and drawn without a default.

    The value is the row, so a new sentence keeps it while its words change: the browser is then sent the row
    again (a value set this run), or it would go on showing the old sentence's word ("1: love") beside the new
    word's numbers. Drawn in a fragment, the pick is kept and written to the link at once (page_state.keep)."""
    from . import page_state
    labels = trace.token_labels()
    options = list(range(len(labels)))
    fmt_word = lambda i: f"{i}: {labels[i]}"
    state, shown = st.session_state, f"s.labels.{key}"          # the words the browser was last sent
    if key in state:
        held = state[key]
        if not isinstance(held, int) or isinstance(held, bool) or not 0 <= held < len(labels):
            state[key] = min(default, len(labels) - 1)
        elif state.get(shown, labels) != labels:
            state[key] = held                                   # the same row, its new word shown
        state[shown] = labels
        picked = int(st.selectbox(label, options=options, format_func=fmt_word, key=key))
    else:
        state[shown] = labels
        picked = int(st.selectbox(label, options=options, index=min(default, len(labels) - 1), format_func=fmt_word,
                                  key=key))
    page_state.keep(key)
    return picked


@functools.cache
def notation_text() -> str:
    """docs/notation.md, the app's one notation, read once per process."""
    from pathlib import Path
    return (Path(__file__).resolve().parents[1] / "docs" / "notation.md").read_text(encoding="utf-8")


def notation_box() -> None:
    """The notation page in a lazy expander: closed, it draws nothing."""
    box = st.expander("Notation: the symbols, how things are counted, the five tutorials",
                      icon=":material/menu_book:", key="notation.open", on_change="rerun")
    if box.open:
        with box:
            st.markdown(notation_text().split("\n", 1)[1])       # without its "# Notation" title
