"""Softmax and masking mistakes: softmax over the wrong axis, a fully masked row turned NaN, dropout left on at
inference, and the scores instead of the weights multiplying V.

    >>> from attention_core import Config
    >>> r = scores_times_v(Config())
    >>> r.check_passes_on_correct, r.check_flags_wrong
    (True, True)
"""
from __future__ import annotations

import numpy as np

from ...explanations import settings_of
from ...forward.trace import Trace
from ...forward.weights import param_rng
from ...math import attention as att
from ...math.gqa import expand_kv
from .base import (PitfallResult, difference, mask_of, one_token, pitfall, rows_sum_to_one, symbols,
                            trace_of)


# ---- 1. softmax over the wrong axis --------------------------------------------------------------------

@pitfall("Softmax over the wrong axis", "common",
         "softmax({arg}, axis=−2) normalises each key's column over the queries (axis −2 is the query axis; "
         "written axis=0 it is the same only without heads: with heads, axis 0 is the head axis). Each query's "
         "row, its distribution over the keys, must be normalised: softmax({arg}, axis=−1).")
def softmax_axis(source) -> PitfallResult:
    """softmax over each column (over the queries) instead of each row (over the keys)."""
    trace, config = trace_of(source)
    t = settings_of(trace, config).temperature
    logits = trace[trace.facts["softmax_input"]].value                    # (h?, n_q, n_k)
    correct = att.softmax(logits, axis=-1, temperature=t)                 # each query's row: a distribution over keys
    wrong = att.softmax(logits, axis=-2, temperature=t)                   # each key's column: over queries
    visible = mask_of(trace)
    ok, err_c = rows_sum_to_one(correct, visible)
    bad, err_w = rows_sum_to_one(wrong, visible)
    seen = None if visible is None else visible.T                         # key j's column: the queries that see it
    _, err_cols = rows_sum_to_one(np.swapaxes(wrong, -1, -2), seen)
    hidden = 0 if visible is None else int((~visible.any(axis=0)).sum())
    return PitfallResult(correct, wrong, difference(correct, wrong), "each query's weights sum to 1",
                         ok, not bad,
                         f"Largest |row sum − 1|: correct {err_c:.1e}, wrong {err_w:.3g}. The wrong version's "
                         f"columns sum to 1 instead (largest |column sum − 1| {err_cols:.1e}): each key distributes "
                         f"itself over the queries"
                         + (f"; the {hidden} key(s) no query may see keep a column of zeros." if hidden else ".")
                         + one_token(trace),
                         trace["weights"].axes, "attention weights")


# ---- 3. −inf masks and a fully masked row -------------------------------------------------------------

def naive_softmax(x: np.ndarray) -> np.ndarray:
    """exp(x − max) / Σ exp(x − max), nothing more: a row of −∞ gives −∞ − (−∞) = NaN."""
    with np.errstate(invalid="ignore"):
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)


def before_mask(trace: Trace) -> str:
    """The step the mask reads: the scores with ALiBi's bias when there is one, else Ŝ or S."""
    return "biased_scores" if "biased_scores" in trace else "scaled_scores" if "scaled_scores" in trace else "scores"



@pitfall("−∞ mask, fully masked row, NaN", "common",
         "Masking with −∞ is right, but a query with every key hidden then feeds a row of −∞ to softmax; "
         "exp(−∞ − (−∞)) is NaN and it spreads. A safe softmax returns zeros for such a row.")
def neg_inf_nan(source) -> PitfallResult:
    """A query whose every key is masked: −∞ everywhere, and the naive softmax returns NaN.

    Uses the learner's mask; when no row is fully hidden, the last query is hidden entirely
    (as a padding query would be).
    """
    trace, config = trace_of(source)
    t = settings_of(trace, config).temperature
    s = trace[before_mask(trace)].value                                  # (h?, n, n)
    n = trace.n
    mask = mask_of(trace)
    mask = np.ones((n, n), bool) if mask is None else mask.copy()
    made = not (~mask.any(axis=1)).any()
    if made:
        mask[-1, :] = False
    masked = att.apply_mask(s, mask) / t
    correct = att.softmax(masked)                                         # the core's softmax: zeros for that row
    wrong = naive_softmax(masked)
    nan_queries = np.flatnonzero(np.isnan(wrong).any(axis=-1).reshape(-1, n).any(axis=0))   # over every head
    heads = f" in each of the {wrong.shape[0]} heads" if wrong.ndim == 3 else ""
    how = f"query {n - 1} hidden from every key for this demo" if made else "your mask hides every key of a row"
    return PitfallResult(correct, wrong, difference(correct, wrong), "no NaN anywhere in the weights",
                         not np.isnan(correct).any(), bool(np.isnan(wrong).any()),
                         f"{how}: the naive softmax gives a NaN row for quer{'y' if len(nan_queries) == 1 else 'ies'} "
                         f"{', '.join(map(str, nan_queries))}{heads}, the safe one zeros. "
                         f"(Filling with a large negative number instead of −∞, as tutorial 3 does with −1e10, "
                         f"gives a uniform row instead: no NaN, but weight on hidden keys.)",
                         trace["weights"].axes, "attention weights with a fully masked row")


