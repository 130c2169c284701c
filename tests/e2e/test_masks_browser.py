"""/masks in the browser: choose the sliding window, move W, and the two readings' masks gain the keys the
math says (W keys counting the query: n − W more ones per step; W + 1 keys: one step ahead); at W = n the
page says the window equals the causal mask; the sink makes the row sums drop below 1."""
from __future__ import annotations

import re

try:
    from playwright.sync_api import expect
except ImportError:            # the fixtures skip, or fail under ATTENTION_EXPLORER_REQUIRE_BROWSER=1
    expect = None

from bench._common import CHART, EXCEPTION, after_run, wait_for_charts
from tests.e2e.conftest import open_page

SENTENCE = "the cat sat on a mat"            # common words: none dropped, n = 6
N = 6


def ones_in_window(n: int, w: int) -> int:
    """Entries of the sliding-window mask (0 ≤ i − j < w) that are 1."""
    return sum(min(i + 1, w) for i in range(n))


def mask_charts(tab) -> list[dict]:
    """The two mask heatmaps (W, then W + 1), drawn: their cell texts are 0 and 1 only."""
    def ok(cs):
        drawn = [c for c in cs if c["visible"] and c["rendered"] and c["y"] == SENTENCE.split()]
        return len(drawn) >= 3
    found = [c for c in wait_for_charts(tab, ok, timeout_ms=60_000) if c["visible"] and c["rendered"]]
    return [c for c in found if c["y"] == SENTENCE.split() and set(c["texts"]) - set(SENTENCE.split())
            <= {"0", "1", "key (token)", "query (token)"}][:2]


def ones(chart: dict) -> int:
    return chart["texts"].count("1")


def test_moving_the_window_adds_the_keys_the_math_says(app_server, student):
    tab = student()
    open_page(tab, app_server, "masks", {"sentence": SENTENCE})
    expect(tab.locator("h1")).to_have_text("Masks & biases", timeout=30_000)
    choice = tab.locator("[data-testid='stButtonGroup'] button").filter(has_text="sliding window")
    after_run(tab, lambda: choice.first.click(), timeout_ms=60_000)
    slider = tab.get_by_role("slider", name="Window W")
    expect(slider).to_have_attribute("aria-valuetext", "3", timeout=30_000)
    w, w1 = mask_charts(tab)
    assert (ones(w), ones(w1)) == (ones_in_window(N, 3), ones_in_window(N, 4)), (w["texts"], w1["texts"])

    for new in (4, 5, 6):
        after_run(tab, lambda: (slider.focus(), slider.press("ArrowRight")), timeout_ms=60_000)
        expect(slider).to_have_attribute("aria-valuetext", str(new), timeout=30_000)
        tab.wait_for_timeout(300)
        w, w1 = mask_charts(tab)
        assert ones(w) == ones_in_window(N, new) and ones(w1) == ones_in_window(N, new + 1), (new, ones(w), ones(w1))
    assert ones(w) == N * (N + 1) // 2                          # W = n: the causal mask's n(n + 1)/2 ones
    expect(tab.get_by_text("equals the causal mask", exact=False)).to_be_visible(timeout=30_000)
    assert tab.locator(EXCEPTION).count() == 0


def test_the_sink_takes_a_share_of_every_row(app_server, student):
    tab = student()
    open_page(tab, app_server, "masks", {"sentence": SENTENCE})
    expect(tab.get_by_text("Every row of A sums to 1", exact=False)).to_be_visible(timeout=30_000)
    sink = tab.locator("[data-testid='stCheckbox']").filter(has_text="Sink")
    after_run(tab, lambda: sink.first.click(), timeout_ms=60_000)
    expect(tab.get_by_text("with a sink every row sums to less than 1", exact=False)).to_be_visible(timeout=30_000)
    expect(tab.get_by_text("Every row of A sums to 1", exact=False)).to_have_count(0)
    # the row-sums heatmap: one column of sums, one of the sink's shares, each pair adding to 1
    found = wait_for_charts(tab, lambda cs: any(c["x"] == ["Σ_j A_ij", "sink share"] for c in cs if c["rendered"]),
                            timeout_ms=60_000)
    sums = next(c for c in found if c["x"] == ["Σ_j A_ij", "sink share"])
    values = [float(t) for t in sums["texts"] if re.fullmatch(r"\d\.\d\d", t)]        # the cells (legend: 0, 0.5, 1)
    assert len(values) == 2 * N and all(abs(values[2 * i] + values[2 * i + 1] - 1) <= 0.011 for i in range(N)), values
    assert any(0.05 < v < 0.95 for v in values), values     # z_h starts where the sink and the keys share a row
    assert tab.locator(CHART).count() >= 5 and tab.locator(EXCEPTION).count() == 0


def test_clicking_a_bias_cell_shows_minus_m_h_times_the_distance(app_server, student):
    """With ALiBi on (H = 8, head 0: m_0 = 1/2), cell (4, 1) of B_0 is explained as −m_0·(4 − 1) = −1.5."""
    import re

    tab = student()
    open_page(tab, app_server, "masks", {"sentence": SENTENCE})
    alibi = tab.locator("[data-testid='stCheckbox']").filter(has_text="ALiBi")
    after_run(tab, lambda: alibi.first.click(), timeout_ms=60_000)
    heading = tab.get_by_role("heading", name=re.compile(r"^ALiBi bias B_0"))
    expect(heading.first).to_be_visible(timeout=60_000)
    box = tab.locator("[data-testid='stVerticalBlock']").filter(has=heading).last
    cells = box.locator(f"{CHART} svg.marks g.mark-rect.role-mark path")
    expect(cells.first).to_be_attached(timeout=30_000)
    assert cells.count() == N * N, cells.count()
    after_run(tab, lambda: cells.nth(4 * N + 1).click(), timeout_ms=60_000)      # row 4, column 1
    shown = tab.get_by_text("was made", exact=False)
    expect(shown.first).to_be_visible(timeout=15_000)
    assert "B_0[4,1]" in shown.first.inner_text()
    expect(tab.get_by_text("Key 1 is 3 tokens before query 4", exact=False).first).to_be_visible()
    expect(tab.get_by_text("✓ recomputed from the terms above: -1.5; the cell holds -1.5", exact=False).first).to_be_visible()
    assert tab.locator(EXCEPTION).count() == 0
