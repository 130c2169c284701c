"""A lesson stop asks before it tells, and the teacher's note stays with the teacher.

Unit: classroom.push keeps a view's "hide" and "stage" (checked, bounded); ui/room/hide's names and who hides;
a heatmap's spec with hidden cells carries none of their numbers (not in the cells, the text, the tooltip or the
colour bar's ends). AppTest: a stop shown to predict (no explanation open, the hidden cell "?" on the student's
screen, outlined on the teacher's), then "Reveal" (the explanation open on both, the stop's poll revealed); the
teacher's note on no student's screen, not in presenter mode, not on the room or Lessons pages, not in the
share link.
"""
from __future__ import annotations

import json
import types

import numpy as np
import pytest

import classroom
from classroom.lesson import Lesson, LessonError, Stop, from_dict, from_link, to_dict
from tests.apptest_util import charts, no_exception, open_page
from tests.test_room_page import ROOM, SCORES, button, follow, page_of, room_with_student, stay, text_of

HIDE = "scaled_scores:None.0.0"
NOTE = "Secret: it is -25.06."
STOP = Stop("Scaled scores", "scores", {"scores.tab": "1", "cell": "hm:scaled_scores:None.0.1"},
            ask="S[0, 0] = -50.12 and d_k = 4: what is the scaled score?", poll="scaled_score", note=NOTE,
            hide=(HIDE,))


@pytest.fixture(autouse=True)
def _memory_store(monkeypatch):
    monkeypatch.delenv("ATTENTION_EXPLORER_REDIS_URL", raising=False)


# ---- classroom.push: the predict state travels, checked ----------------------------------------------------

def _room():
    store = classroom.MemoryStore()
    code, secret = classroom.open_room(store, "t")
    return store, code, secret


def test_push_keeps_hide_and_stage():
    store, code, secret = _room()
    classroom.push(store, code, secret, {"page": SCORES, "query": {}, "hide": [HIDE, "weights", HIDE],
                                         "stage": "predict"})
    view = classroom.state(store, code).view
    assert view["hide"] == [HIDE, "weights"] and view["stage"] == "predict"      # a name once
    classroom.push(store, code, secret, {"page": SCORES, "query": {"cell": "hm:weights:None.1.3"},
                                         "stage": "revealed"})
    view = classroom.state(store, code).view
    assert view["stage"] == "revealed" and "hide" not in view and view["version"] == 2
    classroom.push(store, code, secret, {"page": SCORES, "query": {}})
    assert set(classroom.state(store, code).view) == {"page", "query", "version", "at"}     # as before


@pytest.mark.parametrize("bad", [
    {"hide": ["weights"] * 65}, {"hide": ["w" * 81]}, {"hide": "weights"}, {"hide": [3]},
    {"hide": ["weights:None.1"]}, {"hide": ["<b>x</b>"]}, {"hide": ["weights:h.0.1"]}, {"stage": "shown"},
    {"stage": 1}])
def test_push_refuses_a_bad_predict_state_and_keeps_the_view(bad):
    store, code, secret = _room()
    classroom.push(store, code, secret, {"page": SCORES, "query": {"d_k": "3"}})
    with pytest.raises(classroom.BadMessage) as err:
        classroom.push(store, code, secret, {"page": SCORES, "query": {}, **bad})
    assert "nothing was sent" in str(err.value)
    view = classroom.state(store, code).view
    assert view["version"] == 1 and view["query"] == {"d_k": "3"}


def test_a_lesson_keeps_its_hide_in_its_file_and_link():
    lesson = Lesson("L", "", (STOP,))
    assert to_dict(lesson)["stops"][0]["hide"] == [HIDE]
    assert from_link(__import__("classroom.lesson", fromlist=["to_link"]).to_link(lesson)).stops[0].hide == (HIDE,)
    with pytest.raises(LessonError, match="hide"):
        from_dict({"title": "L", "stops": [{"title": "a", "hide": ["x y"]}]})


# ---- ui/room/hide: who hides what ------------------------------------------------------------------------

def _session(monkeypatch, **state):
    import ui.room.hide as rh
    monkeypatch.setattr(rh, "st", types.SimpleNamespace(session_state=dict(state)))
    return rh


