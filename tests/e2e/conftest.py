"""Browser tests: the real app in Debian's chromium, servers started by the tests themselves.

Without chromium or playwright these tests skip, unless ATTENTION_EXPLORER_REQUIRE_BROWSER=1
(set by .ci/run): then they fail. Never `playwright install` (no downloads): the browser is
/usr/bin/chromium.
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench._common import (Page, Server, all_pages, browser_available, launch_chromium,  # noqa: E402
                           new_context, sections)

REQUIRE_BROWSER = os.environ.get("ATTENTION_EXPLORER_REQUIRE_BROWSER") == "1"


def open_page(tab, server, path: str, query: dict | None = None) -> None:
    """Go to a page (with settings in its URL) and wait for its run to end."""
    from urllib.parse import urlencode

    from bench._common import after_run
    url = f"{server.url}/{path}" + (f"?{urlencode(query)}" if query else "")
    after_run(tab, lambda: tab.goto(url, wait_until="domcontentloaded"), timeout_ms=60_000)


def click_table_cell(tab, scope, toggle, x_fraction: float = 0.5):
    """Turn a step's "Numbers as a table" on, click a cell of its first data row; the explanation
    ("… was made") is returned as a locator within `scope`."""
    from bench._common import after_run
    toggle.scroll_into_view_if_needed()
    after_run(tab, lambda: toggle.click())
    grid = scope.locator("[data-testid='stDataFrame']").first
    grid.scroll_into_view_if_needed()
    box = grid.bounding_box()
    after_run(tab, lambda: tab.mouse.click(box["x"] + box["width"] * x_fraction, box["y"] + 60), timeout_ms=20_000)
    return scope.get_by_text("was made", exact=False).first


def require_browser() -> None:
    ok, why = browser_available()
    if ok:
        return
    if REQUIRE_BROWSER:
        pytest.fail(f"ATTENTION_EXPLORER_REQUIRE_BROWSER=1 but {why}", pytrace=False)
    pytest.skip(why)


class DeepLinks:
    """Each page opened by URL as the very first request on its own fresh server.

    Pages are loaded `batch` at a time, each in its own context on its own server, so the
    servers' first runs (imports, first traces) overlap; the next batch's servers boot
    meanwhile. What each page showed is kept for its test to check.
    """

    def __init__(self, browser, pages: list[Page], batch: int = 3):
        self.browser, self.pages, self.batch = browser, list(pages), batch
        self.results: dict[str, dict] = {}
        self.servers: dict[str, Server] = {}

    def _boot(self, pages) -> None:
        for page in pages:
            if page.file not in self.servers and page.file not in self.results:
                self.servers[page.file] = Server("app.py").start()

    def result(self, page: Page) -> dict:
        if page.file not in self.results:
            todo = [p for p in self.pages if p.file not in self.results and p != page]
            group = [page] + todo[: self.batch - 1]
            self._boot(group)
            self._load(group)
        return self.results[page.file]

    def _load(self, group: list[Page]) -> None:
        from bench._common import EXCEPTION, charts, run_marker, wait_for_charts, wait_run_end

        tabs = []
        for page in group:
            server = self.servers.pop(page.file)
            server.wait_healthy(90)
            ctx = new_context(self.browser)
            tab = ctx.new_page()
            errors: list[str] = []
            tab.on("pageerror", lambda err, errors=errors: errors.append(str(err)))
            marker = run_marker(tab)
            tab.goto(server.url + page.url_path, wait_until="commit")
            tabs.append((page, server, ctx, tab, errors, marker))
        rest = [p for p in self.pages if p.file not in self.results and p not in group]
        self._boot(rest[: self.batch])                  # the next batch boots while this one renders
        for page, server, ctx, tab, errors, marker in tabs:
            result: dict = {"server_url": server.url}
            try:
                wait_run_end(tab, marker, timeout_ms=90_000)
                links = tab.locator("[data-testid='stTopNavSection']")      # st.navigation's top bar
                expected_links = len(sections())
                deadline = time.perf_counter() + 10
                while links.count() < expected_links and time.perf_counter() < deadline:
                    tab.wait_for_timeout(100)          # the nav and charts are lazily loaded components
                want = self.min_heatmaps(page) or 0
                found = wait_for_charts(tab, lambda cs: len(cs) >= want and all(
                    c["rendered"] for c in cs if c["visible"])) if want else charts(tab)
                result.update(
                    h1=tab.locator("h1").all_inner_texts(),
                    links=links.count(),
                    expected_links=expected_links,
                    bold=[t.strip() for t in links.all_inner_texts()],
                    sections=[name for name, _ in sections()],
                    builtin_nav=tab.locator("[data-testid='stSidebarNav']").count(),
                    charts=found,
                    exceptions=tab.locator(EXCEPTION).all_inner_texts(),
                    url=tab.url,
                    js_errors=list(errors),
                )
            except Exception as err:                     # reported by the page's test
                result["error"] = f"{type(err).__name__}: {err}"
            finally:
                ctx.close()
                server.terminate()
                server.stop()
                result["log"] = server.log_tail(20_000)
                self.results[page.file] = result

    min_heatmaps = staticmethod(lambda page: None)       # set by the test module

    def close(self) -> None:
        for server in self.servers.values():
            server.stop()
        self.servers.clear()


@pytest.fixture(scope="session", autouse=True)
def real_model_dir(tmp_path_factory):
    """Every server the browser tests start shows the "A real model" pages on a tiny Llama-style checkpoint (RoPE,
    2 query heads per KV head) laid out here in about a second (tests/real_checkpoints.py, numpy and safetensors):
    ATTENTION_EXPLORER_REAL_MODEL_DIR names it. (A listed model is looked up in the cache only, never on the network,
    unless a download button is pressed: the walk never presses one.)"""
    from tests.real_checkpoints import numpy_checkpoint

    if os.environ.get("ATTENTION_EXPLORER_REAL_MODEL_DIR"):
        yield os.environ["ATTENTION_EXPLORER_REAL_MODEL_DIR"]
        return
    try:
        import safetensors  # noqa: F401
        import tokenizers  # noqa: F401
    except ImportError:                      # the pages then say there is no model (tests/test_real_pages.py: the rest)
        yield None
        return
    folder = numpy_checkpoint(tmp_path_factory.mktemp("real") / "tiny-llama", "llama")
    os.environ["ATTENTION_EXPLORER_REAL_MODEL_DIR"] = str(folder)
    yield str(folder)


@pytest.fixture(scope="session")
def playwright_session():
    require_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        yield pw


@pytest.fixture(scope="session")
def chromium(playwright_session):
    browser = launch_chromium(playwright_session)
    yield browser
    browser.close()


@pytest.fixture(scope="session")
def deep_links(chromium):
    pool = DeepLinks(chromium, all_pages())
    yield pool
    pool.close()


@pytest.fixture(scope="session")
def app_server():
    """One server shared by the interaction tests (not the deep-link ones)."""
    require_browser()
    server = Server("app.py").start()
    try:
        server.wait_healthy(90)
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def own_server():
    """A server of the test module's own, started with the module and stopped after it (a module whose
    sessions must not meet the shared server's: the share page's, the RoPE page's, the handout's)."""
    require_browser()
    server = Server("app.py", port=None).start()
    try:
        server.wait_healthy(90)
        yield server
    finally:
        server.stop()


LAPTOP = {"width": 1366, "height": 768}


@pytest.fixture
def laptop(chromium):
    """A new browser context at a laptop's 1366 × 768 (or the viewport given), with the page hooks; closed after."""
    contexts = []

    def make(viewport=LAPTOP):
        ctx = new_context(chromium, viewport=viewport)
        contexts.append(ctx)
        return ctx.new_page()

    yield make
    for ctx in contexts:
        ctx.close()


