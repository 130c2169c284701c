"""RoPE after a shift: move the whole sentence by Δ positions and a dot-product score stays, since
(R_{i+Δ} q_i)·(R_{j+Δ} k_j) = q_i · R_{j−i} k_j. The answer is the RoPE lesson's score at positions p + Δ; the
distractors are what wrong mental models give, computed with the lesson's own rotation and score function:
only the query turned to its new position, only the key, or no rotation at all.

With the settings' Position not RoPE the poll runs the RoPE lesson's forward pass (the same settings, Position =
RoPE) and says so in its prompt; with an odd d_k (nothing to pair) or a score that is not a dot product (an
additive or bilinear score does move with a shift) it does not fit.

    >>> from attention_core import Config, run_forward
    >>> p = rope_shift_poll(run_forward(Config(positional="rope")), np.random.default_rng(0))
    >>> p.kind, len(p.choices) in (3, 4)
    ('rope_shift', True)
"""
from __future__ import annotations

import functools

import numpy as np

from ...forward.config import Config
from ...forward.stages import run_forward
from ...forward.trace import Trace
from ...math.limits import ConfigError
from ...lessons.rope import DOT_SCORES, rope_lesson, score_function, score_key, with_rope
from ..quiz.notation import at as cell, config_of, num
from .pins import Unfit, pin_int
from .poll import MIN_CHOICES, Poll, count_choices, make

SHIFTS = (3, 10, 100, 1000)          # Δ: the whole sentence moved by this many positions
POSITIONS = {"sinusoidal": "a sinusoidal encoding added to X", "learned": "learned positions added to X",
             "index": "the position index as a column of X", "none": "no positional encoding",
             "alibi": "ALiBi's bias"}


@functools.lru_cache(maxsize=16)
def _rope_forward(config: Config) -> Trace:
    """The RoPE lesson's forward pass: the settings with Position = RoPE."""
    return run_forward(with_rope(config))


def _forward_with_rope(trace: Trace) -> Trace | None:
    config = config_of(trace)
    if config is None or config.score not in DOT_SCORES:
        return None
    if config.positional == "rope":
        return trace
    try:
        return _rope_forward(config)
    except ConfigError:                                   # an odd d_k: RoPE has no pairs to turn
        return None


def _candidates(forward: Trace, head: int, shift: int) -> tuple[dict, list[tuple[int, int]]]:
    """(the answer and the wrong models' score matrices, the cells (i, j ≠ i) whose choices are distinct)."""
    t, moved = rope_lesson(forward, head), rope_lesson(forward, head, offset=shift)
    key = score_key(forward.facts["config"])
    score = score_function(forward, head)
    m = {"before": t[key].value, "after": moved[key].value,
         "query only": score(moved["q_rot"].value, t["k_rot"].value),
         "key only": score(t["q_rot"].value, moved["k_rot"].value),
         "no rotation": score(t["q"].value, t["k"].value)}
    n = forward.n
    cells = [(i, j) for i in range(n) for j in range(n) if i != j and
             count_choices(num(m["after"][i, j]), [num(m[w][i, j]) for w in WRONG]) >= MIN_CHOICES]
    return m, cells


WRONG = ("query only", "key only", "no rotation")


def rope_shift_poll(trace: Trace, rng: np.random.Generator, at: dict | None = None) -> Poll | None:
    """at: {"row": i, "col": j, "head": h, "shift": Δ}: the score of query i, key j after a shift by Δ."""
    forward = _forward_with_rope(trace)
    if forward is None or forward.n < 2:
        return None
    config = forward.facts["config"]
    head, shift = pin_int(at, "head", 0, config.n_heads - 1), pin_int(at, "shift", 1, 10 ** 6)
    row, col = pin_int(at, "row", 0, forward.n - 1), pin_int(at, "col", 0, forward.n - 1)
    tries = [(h, s) for h in (rng.permutation(config.n_heads).tolist() if head is None else [head])
             for s in (rng.permutation(SHIFTS).tolist() if shift is None else [shift])]
    for head, shift in tries:                              # the drawn head and Δ, or the next that has a cell
        m, cells = _candidates(forward, int(head), int(shift))
        cells = [(i, j) for i, j in cells if (row is None or i == row) and (col is None or j == col)]
        if cells:
            break
    else:
        if at:
            raise Unfit("the pinned cell leaves too few choices")
        return None
    i, j = cells[int(rng.integers(len(cells)))]
    labels = forward.token_labels()
    h = head if config.n_heads > 1 else None
    symbol = "Ŝ" if config.score == "scaled_dot" else "S"
    s = cell(symbol, h, i, j)
    over = " / √d_k" if config.score == "scaled_dot" else ""
    teacher = config_of(trace)
    intro = ("" if teacher.positional == "rope" else
             f"Your settings use {POSITIONS[teacher.positional]}; this question turns Position to RoPE, the rest as "
             f"yours. ")
    where = f"In head {head}, with" if h is not None else "With"
    g = config.n_heads // config.kv_heads
    kv = f"; query head {head} reads KV head ⌊{head}/{g}⌋ = {head // g}" if h is not None and g > 1 else ""
    prompt = (f"{intro}{where} RoPE each query and key is turned by its position (token {i} at position {i}, token "
              f"{j} at {j}): {s} = q_{i}^R · k_{j}^R{over} = {num(m['before'][i, j])} (query “{labels[i]}”, key "
              f"“{labels[j]}”{kv}). Shift the whole sentence by Δ = {shift} positions (token {i} to position "
              f"{i + shift}, token {j} to {j + shift}, every query and key turned by its new position). What is {s} now?")
    explanation = (f"(R_{{{i}+{shift}}} q_{i}) · (R_{{{j}+{shift}}} k_{j}) = q_{i} · R_{{{j}−{i}}} k_{j}: only j − i = "
                   f"{num(j - i)} enters, and a shift keeps it, so {s} stays {num(m['before'][i, j])} (computed at the "
                   f"new positions: {num(m['after'][i, j])}). Turning only the query to its new position gives "
                   f"{num(m['query only'][i, j])}, only the key {num(m['key only'][i, j])}; no rotation at all, "
                   f"q_{i} · k_{j}{over}, gives {num(m['no rotation'][i, j])}.")
    key = score_key(config)
    return make("rope_shift", prompt, num(m["after"][i, j]), [num(m[w][i, j]) for w in WRONG], explanation, rng,
                key if teacher.positional == "rope" else None)
