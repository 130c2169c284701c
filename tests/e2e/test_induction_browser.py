"""Watching the heads form, in chromium: the induction page trains the default run from seed 0 (the button labelled
Train: this test presses it, the walk never does), every head's pattern moves on the screen while it trains, and
afterwards the step slider, stopped at the last step before the drop, shows no layer-0 heatmap with a line one
token back, and stopped at the drop's end shows one.

The heatmaps are drawn on a canvas, so the test reads what a learner sees: the colour of each cell (white for
weight 0 to dark blue for 1, an ordered scale: the darkest cell of a row is its largest weight). A head "looks one
token back" in a row when the row's darkest cell is the one just left of the diagonal, j = i − 1."""
from __future__ import annotations

import re
import time

import numpy as np

try:
    from playwright.sync_api import Error as PlaywrightError
except ImportError:            # the fixtures skip, or fail under ATTENTION_EXPLORER_REQUIRE_BROWSER=1
    PlaywrightError = RuntimeError

from attention_core.training.lm.train import STEPS
from bench._common import after_run, new_context
from tests.e2e.conftest import open_page

TRAIN_S = 420                  # the default run: 1,500 steps, ≈ 15 s on an idle machine (bench/lm.py); 5 min at load 20
N = 40                         # the shown sequence's tokens: each heatmap is 40 × 40
ONE_BACK_BEFORE, ONE_BACK_AFTER = 15, 20     # rows (of 39) whose darkest cell is one token back: none of layer 0's
                                             # heads has 15 before the drop; head 0 has 20 or more after it

# The canvas's pixels as [height][width] of (r, g, b, a), for a chart element.
PIXELS_JS = """el => { const c = el.querySelector('canvas'); if (!c) return null;
  const d = c.getContext('2d').getImageData(0, 0, c.width, c.height);
  return {w: c.width, h: c.height, data: Array.from(d.data)}; }"""


def pixels(chart) -> np.ndarray:
    got = chart.evaluate(PIXELS_JS)
    assert got is not None, "the patterns chart has no canvas"
    return np.array(got["data"], dtype=np.int16).reshape(got["h"], got["w"], 4)


def panels(img: np.ndarray) -> list[tuple[int, int, int, int]]:
    """The heatmaps' boxes (x0, y0, x1, y1), rows of panels top to bottom, each row left to right. A heatmap is
    lower-triangular: its first column (key 0, every query) and its last row (query 39, every key) are full, so its
    left and bottom edges are the runs of bluish pixels (blue above red: the scale's colours, never the grey of text
    or axes), and its side is the first column's height."""
    blue = (img[..., 2] - img[..., 0] >= 5) & (img[..., 3] > 200)

    def runs(mask_1d, least):
        out, start = [], None
        for k, on in enumerate([*list(mask_1d), False]):
            if on and start is None:
                start = k
            elif not on and start is not None:
                if k - start >= least:
                    out.append((start, k))
                start = None
        return out

    boxes = []
    for y0, y1 in runs(blue.sum(axis=1) >= 20, 60):             # the panels' rows: tall bands of blue
        for x0, _ in runs(blue[y0:y1].sum(axis=0) >= 20, 60):
            column = blue[: y1, x0 + 1]
            top = y1 - 1
            while top > 0 and column[top - 1]:
                top -= 1
            side = y1 - top
            boxes.append((x0, top, x0 + side, y1))
    return boxes


def rows_one_back(img: np.ndarray, box) -> int:
    """How many queries i ≥ 1 have their darkest cell at key j = i − 1 (only the keys j ≤ i are drawn)."""
    x0, y0, x1, y1 = box
    cw, ch = (x1 - x0) / N, (y1 - y0) / N
    dark = np.zeros((N, N))
    for i in range(N):
        for j in range(i + 1):
            px = img[int(y0 + (i + 0.5) * ch), int(x0 + (j + 0.5) * cw)]
            dark[i, j] = 765 - int(px[0]) - int(px[1]) - int(px[2])
    return int(sum(np.argmax(dark[i, : i + 1]) == i - 1 for i in range(1, N)))