def test_hidden_for_a_student_marked_for_the_teacher_nothing_out_of_a_room(monkeypatch):
    hide = [HIDE, "weights", "context:2.1.0"]
    rh = _session(monkeypatch)
    assert not rh.hidden("scaled_scores", None, 0, 0) and not rh.marked("scaled_scores", None, 0, 0)
    rh = _session(monkeypatch, **{"room.code": "K7MQ2D", "room.hide": hide})
    assert rh.hidden("scaled_scores", None, 0, 0) and not rh.hidden("scaled_scores", None, 0, 1)
    assert rh.hidden("weights", None, 3, 2) and rh.hidden("weights", 1, 0, 0)        # a whole step: every cell
    assert rh.hidden("context", 2, 1, 0) and not rh.hidden("context", None, 1, 0) and not rh.hidden("context", 1, 1, 0)
    assert not rh.marked("scaled_scores", None, 0, 0)
    assert rh.hidden_cells("scaled_scores", None, (4, 4)) == ((0, 0),)
    assert rh.hidden_cells("weights", None, (2, 2)) == ((0, 0), (0, 1), (1, 0), (1, 1))
    assert rh.hidden_read("context", (2, 1, 0)) and rh.hidden_read("scaled_scores", (0, 0))
    assert not rh.hidden_read("scaled_scores", (0, 1)) and not rh.hidden_read("q", (0, 0))
    rh = _session(monkeypatch, **{"room.code": "K7MQ2D", "room.secret": "s", "room.hide": hide})
    assert not rh.hidden("scaled_scores", None, 0, 0) and rh.marked("scaled_scores", None, 0, 0)
    assert rh.marked_cells("scaled_scores", None, (4, 4)) == ((0, 0),) and rh.hidden_cells("weights", None, (2, 2)) == ()
    rh = _session(monkeypatch, **{"room.code": "K7MQ2D", "room.secret": "s", "room.hide": hide, "s.presenter": True})
    assert rh.hidden("scaled_scores", None, 0, 0) and not rh.marked("scaled_scores", None, 0, 0)   # the projector


# ---- the heatmap's spec: a hidden number never leaves the server ---------------------------------------------

def _numbers_in(spec, frame) -> str:
    return json.dumps(spec) + json.dumps(frame.to_pylist())


def test_a_hidden_cell_is_not_in_the_specs_data_text_or_tooltip():
    from attention_core import Config
    from ui.cache import get_trace
    from ui.charts import heatmap_spec
    trace = get_trace(Config())
    step = trace["scaled_scores"]
    value = float(step.value[0, 0])
    top = np.unravel_index(np.abs(step.value).argmax(), step.value.shape)   # it would set the colour bar's ends
    hidden = {(0, 0), tuple(map(int, top))}
    spec, frame = heatmap_spec(trace, step, hidden=sorted(hidden))
    rows = frame.to_pylist()
    first = next(r for r in rows if (r["i"], r["j"]) == (0, 0))
    assert all(np.isnan(r["v"]) and r["q"] == 1 for r in rows if (r["i"], r["j"]) in hidden)
    assert all(r["q"] == 0 and np.isfinite(r["v"]) for r in rows if (r["i"], r["j"]) not in hidden)
    shown = _numbers_in(spec, frame)
    for v in (value, float(step.value[top])):
        for text in (f"{v:.2f}", f"{v:.6g}", f"{abs(v):.2f}", repr(v), repr(abs(v))):
            assert text not in shown, text
    bound = spec["layer"][0]["encoding"]["color"]["condition"]["scale"]["domain"][2]
    visible = [abs(step.value[i, j]) for i in range(4) for j in range(4) if (i, j) not in hidden]
    assert bound == pytest.approx(max(visible)) and bound < abs(step.value[top])
    assert [layer["encoding"]["text"]["field"] for layer in spec["layer"] if layer["mark"]["type"] == "text"] == ["t"]
    assert spec["layer"][0]["mark"]["invalid"] is None          # the "?" cell is drawn and clickable (not filtered)
    calc = {c["as"]: c["calculate"] for c in spec["transform"]}
    assert calc["t"].startswith("datum.q == 1 ? '?'") and "hidden until your teacher reveals" in calc["exact"]
    plain, _ = heatmap_spec(trace, step)                     # the cache is keyed by the hidden cells too
    assert plain is not spec and "q" not in heatmap_spec(trace, step)[1].column_names
    marked, cells = heatmap_spec(trace, step, marked=[(0, 0)])          # the teacher's: the number, outlined
    assert cells.column("m").to_pylist()[0] == 1 and cells.column("v").to_pylist()[0] == value
    assert any(layer["mark"].get("strokeDash") for layer in marked["layer"])


# ---- in a room: predict, then reveal ---------------------------------------------------------------------

