"""What the teacher pushes is what students get, through AppTest (a teacher and a student, sessions of one process
sharing its MemoryStore): the teacher's session-trained run of the small model goes with a push of the induction
page and the student's page shows it with the same numbers; what a push cannot carry is said to the teacher before
the push; a pushed Handout arrives with the teacher's "The handout of" and the student still follows."""
from __future__ import annotations

import pytest

import classroom
from attention_core.training.lm import run_blob
from tests.apptest_util import charts, messages, no_exception
from tests.test_room_page import button, page_of, room_with_student, stay, student_joins, teacher_opens, text_of

INDUCTION = "app_pages/52_induction_heads.py"
HANDOUT = "app_pages/62_handout.py"
QKV, GRID, SOFTMAX = "app_pages/3_qkv.py", "app_pages/22_grid.py", "app_pages/5_softmax.py"


@pytest.fixture(autouse=True)
def _memory_store(monkeypatch):
    monkeypatch.delenv("ATTENTION_EXPLORER_REDIS_URL", raising=False)


KINDS = ("selectbox", "slider", "number_input", "toggle", "checkbox", "radio", "text_input", "select_slider",
         "multiselect", "text_area", "date_input", "time_input", "color_picker", "button_group")


def controls_a_push_leaves(at, page: str) -> list[str]:
    """The walk (tests/test_app_pages.py runs it on every page at its defaults): each control the page drew that a
    view does not carry (not a setting, not a declared control of the page, not a step's table switch, not a
    heatmap's cell pickers: the view carries their cell) and that
    the room bar's caption does not name (ui/room/travel.py STAYS)."""
    from ui import page_state
    from ui.room.travel import STAYS
    declared = {c.key for c in page_state.controls_of(page)}
    left = []
    for kind in KINDS:
        for element in at.get(kind):
            key = getattr(element, "key", None) or ""
            if key in declared or key.startswith(("w.", "room", "pick:")) or "tbl:" in key:   # pick: a cell
                continue
            left.append(f"{kind} “{getattr(element, 'label', '')}” ({key or 'no key'})")
    return [] if page in STAYS else left


def store():
    return classroom.store_from_env()


def follow(at):
    stay(at.run())                               # the fragment's read: the view put in, then its page's run
    at.run()                                     # the next tick: still following (nothing differs from the view)
    no_exception(at)
    return at


def run_paragraph(at) -> str:
    return next(m.value for m in at.markdown if m.value.startswith("**") and " run" in m.value.split(":")[0])


def test_the_teachers_trained_run_goes_with_the_push_and_shows_the_same_numbers():
    pytest.importorskip("torch")
    teacher, code, secret, ana = room_with_student()
    teacher.switch_page(INDUCTION).run(timeout=120)
    assert "Not sent with this view" not in text_of(teacher)        # the induction page: everything travels
    teacher.number_input(key="induction.steps").set_value(50).run()
    teacher.number_input(key="induction.seed").set_value(3).run()
    teacher.button(key="induction.train").click().run(timeout=600)
    no_exception(teacher)
    own = teacher.session_state["induction.trained"]
    name = own["digest"]
    assert teacher.session_state["induction.run"] == name
    button(teacher, "Show this to the class").click().run()
    no_exception(teacher)
    view = classroom.state(store(), code).view
    assert view["query"]["induction.run"] == name and view["query"]["induction.steps"] == "50"
    blob = classroom.room.get_run(store(), code, name)
    assert run_blob.digest(blob) == name and 100_000 < len(blob) < 200_000
    follow(ana)
    assert page_of(ana) == INDUCTION and ana.session_state["room.following"] is True
    mine, theirs = run_paragraph(teacher), run_paragraph(ana)
    assert mine.startswith("**Your run** (this session): seed 3, 50 steps in ")
    assert theirs.startswith("**Your teacher's run**, trained in their session and shown to the class: seed 3, "
                             "50 steps in ")
    assert mine.split(": seed", 1)[1] == theirs.split(": seed", 1)[1]   # every number of the paragraph
    assert charts(ana) == charts(teacher)                               # the curves and patterns, point for point
    table = lambda at: at.dataframe[0].value.to_dict("records")
    assert table(ana) == table(teacher)                                 # the heads' scores at step 0 and now
    assert "Back to the shipped run" not in [b.label for b in ana.button]
    # the student changes the seed (to train their own): a step out, as with any control of the view
    ana.number_input(key="induction.seed").set_value(4).run()
    assert ana.session_state["room.following"] is False


def test_a_view_that_names_a_run_the_room_does_not_keep_shows_the_shipped_run_and_says_so():
    _, code, secret, ana = room_with_student()
    classroom.push(store(), code, secret, {"page": INDUCTION, "query": {"induction.run": "ab" * 16}})
    follow(ana)
    no_exception(ana)
    assert "trained in another session, and the room does not have it now" in messages(ana)
    assert run_paragraph(ana).startswith("**The shipped run**")
    assert ana.session_state["room.following"] is True                # still following the teacher


def test_a_link_that_names_a_run_says_a_link_cannot_carry_one():
    from tests.apptest_util import open_page
    at = open_page(INDUCTION, query={"induction.run": "cd" * 16}, timeout=120)
    no_exception(at)
    assert "trained in another session, and a link cannot carry a run" in messages(at)
    assert run_paragraph(at).startswith("**The shipped run**")
    at = open_page(INDUCTION, query={"induction.run": "<b>x</b>"}, timeout=120)
    assert "Link setting “induction.run” (the run shown) must be a run's name: 32 hex digits, not '<b>x</b>'; " \
           "using the default (the shipped run)." in messages(at)


