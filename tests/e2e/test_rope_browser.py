"""/rope in the browser: the position slider turns the drawn pair by θ_0 = 1 radian per step, the shift slider
moves every angle but leaves the scores as they were, and a clicked angle shows p·θ_i with its numbers."""
from __future__ import annotations

import re

import pytest

try:
    from playwright.sync_api import expect
except ImportError:            # the fixtures skip, or fail under ATTENTION_EXPLORER_REQUIRE_BROWSER=1
    expect = None

from bench._common import CHART, EXCEPTION, Server, after_run, new_context, wait_for_charts
from tests.e2e.conftest import open_page, require_browser


@pytest.fixture(scope="module")
def rope_server():
    require_browser()
    server = Server("app.py", port=None).start()
    try:
        server.wait_healthy(90)
        yield server
    finally:
        server.stop()


def turned(tab) -> tuple[int, float]:
    """(p, angle) from the pair's caption: 'placed at position p = 3, its pair 0 turned by 3.000 rad'."""
    text = tab.get_by_text("placed at position p =", exact=False).first.inner_text()
    m = re.search(r"position p = (\d+), its pair (\d+) turned by ([0-9.]+) rad", text)
    assert m, text
    return int(m.group(1)), float(m.group(3))


def shift_gaps(tab) -> tuple[float, float]:
    text = tab.get_by_text("the rotated rows move", exact=False).first.inner_text()
    rope = float(re.search(r"max \|ΔŜ\| = ([0-9.e+-]+)", text).group(1))
    return float(re.search(r"max \|ΔQ\^R\| = ([0-9.e+-]+)", text).group(1)), rope


def test_sliders_turn_the_pair_and_keep_the_scores(rope_server, chromium):
    ctx = new_context(chromium)
    try:
        tab = ctx.new_page()
        open_page(tab, rope_server, "rope")
        expect(tab.locator("h1")).to_have_text("RoPE: rotary positions", timeout=30_000)
        wait_for_charts(tab, lambda cs: len([c for c in cs if c["visible"] and c["rendered"]]) >= 3, timeout_ms=60_000)
        assert turned(tab) == (3, 3.0)                                     # pair 0 turns 1 radian per position

        slider = tab.get_by_role("slider", name="Position p")
        after_run(tab, lambda: (slider.focus(), slider.press("ArrowRight")))
        expect(tab.get_by_text("placed at position p = 4", exact=False).first).to_be_visible(timeout=15_000)
        assert turned(tab) == (4, 4.0)

        rot_before, rope_before = shift_gaps(tab)
        offset = tab.get_by_role("slider", name="Shift the whole sentence by (positions p + offset)")
        offset.scroll_into_view_if_needed()
        after_run(tab, lambda: (offset.focus(), offset.press("ArrowRight")))   # 100 -> 101
        tab.wait_for_timeout(300)
        rot_after, rope_after = shift_gaps(tab)
        assert rot_after != rot_before                                     # the rotated rows moved …
        assert rope_before < 1e-12 and rope_after < 1e-12                  # … the scores did not

        angles = tab.locator(CHART).first.locator("svg.marks g.mark-rect.role-mark path")
        angles.first.scroll_into_view_if_needed()
        after_run(tab, lambda: angles.nth(2 * 2 + 0).click())                # row 2 ("you"), pair 0
        shown = tab.get_by_text("was made", exact=False)
        expect(shown.first).to_be_visible(timeout=15_000)
        expect(tab.get_by_text("stands at position p = 2", exact=False).first).to_be_visible()
        expect(tab.get_by_text("✓ made again from its formula or source", exact=False).first).to_be_visible()
        assert tab.locator(EXCEPTION).count() == 0
    finally:
        ctx.close()
