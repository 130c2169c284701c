"""A seeded random walk over every page, the way a student's hands go: one notch, one click at a time.

For each page of the navigation (ui/nav.py SECTIONS, via bench._common.all_pages(): a new page
joins by existing), a fresh student (browser context) opens the page on one shared server and
makes STEPS interactions chosen at random from the controls the page and the sidebar show at
that moment: a slider moved one notch by keyboard, a checkbox or toggle, a selectbox option, a
multiselect option, a radio option, a segmented-control button, a number input step (its +/−
buttons, or ArrowUp/ArrowDown where the input is too narrow to show them), a tab, a click in a
heatmap (Vega-Lite) plot, an expander (the sidebar's lazy settings groups included), a page link
(followed, then back by the top navigation), a button (never one that trains), and now and then
a short sentence typed in the sidebar. Twice per walk a slider gets a burst of consecutive
notches (the sidebar's "Heads" preferred): one notch at a time is how the Heads → KV heads crash
was found, a single jump never showed it.

After every interaction the run it caused is waited for (never a fixed sleep), then the page
must show no exception (stException), no error dialog or connection error, the browser must
have thrown no JS error, and the server must have logged no uncaught exception. A failure
prints the page, the seed and every interaction so far, and the server's traceback.

The walk starts on a laptop's 1366 × 768 screen. Halfway (a control moved, and a heatmap cell
clicked where the page has one) axe-core checks the page against WCAG 2.1 A and AA
(tests/e2e/axe.py); then the window becomes a phone's 390 × 844, the walk goes on there, and
axe checks the page again at its end: 0 violations in the app's content, both times (what
Streamlit itself draws and the app cannot change is listed in axe.STREAMLIT with its issue).
Last, the page must reflow (WCAG 1.4.10, tests/e2e/reflow.py): at 390 and at 320 px wide nothing
scrolls sideways but a named scroll region, in whatever state the walk left the page.

Another seed, more steps, fewer pages (url paths, "overview" for the Overview):

    ATTENTION_EXPLORER_WALK_SEED=42 ATTENTION_EXPLORER_WALK_STEPS=60 \\
        python -m pytest -q tests/e2e/test_walk.py -k "softmax or rope"
"""
from __future__ import annotations

import os
import random
import re
import time
from dataclasses import dataclass, field

import pytest

from bench._common import EXCEPTION, IDLE, Page, all_pages, wait_for_charts, wait_run_end
from tests.e2e import axe, reflow
from tests.e2e.conftest import LAPTOP, open_page

SEED = int(os.environ.get("ATTENTION_EXPLORER_WALK_SEED", "20240607"))
STEPS = int(os.environ.get("ATTENTION_EXPLORER_WALK_STEPS", "14"))   # 25 before the checks a page's walk makes
# besides (axe at two sizes, the reflow, a cell picked by keyboard) took ~10 s a page: the suite's 15 min on 2 cores
BURSTS = 2                     # slider bursts per walk (consecutive notches on one slider)
BURST_LENGTH = (3, 4)          # notches in a burst
RUN_TIMEOUT_MS = 60_000        # a run caused by one interaction
MAYBE_RUN_MS = 500             # an action that may rerun nothing (a tab, a plain expander, a chart click)
EXPECT_SEND_MS = 2_500         # an action that should rerun (a widget) has asked for it by then

PAGES = all_pages()

# How often each kind of control is picked (relative), when the page has one.
WEIGHTS = {"slider": 3.0, "checkbox": 1.5, "selectbox": 1.5, "multiselect": 0.7, "radio": 1.2, "segmented": 1.2,
           "number": 1.5, "tab": 1.2, "heatmap": 1.2, "expander": 1.0, "page_link": 0.4, "button": 0.6,
           "sentence": 0.3}
SIDEBAR_SLIDER = 2.0           # a sidebar slider is this much likelier than one on the page
CLOSED_GROUP = 4.0             # a closed sidebar settings group is this much likelier to be clicked (opened)
MAX_PAGE_LINKS = 2             # page links followed per walk (each costs two page runs)
NEVER = re.compile(r"\btrain\b|download|upload|delete|reset", re.I)   # buttons the walk never presses
PHONE = {"width": 390, "height": 844}      # the second half of the walk (after the first axe check)
SENTENCES = ["the cat sat on a mat", "we miss the dog", "i love you today", "they hate me", "zebra quantum flux",
             "the dog sat"]

