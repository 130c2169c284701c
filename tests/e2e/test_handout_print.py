"""/handout printed by chromium: the PDF (print media, as the browser's Save as PDF makes it) has the page's title
and a formula's text, and under print media the app's navigation, sidebar, toolbar and buttons are hidden."""
from __future__ import annotations

import re


from bench._common import EXCEPTION, new_context
from tests.e2e.conftest import open_page
from tests.e2e.pdf_text import pdf_text



def squeezed(text: str) -> str:
    return re.sub(r"\s+", "", text)


def test_the_handout_prints_its_page_and_formulas_without_the_apps_chrome(chromium, own_server):
    ctx = new_context(chromium, viewport={"width": 1366, "height": 768})
    try:
        tab = ctx.new_page()
        open_page(tab, own_server, "handout", {"handout.of": "scores", "d_k": "8"})
        tab.get_by_role("heading", name="Forward pass › Scores and scaling").wait_for(timeout=30_000)
        tab.locator(".katex").first.wait_for(timeout=30_000)
        assert tab.locator(EXCEPTION).count() == 0
        nav = tab.get_by_role("button", name="Forward pass").or_(tab.get_by_text("Forward pass", exact=True))
        assert tab.locator("[data-testid='stSidebar']").is_visible()             # on screen: the app as it is
        tab.evaluate("window.print = () => { window.__printed = (window.__printed || 0) + 1; }")
        tab.get_by_role("button", name="Print or save as PDF").click()          # opens the browser's print dialog
        tab.wait_for_function("window.__printed === 1", timeout=15_000)
        tab.emulate_media(media="print")
        for chrome in ("[data-testid='stHeader']", "[data-testid='stSidebar']", "[data-testid='stToolbar']",
                       "header", "nav"):
            assert all(not e.is_visible() for e in tab.locator(chrome).all()), chrome
        assert all(not e.is_visible() for e in nav.all())                        # the top navigation's sections
        assert not tab.get_by_role("button", name="Print or save as PDF").is_visible()
        assert tab.get_by_role("heading", name="1 · Scores QKᵀ").is_visible()
        text = squeezed(pdf_text(tab.pdf(format="A4", print_background=True)))
        assert "Forwardpass›Scoresandscaling" in text                           # the page's title
        assert "S=QK⊤" in text                                                    # S = QKᵀ, typeset by KaTeX
        assert "Settings:d_k=8" in text
        assert "Print or save as PDF".replace(" ", "") not in text and "Attentionvariants" not in text
    finally:
        ctx.close()
