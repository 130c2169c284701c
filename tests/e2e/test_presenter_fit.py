"""Presenter mode on a projector: every page of the navigation (bench._common.all_pages(): ui/nav.py SECTIONS,
the pages whose file exists, so a new page joins by existing) at 1024×768, 1366×768 and 1920×1080.

Nothing is cut and nothing scrolls sideways: no horizontal scroll of the page or its main area; no element whose
content is wider than its box where the box hides or scrolls its overflow (a KaTeX display, a Markdown block, a
table, a chart, a metric, a button, a tab bar ...); no element's right edge past its container (a column, a card,
an expander, a tab) or past the window. Heatmap numbers, as drawn (a chart scaled down to its card shrinks
them), are at least MIN_NUMBER_PX where the chart is SVG (tests/test_presenter.py asserts the spec's sizes for
the canvas case). The switch: over the fold at 1024×768 on every page; on, the sidebar is gone and the main area
takes the whole width; off, the sidebar is back.

One browser, one session: the first page opened with presenter=1, every next page by the "next →" link at the
end of the previous one (a client-side page switch); on each page the window is set to each size and measured
(a resize reruns nothing); then five pages opened by a link with a clicked cell, their explanations measured too.
About 1.5 minutes on 2 shared cores. ATTENTION_EXPLORER_FIT_DUMP=/tmp/fit.json writes everything measured there.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from bench._common import IDLE, after_run, all_pages, new_context, run_marker, wait_for_charts, wait_run_end
from tests.e2e.conftest import require_browser

SIZES = [(1024, 768), (1366, 768), (1920, 1080)]
MIN_NUMBER_PX = 14            # a heatmap's numbers as drawn
MIN_AXIS_PX = 12              # a heatmap's axis labels as drawn
PAGES = all_pages()
# Cells opened by a link (cell=<chart>.<i>.<j>): their explanations (long formulas beside or under a chart) are
# measured too, each page opened fresh with presenter=1 after the walk. The mask's rule "[query i may see key j]"
# in a half-width card, RoPE's and multi-head's long sums.
EXPLAINED = {"masks": "hm:mask_w:None.3.1", "rope": "rope.hm:scaled_scores:None.3.1", "softmax": "hm:weights:None.3.2",
             "multi_head": "hm:output:None.1.2", "kv_cache": "kv_cache.hm.output_t.None.0.1"}
SWITCH = "[data-testid='stMain'] [data-testid='stCheckbox']:has(input[role='switch']):has-text('Presenter mode')"

# Everything measured on the page as it stands (the window already at its size): {scroll, cut, past, fonts}.
MEASURE = r"""() => {
  const main = document.querySelector("[data-testid='stMain']");
  const doc = document.documentElement, vw = doc.clientWidth;
  const shown = e => e.checkVisibility ? e.checkVisibility() : e.offsetParent !== null;
  const name = el => {
    const id = el.getAttribute('data-testid') || String(el.className && el.className.baseVal !== undefined
                                                       ? el.className.baseVal : el.className || '').slice(0, 50);
    const text = (el.innerText || el.textContent || '').trim().replace(/\s+/g, ' ').slice(0, 70);
    return `${el.tagName.toLowerCase()}[${id}] "${text}"`;
  };
  // the right edge of what is drawn inside el (its innermost elements): KaTeX's MathML copy (for screen readers,
  // clipped away) and its empty 2 px struts after a subscript (.vlist-s, which widen their row) are not drawn
  const drawnRight = el => {
    if (!el.querySelector('.katex')) return Infinity;
    let right = -Infinity;
    for (const e of el.querySelectorAll('*'))
      if (!e.firstElementChild && !e.closest('.katex-mathml') && !e.matches('.vlist-s') && e.getBoundingClientRect().width > 0)
        right = Math.max(right, e.getBoundingClientRect().right);
    return right;
  };
  const out = {scroll: [], cut: [], past: [], numbers: [], axes: []};
  if (doc.scrollWidth > vw + 1) out.scroll.push(`the page: ${doc.scrollWidth} > ${vw} px`);
  if (main.scrollWidth > main.clientWidth + 1) out.scroll.push(`the main area: ${main.scrollWidth} > ${main.clientWidth} px`);
  // 1. content wider than a box that hides it (cut) or scrolls it (sideways)
  for (const el of main.querySelectorAll('*')) {
    if (el.closest('svg') || (el.closest('.katex') && !el.classList.contains('katex'))) continue;
    if (el.closest("[data-testid='stDataFrameResizable']") && !el.matches("[data-testid='stDataFrameResizable']")
        && !el.matches('.dvn-scroller')) continue;
    if (el.matches('input, textarea, select, [data-baseweb="select"] *, [data-testid="stTooltipHoverTarget"] *')) continue;
    const ox = getComputedStyle(el).overflowX;
    if (ox === 'visible' || el.clientWidth <= 2 || !shown(el)) continue;     // <= 2 px: a screen reader's text
    if (el.scrollWidth > el.clientWidth + 1 && drawnRight(el) > el.getBoundingClientRect().left + el.clientWidth + 1)
      (ox === 'hidden' || ox === 'clip' ? out.cut : out.scroll).push(
        `${name(el)}: ${el.scrollWidth} > ${el.clientWidth} px (overflow ${ox})`);
  }
  // 2. a right edge past its container or the window
  const CONTENT = ".katex-display, [data-testid='stMarkdownContainer'], [data-testid='stVegaLiteChart'], " +
    "[data-testid='stVegaLiteChart'] svg, [data-testid='stDataFrame'], [data-testid='stTable'], [data-testid='stMetric'], " +
    "[data-testid='stButton'], [data-testid='stPageLink'], [data-testid='stCode'], [data-testid='stAlert'], " +
    "[data-testid='stImage'], [data-testid='stCaptionContainer'], [data-testid='stLinkButton'], [data-testid='stTabs'], " +
    "[data-testid='stCheckbox'], [data-testid='stSlider'], [data-testid='stSelectbox'], [data-testid='stRadio']";
  const BOX = "[data-testid='stColumn'], [data-testid='stExpanderDetails'], [data-testid='stVerticalBlockBorderWrapper'], " +
    "[data-testid='stTabs'] [role='tabpanel'], [data-testid='stMainBlockContainer']";
  for (const el of main.querySelectorAll(CONTENT)) {
    if (!shown(el)) continue;
    const r = el.getBoundingClientRect();
    if (r.width === 0) continue;
    const box = el.parentElement && el.parentElement.closest(BOX);
    const limit = Math.min(vw, box ? box.getBoundingClientRect().right : vw);
    if (r.right > limit + 1 || r.left < -1)
      out.past.push(`${name(el)}: ${Math.round(r.left)}..${Math.round(r.right)} px, its place ends at ${Math.round(limit)}` +
                    (box ? ` (${box.getAttribute('data-testid') || box.getAttribute('role')})` : ' (the window)'));
  }
  // 3. a heatmap's numbers and axis labels as drawn: font size x the chart's scale on screen
  for (const svg of main.querySelectorAll("[data-testid='stVegaLiteChart'] svg.marks")) {
    if (!shown(svg) || !svg.querySelector('.mark-rect')) continue;
    const own = svg.viewBox && svg.viewBox.baseVal && svg.viewBox.baseVal.width || svg.width.baseVal.value;
    const scale = svg.getBoundingClientRect().width / own;
    const px = t => parseFloat(getComputedStyle(t).fontSize) * scale;
    const own_title = svg.querySelector('.role-title-text text');
    const card = svg.closest("[data-testid='stVerticalBlockBorderWrapper']");
    const title = own_title ? own_title.textContent : card ? card.innerText.trim().split('\n')[0].slice(0, 60)
                : `a chart at y = ${Math.round(svg.getBoundingClientRect().top)} px`;
    const numbers = [...svg.querySelectorAll('.mark-text.role-mark text')].filter(t => t.textContent.trim()).map(px);
    if (numbers.length) out.numbers.push([title, Math.min(...numbers)]);
    const axes = [...svg.querySelectorAll('.role-axis-label text')].map(px);
    if (axes.length) out.axes.push([title, Math.min(...axes)]);
  }
  return out;
}"""


def settle(tab) -> None:
    """The run has ended; its lazily loaded elements (charts, KaTeX) have mounted and drawn."""
    tab.wait_for_selector(IDLE, timeout=60_000)
    wait_for_charts(tab, lambda cs: all(c["rendered"] for c in cs if c["visible"]), timeout_ms=20_000)
    tab.wait_for_function("() => !document.querySelector(\"[data-testid='stSkeleton']\")", timeout=20_000)
    tab.wait_for_timeout(300)


def resize(tab, width: int, height: int) -> None:
    tab.set_viewport_size({"width": width, "height": height})
    tab.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(r, 250))))")


def next_page(tab, server, page) -> None:
    """The "next →" link at the end of the page (a client-side switch), or the page's URL where there is none."""
    link = tab.locator("[data-testid='stPageLink'] a").filter(has_text="→")
    if link.count():
        after_run(tab, lambda: link.last.click(), timeout_ms=90_000)
    else:
        marker = run_marker(tab)
        tab.goto(f"{server.url}{page.url_path}?presenter=1", wait_until="commit")
        wait_run_end(tab, marker, timeout_ms=90_000)
    tab.wait_for_function(f"() => location.pathname.replace(/\\/$/, '') === {page.url_path.rstrip('/')!r}",
                          timeout=20_000)


