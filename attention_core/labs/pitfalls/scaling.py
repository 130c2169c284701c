"""Scaling mistakes: no / √d_k at a large d_k (softmax saturates), and / √(n·d_k), which makes a pair's score
depend on the sentence's length.

    >>> from attention_core import Config
    >>> r = sqrt_len_q(Config())
    >>> r.check_passes_on_correct, r.check_flags_wrong
    (True, True)
"""
from __future__ import annotations

import math

import numpy as np

from ...explanations import settings_of
from ...forward.trace import Trace
from ...forward.weights import param_rng
from ...math import attention as att
from .base import PitfallResult, difference, pitfall, query_key_rows, trace_of


# ---- 2. no √d_k at large d_k ---------------------------------------------------------------------------

D_SMALL, D_LARGE, DRAWS = 16, 512, 48
MAX_ROWS = 24


def _score_spread(x: np.ndarray, rng: np.random.Generator) -> dict[int, float]:
    """RMS of the raw scores (x W_q)(x W_k)ᵀ over DRAWS seeded inits W ~ N(0, 1/d_model), at widths
    D_SMALL and D_LARGE (the first D_SMALL columns of each wide draw are a narrow draw).

    x W has independent columns with covariance x xᵀ / d_model, so it is drawn as L Z with
    L Lᵀ = x xᵀ (n × n): the same distribution, at n²·d cost instead of n·d_model·d. At most
    MAX_ROWS rows (evenly spaced) take part: the noise is in the draws, not in the number of pairs.
    """
    if x.shape[0] > MAX_ROWS:                                             # the spread over pairs needs few rows
        x = x[np.linspace(0, x.shape[0] - 1, MAX_ROWS).round().astype(int)]
    n, d_model = x.shape
    evals, u = np.linalg.eigh(x @ x.T)                                    # x xᵀ = u diag(evals) uᵀ
    l = u * np.sqrt(np.clip(evals, 0, None))                              # (n, n)
    def like_x_w() -> np.ndarray:                                         # (draws, n, D_LARGE), like x W
        z = rng.standard_normal((n, DRAWS * D_LARGE)) / np.sqrt(d_model)
        return (l @ z).reshape(n, DRAWS, D_LARGE).transpose(1, 0, 2)
    q, k = like_x_w(), like_x_w()
    return {d: float(np.sqrt(np.mean((q[..., :d] @ np.swapaxes(k[..., :d], -1, -2)) ** 2)))
            for d in (D_SMALL, D_LARGE)}


@pitfall("No √d_k scaling at large d_k", "common",
         "Dot products of d_k-wide vectors with independent random components have a spread growing like "
         "√d_k; unscaled, a large d_k pushes softmax towards one-hot rows, whose gradients vanish. "
         "Divide by √d_k.")
def no_scaling(source) -> PitfallResult:
    """Q Kᵀ without / √d_k: the scores' spread grows like √d_k and softmax saturates to one-hot rows.

    Shown on the learner's X with wide seeded projections (d_k = 512). The check measures the RMS
    score over 48 seeded inits at d_k = 16 and at d_k = 512: with / √d_k it stays put, without it
    grows ×√32 ≈ 5.7; the limit is the geometric middle, ×2.4.
    """
    trace, _ = trace_of(source)
    x = trace["x"].value                                                  # (n, d_model)
    n, d_model = x.shape
    note = ""
    if not np.any(x):
        x = param_rng(0, "pitfall:x").standard_normal((n, d_model))
        note = " (X is all zeros here, so seeded N(0, 1) rows stand in for it.)"
    spread = _score_spread(x, param_rng(0, "pitfall:spread"))
    growth_wrong = spread[D_LARGE] / spread[D_SMALL]
    growth_right = growth_wrong / math.sqrt(D_LARGE / D_SMALL)            # the same scores, each / √d_k
    limit = (D_LARGE / D_SMALL) ** 0.25
    w_q = param_rng(0, "pitfall:w_q").standard_normal((d_model, D_LARGE)) / np.sqrt(d_model)
    w_k = param_rng(0, "pitfall:w_k").standard_normal((d_model, D_LARGE)) / np.sqrt(d_model)
    s = (x @ w_q) @ (x @ w_k).T                                           # (n, n) at d_k = 512, unscaled
    correct = att.softmax(s / np.sqrt(D_LARGE))
    wrong = att.softmax(s)
    sat = lambda a: float(np.mean(a.max(axis=-1) > 0.99))
    return PitfallResult(
        correct, wrong, difference(correct, wrong), f"score spread stays flat from d_k={D_SMALL} to {D_LARGE}",
        growth_right < limit, growth_wrong >= limit,
        f"RMS score over {DRAWS} seeded inits on your X grows ×{growth_right:.2f} with √d_k scaling and "
        f"×{growth_wrong:.2f} without (√({D_LARGE}/{D_SMALL}) = {math.sqrt(D_LARGE / D_SMALL):.2f}); flagged "
        f"above ×{limit:.2f}. Rows with a weight > 0.99 at d_k={D_LARGE}: {sat(correct):.0%} scaled, "
        f"{sat(wrong):.0%} unscaled." + note,
        ("n_q", "n_k"), f"attention weights at d_k = {D_LARGE} (seeded W_Q, W_K on your X)")


