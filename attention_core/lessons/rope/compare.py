"""The RoPE page's shift: the whole sentence moved by an offset, with RoPE and with a sinusoidal encoding added to X
instead (the same base, weights, biases and score function). RoPE's dot-product scores stay; the added ones move.
"""
from __future__ import annotations

import functools

import numpy as np

from ...forward.trace import Trace
from ...math.positional import sinusoidal_encoding
from .lesson import check_lesson, lesson_trace
from .reading import head_weights, score_function, score_key


def shift_check(forward: Trace, head: int, pairing: str, offset: int) -> dict:
    """Positions p + offset instead of p: how much Q^R and the scores move with RoPE, and how much the scores move
    when a sinusoidal encoding (the same base) is added to X instead, with the same weights, biases and score
    function: {"rot": max|ΔQ^R|, "rope": max|ΔS|, "added": max|ΔS|, "trace": the lesson at positions p + offset}."""
    check_lesson(forward, head, pairing, offset)
    return _shift_check(forward, int(head), pairing, int(offset))


@functools.lru_cache(maxsize=128)
def _shift_check(forward: Trace, head: int, pairing: str, offset: int) -> dict:
    t, moved = lesson_trace(forward, head, pairing, 0), lesson_trace(forward, head, pairing, offset)
    config = forward.facts["config"]
    key, n = score_key(config), t.n
    x = forward["x"].value                                                       # (n, d_model) = X_emb
    w_q, w_k, b_q, b_k = head_weights(forward, head)                             # (d_model, d_k) ×2, (d_k,) ×2
    pe = sinusoidal_encoding(n + offset, x.shape[1], config.pe_base)             # (n + offset, d_model)
    score = score_function(forward, head)
    added = [score((x + p) @ w_q + b_q, (x + p) @ w_k + b_k) for p in (pe[:n], pe[offset:])]
    return {"rot": float(np.abs(moved["q_rot"].value - t["q_rot"].value).max()),
            "rope": float(np.abs(moved[key].value - t[key].value).max()),
            "added": float(np.abs(added[1] - added[0]).max()), "trace": moved}

