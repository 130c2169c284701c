"""Presenter mode (ui/presenter.py): one switch over every page's title, its style only while on, larger chart
fonts and numbers (ui/charts.py big=True), and presenter mode from a link (presenter=1; a tampered value: a
notice). How it looks on a projector, on every page at three sizes: tests/e2e/test_presenter_fit.py."""
from __future__ import annotations

import pytest

from attention_core import Config, run_forward
from tests.apptest_util import charts, messages, no_exception, open_page
from ui.charts import big_spec, heatmap_spec, number_font
from ui.presenter import FIT_SCRIPT, KEY, PRESENTER_CSS


def styles(at) -> list[str]:
    return [h.proto.body for h in at.get("html")]


def presenter_on(at) -> bool:
    return any(body == PRESENTER_CSS for body in styles(at))


def switch(at):
    return at.toggle(key=KEY)


# -- the switch and its style --------------------------------------------------------------------------

@pytest.mark.parametrize("page", ["app_pages/overview.py", "app_pages/21_alignment.py", "app_pages/41_masks.py"])
def test_one_switch_over_the_title_on_every_page_and_none_in_the_sidebar(page):
    at = open_page(page, groups=True)
    no_exception(at)
    assert [t.key for t in at.main.get("toggle")].count(KEY) == 1
    assert KEY not in [t.key for t in at.sidebar.get("toggle")]            # the buried toggle is gone
    assert switch(at).label == "Presenter mode" and switch(at).value is False
    # the header line: the location caption, then the switch, before the title
    header = at.main.children[0]
    assert [type(e).__name__ for e in header.children.values()][:2] == ["Caption", "Toggle"], header


def test_the_style_is_sent_only_while_on_and_the_address_bar_never_says_so():
    at = open_page("app_pages/4_scores.py", query={"d_k": "5"})
    no_exception(at)
    assert not presenter_on(at) and FIT_SCRIPT not in styles(at)
    switch(at).set_value(True).run()
    no_exception(at)
    assert presenter_on(at) and at.session_state["s.presenter"] is True
    assert FIT_SCRIPT in [h.proto.body for h in at.sidebar.get("html")]   # the formula fitter, in the hidden sidebar
    assert "presenter" not in at.query_params and at.query_params["d_k"] in ("5", ["5"])
    switch(at).set_value(False).run()
    no_exception(at)
    assert not presenter_on(at) and at.session_state["s.presenter"] is False
    assert "presenter" not in at.query_params


def test_the_style_hides_the_sidebar_grows_text_and_stacks_columns_up_to_1100_px():
    css = PRESENTER_CSS
    assert "[data-testid='stSidebar']" in css and "[data-testid='stExpandSidebarButton']" in css and "display:none" in css
    assert "html{font-size:20px}" in css                                    # 16 px text -> 20 px
    assert "@media (min-width:1600px){html{font-size:22px}}" in css         # a 1920 × 1080 projector: 22 px
    assert "@media (max-width:1100px)" in css and "flex:1 1 100% !important" in css
    assert ".katex-display>.katex{white-space:normal}" in css               # formulas break after = and +
    assert "<" not in css[len("<style>"):-len("</style>")]                  # constant CSS, nothing else


def test_a_projector_link_turns_the_switch_on_and_the_choice_is_kept_across_pages():
    at = open_page("app_pages/3_qkv.py", query={"presenter": "1"})
    no_exception(at)
    assert switch(at).value is True and presenter_on(at)
    assert "presenter" not in at.query_params
    at.switch_page("app_pages/6_context.py").run()
    no_exception(at)
    assert switch(at).value is True and presenter_on(at)


@pytest.mark.parametrize("raw", ["yes", "2", "<b>1</b>"])
def test_a_tampered_presenter_value_gives_a_notice_and_leaves_it_off(raw):
    at = open_page("app_pages/5_softmax.py", query={"presenter": raw})
    no_exception(at)
    assert switch(at).value is False and not presenter_on(at)
    assert "Link setting “presenter” must be 1 or 0" in messages(at)


# -- charts grow -----------------------------------------------------------------------------------------

def text_layer(spec: dict) -> dict | None:
    return next((layer for layer in spec["layer"] if layer["mark"]["type"] == "text"), None)


def test_heatmap_numbers_and_labels_are_larger_with_big():
    trace = run_forward(Config())                             # 4 tokens: a 4 × 4 matrix of weights
    step = trace["weights"]
    small, _ = heatmap_spec(trace, step, max_w=620)
    big, _ = heatmap_spec(trace, step, max_w=620, big=True)
    # cells: min(44, 620/4, 460/4) = 44 px; with big min(80, 155, 644/4) = 80 px
    assert small["width"] == 4 * 44 and big["width"] == 4 * 80
    assert text_layer(small)["mark"]["fontSize"] == 12
    assert text_layer(big)["mark"]["fontSize"] == 20          # min(20, (80 − 6) / (0.52 · 5)) = min(20, 28)
    for axis in ("x", "y"):
        assert small["layer"][0]["encoding"][axis]["axis"]["labelFontSize"] == 11
        assert big["layer"][0]["encoding"][axis]["axis"]["labelFontSize"] == 16
    # a half-width card (max_w = 280): 280/4 = 70 px cells, the chart no wider than its card, 20 px numbers
    half, _ = heatmap_spec(trace, step, max_w=280, big=True)
    assert half["width"] == 280 and text_layer(half)["mark"]["fontSize"] == 20