def grid(tab):
    """The step slider's heatmaps: the chart under the tab "Every head's pattern"."""
    panel = tab.locator("[data-testid='stTabPanel']").first
    return panel.locator("[data-testid='stVegaLiteChart']").first


def slider_value(tab) -> str:
    return tab.locator("[data-testid='stSlider']").filter(has_text="Step shown").locator(
        "[data-testid='stSliderThumbValue']").first.inner_text()


def test_the_heads_form_on_screen_and_the_slider_shows_them_before_and_after_the_drop(app_server, chromium):
    ctx = new_context(chromium, viewport={"width": 1366, "height": 900})
    tab = ctx.new_page()
    try:
        open_page(tab, app_server, "induction_heads", {"induction.seed": "0"})
        tab.get_by_role("button", name="Train from a seeded random start").click()
        progress = tab.locator("[data-testid='stProgress']")
        progress.wait_for(timeout=60_000)
        # while it trains: the live heatmaps are redrawn every 100 steps; two different steps, two different pictures
        seen, t0 = {}, time.perf_counter()
        while len(seen) < 2 and time.perf_counter() - t0 < TRAIN_S and progress.count():
            try:
                text = progress.first.inner_text(timeout=2_000)
                live = tab.locator("[data-testid='stVegaLiteChart']").first      # under the progress bar
                step = int(re.search(r"Step ([\d,]+) of", text).group(1).replace(",", "")) // 100 * 100
                if step >= 100 and step not in seen:
                    seen[step] = pixels(live)
            except (PlaywrightError, AttributeError, AssertionError):   # a redraw replaced the element mid-read
                continue
            time.sleep(0.3)
        assert len(seen) >= 2, f"the live heatmaps were seen at steps {sorted(seen)} only"
        a, b = (seen[k] for k in sorted(seen)[:2])
        assert a.shape != b.shape or np.abs(a - b).sum() > 0, "the heatmaps did not move while the run trained"
        tab.get_by_text("Your run", exact=False).first.wait_for(timeout=TRAIN_S * 1000)
        tab.wait_for_function("() => !document.querySelector(\"[data-testid='stProgress']\")", timeout=60_000)
        assert f"{STEPS:,} · after the drop" in slider_value(tab)

        # the learner stops the slider at the step before the drop, then at the step after it
        found = {}
        for button, mark in (("Before the drop", "the last step before the drop"), ("After the drop", "the drop's end")):
            after_run(tab, tab.get_by_role("button", name=button).click, timeout_ms=60_000)
            assert mark in slider_value(tab), slider_value(tab)
            chart = grid(tab)
            chart.scroll_into_view_if_needed()
            time.sleep(0.5)
            img = pixels(chart)
            boxes = panels(img)
            assert len(boxes) == 8, f"found {len(boxes)} heatmaps, not 2 layers × 4 heads"
            found[button] = [rows_one_back(img, box) for box in boxes[:4]]          # layer 0's four heads
        # the same count as tests/test_induction_history.py's on the shipped run's numbers (the same seed, steps and
        # machine: the same run): layer 0's heads 10, 9, 5, 7 of 39 rows before the drop (step 750), 25, 12, 9, 17
        # at its end (step 900), head 0's line one token back reaching query 25
        assert max(found["Before the drop"]) < ONE_BACK_BEFORE, found
        assert found["After the drop"][0] >= ONE_BACK_AFTER, found
        # and the slider's keyboard moves it one logged step
        thumb = tab.locator("[data-testid='stSlider']").filter(has_text="Step shown").get_by_role("slider").first
        after_run(tab, lambda: (thumb.focus(), thumb.press("ArrowRight")), timeout_ms=60_000)
        assert slider_value(tab).startswith("950"), slider_value(tab)
    finally:
        ctx.close()
