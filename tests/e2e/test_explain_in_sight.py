"""Every click answers in sight: a clicked heatmap cell's arithmetic appears on screen (beside the
chart, or scrolled into view), at a laptop's 1366 × 768, and charts fit their cards.

One server for the module; each test a fresh browser context (its own session)."""
from __future__ import annotations

import pytest

try:
    from playwright.sync_api import expect
except ImportError:            # the fixtures skip, or fail under ATTENTION_EXPLORER_REQUIRE_BROWSER=1
    expect = None


from bench._common import CHART, EXCEPTION, after_run, wait_for_charts
from tests.e2e.conftest import click_table_cell
from tests.e2e.conftest import open_page as go

CELLS = "svg.marks g.mark-rect.role-mark path"


def open_page(tab, server, path: str, query: dict | None = None) -> None:
    go(tab, server, path, query)
    wait_for_charts(tab)


def in_viewport(tab, locator) -> dict:
    """The locator's box and whether all of it lies inside the viewport."""
    box = locator.bounding_box()
    view = tab.viewport_size
    inside = (box is not None and box["y"] >= -1 and box["x"] >= -1                 # 1 px for sub-pixel layout
              and box["y"] + box["height"] <= view["height"] + 1 and box["x"] + box["width"] <= view["width"] + 1)
    return {"box": box, "view": view, "inside": inside}


def box_of(tab, heading: str):
    """The bordered card whose heading starts with `heading`."""
    import re
    title = tab.get_by_role("heading", name=re.compile("^" + re.escape(heading)))
    expect(title.first).to_be_visible(timeout=30_000)
    return tab.locator("[data-testid='stVerticalBlock']").filter(has=title).last


def click_cell(tab, card, index: int) -> None:
    cells = card.locator(f"{CHART} {CELLS}")
    expect(cells.first).to_be_attached(timeout=30_000)
    cells.nth(index).scroll_into_view_if_needed()
    after_run(tab, lambda: cells.nth(index).click(), timeout_ms=30_000)


def test_a_clicked_score_is_explained_in_the_viewport(app_server, laptop):
    """On /scores ("All words"), a click on the scaled scores' last row shows how that number was
    made, inside the 1366 × 768 viewport right after the click, with the cell's own indices."""
    tab = laptop()
    open_page(tab, app_server, "scores", {"sentence": "they hate me"})
    # the tab is lazy: opening it reruns the page, which draws its step boxes only now
    after_run(tab, lambda: tab.get_by_role("tab", name="All words").click())
    card = box_of(tab, "Scaled scores")
    click_cell(tab, card, 2 * 3 + 1)                     # row 2, column 1 of the 3 × 3 scores
    shown = card.get_by_text("was made", exact=False).first
    expect(shown).to_be_visible(timeout=15_000)
    assert "[2,1]" in shown.inner_text()
    tab.wait_for_timeout(600)                          # the scroll helper runs 60 and 400 ms after drawing
    explanation = card.locator("[class*='st-key-xp-']").first
    where = in_viewport(tab, explanation)
    assert where["inside"], where
    # beside the chart: the explanation starts to the right of the heatmap, not under it
    chart = card.locator(CHART).first.bounding_box()
    assert where["box"]["x"] >= chart["x"] + chart["width"] - 1, (where["box"], chart)
    assert tab.locator(EXCEPTION).count() == 0


def test_a_table_cell_is_explained_in_the_viewport(app_server, laptop):
    """The table view's selected cell is explained the same way, on screen."""
    tab = laptop()
    open_page(tab, app_server, "softmax", {"sentence": "they hate me"})
    card = box_of(tab, "Attention weights")
    shown = click_table_cell(tab, card, card.get_by_text("Numbers as a table"), 0.6)
    expect(shown).to_be_visible(timeout=15_000)
    tab.wait_for_timeout(600)
    where = in_viewport(tab, card.locator("[class*='st-key-xp-']").first)
    assert where["inside"], where
    assert tab.locator(EXCEPTION).count() == 0


def test_a_click_in_a_half_width_card_scrolls_its_explanation_into_view(app_server, laptop):
    """/softmax with a causal mask has two cards side by side; the explanation goes under the
    chart there and is scrolled into the viewport."""
    tab = laptop()
    open_page(tab, app_server, "softmax", {"mask": "causal", "sentence": "the cat sat on a mat"})
    card = box_of(tab, "Masked scores")
    cells = card.locator(f"{CHART} {CELLS}")
    expect(cells.first).to_be_attached(timeout=30_000)
    # the last row, column 4 (row by row; the −∞ cells of the causal mask may be left undrawn)
    click_cell(tab, card, {36: 5 * 6 + 4, 21: 15 + 4}[cells.count()])
    shown = card.get_by_text("was made", exact=False).first
    expect(shown).to_be_visible(timeout=15_000)
    assert "[5,4]" in shown.inner_text()
    tab.wait_for_timeout(600)
    where = in_viewport(tab, card.locator("[class*='st-key-xp-']").first)
    assert where["inside"], where
    assert tab.locator(EXCEPTION).count() == 0