# Every control the student can reach now (visible, enabled), read in one evaluate: kind, the
# nth element with its data-testid (for a locator), its label, and what the action needs.
DISCOVER = """() => {
  const shown = e => {         // drawn, and with a size (a zero-size box passes checkVisibility, not a click)
    if (!e || !(e.checkVisibility ? e.checkVisibility({visibilityProperty: true}) : e.offsetParent !== null)) return false;
    const r = e.getBoundingClientRect(); return r.width > 0 && r.height > 0; };
  const text = e => (e ? e.innerText || e.textContent || '' : '').trim().replace(/\\s+/g, ' ');
  const label = el => text(el.querySelector("[data-testid='stWidgetLabel']"));
  const out = [];
  const each = (testid, fn) => document.querySelectorAll(`[data-testid='${testid}']`).forEach((el, i) => {
    if (!shown(el)) return;
    const base = {testid, i, sidebar: !!el.closest("[data-testid='stSidebar']"),
                  form: !!el.closest("[data-testid='stForm']"), label: label(el)};
    const extra = fn(el);
    if (extra) out.push(Object.assign(base, extra));
  });
  each('stSlider', el => {
    const ins = [...el.querySelectorAll("input[type='range']")];
    if (!ins.length || ins.some(x => x.disabled)) return null;
    return {kind: 'slider', label: label(el) || ins[0].getAttribute('aria-label') || '',
            thumbs: ins.map(x => ({value: +x.value, min: +x.min, max: +x.max, text: x.getAttribute('aria-valuetext')}))};
  });
  each('stCheckbox', el => {
    const x = el.querySelector("input[type='checkbox']");
    if (!x || x.disabled) return null;
    return {kind: 'checkbox', toggle: x.getAttribute('role') === 'switch', checked: x.checked,
            label: x.getAttribute('aria-label') || text(el)};
  });
  each('stSelectbox', el => {
    const x = el.querySelector("input[role='combobox']");
    if (!x || x.disabled) return null;
    return {kind: 'selectbox', value: x.value, label: x.getAttribute('aria-label') || label(el)};
  });
  each('stMultiSelect', el => {
    const x = el.querySelector("input[role='combobox']");
    if (!x || x.disabled) return null;
    return {kind: 'multiselect', label: x.getAttribute('aria-label') || label(el)};
  });
  each('stRadio', el => {
    const options = [...el.querySelectorAll("[data-testid='stRadioOption']")].map(o => {
      const x = o.querySelector('input'); return {text: text(o), checked: !!(x && x.checked), disabled: !x || x.disabled};
    });
    return options.some(o => !o.checked && !o.disabled) ? {kind: 'radio', options} : null;
  });
  each('stButtonGroup', el => {
    const options = [...el.querySelectorAll('button')].map(b => ({text: text(b), variant: b.getAttribute('data-variant'),
      checked: b.getAttribute('aria-checked') === 'true' || b.getAttribute('aria-pressed') === 'true', disabled: b.disabled}));
    return options.some(o => !o.checked && !o.disabled) ? {kind: 'segmented', options} : null;
  });
  each('stNumberInput', el => {
    const x = el.querySelector("input[type='number']");
    if (!x || x.disabled) return null;
    const btn = id => { const b = el.querySelector(`[data-testid='${id}']`); return !!b && shown(b) && !b.disabled; };
    return {kind: 'number', label: x.getAttribute('aria-label') || label(el), value: x.value,
            min: x.min === '' ? null : +x.min, max: x.max === '' ? null : +x.max,
            up: btn('stNumberInputStepUp'), down: btn('stNumberInputStepDown')};
  });
  each('stTab', el => (el.getAttribute('aria-selected') === 'true' || el.getAttribute('aria-disabled') === 'true') ? null
       : {kind: 'tab', label: text(el)});
  each('stVegaLiteChart', el => {
    const svg = el.querySelector('svg.marks');
    const canvas = el.querySelector('canvas');
    if (!svg && !canvas) return null;                  // not drawn yet
    const r = (svg || canvas).getBoundingClientRect();
    if (r.width < 10 || r.height < 10) return null;
    const cells = svg ? [...svg.querySelectorAll('g.mark-rect.role-mark path')].filter(p => {
      const b = p.getBoundingClientRect(); return b.width >= 3 && b.height >= 3; }).length : 0;
    const heading = el.closest("[data-testid='stVerticalBlock']");
    const h = heading && heading.querySelector('h1, h2, h3, h4, h5, h6');
    return {kind: 'heatmap', cells, label: h ? text(h).slice(0, 60) : ''};
  });
  each('stExpander', el => {
    const d = el.querySelector('details');
    const s = el.querySelector('summary');
    return d && s ? {kind: 'expander', open: d.open, label: text(s.querySelector("[data-testid='stMarkdownContainer']") || s)} : null;
  });
  each('stPageLink', el => {
    const a = el.querySelector('a');
    if (!a || a.getAttribute('aria-disabled') === 'true') return null;
    const path = new URL(a.href, location.href).pathname;
    return path === location.pathname ? null : {kind: 'page_link', label: text(a), href: path};
  });
  for (const testid of ['stButton', 'stFormSubmitButton']) each(testid, el => {
    const b = el.querySelector('button');
    return (!b || b.disabled || !shown(b)) ? null : {kind: 'button', label: text(b), submit: testid === 'stFormSubmitButton'};
  });
  each('stTextInput', el => {
    const x = el.querySelector('input');
    const aria = x && x.getAttribute('aria-label');        // the sidebar's Sentence, or a page's own sentence box
    if (!x || x.disabled || !(aria === 'Your sentence' || (el.closest("[data-testid='stSidebar']") && aria === 'Sentence'))) return null;
    return {kind: 'sentence', label: aria, value: x.value};
  });
  return out;
}"""

