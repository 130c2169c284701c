"""/rope in the browser: the position slider turns the drawn pair by θ_0 = 1 radian per step, the shift slider
moves every angle but leaves the scores as they were, a clicked cell shows its arithmetic; and a non-default view
(the sidebar's RoPE and base 500,000, Half pairing, a shift, the Keys tab, a clicked cell of K^R) round-trips
through its link into a fresh browser context with the same controls and the same numbers."""
from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit


try:
    from playwright.sync_api import expect
except ImportError:            # the fixtures skip, or fail under ATTENTION_EXPLORER_REQUIRE_BROWSER=1
    expect = None

from bench._common import CHART, EXCEPTION, after_run, new_context, wait_for_charts
from tests.e2e.conftest import open_page



def turned(tab) -> tuple[int, float]:
    """(p, angle) from the pair's caption: '… placed at position p = 3, its pair 0 (…) turned by 3.000 rad'."""
    text = tab.get_by_text("placed at position p =", exact=False).first.inner_text()
    m = re.search(r"position p = (\d+), its pair (\d+) \([^)]*\) turned by ([0-9.]+) rad", text)
    assert m, text
    return int(m.group(1)), float(m.group(3))


def shift_gaps(tab) -> tuple[float, float]:
    text = tab.get_by_text("the rotated rows move", exact=False).first.inner_text()
    rope = float(re.search(r"max \|ΔŜ\| = ([0-9.e+-]+)", text).group(1))
    return float(re.search(r"max \|ΔQ\^R\| = ([0-9.e+-]+)", text).group(1)), rope


def charts_drawn(tab, at_least: int) -> None:
    wait_for_charts(tab, lambda cs: len([c for c in cs if c["visible"] and c["rendered"]]) >= at_least,
                    timeout_ms=60_000)


def cells(tab, chart: int):
    """The cell marks of the page's chart number `chart` (row-major: cell (i, j) is nth(i · columns + j))."""
    return tab.locator(CHART).nth(chart).locator("svg.marks g.mark-rect.role-mark path")


def test_sliders_turn_the_pair_and_keep_the_scores(own_server, chromium):
    ctx = new_context(chromium)
    try:
        tab = ctx.new_page()
        open_page(tab, own_server, "rope", {"positional": "rope"})
        expect(tab.locator("h1")).to_have_text("RoPE: rotary positions", timeout=30_000)
        charts_drawn(tab, 3)
        assert turned(tab) == (3, 3.0)                                     # pair 0 turns 1 radian per position

        slider = tab.get_by_role("slider", name="Position p")
        after_run(tab, lambda: (slider.focus(), slider.press("ArrowRight")))
        expect(tab.get_by_text("placed at position p = 4", exact=False).first).to_be_visible(timeout=15_000)
        assert turned(tab) == (4, 4.0)

        rot_before, rope_before = shift_gaps(tab)
        offset = tab.get_by_role("slider", name="Shift the whole sentence by (positions p + offset)")
        offset.scroll_into_view_if_needed()
        after_run(tab, lambda: (offset.focus(), offset.press("ArrowRight")))   # 100 -> 101
        expect(tab.get_by_text("turns 101·θ_i further", exact=False).first).to_be_visible(timeout=15_000)
        rot_after, rope_after = shift_gaps(tab)
        assert rot_after != rot_before                                     # the rotated rows moved …
        assert rope_before < 1e-12 and rope_after < 1e-12                  # … the scores did not

        angles = cells(tab, 0)
        angles.first.scroll_into_view_if_needed()
        after_run(tab, lambda: angles.nth(2 * 2 + 0).click())                # row 2 ("you"), pair 0
        expect(tab.get_by_text("stands at position p = 2", exact=False).first).to_be_visible(timeout=15_000)
        expect(tab.get_by_text("✓ made again from its formula or source", exact=False).first).to_be_visible()
        assert tab.locator(EXCEPTION).count() == 0
    finally:
        ctx.close()


