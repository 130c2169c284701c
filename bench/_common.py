"""Shared by bench/*.py, tests/e2e and tests/load: start a Streamlit server, speak its
websocket protocol, drive a headless Debian chromium, read process CPU and memory.

Everything here talks to 127.0.0.1 only, and every wait is bounded.

    from bench._common import Server, Session, forward_pages
    with Server("app.py") as server:
        s = Session(server.port, page="scores")
        run = s.rerun()                                  # the first run of the page
        slider = run.slider("Softmax temperature")
        run = s.rerun([s.slider_state(slider, 2.0)])    # move it; run.seconds = send -> script_finished

    A setting drawn inside a lazy expander (the sidebar's "Score, mask & temperature" group, key
    "grp.score") exists only once the group is open; open it as the browser does:
        run, slider = s.find_slider(s.rerun(), "Softmax temperature", expander="grp.score")
"""
from __future__ import annotations

import ast
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = os.environ.get("ATTENTION_EXPLORER_CHROMIUM", "/usr/bin/chromium")   # Debian's; never a download
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
IDLE = "[data-testid='stApp'][data-test-script-state='notRunning']"
CHART = "[data-testid='stVegaLiteChart']"
EXCEPTION = "[data-testid='stException']"

# The reference page every ratio is taken against: one slider, nothing else.
TRIVIAL_APP = '''import streamlit as st

value = st.slider("Value", min_value=0, max_value=100, value=50)
st.write(value)
'''


# ----------------------------------------------------------------------------------------
# pages, from the navigation app.py builds (ui/nav.py SECTIONS), for the files that exist
# ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Page:
    section: str
    file: str        # "app_pages/4_scores.py"
    label: str
    path: str        # URL path without slashes: "" for the Overview, "scores" for app_pages/4_scores.py

    @property
    def url_path(self) -> str:
        return "/" + self.path


def sections(root: Path = ROOT) -> list[tuple[str, list[Page]]]:
    """ui/nav.py's SECTIONS (read as a literal: no Streamlit import), only files that exist.
    Each entry is (file, label, icon, url path): the url path is st.Page's url_path."""
    tree = ast.parse((root / "ui" / "nav.py").read_text())
    literal = next(node.value for node in ast.walk(tree) if isinstance(node, ast.Assign)
                   and any(isinstance(t, ast.Name) and t.id == "SECTIONS" for t in node.targets))
    out = []
    for section, pages in ast.literal_eval(literal):
        found = [Page(section, f, label, path) for f, label, _, path in pages if (root / f).exists()]
        if found:
            out.append((section, found))
    return out


def all_pages(root: Path = ROOT) -> list[Page]:
    return [p for _, pages in sections(root) for p in pages]


def forward_pages(root: Path = ROOT) -> list[Page]:
    return [p for section, pages in sections(root) for p in pages if section == "Forward pass"]


def page_title(page: Page, root: Path = ROOT) -> str | None:
    """The title a page passes to ui.page(PAGE, "Title", ...), read from its source (None if not literal)."""
    tree = ast.parse((root / page.file).read_text())
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "page"
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "ui"
                and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant)
                and isinstance(node.args[1].value, str)):
            return node.args[1].value
    return None


# ----------------------------------------------------------------------------------------
# the server
# ----------------------------------------------------------------------------------------

_handed_out: set[int] = set()


def free_port() -> int:
    """A free 127.0.0.1 port: from ATTENTION_EXPLORER_PORTS ("8670-8699", a range this machine
    reserves for you) if set, else any the OS gives."""
    span = os.environ.get("ATTENTION_EXPLORER_PORTS", "")
    if span:
        lo, hi = (int(x) for x in span.split("-"))
        for port in range(lo, hi + 1):
            if _claim(port):
                return port
        raise RuntimeError(f"no free port in ATTENTION_EXPLORER_PORTS={span}")
    # Not port 0: the OS hands that out from its ephemeral range, the same range it gives every outgoing
    # connection (a browser's, a Redis client's), so one of those could take it before the server binds it
    # ("Port 54311 is not available", seen in CI). Below that range only our own servers bind.
    lo, hi = _ephemeral_range()
    span = (10_000, lo - 1) if lo > 12_000 else (hi + 1, 65_535)
    for _ in range(200):
        port = random.randint(*span)
        if _claim(port):
            return port
    raise RuntimeError(f"no free port in {span[0]}-{span[1]}")


