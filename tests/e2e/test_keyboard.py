"""A keyboard is enough (issue 32 items 2 and 6), in chromium, with the keyboard alone (Tab, Shift-Tab, arrows, Enter):

- on every page whose heatmaps explain their cells, a cell is explained from the keyboard: Tab from the top of the
  page to the first row and column pickers under a heatmap, choose a row and a column with the arrows and Enter, and
  the cell's explanation is on the page and its cell in the link (as a click makes it): every page's walk does it
  first (tests/e2e/test_walk.py, Walk.keyboard_pick, with this module's steps);
- one page walked: the skip link is the first stop, the page's own controls a few stops after it, every stop shows
  where the focus is (the pixels of the element change when the focus arrives), Shift-Tab goes back the way Tab came
  and Tab leaves the page's content at its end (no trap).

One server (the shared one), one browser context, the pages in sequence.
"""
from __future__ import annotations

import re

from tests.e2e.conftest import open_page


FOCUSED = """() => { const e = document.activeElement; if (!e || e === document.body) return null;
  const host = e.closest('[data-testid]');
  return {label: e.getAttribute('aria-label') || '', testid: host ? host.getAttribute('data-testid') : '',
          main: !!e.closest('#stMain'), side: !!e.closest('[data-testid=stSidebar]'),
          text: (e.innerText || '').slice(0, 60)}; }"""
PICKER = re.compile(r"^(Row|Column) of .+ to explain$")


def focused(tab) -> dict | None:
    return tab.evaluate(FOCUSED)


def tab_to(tab, want, most: int = 80) -> tuple[dict, int]:
    """Press Tab until the focused element satisfies `want`; (it, how many presses)."""
    for k in range(1, most + 1):
        tab.keyboard.press("Tab")
        now = focused(tab)
        if now and want(now):
            return now, k
    raise AssertionError(f"no element as wanted within {most} Tab presses (last: {focused(tab)})")


def choose(tab, downs: int) -> None:
    """The focused picker: open it (Enter), move down the options (arrows), take one (Enter); wait for the run."""
    from bench._common import after_run
    tab.keyboard.press("Enter")
    for _ in range(downs):
        tab.keyboard.press("ArrowDown")
    after_run(tab, lambda: tab.keyboard.press("Enter"), timeout_ms=30_000)


# Streamlit's own chrome that showed no change of pixels at its focus in 1.67 (measured here), now ringed by the app's
# CSS (ui/raw_html.py FOCUS_CSS): checked with every other stop, and the walk must meet each of them
CHROME = {"stBaseButton-elementToolbar", "stHeaderActionElements"}
# and where Streamlit's own ring (its primary at 50 %: 2.2:1 on white) is replaced by the app's: buttons, tabs
OWN_RING = {"stTab", "stExpander"}


# The focused element's ring as chromium draws it, its opacity as seen (its own times every ancestor's) and whether
# it is on top at its centre (a chart's toolbar raised only by a hover was under the chart while a button had the focus)
RING = """() => { const e = document.activeElement, cs = getComputedStyle(e), r = e.getBoundingClientRect();
  let seen = 1; for (let a = e; a && a.nodeType === 1; a = a.parentElement) seen *= parseFloat(getComputedStyle(a).opacity);
  const top = document.elementFromPoint(r.x + r.width / 2, r.y + r.height / 2);
  return {style: cs.outlineStyle, width: parseFloat(cs.outlineWidth), color: cs.outlineColor, seen,
          on_top: !!top && (top === e || e.contains(top))}; }"""


def _centred(handle):
    """The element in the middle of the window (where a Tab's own scrolling cannot have put it under the header) and
    its box: the same place before and after the focus leaves it, for the comparison of its pixels."""
    handle.evaluate("e => e.scrollIntoView({block: 'center', inline: 'nearest'})")
    return handle.bounding_box()


def _pixels(tab, box) -> bytes:
    clip = {"x": max(0, box["x"] - 4), "y": max(0, box["y"] - 4), "width": box["width"] + 8,
            "height": box["height"] + 8}
    return tab.screenshot(clip=clip, animations="disabled")


