"""Process-wide caches: one Trace per Config, shared read-only by every session."""
from __future__ import annotations

import functools
import threading
from collections import OrderedDict

from attention_core import Config, Trace, run_forward


@functools.lru_cache(maxsize=64)
def get_trace(config: Config) -> Trace:
    """run_forward, once per distinct Config (a frozen, hashable dataclass); Step values are read-only."""
    return run_forward(config)


_BESIDE = threading.Lock()


def beside(trace: Trace, name: str, key, make, size: int = 16):
    """make(), once per (name, key) while `trace` lives: what a view builds from a Trace cached per process and its
    own hashable controls (a seeded draw and its bars, a table of the tokens), kept in the trace's facts, so every
    session's rerun that shows the same trace with the same controls reuses it, and it goes when the trace goes. At
    most `size` keys a name (the oldest dropped). The value is shared: read-only, as the trace's Steps are."""
    with _BESIDE:
        memo = trace.facts.setdefault(f"beside:{name}", OrderedDict())
        if key in memo:
            memo.move_to_end(key)
            return memo[key]
    value = make()                                  # outside the lock: an error is raised, nothing is kept
    with _BESIDE:
        memo[key] = value
        while len(memo) > size:
            memo.popitem(last=False)
    return value


@functools.lru_cache(maxsize=64)
def get_pitfall(key: str, config: Config):
    """A pitfall's correct and wrong results for a Config, computed once."""
    from attention_core.labs.pitfalls import PITFALLS_BY_KEY
    return PITFALLS_BY_KEY[key].compute(config)


@functools.lru_cache(maxsize=128)
def chart_image(spec_json: str, fmt: str) -> bytes:
    """A Vega-Lite spec rendered to PNG or SVG on the server (vl-convert), once per spec."""
    import vl_convert as vlc
    if fmt == "svg":
        return vlc.vegalite_to_svg(spec_json).encode("utf-8")
    return vlc.vegalite_to_png(spec_json, scale=2)


@functools.lru_cache(maxsize=256)
def _neighbours(embedding: str, glove_vocab: int, vectors, word: str, k: int) -> tuple:
    from types import SimpleNamespace

    from attention_core import nearest
    from attention_core.math.embeddings import vocabulary_for
    vocab = vocabulary_for(SimpleNamespace(embedding=embedding, glove_vocab=glove_vocab, vectors=vectors))
    return tuple(nearest(vocab, word, k))


def get_neighbours(config: Config, word: str, k: int = 8) -> list[tuple[str, float]]:
    """attention_core.nearest over the Config's vocabulary, once per (vocabulary, word, k): a matrix-
    vector product over up to 20,000 rows that no other setting changes."""
    return list(_neighbours(config.embedding, config.glove_vocab, config.vectors, word, k))


# ---- downloads: built when a learner clicks (st.download_button(data=callable)), once per Config ----

@functools.lru_cache(maxsize=16)
def export_npz(config: Config) -> bytes:
    from attention_core.labs.export import npz_bytes
    return npz_bytes(get_trace(config))


@functools.lru_cache(maxsize=16)
def export_csv_zip(config: Config) -> bytes:
    from attention_core.labs.export import csv_zip
    return csv_zip(get_trace(config))


@functools.lru_cache(maxsize=64)
def export_csv(config: Config, key: str) -> str:
    from attention_core.labs.export import step_csv
    trace = get_trace(config)
    return step_csv(trace[key], trace)


@functools.lru_cache(maxsize=16)
def export_script(config: Config) -> str:
    from attention_core.labs.export import python_script
    return python_script(config)