def _claim(port: int) -> bool:
    """This port, if no one binds it now and this process has not handed it out before."""
    if port in _handed_out:
        return False
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    _handed_out.add(port)
    return True


def _ephemeral_range() -> tuple[int, int]:
    try:
        lo, hi = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(lo), int(hi)
    except (OSError, ValueError):
        return 32_768, 60_999                     # Linux's default


def write_trivial_app(directory: str | Path | None = None) -> Path:
    """The one-slider page, written into a temp dir (its own dir: no pages/ folder next to it)."""
    directory = Path(directory or tempfile.mkdtemp(prefix="trivial_app_"))
    path = directory / "one_slider.py"
    path.write_text(TRIVIAL_APP)
    return path


class Server:
    """`python -m streamlit run SCRIPT` on a free 127.0.0.1 port, run from the repo root so the
    project's .streamlit/config.toml applies to the app and to the trivial app alike."""

    def __init__(self, script: str | Path = "app.py", cwd: Path = ROOT, port: int | None = None,
                 extra_args: tuple[str, ...] = (), log: str | Path | None = None, python: tuple = (),
                 env: dict | None = None):
        self.script, self.cwd, self.port = str(script), Path(cwd), port or free_port()
        self.chosen = port is None          # ours to change if another process binds it first
        self.env = dict(env or {})          # more environment for the app (a value None: removed)
        self.extra_args, self.python = tuple(extra_args), tuple(python)
        self.log_path = Path(log) if log else Path(tempfile.mkstemp(prefix="streamlit_", suffix=".log")[1])
        self.proc: subprocess.Popen | None = None
        self.started_at = 0.0
        self._restarts = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        return self.proc.pid

    def start(self) -> "Server":
        env = dict(os.environ, STREAMLIT_BROWSER_GATHER_USAGE_STATS="false", PYTHONUNBUFFERED="1")
        for name, value in self.env.items():
            if value is None:
                env.pop(name, None)
            else:
                env[name] = str(value)
        cmd = [sys.executable, *self.python, "-m", "streamlit", "run", self.script, "--server.headless=true",
               "--server.address=127.0.0.1", f"--server.port={self.port}", *self.extra_args]
        self._log = open(self.log_path, "wb")
        self.started_at = time.perf_counter()
        self.proc = subprocess.Popen(cmd, cwd=self.cwd, stdout=self._log, stderr=subprocess.STDOUT, env=env,
                                     start_new_session=True)
        return self

    def wait_healthy(self, timeout: float = 60.0) -> float:
        """Poll /_stcore/health; return the seconds since start()."""
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline:
            if self.proc.poll() is not None:
                taken = f"Port {self.port} is not available" in self.log_tail()
                if taken and self.chosen and self._restarts < 3:   # bound by another process meanwhile
                    self._restarts += 1
                    self._log.close()
                    self.port = free_port()
                    self.start()
                    continue
                raise RuntimeError(f"streamlit exited with {self.proc.returncode}:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(self.url + "/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        return time.perf_counter() - self.started_at
            except OSError:
                pass
            time.sleep(0.02)
        raise TimeoutError(f"streamlit not healthy after {timeout:.0f} s:\n{self.log_tail()}")

    def log_tail(self, chars: int = 4000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def terminate(self) -> None:
        """SIGTERM without waiting (stop() later reaps it)."""
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)   # its own session: ends only what it started
            except ProcessLookupError:
                pass

    def stop(self, timeout: float = 10.0) -> None:
        if self.proc is None:
            return
        try:
            self.terminate()
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(timeout)
        finally:
            if not self._log.closed:
                self._log.close()

    def __enter__(self) -> "Server":
        self.start()
        self.wait_healthy()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- resources, from /proc ---------------------------------------------------------
    def cpu_seconds(self) -> float:
        return proc_cpu_seconds(self.pid)

    def rss_bytes(self) -> int:
        return proc_rss_bytes(self.pid)


_TICKS = os.sysconf("SC_CLK_TCK")


def proc_cpu_seconds(pid: int) -> float:
    """user + system CPU of one process (its threads included)."""
    with open(f"/proc/{pid}/stat") as f:
        fields_ = f.read().rsplit(")", 1)[1].split()
    return (int(fields_[11]) + int(fields_[12])) / _TICKS


def proc_rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


# ----------------------------------------------------------------------------------------
# the websocket protocol (Streamlit 1.67): one Session = one browser tab
# ----------------------------------------------------------------------------------------

@dataclass
class Run:
    """What one rerun sent back."""
    seconds: float                       # BackMsg sent -> script_finished received
    status: str = ""
    messages: int = 0
    bytes: int = 0
    elements: list = field(default_factory=list)         # (type, inner proto) of new_element deltas
    page_script_hash: str = ""
    page_not_found: bool = False
    fragment_of: dict = field(default_factory=dict)      # widget id -> the id of the st.fragment it is in
    blocks: list = field(default_factory=list)           # Block protos of add_block deltas (expanders, ...)
    fragment_id: str = ""                                # the fragment this run reran ("" for a full run)
    pages_run: list = field(default_factory=list)        # url paths of the pages this run ran (a switch: two)
    runs: int = 0                                        # script runs ended in this Run (a switch_page: >1)

    def of_type(self, kind: str) -> list:
        return [e for t, e in self.elements if t == kind]

    @property
    def exceptions(self) -> list:
        return self.of_type("exception")

    def slider(self, label: str):
        for s in self.of_type("slider"):
            if s.label == label:
                return s
        raise KeyError(f"no slider {label!r} among {[s.label for s in self.of_type('slider')]}")

    def expander(self, key: str):
        """The Block.Expandable of the expander with this user key (st.expander(..., key=key));
        its `id` is the widget id a browser sends the open/closed state under. None if absent."""
        from streamlit.runtime.state.common import user_key_from_element_id

        for block in self.blocks:
            if block.WhichOneof("type") == "expandable" and block.expandable.id \
                    and user_key_from_element_id(block.expandable.id) == key:
                return block.expandable
        return None

    def texts(self) -> list[str]:
        """Headings and markdown bodies, for quick checks."""
        return [e.body for t, e in self.elements if t in ("heading", "markdown")]

    def all_texts(self) -> list[str]:
        """Every text a student reads: headings, markdown, st.text, captions, alerts, widget labels."""
        out = []
        for kind, e in self.elements:
            for attr in ("body", "label"):
                value = getattr(e, attr, None)
                if isinstance(value, str) and value:
                    out.append(value)
        return out

    def widget(self, kind: str, label: str, contains: bool = False):
        """The last element of this type ("button", "text_input", "radio", ...) with this label (or a
        label containing it). KeyError naming the labels found if there is none."""
        found = [e for e in self.of_type(kind) if (label in e.label if contains else e.label == label)]
        if not found:
            raise KeyError(f"no {kind} {label!r} among {[e.label for e in self.of_type(kind)]}")
        return found[-1]

    def has_widget(self, kind: str, label: str, contains: bool = False) -> bool:
        try:
            self.widget(kind, label, contains)
            return True
        except KeyError:
            return False


def slider_value(slider) -> float:
    """A slider's value in its proto (`value` when the app set one, else `default`)."""
    return (list(slider.value) or list(slider.default) or [slider.min])[0]


def slider_values(slider) -> list[float]:
    """Every position of a slider, from its proto (min, max, step)."""
    n = int(round((slider.max - slider.min) / slider.step))
    return [round(slider.min + i * slider.step, 10) for i in range(n + 1)]


class Session:
    """A browser tab without a browser: BackMsg rerun_script out, ForwardMsgs in.

    The server checks the Origin only if one is sent (none here) and XSRF only for the
    auth cookie, so the subprotocol "streamlit" is all a connection needs. `page` is the
    URL path without slashes ("" for the main page), `query` the query string without "?".
    Hashes of cacheable messages are sent back like the browser's message cache does,
    so the server sends a reference instead of a message the tab already holds.

    `quickack`: Streamlit 1.67 listens on a socket made without proto=IPPROTO_TCP, so
    asyncio never sets TCP_NODELAY on its connections; Nagle then holds every small
    message sent after an unacknowledged one until the client's delayed ACK (40 ms on
    Linux). A browser pays that on every rerun. With quickack (the default) this client
    ACKs at once, so a rerun's time is the server's work, not a TCP timer.
    """

    def __init__(self, port: int, page: str = "", query: str = "", timeout: float = 120.0,
                 browser_cache: bool = True, connect: bool = True, quickack: bool = True, cookie: str = ""):
        self.port, self.page, self.query, self.timeout, self.cookie = port, page, query, timeout, cookie
        self.browser_cache, self.quickack = browser_cache, quickack
        self.page_script_hash = ""
        self.cached_hashes: set[str] = set()
        self.widget_states: dict = {}        # widget id -> the last WidgetState sent (a browser sends them all)
        self.auto_reruns: dict[str, float] = {}   # fragment id -> seconds: the timers of st.fragment(run_every=)
        self.fragment_of: dict[str, str] = {}     # widget id -> its fragment, as last drawn
        self.cached_messages: dict = {}           # hash -> ForwardMsg, to read a ref_hash message (keep_cached)
        self.keep_cached = False                  # resolve ref_hash messages into elements (costs memory)
        self.ws = None
        if connect:
            self.connect()

    def connect(self) -> None:
        import websocket  # websocket-client

        self.ws = websocket.create_connection(f"ws://127.0.0.1:{self.port}/_stcore/stream",
                                              subprotocols=["streamlit"], timeout=self.timeout,
                                              enable_multithread=True, cookie=self.cookie or None)

    def _quickack(self) -> None:
        try:
            self.ws.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 1)
        except (OSError, AttributeError):       # not Linux: no such option
            self.quickack = False

    def close(self) -> None:
        if self.ws is not None:
            try:
                self.ws.close()
            except Exception:
                pass
            self.ws = None

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @staticmethod
    def slider_state(slider, value: float):
        """The WidgetState a browser sends for a slider moved to `value` (an index for a select_slider)."""
        from streamlit.proto.WidgetStates_pb2 import WidgetState

        state = WidgetState(id=slider.id)
        if slider.options:          # a select_slider (1.67): the chosen option's text, by its index
            state.string_array_value.data.extend([slider.options[int(value)]])
        else:
            state.double_array_value.data.extend([float(value)])
        return state

    @staticmethod
    def expander_state(expandable, opened: bool = True):
        """The WidgetState a browser sends when a stateful expander (st.expander(key=...,
        on_change="rerun")) is opened or closed: its id, bool_value."""
        from streamlit.proto.WidgetStates_pb2 import WidgetState

        return WidgetState(id=expandable.id, bool_value=opened)

    @staticmethod
    def text_state(text_input, text: str):
        """The WidgetState a browser sends when a text box (st.text_input / st.text_area) is committed."""
        from streamlit.proto.WidgetStates_pb2 import WidgetState

        return WidgetState(id=text_input.id, string_value=str(text))

    @staticmethod
    def click_state(button):
        """A click on a button (st.button, st.form_submit_button): a trigger, sent once (send_rerun then
        forgets it, as the browser does)."""
        from streamlit.proto.WidgetStates_pb2 import WidgetState

        return WidgetState(id=button.id, trigger_value=True)

    @staticmethod
    def option_state(widget, index: int):
        """A choice by position in st.radio or st.selectbox: Streamlit 1.67 sends the option as shown (its
        formatted text, the proto's `options[index]`), not its index."""
        from streamlit.proto.WidgetStates_pb2 import WidgetState

        return WidgetState(id=widget.id, string_value=widget.options[int(index)])

    def click(self, button, fragment_id: str | None = None) -> "Run":
        """Click a button and wait for the run it causes (inside an st.fragment: the fragment's run,
        unless fragment_id is given)."""
        fragment = self.fragment_of.get(button.id, "") if fragment_id is None else fragment_id
        return self.rerun([self.click_state(button)], fragment)

    def auto_rerun(self, fragment_id: str | None = None) -> "Run":
        """What a browser's timer sends for an st.fragment(run_every=...): a rerun of that fragment
        (the first one the page asked for if not named), marked as automatic."""
        fragment = fragment_id or next(iter(self.auto_reruns))
        start = self.send_rerun((), fragment, is_auto_rerun=True)
        return self.read_run(start)

    def open_expander(self, run: Run, key: str) -> Run:
        """Open the lazy expander with user key `key` as a click on its header does (a rerun with
        its state True); return the run that draws its content (or `run` if it is open already).
        KeyError if `run` drew no such expander."""
        expandable = run.expander(key)
        if expandable is None:
            raise KeyError(f"no expander with key {key!r} on /{self.page}")
        if expandable.expanded:
            return run
        return self.rerun([self.expander_state(expandable, True)])

    def find_slider(self, run: Run, label: str, expander: str | None = None) -> tuple[Run, object]:
        """(run, slider): the slider labelled `label` in `run`, or, if it is not drawn and the page
        has the lazy expander `expander`, in the run after opening it. KeyError if neither."""
        try:
            return run, run.slider(label)
        except KeyError:
            if not expander or run.expander(expander) is None:
                raise
        run = self.open_expander(run, expander)
        return run, run.slider(label)

    def send_rerun(self, widget_states=(), fragment_id: str = "", is_auto_rerun: bool = False) -> float:
        """A rerun request; with `fragment_id` (a widget inside an st.fragment moved) only that
        fragment reruns, as the browser asks for it. Like a browser, it sends the state of every
        widget it has set so far (a group opened once stays open), the new ones replacing old;
        a button's trigger is sent once, then forgotten."""
        from streamlit.proto.BackMsg_pb2 import BackMsg

        msg = BackMsg()
        cs = msg.rerun_script
        cs.query_string = self.query
        cs.fragment_id = fragment_id
        cs.is_auto_rerun = is_auto_rerun
        cs.page_name = self.page
        cs.page_script_hash = self.page_script_hash
        for state in widget_states:
            self.widget_states[state.id] = state
        cs.widget_states.widgets.extend(self.widget_states.values())
        for state in widget_states:
            if state.WhichOneof("value") in ("trigger_value", "string_trigger_value", "json_trigger_value"):
                self.widget_states.pop(state.id, None)
        if self.browser_cache:
            cs.cached_message_hashes.extend(sorted(self.cached_hashes))
        data = msg.SerializeToString()
        start = time.perf_counter()
        self.ws.send_binary(data)
        return start

    def read_run(self, start: float, deadline: float | None = None) -> Run:
        """ForwardMsgs until a script_finished that ends the run (not FINISHED_EARLY_FOR_RERUN)."""
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        run = Run(seconds=0.0)
        deadline = deadline or (start + self.timeout)
        pages = {}                           # page_script_hash -> url path, from the navigation message
        asked = self.page_script_hash        # the page this tab is on ("" before its first run)
        while True:
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                raise TimeoutError(f"no script_finished within {self.timeout:.0f} s on /{self.page}")
            self.ws.settimeout(remaining)
            if self.quickack:
                self._quickack()
            data = self.ws.recv()
            if not isinstance(data, bytes):
                continue
            fm = ForwardMsg()
            fm.ParseFromString(data)
            run.messages += 1
            run.bytes += len(data)
            kind = fm.WhichOneof("type")
            if self.browser_cache and fm.metadata.cacheable and fm.hash:
                self.cached_hashes.add(fm.hash)
                if self.keep_cached:
                    self.cached_messages[fm.hash] = fm
            if kind == "ref_hash" and fm.ref_hash in self.cached_messages:
                fm = self.cached_messages[fm.ref_hash]       # a message this tab holds: read it as the browser does
                kind = fm.WhichOneof("type")
            if kind == "delta" and fm.delta.WhichOneof("type") == "new_element":
                el = fm.delta.new_element
                kind = el.WhichOneof("type")
                inner = getattr(el, kind) if kind else el
                run.elements.append((kind, inner))
                if getattr(inner, "id", ""):
                    if fm.delta.fragment_id:
                        run.fragment_of[inner.id] = fm.delta.fragment_id
                    self.fragment_of[inner.id] = fm.delta.fragment_id
            elif kind == "delta" and fm.delta.WhichOneof("type") == "add_block":
                run.blocks.append(fm.delta.add_block)
            elif kind == "new_session":
                if not fm.metadata.run.fragment_ids:     # a full run: the browser drops its fragment timers
                    self.auto_reruns.clear()
                self.page_script_hash = fm.new_session.page_script_hash
                run.page_script_hash = self.page_script_hash
            elif kind == "navigation" and fm.navigation.page_script_hash:
                # with st.navigation the page that ran is named here (new_session names the main script)
                ran = fm.navigation.page_script_hash
                for app_page in fm.navigation.app_pages:
                    pages[app_page.page_script_hash] = app_page.url_pathname
                if asked and ran != asked and ran in pages:
                    self.page = pages[ran].strip("/")   # st.switch_page: the tab's address is the new page's
                    run.pages_run.append(self.page)
                self.page_script_hash = run.page_script_hash = ran
            elif kind == "auto_rerun":
                self.auto_reruns[fm.auto_rerun.fragment_id] = fm.auto_rerun.interval
            elif kind == "stop_auto_rerun":
                for fragment in fm.stop_auto_rerun.fragment_ids:
                    self.auto_reruns.pop(fragment, None)
            elif kind == "page_not_found":
                run.page_not_found = True
            elif kind == "page_info_changed":
                self.query = fm.page_info_changed.query_string
            elif kind == "script_finished":
                status = ForwardMsg.ScriptFinishedStatus.Name(fm.script_finished)
                run.runs += 1
                if status == "FINISHED_EARLY_FOR_RERUN":
                    continue
                run.status = status
                run.seconds = time.perf_counter() - start
                return run

    def rerun(self, widget_states=(), fragment_id: str = "") -> Run:
        start = self.send_rerun(widget_states, fragment_id)
        run = self.read_run(start)
        run.fragment_id = fragment_id
        return run


