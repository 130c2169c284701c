"""bench/_common.Session opens a lazy expander as the browser does (bench/rerun.py and
tests/load/run.py rely on it to reach the temperature slider), and bench's page list is the
navigation's."""
from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from bench._common import ROOT, Server, Session, all_pages, forward_pages

LAZY_APP = textwrap.dedent('''
    import streamlit as st

    st.markdown("page drawn")
    with st.expander("Score, mask & temperature", key="grp.score", on_change="rerun") as box:
        if box.open:
            t = st.slider("Softmax temperature", min_value=0.05, max_value=5.0, value=1.0, step=0.05)
            st.markdown(f"T = {t:.2f}")
''')


@pytest.fixture(scope="module")
def lazy_server(tmp_path_factory):
    directory = tmp_path_factory.mktemp("lazy_app")
    (directory / "lazy.py").write_text(LAZY_APP)
    with Server(directory / "lazy.py") as server:
        yield server


def test_find_slider_opens_the_lazy_expander_and_moves_the_slider(lazy_server):
    with Session(lazy_server.port) as s:
        first = s.rerun()
        assert first.of_type("slider") == []                    # closed: its widgets did not run
        group = first.expander("grp.score")
        assert group is not None and group.expanded is False and group.id.endswith("grp.score")
        assert first.expander("grp.other") is None
        run, slider = s.find_slider(first, "Softmax temperature", expander="grp.score")
        assert run is not first and run.expander("grp.score").expanded is True
        assert "T = 1.00" in run.texts()
        moved = s.rerun([s.slider_state(slider, 2.0)])
        assert "T = 2.00" in moved.texts()                        # the group stayed open: states are resent
        assert moved.expander("grp.score").expanded is True
        again, same = s.find_slider(moved, "Softmax temperature", expander="grp.score")
        assert again is moved and same.id == slider.id           # open already: no extra rerun


def test_find_slider_without_the_expander_raises(lazy_server):
    with Session(lazy_server.port) as s:
        first = s.rerun()
        with pytest.raises(KeyError):
            s.find_slider(first, "Softmax temperature")          # no expander named: not opened
        with pytest.raises(KeyError):
            s.find_slider(first, "Softmax temperature", expander="grp.missing")


def test_all_pages_are_the_navigation_sections():
    tree = ast.parse((ROOT / "ui" / "nav.py").read_text())
    literal = next(n.value for n in ast.walk(tree) if isinstance(n, ast.Assign)
                   and any(isinstance(t, ast.Name) and t.id == "SECTIONS" for t in n.targets))
    files = [f for _, pages in ast.literal_eval(literal) for f, *_ in pages if (ROOT / f).exists()]
    assert [p.file for p in all_pages()] == files
    assert len(files) > len(forward_pages()) >= 8
    assert all(Path(ROOT / p.file).exists() for p in all_pages())


def test_the_app_temperature_is_reached_on_a_page_where_its_group_is_closed():
    with Server("app.py") as server, Session(server.port, page="qkv", timeout=300) as s:
        first = s.rerun()
        assert first.expander("grp.score") is not None and not first.expander("grp.score").expanded
        run, slider = s.find_slider(first, "Softmax temperature", expander="grp.score")
        moved = s.rerun([s.slider_state(slider, 2.0)])
        assert moved.status == "FINISHED_SUCCESSFULLY" and moved.exceptions == []
        assert "temperature=2" in s.query                       # the URL the page wrote holds the new value


