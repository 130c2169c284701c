"""Drive app.py: STUDENTS browser tabs (chromium, CPU throttled THROTTLE x) follow PUSHES pushes that alternate
between the two pages; after each push, each tab must show the pushed page's title and its last line within 8 s,
and still show them 1 s later. Counts the tabs that showed a blank page (no title), the wrong page, or an error.

    python repro.py [--students 2] [--pushes 40] [--throttle 4] [--workaround] [--chromium /usr/bin/chromium]

Needs streamlit and playwright (pip install streamlit==1.67.0 playwright) and a chromium.
"""
import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from playwright.sync_api import sync_playwright

HERE = Path(__file__).resolve().parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def screen(tab) -> tuple[str, bool]:
    """The title shown (or "") and whether the page's last line is there."""
    return tuple(tab.evaluate("""() => {
        const h = document.querySelector('h1');
        const body = document.body.innerText;
        return [h ? h.innerText.trim() : '', /line 39/.test(body)];
    }"""))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--students", type=int, default=2)
    ap.add_argument("--pushes", type=int, default=40)
    ap.add_argument("--throttle", type=float, default=4.0)
    ap.add_argument("--workaround", action="store_true")
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    args = ap.parse_args()

    push = Path(tempfile.mkdtemp()) / "push.txt"
    push.write_text("0 a")
    port = free_port()
    env = dict(os.environ, PUSH_FILE=str(push), WITH_WORKAROUND="1" if args.workaround else "0",
               STREAMLIT_BROWSER_GATHER_USAGE_STATS="false")
    log = open(push.with_name("server.log"), "wb")
    server = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless=true",
                               f"--server.port={port}", "--server.address=127.0.0.1"], cwd=HERE, env=env,
                              stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    counts = {"blank": 0, "wrong": 0, "error": 0, "right": 0}
    errors: list[str] = []
    try:
        for _ in range(300):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=args.chromium, headless=True)
            tabs = []
            for i in range(args.students):
                tab = browser.new_context().new_page()
                tab.on("console", lambda m, i=i: errors.append(f"student {i}: {m.text}") if m.type == "error" else None)
                cdp = tab.context.new_cdp_session(tab)
                cdp.send("Emulation.setCPUThrottlingRate", {"rate": args.throttle})
                tab.goto(f"http://127.0.0.1:{port}/")
                tab.wait_for_selector("text=Page A, line 39", timeout=30_000)
                tabs.append(tab)
            for n in range(1, args.pushes + 1):
                page = "b" if n % 2 else "a"
                push.write_text(f"{n} {page}")
                want = f"Page {page.upper()}"
                t0 = time.monotonic()
                for i, tab in enumerate(tabs):
                    seen = ("", False)
                    while time.monotonic() - t0 < 8:
                        seen = screen(tab)
                        if seen == (want, True):
                            break
                        tab.wait_for_timeout(50)
                    if seen == (want, True):
                        tab.wait_for_timeout(1000)      # still there a moment later?
                        seen = screen(tab)
                    kind = ("right" if seen == (want, True) else "blank" if not seen[0] else
                            "wrong" if seen[0] != want else "blank")
                    counts[kind] += 1
                    if kind != "right":
                        print(f"push {n} ({want}), student {i}: {kind}: title {seen[0]!r}, last line {seen[1]}")
                    if kind != "right":              # come back: a fresh tab on the pushed page
                        tab.goto(f"http://127.0.0.1:{port}/{'b' if page == 'b' else ''}")
            browser.close()
    finally:
        os.killpg(server.pid, 15)
        server.wait(10)
    import streamlit
    print(f"streamlit {streamlit.__version__}, {args.students} students x {args.pushes} pushes, "
          f"CPU throttling {args.throttle:g}x, workaround {'on' if args.workaround else 'off'}: "
          f"{counts['right']} right, {counts['blank']} blank, {counts['wrong']} wrong page")
    for e in sorted(set(errors))[:10]:
        print("  browser console:", e[:200])
    return 0 if counts["right"] == args.students * args.pushes else 1


if __name__ == "__main__":
    sys.exit(main())
