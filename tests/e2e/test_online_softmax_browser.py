"""/online_softmax in the browser: the block-size slider moved from the keyboard changes the count of scores
held at once as n_q × B says and the number of key blocks as ⌈n / B⌉ says; a number of the state table,
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
    """(B, n_q × B) as the memory paragraph prints them."""
    text = tab.get_by_text("score entries exist at a time", exact=False).first.inner_text()
    found = re.search(r"n_q × B = (\d+) × (\d+) = (\d+)", text)
    assert found, text
    n, b, product = map(int, found.groups())
    assert n == len(SENTENCE.split())
    return b, product


def test_block_size_slider_changes_what_is_held_and_the_blocks(app_server, student):
    tab = student()
    open_page(tab, app_server, "online_softmax", {"sentence": SENTENCE, "mask": "causal"})
    expect(tab.locator("h1")).to_have_text("FlashAttention's online softmax", timeout=30_000)
    assert held(tab) == (1, 6)
    slider = tab.get_by_role("slider", name="Block size B (keys per block)")
    expect(slider).to_be_visible()
    assert slider.bounding_box()["y"] < 768, "the main control is on the first screen"
    for b in (2, 3):
        after_run(tab, lambda: (slider.focus(), slider.press("ArrowRight")), timeout_ms=30_000)
        assert held(tab) == (b, 6 * b)
        blocks = tab.get_by_role("slider", name="Key block b")
        expect(blocks).to_have_attribute("max", str(-(-6 // b) - 1))
    # with the causal mask and B = 3: of the 2 × 2 tiles, the one above the diagonal is skipped
    expect(tab.get_by_text("1 of the 4 tiles have every score masked", exact=False).first).to_be_visible()
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
