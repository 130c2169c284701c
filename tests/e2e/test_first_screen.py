"""The first screen (docs/layout.md): on a 1366x768 laptop every forward-pass page shows its
title, the sentence box and the first shape controls (Heads, d_k) without scrolling, and the
navigation shows where you are. A link with settings opens the same view on a fresh server,
and the settings travel with the navigation.
"""
from __future__ import annotations

import pytest
from playwright.sync_api import expect

from bench._common import IDLE, Server, forward_pages, new_context, run_marker, sections, wait_run_end

FOLD = {"width": 1366, "height": 768}
expect.set_options(timeout=20_000)     # widgets mount a moment after the run ends (lazy components, 2 shared cores)
PAGES = forward_pages()


def heads(tab):
    return tab.locator("[data-testid='stSidebar'] [data-testid='stSlider']:has([data-testid='stWidgetLabel'] p:text-is('Heads'))")


def controls(tab) -> dict:
    """The pinned elements of the first screen: name -> locator."""
    return {
        "title": tab.locator("[data-testid='stMain'] h1"),
        "sentence": tab.locator("[data-testid='stSidebar']").get_by_label("Sentence", exact=True),
        "heads": heads(tab),
        "d_k": tab.locator("[data-testid='stSidebar']").get_by_label("d_k", exact=True),
    }


def open_at(tab, url: str) -> None:
    marker = run_marker(tab)
    tab.goto(url, wait_until="commit")
    wait_run_end(tab, marker, timeout_ms=90_000)


def section_of(page) -> str:
    return next(name for name, pages in sections() if page in pages)


@pytest.fixture(scope="module")
def laptop(chromium, app_server):
    ctx = new_context(chromium, viewport=FOLD)
    tab = ctx.new_page()
    yield tab, app_server
    ctx.close()


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.path or "overview")
def test_forward_page_first_screen(page, laptop):
    tab, server = laptop
    open_at(tab, server.url + page.url_path)
    for name, loc in controls(tab).items():
        loc.first.wait_for(state="visible", timeout=15_000)
        assert loc.count() == 1, f"{page.url_path}: {loc.count()} elements for {name}"
        box = loc.bounding_box()
        assert box is not None, f"{page.url_path}: {name} is not drawn"
        assert box["height"] > 0 and box["width"] > 0, f"{page.url_path}: {name} has no size {box}"
        assert 0 <= box["y"] and box["y"] + box["height"] <= FOLD["height"], \
            f"{page.url_path}: {name} at y={box['y']:.0f}..{box['y'] + box['height']:.0f}, below the first {FOLD['height']} px"
        assert box["x"] + box["width"] <= FOLD["width"], f"{page.url_path}: {name} past the right edge {box}"

    # where you are: the line over the title, and the navigation's own mark on the current page
    where = tab.locator("[data-testid='stMain'] [data-testid='stCaptionContainer']").first
    assert where.inner_text().strip().endswith(f"{section_of(page)} › {page.label}"), where.inner_text()
    assert where.bounding_box()["y"] + where.bounding_box()["height"] <= FOLD["height"]
    button = tab.locator("[data-testid='stTopNavSection']").filter(has_text=section_of(page))
    assert button.count() == 1 and button.bounding_box()["y"] < 80, "the section is not in the top bar"
    button.click()
    current = tab.locator("a[data-testid='stTopNavDropdownLink'][aria-current='page']")
    current.wait_for(state="visible", timeout=5_000)
    assert current.inner_text().strip().endswith(page.label), current.inner_text()
    tab.keyboard.press("Escape")


