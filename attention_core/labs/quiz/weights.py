"""Questions that read the weights A: which word a query attends to most, which head attends most, what a row
and a column add up to, and the weight of a key the mask hides.

    >>> from attention_core import Config, run_forward
    >>> round(row_sum_question(run_forward(Config()), np.random.default_rng(0)).expected, 12)  # a sum of floats
    1.0
"""
from __future__ import annotations

import numpy as np

from ...forward.trace import Trace
from .grading import Question
from .notation import config_of, groups

def _weights_rows(trace: Trace):
    """[(head index or None, row i)] of the weights that have some weight (not fully masked)."""
    w = trace["weights"].value
    blocks = w if w.ndim == 3 else w[None]
    return [(h if w.ndim == 3 else None, i) for h, block in enumerate(blocks)
            for i in range(block.shape[0]) if block[i].sum() > 0]


def attends_question(trace: Trace, rng: np.random.Generator) -> Question | None:
    if "weights" not in trace or trace["weights"].value.ndim not in (2, 3) or trace.n < 2:
        return None
    w = trace["weights"].value
    rows = _weights_rows(trace)
    clear = [(h, i) for h, i in rows if _gap(w[h, i] if h is not None else w[i]) > 1e-3]
    rows = clear or rows                                        # a row with one clear winner, if there is one
    if not rows:
        return None
    h, i = rows[int(rng.integers(len(rows)))]
    row = w[h, i] if h is not None else w[i]
    labels = trace.token_labels()
    top = float(row.max())
    best = [j for j in range(len(row)) if row[j] >= top - 1e-12]
    accepted = {labels[j].casefold() for j in best}
    for j in best:                              # the bare word, when each of its positions is a best one
        positions = [p for p, t in enumerate(trace.tokens) if t == trace.tokens[j]]
        if all(p in best for p in positions):
            accepted.add(trace.tokens[j].casefold())
    a = "A" if h is None else f"A_{h}"
    where = f"In head {h}, which" if h is not None else "Which"
    ranked = sorted(range(len(row)), key=lambda j: -row[j])[:4]
    return Question(
        f"attends:{h}:{i}", "choice",
        f"{where} word does “{labels[i]}” attend to most (the largest weight in row {i} of {a})?",
        f"“{labels[best[0]]}”", frozenset(accepted), choices=tuple(labels),
        explanation=f"Row {i} of {a}: " + ", ".join(f"{labels[j]} {row[j]:.3f}" for j in ranked)
                    + (" …" if len(row) > 4 else "") + ". The largest weight is the word it attends to most"
                    + (f" (a tie: {', '.join(labels[j] for j in best)} all count)." if len(best) > 1 else "."),
        step_key="weights", cell=(i,) if h is None else (h, i), hint="Pick one of the words.")


def _gap(values: np.ndarray) -> float:
    """How far the largest value is ahead of the second (0 for a tie or a single value)."""
    top = np.sort(np.asarray(values, float))[::-1]
    return float(top[0] - top[1]) if top.size > 1 else 0.0


def row_sum_question(trace: Trace, rng: np.random.Generator) -> Question | None:
    if "weights" not in trace or trace["weights"].value.ndim not in (2, 3):
        return None
    w = trace["weights"].value
    blocks = w if w.ndim == 3 else w[None]
    empty = [(h, i) for h, b in enumerate(blocks) for i in range(b.shape[0]) if b[i].sum() == 0]
    cells = empty if empty and rng.random() < 0.5 else [(h, i) for h in range(blocks.shape[0])
                                                        for i in range(blocks.shape[1])]
    h, i = cells[int(rng.integers(len(cells)))]
    total = float(blocks[h, i].sum())
    a = f"A_{h}" if w.ndim == 3 else "A"
    where = f" in head {h}" if w.ndim == 3 else ""
    why = ("Every key is hidden from this query, so the safe softmax leaves the row at zeros." if total == 0 else
           "Softmax makes this row a probability distribution over the keys it may see, whatever the scores.")
    return Question(f"rowsum:{h}:{i}", "number",
                    f"What do the attention weights of row {i} of {a} (query “{trace.token_labels()[i]}”){where} "
                    f"add up to?",
                    f"{total:.4g}", total, tolerance=1e-3, explanation=why, step_key="weights",
                    cell=(h, i) if w.ndim == 3 else (i,), hint="Type a number, e.g. 0.5.")


ROWS_NOT_COLUMNS = "quiz_rows_not_columns"      # its words: claims.py, the quiz's section


