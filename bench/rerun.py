"""Rerun time of every page after a setting change, as a ratio to a one-slider page: AppTest
in one process first, then Streamlit's websocket protocol, then a real browser.

    python bench/rerun.py [--repeats 7] [--levels defaults,largest] [--pages qkv,scores]
                          [--page-budget 90] [--browser-changes 20] [--no-apptest] [--no-browser]

1. AppTest (bench/apptest_rerun.py, every page in ui/nav.py's SECTIONS, in this process):
   elements, plain rerun, a setting change to a seen and to a new value; its table is printed.

2. The protocol. Both servers run from the repo root (same .streamlit/config.toml). A
   protocol-level client (bench/_common.Session) opens each page of ui/nav.py's SECTIONS, takes
   the "Softmax temperature" slider's id from its proto and moves it. The slider is in the
   sidebar's "Score, mask & temperature" group, a lazy expander (key "grp.score"): closed (the
   default on most pages) its widgets are not drawn, so the client opens it first as the browser
   does (Session.find_slider). The time is BackMsg rerun_script sent -> script_finished received
   (the server's work; the client ACKs at once, see Session's `quickack`). Per page and level:

  new   the slider moved to a value this server has never computed (a student dragging: the
        Trace and the chart specs are cache misses)
  seen  the slider moved back and forth between two computed values (cache hits)

   Pages without the settings panel (no such slider: training_step, train, alignment, grid,
   induction_heads) are listed as such, with a plain rerun of the page as it stands in "seen".
   Ratios are medians over the one-slider page's median, measured before and after the pages.
   Levels (bench/apptest_rerun.LEVELS): defaults; largest = the widget bounds in ui/settings_panel.py
   (random embeddings and weights, d_model=128, d_k=d_v=64, 8 heads) and a 100-token sentence.

3. Headless chromium: a slider change redrawn, p95 (key press on the slider -> the websocket
   send -> the run ends and the DOM is quiet for 150 ms).

Targets (docs/architecture.md, the performance budget): ≤ 8x at defaults, ≤ 50x at the largest
settings, browser redraw p95 ≤ 250 ms.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import apptest_rerun  # noqa: E402
from bench._common import (CHART, REDRAW_HOOK, Server, Session, Table, all_pages,  # noqa: E402
                           browser_available, launch_chromium, median, new_context, open_group, percentile,
                           run_marker, slider_value, slider_values, wait_for_charts, wait_run_end,
                           write_trivial_app)

SLIDER = "Softmax temperature"          # the sidebar's settings, in the lazy group below
GROUP = "grp.score"                     # ui/settings_panel.py: st.expander("Score, mask & temperature", key=...)
GROUP_LABEL = "Score, mask & temperature"
LEVELS = apptest_rerun.LEVELS           # the same URL settings as the AppTest part
TARGET = apptest_rerun.TARGET
NO_PANEL = "no settings panel"


class Pool:
    """Values not yet used at one level: a 'new' move is a cache miss for every page. The slider has
    99 values and 21 pages x 7 moves need more: once every value is used, those used longest ago come
    back (ui/cache.py keeps the Traces of the last 64 Configs, so they are misses again)."""

    def __init__(self):
        self.used: list[float] = []          # in the order used

    def take(self, slider, k: int) -> list[float]:
        current = {slider_value(slider)} | set(slider.default)
        free = [v for v in slider_values(slider) if v not in self.used and v not in current]
        # spread over the range, middle first: every value is a plausible drag target
        free.sort(key=lambda v: abs(v - (slider.min + slider.max) / 2))
        chosen = free[:k]
        if len(chosen) < k:                  # every value used: the oldest first
            chosen += [v for v in self.used if v not in current][:k - len(chosen)]
        self.used = [v for v in self.used if v not in chosen] + chosen
        return chosen


def measure_trivial(server: Server, repeats: int, quickack: bool = True) -> dict:
    s = Session(server.port, quickack=quickack)
    slider = s.rerun().slider("Value")
    for i in range(3):                               # warm-up moves
        s.rerun([s.slider_state(slider, 10 + i)])
    times = []
    c0 = server.cpu_seconds()
    for i in range(repeats):
        times.append(s.rerun([s.slider_state(slider, (37 + 7 * i) % 101)]).seconds)
    cpu = (server.cpu_seconds() - c0) / repeats     # /proc counts in 10 ms ticks: per block, not per rerun
    s.close()
    return {"median": median(times), "p95": percentile(times, 95), "cpu": cpu, "n": len(times)}


def measure_page(server: Server, page, query: dict, pool: Pool, repeats: int, budget: float) -> dict:
    s = Session(server.port, page=page.path, query=urlencode(query), timeout=600)
    t0 = time.perf_counter()
    first = s.rerun()
    out = {"load": first.seconds, "load_mb": first.bytes / 1e6, "errors": len(first.exceptions),
           "new": [], "seen": [], "cpu_new": float("nan"), "cpu_seen": float("nan"), "mb_new": [],
           "opened": False}
    try:
        run, slider = s.find_slider(first, SLIDER, expander=GROUP)    # opens the lazy group if closed
    except KeyError:
        out["skipped"] = NO_PANEL if first.expander(GROUP) is None else f"no slider {SLIDER!r}"
        for _ in range(max(repeats, 3)):      # what the server does for a rerun of the page as it stands
            run = s.rerun()
            out["seen"].append(run.seconds)
            out["errors"] += len(run.exceptions)
        s.close()
        return out
    out["opened"] = run is not first
    out["errors"] += len(run.exceptions) if out["opened"] else 0
    deadline = t0 + budget
    used = []
    c0 = server.cpu_seconds()
    for v in pool.take(slider, repeats):
        run = s.rerun([s.slider_state(slider, v)])
        out["new"].append(run.seconds)
        out["mb_new"].append(run.bytes / 1e6)
        out["errors"] += len(run.exceptions)
        used.append(v)
        if time.perf_counter() > deadline:
            break
    out["cpu_new"] = (server.cpu_seconds() - c0) / len(out["new"])
    pair = used[-2:] if len(used) >= 2 else used + [slider_value(slider)]
    s.rerun([s.slider_state(slider, pair[1])])     # away from the last new value
    c0 = server.cpu_seconds()
    for i in range(max(repeats, 3)):
        run = s.rerun([s.slider_state(slider, pair[i % 2])])
        out["seen"].append(run.seconds)
        out["errors"] += len(run.exceptions)
        if time.perf_counter() > deadline + 30 and len(out["seen"]) >= 3:
            break
    out["cpu_seen"] = (server.cpu_seconds() - c0) / len(out["seen"])
    s.close()
    return out


# ----------------------------------------------------------------------------------------
# the browser: key press on a slider -> redrawn
# ----------------------------------------------------------------------------------------

QUIET_MS = 150


def browser_redraw(url: str, slider_label: str, changes: int, browser, group_label: str = "") -> dict:
    ctx = new_context(browser)
    ctx.add_init_script(REDRAW_HOOK)
    tab = ctx.new_page()
    marker = run_marker(tab)
    tab.goto(url, wait_until="domcontentloaded")
    wait_run_end(tab, marker, timeout_ms=120_000)
    if tab.locator(CHART).count():
        wait_for_charts(tab)
    thumb = tab.get_by_role("slider", name=slider_label).first
    if group_label:                 # the setting is in a lazy group: open it (if closed) as a student does
        open_group(tab, group_label)
    thumb.wait_for(timeout=30_000)
    thumb.focus()
    redraw, total, debounce, errors = [], [], [], 0
    for k in range(changes):
        tab.wait_for_timeout(QUIET_MS)
        marker = run_marker(tab)
        t_key = tab.evaluate("() => performance.now()")
        thumb.press("ArrowRight" if k // 10 % 2 == 0 else "ArrowLeft")    # back and forth: never stuck at an end
        wait_run_end(tab, marker, timeout_ms=120_000, quiet_ms=50)
        for _ in range(400):                             # the DOM quiet for QUIET_MS: charts drawn
            if tab.evaluate(f"() => performance.now() - window.__lastMutation > {QUIET_MS}"):
                break
            tab.wait_for_timeout(25)
        sends, last = tab.evaluate(f"() => [window.__ws.sends.filter(t => t >= {t_key}), window.__lastMutation]")
        if not sends:
            errors += 1
            continue
        redraw.append(last - sends[0])
        total.append(last - t_key)
        debounce.append(sends[0] - t_key)
    errors += tab.locator("[data-testid='stException']").count()
    ctx.close()
    return {"p50": percentile(redraw, 50), "p95": percentile(redraw, 95), "key_p95": percentile(total, 95),
            "debounce": median(debounce), "n": len(redraw), "errors": errors}


def choose_pages(wanted: str = "") -> list:
    """The navigation's pages, or those named by URL path ('overview' or '/' for the Overview)."""
    pages = all_pages()
    if wanted:
        names = set(wanted.split(","))
        pages = [p for p in pages if p.path in names or (not p.path and names & {"overview", "/"})]
    return pages


