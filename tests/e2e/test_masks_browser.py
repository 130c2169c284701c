"""/masks in the browser: a non-default view (the sidebar's Position = ALiBi with 6 heads and a window of W = 2
keys, head 4 shown, the sink on at a z_h of its own, the "Causal or window" comparison open, a clicked cell of
B_4) travels in the address bar: the same link opened in a fresh browser context shows the same controls, the
same tab and the same explanation; and the sink takes a share of every row."""
from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit

try:
    from playwright.sync_api import expect
except ImportError:            # the fixtures skip, or fail under ATTENTION_EXPLORER_REQUIRE_BROWSER=1
    expect = None

from bench._common import CHART, EXCEPTION, after_run, wait_for_charts
from tests.e2e.conftest import open_page

SENTENCE = "the cat sat on a mat"            # common words: none dropped, n = 6
N = 6
SIDEBAR = {"sentence": SENTENCE, "positional": "alibi", "n_heads": "6", "mask": "sliding_window", "window": "2"}


def press(tab, slider, key: str, times: int) -> None:
    for _ in range(times):
        after_run(tab, lambda: (slider.focus(), slider.press(key)), timeout_ms=60_000)


def bias_box(tab):
    heading = tab.get_by_role("heading", name=re.compile(r"^ALiBi bias B_4"))
    expect(heading.first).to_be_visible(timeout=60_000)
    return tab.locator("[data-testid='stVerticalBlock']").filter(has=heading).last


def view(tab) -> dict:
    """What the learner sees of the view: the controls, the open comparison, the explanation."""
    box = bias_box(tab)
    shown = box.get_by_text("was made", exact=False).first
    expect(shown).to_be_visible(timeout=30_000)
    explanation = box.locator("[class*='st-key-xp-']").first
    return {"head": tab.get_by_role("slider", name="Head h shown").get_attribute("aria-valuetext"),
            "sink": tab.get_by_role("slider", name="Sink logit z_h").get_attribute("aria-valuetext"),
            "sink_on": tab.locator("[data-testid='stCheckbox']").filter(has_text="Sink").locator("input").first.is_checked(),
            "tab": tab.get_by_role("tab", selected=True).inner_text().strip(),
            "explanation": explanation.inner_text().strip()}


def test_a_link_reopens_the_same_view_in_a_fresh_browser(app_server, student):
    tab = student()
    open_page(tab, app_server, "masks", SIDEBAR)
    expect(tab.locator("h1")).to_have_text("Masks & biases", timeout=30_000)
    head = tab.get_by_role("slider", name="Head h shown")
    expect(head).to_have_attribute("aria-valuetext", "0", timeout=30_000)
    press(tab, head, "End", 1)                                              # head 5, then one notch back: 4
    press(tab, head, "ArrowLeft", 1)
    expect(head).to_have_attribute("aria-valuetext", "4", timeout=30_000)
    sink = tab.locator("[data-testid='stCheckbox']").filter(has_text="Sink")
    after_run(tab, lambda: sink.first.click(), timeout_ms=60_000)
    z = tab.get_by_role("slider", name="Sink logit z_h")
    expect(z).to_be_visible(timeout=30_000)
    start = float(z.get_attribute("aria-valuetext"))
    press(tab, z, "ArrowRight", 1)                                          # one step of 0.5: a z_h of its own
    expect(z).to_have_attribute("aria-valuetext", f"{start + 0.5:.2f}", timeout=30_000)
    after_run(tab, lambda: tab.get_by_role("tab", name="Causal or window").click(), timeout_ms=60_000)
    expect(tab.get_by_role("heading", name=re.compile(r"^Window of W = 2 keys"))).to_be_visible(timeout=30_000)

    box = bias_box(tab)                                                     # B_4's cell (4, 1): −m_4·|4 − 1| = −1.5
    cells = box.locator(f"{CHART} svg.marks g.mark-rect.role-mark path")
    expect(cells.first).to_be_attached(timeout=30_000)
    assert cells.count() == N * N, cells.count()
    after_run(tab, lambda: cells.nth(4 * N + 1).click(), timeout_ms=60_000)
    expect(box.get_by_text("Key 1 is 3 tokens from query 4", exact=False).first).to_be_visible(timeout=15_000)
    expect(box.get_by_text("the cell holds -1.5", exact=False).first).to_be_visible()
    before = view(tab)
    assert before["head"] == "4" and before["sink_on"] and before["tab"] == "Causal or window", before

    url = tab.url
    params = {k: v[-1] for k, v in parse_qs(urlsplit(url).query).items()}
    assert {k: params.get(k) for k in ("positional", "n_heads", "mask", "window", "masks.head", "masks.sink_on",
                                       "masks.compare", "cell")} == {
        "positional": "alibi", "n_heads": "6", "mask": "sliding_window", "window": "2", "masks.head": "4",
        "masks.sink_on": "1", "masks.compare": "1", "cell": "hm:alibi:None.4.1"}, params
    assert float(params["masks.sink"]) == start + 0.5

    fresh = student()                                                       # a new context: no cookies, no session
    after_run(fresh, lambda: fresh.goto(url, wait_until="domcontentloaded"), timeout_ms=60_000)
    expect(fresh.locator("h1")).to_have_text("Masks & biases", timeout=30_000)
    assert view(fresh) == before
    assert tab.locator(EXCEPTION).count() == 0 and fresh.locator(EXCEPTION).count() == 0


def test_the_sink_takes_a_share_of_every_row(app_server, student):
    tab = student()
    open_page(tab, app_server, "masks", {"sentence": SENTENCE, "mask": "causal"})
    expect(tab.get_by_text("Every row of A sums to 1", exact=False)).to_be_visible(timeout=30_000)
    sink = tab.locator("[data-testid='stCheckbox']").filter(has_text="Sink")
    after_run(tab, lambda: sink.first.click(), timeout_ms=60_000)
    expect(tab.get_by_text("with a sink every row of A′ sums to less than 1", exact=False)).to_be_visible(
        timeout=30_000)
    expect(tab.get_by_text("Every row of A sums to 1", exact=False)).to_be_visible()      # A, beside A′, still does
    # the row-sums heatmap of A′: one column of sums, one of the sink's shares, each pair adding to 1
    found = wait_for_charts(tab, lambda cs: any(c["x"] == ["Σ_j A′_ij", "sink share"] for c in cs if c["rendered"]),
                            timeout_ms=60_000)
    sums = next(c for c in found if c["x"] == ["Σ_j A′_ij", "sink share"])
    values = [float(t) for t in sums["texts"] if re.fullmatch(r"\d\.\d\d", t)]        # the cells (legend: 0, 0.5, 1)
    assert len(values) == 2 * N and all(abs(values[2 * i] + values[2 * i + 1] - 1) <= 0.011 for i in range(N)), values
    assert any(0.05 < v < 0.95 for v in values), values     # z_h starts where the sink and the keys share a row
    assert tab.locator(CHART).count() >= 5 and tab.locator(EXCEPTION).count() == 0