# ----------------------------------------------------------------------------------------
# the browser (Debian chromium, never a downloaded one)
# ----------------------------------------------------------------------------------------

def browser_available() -> tuple[bool, str]:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return False, "playwright (python) is not installed"
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        return False, f"{CHROMIUM} is missing (apt-get install chromium; never `playwright install`)"
    return True, ""


def launch_chromium(playwright):
    return playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)


# Added to every browser context (context.add_init_script):
#  - window.__runs counts the script runs this document has seen end (data-test-script-state
#    going from running to notRunning), so a test can wait for the run its action caused; a
#    fast run can end in the same render as it starts (never showing "running"), so the
#    websocket's traffic is counted too (window.__ws: sends, received, last received);
#  - Vega may draw a chart on a <canvas> (Streamlit's default renderer) instead of SVG: keep,
#    per canvas, the strings it fillText()s in its last full frame (a clipped, partial redraw
#    adds to it), so axis labels can be read either way.
PAGE_HOOKS = """
(() => {
  window.__runs = 0;
  window.__doc = Math.random();
  const watch = () => new MutationObserver(records => {
    for (const r of records) {
      if (r.target.getAttribute('data-test-script-state') === 'notRunning' && r.oldValue === 'running') window.__runs++;
    }
  }).observe(document, {subtree: true, attributes: true, attributeOldValue: true,
                         attributeFilter: ['data-test-script-state']});
  watch();
  window.__ws = {sends: [], received: 0, lastRecv: 0};
  const send = WebSocket.prototype.send;
  WebSocket.prototype.send = function (d) {
    window.__ws.sends.push(performance.now());
    if (!this.__counted) {
      this.__counted = true;
      this.addEventListener('message', () => { window.__ws.received++; window.__ws.lastRecv = performance.now(); });
    }
    return send.call(this, d);
  };
  const P = CanvasRenderingContext2D.prototype;
  const fillText = P.fillText, clearRect = P.clearRect, clip = P.clip, restore = P.restore, save = P.save;
  P.save = function (...a) { this.__depth = (this.__depth || 0) + 1; return save.apply(this, a); };
  P.restore = function (...a) {
    this.__depth = Math.max(0, (this.__depth || 0) - 1);
    if (this.__clipDepth && this.__depth < this.__clipDepth) this.__clipDepth = 0;
    return restore.apply(this, a);
  };
  P.clip = function (...a) { if (!this.__clipDepth) this.__clipDepth = this.__depth || 1; return clip.apply(this, a); };
  P.clearRect = function (x, y, w, h) {
    const c = this.canvas;
    if (c && !this.__clipDepth) { c.__texts = []; c.__frames = (c.__frames || 0) + 1; }
    return clearRect.call(this, x, y, w, h);
  };
  P.fillText = function (text, ...a) {
    const c = this.canvas;
    if (c) { (c.__texts = c.__texts || []).push(String(text)); }
    return fillText.call(this, text, ...a);
  };
})();
"""