def protocol(trivial: Server, app: Server, pages, levels: str, repeats: int, page_budget: float) -> Table:
    """Every page at every level over the websocket protocol, against the one-slider page's rerun
    measured before and after the pages (progress printed as it goes)."""
    base = [measure_trivial(trivial, max(repeats, 15))]
    print(f"one-slider page: median {base[0]['median'] * 1e3:.1f} ms, server CPU {base[0]['cpu'] * 1e3:.1f} ms "
          f"per rerun", flush=True)
    rows, results = [], {}
    for level in levels.split(","):
        pool = Pool()
        for page in pages:
            r = measure_page(app, page, LEVELS[level], pool, repeats, page_budget)
            results[(level, page.path)] = r
            if "skipped" in r:
                print(f"  {level:8s} /{page.path:16s} load {r['load']:.2f} s, {r['skipped']}: plain rerun "
                      f"{median(r['seen']) * 1e3:.0f} ms", flush=True)
                continue
            print(f"  {level:8s} /{page.path:16s} load {r['load']:.2f} s, new {median(r['new']) * 1e3:.0f} ms "
                  f"(n={len(r['new'])}), seen {median(r['seen']) * 1e3:.0f} ms"
                  + (" (group opened first)" if r["opened"] else ""), flush=True)
    base.append(measure_trivial(trivial, max(repeats, 15)))
    no_quickack = measure_trivial(trivial, 15, quickack=False)
    ref = median([b["median"] for b in base])
    ref_cpu = median([b["cpu"] for b in base])
    for (level, path), r in results.items():
        if "skipped" in r:
            plain = median(r["seen"])
            ok = "ok" if plain / ref <= TARGET[level] else "OVER"
            rows.append([f"/{path}", level, f"{r['load']:.2f}", "-", "-", len(r["seen"]), f"{plain * 1e3:.0f}",
                         f"{plain / ref:.1f}x", "-", "-", "-", r["errors"],
                         f"{r['skipped']}: seen = a plain rerun; ≤{TARGET[level]}x {ok}"])
            continue
        new, seen = median(r["new"]), median(r["seen"])
        ok = "ok" if new / ref <= TARGET[level] else "OVER"
        rows.append([f"/{path}", level, f"{r['load']:.2f}", f"{new * 1e3:.0f}", f"{new / ref:.1f}x", len(r["new"]),
                     f"{seen * 1e3:.0f}", f"{seen / ref:.1f}x", f"{r['cpu_new'] * 1e3:.0f}",
                     f"{r['cpu_seen'] * 1e3:.0f}", f"{median(r['mb_new']):.2f}", r["errors"],
                     f"≤{TARGET[level]}x {ok}" + ("" if seen / ref <= TARGET[level] else " (seen OVER)")])
    return Table(f"Reference: one-slider page, median {ref * 1e3:.1f} ms per rerun (blocks before/after: "
                 f"{base[0]['median'] * 1e3:.1f} / {base[1]['median'] * 1e3:.1f} ms), server CPU {ref_cpu * 1e3:.1f} ms; "
                 f"with the client's delayed ACKs (no quickack): {no_quickack['median'] * 1e3:.1f} ms",
                 ["page", "level", "load s", "new ms", "new ratio", "n", "seen ms", "seen ratio",
                  "CPU new ms", "CPU seen ms", "MB/new", "errors", "target"], rows,
                 [f"server RSS after: {app.rss_bytes() / 1e6:.0f} MB"])


