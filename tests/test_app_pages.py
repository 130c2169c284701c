import numpy as np
"""Every forward page through AppTest: renders, follows the settings, keeps them across pages."""
import pytest

from tests.apptest_util import ROOT, badges, charts, formulas, messages, no_exception, open_page
from ui.nav import SECTIONS

FORWARD = [entry[0] for entry in SECTIONS[0][1]]
ALL_PAGES = [entry[0] for _, pages in SECTIONS for entry in pages if (ROOT / entry[0]).exists()]


@pytest.mark.parametrize("page", ALL_PAGES)
def test_page_renders_at_defaults(page):
    at = open_page(page)
    no_exception(at)
    assert at.title, "every page has a title"
    assert not at.error
    from tests.test_room_travel import controls_a_push_leaves
    left = controls_a_push_leaves(at, page)
    assert not left, f"controls a push of this view would leave behind, unsaid to the teacher: {left}"


@pytest.mark.parametrize("page", FORWARD)
def test_sidebar_holds_the_settings_not_the_navigation(page):
    """The navigation is st.navigation's top bar (app.py); the sidebar starts with the sentence."""
    at = open_page(page)
    assert any(w.key == "w.sentence" for w in at.sidebar.text_input)
    assert not at.sidebar.get("page_link"), "page links in the sidebar: one element per page again"
    where = next(c.value for c in at.main.caption)
    assert where.endswith("Forward pass › " + next(label for f, label, _, _ in SECTIONS[0][1] if f == page))


CONTROLS = [  # (widget kind, key, new value)
    ("text_input", "w.sentence", "the cat sat on the mat"),
    ("selectbox", "w.embedding", "random"),
    ("selectbox", "w.embedding", "glove"),
    ("radio", "w.unknown", "unk"),
    ("number_input", "w.d_k", 7),
    ("number_input", "w.d_v", 5),
    ("slider", "w.n_heads", 3),
    ("selectbox", "w.score", "additive"),
    ("selectbox", "w.score", "bilinear"),
    ("selectbox", "w.score", "dot"),
    ("selectbox", "w.mask", "causal"),
    ("selectbox", "w.mask", "padding"),
    ("slider", "w.temperature", 0.5),
    ("toggle", "w.bias", True),
    ("number_input", "w.seed", 42),
]


def _widget(at, kind, key):
    return getattr(at, kind)(key=key)


@pytest.mark.parametrize("page", FORWARD)
@pytest.mark.parametrize("kind,key,value", CONTROLS)
def test_each_control_on_each_page(page, kind, key, value):
    at = open_page(page, query={"positional": "none"} if key == "w.n_heads" else None, groups=True)
    assert any(w.key == key for w in getattr(at, kind)), f"{key} is not in {page}'s settings panel"
    _widget(at, kind, key).set_value(value).run()
    no_exception(at)
    assert not at.error, messages(at)
    assert at.session_state[f"s.{key[2:]}"] == value


# pages whose "One word" / "All words" tabs are lazy: only the open tab runs (its key, st.tabs)
TABS = {"app_pages/3_qkv.py": "qkv.tab", "app_pages/4_scores.py": "scores.tab", "app_pages/6_context.py": "context.tab"}
# the steps each page's "All words" tab draws, at the default settings (one head)
ALL_WORDS = {"app_pages/3_qkv.py": ["x", "w_q", "q", "w_k", "k", "w_v", "v"],
             "app_pages/4_scores.py": ["scores", "scaled_scores"],
             "app_pages/6_context.py": ["weights", "v", "context"]}


def open_tab(at, key: str, label: str):
    """Open a lazy tab as a click on it does (st.tabs with on_change="rerun": the page reruns)."""
    at.session_state[key] = label
    return at.run()


def _heatmap_values(at, key: str):
    """The cells of the step heatmap `key` (one head) as a matrix, from the chart the page sent."""
    import json

    import pyarrow as pa
    for c in at.get("vega_lite_chart"):
        if c.proto.id and f"hm:{key}:None" in c.proto.id:
            rows = pa.ipc.open_stream(c.proto.data.data).read_all().to_pylist()
            m = np.full((max(r["i"] for r in rows) + 1, max(r["j"] for r in rows) + 1), np.nan)
            for r in rows:
                m[r["i"], r["j"]] = r["v"]
            return m
    return None


@pytest.mark.parametrize("page", sorted(TABS))
def test_a_closed_tab_draws_nothing_and_opening_it_draws_its_numbers(page):
    """A closed tab costs nothing on a rerun: at first only "One word" runs (its table, no step
    heatmap); opening "All words" draws every step's heatmap with the trace's own numbers, and
    the One-word table is gone until that tab is opened again."""
    from attention_core import Config, run_forward
    trace = run_forward(Config())
    at = open_page(page)
    no_exception(at)
    assert at.session_state[TABS[page]] == "One word"
    assert at.dataframe, "the open tab (One word) draws its table"
    assert not at.get("vega_lite_chart") or all(_heatmap_values(at, k) is None for k in ALL_WORDS[page])
    assert not any(t.label == "Numbers as a table" for t in at.toggle), "no step box of the closed tab"
    one_word_tables = len(at.dataframe)

    open_tab(at, TABS[page], "All words")
    no_exception(at)
    for key in ALL_WORDS[page]:
        drawn = _heatmap_values(at, key)
        assert drawn is not None, f"{key} is drawn once its tab is open"
        want = trace[key].value
        want = want[None, :] if want.ndim == 1 else want
        np.testing.assert_allclose(drawn, want, rtol=0, atol=1e-12)
    assert sum(t.label == "Numbers as a table" for t in at.toggle) == len(ALL_WORDS[page])
    assert len(at.dataframe) < one_word_tables, "the closed One-word tab draws nothing"

    open_tab(at, TABS[page], "One word")
    no_exception(at)
    assert len(at.dataframe) == one_word_tables
    assert all(_heatmap_values(at, k) is None for k in ALL_WORDS[page])


