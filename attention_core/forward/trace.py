"""What flows from the core to the pages: named Steps, in order, in a Trace."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

TOKEN_AXES = ("n", "n_q", "n_k")


@dataclass(frozen=True, eq=False)
class Step:
    key: str                         # how pages ask for it: trace["scores"]
    title: str                       # what a learner calls it
    value: np.ndarray                # read-only
    axes: tuple[str, ...]            # a name per axis: ("n", "d_k")
    formula: str                     # LaTeX
    inputs: tuple[str, ...] = ()     # keys of the steps it is computed from
    why: str = ""                    # a sentence or two
    scale: str = "diverging"         # diverging (signed, centred at 0) | sequential (0..1) | mask

    def __post_init__(self):
        value = np.array(self.value, dtype=np.float64)
        value.setflags(write=False)
        object.__setattr__(self, "value", value)
        if value.ndim != len(self.axes):
            raise ValueError(f"step {self.key}: {value.ndim}-d value but axes {self.axes}")

    @property
    def shape(self) -> tuple[int, ...]:
        return self.value.shape

    @property
    def shape_text(self) -> str:
        """'n=4 × d_k=6'."""
        return " × ".join(f"{a}={s}" for a, s in zip(self.axes, self.shape)) or "scalar"


@dataclass(eq=False)
class Trace:
    tokens: tuple[str, ...]
    steps: dict[str, Step] = field(default_factory=dict)
    notices: list[str] = field(default_factory=list)
    facts: dict = field(default_factory=dict)       # sizes and choices the pages write out
    views: dict[str, Step] = field(default_factory=dict)   # derived, page-local Steps (not in the pass)

    def add(self, key, title, value, axes, formula, inputs=(), why="", scale="diverging") -> Step:
        step = Step(key, title, value, tuple(axes), formula, tuple(inputs), why, scale)
        self.steps[key] = step
        return step

    def view(self, key, title, value, axes, formula="", why="", scale="diverging") -> Step:
        """A Step derived from this trace for one view (a similarity matrix, a demo), made once per key.

        `value` may be a callable, so a cached trace computes it only the first time.
        """
        key = f"view:{key}"
        if key not in self.views:
            v = value() if callable(value) else value
            self.views[key] = Step(key, title, v, tuple(axes), formula, (), why, scale)
        return self.views[key]

    def __getitem__(self, key: str) -> Step:
        return self.steps[key]

    def __contains__(self, key: str) -> bool:
        return key in self.steps

    def __iter__(self):
        return iter(self.steps.values())

    def keys(self):
        return list(self.steps)

    @property
    def n(self) -> int:
        return len(self.tokens)

    def token_labels(self) -> list[str]:
        """The words, made unique for chart axes: a repeated word gets its position ('the (4)')."""
        seen = {w: self.tokens.count(w) for w in self.tokens}
        return [f"{w} ({i})" if seen[w] > 1 else w for i, w in enumerate(self.tokens)]

    def labels(self, axis: str, size: int) -> list[str]:
        """Tick labels for an axis: facts["axis_labels"] if the trace names them, words for token axes,
        indices otherwise."""
        named = self.facts.get("axis_labels", {}).get(axis)
        if named is None and axis == "class":
            named = self.facts.get("classes")
        if named is not None and len(named) == size:
            return list(named)
        if axis in TOKEN_AXES and size == self.n:
            return self.token_labels()
        return [str(i) for i in range(size)]
