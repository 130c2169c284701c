"""The small LM's shipped weights, as float64 (loaded once per process).

PROVISIONAL: read straight from data/induction_lm.npz until the training code's loader of the shipped weights
lands; this is the one place that changes then.
"""
from __future__ import annotations

import functools

import numpy as np

from ...math.data import DATA_DIR
from ...training.lm.model import as_float64


@functools.lru_cache(maxsize=1)
def lm_params() -> dict[str, np.ndarray]:
    with np.load(DATA_DIR / "induction_lm.npz") as data:
        return as_float64(dict(data))