def column_sum_question(trace: Trace, rng: np.random.Generator) -> Question | None:
    if "weights" not in trace or trace["weights"].value.ndim not in (2, 3) or trace.n < 2:
        return None
    from ...forward.claims import CLAIMS, say
    w = trace["weights"].value
    h = int(rng.integers(w.shape[0])) if w.ndim == 3 else None
    block = w[h] if h is not None else w                                  # (n_q, n_k)
    j = int(rng.integers(block.shape[1]))
    total = float(block[:, j].sum())
    yes = abs(total - 1) < 1e-9
    a = f"A_{h}" if h is not None else "A"
    config = trace.facts.get("config")
    rows = (say(ROWS_NOT_COLUMNS, config) if config is not None else
            CLAIMS[ROWS_NOT_COLUMNS].text if w.any() else CLAIMS[ROWS_NOT_COLUMNS].otherwise)
    return Question(f"colsum:{h}:{j}", "yesno",
                    f"Does column {j} of {a} (how much every query attends to key “{trace.token_labels()[j]}”) "
                    f"sum to 1?",
                    "yes" if yes else "no", yes, choices=("yes", "no"),
                    explanation=f"It sums to {total:.4g}. {rows}.",
                    step_key="weights", cell=(j,) if h is None else (h, j), hint="Answer yes or no.")


def which_head_question(trace: Trace, rng: np.random.Generator) -> Question | None:
    if "weights" not in trace or trace["weights"].value.ndim != 3 or trace.n < 2:
        return None
    w = trace["weights"].value                                           # (H, n, n)
    pairs = [(i, j) for i in range(trace.n) for j in range(trace.n) if _gap(w[:, i, j]) > 1e-3]
    if not pairs:
        return None
    i, j = pairs[int(rng.integers(len(pairs)))]
    col = w[:, i, j]                                                     # (H,)
    best = [h for h in range(len(col)) if col[h] >= col.max() - 1e-12]
    accepted = frozenset(a for h in best for a in (f"head {h}", str(h), f"h{h}", f"head{h}"))
    labels = trace.token_labels()
    return Question(f"head:{i},{j}", "choice",
                    f"Which head puts the most weight from “{labels[i]}” onto “{labels[j]}”: for which h "
                    f"(0 … {len(col) - 1}) is A_h[{i},{j}] largest?",
                    f"head {best[0]}", accepted,
                    choices=tuple(f"head {h}" for h in range(len(col))),
                    explanation=f"A_h[{i},{j}] by head: " + ", ".join(f"head {h} {col[h]:.3f}" for h in range(len(col)))
                                + ". " + _heads_differ(trace),
                    step_key="weights", cell=(best[0], i, j), hint="Pick a head, e.g. head 0.")


def _heads_differ(trace: Trace) -> str:
    """Why the heads attend differently, under the trace's settings (grouped KV heads, ALiBi's slopes)."""
    config, g = config_of(trace), groups(trace)
    if g > 1:
        why = (f"Each head has its own columns of W_Q; the g = {g} query heads of a group share one KV head's columns "
               f"of W_K, W_V (query head h reads KV head ⌊h/{g}⌋), so heads of a group differ through their queries "
               f"alone.")
    else:
        why = "Each head has its own columns of W_Q, W_K, W_V, so each attends in its own way."
    if config is not None and config.positional == "alibi":
        why += " With ALiBi each head also has its own slope m_h: a larger slope lowers distant keys' scores more."
    return why


def _hidden_because(trace: Trace, i: int, j: int) -> str:
    """Why the mask hides key j from query i: '(M[3,0] = 0)', with the window's rule when it is a sliding window."""
    config = config_of(trace)
    if config is not None and config.mask == "sliding_window":
        w = config.window
        rule = (f"i − j = {i - j} ≥ W = {w}" if i - j >= w else f"j = {j} comes after i = {i}")
        return f"the sliding window (0 ≤ i − j < W) hides it: {rule}, so M[{i},{j}] = 0"
    return f"M[{i},{j}] = 0"


def masked_weight_question(trace: Trace, rng: np.random.Generator) -> Question | None:
    if "mask" not in trace:
        return None
    hidden = np.argwhere(trace["mask"].value == 0)
    if not hidden.size:
        return None
    i, j = (int(v) for v in hidden[int(rng.integers(len(hidden)))])
    labels = trace.token_labels()
    heads = trace["weights"].value.ndim == 3
    a = "A_h" if heads else "A"
    return Question(f"masked:{i},{j}", "number",
                    f"The mask hides key “{labels[j]}” from query “{labels[i]}” ({_hidden_because(trace, i, j)}). What weight "
                    f"{a}[{i},{j}] does row {i} give to key {j}" + (" in each head h?" if heads else "?"),
                    "0", 0.0, tolerance=1e-9,
                    explanation=f"The masked score S̃{'_h' if heads else ''}[{i},{j}] is −∞, and exp(−∞) = 0: exactly zero weight"
                                + (", in every head (they share the mask)." if heads else "."),
                    step_key="weights", cell=(i, j), hint="Type a number.")
