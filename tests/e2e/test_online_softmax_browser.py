"""/online_softmax in the browser: the block-size slider moved from the keyboard changes the count of scores
held at once as n_q × B_c says and the number of key blocks as ⌈n / B_c⌉ says; a number of the state table,
selected with a click, is explained with the recurrence and its live numbers."""
from __future__ import annotations

import re

try:
    from playwright.sync_api import expect
except ImportError:            # the fixtures skip, or fail under ATTENTION_EXPLORER_REQUIRE_BROWSER=1
    expect = None

from bench._common import EXCEPTION, after_run
from tests.e2e.conftest import open_page

SENTENCE = "the cat sat on a mat"           # n = 6


def held(tab) -> tuple[int, int]:
    """(B_c, n_q × B_c) as the memory paragraph prints them."""
    text = tab.get_by_text("score entries exist at a time", exact=False).first.inner_text()
    found = re.search(r"n_q × B_c = (\d+) × (\d+) = (\d+)", text)
    assert found, text
    n, b, product = map(int, found.groups())
    assert n == len(SENTENCE.split())
    return b, product


def test_block_size_slider_changes_what_is_held_and_the_blocks(app_server, student):
    tab = student()
    open_page(tab, app_server, "online_softmax", {"sentence": SENTENCE, "mask": "causal"})
    expect(tab.locator("h1")).to_have_text("FlashAttention's online softmax", timeout=30_000)
    assert held(tab) == (1, 6)
    slider = tab.get_by_role("slider", name="Block size B_c (keys per block)")
    expect(slider).to_be_visible()
    assert slider.bounding_box()["y"] < 768, "the main control is on the first screen"
    for b in (2, 3):
        after_run(tab, lambda: (slider.focus(), slider.press("ArrowRight")), timeout_ms=30_000)
        assert held(tab) == (b, 6 * b)
        blocks = tab.get_by_role("slider", name="Key block b")
        expect(blocks).to_have_attribute("max", str(-(-6 // b) - 1))
    # with the causal mask and B = 3: of the 2 × 2 tiles, the one above the diagonal is skipped
    expect(tab.get_by_text("1 of the 4 tiles has every score masked", exact=False).first).to_be_visible()
    assert tab.locator(EXCEPTION).count() == 0


def test_a_number_of_the_state_table_is_explained(app_server, student):
    tab = student()
    open_page(tab, app_server, "online_softmax", {"sentence": SENTENCE})
    grid = tab.locator("[data-testid='stDataFrame']").first
    grid.scroll_into_view_if_needed()
    box = grid.bounding_box()
    # the first data row, the column "m_i′" (the second of the table's data columns)
    after_run(tab, lambda: tab.mouse.click(box["x"] + 150, box["y"] + 55), timeout_ms=20_000)
    made = tab.get_by_text("was made", exact=False).first
    expect(made).to_be_visible(timeout=15_000)
    expect(made).to_contain_text(re.compile(r"How m_0'? was made"))          # row 0 of an m column
    expect(tab.get_by_text("✓ recomputed from the terms above", exact=False).first).to_be_visible()
    assert tab.locator(EXCEPTION).count() == 0


S_B_CELLS = "[class*='st-key-side-xp-online_softmax-hm-s_b'] svg.marks g.mark-rect.role-mark path"


def view_of(tab) -> dict:
    """What the round trip compares: the three own controls, the block's heading, the explanation of the clicked
    cell, and the sentence with the live check."""
    values = {name: tab.get_by_role("slider", name=name).input_value()
              for name in ("Block size B_c (keys per block)", "Key block b", "Head h")}
    made = tab.get_by_text("was made", exact=False).first
    expect(made).to_be_visible(timeout=20_000)
    box = tab.locator("[class*='st-key-xp-online_softmax-hm-s_b']").first
    return {**values, "heading": tab.locator("h3").filter(has_text="Block").first.inner_text(),
            "explanation": box.inner_text(),
            "check": tab.get_by_text("The same as the plain softmax", exact=False).first.inner_text()}


def test_a_view_with_rope_causal_two_heads_and_a_clicked_cell_round_trips_through_its_link(app_server, student):
    """Sidebar RoPE + causal + 2 heads (by URL), then B = 2, b = 1 and head h = 1 with the keyboard, then a click
    on a cell of S_b: the address bar's link, opened in a fresh browser context (a new session), shows the same
    controls, the same explanation with the same numbers and the same check."""
    tab = student()
    open_page(tab, app_server, "online_softmax", {"positional": "rope", "mask": "causal", "n_heads": "2"})
    expect(tab.locator("h1")).to_have_text("FlashAttention's online softmax", timeout=30_000)
    for name in ("Block size B_c (keys per block)", "Head h"):
        slider = tab.get_by_role("slider", name=name)
        after_run(tab, lambda: (slider.focus(), slider.press("ArrowRight")), timeout_ms=30_000)
    expect(tab.get_by_role("slider", name="Key block b")).to_have_value("1")
    cells = tab.locator(S_B_CELLS)
    # S_1: 4 queries × keys 2, 3 under the causal mask: only (2, 2), (3, 2), (3, 3) are finite (drawn as cells)
    expect(cells).to_have_count(3, timeout=30_000)
    cells.nth(1).scroll_into_view_if_needed()
    after_run(tab, lambda: cells.nth(1).click(), timeout_ms=30_000)
    before = view_of(tab)
    assert before["Block size B_c (keys per block)"] == "2" and before["Key block b"] == "1" and before["Head h"] == "1"
    assert "Block 1: keys 2 … 3" in before["heading"]
    assert "S_1[3,2]" in before["explanation"] and "q^R" in before["explanation"]
    link = tab.url
    for part in ("positional=rope", "mask=causal", "n_heads=2", "online_softmax.block_size=2",
                 "online_softmax.head=1", "cell=online_softmax.hm.s_b.3.0"):
        assert part in link, (part, link)
    fresh = student()                                               # a new context: its own session
    after_run(fresh, lambda: fresh.goto(link, wait_until="domcontentloaded"), timeout_ms=60_000)
    expect(fresh.locator("h1")).to_have_text("FlashAttention's online softmax", timeout=30_000)
    assert view_of(fresh) == before
    assert fresh.locator(EXCEPTION).count() == 0 and tab.locator(EXCEPTION).count() == 0