# For redraw timing (bench), after PAGE_HOOKS: when the DOM last changed.
# The time of the last DOM change a student can see. Changes inside an element's hover toolbar
# (stElementToolbar: fullscreen, and for a chart with on_select its selection buttons) are left
# out: the toolbar is drawn at opacity 0 until pointed at, and Streamlit rebuilds its buttons
# 50-100 ms after every run, after everything visible has settled.
REDRAW_HOOK = """
(() => {
  window.__lastMutation = 0;
  const hidden = (m) => { const e = m.target.nodeType === 1 ? m.target : m.target.parentElement;
                          return e && e.closest && e.closest("[data-testid='stElementToolbar']"); };
  new MutationObserver((list) => { if (list.some(m => !hidden(m))) window.__lastMutation = performance.now(); })
    .observe(document, {subtree: true, childList: true, attributes: true, characterData: true});
})();
"""


def new_context(browser, **kwargs):
    """A browser context (a separate cookie jar: one student) with PAGE_HOOKS installed."""
    kwargs.setdefault("viewport", {"width": 1400, "height": 1000})
    ctx = browser.new_context(**kwargs)
    ctx.add_init_script(PAGE_HOOKS)
    return ctx


def run_marker(page) -> tuple:
    """Where this document's run and message counters stand (see wait_run_end)."""
    return tuple(page.evaluate(
        "() => [window.__doc || 0, window.__runs || 0, window.__ws ? window.__ws.received : 0]"))


