"""What a rerun costs the Streamlit server process beyond the page script, and which
.streamlit/config.toml options change it.

    python bench/server_cost.py [--page qkv] [--reruns 30] [--rounds 2] [--profile]
                                [--variants default,compression,no_fast_reruns,gc]

A Streamlit 1.67 server is one process: each rerun's script runs in a ScriptRunner thread
(the page script, building the element protos, hashing each ForwardMsg for the browser's
message cache, session state); the main thread runs the event loop (uvicorn/starlette):
serialising each ForwardMsg, websocket framing (and permessage-deflate when
server.enableWebsocketCompression is on), the socket writes. /proc gives the process's CPU
and the main thread's (/proc/PID/task/PID/stat): their difference is the script threads'.

Per config variant (a server each, started with the option on its command line on top of
.streamlit/config.toml), one protocol session opens the page and its lazy "Score, mask &
temperature" group, then moves the temperature back and forth over 6 values (warm: cache
hits, what most of a class's reruns are): server CPU per rerun (all threads, and the event
loop's share), median latency, bytes per rerun. Variants run interleaved, `rounds` times;
each figure is the median over rounds. The one-slider page gives the reference.

--profile: the default server again under cProfile (main thread: the event loop), and the
page's script thread (ScriptRunner._run_script) under its own profile; top functions printed.
"""
from __future__ import annotations

import argparse
import os
import pstats
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._common import (Server, Session, Table, median, slider_value, slider_values,  # noqa: E402
                           write_trivial_app)

SLIDER, GROUP = "Softmax temperature", "grp.score"
VARIANTS = {
    "default": (),                                                   # .streamlit/config.toml as it is
    "compression": ("--server.enableWebsocketCompression=true",),   # permessage-deflate on every message
    "no_fast_reruns": ("--runner.fastReruns=false",),
    "gc": ("--runner.postScriptGC=true",),                           # Streamlit's default: gc.collect(2) per run
    "serializable": ("--runner.enforceSerializableSessionState=true",),
    "log_error": ("--logger.level=error",),
    # messages at least this large are cacheable: the browser keeps them, and a rerun that draws
    # one again sends a reference (ref_hash) instead of the message (Streamlit's default: 10 kB)
    "cache_1k": ("--global.minCachedMessageSize=1000",),
    "cache_200": ("--global.minCachedMessageSize=200",),
}
_TICKS = os.sysconf("SC_CLK_TCK")