def _hm(at):
    """The scaled scores' heatmap: the chart whose transform names its tooltip, with its rows."""
    for c in charts(at):
        if any("Scaled" in json.dumps(t.get("title", "")) for t in c.get("layer", [{}])[0].get("encoding", {})
               .get("tooltip", [])):
            return c
    raise AssertionError([c.get("title") for c in charts(at)])


def _teacher_on_stop(stop=STOP):
    teacher, code, secret, ana = room_with_student()
    teacher.session_state["room.lesson"] = Lesson("One stop", "", (stop,))
    teacher.session_state["room.stop"] = 0
    stay(button(teacher.run(), "Show this stop").click().run())
    no_exception(teacher)
    return teacher, code, secret, ana


def test_a_stop_arrives_to_predict_and_the_reveal_opens_its_explanation():
    from attention_core import Config
    from ui.cache import get_trace
    value = float(get_trace(Config())["scaled_scores"].value[0, 0])
    teacher, code, secret, ana = _teacher_on_stop()
    store = classroom.store_from_env()
    view = classroom.state(store, code).view
    assert view["stage"] == "predict" and view["hide"] == [HIDE] and "cell" not in view["query"]
    follow(ana)
    assert page_of(ana) == SCORES and ana.session_state["room.hide"] == [HIDE]
    said = text_of(ana)
    assert "Predict first" in said and "show “?” until your teacher reveals them" in said
    assert "was made" not in said and NOTE not in said and "Secret" not in said
    hm = _hm(ana)
    cell = next(r for r in hm["data"]["values"] if (r["i"], r["j"]) == (0, 0))
    assert np.isnan(cell["v"]) and cell["q"] == 1
    assert f"{value:.2f}" not in json.dumps([c for c in charts(ana)]) + said
    assert "hidden until your teacher reveals it" in said
    # the teacher: the number, outlined, said
    hm = _hm(teacher)
    cell = next(r for r in hm["data"]["values"] if (r["i"], r["j"]) == (0, 0))
    assert cell["v"] == value and cell["m"] == 1
    told = text_of(teacher)
    assert "hidden on the students' screens until you reveal" in told and "The class sees this stop to predict" in told
    assert "Your note (on your screen only" in told
    # the student asks for the hidden cell's explanation (a click): hidden, no number
    ana.session_state["p.cell"] = (SCORES, "hm:scaled_scores:None", 0, 0)
    ana.run()
    said = text_of(ana)
    assert "hidden until your teacher reveals it: predict it first" in said and f"{value:.2f}" not in said
    assert "was made" not in said
    assert ana.session_state["room.following"] is True       # a click while predicting is not stepping out
    # the stop's poll is open; Reveal shows the stop again, with its cell, and reveals the poll
    button(teacher, "Ask this stop's question").click().run()
    poll = classroom.state(store, code).poll
    assert poll and not poll["revealed"]
    stay(button(teacher, "Reveal").click().run())
    no_exception(teacher)
    view = classroom.state(store, code).view
    assert view["stage"] == "revealed" and view["query"]["cell"] == "hm:scaled_scores:None.0.1" and "hide" not in view
    assert classroom.state(store, code).poll["revealed"] is True
    assert "was made" in text_of(teacher) and not [b for b in teacher.button if b.label == "Reveal"]
    follow(ana)
    said = text_of(ana)
    assert ana.session_state["room.hide"] == [] and "was made" in said and "Predict first" not in said
    cell = next(r for r in _hm(ana)["data"]["values"] if (r["i"], r["j"]) == (0, 0))
    assert cell["v"] == value and "q" not in cell


def test_the_table_shows_a_question_mark_for_a_hidden_number():
    from attention_core import Config
    from ui.cache import get_trace
    value = float(get_trace(Config())["scaled_scores"].value[0, 0])
    teacher, code, secret, ana = _teacher_on_stop()
    follow(ana)
    ana.session_state["tbl:scaled_scores"] = True
    ana.run()
    no_exception(ana)
    frames = [d.value for d in ana.dataframe]
    table = next(f for f in frames if f.shape == (4, 4) and "?" in f.to_numpy().astype(str))
    assert table.iloc[0, 0] == "?" and f"{value:.3f}" not in table.to_string()
    values = get_trace(Config())["scaled_scores"].value
    assert table.iloc[1, 0] == f"{values[1, 0]:.3f}"             # the hidden number's column: text, the others kept
    assert table.iloc[0, 1] == values[0, 1]                          # other columns: numbers as before