MARKER = "() => [window.__doc || 0, window.__runs || 0, window.__ws ? window.__ws.received : 0, window.__ws ? window.__ws.sends.length : 0]"
# The explained cell's outline (ui/colours.py explained_outline) on the chart beside a picker (labelled `picker`): how
# many of its two paths, how many on the page, the (row, column) of the cell under it (by the cells' drawn bands: the
# masked cells may be left undrawn, never a whole row or column) and the chart's text alternative.
OUTLINE = "svg.marks g.explained_inner_marks path"
OUTLINED = """([picker, outline]) => {
  let box = [...document.querySelectorAll('#stMain [aria-label]')].find(e => e.getAttribute('aria-label') === picker);
  while (box && !box.querySelector("[data-testid='stVegaLiteChart']")) box = box.parentElement;
  const chart = box ? box.querySelector("[data-testid='stVegaLiteChart']") : null;
  if (!chart) return {paths: [], page: 0, at: null, label: '', one_row: false};
  const mid = b => [b.left + b.width / 2, b.top + b.height / 2];
  const cells = [...chart.querySelectorAll('svg.marks g.mark-rect.role-mark path')].map(p => p.getBoundingClientRect());
  const band = side => [...new Set(cells.map(b => Math.round(b[side])))].sort((a, b) => a - b);
  const xs = band('left'), ys = band('top');
  const inner = chart.querySelector(outline);
  const [cx, cy] = inner ? mid(inner.getBoundingClientRect()) : [NaN, NaN];
  const at = (starts, v) => starts.filter(s => s <= v).length - 1;
  const said = [chart, ...chart.querySelectorAll('[aria-label]')].map(e => e.getAttribute('aria-label') || '')
    .find(t => t.startsWith('Heatmap of')) || '';
  return {paths: [chart.querySelectorAll(outline).length,
                  chart.querySelectorAll(outline.replace('inner', 'outer')).length],
          page: document.querySelectorAll('#stMain ' + outline).length, at: [at(ys, cy), at(xs, cx)], label: said,
          one_row: ys.length === 1};
}"""
NO_SKELETON = "() => !document.querySelector(\"[data-testid='stSkeleton']\")"

# A dropdown's options: (text, chosen, disabled).
OPTIONS = """el => [...el.querySelectorAll("[role='option']")].map(o => [
  (o.innerText || o.textContent || '').trim(), o.getAttribute('aria-selected') === 'true',
  o.getAttribute('aria-disabled') === 'true'])"""

# What must never be on screen after a run.
PROBLEMS = """() => {
  const shown = e => e.checkVisibility ? e.checkVisibility() : e.offsetParent !== null;
  const text = e => (e.innerText || '').trim();
  const out = [];
  for (const e of document.querySelectorAll("%s")) out.push('exception on the page: ' + text(e).split('\\n')[0].slice(0, 600));
  for (const e of document.querySelectorAll("[role='dialog'], [role='alertdialog'], [data-testid='stDialog']"))
    if (shown(e)) out.push('a dialog is open: ' + text(e).slice(0, 600));
  for (const e of document.querySelectorAll("[data-testid='stConnectionStatus']"))
    out.push('connection status: ' + text(e).slice(0, 200));
  return out;
}""" % EXCEPTION.replace('"', "'")

OBSERVE = f"""() => ({{skeletons: document.querySelectorAll("[data-testid='stSkeleton']").length,
                      problems: ({PROBLEMS})(), controls: ({DISCOVER})()}})"""


def _id(page: Page) -> str:
    return page.path or "overview"


class WalkFailure(AssertionError):
    pass