def browser(trivial: Server, app: Server, browser_pages: str, changes: int) -> Table:
    """A slider key press redrawn in headless chromium, on the one-slider page and the pages named."""
    ok, why = browser_available()
    if not ok:
        return Table(f"Browser redraw: skipped ({why})", [], [])
    from playwright.sync_api import sync_playwright

    rows = []
    with sync_playwright() as pw:
        chromium = launch_chromium(pw)
        targets = [("one-slider page", trivial.url + "/", "Value", "")]
        targets += [(f"/{p}", f"{app.url}/{p}", SLIDER, GROUP_LABEL) for p in browser_pages.split(",") if p]
        for name, url, label, group in targets:
            r = browser_redraw(url, label, changes, chromium, group)
            rows.append([name, r["n"], f"{r['p50']:.0f}", f"{r['p95']:.0f}", f"{r['key_p95']:.0f}",
                         f"{r['debounce']:.0f}", r["errors"], "ok" if r["p95"] <= 250 else "OVER"])
            print(f"  browser {name}: redraw p95 {r['p95']:.0f} ms", flush=True)
        chromium.close()
    return Table("Browser (headless chromium, defaults): a slider key press redrawn, ms",
                 ["page", "n", "send->drawn p50", "send->drawn p95", "key->drawn p95", "key->send (debounce)",
                  "errors", "≤250 ms"], rows)


