"""A class on one machine: simulated students on Streamlit's websocket protocol.

    python tests/load/run.py [--students 1,30] [--seconds 40] [--pages auto|qkv,scores]
                             [--browsers 4] [--no-browser] [--no-restart] [--replicas 2]

Not part of the default pytest run (pytest.ini: --ignore=tests/load). Traffic goes to
127.0.0.1 only; every loop is bounded in count and time.

1. Protocol students (bench/_common.Session, one websocket each, a thread each): each opens
   the page, then about once a second (0.8-1.2 s, random phase) moves a slider a few steps
   from where it is (a random walk over its positions) and waits for script_finished.
   For each class size N, on the app's heaviest forward page (--pages auto, the default:
   measured first, the most server CPU per setting change; or the pages named) and on a
   one-slider page in the same run: p50/p95/max rerun latency (BackMsg sent ->
   script_finished), reruns/s, server CPU per rerun and utilisation (/proc), exception
   elements, errors, server RSS before / peak / after, memory per session, time to open the
   N sessions.
   Two sliders on the page: a setting in the sidebar ("Softmax temperature": the whole page
   reruns; it is in the lazy group "Score, mask & temperature", which each student opens
   first as a browser does, Session.find_slider) and, where the page has one, its own
   control inside an st.fragment ("d_k for the experiment" on /scores: the client sends the
   fragment's id as the browser does, and only the fragment reruns).
   Targets (../shared/DESIGN.md; issue 11): with 30 students, p95 within 2x of one student's, and
   the server's CPU per rerun within 2x of the one-slider page's.
2. Real headless chromium students (Debian chromium) doing the same, every change checked:
   the run ended, the slider and the URL show the new value, the heatmaps are drawn, no
   exception element.
3. Server restart: a student's view (sentence typed, slider moved) is back after the server
   restarts on the same port and the student reloads: from the URL alone.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import random
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qs, urlparse

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench._common import (EXCEPTION, Server, Session, after_run, browser_available, forward_pages,  # noqa: E402
                           launch_chromium, median, new_context, open_group, percentile, proc_cpu_seconds, run_marker,
                           slider_value, slider_values, table, wait_for_charts, wait_run_end, write_trivial_app)
from tests.load.replicas import NGINX, Replicas, nginx_available  # noqa: E402

APP_SLIDER = "Softmax temperature"          # a setting: the whole page reruns
GROUP = "grp.score"                         # ...drawn only while this lazy expander is open (ui/settings_panel.py)
GROUP_LABEL = "Score, mask & temperature"
LOCAL_SLIDER = {"scores": "d_k for the experiment"}   # a page's own control in an st.fragment
TRIVIAL_SLIDER = "Value"


@dataclass
class Result:
    latencies: list = field(default_factory=list)
    exceptions: int = 0
    errors: list = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def student(i: int, port: int, page: str, label: str, interval: float, seed: int, ready: threading.Barrier,
            start: list, duration: float, out: Result) -> None:
    rng = random.Random(seed * 1000 + i)
    session = None
    try:
        session = Session(port, page=page, timeout=180)
        first, slider = session.find_slider(session.rerun(), label, expander=GROUP)
        fragment = first.fragment_of.get(slider.id, "")       # a slider inside an st.fragment reruns only it
        values = slider_values(slider)
        pos = min(range(len(values)), key=lambda k: abs(values[k] - slider_value(slider)))
        with out.lock:
            out.exceptions += len(first.exceptions)
    except Exception as err:
        with out.lock:
            out.errors.append(f"open: {type(err).__name__}: {err}")
        try:
            ready.wait()
        except threading.BrokenBarrierError:
            pass
        if session:
            session.close()
        return
    try:
        ready.wait()
    except threading.BrokenBarrierError:
        session.close()
        return
    t_end = start[0] + duration
    next_t = start[0] + rng.uniform(0, interval)
    for _ in range(int(duration / interval * 2) + 5):            # bounded in count, and in time below
        now = time.perf_counter()
        if next_t > now:
            time.sleep(next_t - now)
        if time.perf_counter() >= t_end:
            break
        pos = max(0, min(len(values) - 1, pos + rng.choice((-3, -2, -1, 1, 2, 3))))
        try:
            run = session.rerun([session.slider_state(slider, values[pos])], fragment)
        except Exception as err:
            with out.lock:
                out.errors.append(f"rerun: {type(err).__name__}: {err}")
            break
        with out.lock:
            out.latencies.append(run.seconds)
            out.exceptions += len(run.exceptions)
        next_t = max(next_t + interval * rng.uniform(0.8, 1.2), time.perf_counter())
    session.close()


class Sampler(threading.Thread):
    """Server RSS every 0.2 s (the peak)."""

    def __init__(self, server: Server):
        super().__init__(daemon=True)
        self.server, self.peak, self.stop_flag = server, server.rss_bytes(), threading.Event()

    def run(self) -> None:
        while not self.stop_flag.wait(0.2):
            try:
                self.peak = max(self.peak, self.server.rss_bytes())
            except OSError:
                return


def warm(session: Session, local_slider: str | None) -> None:
    """First run (imports, traces), and every position of the page's own slider once (its charts
    are cached per position), so one student's figures are not first-time costs."""
    first = session.rerun()
    if first.expander(GROUP) is not None:
        session.open_expander(first, GROUP)
    if local_slider:
        slider = first.slider(local_slider)
        fragment = first.fragment_of.get(slider.id, "")
        for value in slider_values(slider):
            session.rerun([session.slider_state(slider, value)], fragment)


