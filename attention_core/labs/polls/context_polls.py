"""closest_value: C = A V makes each context vector c_i a weighted average of the value rows v_j; which value row
is c_i closest to (the smallest distance |c_i − v_j|)? The distractors: the query's own value row (as if a token
kept its own value), then the other value rows by distance.

    >>> from attention_core import Config, run_forward
    >>> p = closest_value_poll(run_forward(Config()), np.random.default_rng(0), {"row": "0"})
    >>> p.choices[p.answer]
    'v_1 (“love”)'
"""
from __future__ import annotations

import numpy as np

from ...forward.trace import Trace
from ..quiz.notation import by_head
from .pins import Unfit, pin_int, pinned
from .poll import MIN_CHOICES, Poll, count_choices, make


def _values(trace: Trace) -> np.ndarray:
    """(H, n, d_v): the value rows each query head reads (head h reads KV head ⌊h / g⌋)."""
    heads = by_head(trace["weights"].value).shape[0]
    if heads == 1:
        return trace["v"].value[None]
    v = by_head(trace["v_heads"].value)
    g = heads // v.shape[0]
    return v[[h // g for h in range(heads)]]


def _choice(labels, j: int) -> str:
    return f"v_{j} (“{labels[j]}”)"


def closest_value_poll(trace: Trace, rng: np.random.Generator, at: dict | None = None) -> Poll | None:
    """at: {"row": i, "head": h} (head only with several heads): the value row closest to c_i."""
    if not {"weights", "context"} <= set(trace.keys()) or trace.n < MIN_CHOICES:
        return None
    a, c, v = by_head(trace["weights"].value), by_head(trace["context"].value), _values(trace)
    labels = trace.token_labels()
    dist = np.linalg.norm(c[:, :, None, :] - v[:, None, :, :], axis=-1)      # (H, n_q, n_k): |c_i − v_j|

    def ranked(h, i):
        return sorted(range(trace.n), key=lambda j: (dist[h, i, j], j))

    def wrong(h, i):
        return [_choice(labels, j) for j in [i] + ranked(h, i)[1:]]
    cells = [(h, i) for h in range(a.shape[0]) for i in range(trace.n)
             if a[h, i].sum() > 0 and np.sort(dist[h, i])[1] - np.sort(dist[h, i])[0] > 1e-3
             and count_choices(_choice(labels, ranked(h, i)[0]), wrong(h, i)) >= MIN_CHOICES]
    if at:
        i = pin_int(at, "row", 0, trace.n - 1)
        if a.shape[0] == 1 and "head" in at:
            raise Unfit("these settings have one head")
        h = pin_int(at, "head", 0, a.shape[0] - 1)
        cells = pinned(cells, lambda x: (i is None or x[1] == i) and (h is None or x[0] == h))
    if not cells:
        return None
    h, i = cells[int(rng.integers(len(cells)))]
    head = h if a.shape[0] > 1 else None
    order = ranked(h, i)
    top = int(np.argmax(a[h, i]))
    sub = "" if head is None else f"_{head}"
    where = "Row" if head is None else f"In head {head}, row"
    return make("closest_value",
                f"{where} {i} of A{sub} puts {a[h, i, top]:.3f} of its weight on “{labels[top]}”. The context vector "
                f"c_{i} = Σ_j A{sub}[{i},j] v_j (row {i} of C{sub}) is a weighted average of the value rows. Which value "
                f"row is c_{i} closest to (the smallest distance |c_{i} − v_j|)?",
                _choice(labels, order[0]), wrong(h, i),
                f"|c_{i} − v_j| by value row: " + ", ".join(f"{_choice(labels, j)} {dist[h, i, j]:.3f}" for j in order)
                + f". Row {i} of A{sub}: " + ", ".join(f"{labels[j]} {a[h, i, j]:.3f}" for j in range(trace.n))
                + f". The closest is {_choice(labels, order[0])}: c_{i} takes on what the keys it attends to hand on, "
                f"not its own value v_{i} unless it attends to itself.", rng, "context")
