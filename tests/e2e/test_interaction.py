"""Settings in the browser: the sentence box redraws the heatmaps, a shared URL restores the
settings, the sidebar links carry them, and two students never see each other's data.

All on one server (app_server); each student is a browser context of its own.
"""
from __future__ import annotations

from urllib.parse import parse_qs, urlencode, urlparse

import pytest

try:
    from playwright.sync_api import expect
except ImportError:            # the fixtures skip, or fail under ATTENTION_EXPLORER_REQUIRE_BROWSER=1
    expect = None

from bench._common import CHART, EXCEPTION, after_run, forward_pages, run_marker, wait_for_charts, wait_run_end
from tests.e2e.conftest import click_table_cell, open_page

# Pages with a heatmap on show (not in a tab) whose rows are the tokens; the first that exists is used.
PREFERRED = ["softmax", "context", "multi_head", "embeddings"]
DEFAULT_TOKENS = ["i", "love", "you", "today"]
# Sentences from the toy vocabulary (the default embeddings drop other words), no repeated word.
SENTENCE_A = "the cat sat on a mat"
SENTENCE_B = "we miss the dog"
SENTENCE_C = "they hate me"


def heatmap_page() -> str:
    paths = [p.path for p in forward_pages()]
    for path in PREFERRED:
        if path in paths:
            return path
    pytest.skip("no forward page with heatmaps on show")




def token_rows(tab, want: list[str] | None = None) -> list[list[str]]:
    """Rows (y-axis labels) of the visible heatmaps; waits until one has `want` if given."""
    def ok(cs):
        drawn = [c for c in cs if c["visible"] and c["rendered"]]
        return bool(drawn) and (want is None or any(c["y"] == want for c in drawn))
    return [c["y"] for c in wait_for_charts(tab, ok) if c["visible"] and c["rendered"]]


def settled_count(locator, quiet_s: float = 1.5, timeout_s: float = 20.0) -> int:
    """How many elements match, once the number has stayed the same for quiet_s: the browser mounts a page's
    charts one after another after the run ends (on a loaded machine the second heatmap can come a second later)."""
    import time
    start = time.monotonic()
    count, since = locator.count(), time.monotonic()
    while time.monotonic() - start < timeout_s:
        time.sleep(0.25)
        now = locator.count()
        if now != count:
            count, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet_s:
            break
    return count


def sentence_box(tab):
    return tab.locator("[data-testid='stSidebar']").get_by_role("textbox", name="Sentence")


def type_sentence(tab, text: str, wait: bool = True) -> None:
    box = sentence_box(tab)

    def act():
        box.fill(text)
        box.press("Enter")
    if wait:
        after_run(tab, act)
    else:
        act()


def query_of(tab) -> dict:
    return {k: v[-1] for k, v in parse_qs(urlparse(tab.url).query).items()}


def no_exception(tab) -> None:
    assert tab.locator(EXCEPTION).count() == 0, tab.locator(EXCEPTION).first.inner_text()


def test_typing_a_sentence_redraws_the_heatmap_rows(app_server, student):
    path = heatmap_page()
    tab = student()
    open_page(tab, app_server, path)
    assert DEFAULT_TOKENS in token_rows(tab, DEFAULT_TOKENS)

    type_sentence(tab, SENTENCE_A)
    rows = token_rows(tab, SENTENCE_A.split())
    assert SENTENCE_A.split() in rows, rows
    assert DEFAULT_TOKENS not in rows, "an old heatmap is still on show"
    assert query_of(tab).get("sentence") == SENTENCE_A, tab.url
    no_exception(tab)

    # the navigation (top bar: open the section, click the page) carries the settings to the next page
    other = next(p for p in forward_pages() if p.path not in ("", path))
    tab.locator("[data-testid='stTopNavSection']").filter(has_text="Forward pass").click()
    link = tab.locator("a[data-testid='stTopNavDropdownLink']").filter(has_text=other.label)
    after_run(tab, lambda: link.first.click())
    expect(tab).to_have_url(f"{app_server.url}/{other.path}?{urlencode({'sentence': SENTENCE_A})}")
    expect(sentence_box(tab)).to_have_value(SENTENCE_A)
    no_exception(tab)