FORMULAS_JS = """() => Array.from(document.querySelectorAll("[class*='st-key-xp-'] .katex-display")).map(d => {
  const cs = getComputedStyle(d);
  return {wider: d.scrollWidth > d.clientWidth + 1, fade: (cs.maskImage || cs.webkitMaskImage || 'none') !== 'none',
          overflow: cs.overflowX};
})"""


def test_a_clicked_head_cell_stays_on_screen_with_its_arithmetic_under_its_row(app_server, laptop):
    """/block_gradients, ∂L/∂A of layer 1 on a 10-word sentence (4 heads, 2 a row): a click on head 0's first row
    leaves that cell on the 1366 × 768 screen, and its arithmetic appears under heads 0 and 1, above heads 2 and 3
    (it used to land below all four and the scroll to it took the cell 340 px above the top). Its long sum is wider
    than the box: it fades out at the right edge until scrolled to its end (a formula that fits does not)."""
    tab = laptop()
    open_page(tab, app_server, "block_gradients",
              {"block_gradients.step": 9, "sentence": "the cat sat on a mat and ate some fish"})
    heads = tab.locator(CHART).filter(has=tab.locator(CELLS))
    expect(heads.nth(3)).to_be_visible(timeout=30_000)
    cell = heads.first.locator(CELLS).nth(5)                 # head 0, row 0 (“the”), column 5
    cell.scroll_into_view_if_needed()
    after_run(tab, lambda: cell.click(), timeout_ms=30_000)
    shown = tab.get_by_text("was made", exact=False).first
    expect(shown).to_be_visible(timeout=15_000)
    assert "[0,0,5]" in shown.inner_text()
    tab.wait_for_timeout(600)                                # the scroll helper runs 60 and 400 ms after drawing
    header = tab.locator("[data-testid='stHeader']").bounding_box()
    box = cell.bounding_box()
    assert box["y"] >= header["y"] + header["height"] - 1 and box["y"] + box["height"] <= 768, box
    explanation = tab.locator("[class*='st-key-xp-']").first.bounding_box()
    assert explanation["y"] < 768, explanation               # its start is on screen, under the clicked cell
    first_row, second_row = heads.nth(0).bounding_box(), heads.nth(2).bounding_box()
    assert first_row["y"] + first_row["height"] <= explanation["y"] < second_row["y"], (explanation, second_row)
    formulas = tab.evaluate(FORMULAS_JS)
    assert [f["overflow"] for f in formulas] == ["auto"] and formulas[0]["wider"] and formulas[0]["fade"], formulas
    tab.evaluate("() => document.querySelectorAll(\"[class*='st-key-xp-'] .katex-display\")"
                 ".forEach(d => d.scrollLeft = d.scrollWidth)")
    tab.wait_for_timeout(200)
    assert not tab.evaluate(FORMULAS_JS)[0]["fade"]          # scrolled to its end: nothing more to the right
    assert tab.locator(EXCEPTION).count() == 0


def test_a_formula_that_fits_does_not_fade(app_server, laptop):
    """/masks' causal mask, its clicked cell: a short formula, no fade."""
    tab = laptop()
    open_page(tab, app_server, "masks", {"sentence": "they hate me", "mask": "causal"})
    card = box_of(tab, "Mask")
    click_cell(tab, card, 1)
    expect(card.get_by_text("was made", exact=False).first).to_be_visible(timeout=15_000)
    formulas = tab.evaluate(FORMULAS_JS)
    assert formulas and not any(f["wider"] or f["fade"] for f in formulas), formulas


OVERFLOW_JS = """() => Array.from(document.querySelectorAll("[data-testid='stVegaLiteChart'] svg.marks")).map(svg => {
  const r = svg.getBoundingClientRect();
  const box = (svg.closest("[data-testid='stColumn']") || svg.closest("[data-testid='stMainBlockContainer']")
               || document.body).getBoundingClientRect();
  return {right: r.right, limit: box.right, width: r.width, visible: r.width > 0};
}).filter(c => c.visible)"""


def presenter_on(tab) -> None:
    """The switch over the title (ui/presenter.py)."""
    toggle = tab.locator("[data-testid='stMain']").get_by_text("Presenter mode").first
    after_run(tab, lambda: toggle.click())


@pytest.mark.parametrize("width", [1024, 1920])
def test_presenter_charts_fit_their_cards(app_server, laptop, width):
    """Presenter mode on /softmax with a causal mask (two heatmaps side by side in columns): at
    1024 px and 1920 px every chart ends inside its column (the mask heatmap used to spill out)."""
    tab = laptop({"width": width, "height": 900})
    open_page(tab, app_server, "softmax", {"mask": "causal"})
    presenter_on(tab)
    found = wait_for_charts(tab, lambda cs: len([c for c in cs if c["rendered"]]) >= 3)
    assert len(found) >= 3
    tab.wait_for_timeout(500)
    sizes = tab.evaluate(OVERFLOW_JS)
    assert len(sizes) >= 3, sizes
    spills = [s for s in sizes if s["right"] > s["limit"] + 1]
    assert not spills, spills
    assert tab.locator(EXCEPTION).count() == 0
