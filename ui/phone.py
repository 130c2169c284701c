"""A phone is a first-class screen (WCAG 1.4.10, reflow at 320 CSS px): the CSS sent with every page run (beside
raw_html's chart CSS, in the same style element) and a labelled scroll region for what cannot reflow.

- Streamlit stacks columns below 640 px (PHONE_PX); from there down, markdown tables (the block page's steps) set
  smaller and may break a long word, so they fit the screen;
- the pattern grids of the induction page (every head side by side, a layer a row) are drawn twice, one shown: the
  grid in a "wide-" container on a wide screen, and in a "tall-" container below PHONE_PX the same rows as facets
  that wrap, two heads a row (one for the learner's sentence), at their natural size with every text at least
  11 px (ui/transformer/induction_charts.py phone_patterns_spec), the live grid while the page trains too:
  readable, and their tooltips name the right cell. (Scaling the grid down to the screen, as before, put every head
  on it but its labels at about 6 px, and Vega maps a pointer on a scaled canvas without the CSS scale: measured, a
  hover at 20%/30% of the scaled grid named query 4 for the unscaled grid's query 22);
- so are the induction page's loss and score curves: side by side on a wide screen, and on a phone narrow, the two
  score panels one over the other, every text at least 11 px (induction_charts.phone_text);
- the Overview's pipeline is drawn twice too, five boxes a row (wide screens) and two a row (phones), one shown;
- a thumb's targets: buttons and a radio's options at least 44 px high (the room's join and its poll);
- a wide matrix that must keep its columns (the handout's tables) scrolls sideways inside a region with a name
  (role="region", aria-label, reachable by Tab), never the page.

tests/e2e/reflow.py measures every page at 390 and 320 px wide (at the end of its walk), and the phone's pattern grid's
smallest text as drawn at 390 px.
"""
from __future__ import annotations

import html

PHONE_PX = 640

PHONE_CSS = (
    f"@media (max-width:{PHONE_PX}px){{"
    "[data-testid='stMarkdownContainer'] table{font-size:.875rem}"
    "[data-testid='stMarkdownContainer'] th,[data-testid='stMarkdownContainer'] td{padding:.25rem .375rem;"
    "overflow-wrap:anywhere}"
    "[class*='st-key-formulas-'] .katex{font-size:1em}"
    "[data-testid='stTable'] table{font-size:.8125rem}"
    "[data-testid='stTable'] th,[data-testid='stTable'] td{padding:.25rem .375rem}"
    "[data-testid='stDataFrame'],[data-testid='stDataFrameResizable']{max-width:100% !important}"
    "[data-testid='stMain'] [role='radiogroup'] label{min-height:44px;align-items:center}"
    "[data-testid='stMain'] button[data-testid^='stBaseButton-primary'],"
    "[data-testid='stMain'] button[data-testid^='stBaseButton-secondary']{min-height:44px}"
    ".st-key-pipeline-wide,[class*='st-key-wide-']{display:none}}"
    f"@media (min-width:{PHONE_PX + 1}px){{.st-key-pipeline-tall,[class*='st-key-tall-']{{display:none}}}}"
    ".ae-scroll{overflow-x:auto;max-width:100%}"
    # a picture of a fixed width (the room's QR code, 360 px) and its caption: no wider than the screen
    "[data-testid='stImageContainer'],[data-testid='stImageContainer'] img{max-width:100%;height:auto}"
    "@media print{.ae-scroll{overflow:visible}}")


def scroll_region(inner_html: str, label: str) -> str:
    """Trusted HTML (a table the app made) inside a sideways scroll region a screen reader names and a keyboard
    reaches: what a wide matrix may do on a phone (WCAG 1.4.10's exception for data tables), the page never.

    >>> scroll_region("<table></table>", 'X "a" <b>')
    '<div class="ae-scroll" role="region" tabindex="0" aria-label="X &quot;a&quot; &lt;b&gt;"><table></table></div>'
    """
    return (f'<div class="ae-scroll" role="region" tabindex="0" aria-label="{html.escape(label, quote=True)}">'
            f"{inner_html}</div>")


def fill_width(spec: dict) -> dict:
    """As wide as its column (ui.chart draws a "container" width stretched): a curve or bar chart has no square
    cells to keep, so it fills a narrow column or a phone's screen instead of being scaled down to small words."""
    title = spec.get("title")
    text = title.get("text") if isinstance(title, dict) else title
    if isinstance(text, str) and len(text) > 28:                    # a narrow column cuts long titles: 2 lines
        cut = text.rfind(" ", 0, len(text) // 2 + 6)
        title = {**(title if isinstance(title, dict) else {}), "text": [text[:cut], text[cut + 1:]]}
    return {**spec, "width": "container", "autosize": {"type": "fit-x", "contains": "padding"},
            **({"title": title} if title else {})}