# A room in miniature: a teacher's button "pushes" a page, a student's polling fragment follows it.
ROOM_APP = {
    "app.py": '''
import streamlit as st
st.navigation([st.Page("a.py", url_path="a", default=True), st.Page("b.py", url_path="b")]).run()
''',
    "a.py": '''
import streamlit as st

@st.cache_resource
def shared():
    return {"page": None, "joined": []}

nick = st.text_input("Nickname")
if st.button("Join"):
    shared()["joined"].append(nick)
    st.markdown(f"joined as {nick}")
if st.button("Push b"):
    shared()["page"] = "b.py"

@st.fragment(run_every=0.2)
def follow():
    st.markdown(f"waiting ({len(shared()['joined'])} joined)")
    if st.session_state.get("follow") and shared()["page"]:
        st.switch_page(shared()["page"])

st.markdown(f"picked {st.radio('Pick', ['x', 'y'], index=None)}")
st.session_state["follow"] = st.checkbox("Follow")
if st.session_state["follow"]:
    follow()
''',
    "b.py": '''
import streamlit as st
st.markdown("page b")
''',
}


@pytest.fixture(scope="module")
def room_server(tmp_path_factory):
    directory = tmp_path_factory.mktemp("room_app")
    for name, text in ROOM_APP.items():
        (directory / name).write_text(textwrap.dedent(text))
    with Server(directory / "app.py") as server:
        yield server


def test_text_box_button_fragment_timer_and_a_page_switch_as_the_browser_does(room_server):
    from streamlit.proto.WidgetStates_pb2 import WidgetState

    with Session(room_server.port, page="a") as teacher, Session(room_server.port, page="a") as student:
        first = student.rerun()
        assert student.auto_reruns == {}                          # the fragment is not drawn yet
        run = student.rerun([student.text_state(first.widget("text_input", "Nickname"), "<b>Ben</b>")])
        run = student.click(run.widget("button", "Join"))
        assert "joined as <b>Ben</b>" in run.texts()
        again = student.rerun()                                   # the click was sent once: no second join
        assert "joined as <b>Ben</b>" not in again.texts()
        picked = student.rerun([student.option_state(again.widget("radio", "Pick"), 1)])
        assert "picked y" in picked.texts()                       # a choice is sent as the option shown
        checkbox = again.widget("checkbox", "Follow")
        run = student.rerun([WidgetState(id=checkbox.id, bool_value=True)])
        assert [round(v, 3) for v in student.auto_reruns.values()] == [0.2]   # the fragment asked for its timer
        tick = student.auto_rerun()
        assert tick.status == "FINISHED_FRAGMENT_RUN_SUCCESSFULLY" and tick.texts() == ["waiting (1 joined)"]
        assert tick.pages_run == [] and student.page == "a"
        t_run = teacher.rerun()
        teacher.click(t_run.widget("button", "Push b"))
        moved = student.auto_rerun()                               # the next tick: the fragment switches page
        assert moved.pages_run == ["b"] and student.page == "b" and "page b" in moved.texts()
        assert moved.status == "FINISHED_SUCCESSFULLY" and moved.runs >= 2
        assert student.auto_reruns == {}                           # page b has no timer: the browser stops it


def test_a_test_server_takes_another_port_when_its_own_was_bound_before_it_started(tmp_path):
    """Between free_port() and the server's bind, another process (an xdist worker's server, a
    browser's outgoing connection) may take the port: CI saw "Port 54311 is not available". The
    server then starts on another port instead of failing the test."""
    import socket

    from bench._common import _ephemeral_range, free_port, write_trivial_app
    ports = {free_port() for _ in range(20)}
    assert len(ports) == 20 and max(ports) < _ephemeral_range()[0]   # never where outgoing connections go
    server = Server(write_trivial_app(tmp_path))
    taken = server.port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as squatter:
        squatter.bind(("127.0.0.1", taken))
        squatter.listen()
        try:
            server.start()
            server.wait_healthy(60)
            assert server.port != taken and server._restarts == 1
        finally:
            server.stop()
    given = Server(write_trivial_app(tmp_path), port=taken)   # a port the caller chose stays its own
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as squatter:
        squatter.bind(("127.0.0.1", taken))
        squatter.listen()
        try:
            given.start()
            with pytest.raises(RuntimeError, match="not available"):
                given.wait_healthy(60)
        finally:
            given.stop()
