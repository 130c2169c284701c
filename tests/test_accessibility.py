"""The accessibility checks' set-up and the app's own colours (the browser side: tests/e2e/test_walk.py runs
axe-core on every page at 1366 × 768 and 390 × 844).

- Captions' text (ui/raw_html.py CAPTION_COLOUR) meets WCAG 2.1's 4.5:1 for text on every background a caption
  sits on, in the normal and the presenter theme (presenter mode changes sizes, not colours).
- Streamlit's own violations the walk leaves out (tests/e2e/axe.py STREAMLIT) are the ones docs/accessibility.md
  lists, each with its upstream issue; the README links the statement.
- axe-core comes from its npm package at the lock's version, installed by scripts/test.sh and required by CI.
"""
import json
import re
import subprocess
from pathlib import Path

import pytest

from tests.e2e.axe import STREAMLIT, TAGS
from tests.test_colors import contrast   # WCAG 2.1's contrast ratio of relative luminances (sRGB linearised)
from ui.raw_html import CAPTION_COLOUR, FIT_CSS, FOCUS_CSS, FOCUS_RING, PAGE_CSS
from ui.presenter import PRESENTER_CSS

ROOT = Path(__file__).resolve().parents[1]
STATEMENT = ROOT / "docs" / "accessibility.md"

# The backgrounds captions sit on, as chromium computes them with the app's theme (.streamlit/config.toml, base
# light): the page, the sidebar (Streamlit's secondary background), inline code's, and st.info's blue.
BACKGROUNDS = {"page": "#ffffff", "sidebar": "#f8f8f7", "code": "#fcfcfb", "info box": "#e8f0fe"}


def test_contrast_is_wcags():
    assert contrast("#000000", "#ffffff") == pytest.approx(21.0)
    assert contrast("#777777", "#ffffff") == pytest.approx(4.48, abs=0.01)      # the classic just-fails grey
    assert contrast("#767676", "#ffffff") == pytest.approx(4.54, abs=0.01)      # and the one that passes


@pytest.mark.parametrize("where", list(BACKGROUNDS))
def test_captions_are_readable_on_every_background(where):
    assert contrast(CAPTION_COLOUR, BACKGROUNDS[where]) >= 4.5
    # Streamlit's own caption (the body text #2f2d2b at opacity 0.6, what axe measured as #828180) was not
    assert contrast("#828180", BACKGROUNDS[where]) < 4.5


def test_captions_colour_is_set_solid_in_every_theme():
    rule = f"[data-testid='stCaptionContainer']{{opacity:1;color:{CAPTION_COLOUR}}}"
    assert rule in FIT_CSS                                  # sent on every page run (ui.page)
    assert "opacity" not in PRESENTER_CSS and "color" not in PRESENTER_CSS    # presenter mode keeps the colours


@pytest.mark.parametrize("where", ["page", "sidebar", "toolbar"])
def test_the_focus_ring_on_streamlits_chrome_stands_out(where):
    """WCAG 1.4.11: the ring around a focused toolbar button or heading anchor (FOCUS_CSS) at least 3:1 against what
    is around it (the toolbar's button grey, rgba(187, 187, 165, 0.25) on white, as chromium composes it), sent on
    every page run, in both themes (presenter mode sets no outline or colour)."""
    assert contrast(FOCUS_RING, {**BACKGROUNDS, "toolbar": "#eeeee8"}[where]) >= 3.0
    assert FOCUS_CSS in PAGE_CSS and f"outline:2px solid {FOCUS_RING} !important" in FOCUS_CSS
    assert "outline" not in PRESENTER_CSS


def test_every_left_out_streamlit_violation_is_in_the_statement_with_its_issue():
    text = STATEMENT.read_text()
    assert STREAMLIT, "the list is read by the walk"
    for rule, selector, issue in STREAMLIT:
        assert re.fullmatch(r"streamlit/streamlit#\d+", issue)
        row = [line for line in text.splitlines() if f"`{rule}`" in line and f"`{selector}`" in line]
        assert row, f"docs/accessibility.md lists no row for {rule} inside {selector}"
        assert issue.split("/")[-1] in row[0] or issue in row[0]


def test_statement_says_the_standard_the_test_and_how_to_report():
    text = STATEMENT.read_text()
    for needed in ("WCAG 2.1", "AA", "axe-core", "390 × 844", "1366 × 768", "report"):
        assert needed in text
    for tag in TAGS:
        assert tag in text
    assert "](docs/accessibility.md)" in (ROOT / "README.md").read_text()


def test_axe_core_comes_from_npm_at_the_locked_version():
    package = json.loads((ROOT / "package.json").read_text())
    lock = json.loads((ROOT / "package-lock.json").read_text())
    assert package["devDependencies"]["axe-core"].startswith("^4.")
    assert lock["packages"]["node_modules/axe-core"]["version"].startswith("4.")
    assert "npm ci" in (ROOT / "scripts" / "test.sh").read_text()
    assert "export ATTENTION_EXPLORER_REQUIRE_AXE=1" in (ROOT / ".ci" / "run").read_text()
    assert "node_modules/" in (ROOT / ".gitignore").read_text().splitlines()
    tracked = subprocess.run(["git", "ls-files", "*axe*.js"], cwd=ROOT, capture_output=True, text=True)
    assert tracked.returncode == 0 and tracked.stdout == "", "no copy of axe-core in the repository"
