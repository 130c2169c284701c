"""A real redis-server for the tests: Debian's package, started on a free 127.0.0.1 port in a temp dir,
nothing written to disk (no RDB snapshots, no append-only file), stopped at the end.

    with RedisServer() as server:          # or the session fixture `redis_url` (tests/conftest.py)
        RedisStore(server.url)

Without redis-server on the PATH, `available()` says why; the fixture then skips, or fails when
ATTENTION_EXPLORER_REQUIRE_REDIS=1 (set by .ci/run). scripts/test.sh installs the package.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from bench._common import free_port

REQUIRE_REDIS = os.environ.get("ATTENTION_EXPLORER_REQUIRE_REDIS") == "1"


def available() -> tuple[bool, str]:
    if shutil.which("redis-server"):
        return True, ""
    return False, "redis-server is not installed (Debian: apt-get install redis-server; scripts/test.sh does it)"


def require() -> None:
    """Skip the test without redis-server; fail it instead when ATTENTION_EXPLORER_REQUIRE_REDIS=1 (CI)."""
    import pytest
    ok, why = available()
    if not ok:
        if REQUIRE_REDIS:
            pytest.fail(f"ATTENTION_EXPLORER_REQUIRE_REDIS=1 but {why}", pytrace=False)
        pytest.skip(why)


class RedisServer:
    def __init__(self, port: int | None = None, args: tuple[str, ...] = ()):
        self.port, self.args, self.chosen = port or free_port(), tuple(args), port is None
        self.dir = Path(tempfile.gettempdir())
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout: float = 10.0) -> "RedisServer":
        for attempt in range(3):
            try:
                return self._start(timeout)
            except RuntimeError:              # it exited: the port was taken meanwhile (another xdist worker?)
                if not self.chosen or attempt == 2:
                    raise
                self.port = free_port()
        return self

    def _start(self, timeout: float) -> "RedisServer":
        self.dir = Path(tempfile.mkdtemp(prefix="redis_test_"))
        cmd = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
               "--dir", str(self.dir), "--logfile", str(self.dir / "redis.log"), "--daemonize", "no", *self.args]
        self.proc = subprocess.Popen(cmd, cwd=self.dir, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        try:
            self.wait_ping(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def wait_ping(self, timeout: float) -> None:
        import redis
        from redis.backoff import NoBackoff
        from redis.retry import Retry
        client = redis.Redis(host="127.0.0.1", port=self.port, socket_connect_timeout=0.5, socket_timeout=0.5,
                             retry=Retry(NoBackoff(), 0))     # redis-py's default retries 10 times with backoff
        deadline = time.monotonic() + timeout
        try:
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"redis-server exited with {self.proc.returncode}:\n{self.log_tail()}")
                if "Ready to accept connections" not in self.log_tail(100_000):
                    time.sleep(0.02)          # not listening yet (a PING now might reach another server)
                    continue
                try:
                    if client.ping():
                        return
                except redis.exceptions.AuthenticationError:      # up, and wants a password (--requirepass)
                    return
                except redis.exceptions.RedisError:
                    time.sleep(0.02)
            raise TimeoutError(f"redis-server did not answer PING in {timeout:.0f} s:\n{self.log_tail()}")
        finally:
            client.close()

    def log_tail(self, chars: int = 2000) -> str:
        try:
            return (self.dir / "redis.log").read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def stop(self, timeout: float = 10.0) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)      # its own session: ends only what it started
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout)
        if self.dir.name.startswith("redis_test_"):
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> "RedisServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