def view(tab) -> dict:
    """What the round trip compares: the controls, the open tab, the clicked cell's explanation and numbers."""
    explanation = tab.get_by_text("this cell is its", exact=False).first          # the clicked cell's note
    expect(explanation).to_be_visible(timeout=30_000)
    check = tab.get_by_text("✓ recomputed from the terms above", exact=False).first
    return {"half": tab.get_by_role("switch", name=re.compile("Half pairing")).is_checked(),
            "offset": tab.locator("[data-testid='stSlider']").filter(has_text="Shift the whole sentence").first
            .locator("[data-testid='stSliderThumbValue']").inner_text(),
            "tab": tab.get_by_role("tab", selected=True).first.inner_text(),
            "explanation": explanation.inner_text(), "check": check.inner_text(),
            "base": tab.get_by_text("in θ", exact=False).first.inner_text()[:40]}


def test_a_view_round_trips_through_its_link_into_a_fresh_browser(own_server, chromium):
    """The sidebar's RoPE and base 500,000 (by URL), Half pairing, a shift, the Keys tab and a clicked cell of K^R
    (by hand); then tab.url in a fresh context: the same controls, the same explanation, the same numbers."""
    ctx = new_context(chromium)
    try:
        tab = ctx.new_page()
        open_page(tab, own_server, "rope", {"positional": "rope", "pe_base": "500000"})
        expect(tab.locator("h1")).to_have_text("RoPE: rotary positions", timeout=30_000)
        charts_drawn(tab, 3)
        half = tab.locator("[data-testid='stCheckbox']").filter(has_text="Half pairing").first
        after_run(tab, lambda: half.click())
        expect(tab.get_by_role("switch", name=re.compile("Half pairing"))).to_be_checked()
        offset = tab.get_by_role("slider", name=re.compile("Shift the whole sentence"))
        offset.scroll_into_view_if_needed()
        for _ in range(3):                                                 # 100 -> 103
            after_run(tab, lambda: (offset.focus(), offset.press("ArrowRight")))
        expect(tab.get_by_text("turns 103·θ_i further", exact=False).first).to_be_visible(timeout=15_000)
        keys = tab.get_by_role("tab", name=re.compile("Keys"))
        keys.scroll_into_view_if_needed()
        after_run(tab, lambda: keys.click())
        expect(tab.get_by_text("K rotated: K^R", exact=False).first).to_be_visible(timeout=15_000)
        charts_drawn(tab, 5)
        k_rot = cells(tab, 3)                                              # angles, pair, K, K^R, Ŝ
        k_rot.first.scroll_into_view_if_needed()
        after_run(tab, lambda: k_rot.nth(2 * 4 + 3).click())                 # K^R[2, 3]
        before = view(tab)
        assert before["half"] and before["offset"] == "103" and before["tab"].startswith("Keys")
        assert "Row 2 (“you”) stands at position p = 2. Its pair 1 is columns (1, 3) in the half pairing" \
            in before["explanation"]
        assert "500,000" in before["base"]
        url = tab.url
        params = {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}
        assert {"positional": "rope", "pe_base": "500000", "rope.half": "1", "rope.offset": "103",
                "rope.qk": "1"}.items() <= params.items(), params
        assert re.fullmatch(r"rope\.hm:k_rot:None\.2\.3", params.get("cell", "")), params
    finally:
        ctx.close()

    fresh = new_context(chromium)                                          # another student: no shared session
    try:
        tab = fresh.new_page()
        after_run(tab, lambda: tab.goto(url, wait_until="domcontentloaded"), timeout_ms=60_000)
        expect(tab.locator("h1")).to_have_text("RoPE: rotary positions", timeout=30_000)
        charts_drawn(tab, 5)
        after = view(tab)
        assert after == before
        assert tab.locator(EXCEPTION).count() == 0
    finally:
        fresh.close()