def run_class(server: Server, page: str, label: str, n: int, duration: float, interval: float,
              seed: int) -> dict:
    out = Result()
    start = [0.0]
    # the clock starts when the last student has opened the page (the barrier's action), so each
    # student's first move falls at a random phase of the first second, not all at once on release
    ready = threading.Barrier(n + 1, action=lambda: start.__setitem__(0, time.perf_counter() + 0.05), timeout=600)
    rss_before = server.rss_bytes()
    sampler = Sampler(server)
    sampler.start()
    t_open = time.perf_counter()
    threads = [threading.Thread(target=student, args=(i, server.port, page, label, interval, seed, ready, start,
                                                      duration, out), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    try:
        ready.wait()
    except threading.BrokenBarrierError:
        out.errors.append("not every student could open the page within 600 s")
    opened = time.perf_counter() - t_open
    rss_open = server.rss_bytes()
    cpu0, own0, t0 = server.cpu_seconds(), proc_cpu_seconds(os.getpid()), time.perf_counter()
    for t in threads:
        t.join(duration + 200)
    wall = time.perf_counter() - t0
    cpu = server.cpu_seconds() - cpu0
    own = proc_cpu_seconds(os.getpid()) - own0
    time.sleep(2)
    sampler.stop_flag.set()
    sampler.join(2)
    lat = out.latencies
    return {"n": n, "reruns": len(lat), "rate": len(lat) / wall if wall else 0.0,
            "p50": percentile(lat, 50), "p95": percentile(lat, 95), "max": max(lat) if lat else float("nan"),
            "cpu_per_rerun": cpu / len(lat) if lat else float("nan"), "util": cpu / wall if wall else 0.0,
            "client_cpu": own / wall if wall else 0.0, "exceptions": out.exceptions, "errors": out.errors,
            "rss_before": rss_before, "rss_open": rss_open, "rss_peak": sampler.peak, "rss_after": server.rss_bytes(),
            "per_session": (rss_open - rss_before) / n, "open_s": opened}


def mb(b: float) -> str:
    return f"{b / 1e6:.0f}"


# ----------------------------------------------------------------------------------------
# real browsers
# ----------------------------------------------------------------------------------------

def browser_students(server: Server, page: str, k: int, seconds: float, interval: float) -> dict:
    """k chromium students in lockstep: each second every one moves the slider one step,
    then every change is checked."""
    from playwright.sync_api import sync_playwright

    checked, failures, lat = 0, [], []
    with sync_playwright() as pw:
        browser = launch_chromium(pw)
        tabs = []
        for _ in range(k):
            ctx = new_context(browser)
            tab = ctx.new_page()
            after_run(tab, lambda tab=tab: tab.goto(f"{server.url}/{page}", wait_until="domcontentloaded"),
                      timeout_ms=120_000)
            wait_for_charts(tab)
            open_group(tab, GROUP_LABEL)                 # the setting's lazy group, as a student opens it
            thumb = tab.get_by_role("slider", name=APP_SLIDER).first
            thumb.wait_for(timeout=30_000)
            tabs.append((ctx, tab, thumb, [1.0]))
        t_end = time.perf_counter() + seconds
        for _ in range(int(seconds / interval) + 1):
            tick = time.perf_counter()
            if tick >= t_end:
                break
            pressed = []
            for ctx, tab, thumb, value in tabs:
                key = "ArrowRight" if value[0] < 4.9 else "ArrowLeft"
                value[0] = round(value[0] + (0.05 if key == "ArrowRight" else -0.05), 2)
                marker = run_marker(tab)
                t_key = tab.evaluate("() => performance.now()")
                thumb.focus()
                thumb.press(key)
                pressed.append((tab, value[0], marker, t_key))
            for tab, want, marker, t_key in pressed:
                checked += 1
                try:
                    wait_run_end(tab, marker, timeout_ms=60_000)
                    lat.append(tab.evaluate("() => window.__ws.lastRecv") - t_key)
                    shown = tab.locator("[data-testid='stSlider']").filter(has_text=APP_SLIDER) \
                        .locator("[data-testid='stSliderThumbValue']").first.inner_text()
                    url_t = parse_qs(urlparse(tab.url).query).get("temperature", ["1"])[-1]
                    drawn = wait_for_charts(tab, timeout_ms=10_000)
                    problems = []
                    if abs(float(shown) - want) > 1e-6:
                        problems.append(f"slider shows {shown}, expected {want:.2f}")
                    if abs(float(url_t) - want) > 1e-6:
                        problems.append(f"URL temperature={url_t}, expected {want:g}")
                    if not drawn or not all(c["rendered"] for c in drawn if c["visible"]):
                        problems.append("a heatmap is not drawn")
                    if tab.locator(EXCEPTION).count():
                        problems.append("exception element: " + tab.locator(EXCEPTION).first.inner_text()[:200])
                    if problems:
                        failures.append("; ".join(problems))
                except Exception as err:
                    failures.append(f"{type(err).__name__}: {str(err)[:200]}")
            time.sleep(max(0.0, interval - (time.perf_counter() - tick)))
        for ctx, *_ in tabs:
            ctx.close()
        browser.close()
    return {"k": k, "changes": checked, "failures": failures, "p50": percentile(lat, 50), "p95": percentile(lat, 95)}


def restart_check(page: str) -> dict:
    """A student's view survives a server restart on the same port: the page reconnects by
    itself and the next slider move reruns on the new server with the same settings; and a
    reload gives the same view back, from the URL alone."""
    from playwright.sync_api import sync_playwright

    sentence = "the cat sat on a mat"
    server = Server("app.py").start()
    server.wait_healthy(90)
    out = {}
    try:
        with sync_playwright() as pw:
            browser = launch_chromium(pw)
            tab = new_context(browser).new_page()
            sockets = []
            tab.on("websocket", lambda ws: sockets.append(ws.url))
            after_run(tab, lambda: tab.goto(f"{server.url}/{page}", wait_until="domcontentloaded"), timeout_ms=120_000)
            box = tab.locator("[data-testid='stSidebar']").get_by_role("textbox", name="Sentence")
            after_run(tab, lambda: (box.fill(sentence), box.press("Enter")))
            open_group(tab, GROUP_LABEL)
            thumb = tab.get_by_role("slider", name=APP_SLIDER).first
            after_run(tab, lambda: (thumb.focus(), thumb.press("ArrowRight")))

            def view():
                open_group(tab, GROUP_LABEL)            # closed again after a reload (a new session)
                rows = [c["y"] for c in wait_for_charts(tab, lambda cs: any(
                    c["rendered"] and c["y"] == sentence.split() for c in cs), timeout_ms=20_000) if c["rendered"]]
                for _ in range(50):           # the box is filled in a moment after the charts (≤ 5 s)
                    if box.input_value():
                        break
                    tab.wait_for_timeout(100)
                return {"url_query": urlparse(tab.url).query, "sentence": box.input_value(),
                        "temperature": tab.locator("[data-testid='stSlider']").filter(has_text=APP_SLIDER)
                        .locator("[data-testid='stSliderThumbValue']").first.inner_text(),
                        "sentence_rows": sentence.split() in rows,
                        "exceptions": tab.locator(EXCEPTION).count()}

            out["before"] = view()
            server.stop()
            t0 = time.perf_counter()
            server = Server("app.py", port=server.port).start()
            server.wait_healthy(90)
            out["restart_s"] = time.perf_counter() - t0
            # no reload: the page reconnects by itself (it does not rerun until the student acts)
            n = len(sockets)
            for _ in range(300):                               # ≤ 30 s
                if len(sockets) > n:
                    break
                tab.wait_for_timeout(100)
            out["reconnect_s"] = time.perf_counter() - t0 if len(sockets) > n else None
            if out["reconnect_s"] is not None:
                tab.wait_for_timeout(500)
                after_run(tab, lambda: (thumb.focus(), thumb.press("ArrowRight")), timeout_ms=60_000)
                out["moved_after_reconnect"] = view()
            after_run(tab, lambda: tab.reload(wait_until="domcontentloaded"), timeout_ms=120_000)
            out["after_reload"] = view()
            browser.close()
        want = {"sentence": sentence, "sentence_rows": True, "exceptions": 0}
        out["ok_before"] = all(out["before"][k] == v for k, v in want.items())
        moved = out.get("moved_after_reconnect")
        out["ok_reconnect"] = bool(moved) and all(moved[k] == v for k, v in want.items()) \
            and moved["temperature"] == "1.10" and "temperature=1.1" in moved["url_query"]
        expected_reload = moved or out["before"]
        out["ok_reload"] = out["after_reload"] == expected_reload
    finally:
        server.stop()
    return out


def heaviest(server: Server, pages: list[str], moves: int = 8, seed: int = 1) -> tuple[str, list[list]]:
    """The forward page whose setting change costs the server the most CPU: per page, one
    session opens it (and the lazy group), then moves the temperature `moves` times as a
    student does (a random walk: new values and seen ones); CPU per rerun from /proc."""
    rng, rows, best = random.Random(seed), [], ("", -1.0)
    for page in pages:
        with Session(server.port, page=page, timeout=300) as s:
            run, slider = s.find_slider(s.rerun(), APP_SLIDER, expander=GROUP)
            values = slider_values(slider)
            pos = min(range(len(values)), key=lambda k: abs(values[k] - slider_value(slider)))
            times, c0 = [], server.cpu_seconds()
            for _ in range(moves):
                pos = max(0, min(len(values) - 1, pos + rng.choice((-3, -2, -1, 1, 2, 3))))
                times.append(s.rerun([s.slider_state(slider, values[pos])]).seconds)
            cpu = (server.cpu_seconds() - c0) / moves
        rows.append([f"/{page}", f"{median(times) * 1e3:.0f}", f"{cpu * 1e3:.0f}"])
        if cpu > best[1]:
            best = (page, cpu)
    return best[0], rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--students", default="1,30", help="class sizes, comma-separated")
    ap.add_argument("--seconds", type=float, default=40.0, help="duration of each class run")
    ap.add_argument("--interval", type=float, default=1.0, help="seconds between a student's slider moves")
    ap.add_argument("--pages", "--page", dest="pages", default="auto",
                    help="forward pages (URL paths, comma-separated) under load; 'auto': the heaviest, measured")
    ap.add_argument("--browsers", type=int, default=4, help="chromium students (0: none)")
    ap.add_argument("--browser-seconds", type=float, default=20.0)
    ap.add_argument("--no-browser", action="store_true")
    ap.add_argument("--no-restart", action="store_true")
    ap.add_argument("--no-local", action="store_true", help="skip the page's own (fragment) slider")
    ap.add_argument("--replicas", type=int, default=2,
                    help="also run the app as this many replicas behind nginx (deploy/nginx.conf); 0: not")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    forward = [p.path for p in forward_pages()]
    pages = forward if args.pages == "auto" else args.pages.split(",")
    for page in pages:
        if page not in forward:
            sys.exit(f"no forward page {page!r} (forward pages: {', '.join('/' + p for p in forward)})")
    sizes = [int(n) for n in args.students.split(",")]

    rows, results = [], {}
    trivial_app = write_trivial_app(tempfile.mkdtemp(prefix="load_trivial_"))
    replicas = contextlib.nullcontext()
    if args.replicas > 1:
        if nginx_available():
            replicas = Replicas(args.replicas)
        else:
            print(f"replicas: skipped (no nginx at {NGINX})")
    with Server(trivial_app) as trivial, Server("app.py") as app, replicas as farm:
        if args.pages == "auto":
            for page in pages:                                        # first runs: imports, traces
                with Session(app.port, page=page, timeout=300) as s:
                    warm(s, None)
            chosen, heavy_rows = heaviest(app, pages, seed=args.seed)
            print("Heaviest forward page, by server CPU per setting change (one session, 8 moves each):")
            print(table(heavy_rows, ["page", "median ms", "CPU ms/rerun"]))
            print(f"-> /{chosen}\n", flush=True)
            pages = [chosen]
        for server, page in [(app, p) for p in pages] + [(trivial, "")]:   # warm up: imports, first traces
            with Session(server.port, page=page, timeout=300) as s:
                warm(s, LOCAL_SLIDER.get(page))
        for _ in range(4 * args.replicas if farm else 0):         # nginx spreads these over the replicas
            with Session(farm.port, page=pages[0], timeout=300) as s:
                warm(s, LOCAL_SLIDER.get(pages[0]))
        scenarios = []
        for page in pages:
            scenarios.append(("app /" + page, app, page, APP_SLIDER))
            if page in LOCAL_SLIDER and not args.no_local:
                scenarios.append((f"app /{page} local", app, page, LOCAL_SLIDER[page]))
        if farm:
            scenarios.append((f"app /{pages[0]} x{args.replicas}", farm, pages[0], APP_SLIDER))
        scenarios.append(("one-slider", trivial, "", TRIVIAL_SLIDER))
        for n in sizes:
            for name, server, page, label in scenarios:
                r = run_class(server, page, label, n, args.seconds, args.interval, args.seed)
                results[(name, n)] = r
                print(f"  {name:20s} N={n:3d}: {r['reruns']} reruns, p50 {r['p50'] * 1e3:.0f} ms, "
                      f"p95 {r['p95'] * 1e3:.0f} ms, CPU {r['cpu_per_rerun'] * 1e3:.0f} ms/rerun, "
                      f"errors {len(r['errors'])}", flush=True)
                rows.append([name, n, r["reruns"], f"{r['rate']:.1f}", f"{r['p50'] * 1e3:.0f}",
                             f"{r['p95'] * 1e3:.0f}", f"{r['max'] * 1e3:.0f}", f"{r['cpu_per_rerun'] * 1e3:.0f}",
                             f"{r['util'] * 100:.0f}%", f"{r['client_cpu'] * 100:.0f}%", r["exceptions"],
                             len(r["errors"]), f"{mb(r['rss_before'])}/{mb(r['rss_peak'])}/{mb(r['rss_after'])}",
                             f"{r['per_session'] / 1e3:.0f}", f"{r['open_s']:.1f}"])
    print(f"\nLoad: each student moves a slider every {args.interval:g} s (±20%) for {args.seconds:g} s, "
          f"and waits for its rerun")
    print(table(rows, ["page", "students", "reruns", "reruns/s", "p50 ms", "p95 ms", "max ms", "CPU ms/rerun",
                       "server CPU", "client CPU", "exceptions", "errors", "RSS MB before/peak/after",
                       "KB/session", "open s"]))
    print("\nTargets (issue 11): p95 with N students ≤ 2x p95 with 1; server CPU per rerun ≤ 2x the one-slider page's")
    for name in [sc[0] for sc in scenarios]:
        one = results.get((name, 1))
        for n in sizes:
            if n != 1 and one and (name, n) in results:
                ratio = results[(name, n)]["p95"] / one["p95"]
                print(f"  {name}: p95 with {n} students / p95 with 1 = {ratio:.1f}x "
                      f"({'ok' if ratio <= 2 else 'OVER'} the 2x target)")
        if name == "one-slider":
            continue
        for n in sizes:
            ref = results.get(("one-slider", n))
            if ref and (name, n) in results and ref["cpu_per_rerun"] > 0:
                ratio = results[(name, n)]["cpu_per_rerun"] / ref["cpu_per_rerun"]
                print(f"  {name}: CPU per rerun with {n} students / the one-slider page's = "
                      f"{results[(name, n)]['cpu_per_rerun'] * 1e3:.0f} / {ref['cpu_per_rerun'] * 1e3:.0f} ms = "
                      f"{ratio:.1f}x ({'ok' if ratio <= 2 else 'OVER'} the 2x target)")
    for (name, n), r in results.items():
        for e in r["errors"][:3]:
            print(f"  error ({name}, N={n}): {e}")
    if args.replicas > 1 and nginx_available():
        print(f"\n'app /{pages[0]} x{args.replicas}': {args.replicas} app servers on this machine behind nginx with "
              "deploy/nginx.conf (cookie-sticky); CPU and RSS summed over the replicas.")
        with Replicas(args.replicas) as farm:
            sticky = farm.sticky_check()
        print(f"Sticky sessions: a picture drawn for a student is fetched {sticky['same_cookie_ok']}/{sticky['tries']} "
              f"times with the student's cookie, {sticky['fresh_cookie_ok']}/{sticky['tries']} with fresh cookies "
              f"(other replicas do not hold it).")

    if not args.no_browser and args.browsers > 0:
        ok, why = browser_available()
        if not ok:
            print(f"\nchromium students: skipped ({why})")
        else:
            with Server("app.py") as app:
                b = browser_students(app, pages[0], args.browsers, args.browser_seconds, args.interval)
            print(f"\n{b['k']} chromium students on /{pages[0]}, one slider step each per second for "
                  f"{args.browser_seconds:g} s: {b['changes']} changes checked, {len(b['failures'])} failures; "
                  f"key -> last message p50 {b['p50']:.0f} ms, p95 {b['p95']:.0f} ms")
            for f in b["failures"][:5]:
                print("  failure:", f)
    if not args.no_restart:
        ok, why = browser_available()
        if not ok:
            print(f"\nrestart check: skipped ({why})")
        else:
            r = restart_check(pages[0])
            print(f"\nServer restart on the same port (healthy again after {r['restart_s']:.1f} s):")
            print(f"  before the restart:          {r['before']}")
            rc = r["reconnect_s"]
            print(f"  page reconnected by itself:  {'after %.1f s' % rc if rc is not None else 'NO (30 s)'}; "
                  f"next slider move on the new server: {'ok' if r['ok_reconnect'] else 'WRONG'} "
                  f"{r.get('moved_after_reconnect')}")
            print(f"  after a reload:              {'same view' if r['ok_reload'] else 'DIFFERENT view'} "
                  f"{r['after_reload']}")


if __name__ == "__main__":
    main()
