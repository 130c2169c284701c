"""Process-wide caches: one Trace per Config, shared read-only by every session."""
from __future__ import annotations

import functools

from attention_core import Config, Trace, run_forward


@functools.lru_cache(maxsize=64)
def get_trace(config: Config) -> Trace:
    """run_forward, once per distinct Config (a frozen, hashable dataclass); Step values are read-only."""
    return run_forward(config)