# ---- 4. dropout left on at inference (seed 002) --------------------------------------------------------

DROPOUT_P = 0.1


def dropout(a: np.ndarray, p: float, rng: np.random.Generator) -> np.ndarray:
    """Inverted dropout as F.dropout(training=True) does it: zero with probability p, survivors × 1/(1−p)."""
    return np.where(rng.random(a.shape) >= p, a / (1 - p), 0.0)


@pitfall("Dropout left on at inference", "002",
         "F.dropout(alpha, p=0.1) without training=self.training drops attention weights at inference too: "
         "rows stop summing to 1 and the same input gives different outputs.")
def dropout_at_inference(source) -> PitfallResult:
    """F.dropout(alpha, p=0.1) without training=self.training: weights are dropped at inference too."""
    trace, _ = trace_of(source)
    correct = trace["weights"].value                                      # (h?, n_q, n_k): inference, no dropout
    wrong = dropout(correct, DROPOUT_P, param_rng(0, "pitfall:dropout"))
    again = dropout(correct, DROPOUT_P, param_rng(1, "pitfall:dropout"))
    visible = mask_of(trace)
    ok, err_c = rows_sum_to_one(correct, visible)
    bad, err_w = rows_sum_to_one(wrong, visible)
    dropped = int(((wrong == 0) & (correct != 0)).sum())
    rerun = difference(wrong, again)
    return PitfallResult(correct, wrong, difference(correct, wrong), "each query's weights sum to 1 at inference",
                         ok, not bad,
                         f"Largest |row sum − 1|: {err_c:.1e} without dropout, {err_w:.3g} with it ({dropped} "
                         f"weight(s) zeroed, the rest ×{1 / (1 - DROPOUT_P):.3g}); a second run of the same input "
                         f"differs by {rerun:.3g}" + (": the prediction is random." if rerun else
                                                     " (both runs happened to drop the same weights)."),
                         trace["weights"].axes, f"attention weights, dropout p={DROPOUT_P}")


# ---- 5. scores @ V (seed 001) --------------------------------------------------------------------------

@pitfall("Scores @ V instead of weights @ V", "001",
         "context = scores @ values skips the softmax: {scores} V mixes the values with the scores "
         "themselves, signed and unnormalised. It must be the weights: C = A V with A = softmax({arg}).")
def scores_times_v(source) -> PitfallResult:
    """context = scores @ V instead of softmax(scores) @ V: the mix is no longer an average."""
    trace, _ = trace_of(source)
    h = trace.facts["n_heads"]
    v = trace["v_heads" if h > 1 else "v"].value                          # (h_kv?, n, d_v)
    if h > 1:
        v = expand_kv(v, h)                                               # (H, n, d_v): head h reads KV head ⌊h/g⌋
    logits = trace["scaled_scores" if "scaled_scores" in trace else "scores"].value   # (h?, n, n)
    weights = trace["weights"].value
    correct = weights @ v                                                 # (h?, n, d_v)
    wrong = logits @ v
    visible = mask_of(trace)
    sums_c, err_c = rows_sum_to_one(weights, visible)
    sums_w, err_w = rows_sum_to_one(logits)
    average_c = sums_c and bool((weights >= 0).all())
    average_w = sums_w and bool((logits >= 0).all())
    return PitfallResult(correct, wrong, difference(correct, wrong),
                         "the coefficients mixing V are ≥ 0 and sum to 1 (a weighted average)",
                         average_c, not average_w,
                         f"Coefficients: the weights A (min {weights.min():.3g}, largest |row sum − 1| {err_c:.1e}); "
                         f"the scores {symbols(trace)['scores']} (min {logits.min():.3g}, largest |row sum − 1| "
                         f"{err_w:.3g}), so the "
                         f"“context” is not an average of the values and its scale follows the scores'.",
                         trace["context"].axes, "context vectors")