def test_the_note_is_on_no_projected_screen():
    teacher, code, secret, ana = _teacher_on_stop()
    assert "Your note (on your screen only, not in presenter mode): Secret" in text_of(teacher)
    teacher.toggle(key="w.presenter").set_value(True).run()  # presenter mode: the projector
    no_exception(teacher)
    told = text_of(teacher)
    assert "Secret" not in told and "not shown here: presenter mode is for the projector" in told
    assert "(and on this one: presenter mode is the projector's view)" in told
    hm = _hm(teacher)                                         # and the hidden number is "?" on the projector too
    assert next(r for r in hm["data"]["values"] if (r["i"], r["j"]) == (0, 0))["q"] == 1
    teacher.toggle(key="w.presenter").set_value(False).run()
    for page in (ROOM, "app_pages/61_lessons.py"):
        teacher.switch_page(page).run()
        no_exception(teacher)
        assert "Secret" not in text_of(teacher) and "It is in this bar on the other pages" in text_of(teacher), page
    teacher.session_state["lessons.draft"] = Lesson("Mine", "", (STOP,))   # the builder while teaching
    teacher.run()
    no_exception(teacher)
    assert not [t for t in teacher.text_area if t.label == "Teacher's note"]
    assert "Teachers' notes are not shown here while you teach" in text_of(teacher)
    link = next(c.value for c in teacher.code if "lesson=" in c.value)
    assert from_link(link.split("lesson=", 1)[1]).stops[0].note == "" and "without your notes" in text_of(teacher)
    follow(ana)
    assert "Secret" not in text_of(ana)


def test_the_builder_shows_the_note_out_of_a_room():
    at = open_page("app_pages/61_lessons.py")
    at.session_state["lessons.draft"] = Lesson("Mine", "", (STOP,))
    at.run()
    no_exception(at)
    note = [t for t in at.text_area if t.label == "Teacher's note"]
    assert note and note[0].value == NOTE and "only you, in the room bar" in note[0].help


# ---- every table of a page that prints a hidden number prints "?" -----------------------------------------------

def _numbers(at) -> list[float]:
    """Every number the page sent: its tables' cells, its charts' rows, read as numbers where they are numbers."""
    out = []
    for frame in [d.value for d in at.dataframe]:
        for x in frame.to_numpy().ravel():
            try:
                out.append(float(x))
            except (TypeError, ValueError):
                pass
    for c in charts(at):
        for row in c.get("data", {}).get("values", []):
            out += [float(v) for v in row.values() if isinstance(v, (int, float)) and not isinstance(v, bool)]
    return out


@pytest.mark.parametrize("page, query, hide, cell", [
    ("app_pages/4_scores.py", {"scores.tab": "0", "one_word": "0"}, "scaled_scores:None.0.0", (0, 0)),
    ("app_pages/4_scores.py", {"scores.tab": "1"}, "scaled_scores", (2, 1)),
    ("app_pages/5_softmax.py", {"mask": "causal"}, "weights:None.3.1", (3, 1)),
    ("app_pages/6_context.py", {"context.tab": "0", "one_word": "0"}, "weights:None.0.1", (0, 1)),
    ("app_pages/6_context.py", {"context.tab": "0", "one_word": "2"}, "context:None.2.3", (2, 3)),
    ("app_pages/6_context.py", {"context.tab": "1"}, "context", (1, 2)),
    # a page's own view of the trace; cos is symmetric: its mirror cell is hidden too, or it gives the number away
    ("app_pages/1_embeddings.py", {}, "view:cosine_tokens:None.0.2,view:cosine_tokens:None.2.0", (0, 2)),
])
def test_a_pages_tables_and_charts_hold_no_hidden_number(page, query, hide, cell):
    from attention_core import Config
    from attention_core.labs.export import config_from_query
    from ui.cache import get_trace
    _, code, secret, ana = room_with_student()
    classroom.push(classroom.store_from_env(), code, secret, {"page": page, "query": query,
                                                              "hide": hide.split(","), "stage": "predict"})
    follow(ana)
    assert page_of(ana) == page
    key = hide.split(",")[0].rsplit(":", 1)[0] if "." in hide else hide
    trace = get_trace(config_from_query(query)[0] if query else Config())
    if key == "view:cosine_tokens":
        from attention_core.math.embeddings import cosine_similarity
        value = float(cosine_similarity(trace["x_embed"].value)[cell])
    else:
        value = float(trace[key].value[cell])
    sent = _numbers(ana)
    assert sent and not [x for x in sent if abs(x - value) < 5e-4], (value, key)
    assert f"{value:.3f}" not in text_of(ana) and "hidden until your teacher reveals it" in text_of(ana)
    classroom.push(classroom.store_from_env(), code, secret, {"page": page, "query": query, "stage": "revealed"})
    follow(ana)                                                 # revealed: the number is back
    assert [x for x in _numbers(ana) if abs(x - value) < 5e-4] or f"{value:.3f}" in text_of(ana)


