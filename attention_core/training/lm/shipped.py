"""The shipped runs: the small model trained from seed 0 at the default settings, so the pages open instantly.

    data/induction_lm.npz                 the trained weights (float32, as trained; only the parameters)
    data/induction_lm_start.npz           the same run's step-0 weights (the "before")
    data/induction_lm_history.npz         its history (step, loss, copy_loss, prev, induction; with the induction
                                          lesson's snapshot, every head's pattern and the K-composition at each
                                          logged step: patterns as kept, train.keep_patterns) and settings
    data/induction_lm_fixed.npz           the fixed-offset run's trained weights (same seed, same start)
    data/induction_lm_fixed_history.npz   its history

load() reads them with numpy only (no torch) and returns float64 parameters. write_shipped(snapshot) retrains both
runs (python scripts/make_shipped_data.py passes lessons.induction.snapshot); tests/test_lm_training.py retrains
the first and compares.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

import numpy as np

from ...math.limits import ConfigError
from .train import LOG_EVERY, LR, STEPS, THREADS, Result, kept, train

DATA = Path(__file__).resolve().parents[3] / "data"
RUNS = ("copy", "fixed_offset")
SEED = 0
FILES = {"copy": ("induction_lm.npz", "induction_lm_history.npz"),
         "fixed_offset": ("induction_lm_fixed.npz", "induction_lm_fixed_history.npz")}
START_FILE = "induction_lm_start.npz"
HISTORY_KEYS = ("step", "loss", "copy_loss", "prev", "induction")
SNAPSHOT_KEYS = ("patterns", "kcomp")   # present when the run was trained with the lesson's snapshot


class Run(NamedTuple):
    params: dict[str, np.ndarray]       # trained, float64
    start: dict[str, np.ndarray]        # step 0, float64
    history: dict[str, np.ndarray]      # step (m,), loss (m,), copy_loss (m,), prev (m, L, H), induction (m, L, H)
    settings: dict                      # seed, steps, lr, log_every, threads, fixed_offset, torch, cpu


def path(name: str) -> Path:
    return DATA / name


@lru_cache(maxsize=None)
def _read(name: str) -> dict[str, np.ndarray]:
    with np.load(path(name)) as f:
        return {k: f[k] for k in f.files}


def load(run: str = "copy") -> Run:
    """The shipped run "copy" (the repeat at a random offset) or "fixed_offset": float64 copies, no torch."""
    if run not in RUNS:
        raise ConfigError(f"run must be one of {RUNS}, not {run!r}.")
    weights, hist = FILES[run]
    as64 = lambda d: {k: v.astype(np.float64) for k, v in d.items()}
    raw = _read(hist)
    history = {k: raw[k].copy() for k in HISTORY_KEYS + SNAPSHOT_KEYS if k in raw}
    settings = {k[len("setting."):]: raw[k].item() for k in raw if k.startswith("setting.")}
    return Run(as64(_read(weights)), as64(_read(START_FILE)), history, settings)


def settings(fixed_offset: bool = False) -> dict:
    """The settings of a shipped run (what the retraining test passes to train)."""
    return {"seed": SEED, "steps": STEPS, "lr": LR, "log_every": LOG_EVERY, "threads": THREADS,
            "fixed_offset": fixed_offset}


def cpu() -> str:
    """The processor's model name (bit-reproducibility holds on the same torch build and the same CPU)."""
    try:
        with open("/proc/cpuinfo") as f:
            return next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "unknown")
    except OSError:
        return "unknown"


def write_shipped(snapshot=None) -> dict[str, Result]:
    """Train both runs at the shipped settings (each logged step's snapshot(params) kept in the history) and write
    the five files; returns the results (their histories as written)."""
    import torch

    results = {}
    for run in RUNS:
        s = settings(run == "fixed_offset")
        result = train(**s, snapshot=snapshot)
        if result.status != "done":
            raise RuntimeError(f"The {run} run did not finish: {result.message}")
        weights, hist = FILES[run]
        np.savez(path(weights), **result.params)
        meta = {f"setting.{k}": np.array(v) for k, v in {**s, "torch": torch.__version__, "cpu": cpu()}.items()}
        result.history = kept(result.history)
        np.savez_compressed(path(hist), **result.history, **meta)
        if run == "copy":
            np.savez(path(START_FILE), **result.start)
        results[run] = result
    _read.cache_clear()
    return results
