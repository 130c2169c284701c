"""The numpy script being written: its settings, the forward pass it reproduces, its lines so far, and how a
parameter is written (drawn as the explorer draws it, or as an exact literal).

    >>> print(literal(np.array([[1.0, 0.5], [0.0, -2.0]])))
    np.array([
        [1.0, 0.5],
        [0.0, -2.0],
    ])
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...forward.config import Config
from ...forward.trace import Trace


def literal(a: np.ndarray) -> str:
    """An array as an exact Python literal (repr of floats round-trips), one row per line."""
    a = np.asarray(a, dtype=np.float64)
    if a.ndim <= 1:
        return f"np.array({a.tolist()!r})"
    rows = ",\n    ".join(repr(r) for r in a.tolist())
    return f"np.array([\n    {rows},\n])"


@dataclass
class Script:
    config: Config
    trace: Trace                     # run_forward(config): the numbers the script must give again
    literal: bool                    # every parameter written in as a literal, not drawn from its seed
    lines: list[str] = field(default_factory=list)

    def add(self, line: str) -> None:
        self.lines.append(line)

    def block(self, text: str) -> None:
        """Add a fixed piece of the script, line by line."""
        self.lines.extend(text.split("\n"))

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"

    # ---- the settings, as the script's words use them ----

    @property
    def h(self) -> int:
        """H: query heads."""
        return self.config.n_heads

    @property
    def h_kv(self) -> int:
        """H_kv: key/value heads (= H without grouped-query attention)."""
        return self.config.kv_heads

    @property
    def grouped(self) -> bool:
        """Grouped-query attention: g = H / H_kv > 1."""
        return self.h_kv < self.h

    @property
    def rope(self) -> bool:
        return self.config.positional == "rope"

    @property
    def alibi(self) -> bool:
        return self.config.positional == "alibi"

    @property
    def trained(self) -> bool:
        return self.config.weights == "trained"

    @property
    def hs(self) -> str:
        """A per-head symbol's subscript: S_h = Q_h K_h^T with several heads, S = Q K^T with one."""
        return "_h" if self.h > 1 else ""

    @property
    def r(self) -> str:
        """RoPE's superscript on the rotated queries and keys: Q^R, K^R."""
        return "^R" if self.rope else ""

    @property
    def kv(self) -> str:
        """The subscript of the KV head query head h reads: ⌊h/g⌋ with grouped KV heads."""
        return "_{⌊h/g⌋}" if self.grouped else self.hs

    # ---- parameters: drawn in the script, or written in ----

    def param(self, name: str, shape: tuple, fan_in: int) -> str:
        """The code of a weight: the trained matrix (W_Q, W_K, W_V under trained weights) or the literal seeded
        start as literals, else a call of the script's param(), which draws it as the explorer does."""
        from ...forward.weights import init_weight
        if self.trained and name in ("w_q", "w_k", "w_v"):
            return literal(self.trace[name].value)
        if self.literal:
            return literal(init_weight(self.config.seed, name, shape, fan_in))
        return f"param({name!r}, {shape!r}, {fan_in})"

    def bias(self, name: str, shape: tuple) -> str:
        """The code of a bias, as param() writes a weight."""
        from ...forward.weights import init_bias
        if self.trained and name in ("b_q", "b_k", "b_v"):
            return literal(self.trace[name].value)
        return literal(init_bias(self.config.seed, name, shape)) if self.literal else f"bias({name!r}, {shape!r})"
