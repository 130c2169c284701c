"""Where a training run's loss sits on its plateau and where it drops, found from the run's own history.

The copy task's loss first falls quickly to about ln 31 (the model learns that every token is equally likely),
then sits there, a plateau, while nothing it can use has formed; then, when the previous-token head and the
induction head form together, it drops to a lower level. From a loss curve L(step), smoothed by a running
median over `window` records (a batch's loss is noisy):

    high  = the median of the smoothed curve over its first quarter      (the plateau's level)
    low   = the minimum of the smoothed curve over its last tenth         (where the run ends)
    drop  = from the first step below high − 10% (high − low) to the first step below low + 10% (high − low)
    plateau = from the first step at or below high + 10% (high − low) to the drop's start

No drop (high − low < min_drop nats): the run never left the plateau, and `found` is False.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Phases:
    found: bool
    plateau: tuple[int, int]          # (first step, last step) on the plateau
    drop: tuple[int, int]             # (first step, last step) of the drop
    high: float                       # the plateau's level (nats)
    low: float                        # the level after the drop (nats)


def smooth(values: np.ndarray, window: int) -> np.ndarray:
    """The running median over `window` records centred on each (shorter at the ends)."""
    half = window // 2
    return np.array([np.median(values[max(0, k - half): k + half + 1]) for k in range(len(values))])


def phases(steps, loss, window: int = 5, min_drop: float = 0.2) -> Phases:
    """The plateau and the drop of a loss curve recorded at `steps`."""
    steps, loss = np.asarray(steps), np.asarray(loss, dtype=np.float64)
    if len(steps) < 4 or not np.all(np.isfinite(loss)):
        return Phases(False, (int(steps[0]), int(steps[-1])), (int(steps[-1]), int(steps[-1])),
                      float(loss[0]), float(loss[-1]))
    s = smooth(loss, window)
    high = float(np.median(s[: max(1, len(s) // 4)]))
    low = float(s[-max(1, len(s) // 10):].min())
    gap = high - low
    if gap < min_drop:
        return Phases(False, (int(steps[0]), int(steps[-1])), (int(steps[-1]), int(steps[-1])), high, low)
    first = int(np.argmax(s <= high + 0.1 * gap))
    start = int(np.argmax(s < high - 0.1 * gap))
    end = start + int(np.argmax(s[start:] < low + 0.1 * gap))
    return Phases(True, (int(steps[first]), int(steps[max(first, start - 1)])), (int(steps[start]), int(steps[end])),
                  high, low)