def wait_run_end(page, marker: tuple, timeout_ms: float = 30_000, quiet_ms: int = 250) -> None:
    """Wait for a script run that ended after `marker` was taken, then for the app to be idle.

    A run has ended when the document saw the script state go running -> notRunning, or
    (a run too fast to ever show "running") when a message arrived after the marker and the
    app has been idle with no message for quiet_ms. A navigation or reload starts a new
    document, counting from 0.
    """
    doc, runs, received = marker
    ended = f"""() => {{
      if (!window.__ws) return false;
      const same = window.__doc === {doc};
      if (window.__runs > (same ? {runs} : 0)) return true;
      const idle = document.querySelector("{IDLE}") !== null;
      return idle && window.__ws.received > (same ? {received} : 0)
             && performance.now() - window.__ws.lastRecv > {quiet_ms};
    }}"""
    page.wait_for_function(ended, timeout=timeout_ms, polling=50)
    page.wait_for_selector(IDLE, timeout=timeout_ms)


def after_run(page, action, timeout_ms: float = 30_000, expect_run: bool = True) -> None:
    """Do `action()` and wait for the script run it causes to end (see wait_run_end).
    With expect_run=False (the action may rerun nothing), wait 2 s at most for a run."""
    marker = run_marker(page)
    action()
    try:
        wait_run_end(page, marker, timeout_ms if expect_run else 2_000)
    except Exception:
        if expect_run:
            raise
        page.wait_for_selector(IDLE, timeout=timeout_ms)


