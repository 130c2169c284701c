"""A real model's Trace keeps its numbers in the checkpoint's float32.

forward/trace.py's Step stores a float64 copy of every value (the toy pages compute in float64, and a copy is what
makes a Step read-only). A real checkpoint computes in float32, so that copy adds nothing but time and memory: for
SmolLM2-135M's 30 layers, a 32-token Trace spent a quarter of its forward pass copying (61 of 237 ms) and held
twice the bytes. `RealTrace.add` keeps a float32 value as it is (made read-only, not copied: every array it is given
is a fresh result or a view of the read-only memory-mapped weights); anything else becomes float64 as usual.
The float64 copy of a float32 number is the same number, so what a page or an explainer reads is unchanged.

Its token labels are made once (Trace.token_labels counts every token in the tuple, n² steps on every chart axis
of every rerun: 24 axes of a 12-head step box at 128 tokens are ~400,000 comparisons a rerun).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from ...forward.trace import Step, Trace


@dataclass(frozen=True, eq=False)
class Step32(Step):
    def __post_init__(self):
        value = np.asarray(self.value)
        if value.dtype != np.float32:
            Step.__post_init__(self)
            return
        if value.flags.writeable:
            value = value.view()                  # the caller's array stays writeable; the Step's view is not
            value.setflags(write=False)
        object.__setattr__(self, "value", value)
        if value.ndim != len(self.axes):
            raise ValueError(f"step {self.key}: {value.ndim}-d value but axes {self.axes}")


class RealTrace(Trace):
    def add(self, key, title, value, axes, formula, inputs=(), why="", scale="diverging") -> Step:
        step = Step32(key, title, value, tuple(axes), formula, tuple(inputs), why, scale)
        self.steps[key] = step
        return step

    def token_labels(self) -> list[str]:
        """As Trace.token_labels ('the (4)' for a repeated token), made once per tokens tuple."""
        made = getattr(self, "_labels", None)
        if made is None or made[0] is not self.tokens:
            counts = Counter(self.tokens)
            made = (self.tokens, [f"{w} ({i})" if counts[w] > 1 else w for i, w in enumerate(self.tokens)])
            self._labels = made
        return list(made[1])