def measure(pages, levels: str = "defaults,largest", repeats: int = 7, page_budget: float = 90.0,
            apptest: bool = True, browser_pages: str = "scores,multi_head,softmax",
            browser_changes: int = 20) -> list[Table]:
    """The three parts in order: AppTest (unless apptest=False), the protocol, the browser (unless
    browser_pages is empty)."""
    tables = []
    if apptest:
        print("1. AppTest (bench/apptest_rerun.py): every page in one process", flush=True)
        tables.append(apptest_rerun.run(repeats, levels, ",".join(p.path or "overview" for p in pages)))
        print("\n2. The websocket protocol: one server for the app, one for the one-slider page", flush=True)
    trivial_app = write_trivial_app(tempfile.mkdtemp(prefix="bench_rerun_"))
    with Server(trivial_app) as trivial, Server("app.py") as app:
        tables.append(protocol(trivial, app, pages, levels, repeats, page_budget))
        if browser_pages:
            tables.append(browser(trivial, app, browser_pages, browser_changes))
    return tables


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=7, help="slider moves per page and kind (default 7)")
    ap.add_argument("--levels", default="defaults,largest")
    ap.add_argument("--pages", default="", help="comma-separated URL paths, 'overview' for / (default: every page)")
    ap.add_argument("--page-budget", type=float, default=90.0, help="seconds per page for 'new' moves (≥ 1 move)")
    ap.add_argument("--browser-changes", type=int, default=20)
    ap.add_argument("--browser-pages", default="scores,multi_head,softmax")
    ap.add_argument("--no-browser", action="store_true")
    ap.add_argument("--no-apptest", action="store_true", help="skip the AppTest part")
    args = ap.parse_args()
    tables = measure(choose_pages(args.pages), args.levels, args.repeats, args.page_budget, not args.no_apptest,
                     "" if args.no_browser else args.browser_pages, args.browser_changes)
    for t in tables:
        print("\n" + t.text())


if __name__ == "__main__":
    main()
