"""The small LM's shipped weights (the run trained on the copy task from seed 0), as float64, loaded once."""
from __future__ import annotations

import functools

import numpy as np

from ...training.lm import shipped


@functools.lru_cache(maxsize=1)
def lm_params() -> dict[str, np.ndarray]:
    return shipped.load("copy").params