@pytest.fixture(scope="module")
def measured(chromium, app_server):
    """{page file: {"WxH": MEASURE's result, "switch": its box at 1024×768}}, the whole walk timed. On the shared
    server (presenter mode is the session's own: a new browser context is a new session, nothing carried over)."""
    require_browser()
    server = app_server
    ctx = new_context(chromium, viewport={"width": SIZES[0][0], "height": SIZES[0][1]})
    results, started = {}, time.perf_counter()
    try:
        tab = ctx.new_page()
        for k, page in enumerate(PAGES):
            width, height = SIZES[0]
            resize(tab, width, height)
            if k == 0:
                marker = run_marker(tab)
                tab.goto(f"{server.url}{page.url_path}?presenter=1", wait_until="commit")
                wait_run_end(tab, marker, timeout_ms=90_000)
            else:
                next_page(tab, server, page)
            settle(tab)
            tab.evaluate("() => document.querySelector(\"[data-testid='stMain']\").scrollTo(0, 0)")
            switch = tab.locator(SWITCH)
            result = {"switch": switch.first.bounding_box() if switch.count() else None}
            for width, height in SIZES:
                resize(tab, width, height)
                result[f"{width}x{height}"] = tab.evaluate(MEASURE)
            results[page.file] = result
        for path, cell in EXPLAINED.items():
            if not any(p.path == path for p in PAGES):
                continue
            resize(tab, *SIZES[0])
            marker = run_marker(tab)
            tab.goto(f"{server.url}/{path}?presenter=1&cell={cell}", wait_until="commit")
            wait_run_end(tab, marker, timeout_ms=90_000)
            settle(tab)
            made = tab.locator("[data-testid='stMain']").get_by_text("was made", exact=False)
            result = {"explained": made.count() > 0 and made.first.is_visible()}
            for width, height in SIZES:
                resize(tab, width, height)
                result[f"{width}x{height}"] = tab.evaluate(MEASURE)
            results[f"{path}?cell"] = result
        results["seconds"] = time.perf_counter() - started
        if os.environ.get("ATTENTION_EXPLORER_FIT_DUMP"):          # what was measured, for a look by hand
            Path(os.environ["ATTENTION_EXPLORER_FIT_DUMP"]).write_text(json.dumps(results, indent=1))
        yield results
    finally:
        print(f"\npresenter fit: {len(PAGES)} pages and {len(EXPLAINED)} explained cells x {len(SIZES)} sizes in "
              f"{time.perf_counter() - started:.1f} s")
        ctx.close()


