"""similar: which two words of the sentence have the most similar embeddings, by cosine similarity
cos(x_i, x_j) = x_i · x_j / (|x_i| |x_j|) of their rows of X_emb (or of X). The distractors are what wrong mental
models give from the same rows: the largest dot product (long vectors, not the same direction), the nearest by
distance |x_i − x_j|, the least similar pair (largest and smallest mixed up), the runner-up.

    >>> from attention_core import Config, run_forward
    >>> p = similar_poll(run_forward(Config()), np.random.default_rng(0), {"step": "x_embed"})
    >>> p.choices[p.answer]
    '“i” and “you”'
"""
from __future__ import annotations

import numpy as np

from ...forward.trace import Trace
from ...math.embeddings import cosine_similarity
from ..quiz.notation import num
from .pins import Unfit, pin_text
from .poll import MIN_CHOICES, Poll, make

SYMBOLS = {"x_embed": "X_emb (the word vectors)", "x": "X (the word vectors plus the positions)"}


def pair_text(labels, pair) -> str:
    i, j = sorted(pair)
    return f"“{labels[i]}” and “{labels[j]}”"


def similar_poll(trace: Trace, rng: np.random.Generator, at: dict | None = None) -> Poll | None:
    """at: {"step": "x_embed" or "x"}: the rows compared (X_emb unless pinned)."""
    key = pin_text(at, "step", [k for k in SYMBOLS if k in trace]) or "x_embed"
    if key not in trace or trace.n < MIN_CHOICES:
        return None
    x = trace[key].value
    labels = trace.token_labels()
    norms = np.linalg.norm(x, axis=1)
    pairs = [(i, j) for i in range(trace.n) for j in range(i + 1, trace.n)
             if norms[i] > 0 and norms[j] > 0 and labels[i] != labels[j]]
    if len(pairs) < MIN_CHOICES:
        return None
    cos, dot = cosine_similarity(x), x @ x.T
    dist = np.linalg.norm(x[:, None] - x[None], axis=-1)
    ranked = sorted(pairs, key=lambda p: (-cos[p], p))
    if cos[ranked[0]] - cos[ranked[1]] <= 1e-3:             # no clear winner
        if at:
            raise Unfit("two pairs are equally similar")
        return None
    by_dot = max(pairs, key=lambda p: (dot[p], -p[0], -p[1]))
    by_dist = min(pairs, key=lambda p: (dist[p], p))
    wrong = [by_dot, by_dist, ranked[1], ranked[-1]] + ranked[2:-1]
    best = ranked[0]
    symbol = SYMBOLS[key]
    return make("similar",
                f"Which two words of the sentence have the most similar embeddings: for which pair of rows i ≠ j of "
                f"{symbol} is the cosine similarity cos(x_i, x_j) = x_i · x_j / (|x_i| |x_j|) largest?",
                pair_text(labels, best), [pair_text(labels, p) for p in wrong],
                "cos by pair" + (f" (the top 4 of {len(ranked)})" if len(ranked) > 4 else "") + ": "
                + ", ".join(f"{pair_text(labels, p)} {cos[p]:.3f}" for p in ranked[:4])
                + f". The largest, {cos[best]:.3f}, is {pair_text(labels, best)}; "
                f"the least similar pair is {pair_text(labels, ranked[-1])} ({cos[ranked[-1]]:.3f}). The largest dot "
                f"product x_i · x_j, {num(dot[by_dot])}, is {pair_text(labels, by_dot)}'s (a dot product grows with "
                f"the vectors' lengths as well as with their angle); the nearest by distance |x_i − x_j|, "
                f"{num(dist[by_dist])}, is {pair_text(labels, by_dist)}.", rng, key)