def test_a_shared_url_restores_the_settings(app_server, student):
    path = heatmap_page()
    tab = student()
    open_page(tab, app_server, path, {"sentence": SENTENCE_B, "d_k": 8, "temperature": 2})

    expect(sentence_box(tab)).to_have_value(SENTENCE_B)
    expect(tab.locator("[data-testid='stNumberInput'] input[aria-label='d_k']")).to_have_value("8")
    temperature = tab.locator("[data-testid='stSlider']").filter(has_text="Softmax temperature")
    expect(temperature.locator("[data-testid='stSliderThumbValue']")).to_have_text("2.00")
    rows = token_rows(tab, SENTENCE_B.split())
    assert SENTENCE_B.split() in rows, rows
    assert query_of(tab) == {"sentence": SENTENCE_B, "d_k": "8", "temperature": "2"}, tab.url
    no_exception(tab)


def test_a_tampered_url_gets_a_notice_not_a_traceback(app_server, student):
    path = heatmap_page()
    tab = student()
    open_page(tab, app_server, path, {"d_k": "many", "n_heads": "-3", "sentence": "x" * 5000})
    expect(tab.locator("[data-testid='stAlert']").first).to_be_visible()
    assert DEFAULT_TOKENS in token_rows(tab, DEFAULT_TOKENS)      # the defaults stand in
    no_exception(tab)


def test_two_students_never_see_each_others_data(app_server, student):
    path = heatmap_page()
    alice, bob = student(), student()
    open_page(alice, app_server, path, {"sentence": SENTENCE_A})
    open_page(bob, app_server, path)

    # both change their sentence at the same moment
    markers = [run_marker(t) for t in (alice, bob)]
    type_sentence(alice, SENTENCE_B, wait=False)
    type_sentence(bob, SENTENCE_C, wait=False)
    for tab, marker in zip((alice, bob), markers):
        wait_run_end(tab, marker)

    for tab, mine, theirs in ((alice, SENTENCE_B, SENTENCE_C), (bob, SENTENCE_C, SENTENCE_B)):
        rows = token_rows(tab, mine.split())
        assert mine.split() in rows, rows
        assert theirs.split() not in rows and SENTENCE_A.split() not in rows, rows
        expect(sentence_box(tab)).to_have_value(mine)
        assert query_of(tab).get("sentence") == mine
        no_exception(tab)

    # Alice moves a slider; Bob's page does not change, and a reload gives each their own view back
    slider = alice.get_by_role("slider", name="Softmax temperature")
    after_run(alice, lambda: (slider.focus(), slider.press("ArrowRight")))
    assert query_of(alice).get("temperature") == "1.05", alice.url
    assert "temperature" not in query_of(bob), bob.url
    for tab, mine in ((alice, SENTENCE_B), (bob, SENTENCE_C)):
        after_run(tab, lambda tab=tab: tab.reload(wait_until="domcontentloaded"), timeout_ms=60_000)
        assert mine.split() in token_rows(tab, mine.split())
        expect(sentence_box(tab)).to_have_value(mine)
        no_exception(tab)


def test_clicking_a_cell_shows_its_arithmetic(app_server, student):
    """A click on a heatmap cell reruns only its box (a fragment) and shows how that number was made,
    recomputed from its terms and equal to the cell; the rest of the page stays as it was."""
    tab = student()
    open_page(tab, app_server, "softmax", {"sentence": SENTENCE_C})
    token_rows(tab, SENTENCE_C.split())
    cells = tab.locator(CHART).first.locator("svg.marks g.mark-rect.role-mark path")       # the page's first heatmap
    n = len(SENTENCE_C.split())
    assert cells.count() >= n * n, cells.count()
    before = settled_count(tab.locator(CHART))      # the charts the run drew, once all have mounted
    # the cell of row 1, column 2 (cells are drawn row by row)
    after_run(tab, lambda: cells.nth(1 * n + 2).click())
    shown = tab.get_by_text("was made", exact=False)
    expect(shown.first).to_be_visible(timeout=15_000)
    text = shown.first.inner_text()
    assert "[1,2]" in text, text
    expect(tab.get_by_text("✓ recomputed from the terms above", exact=False).first).to_be_visible()
    assert settled_count(tab.locator(CHART)) == before
    no_exception(tab)


