import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
os.environ.setdefault("STREAMLIT_BROWSER_GATHER_USAGE_STATS", "false")


@pytest.fixture(scope="session")
def redis_url():
    """The URL of a real redis-server started for this test session (tests/redis_server.py), shared by every
    test that asks for it; skips without redis-server, fails instead when ATTENTION_EXPLORER_REQUIRE_REDIS=1."""
    from tests.redis_server import RedisServer, require
    require()
    with RedisServer() as server:
        yield server.url