# ---- 7. / √(n·d_k) instead of / √d_k (seed 000) --------------------------------------------------------

@pitfall("Dividing by √(n·d_k) instead of √d_k", "000",
         "sqrt(length(q)) counts every element of Q, n·d_k, not the key width d_k: the scaling then "
         "depends on the sentence length.")
def sqrt_len_q(source) -> PitfallResult:
    """Scores divided by sqrt(length(q)): all n·d_k elements of Q, not d_k: the scale depends on n.

    The check appends one token (a copy of the last row of Q and K): a pair's scaled score must
    not change when another word joins the sentence.
    """
    trace, _ = trace_of(source)
    q, k = query_key_rows(trace)                                         # (h?, n, d_k) each
    n, d_k = q.shape[-2], q.shape[-1]
    raw = q @ np.swapaxes(k, -1, -2)                                      # (h?, n, n)
    correct = att.softmax(raw / np.sqrt(d_k))
    wrong = att.softmax(raw / np.sqrt(n * d_k))
    q2 = np.concatenate([q, q[..., -1:, :]], axis=-2)                     # one more token: (h?, n+1, d_k)
    k2 = np.concatenate([k, k[..., -1:, :]], axis=-2)
    raw2 = (q2 @ np.swapaxes(k2, -1, -2))[..., :n, :n]
    drift_c = float(np.max(np.abs(raw2 / np.sqrt(d_k) - raw / np.sqrt(d_k))))
    drift_w = float(np.max(np.abs(raw2 / np.sqrt((n + 1) * d_k) - raw / np.sqrt(n * d_k))))
    tol = 1e-12 * max(1.0, float(np.max(np.abs(raw))))
    return PitfallResult(correct, wrong, difference(correct, wrong),
                         "a pair's scaled score does not change when a word is appended",
                         drift_c <= tol, drift_w > tol,
                         f"Dividing by √d_k = {math.sqrt(d_k):.3g}: appending a token moves the existing scaled "
                         f"scores by {drift_c:.1e}. Dividing by √(n·d_k) = √({n}·{d_k}) = {math.sqrt(n * d_k):.3g}: "
                         f"by up to {drift_w:.3g}, and the weights get flatter the longer the sentence.",
                         trace["weights"].axes, "attention weights" if _plain_scaled_dot(trace) else
                         ("weights softmax(Q^R K^R⊤/√d_k) of your rotated Q and K" if "q_rot" in trace else
                          "weights softmax(Q Kᵀ/√d_k) of your Q and K")
                         + f" (no mask, {'no ALiBi bias, ' if 'alibi' in trace else ''}T = 1)")


def _plain_scaled_dot(trace: Trace) -> bool:
    """The learner's weights are softmax(Q Kᵀ/√d_k) as they are (Q^R, K^R under RoPE): scaled dot product, no
    ALiBi bias, no mask, T = 1."""
    return ("scaled_scores" in trace and "mask" not in trace and "alibi" not in trace
            and settings_of(trace, trace.facts.get("config")).temperature == 1)
