import numpy as np
"""Every forward page through AppTest: renders, follows the settings, keeps them across pages."""
import pytest

from tests.apptest_util import ROOT, badges, charts, messages, no_exception, open_page
from ui.nav import SECTIONS

FORWARD = [f for f, _, _ in SECTIONS[0][1]]
ALL_PAGES = [f for _, pages in SECTIONS for f, _, _ in pages if (ROOT / f).exists()]


@pytest.mark.parametrize("page", ALL_PAGES)
def test_page_renders_at_defaults(page):
    at = open_page(page)
    no_exception(at)
    assert at.title, "every page has a title"
    assert not at.error


@pytest.mark.parametrize("page", FORWARD)
def test_sidebar_has_sections_and_settings(page):
    at = open_page(page)
    sidebar_md = [m.value for m in at.sidebar.markdown]
    assert "**Forward pass**" in sidebar_md
    assert any(w.key == "w.sentence" for w in at.sidebar.text_input)


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
    at = open_page(page, query={"positional": "none"} if key == "w.n_heads" else None)
    if key in ("w.mask",) and page == "pages/5_softmax.py":
        pass  # drawn in the page body there; the key is the same
    if not any(w.key == key for w in getattr(at, kind)):
        pytest.skip(f"{key} is not on {page}")
    _widget(at, kind, key).set_value(value).run()
    no_exception(at)
    assert not at.error, messages(at)
    assert at.session_state[f"s.{key[2:]}"] == value


@pytest.mark.parametrize("page", ["pages/3_qkv.py", "pages/7_multi_head.py"])
def test_shape_text_follows_d_k(page):
    at = open_page(page)
    assert any("d_k=4" in b for b in badges(at))
    at.number_input(key="w.d_k").set_value(8).run()
    no_exception(at)
    assert any("d_k=8" in b for b in badges(at)), badges(at)
    assert not any("d_k=4" in b for b in badges(at))


def test_scaling_formula_follows_d_k():
    at = open_page("pages/4_scores.py")
    at.number_input(key="w.d_k").set_value(9).run()
    no_exception(at)
    assert any(r"\sqrt{9}" in e.value for e in at.latex)


def test_position_controls_live_on_the_position_page():
    at = open_page("pages/2_positional.py", query={"embedding": "toy", "weights": "random"})    # 3-d toy vectors
    assert any(w.key == "w.positional" for w in at.main.selectbox)
    at.selectbox(key="w.positional").set_value("index").run()
    no_exception(at)
    assert any("d_model=4" in b for b in badges(at))


def test_settings_survive_switching_pages():
    at = open_page("pages/3_qkv.py")
    at.text_input(key="w.sentence").set_value("we love the dog").run()
    at.switch_page("pages/5_softmax.py").run()
    no_exception(at)
    assert at.session_state["s.sentence"] == "we love the dog"
    assert at.session_state["s.last_good"].sentence == "we love the dog"   # what the page computed with
    assert at.query_params["sentence"] in ("we love the dog", ["we love the dog"])


def test_url_sets_the_settings():
    at = open_page("pages/7_multi_head.py", query={"embedding": "random", "d_model": "8", "n_heads": "4",
                                                   "d_k": "2", "sentence": "a b c"})
    no_exception(at)
    assert at.session_state["s.n_heads"] == 4
    assert any("head=4" in b for b in badges(at))
    assert any("n=3" in b for b in badges(at))


def test_glove_disables_d_model_with_reason():
    at = open_page("app.py", query={"embedding": "glove", "sentence": "the movie was great"})
    no_exception(at)
    fixed = [s for s in at.sidebar.slider if s.label.startswith("d_model")]
    assert fixed and fixed[0].disabled and fixed[0].value == 50
    assert "GloVe vectors have 50 dimensions" in fixed[0].help


def test_nearest_neighbours_are_drawn_with_their_similarities():
    from attention_core import Config, nearest
    from attention_core.embeddings import vocabulary_for
    at = open_page("pages/1_embeddings.py")
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
    at = open_page("pages/5_softmax.py")
    at.toggle(key="tbl:weights").set_value(True).run()
    no_exception(at)
    at.session_state["tb:weights:None"] = {"selection": {"rows": [], "columns": [], "cells": [(1, "c2")]}}
    at.run()
    no_exception(at)
    shown = [m.value for m in at.markdown if "was made" in m.value]
    assert shown and "weights[1, 2]" in shown[0], shown
    assert any("✓ recomputed from the terms above" in c.value for c in at.caption)