@pytest.fixture
def student(chromium):
    """A new browser context (its own cookies and session) with the page hooks; closed after."""
    contexts = []

    def make():
        ctx = new_context(chromium)
        contexts.append(ctx)
        return ctx.new_page()

    yield make
    for ctx in contexts:
        ctx.close()


# --- a class's app processes, shared by the room's browser tests ------------------------------------------------

from classroom.store import REDIS_URL_VARIABLE as ROOM_REDIS_URL  # noqa: E402


def warm(servers, views) -> None:
    """Each server's first runs of these (page, query) views, in parallel (imports and traces: a cold process's
    seconds are the cold start's, bench/cold_start.py, not the room's); a view already run costs one rerun."""
    import threading
    from bench._common import Session

    def run(server):
        for page, query in views:
            with Session(server.port, page=page, query=query, timeout=180) as s:
                s.rerun()
    threads = [threading.Thread(target=run, args=(s,)) for s in servers]
    for t in threads:
        t.start()
    for t in threads:
        t.join(240)


@pytest.fixture(scope="session")
def room_processes(request):
    """The room tests' app processes, booted at once (their boots overlap) and shared by their modules (each room
    has its own code, each student a browser context of their own): 'memory', one process with the in-memory
    store; 'redis', two sharing the session's redis-server, when there is one. A module warms the views it needs
    (`warm`)."""
    require_browser()
    from tests.redis_server import available
    booted = {"memory": [Server("app.py", port=None, env={ROOM_REDIS_URL: None}).start()]}
    if available()[0]:
        url = request.getfixturevalue("redis_url")
        booted["redis"] = [Server("app.py", port=None, env={ROOM_REDIS_URL: url}).start() for _ in range(2)]
    try:
        every = [s for group in booted.values() for s in group]
        for s in every:
            s.wait_healthy(120)
        warm(every, [("room", "")])
        yield booted
    finally:
        for group in booted.values():
            for s in group:
                s.stop()


@pytest.fixture(params=["memory", "redis"], ids=["one-process-memory", "two-processes-redis"])
def room_servers(request, room_processes):
    """(A: the teacher's server, B: a student's): one process with its memory store, or two sharing Redis."""
    if request.param not in room_processes:
        request.getfixturevalue("redis_url")        # skips without redis-server (fails when it is required)
    group = room_processes[request.param]
    return group[0], group[-1]