def test_every_page_is_in_the_navigation(laptop):
    """Each section's menu lists its pages, each a link to its URL path (one click once open)."""
    tab, server = laptop
    open_at(tab, server.url + "/")
    for name, pages in sections():
        tab.locator("[data-testid='stTopNavSection']").filter(has_text=name).click()
        links = tab.locator("a[data-testid='stTopNavDropdownLink']:visible")
        links.first.wait_for(state="visible", timeout=5_000)
        found = {link.inner_text().strip().split("\n")[-1]: link.get_attribute("href") for link in links.all()}
        for page in pages:
            assert page.label in found, f"{name}: {page.label} missing from {list(found)}"
            assert found[page.label].rstrip("/") == (server.url + page.url_path).rstrip("/"), found[page.label]
        tab.keyboard.press("Escape")
        tab.wait_for_timeout(200)


def test_a_link_with_settings_opens_the_same_view_on_a_fresh_server_and_travels(chromium):
    """The first request on a fresh server is a deep link with settings (the pages/ pitfall):
    the page and its settings are shown, not the legacy page list; then a click in the
    navigation keeps the settings (session state) and writes them into the new page's URL."""
    server = Server("app.py").start()
    ctx = new_context(chromium, viewport=FOLD)
    try:
        server.wait_healthy(90)
        tab = ctx.new_page()
        query = "sentence=the+cat+sat+down&d_k=3&n_heads=3&positional=none&presenter=1"
        open_at(tab, f"{server.url}/qkv?{query}")
        assert tab.locator("[data-testid='stSidebarNav']").count() == 0, "legacy pages list shown"
        assert tab.locator("[data-testid='stMain'] h1").inner_text().strip() == "Queries, keys and values"
        sidebar = tab.locator("[data-testid='stSidebar']")
        expect(sidebar.get_by_label("Sentence", exact=True)).to_have_value("the cat sat down")
        expect(sidebar.get_by_label("d_k", exact=True)).to_have_value("3")
        expect(heads(tab)).to_contain_text("3")
        presenter = tab.get_by_role("switch", name="Presenter mode")      # over the title (ui/presenter.py)
        expect(presenter).to_be_checked()
        expect(sidebar).to_be_hidden()                                    # presenter mode: the page's whole width
        assert not tab.locator("[data-testid='stException']").count()
        for part in ("d_k=3", "n_heads=3", "positional=none"):
            assert part in tab.url, (part, tab.url)
        assert "presenter" not in tab.url, tab.url      # presenter mode: the Share page's choice, not the address bar

        # one navigation click (after opening the section): same settings on the next page
        tab.locator("[data-testid='stTopNavSection']").filter(has_text="Forward pass").click()
        marker = run_marker(tab)
        tab.locator("a[data-testid='stTopNavDropdownLink']").filter(has_text="Scores & scaling").click()
        wait_run_end(tab, marker, timeout_ms=60_000)
        tab.wait_for_selector(IDLE)
        tab.wait_for_function("() => location.pathname.endsWith('/scores') && location.search.includes('d_k=3')",
                              timeout=10_000)
        assert tab.locator("[data-testid='stMain'] h1").inner_text().strip() == "Scores and scaling"
        expect(sidebar.get_by_label("d_k", exact=True)).to_have_value("3")
        expect(sidebar.get_by_label("Sentence", exact=True)).to_have_value("the cat sat down")
        for part in ("d_k=3", "n_heads=3", "sentence=the+cat+sat+down"):
            assert part in tab.url, (part, tab.url)
        assert "presenter" not in tab.url, tab.url

        # that URL, opened by a new student (a new session), shows the same settings
        other = new_context(chromium, viewport=FOLD)
        try:
            tab2 = other.new_page()
            open_at(tab2, tab.url)
            assert tab2.locator("[data-testid='stMain'] h1").inner_text().strip() == "Scores and scaling"
            side2 = tab2.locator("[data-testid='stSidebar']")
            expect(side2.get_by_label("d_k", exact=True)).to_have_value("3")
            expect(side2.get_by_label("Sentence", exact=True)).to_have_value("the cat sat down")
        finally:
            other.close()
        assert "Traceback" not in server.log_tail(20_000)
    finally:
        ctx.close()
        server.stop()
