"""A phone is a first-class screen (WCAG 1.4.10 Reflow), checked at the end of every page's walk (tests/e2e/test_walk.py,
whose second half is on a 390 × 844 phone) at 390 px and at 320 CSS px wide (1.4.10's measure: 1280 px at 400%
zoom): the page never scrolls sideways (the document and Streamlit's main area no wider than the window), and
nothing sticks out past the window's right edge except inside a scroll region that has a name:

- a region the app labels (role="region" with an aria-label, reachable by Tab: ui/phone.py's scroll_region, a
  wide matrix of the handout);
- what Streamlit draws as its own scroll region and a keyboard can move in: a data grid (st.dataframe: a data
  table, 1.4.10's exception), a code block (st.code: lines of code keep their breaks), the row of tabs (a
  tablist: the arrow keys move along it), a display formula (KaTeX: the app's CSS gives it a visible scrollbar).

What an element clips (overflow hidden: KaTeX's MathML for screen readers, a slider's input) is not on the screen.
At 390 px, a chart drawn for a phone (in a "tall-" container, ui/phone.py: the induction heads' pattern grids and curves) has
no text under 11 px as drawn: every label's font size times the scale its SVG is drawn at (on a canvas, where no
text can be read, the spec's smallest font times the canvas's scale).
The check runs after the walk's last run has ended and its charts are drawn; a failure names the page, the width
and each element that sticks out (its test id or tag, width and right edge).
"""
from __future__ import annotations

NARROW = 320

# What sticks out of the window at the right, as {el, within, w, right, why}; why: "page" (it widens the page) or
# "unnamed" (inside a sideways scroll region with no name). Only Streamlit's main area: the sidebar is closed.
OVERFLOW_JS = """() => {
  const vw = document.documentElement.clientWidth, main = document.querySelector("[data-testid='stMain']");
  const name = e => (e.getAttribute('data-testid') || e.tagName.toLowerCase())
                    + (e.getAttribute('aria-label') ? `[${e.getAttribute('aria-label').slice(0, 40)}]` : '');
  const named = e => (e.getAttribute('role') === 'region' && !!e.getAttribute('aria-label') && e.tabIndex >= 0)
    || !!e.closest("[data-testid='stDataFrame'], [data-testid='stTable'], [data-testid='stCode'], [role='tablist']")
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


def overflow(tab) -> list[dict]:
    return tab.evaluate(OVERFLOW_JS)


# The pages that draw a chart for the phone, and the tab it is under: the walk opens it if it left another open.
PHONE_CHART_TABS = {"/induction_heads": "Every head's pattern"}

# Every chart drawn for a phone that is on the screen: the size of its smallest text as drawn (an SVG chart: each
# text's font size times the scale the SVG is drawn at; a canvas: no text to read, so null, with the scale its
# canvas is drawn at, the width on the screen over the width Vega drew it at).
PHONE_CHARTS_JS = """() => [...document.querySelectorAll("[class*='st-key-tall-'] [data-testid='stVegaLiteChart']")]
  .filter(e => e.checkVisibility() && e.getBoundingClientRect().width > 0).map(e => {
    const box = e.closest("[class*='st-key-tall-']"), svg = e.querySelector('svg.marks'), c = e.querySelector('canvas');
    const key = [...box.classList].find(k => k.startsWith('st-key-tall-')).slice(7);
    if (svg) {
      const scale = svg.getBoundingClientRect().width / (svg.viewBox.baseVal.width || svg.width.baseVal.value);
      const sizes = [...svg.querySelectorAll('text')].filter(t => t.textContent.trim())
                      .map(t => parseFloat(getComputedStyle(t).fontSize) * scale);
      return {key, scale, texts: sizes.length, smallest: sizes.length ? Math.min(...sizes) : null};
    }
    if (c) return {key, scale: c.getBoundingClientRect().width / (parseFloat(c.style.width) || c.width / devicePixelRatio),
                   texts: null, smallest: null};
    return {key, scale: null, texts: 0, smallest: null};
  })"""


def phone_charts(tab) -> list[dict]:
    return tab.evaluate(PHONE_CHARTS_JS)
