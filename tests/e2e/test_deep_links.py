"""Every page, opened by its URL as the very first request on a fresh server (the known
pitfall: with a folder named pages/, a fresh server answers its first deep link through
Streamlit's legacy pages mechanism, so the page files live in app_pages/), renders its title,
the navigation's sections (top bar), its heatmaps, and no exception.

The page list comes from ui/nav.py SECTIONS (files that exist), so a new page is tested
as soon as it is added there. A page not yet in MIN_HEATMAPS must show at least one
heatmap if it belongs to the forward pass; list it to check more.
"""
from __future__ import annotations

import re

import pytest

from bench._common import all_pages, page_title

PAGES = all_pages()
DEFAULT_TOKENS = ["i", "love", "you", "today"]          # Config().sentence, tokenized

# Heatmaps each page must draw at default settings (at least).
MIN_HEATMAPS = {
    "app_pages/overview.py": 0,
    "app_pages/1_embeddings.py": 2,
    "app_pages/2_positional.py": 3,
    "app_pages/3_qkv.py": 0,            # LAZY below: at first these show their One-word tables
    "app_pages/4_scores.py": 2,         # the √d_k experiment's two charts
    "app_pages/5_softmax.py": 2,
    "app_pages/6_context.py": 0,
    "app_pages/7_multi_head.py": 4,
}
# Pages with a heatmap whose rows are the sentence's tokens (checked against DEFAULT_TOKENS).
# Pages whose token heatmaps are behind a lazy tab or expander, drawn only once opened ("All words";
# /scores' four score functions): tests/test_app_pages.py and tests/test_in_sight.py pin that they
# draw nothing closed and the trace's numbers open; tests/e2e/test_explain_in_sight.py opens one here.
LAZY = {"app_pages/3_qkv.py", "app_pages/4_scores.py", "app_pages/6_context.py"}
TOKEN_ROWS = {p.file for p in PAGES if p.section == "Forward pass" and p.file != "app_pages/overview.py"
              and p.file not in LAZY}


def min_heatmaps(page) -> int | None:
    if page.file in MIN_HEATMAPS:
        return MIN_HEATMAPS[page.file]
    return 1 if page.section == "Forward pass" else None


@pytest.fixture(scope="module")
def opened(deep_links):
    deep_links.min_heatmaps = min_heatmaps
    return deep_links


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.path or "overview")
def test_deep_link_as_first_request_on_a_fresh_server(page, opened):
    r = opened.result(page)
    where = page.url_path
    assert "error" not in r, f"{where}: {r['error']}\n{r['log'][-3000:]}"

    title = page_title(page)                          # what the page passes to ui.page(...)
    assert len(r["h1"]) == 1, f"{where}: h1 elements {r['h1']}"
    assert r["h1"][0].strip() == title if title else r["h1"][0].strip(), f"{where}: h1 {r['h1']} != {title!r}"

    for section in r["sections"]:
        assert section in r["bold"], f"{where}: navigation section {section!r} missing (found {r['bold']})"
    assert r["links"] == r["expected_links"], f"{where}: {r['links']} nav sections, expected {r['expected_links']}"
    assert r["builtin_nav"] == 0, f"{where}: the built-in page list (file names) is shown: legacy pages mechanism"

    want = min_heatmaps(page)
    found = r["charts"]
    if want:
        assert len(found) >= want, f"{where}: {len(found)} heatmaps, expected ≥ {want}"
        assert all(c["rendered"] for c in found if c["visible"]), f"{where}: a visible heatmap was not drawn"
    if page.file in TOKEN_ROWS:
        rows = [c["y"] for c in found if c["rendered"]]
        assert DEFAULT_TOKENS in rows, f"{where}: no heatmap with rows {DEFAULT_TOKENS}: {rows}"

    assert not r["exceptions"], f"{where}: exception on the page: {r['exceptions']}"
    assert re.match(rf"^{re.escape(r['server_url'] + page.url_path)}/?(\?.*)?$", r["url"]), \
        f"{where}: ended on {r['url']}"
    assert not r["js_errors"], f"{where}: errors in the browser: {r['js_errors']}"
    assert "Traceback" not in r["log"], f"{where}: traceback in the server log:\n{r['log'][-3000:]}"