def pick_option(tab, box, option, tries: int = 4) -> None:
    """Open a selectbox (`box`, a locator) and click `option` (a locator inside its open list), and wait for the run
    it causes; a run landing between the two closes the list, so it is opened again (at most `tries` times)."""
    from playwright.sync_api import TimeoutError as NotYet
    for _ in range(tries):
        box.click()
        try:
            option.wait_for(timeout=3_000)
            after_run(tab, lambda: option.click(timeout=3_000))
            return
        except NotYet:
            tab.keyboard.press("Escape")
    raise AssertionError(f"the list would not stay open for a click on {option}")


def open_group(tab, label: str) -> None:
    """Open the sidebar's expander `label` with a click on its header, unless it is open (a lazy
    group: the click reruns the page, which draws the group's widgets)."""
    group = tab.locator("[data-testid='stSidebar'] [data-testid='stExpander']").filter(has_text=label).first
    group.wait_for(timeout=30_000)
    if group.locator("details").first.get_attribute("open") is None:
        after_run(tab, lambda: group.locator("summary").first.click(), timeout_ms=120_000)


# Each heatmap as {visible, rendered, y, x, texts}: with the SVG renderer the axis label <text>s
# under Vega's aria-labelled axis groups ("Y-axis titled 'token' for a discrete scale ..."); with
# the canvas renderer every string drawn (axes cannot be told apart there: y = x = texts).
CHARTS_JS = f"""() => Array.from(document.querySelectorAll("{CHART}")).map(el => {{
  const out = {{visible: el.offsetParent !== null, rendered: false, y: null, x: null, texts: []}};
  const svg = el.querySelector('svg.marks');
  if (svg) {{
    out.rendered = true;
    // which axis is which by where its labels are drawn (its aria-label is the app's own words, not Vega's
    // "Y-axis ..."): a y axis's labels stand one under another, an x axis's side by side; a single label: left
    // of the plot (y) or under it (x)
    const plot = (svg.querySelector('g.role-scope, g.mark-rect') || svg).getBoundingClientRect();
    for (const g of svg.querySelectorAll('g.role-axis')) {{
      const nodes = Array.from(g.querySelectorAll('.role-axis-label text'));
      const texts = nodes.map(t => t.textContent), boxes = nodes.map(t => t.getBoundingClientRect());
      if (!boxes.length) continue;
      const spread = k => Math.max(...boxes.map(b => b[k])) - Math.min(...boxes.map(b => b[k]));
      const vertical = boxes.length > 1 ? spread('y') > spread('x') : boxes[0].right <= plot.left + 1;
      if (vertical && out.y === null) out.y = texts;
      if (!vertical && out.x === null) out.x = texts;
    }}
    out.texts = Array.from(svg.querySelectorAll('text')).map(t => t.textContent);
  }} else {{
    const canvases = Array.from(el.querySelectorAll('canvas'));
    out.texts = canvases.flatMap(c => c.__texts || []);
    out.rendered = canvases.some(c => (c.__frames || 0) > 0);
    if (out.texts.length) {{ out.y = out.texts; out.x = out.texts; }}
  }}
  return out;
}})"""


