"""A phone is a first-class screen (WCAG 1.4.10 Reflow): every page of the navigation at 390 × 844 (a phone) and at
320 CSS px wide (1.4.10's measure: 1280 px at 400% zoom), in one browser context on the shared server, page after
page: the page never scrolls sideways (the document and Streamlit's main area no wider than the window), and
nothing sticks out past the window's right edge except inside a scroll region that has a name:

- a region the app labels (role="region" with an aria-label, reachable by Tab: ui/phone.py's scroll_region, a
  wide matrix of the handout);
- what Streamlit draws as its own scroll region and a keyboard can move in: a data grid (st.dataframe: a data
  table, 1.4.10's exception), a code block (st.code: lines of code keep their breaks), the row of tabs (a
  tablist: the arrow keys move along it), a display formula (KaTeX: the app's CSS gives it a visible scrollbar).

What an element clips (overflow hidden: KaTeX's MathML for screen readers, a slider's input) is not on the screen.
The check runs after every page's run has ended and its charts are drawn; a failure names the page, the width
and each element that sticks out (its test id or tag, width and right edge).
"""
from __future__ import annotations

import pytest

from bench._common import all_pages, new_context, wait_for_charts
from tests.e2e.conftest import open_page

PHONE = {"width": 390, "height": 844}
NARROW = 320

# What sticks out of the window at the right, as {el, within, w, right, why}; why: "page" (it widens the page) or
# "unnamed" (inside a sideways scroll region with no name). Only Streamlit's main area: the sidebar is closed.
OVERFLOW_JS = """() => {
  const vw = document.documentElement.clientWidth, main = document.querySelector("[data-testid='stMain']");
  const name = e => (e.getAttribute('data-testid') || e.tagName.toLowerCase())
                    + (e.getAttribute('aria-label') ? `[${e.getAttribute('aria-label').slice(0, 40)}]` : '');
  const named = e => (e.getAttribute('role') === 'region' && !!e.getAttribute('aria-label') && e.tabIndex >= 0)
    || !!e.closest("[data-testid='stDataFrame'], [data-testid='stCode'], [role='tablist']")
    || e.classList.contains('katex-display');
  const out = [];
  if (document.documentElement.scrollWidth > vw + 1) out.push({el: 'document', w: document.documentElement.scrollWidth, why: 'page'});
  if (main && main.scrollWidth > main.clientWidth + 1) out.push({el: 'stMain', w: main.scrollWidth, why: 'page'});
  const done = new Set();
  for (const el of main ? main.querySelectorAll('*') : []) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0 || r.right <= vw + 1 || el.closest("[data-testid='stElementToolbar']")) continue;
    let a = el.parentElement, why = 'page', box = null;
    for (; a && a !== main; a = a.parentElement) {
      const o = getComputedStyle(a).overflowX;
      if (o === 'hidden' || o === 'clip') { why = null; break; }        // clipped here; the clipping box is checked itself
      if (o === 'auto' || o === 'scroll') { why = named(a) ? null : 'unnamed'; box = a; break; }
    }
    if (!why || done.has(box || el)) continue;
    done.add(box || el);
    const within = el.closest('[data-testid]');
    out.push({el: name(el), within: within ? name(within) : null, w: Math.round(r.width), right: Math.round(r.right), why,
              box: box ? name(box) + '.' + [...box.classList].join('.').slice(0, 60) : null});
    if (out.length >= 8) break;
  }
  return out;
}"""

PAGES = all_pages()


def overflow(tab) -> list[dict]:
    return tab.evaluate(OVERFLOW_JS)


@pytest.fixture(scope="module")
def phone(chromium):
    ctx = new_context(chromium, viewport=PHONE)
    tab = ctx.new_page()
    yield tab
    ctx.close()


@pytest.mark.parametrize("page", PAGES, ids=[p.path or "overview" for p in PAGES])
def test_no_page_scrolls_sideways_on_a_phone(app_server, phone, page):
    phone.set_viewport_size(PHONE)
    open_page(phone, app_server, page.path)
    wait_for_charts(phone, lambda cs: all(c["rendered"] for c in cs if c["visible"]), timeout_ms=10_000)
    found = {PHONE["width"]: overflow(phone)}
    phone.set_viewport_size({"width": NARROW, "height": PHONE["height"]})
    phone.wait_for_timeout(150)                                   # charts sized to their container redraw
    found[NARROW] = overflow(phone)
    assert not any(found.values()), f"{page.url_path} sticks out sideways: {found}"