@pytest.mark.parametrize("size", [f"{w}x{h}" for w, h in SIZES])
@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.path or "overview")
def test_nothing_is_cut_or_scrolls_sideways(measured, page, size):
    found = measured[page.file][size]
    problems = found["scroll"] + found["cut"] + found["past"]
    assert not problems, f"{page.url_path} at {size} in presenter mode:\n  " + "\n  ".join(problems)


@pytest.mark.parametrize("size", [f"{w}x{h}" for w, h in SIZES])
@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.path or "overview")
def test_heatmap_numbers_and_labels_are_readable(measured, page, size):
    found = measured[page.file][size]
    small = [f"numbers {px:.1f} px in “{title}”" for title, px in found["numbers"] if px < MIN_NUMBER_PX - 0.05]
    small += [f"axis labels {px:.1f} px in “{title}”" for title, px in found["axes"] if px < MIN_AXIS_PX - 0.05]
    assert not small, f"{page.url_path} at {size}: " + "; ".join(small)


@pytest.mark.parametrize("size", [f"{w}x{h}" for w, h in SIZES])
@pytest.mark.parametrize("path", list(EXPLAINED))
def test_a_clicked_cells_arithmetic_is_not_cut(measured, path, size):
    if f"{path}?cell" not in measured:
        pytest.skip(f"no page at /{path}")
    found = measured[f"{path}?cell"]
    assert found["explained"], f"/{path}: the link's cell {EXPLAINED[path]} opened no explanation"
    problems = found[size]["scroll"] + found[size]["cut"] + found[size]["past"]
    assert not problems, f"/{path} with {EXPLAINED[path]} explained, at {size}:\n  " + "\n  ".join(problems)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.path or "overview")
