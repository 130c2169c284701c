"""The KV cache page in the browser: moving the step slider t grows the cache by one row (its shape badge
and the K cache heatmaps' rows), the live proof stays at rounding level, and the calculator tab shows
Llama 3 8B's 128 KiB per token."""
from __future__ import annotations

import re

try:
    from playwright.sync_api import expect
except ImportError:            # the fixtures skip, or fail under ATTENTION_EXPLORER_REQUIRE_BROWSER=1
    expect = None

from bench._common import EXCEPTION, after_run, wait_for_charts
from tests.e2e.conftest import open_page

CACHE_TITLE = "The cache: K and V"


def cache_rows(tab) -> int:
    """Cached tokens, read from the cache card's shape badge (KV head=2 × cached=3 × d_head=4)."""
    text = markdown(tab, CACHE_TITLE).inner_text()
    return int(re.search(r"cached=(\d+)", text)[1])


def markdown(tab, words: str):
    return tab.locator("[data-testid='stMarkdownContainer']").filter(has_text=words).first


def proof(tab) -> float:
    text = markdown(tab, "Decoding = the full pass").inner_text()
    return float(re.search(r"max \|o_decoded − o_full\| = (\S+)", text)[1])


def test_step_slider_grows_the_cache_row_by_row(app_server, student):
    tab = student()
    open_page(tab, app_server, "kv_cache")
    expect(tab.locator("h1")).to_have_text("KV cache & decoding", timeout=30_000)
    wait_for_charts(tab, lambda cs: sum(1 for c in cs if c["visible"] and c["rendered"]) >= 7, timeout_ms=60_000)
    assert cache_rows(tab) == 3                        # t = 2 after a 2-token prompt: tokens 0, 1, 2
    assert proof(tab) < 1e-12

    slider = tab.get_by_role("slider", name="Decoding step t (the token being processed)")
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