@dataclass
class Walk:
    tab: object
    server: object
    page: Page
    seed: int
    steps: int
    rng: random.Random = field(init=False)
    done: list = field(default_factory=list)          # what the student did, in order
    js_errors: list = field(default_factory=list)
    log_offset: int = 0
    links_followed: int = 0
    burst: list = field(default_factory=list)         # pending notches: (label, sidebar, key)
    times: list = field(default_factory=list)        # (seconds, interaction)
    axe_counts: dict = field(default_factory=dict)    # viewport -> (the app's violating nodes, Streamlit's listed)
    cells_clicked: int = 0
    axe_seconds: float = 0.0                          # spent in axe-core's runs (printed: its cost in CI)
    a11y_seconds: float = 0.0                         # and in all the accessibility part adds (click, window)
    controls: list = field(default_factory=list)      # what the student can reach now (DISCOVER)
    _after: object = None                             # fills in a control's new value in the record
    _recorded: bool = False
    _doing: str = ""

    def __post_init__(self):
        self.rng = random.Random(f"{self.seed}:{_id(self.page)}")
        self.tab.on("pageerror", lambda err: self.js_errors.append(str(err)))
        slots = list(range(1, max(self.steps - 2, 2)))
        self.burst_at = set(self.rng.sample(slots, min(BURSTS, len(slots))))

    # ------------------------------------------------------------------ waiting and checking

    def _log_size(self) -> int:
        try:
            return self.server.log_path.stat().st_size
        except OSError:
            return 0

    def _new_log(self) -> str:
        try:
            with open(self.server.log_path, "rb") as f:
                f.seek(self.log_offset)
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def act(self, action, run: bool | None) -> None:
        """Do `action` and wait for the run it causes. Whether it asked for one is seen on the
        websocket (the browser sends a message): run=True expects one (a slider sends after its
        debounce), None maybe (a tab, a plain expander, a chart click), False none (in a form).
        An action that asked for nothing is noted in the record (a no-op is no error)."""
        tab = self.tab
        doc, runs, received, sends = tab.evaluate(MARKER)
        action()
        asked = False
        if run is not False:
            started = f"""() => (window.__ws && window.__ws.sends.length > {sends})
                || document.querySelector("[data-testid='stApp']").getAttribute('data-test-script-state') === 'running'"""
            try:
                tab.wait_for_function(started, timeout=EXPECT_SEND_MS if run else MAYBE_RUN_MS, polling=50)
                asked = True
            except Exception:
                pass
        if asked:
            wait_run_end(tab, (doc, runs, received), timeout_ms=RUN_TIMEOUT_MS)
        else:
            tab.wait_for_selector(IDLE, timeout=RUN_TIMEOUT_MS)
            if run and self._recorded:
                self.done[-1] += "  (no rerun)"

    def observe(self) -> list[str]:
        """What is on screen now (after the lazily loaded components replaced their skeletons):
        the controls for the next interaction, and any problem."""
        seen = self.tab.evaluate(OBSERVE)
        if seen["skeletons"]:
            try:
                self.tab.wait_for_function(NO_SKELETON, timeout=10_000, polling=50)
            except Exception:
                pass                                   # a skeleton that stays is no error of its own
            seen = self.tab.evaluate(OBSERVE)
        self.controls = seen["controls"]
        if self._after is not None:                    # the value a control moved to, for the record
            self.done[-1] = self._after(self.controls)
            self._after = None
        return seen["problems"]

    def check(self, where: str) -> None:
        problems = self.observe()
        problems += [f"JS error: {e}" for e in self.js_errors]
        log = self._new_log()
        if "Uncaught app execution" in log or "Traceback (most recent call last)" in log:
            problems.append("the server logged an exception")
        if problems:
            self.fail(where, problems, log)
        self.log_offset = self._log_size()

    def fail(self, where: str, problems: list[str], log: str | None = None) -> None:
        log = self._new_log() if log is None else log
        lines = [f"Random walk of /{self.page.path} ({self.page.file}), seed {self.seed}, "
                 f"{len(self.done)} of {self.steps} interactions, failed {where}:"]
        lines += [f"  ! {p}" for p in problems]
        lines.append("Interactions so far (the last one is where it broke):")
        lines += [f"  {n:2d}. {d}" for n, d in enumerate(self.done, 1)] or ["  (none: the page itself)"]
        try:
            lines.append(f"Address at the failure: {self.tab.url}")
        except Exception:
            pass
        tb = _traceback(log)
        if tb:
            lines += ["Server log:", tb]
        lines.append(f"Replay: ATTENTION_EXPLORER_WALK_SEED={self.seed} ATTENTION_EXPLORER_WALK_STEPS={self.steps} "
                     f"python -m pytest -q 'tests/e2e/test_walk.py::test_random_walk_leaves_no_error[{_id(self.page)}]'")
        raise WalkFailure("\n".join(lines))

    # ------------------------------------------------------------------ the walk

    def run(self) -> None:
        self.log_offset = self._log_size()
        try:
            open_page(self.tab, self.server, self.page.path)
        except Exception as err:
            self.fail("opening the page", [f"{type(err).__name__}: {err}"])
        self.check("on opening the page")
        self.keyboard_pick()
        step = attempts = 0
        while step < self.steps and attempts < 3 * self.steps:
            attempts += 1
            if step in self.burst_at and not self.burst:
                self.plan_burst(self.controls)
            t0 = time.perf_counter()
            try:
                did = self.one_step(self.controls)
            except WalkFailure:
                raise
            except Exception as err:         # a control that would not answer, a run that never ended
                if self._recorded:
                    self.done[-1] += "  [did not complete]"
                else:
                    self.done.append(self._doing + "  [did not complete]")
                self.fail(f"at interaction {len(self.done)}", [f"{type(err).__name__}: {str(err)[:800]}"])
            if did is None:                  # nothing on this page to interact with
                break
            if did:
                self.check(f"after interaction {len(self.done)}")
                self.times.append((time.perf_counter() - t0, self.done[-1]))
                step += 1
                if step == self.steps // 2:
                    self.halfway()
            else:
                self.observe()
        if self.tab.viewport_size == PHONE:
            self.accessible()
            self.reflows()

    # ------------------------------------------------------------------ accessibility (axe-core)

    def halfway(self) -> None:
        """A heatmap cell clicked (where the page shows one and none was yet), axe-core at 1366 × 768, then the
        phone's window for the rest of the walk."""
        t0 = time.perf_counter()
        if not self.cells_clicked:
            heatmaps = [c for c in self.controls if c["kind"] == "heatmap" and c["cells"]]
            if heatmaps and self.do_heatmap(self.rng.choice(heatmaps)):
                self.check(f"after interaction {len(self.done)} (a cell clicked before the accessibility check)")
        self.accessible()
        self.done.append(f"[window] {PHONE['width']} × {PHONE['height']} (a phone)")
        self.tab.set_viewport_size(PHONE)
        self.tab.wait_for_selector(IDLE, timeout=RUN_TIMEOUT_MS)
        self.fold_sidebar()
        self.check("after the window became a phone's")
        self.a11y_seconds += time.perf_counter() - t0 - self.axe_seconds

    def keyboard_pick(self) -> None:
        """The arithmetic without a mouse (WCAG 2.1.1), on every page whose heatmaps explain their cells: from the
        top of the page, Tab to the first row and column pickers under a heatmap, choose with the arrows and Enter:
        the cell's explanation is on the page and its cell in the link, as a click makes them
        (tests/e2e/test_keyboard.py's steps; there, one page of each kind of heatmap, and a page walked by Tab)."""
        from urllib.parse import parse_qs, urlparse

        from tests.e2e.test_keyboard import PICKER, choose, focused, tab_to
        t0 = time.perf_counter()
        pickers = self.tab.evaluate("() => [...document.querySelectorAll('#stMain [aria-label]')].filter(e => "
                                    "/^(Row|Column) of .+ to explain$/.test(e.getAttribute('aria-label'))).length")
        if not pickers:
            return
        self.tab.evaluate("() => document.activeElement && document.activeElement.blur()")
        picker, _ = tab_to(self.tab, lambda f: bool(PICKER.match(f["label"])), most=200)
        row = picker["label"].startswith("Row")
        explained = self.tab.locator("[class*='st-key-xp-']")
        before = explained.count()                             # (a page may explain something of its own)
        if row:
            choose(self.tab, 2)                                # row 1
            if focused(self.tab)["label"] != picker["label"] or explained.count() != before:
                self.fail("the cell picked with the keyboard", ["after the row alone: the focus left the picker, "
                                                                 "or something was explained"])
            tab_to(self.tab, lambda f: f["label"].startswith("Column of"), most=3)
        choose(self.tab, 1)                                    # column 0
        want = (1, 0) if row else (0, 0)
        cell = parse_qs(urlparse(self.tab.url).query).get("cell", [""])[0]
        self.done.append(f"[keyboard] Tab to “{picker['label']}”, arrows and Enter: cell {want}")
        self.a11y_seconds += time.perf_counter() - t0
        problems = ([] if cell.endswith(f".{want[0]}.{want[1]}") else [f"the link's cell is {cell!r}"]) + (
                    [] if explained.count() == before + 1 else ["no explanation of the picked cell on the page"])
        problems += self.outlined(picker["label"], want)
        if problems:
            self.fail("the cell picked with the keyboard", problems)
        self.check("after the cell picked with the keyboard")

    def outlined(self, picker: str, want: tuple[int, int]) -> list[str]:
        """The picked cell is marked on its chart as the SVG draws it: one outline on the page (ui/colours.py's
        explained_outline: its two paths), on the cell (row, column) `want` of the chart beside the picker, and the
        chart's text alternative names that cell."""
        try:
            self.tab.wait_for_function(f"() => document.querySelector('#stMain {OUTLINE}')", timeout=10_000, polling=50)
        except Exception:
            return ["no outline of the picked cell on its chart"]
        seen = self.tab.evaluate(OUTLINED, [picker, OUTLINE])
        said = f"The explained cell: {'' if seen['one_row'] else f'row {want[0]}'}"
        problems = [] if seen["paths"] == [1, 1] and seen["page"] == 1 else [f"outlines on the page: {seen}"]
        problems += [] if seen["at"] == list(want) else [f"the outline is on the cell {seen['at']}, not {want}"]
        return problems + ([] if said in seen["label"] else [f"the chart's words do not name it: {seen['label']!r}"])

    def reflows(self) -> None:
        """WCAG 1.4.10 at the walk's end, on the phone and at 320 CSS px: nothing scrolls sideways but a named
        scroll region (tests/e2e/reflow.py)."""
        t0 = time.perf_counter()
        wait_for_charts(self.tab, lambda cs: all(c["rendered"] for c in cs if c["visible"]), timeout_ms=10_000)
        found = {PHONE["width"]: reflow.overflow(self.tab)}
        self.phone_text()
        self.tab.set_viewport_size({"width": reflow.NARROW, "height": PHONE["height"]})
        self.tab.wait_for_timeout(150)                            # charts sized to their container redraw
        found[reflow.NARROW] = reflow.overflow(self.tab)
        self.done.append(f"[reflow] {PHONE['width']} and {reflow.NARROW} px wide")
        self.a11y_seconds += time.perf_counter() - t0
        if any(found.values()):
            self.fail("the reflow check (WCAG 1.4.10)", [f"{self.page.url_path} sticks out sideways: {found}"])

    def phone_text(self) -> None:
        """At 390 px, a chart drawn for the phone (the induction heads' pattern grids) has no text under 11 px as drawn
        (tests/e2e/reflow.py): not scaled down to fit, as the grid drawn for a wide screen would be."""
        from bench._common import after_run
        from ui.transformer.induction_charts import PHONE_FONT
        opener = reflow.PHONE_CHART_TABS.get(self.page.url_path)
        if opener and not reflow.phone_charts(self.tab):          # the walk left another tab open
            self.done.append(f"[phone text] open tab '{opener}'")
            after_run(self.tab, self.tab.get_by_role("tab", name=opener).click, timeout_ms=RUN_TIMEOUT_MS)
        for _ in range(50):                                       # a chart shown by the window's change: drawn
            shown = reflow.phone_charts(self.tab)
            if all(c["scale"] for c in shown):
                break
            self.tab.wait_for_timeout(100)
        for c in shown:
            if c["smallest"] is None and c["scale"]:
                c["smallest"] = PHONE_FONT * c["scale"]
        if shown:
            self.done.append("[phone text] the smallest text as drawn: " + ", ".join(
                f"{c['key']} {c['smallest']:.1f} px" if c["smallest"] else f"{c['key']} (not drawn)" for c in shown))
        small = [c for c in shown if not c["smallest"] or c["smallest"] < 11 - 0.05] + (
            [{"page": self.page.url_path, "drawn": "none"}] if opener and not shown else [])
        if small:
            self.fail("the phone's charts (WCAG 1.4.10)", [f"text under 11 px as drawn, or no chart drawn: {small}"])

    def fold_sidebar(self) -> None:
        """The sidebar folded away, as a phone opens the app: a window made narrow may keep it open over the page,
        or Streamlit folds it itself a moment later (its button then goes while being clicked: looked at again)."""
        for _ in range(5):
            button = self.tab.locator("[data-testid='stSidebarCollapseButton'] button[aria-expanded='true']")
            if not button.count():
                return
            try:
                button.first.click(timeout=3_000)
                self.tab.wait_for_selector(IDLE, timeout=RUN_TIMEOUT_MS)
                return
            except Exception:
                self.tab.wait_for_timeout(300)

    def accessible(self) -> None:
        size = self.tab.viewport_size
        where = f"{size['width']} × {size['height']}"
        t0 = time.perf_counter()
        # nothing in focus or under the pointer: a focused slider's min and max fade in and out (axe caught one
        # mid-fade at 1.01:1), a hovered chart shows its toolbar
        self.tab.evaluate("() => document.activeElement && document.activeElement.blur()")
        self.tab.mouse.move(0, 0)
        self.tab.wait_for_timeout(400)
        found = axe.violations(self.tab)
        self.axe_seconds += time.perf_counter() - t0
        own = axe.app_violations(found)
        self.axe_counts[where] = (axe.count(own), axe.count(found) - axe.count(own))
        self.done.append(f"[axe-core] {where}: {axe.count(own)} violations in the app's content")
        if own:
            self.fail(f"the accessibility check at {where}", [axe.report(own, where)])
        titles = self.tab.evaluate(axe.H1)
        if len(titles) != 1:
            self.fail(f"the accessibility check at {where}", [f"a page has one h1 (its title), this one {titles}"])

    def plan_burst(self, controls: list[dict]) -> None:
        phone = self.tab.viewport_size == PHONE
        sliders = [c for c in controls if c["kind"] == "slider" and not c["form"] and not (phone and c["sidebar"])]
        if not sliders:
            return
        weights = [(6.0 if c["label"] == "Heads" else 1.0) * (SIDEBAR_SLIDER if c["sidebar"] else 1.0) for c in sliders]
        c = self.rng.choices(sliders, weights)[0]
        n = self.rng.choice(BURST_LENGTH)
        key = self.rng.choice(["ArrowRight", "ArrowLeft"])
        if self.rng.random() < 0.5:                      # the same way every notch (2 → 3 → 4)
            keys = [key] * n
        else:                                            # there and back (1 → 2 → 1 → 2)
            other = "ArrowLeft" if key == "ArrowRight" else "ArrowRight"
            keys = [key if k % 2 == 0 else other for k in range(n)]
        self.burst = [(c["label"], c["sidebar"], k) for k in keys]

    def one_step(self, controls: list[dict]):
        if self.burst:
            label, sidebar, key = self.burst.pop(0)
            match = [c for c in controls if c["kind"] == "slider" and c["label"] == label and c["sidebar"] == sidebar]
            if match:
                self._recorded = False
                self._doing = f"[{'sidebar' if sidebar else 'page'}] slider '{label}' (burst)"
                return self.do_slider(match[0], key, burst=True)
            self.burst.clear()
        by_kind: dict[str, list[dict]] = {}
        phone = self.tab.viewport_size == PHONE
        for c in controls:
            kind = c["kind"]
            if phone and c["sidebar"]:          # folded away on a phone
                continue
            if kind == "button" and NEVER.search(c["label"]):
                continue
            if kind == "page_link" and (self.links_followed >= MAX_PAGE_LINKS or phone):
                continue                     # (on a phone the top bar, the way back, folds into the sidebar)
            by_kind.setdefault(kind, []).append(c)
        if not by_kind:
            return None
        kinds = sorted(by_kind)
        kind = self.rng.choices(kinds, [WEIGHTS.get(k, 1.0) for k in kinds])[0]
        group = by_kind[kind]
        weights = [self.weight(c) for c in group]
        c = self.rng.choices(group, weights)[0]
        self._recorded = False
        self._doing = f"[{'sidebar' if c['sidebar'] else 'page'}] {kind} '{c['label']}' (before its action was chosen)"
        return getattr(self, f"do_{kind}")(c)

    @staticmethod
    def weight(c: dict) -> float:
        if c["kind"] == "slider" and c["sidebar"]:
            return SIDEBAR_SLIDER
        if c["kind"] == "expander" and c["sidebar"] and not c["open"]:
            return CLOSED_GROUP
        return 1.0

    # ------------------------------------------------------------------ the interactions

    def loc(self, c: dict):
        return self.tab.locator(f"[data-testid='{c['testid']}']").nth(c["i"])

    def record(self, c: dict, text: str) -> None:
        where = "sidebar" if c.get("sidebar") else "page"
        self.done.append(f"[{where}] {text}")
        self._recorded = True

    def expects_run(self, c: dict):
        return False if c.get("form") else True

    @staticmethod
    def find(c: dict, controls: list[dict]) -> dict | None:
        """The same control (kind, label, side) after the run: to read its new value."""
        for d in controls:
            if d["kind"] == c["kind"] and d["label"] == c["label"] and d["sidebar"] == c["sidebar"]:
                return d
        return None

    def do_slider(self, c: dict, key: str | None = None, burst: bool = False):
        k = self.rng.randrange(len(c["thumbs"]))
        t = c["thumbs"][k]
        if key is None:
            key = self.rng.choice(["ArrowRight", "ArrowLeft"])
        if key == "ArrowRight" and t["value"] >= t["max"]:
            key = "ArrowLeft"
        elif key == "ArrowLeft" and t["value"] <= t["min"]:
            key = "ArrowRight"
        thumb = self.loc(c).locator("input[type='range']").nth(k)
        self.record(c, f"{key} on slider '{c['label']}'" + (f" thumb {k}" if len(c["thumbs"]) > 1 else "") +
                    f" ({t['text']} → …)" + (" [burst]" if burst else ""))
        self.act(lambda: (thumb.focus(), thumb.press(key)), self.expects_run(c))

        def after(controls, text=self.done[-1]):
            d = self.find(c, controls)
            return text.replace("→ …)", f"→ {d['thumbs'][k]['text'] if d and k < len(d['thumbs']) else '?'})")
        self._after = after
        return True

    def do_checkbox(self, c: dict):
        what = "toggle" if c["toggle"] else "checkbox"
        self.record(c, f"click {what} '{c['label']}' ({'on → off' if c['checked'] else 'off → on'})")
        box = self.loc(c).locator("label").first
        self.act(lambda: box.click(), self.expects_run(c))
        return True

    def open_list(self, box):
        """Open a selectbox's or multiselect's dropdown (a click in it; else its arrow; else ArrowDown)."""
        field_ = box.locator("input[role='combobox']")
        ways = [lambda: field_.click(), lambda: box.locator("button[aria-label='Open']").click(),
                lambda: (field_.focus(), field_.press("ArrowDown"))]
        for way in ways:
            way()
            listbox = self.tab.locator("[role='listbox']:visible").last
            try:
                listbox.wait_for(state="visible", timeout=3_000)
                return listbox
            except Exception:
                self.tab.keyboard.press("Escape")
        raise RuntimeError("its dropdown would not open (click, arrow button, ArrowDown)")

    def open_options(self, box, attempts: int = 3):
        """Open the dropdown and read its options: (the listbox, its options). A run that lands while the list is
        open (a slow machine: the last interaction's run redraws the widget) detaches it: wait for the app to be
        idle and open it again, as click_option does."""
        for attempt in range(attempts):
            listbox = self.open_list(box)
            try:
                return listbox, listbox.evaluate(OPTIONS, timeout=8_000)
            except Exception:
                if attempt == attempts - 1:
                    raise
                self.tab.keyboard.press("Escape")
                self.tab.wait_for_selector(IDLE, timeout=RUN_TIMEOUT_MS)

    def click_option(self, box, listbox, n: int, attempts: int = 3) -> None:
        """Click option n of an open dropdown. When a run lands while the list is open (a slow machine: the
        run the last interaction caused redraws the widget) the option is detached and the list closes:
        wait for the app to be idle, open the list again and click once more; a list that never holds
        still (a rerun loop) still fails, after `attempts` tries."""
        for attempt in range(attempts):
            try:
                listbox.locator("[role='option']").nth(n).click(timeout=8_000)
                return
            except Exception:
                if attempt == attempts - 1:
                    raise
                self.tab.keyboard.press("Escape")
                self.tab.wait_for_selector(IDLE, timeout=RUN_TIMEOUT_MS)
                listbox = self.open_list(box)

    def do_selectbox(self, c: dict):
        box = self.loc(c)
        listbox, found = self.open_options(box)
        texts = [t for t, _, _ in found]
        others = [n for n, (t, chosen, off) in enumerate(found)
                  if not chosen and not off and _norm(t) != _norm(c["value"])]
        if not others:
            self.tab.keyboard.press("Escape")
            return False
        n = self.rng.choice(others)
        self.record(c, f"select '{texts[n]}' in selectbox '{c['label']}' (was '{c['value']}')")
        self.act(lambda: self.click_option(box, listbox, n), self.expects_run(c))
        return True

    def do_multiselect(self, c: dict):
        box = self.loc(c)
        listbox, found = self.open_options(box)
        texts = [t for t, _, _ in found]
        choices = [n for n, (t, chosen, off) in enumerate(found) if not chosen and not off and t != "No results"]
        if not choices:
            self.tab.keyboard.press("Escape")
            return False
        n = self.rng.choice(choices)
        self.record(c, f"add '{texts[n]}' in multiselect '{c['label']}'")
        self.act(lambda: (self.click_option(box, listbox, n), self.tab.keyboard.press("Escape")), self.expects_run(c))
        return True

    def do_radio(self, c: dict):
        choices = [n for n, o in enumerate(c["options"]) if not o["checked"] and not o["disabled"]]
        n = self.rng.choice(choices)
        was = next((o["text"] for o in c["options"] if o["checked"]), None)
        self.record(c, f"pick radio '{c['options'][n]['text']}' in '{c['label']}' (was '{was}')")
        option = self.loc(c).locator("[data-testid='stRadioOption']").nth(n)
        self.act(lambda: option.click(), self.expects_run(c))
        return True

    def do_segmented(self, c: dict):
        choices = [n for n, o in enumerate(c["options"]) if not o["checked"] and not o["disabled"]]
        n = self.rng.choice(choices)
        was = [o["text"] for o in c["options"] if o["checked"]]
        kind = c["options"][n]["variant"] or "segmented_control"
        self.record(c, f"click {kind} button '{c['options'][n]['text']}' in '{c['label']}' (was {was})")
        button = self.loc(c).locator("button").nth(n)
        self.act(lambda: button.click(), self.expects_run(c))
        return True

    def do_number(self, c: dict):
        up = self.rng.random() < 0.5
        try:
            value = float(c["value"])
        except (TypeError, ValueError):
            value = None
        if value is not None and c["max"] is not None and value >= c["max"]:
            up = False
        if value is not None and c["min"] is not None and value <= c["min"]:
            up = True
        box = self.loc(c)
        if c["up" if up else "down"]:
            button = box.locator(f"[data-testid='{'stNumberInputStepUp' if up else 'stNumberInputStepDown'}']")
            how, action = ("+" if up else "−"), (lambda: button.click())
        else:                                  # too narrow for step buttons: the arrow keys step it
            field_ = box.locator("input[type='number']")
            key = "ArrowUp" if up else "ArrowDown"
            how, action = key, (lambda: (field_.focus(), field_.press(key)))
        self.record(c, f"{how} on number input '{c['label']}' ({c['value'] or 'empty'} → …)")
        self.act(action, self.expects_run(c))

        def after(controls, text=self.done[-1]):
            d = self.find(c, controls)
            return text.replace("→ …)", f"→ {d['value'] if d else '?'})")
        self._after = after
        return True

    def do_tab(self, c: dict):
        self.record(c, f"open tab '{c['label']}'")
        tab = self.loc(c)
        self.act(lambda: tab.click(), None)
        return True

    def do_heatmap(self, c: dict):
        chart = self.loc(c)
        name = f" under '{c['label']}'" if c["label"] else ""
        chart.scroll_into_view_if_needed()
        if c["cells"]:
            sizes = chart.evaluate("""el => [...el.querySelectorAll('svg.marks g.mark-rect.role-mark path')].map(p => {
                const b = p.getBoundingClientRect(); return b.width >= 3 && b.height >= 3; })""")
            big = [n for n, ok in enumerate(sizes) if ok]
            if not big:
                return False
            n = self.rng.choice(big)
            cell = chart.locator("svg.marks g.mark-rect.role-mark path").nth(n)
            self.record(c, f"click cell {n} of {len(sizes)} in chart #{c['i']}{name}")
            self.cells_clicked += 1
            cell.scroll_into_view_if_needed()
            box = cell.bounding_box()
            fx, fy = 0.5, 0.5
        else:
            plot = chart.locator("svg.marks, canvas").first
            box = plot.bounding_box()
            fx, fy = self.rng.uniform(0.3, 0.8), self.rng.uniform(0.2, 0.7)
            self.record(c, f"click the plot of chart #{c['i']}{name} at ({fx:.2f}, {fy:.2f}) of its box")
        self.act(lambda: self.tab.mouse.click(box["x"] + box["width"] * fx, box["y"] + box["height"] * fy), None)
        return True

    def do_expander(self, c: dict):
        self.record(c, f"{'close' if c['open'] else 'open'} expander '{c['label']}'")
        summary = self.loc(c).locator("summary").first
        self.act(lambda: summary.click(), None)
        return True

    def do_page_link(self, c: dict):
        self.links_followed += 1
        self.record(c, f"follow page link '{c['label']}' (→ {c['href']})")
        link = self.loc(c).locator("a").first
        self.act(lambda: link.click(), True)
        self.check(f"after interaction {len(self.done)} (on {self.tab.url})")
        self.go_home()
        return True

    def go_home(self) -> None:
        """Back to the walk's page by the top navigation (same session, settings kept)."""
        section = self.page.section
        self.done.append(f"[top bar] back to '{self.page.label}' by the navigation ({section} › {self.page.label})")
        self.tab.locator("[data-testid='stTopNavSection']").filter(has_text=section).first.click()
        link = self.tab.locator("a[data-testid='stTopNavDropdownLink']").filter(has_text=self.page.label).first
        self.act(lambda: link.click(), True)

    def do_button(self, c: dict):
        self.record(c, f"press {'form submit ' if c['submit'] else ''}button '{c['label']}'")
        button = self.loc(c).locator("button").first
        self.act(lambda: button.click(), True)
        return True

    def do_sentence(self, c: dict):
        options = [s for s in SENTENCES if s != c["value"]]
        text = self.rng.choice(options)
        self.record(c, f"type '{text}' in the Sentence box, Enter (was '{c['value']}')")
        box = self.loc(c).locator("input").first

        def typing():
            box.fill(text)
            box.press("Enter")
        self.act(typing, True)
        return True