def test_the_switch_is_over_the_fold_at_1024x768(measured, page):
    box = measured[page.file]["switch"]
    assert box is not None, f"{page.url_path}: no presenter switch in the page's header line"
    assert box["width"] > 0 and 0 <= box["y"] and box["y"] + box["height"] <= 768 and box["x"] + box["width"] <= 1024, box



def test_the_switch_hides_the_sidebar_and_brings_it_back(chromium, app_server):
    """A fresh session without presenter mode: the sidebar holds the settings beside the page; the switch on, the
    sidebar is gone and the main area starts at the window's left edge; off, the sidebar is back."""
    server = app_server
    ctx = new_context(chromium, viewport={"width": 1024, "height": 768})
    try:
        tab = ctx.new_page()
        marker = run_marker(tab)
        tab.goto(f"{server.url}/softmax", wait_until="commit")
        wait_run_end(tab, marker, timeout_ms=90_000)
        sidebar = tab.locator("[data-testid='stSidebar']")
        main = tab.locator("[data-testid='stMain']")
        switch = tab.get_by_role("switch", name="Presenter mode")

        def layout():
            return tab.evaluate("""() => {
              const s = document.querySelector("[data-testid='stSidebar']");
              const m = document.querySelector("[data-testid='stMain']").getBoundingClientRect();
              return {sidebar: s && s.checkVisibility() ? s.getBoundingClientRect().width : 0, left: m.left,
                      width: m.width, font: getComputedStyle(document.documentElement).fontSize};
            }""")

        switch.wait_for(state="visible", timeout=30_000)
        sidebar.get_by_label("Sentence", exact=True).wait_for(state="visible", timeout=30_000)
        before = layout()
        assert before["sidebar"] >= 200 and before["left"] >= 200 and before["font"] == "16px", before
        after_run(tab, lambda: switch.click(force=True))
        tab.wait_for_function("() => !document.querySelector(\"[data-testid='stSidebar']\").checkVisibility()",
                              timeout=10_000)
        on = layout()
        assert on["sidebar"] == 0 and on["left"] == 0 and on["width"] == 1024 and on["font"] == "20px", on
        assert switch.is_checked() and "presenter" not in tab.url
        assert not tab.locator("[data-testid='stExpandSidebarButton']").is_visible()    # no way to bring it back
        after_run(tab, lambda: switch.click(force=True))
        tab.wait_for_function("() => document.querySelector(\"[data-testid='stSidebar']\").checkVisibility()",
                              timeout=10_000)
        off = layout()
        assert off == before, (off, before)
        assert not switch.is_checked() and main.is_visible()
    finally:
        ctx.close()
