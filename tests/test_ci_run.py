"""CI (.ci/run) fails, not skips, where a newcomer's machine lacks Debian's chromium or redis-server: it asks for
both, and the tests' checks fail under that request (and skip without it, for a contributor without them)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests import redis_server
from tests.e2e import conftest as e2e

CI = (Path(__file__).resolve().parents[1] / ".ci" / "run").read_text(encoding="utf-8")


def test_ci_stops_at_the_first_failing_step_and_requires_the_browser_and_redis():
    lines = [line.split("#")[0].strip() for line in CI.splitlines()]
    test_command = next(i for i, line in enumerate(lines) if re.match(r"bash scripts/test\.sh\b", line))
    assert "set -euo pipefail" in lines[:test_command]
    for variable in ("ATTENTION_EXPLORER_REQUIRE_BROWSER", "ATTENTION_EXPLORER_REQUIRE_REDIS"):
        assert f"export {variable}=1" in lines[:test_command], variable


@pytest.mark.parametrize("required, outcome", [(True, pytest.fail.Exception), (False, pytest.skip.Exception)])
def test_a_missing_chromium_fails_when_required(monkeypatch, required, outcome):
    monkeypatch.setattr(e2e, "browser_available", lambda: (False, "/usr/bin/chromium is missing"))
    monkeypatch.setattr(e2e, "REQUIRE_BROWSER", required)
    with pytest.raises(outcome, match="chromium is missing"):
        e2e.require_browser()


@pytest.mark.parametrize("required, outcome", [(True, pytest.fail.Exception), (False, pytest.skip.Exception)])
def test_a_missing_redis_server_fails_when_required(monkeypatch, required, outcome):
    monkeypatch.setattr(redis_server.shutil, "which", lambda name: None)
    monkeypatch.setattr(redis_server, "REQUIRE_REDIS", required)
    with pytest.raises(outcome, match="redis-server is not installed"):
        redis_server.require()
