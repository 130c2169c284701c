"""A fragment (run_every=0.3 s) that follows a "push": when the file push.txt holds a newer version, it calls
st.switch_page to the page named there. Two pages, each drawing a title and 40 lines (a page run of ~0.4 s).

    streamlit run app.py

With WITH_WORKAROUND=1 the server drops a fragment rerun that names another page than the session's (workaround.py).
"""
import os
import time
from pathlib import Path

import streamlit as st

if os.environ.get("WITH_WORKAROUND") == "1":
    from workaround import install
    install()

PUSH = Path(os.environ.get("PUSH_FILE", Path(__file__).with_name("push.txt")))


def read_push() -> tuple[int, str]:
    try:
        version, page = PUSH.read_text().split()
        return int(version), page
    except (OSError, ValueError):
        return 0, "a"


@st.fragment(run_every=0.3)
def follow() -> None:
    version, page = read_push()
    if version > st.session_state.get("seen", 0):
        st.session_state["seen"] = version
        st.switch_page(PAGES[page])
    st.caption(f"following (push {st.session_state.get('seen', 0)})")


def page(name: str):
    def draw() -> None:
        st.title(f"Page {name.upper()}")
        follow()
        for i in range(40):
            st.write(f"Page {name.upper()}, line {i}")
            time.sleep(0.01)
    draw.__name__ = f"page_{name}"
    return draw


PAGES = {name: st.Page(page(name), title=name.upper(), url_path=name, default=name == "a") for name in "ab"}
st.navigation(list(PAGES.values())).run()
