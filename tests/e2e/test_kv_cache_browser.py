"""The KV cache page in the browser: moving the step slider t grows the cache by one row (its shape badge
and the cache heatmaps' rows), the live proof stays at rounding level, the calculator tab shows Llama 3 8B's
128 KiB per token, and a non-default view (the sidebar's MQA, RoPE and window W = 2 from the link, then
t = 3, a prompt of 1 and a clicked score cell) travels in the address bar to a fresh browser context."""
from __future__ import annotations

import re

try:
    from playwright.sync_api import expect
except ImportError:            # the fixtures skip, or fail under ATTENTION_EXPLORER_REQUIRE_BROWSER=1
    expect = None

from bench._common import CHART, EXCEPTION, after_run, wait_for_charts
from tests.e2e.conftest import open_page

CACHE_TITLE = "The cache: K and V"
STEP = "Decoding step t (the token being processed)"
PROMPT = "Prompt (prefill) tokens P"
CELLS = "svg.marks g.mark-rect.role-mark path"


def cache_rows(tab) -> int:
    """Cached tokens, read from the cache card's shape badge (KV head=1 × cached=3 × k | v=8)."""
    text = markdown(tab, CACHE_TITLE).inner_text()
    return int(re.search(r"cached=(\d+)", text)[1])


def markdown(tab, words: str):
    return tab.locator("[data-testid='stMarkdownContainer']").filter(has_text=words).first


def proof(tab) -> float:
    text = markdown(tab, "Decoding = the full pass").inner_text()
    return float(re.search(r"max \|o_decoded − O\| = (\S+)", text)[1])


def test_step_slider_grows_the_cache_row_by_row(app_server, student):
    tab = student()
    open_page(tab, app_server, "kv_cache")
    expect(tab.locator("h1")).to_have_text("KV cache & decoding", timeout=30_000)
    wait_for_charts(tab, lambda cs: sum(1 for c in cs if c["visible"] and c["rendered"]) >= 6, timeout_ms=60_000)
    assert cache_rows(tab) == 3                        # t = 2 after a 2-token prompt: tokens 0, 1, 2
    assert proof(tab) < 1e-12

    slider = tab.get_by_role("slider", name=STEP)
    after_run(tab, lambda: (slider.focus(), slider.press("ArrowRight")))
    expect(markdown(tab, "is decoded alone")).to_contain_text("t = 3", timeout=20_000)
    assert cache_rows(tab) == 4                        # one more row: the new token's K and V
    assert any(c["y"] and c["y"][-1] == "3 today" for c in wait_for_charts(tab, lambda cs: any(
        c["visible"] and c["rendered"] and c["y"] and c["y"][-1] == "3 today" for c in cs)))

    after_run(tab, lambda: (slider.focus(), slider.press("Home")))
    expect(markdown(tab, "is in the prompt")).to_contain_text("t = 0", timeout=20_000)
    assert cache_rows(tab) == 2                        # the prompt entered the cache at once
    assert proof(tab) < 1e-12
    assert tab.locator(EXCEPTION).count() == 0


def test_calculator_tab_shows_llama_3_8b(app_server, student):
    tab = student()
    open_page(tab, app_server, "kv_cache")
    after_run(tab, lambda: tab.get_by_role("tab", name="Cache size calculator").click(), timeout_ms=30_000)
    expect(markdown(tab, "Llama 3 8B:")).to_contain_text("128 KiB per token, 1 GiB at 8,192 tokens", timeout=30_000)
    assert tab.locator(EXCEPTION).count() == 0


def view_of(tab) -> dict:
    """What a student reads of the view: t, P, the proof, what the step does, the cache's shape, the clicked
    cell's arithmetic."""
    expect(tab.get_by_text("was made", exact=False).first).to_be_visible(timeout=30_000)
    step = tab.locator("[data-testid='stSlider']").filter(has_text=STEP)
    return {"t": int(step.locator("[data-testid='stSliderThumbValue']").inner_text()),
            "prompt": tab.locator(f"[data-testid='stNumberInput'] input[aria-label='{PROMPT}']").input_value(),
            "proof": markdown(tab, "Decoding = the full pass").inner_text(),
            "status": markdown(tab, "is decoded alone").inner_text(),
            "cache": markdown(tab, CACHE_TITLE).inner_text(),
            "cell": tab.locator("[class*='st-key-xp-']").first.inner_text()}


def test_a_non_default_view_travels_in_the_link_to_a_fresh_browser(app_server, student):
    """The sidebar's Heads 4, KV heads 1 (MQA), RoPE and W = 2 by URL; t = 3 and P = 1 by the controls; a
    click on the score row's cell (head 1, cached token 2): the address bar's link, opened in a new browser
    context (another session), shows the same t, prompt, numbers and the same cell's arithmetic."""
    tab = student()
    open_page(tab, app_server, "kv_cache",
              {"n_heads": "4", "n_kv_heads": "1", "positional": "rope", "mask": "sliding_window", "window": "2"})
    expect(tab.locator("h1")).to_have_text("KV cache & decoding", timeout=30_000)
    wait_for_charts(tab, timeout_ms=60_000)
    prompt = tab.locator(f"[data-testid='stNumberInput'] input[aria-label='{PROMPT}']")
    after_run(tab, lambda: (prompt.fill("1"), prompt.press("Enter")))
    slider = tab.get_by_role("slider", name=STEP)
    after_run(tab, lambda: (slider.focus(), slider.press("ArrowRight")))
    expect(markdown(tab, "is decoded alone")).to_contain_text("t = 3", timeout=20_000)
    assert cache_rows(tab) == 2 and "KV head=1" in markdown(tab, CACHE_TITLE).inner_text()   # MQA, W = 2

    card = tab.locator("[data-testid='stVerticalBlock']").filter(
        has=tab.get_by_role("heading", name=re.compile(r"^q\^R_3 against the cache"))).last
    first_chart = card.locator(CHART).first
    marks = first_chart.locator(CELLS)
    expect(marks.first).to_be_attached(timeout=30_000)
    assert marks.count() == 4 * 2                         # 4 query heads × 2 cached tokens
    after_run(tab, lambda: marks.nth(1 * 2 + 0).click(), timeout_ms=30_000)
    before = view_of(tab)
    assert before["t"] == 3 and before["prompt"] == "1"
    assert re.search(r"ŝ\[1,2\]|ŝ.*1,2", before["cell"]), before["cell"]        # cached row 0 is token 2: ŝ_{1,2}
    assert "token 1's row falls out" in before["status"]
    url = tab.url
    assert all(p in url for p in ("kv_cache.t=3", "kv_cache.prefill=1", "cell=kv_cache.hm.scores_t.None.1.0",
                                  "positional=rope", "n_kv_heads=1", "window=2")), url

    fresh = student()                                   # a new context: no shared session
    after_run(fresh, lambda: fresh.goto(url, wait_until="domcontentloaded"), timeout_ms=90_000)
    expect(fresh.locator("h1")).to_have_text("KV cache & decoding", timeout=30_000)
    wait_for_charts(fresh, timeout_ms=60_000)
    assert view_of(fresh) == before
    assert tab.locator(EXCEPTION).count() == 0 and fresh.locator(EXCEPTION).count() == 0