def test_big_numbers_are_sized_for_the_widest_number_of_the_matrix():
    trace = run_forward(Config())
    step = trace["scaled_scores"]                             # −25.06 … : 6 characters
    assert float(abs(step.value).max()) == pytest.approx(27.41, abs=0.01)
    spec, _ = heatmap_spec(trace, step, max_w=260, big=True)  # 260/4 = 65 px cells
    assert spec["width"] == 260
    assert text_layer(spec)["mark"]["fontSize"] == 18         # (65 − 6) / (0.52 · 6) = 18.9
    weights, _ = heatmap_spec(trace, trace["weights"], max_w=260, big=True)     # 0.96: 4 characters
    assert text_layer(weights)["mark"]["fontSize"] == 20


def test_big_numbers_are_never_under_16_px_they_are_left_out_instead():
    trace = run_forward(Config(sentence="the cat sat on the mat today with me"))     # 9 tokens
    spec, _ = heatmap_spec(trace, trace["weights"], max_w=300, big=True)               # 300/9 = 33 px cells
    assert text_layer(spec) is None                                                    # 10 px in the small view
    small, _ = heatmap_spec(trace, trace["weights"], max_w=300)
    assert text_layer(small)["mark"]["fontSize"] == 10
    for size in range(3, 80):
        for chars in (1, 5, 6):
            px = number_font(size, chars, big=True)
            assert px is None or 16 <= px <= 20 and px * 0.52 * chars <= size - 6


def test_other_charts_grow_by_a_third_in_presenter_mode():
    spec = {"data": {"values": [{"fontSize": 3}]}, "mark": {"type": "text", "fontSize": 11},
            "encoding": {"x": {"axis": {"labelFontSize": 9, "titleFontSize": 12}}},
            "config": {"axis": {"labelFontSize": 20}}}
    out = big_spec(spec)
    assert out["mark"]["fontSize"] == 14 and out["encoding"]["x"]["axis"] == {"labelFontSize": 13, "titleFontSize": 16}
    assert out["config"]["axis"] == {"labelFontSize": 26, "titleFontSize": 15}       # its own 20 grown; 15 added
    assert out["data"] is spec["data"] and spec["mark"]["fontSize"] == 11           # rows shared, the spec unchanged


def test_a_page_chart_is_drawn_with_the_big_fonts_in_presenter_mode():
    at = open_page("app_pages/1_embeddings.py", query={"presenter": "1"})
    no_exception(at)
    bars = next(c for c in charts(at) if str(c.get("title", "")).startswith("Closest to"))
    assert bars["layer"][1]["mark"]["fontSize"] == 14                                  # 11 · 1.3
    assert bars["encoding"]["y"]["axis"]["labelFontSize"] == 16                        # 12 · 1.3
    assert bars["config"]["axis"]["labelFontSize"] == 14


# -- fixes for a projector --------------------------------------------------------------------------------

def test_a_long_vector_is_shown_ten_entries_a_row_in_presenter_mode():
    at = open_page("app_pages/3_qkv.py", query={"presenter": "1"})
    no_exception(at)
    shown = next(c.value for c in at.caption if c.value.startswith("x_"))       # "x_1 (the row of **love**) ..."
    i = int(shown[2:shown.index(" ")])
    x = run_forward(Config())["x"].value[i]                        # the picked word's 50 GloVe numbers
    frame = at.dataframe[0].value
    assert list(frame["vector"]) == ["0–9", "10–19", "20–29", "30–39", "40–49"]
    assert frame.shape == (5, 11)
    assert float(frame.iloc[2, 1 + 3]) == pytest.approx(x[23])     # row 20–29, column 3: entry 23
    assert "50 entries, 10 a row" in "\n".join(c.value for c in at.caption)
    off = open_page("app_pages/3_qkv.py")
    assert off.dataframe[0].value.shape == (1, 50)                 # off: one row, as before


def test_a_vector_of_12_entries_names_a_row_and_an_entry_it_has():
    at = open_page("app_pages/3_qkv.py", query={"presenter": "1", "embedding": "random", "d_model": "12"})
    no_exception(at)
    frame = at.dataframe[0].value
    assert list(frame["vector"]) == ["0–9", "10–11"]
    note = next(c.value for c in at.caption if "entries, 10 a row" in c.value)
    assert note == "12 entries, 10 a row: row 10–11, column 1 is entry 11."     # was 'row 10–19, … entry 13'


# -- a sentence that sends the reader to the sidebar, which presenter mode hides --------------------------

BACK = "Presenter mode hides the sidebar"


def said(at) -> str:
    return "\n".join(e.value for e in list(at.caption) + list(at.info) + list(at.markdown) + list(at.warning))


@pytest.mark.parametrize("page", ["app_pages/overview.py", "app_pages/5_softmax.py", "app_pages/7_multi_head.py",
                                  "app_pages/20_score_functions.py", "app_pages/42_kv_cache.py"])
def test_change_it_in_the_sidebar_says_how_to_see_it_in_presenter_mode_once(page):
    off = open_page(page)
    no_exception(off)
    assert "in the sidebar" in said(off) and BACK not in said(off)
    on = open_page(page, query={"presenter": "1"})
    no_exception(on)
    assert said(on).count(BACK) == 1, said(on)            # said once a page, after the first such sentence
    assert "turn its switch, over the title, off" in said(on)


def test_the_switch_help_says_what_it_does_and_where_the_link_is_made():
    at = open_page("app_pages/4_scores.py")
    help_text = switch(at).help
    assert "no sidebar" in help_text and "up to 1100 px wide" in help_text
    assert "does not go in the address bar" in help_text and "Share page" in help_text


def test_the_masks_page_under_alibi_says_how_to_see_the_sidebar_whose_heads_it_asks_to_change():
    on = open_page("app_pages/41_masks.py", query={"presenter": "1", "positional": "alibi", "n_heads": "8"})
    no_exception(on)
    assert "change the sidebar's Heads." in said(on) and said(on).count(BACK) == 1