def test_a_page_walked_with_the_keyboard_alone(app_server, laptop):
    """/rope with Tab, Shift-Tab, arrows and Enter only."""
    tab = laptop()
    open_page(tab, app_server, "rope")
    from ui.raw_html import FOCUS_RING
    tab.wait_for_function("c => [...document.querySelectorAll('style')].some(s => s.textContent.includes(c))",
                          arg=FOCUS_RING, timeout=30_000)                     # the page's own style has arrived
    tab.keyboard.press("Tab")
    assert focused(tab)["testid"] == "stSkipToContent"            # the first stop: past the sidebar's settings
    ring = "rgb({}, {}, {})".format(*(int(FOCUS_RING[k:k + 2], 16) for k in (1, 3, 5)))
    for _ in range(30):                        # a run landing may restyle the page for a moment: read it again
        skip = tab.evaluate(RING)
        if (skip["style"], skip["color"]) == ("solid", ring):
            break
        tab.wait_for_timeout(100)
    assert (skip["style"], skip["color"]) == ("solid", ring), skip   # the app's ring, not Streamlit's 2.2:1 one
    tab.keyboard.press("Enter")
    assert tab.evaluate("document.activeElement.id") == "stMain"
    # the page's own controls (the RoPE page's buttons) a few stops after the skip link
    tab.locator("#stMain [data-testid=stBaseButton-secondary]").first.wait_for(timeout=20_000)
    _, stops = tab_to(tab, lambda f: f["main"] and f["testid"] == "stBaseButton-secondary", most=8)
    assert stops <= 5, f"the page's first own control is {stops} Tab stops after the skip link"
    # every stop shows where the focus is: its pixels change when the focus arrives (compared with the same place
    # once the focus moved on), up to the first heatmap's row picker
    # (Streamlit's own chrome, a chart's toolbar buttons and a heading's anchor, also by its ring: FOCUS_CSS's colour,
    # solid, 2 px, and nothing of it faded)
    seen, unseen, rings = [], [], []
    for _ in range(40):
        now, handle = focused(tab), tab.evaluate_handle("document.activeElement")
        box = _centred(handle)
        with_focus = _pixels(tab, box) if box and box["width"] > 0 else None
        if now["testid"] in CHROME or now["testid"].startswith("stBaseButton") or now["testid"] in OWN_RING:
            rings.append((now["label"] or now["text"], tab.evaluate(RING)))
        tab.keyboard.press("Tab")
        after = _centred(handle)
        shown = with_focus is not None and after == box and _pixels(tab, box) != with_focus
        (seen if shown else unseen).append(now)
        if now["label"].startswith("Row of"):
            break
    assert rings and all(r["style"] == "solid" and r["width"] >= 2 and r["color"] == ring and r["seen"] == 1
                         and r["on_top"] for _, r in rings), rings
    picker = seen[-1]
    assert picker["label"].startswith("Row of"), (seen, unseen)
    assert not unseen, f"no visible focus: {unseen}"
    assert CHROME <= {s["testid"] for s in seen}, f"the walk met no chart toolbar or heading anchor: {seen}"
    assert len(seen) >= 8, seen
    # the arithmetic: back to the picker, choose with the arrows and Enter
    tab.keyboard.press("Shift+Tab")
    assert focused(tab)["label"] == picker["label"]
    choose(tab, 2)
    back = []
    for _ in range(3):                                             # Shift-Tab goes back the way Tab came
        tab.keyboard.press("Shift+Tab")
        back.append(focused(tab))
    forth = []
    for _ in range(3):
        tab.keyboard.press("Tab")
        forth.append(focused(tab))
    assert forth[-1]["label"] == picker["label"] and forth[:2] == back[:2][::-1], (back, forth)
    # no trap: Tab goes on through the page and out of its content
    labels, left = [], False
    for _ in range(150):
        tab.keyboard.press("Tab")
        now = focused(tab)
        if now is None or not now["main"]:
            left = True
            break
        labels.append((now["testid"], now["label"]))
        if now["testid"] == "stPageLink-NavLink":                  # the previous/next links: the app's ring too
            rings.append((now["text"], tab.evaluate(RING)))
    assert left, f"Tab never left the page's content: the last stops {labels[-8:]}"
    assert any(label.startswith("←") or label.endswith("→") for label, _ in rings[-2:]) and all(
        r["style"] == "solid" and r["color"] == ring for _, r in rings), rings[-2:]
    assert len(set(labels)) > 10, labels