def test_what_a_push_cannot_carry_is_said_before_the_push():
    teacher, code = teacher_opens()
    teacher.switch_page(GRID).run()
    no_exception(teacher)
    said = [c.value.replace("\\", "") for c in teacher.caption if "Not sent with this view" in c.value]
    assert said == [":material/info: Not sent with this view: the queries asked together in (b) and (c) (students "
                    "see its default)."]
    assert classroom.state(store(), code).version == 0                  # said before anything was pushed
    teacher.switch_page(SOFTMAX).run()
    assert not [c.value for c in teacher.caption if "Not sent with this view" in c.value]
    teacher.toggle(key="tbl:weights").set_value(True).run()
    said = [c.value.replace("\\", "") for c in teacher.caption if "Not sent with this view" in c.value]
    assert said and "the step you turned into a table (students see the heatmaps)" in said[0]


def test_a_pushed_handout_arrives_as_pushed_and_the_student_still_follows():
    teacher, code, secret, ana = room_with_student()
    teacher.switch_page(QKV).run()
    button(teacher, "Show this to the class").click().run()
    follow(ana)
    assert page_of(ana) == QKV                                          # the student comes from /qkv
    teacher.switch_page(HANDOUT).run()
    assert teacher.session_state["handout.of"] == "qkv"                 # arriving: the page the teacher came from
    teacher.selectbox(key="handout.of").set_value("scores").run()
    button(teacher, "Show this to the class").click().run()
    no_exception(teacher)
    assert classroom.state(store(), code).view["query"] == {"handout.of": "scores"}
    follow(ana)
    assert page_of(ana) == HANDOUT
    assert ana.session_state["handout.of"] == "scores"                  # the teacher's choice, not /qkv
    assert ana.session_state["room.following"] is True
    assert "You stepped out" not in messages(ana)
    assert dict(ana.query_params).get("handout.of") in ("scores", ["scores"])
    # a student who then walks to the handout from another page on their own gets that page's handout, as before
    ben = student_joins(code, "Ben")
    ben.switch_page(QKV).run()
    ben.switch_page(HANDOUT).run()
    assert ben.session_state["handout.of"] == "qkv"


def test_a_pushed_grid_view_arrives_with_its_scene_query_grid_tab_and_transforms():
    teacher, code, secret, ana = room_with_student()
    teacher.switch_page(GRID).run()
    teacher.selectbox(key="grid.scene").set_value("traffic light")
    teacher.selectbox(key="grid.query").set_value("round")
    teacher.select_slider(key="grid.cells").set_value(8)
    teacher.slider(key="grid.sharpness").set_value(20.0).run()
    teacher.session_state["grid.tab"] = "(c) Learned K and V: cross-attention"
    teacher.run()
    teacher.radio(key="grid.transforms").set_value("random").run()
    teacher.number_input(key="grid.seed").set_value(7).run()
    no_exception(teacher)
    button(teacher, "Show this to the class").click().run()
    assert classroom.state(store(), code).view["query"] == {
        "grid.scene": "traffic light", "grid.query": "round", "grid.cells": "8", "grid.sharpness": "20",
        "grid.tab": "2", "grid.transforms": "random", "grid.seed": "7"}
    follow(ana)
    assert page_of(ana) == GRID and ana.session_state["room.following"] is True
    assert (ana.selectbox(key="grid.scene").value, ana.selectbox(key="grid.query").value,
            ana.select_slider(key="grid.cells").value, ana.slider(key="grid.sharpness").value,
            ana.radio(key="grid.transforms").value, ana.number_input(key="grid.seed").value) == (
        "traffic light", "round", 8, 20.0, "random", 7)
    assert ana.session_state["grid.tab"] == "(c) Learned K and V: cross-attention"
    assert charts(ana) == charts(teacher)                               # the same cells, the same numbers


def test_a_class_on_one_process_reads_and_analyses_a_run_once(monkeypatch):
    """30 sessions of one process open the pushed view at once: one read of the store, one analysis; a name the
    room does not have leaves nothing behind."""
    import threading

    from tests.test_room_runs import shipped_run
    from ui.room import travel as room_travel
    from ui.transformer import induction_run as runs
    blob = run_blob.to_bytes(shipped_run(100))
    name = run_blob.digest(blob)
    reads, analyses = [], []
    monkeypatch.setattr(room_travel, "fetch", lambda n: reads.append(n) or (blob if n == name else None))
    monkeypatch.setattr(runs, "analyse", lambda run: analyses.append(run["steps"]) or {"steps": run["steps"]})
    monkeypatch.setattr(runs, "_SHARED", type(runs._SHARED)())
    barrier, got = threading.Barrier(30), []

    def open_view():
        barrier.wait()
        got.append(runs.shared(name))
    threads = [threading.Thread(target=open_view) for _ in range(30)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert reads == [name] and analyses == [100] and len(got) == 30
    assert all(run["source"] == "teacher" and run["steps"] == 100 and an == {"steps": 100} for run, an in got)
    assert runs.shared("ef" * 16) is None and runs._FETCHING == {}


def test_a_share_link_to_the_grid_carries_its_controls_and_no_settings():
    from tests.test_labs_pages import _visit
    from streamlit.testing.v1 import AppTest
    from tests.apptest_util import ROOT
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.query_params["d_k"], at.query_params["grid.scene"], at.query_params["grid.tab"] = "3", "traffic light", "1"
    _visit(at, GRID, "https://school.example/grid")
    _visit(at, "app_pages/32_export.py", "https://school.example/export")
    no_exception(at)
    assert at.code[0].value == "https://school.example/grid?grid.scene=traffic%20light&grid.tab=1"
    assert "reads none of the shared settings." in "\n".join(c.value for c in at.caption)
