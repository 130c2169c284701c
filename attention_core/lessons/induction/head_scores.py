"""Each head's job, as a number from its attention pattern (Olsson et al. 2022, on repeated random tokens).

Read from the weights A_h of every layer's attention Trace (the model's own forward pass):

    previous-token score = mean over the queries i ≥ 1 of A_h[i, i−1]          how much i looks one token back
    induction score      = mean over the queries i whose token occurred before of
                           Σ_{j ≤ i : x_{j−1} = x_i} A_h[i, j]                 how much i looks at the token that
                                                                               FOLLOWED an earlier occurrence of
                                                                               its own token (prefix matching)

On `half` random tokens repeated once, the second copy's i has its target at i − half + 1 (and, by chance, at the
follower of any other earlier copy of the same token). Both lie in [0, 1]; over a batch, the means are over all
its queries together.
"""
from __future__ import annotations

import numpy as np

from ...forward.trace import Trace


def patterns(trace: Trace) -> np.ndarray:
    """(layer, head, n_q, n_k): every head's attention weights, read from each layer's attention Trace."""
    return np.stack([att["weights"].value for att in trace.facts["attention"]])


def targets(ids) -> np.ndarray:
    """(…, n, n) bool: key j is an induction target of query i when 1 ≤ j ≤ i and x_{j−1} = x_i."""
    ids = np.asarray(ids)
    before = np.concatenate([np.full(ids.shape[:-1] + (1,), -1), ids[..., :-1]], axis=-1)   # x_{j−1}
    return (ids[..., :, None] == before[..., None, :]) & np.tri(ids.shape[-1], dtype=bool)


def prev_token_scores(a: np.ndarray) -> np.ndarray:
    """(layer, head) from patterns (…, layer, head, n, n): the mean of A[i, i−1] over i ≥ 1 (and the batch)."""
    i = np.arange(1, a.shape[-1])
    diag = a[..., i, i - 1]                                                    # (…, layer, head, n − 1)
    return diag.reshape(-1, *diag.shape[-3:]).mean(axis=(0, 3))


def induction_scores(a: np.ndarray, ids) -> np.ndarray:
    """(layer, head) from patterns (…, layer, head, n, n) and their ids (…, n)."""
    t = targets(ids)                                                           # (…, n, n)
    on = (a * t[..., None, None, :, :]).sum(axis=-1)                           # (…, layer, head, n)
    rows = t.any(axis=-1)[..., None, None, :]                                  # (…, 1, 1, n): queries with a target
    on, rows = on.reshape(-1, *on.shape[-3:]), np.broadcast_to(rows, on.shape).reshape(-1, *on.shape[-3:])
    return (on * rows).sum(axis=(0, 3)) / max(int(rows[:, 0, 0].sum()), 1)


def head_table(trace: Trace) -> dict[str, np.ndarray]:
    """{"prev": (layer, head), "induction": (layer, head)} on the trace's own tokens."""
    a = patterns(trace)
    return {"prev": prev_token_scores(a), "induction": induction_scores(a, trace.facts["ids"])}


def top_head(scores: np.ndarray, layer: int) -> int:
    """The head of `layer` with the highest score."""
    return int(np.argmax(scores[layer]))
