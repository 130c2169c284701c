"""Where a training run's loss sits on its plateau and where it drops, found from the run's own history.

The copy loss first falls to about ln 31 (the model learns that every token is equally likely), then sits there,
a plateau, while nothing it can use has formed; then, when the previous-token head and the induction heads form
together, it drops fast, and afterwards keeps improving slowly. From the curve L(step) recorded every few steps,
smoothed by a running median of 3 records (one batch's loss is noisy):

    fall rate  r_k = (L_k − L_{k+1}) / (step_{k+1} − step_k)            nats per step, between two records
    drop       the records around the fastest fall, k* = argmax r_k, extended both ways while r_k ≥ r_{k*} / 4
    plateau    from the first record within 10% of (high − low) of its level `high` (the median before the drop)
               to the drop's start

No drop (the curve never falls by min_drop nats below its start's level): `found` is False. A run that stops while
the loss still falls fast (its last record in the drop) has `ended` False: its drop's last step is the run's, not
where the drop ends.

What the heads look like at each of those records: `snapshot(params)`, which training calls at every logged step
(train.train(snapshot=...)), keeps every head's pattern on the page's repeated sequence and the K-composition table
(composition.singles_out) of that moment, so a run can be replayed step by step. `at_step` finds the record a
step slider points at, `marks` says where a record stands (the plateau, the drop, after it).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...training.lm.model import as_float64, lm_trace, token_labels
from .composition import singles_out
from .head_scores import patterns
from .sequence import repeated_ids, token_names

SNAPSHOT = ("patterns", "kcomp")       # the history's keys a snapshot adds: (layer, head, n, n), (piece, head)


@dataclass(frozen=True)
class Phases:
    found: bool
    plateau: tuple[int, int]          # (first step, last step) on the plateau
    drop: tuple[int, int]             # (first step, last step) of the drop
    high: float                       # the plateau's level (nats)
    low: float                        # the level at the end of the run (nats)
    ended: bool = True                # the drop ends before the run's last step (False: the run stops mid-drop, its
                                      # last step the drop's last record, the loss still falling fast)


def smooth(values: np.ndarray, window: int = 3) -> np.ndarray:
    """The running median over `window` records centred on each (shorter at the ends)."""
    half = window // 2
    return np.array([np.median(values[max(0, k - half): k + half + 1]) for k in range(len(values))])


def phases(steps, loss, min_drop: float = 0.5, share: float = 0.25) -> Phases:
    """The plateau and the drop of a loss curve recorded at `steps`."""
    steps, loss = np.asarray(steps), np.asarray(loss, dtype=np.float64)
    last = int(steps[-1])
    none = lambda high, low: Phases(False, (int(steps[0]), last), (last, last), high, low)
    if len(steps) < 4 or not np.all(np.isfinite(loss)):
        return none(float(loss[0]), float(loss[-1]))
    s = smooth(loss)
    rate = -np.diff(s) / np.diff(steps)                                        # (m − 1,)
    k = int(np.argmax(rate))
    left, right = k, k
    while left > 0 and rate[left - 1] >= rate[k] * share:
        left -= 1
    while right < len(rate) - 1 and rate[right + 1] >= rate[k] * share:
        right += 1
    high = float(np.median(s[1: left + 1])) if left >= 1 else float(s[0])
    low = float(s[-1])
    if rate[k] <= 0 or high - s[right + 1] < min_drop:
        return none(high, low)
    first = int(np.argmax(s <= high + 0.1 * (high - low)))
    return Phases(True, (int(steps[min(first, left)]), int(steps[left])), (int(steps[left]), int(steps[right + 1])),
                  high, low, right + 1 < len(steps) - 1)


def snapshot(params: dict) -> dict[str, np.ndarray]:
    """Every head's pattern A_h on the shown sequence (float32: what a run keeps of it) and the K-composition table,
    read from the model's own float64 forward pass with these weights."""
    p = as_float64(params)
    ids = repeated_ids()
    trace = lm_trace(p, ids, token_labels([]), tokens=token_names(ids))
    return {"patterns": patterns(trace).astype(np.float32), "kcomp": singles_out(trace, p)}


def at_step(steps, step) -> int:
    """The index of the record a step points at: the last logged step at or before it (the first if none is)."""
    steps = np.asarray(steps)
    k = int(np.searchsorted(steps, int(step), side="right")) - 1
    return max(k, 0)


def marks(ph: Phases, step: int) -> str:
    """Where a logged step stands in the run: on the plateau, the last step before the drop, in the drop, after it."""
    if not ph.found:
        return "no drop yet"
    if step == ph.drop[0]:
        return "the last step before the drop"
    if step < ph.plateau[0]:
        return "before the plateau"
    if step < ph.drop[0]:
        return "plateau"
    if step < ph.drop[1]:
        return "in the drop"
    if step == ph.drop[1]:
        return "the drop's end" if ph.ended else "the run's last step, still in the drop"
    return "after the drop"
