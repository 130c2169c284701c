"""Every page's whole-page rerun, in one process (Streamlit's AppTest), against a one-slider page.

    python bench/apptest_rerun.py [--repeats 5] [--levels defaults,largest] [--pages qkv,train]

The server-side cost of a rerun with no websocket in the way: AppTest runs the script in this
process and hands back the element tree. Per page (every page in ui/nav.py's SECTIONS):

  elements  leaves of the element tree after a run (main + sidebar; what Streamlit serialises)
  plain     a rerun with nothing changed (st.rerun from a click on a page link, a tab switch)
  change    the sidebar's "Softmax temperature" set to another value and the page rerun,
            alternating between two values after the first (a student moving it back and forth)
  new       the same slider moved to a value the process has never computed (a cache miss)

Each figure is the median of `repeats` reruns after the first, divided by the one-slider page's
median plain rerun, measured before and after the pages in the same run. Pages without the
settings panel (training_step, train, alignment, grid) report '-' for change and new: their
plain rerun is their figure.

Targets (docs/architecture.md, the performance budget): ≤ 8x at defaults, ≤ 50x at the largest settings.
bench/rerun.py calls this first, then times the protocol and the browser.
"""
from __future__ import annotations

import argparse
import logging
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._common import TRIVIAL_APP, Table, all_pages  # noqa: E402

TEMPERATURE = "w.temperature"       # ui/settings_state.py: widget keys are "w.<Config field>"
GROUP_LABEL = "Score, mask & temperature"   # ui/settings_panel.py: the lazy group the slider is drawn in
WORDS = ("the quick brown fox jumps over a lazy dog while students watch attention weights move "
         "across every row").split()
LEVELS = {
    "defaults": {},
    "largest": {"sentence": " ".join((WORDS * 10)[:100]), "embedding": "random", "weights": "random",
                "d_model": "128", "d_k": "64", "d_v": "64", "n_heads": "8"},
}
TARGET = {"defaults": 8, "largest": 50}


def count_elements(node) -> int:
    """Leaves of an AppTest element tree (blocks are containers, not elements)."""
    children = getattr(node, "children", None)
    if children is None:
        return 1
    return sum(count_elements(c) for c in children.values())


def _timed(run) -> float:
    t = time.perf_counter()
    run()
    return time.perf_counter() - t


def _median_ms(times: list[float]) -> float:
    return statistics.median(times) * 1e3


def one_slider(repeats: int) -> float:
    from streamlit.testing.v1 import AppTest
    path = Path(tempfile.mkdtemp(prefix="apptest_one_")) / "one.py"
    path.write_text(TRIVIAL_APP)
    at = AppTest.from_file(str(path)).run()
    at.run()
    return _median_ms([_timed(at.run) for _ in range(max(repeats, 9))])


def _temperature(at):
    for s in at.slider:
        if s.key == TEMPERATURE:
            return s
    return None


def has_settings_panel(at) -> bool:
    """The page draws the sidebar's settings (its "Score, mask & temperature" group, open or
    closed). The stored settings ("s.*") exist on every page, so they cannot tell."""
    return "s.temperature" in at.session_state and (
        _temperature(at) is not None or any(e.label == GROUP_LABEL for e in at.expander))


def set_temperature(at, value: float) -> None:
    """The setting changed as a student changes it: with the slider where the page draws it (its
    settings group open), else in the stored settings (the group is closed: the same Config change,
    the same recomputation, without the widget)."""
    slider = _temperature(at)
    if slider is not None:
        slider.set_value(value)
    else:
        at.session_state["s.temperature"] = value


def measure(page, query: dict, repeats: int, timeout: float = 600) -> dict:
    """One page at one level: elements, plain, change and new rerun times (ms)."""
    from streamlit.testing.v1 import AppTest
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=timeout)
    for k, v in query.items():
        at.query_params[k] = v
    if page.path:
        at.switch_page(page.file)
    t0 = time.perf_counter()
    at.run()
    out = {"first": (time.perf_counter() - t0) * 1e3, "errors": len(at.exception),
           "elements": count_elements(at._tree)}
    at.run()
    out["plain"] = _median_ms([_timed(at.run) for _ in range(repeats)])
    if not has_settings_panel(at):                        # no settings panel: the temperature changes nothing
        out["change"] = out["new"] = None
        return out
    a = at.session_state["s.temperature"]
    b = round(a + 0.05, 2) if a < 5.0 else round(a - 0.05, 2)
    times = []
    for i in range(repeats + 1):
        set_temperature(at, b if i % 2 == 0 else a)
        times.append(_timed(at.run))
    out["change"] = _median_ms(times[1:])
    fresh = [round(0.5 + 0.05 * k, 2) for k in range(60) if round(0.5 + 0.05 * k, 2) not in (a, b)]
    # a value this process has never computed: offset per page so pages don't share cache hits
    offset = sum(map(ord, page.path)) % 40
    times = []
    for k in range(repeats):
        set_temperature(at, fresh[(offset + k) % len(fresh)])
        times.append(_timed(at.run))
    out["new"] = _median_ms(times)
    out["errors"] += len(at.exception)
    return out


def run(repeats: int = 5, levels: str = "defaults,largest", pages: str = "") -> Table:
    """Every chosen page at every level (progress printed as it goes); the table of ratios."""
    # AppTest runs cached functions' first calls outside a script run too: one warning each, no news
    logging.getLogger("streamlit.runtime.scriptrunner_utils.script_run_context").addFilter(
        lambda record: "missing ScriptRunContext" not in record.getMessage())
    chosen = all_pages()
    if pages:
        wanted = set(pages.split(","))
        chosen = [p for p in chosen if p.path in wanted or (not p.path and "overview" in wanted)]
    before = one_slider(repeats)
    print(f"one-slider page (AppTest plain rerun): {before:.1f} ms", flush=True)
    results = []
    for level in levels.split(","):
        for page in chosen:
            r = measure(page, LEVELS[level], repeats)
            results.append((level, page, r))
            rest = ("no settings panel" if r["change"] is None
                    else f"change {r['change']:.0f} ms, new {r['new']:.0f} ms")
            print(f"  {level:8s} /{page.path:16s} {r['elements']:4d} elements, plain {r['plain']:.0f} ms, {rest}",
                  flush=True)
    after = one_slider(repeats)
    ref = statistics.median([before, after])
    rows = []
    for level, page, r in results:
        worst = max(v for v in (r["plain"], r["change"], r["new"]) if v is not None) / ref
        cell = (lambda v: "-" if v is None else f"{v:.0f} ({v / ref:.1f}x)")
        rows.append([f"/{page.path}", level, r["elements"], cell(r["plain"]), cell(r["change"]), cell(r["new"]),
                     r["errors"], f"≤{TARGET[level]}x " + ("ok" if worst <= TARGET[level] else "OVER")])
    return Table(f"AppTest, one process. Reference: one-slider page {ref:.1f} ms per plain rerun "
                 f"(before / after the pages: {before:.1f} / {after:.1f} ms). ms (ratio), median of {repeats}.",
                 ["page", "level", "elements", "plain", "change", "new", "errors", "target"], rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--levels", default="defaults,largest")
    ap.add_argument("--pages", default="", help="comma-separated URL paths ('overview' for /)")
    args = ap.parse_args()
    print("\n" + run(args.repeats, args.levels, args.pages).text())


if __name__ == "__main__":
    main()