def _norm(text: str) -> str:
    return " ".join(str(text).split())


def _traceback(log: str, chars: int = 6000) -> str:
    """What the server logged since the last check, from its first traceback (the one this
    interaction caused; later ones may follow from it)."""
    if not log.strip():
        return ""
    at = log.find("Uncaught app execution")
    if at < 0:
        at = log.find("Traceback (most recent call last)")
    text = log[at:] if at >= 0 else log[-chars:]
    return text[:chars].rstrip()


@pytest.mark.parametrize("page", PAGES, ids=[_id(p) for p in PAGES])
def test_random_walk_leaves_no_error(page, app_server, laptop):
    axe.require_axe()
    started = time.perf_counter()
    walk = Walk(laptop(LAPTOP), app_server, page, SEED, STEPS)
    walk.run()
    assert len(walk.times) == STEPS, (f"/{page.path}: only {len(walk.times)} of {STEPS} interactions found a control "
                                      f"to act on:\n" + "\n".join(walk.done))
    assert len(walk.axe_counts) == 2, f"/{page.path}: axe-core checked {sorted(walk.axe_counts)}, not both windows"
    print(f"/{page.path}: {len(walk.times)} interactions in {time.perf_counter() - started:.1f} s (seed {SEED}); "
          "axe-core, the app's violations (Streamlit's listed): "
          + ", ".join(f"{k}: {a} ({b})" for k, (a, b) in walk.axe_counts.items())
          + f"; {walk.axe_seconds:.1f} s in axe, {walk.a11y_seconds:.1f} s more for it (a click, the window, the "
          f"reflow, a cell picked by keyboard: {'yes' if any(d.startswith('[keyboard]') for d in walk.done) else 'no'})")
    for said in (d for d in walk.done if d.startswith("[phone text] the smallest")):
        print(f"/{page.path}: {said}")
    if os.environ.get("ATTENTION_EXPLORER_WALK_VERBOSE"):
        for seconds, what in walk.times:
            print(f"   {seconds:5.2f} s  {what}")