def wait_idle(page, timeout_ms: float = 30_000, settle_ms: float = 150) -> None:
    """The script is not running (after it has had a moment to start), then a short settle."""
    page.wait_for_timeout(settle_ms)
    page.wait_for_selector(IDLE, timeout=timeout_ms)


def charts(page) -> list[dict]:
    """The heatmaps on the page, in order: {visible, rendered, y, x, texts} (see CHARTS_JS)."""
    return page.evaluate(CHARTS_JS)


def wait_for_charts(page, predicate=lambda cs: bool(cs) and all(c["rendered"] for c in cs if c["visible"]),
                    timeout_ms: float = 15_000, poll_ms: float = 100) -> list[dict]:
    """Poll charts(page) until predicate(charts) holds (default: every visible one drawn); return the last."""
    deadline = time.perf_counter() + timeout_ms / 1000
    found = charts(page)
    while not predicate(found) and time.perf_counter() < deadline:
        page.wait_for_timeout(poll_ms)
        found = charts(page)
    return found


# ----------------------------------------------------------------------------------------
# small statistics
# ----------------------------------------------------------------------------------------

def percentile(values, q: float) -> float:
    values = sorted(values)
    if not values:
        return float("nan")
    k = (len(values) - 1) * q / 100
    lo, hi = int(k), min(int(k) + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (k - lo)


def median(values) -> float:
    return statistics.median(values) if values else float("nan")


def table(rows: list[list], header: list[str]) -> str:
    cells = [[str(c) for c in header]] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = ["  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))) for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


@dataclass
class Table:
    """One bench result: a title, a header, rows and notes. A bench's main() prints it as text;
    bench/report.py writes the same object as Markdown into docs/performance.md."""
    title: str
    header: list[str]
    rows: list[list]
    notes: list[str] = field(default_factory=list)

    def text(self) -> str:
        return "\n".join([self.title, table(self.rows, self.header), *self.notes])

    def markdown(self) -> str:
        cell = lambda c: str(c).replace("|", "\\|")
        lines = ["| " + " | ".join(cell(h) for h in self.header) + " |",
                 "|" + "|".join("---" for _ in self.header) + "|"]
        lines += ["| " + " | ".join(cell(c) for c in r) + " |" for r in self.rows]
        return "\n".join([self.title, "", *lines, *(["", *self.notes] if self.notes else [])])
