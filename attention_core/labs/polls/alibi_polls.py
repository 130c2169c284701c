"""alibi_bias: what ALiBi adds to the score of query i for key j in head h, (B_h)[i,j] = −m_h·|i − j|, read from
the settings' forward pass. The distractors are what wrong mental models give: the bias with its sign turned (a
bonus, not a penalty), the slope alone (the distance forgotten), the paper's slope formula 2^(−8h/H), which counts
heads from 1, used with heads counted from 0.

    >>> from attention_core import Config, run_forward
    >>> trace = run_forward(Config(positional="alibi", n_heads=4, mask="causal"))
    >>> p = alibi_bias_poll(trace, np.random.default_rng(0), {"head": "0", "row": "3", "col": "0"})
    >>> p.choices[p.answer], set(p.choices) == {"−0.75", "0.75", "−0.25", "−3"}
    ('−0.75', True)
"""
from __future__ import annotations

import math

import numpy as np

from ...forward.trace import Trace
from ..quiz.notation import at as cell, by_head, num
from .pins import pin_int, pinned
from .poll import MIN_CHOICES, Poll, count_choices, make


def _wrong(b: float, m: float, d: int, h: int, heads: int) -> list[str]:
    paper = [num(-(2 ** (-8 * h / heads)) * d)] if heads & (heads - 1) == 0 else []
    return [num(-b), num(-m)] + paper


def alibi_bias_poll(trace: Trace, rng: np.random.Generator, at: dict | None = None) -> Poll | None:
    """at: {"head": h, "row": i, "col": j}: (B_h)[i,j], for a key the query sees at a distance of 1 or more."""
    if "alibi" not in trace or trace.n < 2:
        return None
    bias = by_head(trace["alibi"].value)
    heads, n = bias.shape[0], trace.n
    slopes = -bias[:, 1, 0]                                  # distance 1: the slope itself
    seen = trace["mask"].value.astype(bool) if "mask" in trace else np.ones((n, n), bool)
    cells = [(h, i, j) for h in range(heads) for i in range(n) for j in range(n)
             if i != j and seen[i, j] and count_choices(num(bias[h, i, j]), _wrong(
                 float(bias[h, i, j]), float(slopes[h]), abs(i - j), h, heads)) >= MIN_CHOICES]
    if at:
        h, i, j = pin_int(at, "head", 0, heads - 1), pin_int(at, "row", 0, n - 1), pin_int(at, "col", 0, n - 1)
        cells = pinned(cells, lambda c: (h is None or c[0] == h) and (i is None or c[1] == i) and (j is None or c[2] == j))
    if not cells:
        return None
    h, i, j = cells[int(rng.integers(len(cells)))]
    labels = trace.token_labels()
    b, m, d = float(bias[h, i, j]), float(slopes[h]), abs(i - j)
    paper = 2 ** (-8 * h / heads)
    return make("alibi_bias",
                f"ALiBi adds a bias to every score by the distance between query and key, one slope per head. Head {h}'s "
                f"slope is m_{h} = {num(m)} (H = {heads} heads). What does ALiBi add to the score of query {i} "
                f"(“{labels[i]}”) for key {j} (“{labels[j]}”), {cell('B', h, i, j)}?",
                num(b), _wrong(b, m, d, h, heads),
                f"{cell('B', h, i, j)} = −m_{h} · |i − j| = −{num(m)} · |{i} − {j}| = −{num(m)} · {d} = {num(b)}: a "
                f"penalty growing with the distance, added to the scores before the mask. {num(-b)} would be a "
                f"bonus, not a penalty; −m_{h} = {num(-m)} forgets the distance"
                + (f"; the paper's 2^(−8h/H) counts heads from 1, so with h = {h} it gives m = {num(paper)} and "
                   f"{num(-paper * d)}" if heads & (heads - 1) == 0 else "") + ".", rng, "alibi")
