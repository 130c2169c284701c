"""Which store a process keeps its rooms in: Redis if ATTENTION_EXPLORER_REDIS_URL is set (several replicas
share it), else the process's one MemoryStore (every session of the process shares it). Above both stores, so
neither imports the other.

    >>> store_from_env({}) is store_from_env({REDIS_URL_VARIABLE: "  "})     # unset or blank: the one memory store
    True
"""
from __future__ import annotations

import os

from .redis_store import redis_store
from .store import REDIS_URL_VARIABLE, MemoryStore, Store

_MEMORY = MemoryStore()


def store_from_env(environ=os.environ) -> Store:
    """The process's store: Redis if ATTENTION_EXPLORER_REDIS_URL is set, else the one MemoryStore."""
    url = environ.get(REDIS_URL_VARIABLE, "").strip()
    if not url:
        return _MEMORY
    return redis_store(url)
