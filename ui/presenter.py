"""Presenter mode, for a projector a back row can read: one switch on every page (in the line over the title),
and the style it puts on the page while on.

On, the sidebar goes (the content takes the whole width; turn the switch off to change a setting), text,
formulas and captions grow by a quarter, heatmaps get larger cells and numbers (ui/charts.py, big=True), cards
side by side stack one per row up to 1100 px wide, and a formula wider than its place breaks after its = and +
signs as a line of text does, or (a block of aligned lines, which cannot break) is scaled down to its place:
nothing is cut and nothing needs a sideways scroll (tests/e2e/test_presenter_fit.py measures it on every page).

The switch writes nothing to the address bar: a projector link (presenter=1) is a choice made on the Share page,
and a link opened with it (settings_state.presenter_from_query) turns the switch on.
"""
from __future__ import annotations

import streamlit as st

from .charts import big_spec
from .raw_html import trusted_html
from .settings_state import presenting

KEY = "w.presenter"
LABEL = "Presenter mode"
STACK_BELOW = 1100          # px of window width: up to it, columns stack one per row
SCALE = 1.25                # text, formulas and captions: 16 px -> 20 px
WIDE, WIDE_SCALE = 1600, 1.375      # from 1600 px wide (a 1920 × 1080 projector): 22 px

# Constant CSS (no variable part), sent only while presenter mode is on.
# - the sidebar and the control that would bring it back: gone, so the main area takes the whole width, with less
#   room over the header line;
# - the root font size: Streamlit sizes text, headings, captions, widgets and spacing in rem, KaTeX in em;
# - a display formula: breaks after a top-level =, + or − like text (KaTeX puts each such piece in a .base box;
#   Streamlit's style keeps them on one line); a piece still too wide is scaled down by FIT_SCRIPT;
# - columns: one per row up to STACK_BELOW px (Streamlit stacks them only below 640 px).
PRESENTER_CSS = (
    "<style>"
    ":root{--presenter:1}"
    "[data-testid='stSidebar'],[data-testid='stSidebarCollapsedControl'],[data-testid='stExpandSidebarButton']"
    "{display:none !important}"
    f"html{{font-size:{16 * SCALE:g}px}}"
    f"@media (min-width:{WIDE}px){{html{{font-size:{16 * WIDE_SCALE:g}px}}}}"
    "[data-testid='stMainBlockContainer']{padding:5.5rem 1.5rem 2rem;max-width:100%}"
    "[data-testid='stDataFrame']{max-width:100%}"
    "[data-testid='stVegaLiteChart'] canvas.marks{max-width:100%;height:auto !important}"
    ".katex-display>.katex{white-space:normal}"
    ".katex-display{overflow:visible !important}"
    "[class*='st-key-xp-'] .katex-display{overflow:visible !important}"
    f"@media (max-width:{STACK_BELOW}px){{"
    "[data-testid='stMain'] [data-testid='stHorizontalBlock']:has(>[data-testid='stColumn']){flex-wrap:wrap}"
    "[data-testid='stMain'] [data-testid='stColumn']{flex:1 1 100% !important;min-width:100% !important;"
    "width:100% !important}}"
    "</style>")


# Scales down a display formula still wider than its place once its lines are broken (an aligned block, one long
# term), and gives it back its size when it fits or presenter mode is off (--presenter, set by PRESENTER_CSS). It
# runs on every change of the page (a rerun, a fragment, a tab) and of the window, at most once a frame; installed
# once per browser tab. A constant: no variable part.
FIT_SCRIPT = """<script>(() => {
  if (window.__fitFormulas) { window.__fitFormulas(); return; }
  let queued = false;
  const fit = () => {
    queued = false;
    const on = getComputedStyle(document.documentElement).getPropertyValue('--presenter').trim() === '1';
    for (const box of document.querySelectorAll('.katex-display')) {
      const k = box.querySelector(':scope > .katex');
      if (!k) continue;
      if (k.style.fontSize) k.style.fontSize = '';
      if (!on || !box.clientWidth) continue;
      const over = k.scrollWidth / box.clientWidth;
      if (over > 1.002) k.style.fontSize = (parseFloat(getComputedStyle(k).fontSize) / over * 0.98).toFixed(2) + 'px';
    }
  };
  window.__fitFormulas = () => { if (!queued) { queued = true; requestAnimationFrame(fit); } };
  new MutationObserver(window.__fitFormulas).observe(document.body, {childList: true, subtree: true});
  window.addEventListener('resize', window.__fitFormulas);
  window.__fitFormulas();
})();</script>"""


def presenter_line(where: str) -> bool:
    """The line over the title: where you are, and the presenter switch (its style with it when on).

    One row of two elements: the location caption and the toggle. Returns whether presenter mode is on."""
    row = st.container(horizontal=True, vertical_alignment="center", gap="medium", key="presenter-line")
    row.caption(f":material/location_on: {where}")
    on = row.toggle(LABEL, value=presenting(), key=KEY, width="content",
                    help=f"For a projector: no sidebar, larger text, formulas, heatmaps and numbers, cards one "
                         f"per row up to {STACK_BELOW} px wide. Turn it off to see the sidebar and change a "
                         "setting. It does not go in the address bar: a link that opens in it is made on the "
                         "Share page.")
    st.session_state["s.presenter"] = bool(on)
    if on:
        trusted_html(PRESENTER_CSS)
        with st.sidebar:                    # hidden while on: the script takes no room on the page
            trusted_html(FIT_SCRIPT, script=True)
    return bool(on)


def presented(spec: dict) -> dict:
    """A chart's spec as this session shows it: its fonts grown in presenter mode (charts.big_spec), else as is."""
    return big_spec(spec) if presenting() else spec