def thread_cpu(pid: int, tid: int) -> float:
    with open(f"/proc/{pid}/task/{tid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS


def measure(server: Server, page: str, label: str, reruns: int, group: str | None) -> dict:
    with Session(server.port, page=page, timeout=300) as s:
        run, slider = s.find_slider(s.rerun(), label, expander=group)
        values = slider_values(slider)
        at = min(range(len(values)), key=lambda k: abs(values[k] - slider_value(slider)))
        cycle = [values[min(len(values) - 1, at + k)] for k in range(1, 7)]
        for v in cycle * 2:                                   # warm: every value computed once
            s.rerun([s.slider_state(slider, v)])
        times, sizes, msgs = [], [], []
        c0, m0 = server.cpu_seconds(), thread_cpu(server.pid, server.pid)
        for i in range(reruns):
            r = s.rerun([s.slider_state(slider, cycle[i % len(cycle)])])
            times.append(r.seconds)
            sizes.append(r.bytes)
            msgs.append(r.messages)
        cpu = (server.cpu_seconds() - c0) / reruns
        loop = (thread_cpu(server.pid, server.pid) - m0) / reruns
    return {"cpu": cpu, "loop": loop, "median": median(times), "kb": median(sizes) / 1e3, "msgs": median(msgs)}


def profile(page: str, reruns: int, top: int = 25) -> None:
    """The default server under cProfile: the event loop (main thread) and the script threads."""
    out = Path(tempfile.mkdtemp(prefix="server_cost_"))
    wrapper = out / "profiled_app.py"
    # The script threads: ScriptRunner._run_script wrapped in one Profile, dumped after each run.
    wrapper.write_text(f'''import cProfile, runpy, sys
from streamlit.runtime.scriptrunner import script_runner as _sr
if not getattr(_sr.ScriptRunner, "_profiled", False):
    _PR = cProfile.Profile()
    _orig = _sr.ScriptRunner._run_script
    def _wrapped(self, *a, **k):
        _PR.enable()
        try:
            return _orig(self, *a, **k)
        finally:
            _PR.disable()
            _PR.dump_stats({str(out / "script.prof")!r})
    _sr.ScriptRunner._run_script = _wrapped
    _sr.ScriptRunner._profiled = True
''')
    loop_prof = out / "loop.prof"
    # app.py runs as the main script; the wrapper is imported first through sitecustomize-like -c
    server = Server("app.py", python=("-m", "cProfile", "-o", str(loop_prof)))
    env_pp = os.environ.get("PYTHONPATH", "")
    os.environ["PYTHONPATH"] = f"{out}:{env_pp}" if env_pp else str(out)
    (out / "sitecustomize.py").write_text("import profiled_app  # noqa\n")
    try:
        server.start()
        server.wait_healthy(120)
        r = measure(server, page, SLIDER, reruns, GROUP)
    finally:
        server.stop(30)
        os.environ["PYTHONPATH"] = env_pp
    print(f"\nProfiled server, /{page}, {reruns} warm reruns: {r['cpu'] * 1e3:.0f} ms CPU per rerun "
          f"(profiling inflates it), event loop {r['loop'] * 1e3:.0f} ms")
    for name, path in (("event loop (main thread), whole server life", loop_prof),
                       ("script threads (ScriptRunner._run_script), whole server life", out / "script.prof")):
        if path.exists():
            print(f"\n--- {name}: top {top} by own time ---")
            pstats.Stats(str(path)).sort_stats("tottime").print_stats(top)
        else:
            print(f"\n--- {name}: no profile written ({path})")


def compare(page: str = "qkv", reruns: int = 30, rounds: int = 2, variants: str = ",".join(VARIANTS)) -> Table:
    """A server per config variant and one for the one-slider page, measured in turns `rounds` times."""
    names = variants.split(",")
    trivial_app = write_trivial_app(tempfile.mkdtemp(prefix="server_cost_"))
    servers = {name: Server("app.py", extra_args=VARIANTS[name]) for name in names}
    servers["one-slider"] = Server(trivial_app)
    for s in servers.values():
        s.start()
    results: dict[str, list[dict]] = {name: [] for name in servers}
    try:
        for s in servers.values():
            s.wait_healthy(120)
        for rnd in range(rounds):
            for name, server in servers.items():
                if name == "one-slider":
                    r = measure(server, "", "Value", reruns, None)
                else:
                    r = measure(server, page, SLIDER, reruns, GROUP)
                results[name].append(r)
                print(f"  round {rnd + 1} {name:15s} CPU {r['cpu'] * 1e3:5.1f} ms/rerun (event loop "
                      f"{r['loop'] * 1e3:4.1f}), median {r['median'] * 1e3:5.1f} ms, {r['kb']:.1f} kB", flush=True)
    finally:
        for s in servers.values():
            s.stop()
    base = median([r["cpu"] for r in results["default"]]) if "default" in results else float("nan")
    rows = []
    for name, rs in results.items():
        cpu, loop = median([r["cpu"] for r in rs]), median([r["loop"] for r in rs])
        rows.append([name, " ".join(VARIANTS.get(name, ("(trivial app)",))) or "(config.toml)",
                     f"{cpu * 1e3:.1f}", f"{loop * 1e3:.1f}", f"{(cpu - loop) * 1e3:.1f}",
                     f"{cpu / base:.2f}x", f"{median([r['median'] for r in rs]) * 1e3:.1f}",
                     f"{median([r['kb'] for r in rs]):.1f}", f"{median([r['msgs'] for r in rs]):.0f}"])
    return Table(f"/{page}, {reruns} warm temperature changes per round, median of {rounds} rounds "
                 "(/proc ticks are 10 ms: per rerun figures are block averages)",
                 ["variant", "options", "CPU ms/rerun", "event loop ms", "script threads ms", "vs default",
                  "median ms", "kB/rerun", "messages/rerun"], rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--page", default="qkv")
    ap.add_argument("--reruns", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    print("\n" + compare(args.page, args.reruns, args.rounds, args.variants).text())
    if args.profile:
        profile(args.page, args.reruns)


if __name__ == "__main__":
    main()