def test_the_handout_of_a_stop_holds_no_hidden_number():
    """A student who steps out to the handout of the stop's page finds the hidden step's numbers left out, and no
    print or download (which would hold them) until the reveal."""
    from attention_core import Config
    from ui.cache import get_trace
    value = float(get_trace(Config())["scaled_scores"].value[0, 0])
    _, code, secret, ana = room_with_student()
    classroom.push(classroom.store_from_env(), code, secret, {"page": "app_pages/62_handout.py",
                                                              "query": {"handout.of": "scores"},
                                                              "hide": [HIDE], "stage": "predict"})
    follow(ana)
    said = text_of(ana) + "".join(h.proto.body for h in ana.get("html"))
    assert "This step's numbers are hidden until your teacher reveals them" in said
    assert f"{abs(value):.2f}" not in said and not ana.get("download_button")
    classroom.push(classroom.store_from_env(), code, secret, {"page": "app_pages/62_handout.py",
                                                              "query": {"handout.of": "scores"}, "stage": "revealed"})
    follow(ana)
    said = text_of(ana) + "".join(h.proto.body for h in ana.get("html"))
    assert "hidden until" not in said and ana.get("download_button") and f"{abs(value):.2f}" in said


def test_the_export_page_offers_no_download_while_a_number_is_hidden():
    _, code, secret, ana = room_with_student()
    classroom.push(classroom.store_from_env(), code, secret, {"page": SCORES, "query": {}, "hide": [HIDE],
                                                              "stage": "predict"})
    follow(ana)
    ana.switch_page("app_pages/32_export.py").run()         # she steps out to the export page
    no_exception(ana)
    assert not ana.get("download_button") and "the downloads (which hold every number) come back" in text_of(ana)
    classroom.push(classroom.store_from_env(), code, secret, {"page": SCORES, "query": {}, "stage": "revealed"})
    ana.run()                                               # stepped out: the room's reveal un-hides here too
    ana.run()
    no_exception(ana)
    assert ana.get("download_button")


def test_a_student_in_the_room_reads_no_note_in_the_lessons_builder():
    """A student who steps out to the Lessons page and edits a copy of a shipped lesson sees no note (they hold the
    answers), and is told the saved file leaves them out."""
    _, _, _, ana = room_with_student()
    follow(ana)
    ana.switch_page("app_pages/61_lessons.py").run()
    ana.session_state["lessons.open.forward_pass"] = True
    ana.run()
    ana.button(key="lessons.copy.forward_pass").click().run()
    no_exception(ana)
    assert not [t for t in ana.text_area if t.label == "Teacher's note"]
    told = text_of(ana)
    assert "W_Q is d_model" not in told and "while you are in a room as a student" in told
    assert "without the teacher's notes" in told


def test_the_teachers_count_of_hidden_numbers_counts_a_whole_step_as_all_its_numbers():
    from ui.room.bar import hidden_words
    assert hidden_words(("weights:None.1.3",)) == "1 number is"
    assert hidden_words(("weights:None.1.3", "weights:None.1.2")) == "2 numbers are"
    assert hidden_words(("w_q",)) == "All the numbers of 1 step (each a whole table) are"
    assert hidden_words(("scaled_scores", HIDE)) == "All the numbers of 1 step (each a whole table) and 1 more number are"


def test_a_pinned_question_that_no_longer_fits_says_how_to_bring_it_back():
    from dataclasses import replace
    teacher, code, secret, ana = _teacher_on_stop(replace(STOP, poll_at={"row": "3", "col": "1"}))
    teacher.text_input(key="w.sentence").input("I love").run()
    button(teacher, "Ask this stop's question").click().run()
    said = " ".join(w.value for w in teacher.warning).replace("\\", "")
    assert "pinned to row 3, col 1" in said and "“Show this stop” brings back the stop's settings" in said
    stay(button(teacher, "Show this stop").click().run())
    button(teacher, "Ask this stop's question").click().run()
    no_exception(teacher)
    assert not teacher.warning and classroom.state(classroom.store_from_env(), code).poll["kind"] == "scaled_score"