@pytest.mark.parametrize("page", ["app_pages/3_qkv.py", "app_pages/7_multi_head.py"])
def test_shape_text_follows_d_k(page):
    at = open_page(page)
    if page in TABS:                          # the step boxes are on the "All words" tab
        open_tab(at, TABS[page], "All words")
    assert any("d_k=4" in b for b in badges(at))
    at.number_input(key="w.d_k").set_value(8).run()
    no_exception(at)
    assert any("d_k=8" in b for b in badges(at)), badges(at)
    assert not any("d_k=4" in b for b in badges(at))


def test_scaling_formula_follows_d_k():
    at = open_page("app_pages/4_scores.py")
    open_tab(at, TABS["app_pages/4_scores.py"], "All words")     # the scaled scores' box
    at.number_input(key="w.d_k").set_value(9).run()
    no_exception(at)
    assert any(r"\sqrt{9}" in f for f in formulas(at))


def test_position_controls_live_in_the_sidebar_on_the_position_page():
    at = open_page("app_pages/2_positional.py", query={"embedding": "toy", "weights": "random"})
    assert any(w.key == "w.positional" for w in at.sidebar.selectbox)
    assert not any(w.key == "w.positional" for w in at.main.selectbox)
    at.selectbox(key="w.positional").set_value("index").run()
    no_exception(at)
    assert any("d_model=4" in b for b in badges(at))
    assert any("In force: **Index feature (tutorial 1)**" in c.value for c in at.caption)


def test_settings_survive_switching_pages():
    at = open_page("app_pages/3_qkv.py")
    at.text_input(key="w.sentence").set_value("we love the dog").run()
    at.switch_page("app_pages/5_softmax.py").run()
    no_exception(at)
    assert at.session_state["s.sentence"] == "we love the dog"
    assert at.session_state["s.last_good"].sentence == "we love the dog"   # what the page computed with
    assert at.query_params["sentence"] in ("we love the dog", ["we love the dog"])


def test_url_sets_the_settings():
    at = open_page("app_pages/7_multi_head.py", query={"embedding": "random", "d_model": "8", "n_heads": "4",
                                                   "d_k": "2", "sentence": "a b c"})
    no_exception(at)
    assert at.session_state["s.n_heads"] == 4
    assert any("head=4" in b for b in badges(at))
    assert any("n=3" in b for b in badges(at))


def test_glove_fixes_d_model_with_reason():
    """A fixed width is a line of text, not a disabled slider (one element, less height)."""
    at = open_page("app_pages/overview.py", query={"embedding": "glove", "sentence": "the movie was great"})
    no_exception(at)
    assert not [s for s in at.sidebar.slider if s.label.startswith("d_model")]
    assert "d_model (embedding width): 50, fixed: GloVe vectors have 50 dimensions." in [
        c.value for c in at.sidebar.caption]
    at.selectbox(key="w.embedding").set_value("random").run()
    assert [s for s in at.sidebar.slider if s.label.startswith("d_model")][0].value == at.session_state["s.d_model"]


def test_nearest_neighbours_are_drawn_with_their_similarities():
    from attention_core import Config, nearest
    from attention_core.math.embeddings import vocabulary_for
    at = open_page("app_pages/1_embeddings.py")
    no_exception(at)
    word = at.selectbox(key="nn_word").value
    want = nearest(vocabulary_for(Config()), word, 8)
    bars = next(c for c in charts(at) if str(c.get("title", "")).startswith("Closest to"))
    got = sorted(bars["data"]["values"], key=lambda r: r["rank"])
    assert [r["word"] for r in got] == [w for w, _ in want]
    np.testing.assert_allclose([r["cosine similarity"] for r in got], [c for _, c in want], rtol=1e-12)
    assert word not in [r["word"] for r in got]          # a word is not its own neighbour


def test_a_table_cell_selected_shows_its_arithmetic():
    """The table view is the keyboard's way to a number's arithmetic: selecting a cell explains it."""
    at = open_page("app_pages/5_softmax.py")
    at.toggle(key="tbl:weights").set_value(True).run()
    no_exception(at)
    at.session_state["tb:weights:None"] = {"selection": {"rows": [], "columns": [], "cells": [(1, "c2")]}}
    at.run()
    no_exception(at)
    shown = [m.value for m in at.markdown if "was made" in m.value]
    assert shown and shown[0].startswith(r"**How A\[1,2\] was made**"), shown     # the cell in the notation
    assert any("✓ recomputed from the terms above" in c.value for c in at.caption)