def test_clicking_a_gradient_cell_shows_its_chain_rule(app_server, student):
    """On the training step, a cell of ∂L/∂S is explained through its softmax-Jacobian terms."""
    import re

    tab = student()
    open_page(tab, app_server, "training_step")
    walk = tab.get_by_role("tab", name="3 · Through attention")       # the backward walk, a group per tab
    expect(walk).to_be_visible(timeout=60_000)
    after_run(tab, lambda: walk.click(), timeout_ms=60_000)
    heading = tab.get_by_role("heading", name=re.compile(r"^∂L\/∂Ŝ(\s|$)"))     # "/" escaped for the selector
    expect(heading.first).to_be_visible(timeout=60_000)
    box = tab.locator("[data-testid='stVerticalBlock']").filter(has=heading).last
    cells = box.locator(f"{CHART} svg.marks g.mark-rect.role-mark path")
    expect(cells.first).to_be_attached(timeout=30_000)
    n = int(cells.count() ** 0.5)
    assert n * n == cells.count() and n >= 3, cells.count()
    after_run(tab, lambda: cells.nth(1 * n + 2).click(), timeout_ms=60_000)
    shown = tab.get_by_text("was made", exact=False)
    expect(shown.first).to_be_visible(timeout=15_000)
    assert "dL/dŜ[1,2]" in shown.first.inner_text()
    expect(tab.get_by_text("✓ recomputed from the terms above", exact=False).first).to_be_visible()
    no_exception(tab)


def test_clicking_a_cell_on_the_grid_page_shows_its_value(app_server, student):
    """A trace that is not the forward pass's (the grid's "scores" is X q) shows the clicked value,
    never another trace's arithmetic or an error."""
    import re

    tab = student()
    open_page(tab, app_server, "grid")
    heading = tab.get_by_role("heading", name=re.compile(r"^Scores s"))
    expect(heading.first).to_be_visible(timeout=30_000)
    box = tab.locator("[data-testid='stVerticalBlock']").filter(has=heading).last
    cells = box.locator(f"{CHART} svg.marks g.mark-rect.role-mark path")
    expect(cells.first).to_be_attached(timeout=30_000)
    after_run(tab, lambda: cells.nth(3).click(), timeout_ms=60_000)
    expect(box.get_by_text("[3] =", exact=False).first).to_be_visible(timeout=15_000)
    no_exception(tab)


def test_the_table_view_explains_a_cell_from_the_keyboard(app_server, student):
    """Without a mouse on the heatmap: the table view's cells are selected with a click or the
    arrow keys, and the selected number is explained."""
    tab = student()
    open_page(tab, app_server, "softmax")
    token_rows(tab)
    first = click_table_cell(tab, tab, tab.get_by_text("Numbers as a table").last)   # the weights box
    expect(first).to_be_visible(timeout=15_000)
    before = first.inner_text()
    after_run(tab, lambda: tab.keyboard.press("ArrowRight"), timeout_ms=20_000)
    expect(tab.get_by_text("was made", exact=False).first).not_to_have_text(before, timeout=15_000)
    expect(tab.get_by_text("✓ recomputed from the terms above", exact=False).first).to_be_visible()
    no_exception(tab)


def test_a_real_models_head_is_one_click_away_and_explains_its_weights(app_server, student):
    """The real heads page (the servers' tiny Llama-style checkpoint, conftest.real_model_dir): a click on a head of
    the grid of every head steps through that head (the layer and head boxes follow), and a click on a cell of its
    weights shows the softmax with the model's numbers, checked against the cell in float32."""
    sentence = "the cat sat on the mat"
    tab = student()
    open_page(tab, app_server, "real_heads", {"sentence": sentence})
    grid = tab.locator(CHART).first.locator("svg.marks g.mark-rect.role-mark path")
    grid.first.wait_for(state="attached", timeout=30_000)                # the chart component mounts lazily
    per_head = grid.count() // 8                          # 2 layers × 4 heads, each the causal half of n × n
    assert per_head > 0 and grid.count() == 8 * per_head, grid.count()
    after_run(tab, lambda: grid.nth((1 * 4 + 2) * per_head).click())      # layer 1, head 2: its first cell
    expect(tab.get_by_text("Layer 1, head 2:", exact=False).first).to_be_visible(timeout=30_000)
    expect(tab.get_by_label("Layer l")).to_have_value("1")
    expect(tab.get_by_label("Head h")).to_have_value("2")
    weights = tab.get_by_text("Its attention weights", exact=False).first
    weights.scroll_into_view_if_needed()
    cells = tab.locator(f"{CHART}:below(:text('Its attention weights'))").first.locator(
        "svg.marks g.mark-rect.role-mark path")
    cells.first.wait_for(state="attached", timeout=30_000)
    n = round(cells.count() ** 0.5)                       # n × n: the head's weights, row by row
    assert n * n == cells.count() and n > 2, cells.count()
    after_run(tab, lambda: cells.nth(2 * n + 1).click())                  # query 2, key 1
    expect(tab.get_by_text("✓ recomputed from the terms above", exact=False).first).to_be_visible(timeout=30_000)
    assert "float32" in tab.get_by_text("✓ recomputed from the terms above", exact=False).first.inner_text()
    no_exception(tab)