# ---- a reveal gives away only its own stop ------------------------------------------------------------------------

LATER = "scaled_scores:None.1.2"


def _cell(at, i, j):
    return next(r for r in _hm(at)["data"]["values"] if (r["i"], r["j"]) == (i, j))


def test_a_reveal_keeps_a_later_stops_answer_hidden_until_its_own():
    """Two stops of one view (the same page and settings; the second opens a cell at its reveal): stop 1 asks S[0,0]/√d_k, stop 2 S[1,2]/√d_k.
    Stop 1's reveal shows its number on the student's screen and keeps stop 2's "?" (the room's view carries it,
    both screens say so); stop 2's reveal, the last, hides nothing; back to stop 1 (a jump back): to predict it hides
    its own number only, and its reveal nothing (stop 2 was revealed)."""
    from attention_core import Config
    from ui.cache import get_trace
    from ui.room.bar import STILL_HIDDEN
    from ui.room.follow import REVEALED_LATER
    value = get_trace(Config())["scaled_scores"].value
    first = Stop("Scaled score, row 0", "scores", {"scores.tab": "1"}, ask="S[0,0]/√d_k?", hide=(HIDE, LATER))
    second = Stop("Scaled score, row 1", "scores", {"scores.tab": "1", "cell": "hm:scaled_scores:None.1.2"},
                  ask="S[1,2]/√d_k?", hide=(LATER,))
    teacher, code, secret, ana = _teacher_on_stop(first)
    teacher.session_state["room.lesson"] = Lesson("Two stops, one view", "", (first, second))
    store = classroom.store_from_env()
    told = text_of(teacher.run())
    assert "the numbers that answer stop 2, later on this same view, stay hidden until you reveal that stop" in told
    stay(button(teacher, "Reveal").click().run())
    no_exception(teacher)
    view = classroom.state(store, code).view
    assert view["stage"] == "revealed" and view["hide"] == [LATER]
    assert STILL_HIDDEN.split(" {stops}")[0] in text_of(teacher) and "stop 2" in text_of(teacher)
    follow(ana)
    assert ana.session_state["room.hide"] == [LATER] and REVEALED_LATER in text_of(ana)
    assert _cell(ana, 0, 0)["v"] == value[0, 0] and np.isnan(_cell(ana, 1, 2)["v"])
    assert f"{value[1, 2]:.2f}" not in json.dumps(charts(ana))
    # stop 2, then its reveal: the last stop of the view, nothing hidden
    stay(button(teacher, "Next stop ▶").click().run())
    assert classroom.state(store, code).view["hide"] == [LATER]
    stay(button(teacher, "Reveal").click().run())
    assert "hide" not in classroom.state(store, code).view
    follow(ana)
    assert ana.session_state["room.hide"] == [] and _cell(ana, 1, 2)["v"] == value[1, 2]
    assert REVEALED_LATER not in text_of(ana)
    # back to stop 1: its own number to predict; its reveal shows everything (stop 2 was revealed)
    stay(button(teacher, "◀ Previous stop").click().run())
    assert classroom.state(store, code).view["hide"] == [HIDE, LATER]      # its own list, as the lesson wrote it
    stay(button(teacher, "Reveal").click().run())
    assert "hide" not in classroom.state(store, code).view
    follow(ana)
    assert ana.session_state["room.hide"] == [] and _cell(ana, 0, 0)["v"] == value[0, 0]


def test_the_teachers_bar_says_a_passage_that_waits_is_not_outlined_on_the_next_token_page():
    """Inside a transformer's stop 2 (the next-token page): on the students' screens the bars' p′, the sample and the
    heads' sentences wait as lines, not as outlined cells; the teacher's screen shows them plainly (nothing to
    outline), so the bar's “outlined with dashes on yours” says where it applies and what the students see
    elsewhere, to predict and after the reveal."""
    from classroom.lesson import shipped
    teacher, code, secret, ana = room_with_student()
    teacher.session_state["room.lesson"] = shipped()["inside_a_transformer"]
    teacher.session_state["room.stop"] = 1
    stay(button(teacher.run(), "Show this stop").click().run())
    no_exception(teacher)
    told = text_of(teacher)
    assert "bar 3 is what the sample is drawn from" in told                # shown plainly here: not outlined
    assert "a passage or bar that states them is left out of theirs, with a line saying it waits" in told
    stay(button(teacher, "Reveal").click().run())
    told = text_of(teacher)
    assert "stay hidden on their screens (outlined with dashes on yours where a table or heatmap shows them" in told
