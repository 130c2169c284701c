"""Known wrong versions of attention, each next to the correct computation and a check that tells them apart.

The source texts (see /work/shared/seeds/README.md, "Known errors") and common practice contain
mistakes. The explorer computes the correct version everywhere else; here, and only here, each
mistake is computed on purpose, labelled, beside the correct result, with a check that passes
on the correct one and flags the wrong one.

    >>> from attention_core import Config
    >>> [p.key for p in PITFALLS]            # doctest: +NORMALIZE_WHITESPACE
    ['softmax_axis', 'no_scaling', 'neg_inf_nan', 'dropout_at_inference', 'scores_times_v',
     'one_jacobian', 'sqrt_len_q', 'odd_pe_zero', 'alibi_no_step', 'rope_pairing', 'causal_upper_left',
     'window_w_plus_one', 'latent_cache_x2']
    >>> r = PITFALLS_BY_KEY["scores_times_v"].compute(Config())
    >>> r.check_passes_on_correct, r.check_flags_wrong
    (True, True)

compute(config_or_trace) takes a Config (it runs the forward pass) or a Trace. Pitfalls that
need softmax rows want at least two tokens: with one token every softmax is [1], so several
wrong versions coincide with the right one (the check_detail says so).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Callable

import numpy as np

from ..math import attention as att
from ..forward.config import Config
from ..explanations import settings_of
from ..forward.weights import param_rng
from ..forward.stages import run_forward
from ..math.gqa import expand_kv
from ..math.positional import sinusoidal_encoding
from ..forward.trace import Trace

ROW_SUM_TOL = 1e-9


@dataclass(frozen=True, eq=False)
class PitfallResult:
    correct: np.ndarray              # the right computation
    wrong: np.ndarray                # the mistake, same shape
    difference: float                # max |wrong − correct|; inf where one is NaN/inf and the other is not
    check_name: str                  # what the check tests, in a few words
    check_passes_on_correct: bool
    check_flags_wrong: bool
    check_detail: str                # the check's numbers, in a sentence or two
    axes: tuple[str, ...] = ()       # names of the arrays' axes (for labels)
    what: str = ""                   # what the arrays are ("attention weights at d_k = 512")


TUTORIAL_OF_SEED = {"000": 1, "001": 2, "002": 3, "003": 4, "004": 5}   # docs/notation.md, "The tutorials"


@dataclass(frozen=True, eq=False)
class Pitfall:
    key: str
    title: str
    seed_source: str                 # "000", "001", "002" (a source text), or "common"
    description: str                 # str.format fields: the scores' symbols under the settings (text(config))
    compute: Callable[[Config | Trace], PitfallResult]

    @property
    def tutorial(self) -> int | None:
        """The number of the tutorial the mistake comes from (docs/notation.md), None for a common one."""
        return TUTORIAL_OF_SEED.get(self.seed_source)

    @property
    def source(self) -> str:
        """Where the mistake comes from, in a learner's words: 'from tutorial 3' or 'a classic'."""
        return f"from tutorial {self.tutorial}" if self.tutorial else "a classic"

    def text(self, source: Config | Trace | None = None) -> str:
        """The description with the scores named as these settings compute them (S, Ŝ or S̃, / T)."""
        return self.description.format(**symbols(source))


def symbols(source: Config | Trace | None = None) -> dict[str, str]:
    """The scores' symbols the pitfalls' words use, under these settings (plain text, docs/notation.md):
    scores: what the score step gives (Ŝ for the scaled dot product, else S), unmasked;
    arg: what softmax reads, divided by T when T ≠ 1 (S, Ŝ, Ŝ + B with ALiBi's bias, or S̃ with a mask)."""
    if source is None:
        source = Config()
    if isinstance(source, Trace):
        trace, config = source, source.facts.get("config")
        scaled, masked, biased = "scaled_scores" in trace, "mask" in trace, "alibi" in trace
        t = settings_of(trace, config).temperature
    else:
        scaled, masked, t = source.score == "scaled_dot", source.mask != "none", source.temperature
        biased = source.positional == "alibi"
    scores = "Ŝ" if scaled else "S"
    arg = "S̃" if masked else f"{scores} + B" if biased else scores
    if t != 1:
        arg = f"({arg}) / {t:g}" if " + " in arg else f"{arg} / {t:g}"
    return {"scores": scores, "arg": arg}


def difference(correct: np.ndarray, wrong: np.ndarray) -> float:
    """max |wrong − correct|, counting a NaN or infinity on one side only as an infinite difference."""
    correct, wrong = np.asarray(correct, float), np.asarray(wrong, float)
    same = (correct == wrong) | (np.isnan(correct) & np.isnan(wrong))
    with np.errstate(invalid="ignore"):
        gap = np.where(same, 0.0, np.abs(wrong - correct))
    gap = np.where(np.isnan(gap), np.inf, gap)
    return float(gap.max()) if gap.size else 0.0


def _trace(source: Config | Trace) -> tuple[Trace, Config | None]:
    if isinstance(source, Trace):
        return source, source.facts.get("config")
    return run_forward(source), source


def _rows_sum_to_one(a: np.ndarray, visible: np.ndarray | None = None) -> tuple[bool, float]:
    """(every row with a visible key sums to 1, the largest |row sum − 1| among them)."""
    sums = a.sum(axis=-1)
    rows = np.ones(sums.shape, bool) if visible is None else np.broadcast_to(visible.any(axis=-1), sums.shape)
    if not rows.any():
        return True, 0.0
    err = float(np.nanmax(np.where(rows, np.abs(sums - 1), 0.0))) if not np.isnan(sums[rows]).any() else math.inf
    return err <= ROW_SUM_TOL, err


def _mask_of(trace: Trace) -> np.ndarray | None:
    return trace["mask"].value.astype(bool) if "mask" in trace else None


def _before_mask(trace: Trace) -> str:
    """The step the mask reads: the scores with ALiBi's bias when there is one, else Ŝ or S."""
    return "biased_scores" if "biased_scores" in trace else "scaled_scores" if "scaled_scores" in trace else "scores"


def _one_token(trace: Trace) -> str:
    return " With one token every softmax row is [1], so the two versions coincide." if trace.n == 1 else ""


def _labelled(compute):
    """Say so when the two versions coincide on this input (one token, all scores equal, X = 0)."""
    def run(source) -> PitfallResult:
        r = compute(source)
        if r.difference == 0 and "coincide" not in r.check_detail:
            r = replace(r, check_detail=r.check_detail + " On this input the two versions coincide (one token, "
                                                            "or every score equal): try a longer or more varied sentence.")
        return r
    run.__name__, run.__doc__ = compute.__name__, compute.__doc__
    return run


# ---- 1. softmax over the wrong axis --------------------------------------------------------------------

def softmax_axis(source) -> PitfallResult:
    """softmax over each column (over the queries) instead of each row (over the keys)."""
    trace, config = _trace(source)
    t = settings_of(trace, config).temperature
    logits = trace[trace.facts["softmax_input"]].value                    # (h?, n_q, n_k)
    correct = att.softmax(logits, axis=-1, temperature=t)                 # each query's row: a distribution over keys
    wrong = att.softmax(logits, axis=-2, temperature=t)                   # each key's column: over queries
    visible = _mask_of(trace)
    ok, err_c = _rows_sum_to_one(correct, visible)
    bad, err_w = _rows_sum_to_one(wrong, visible)
    seen = None if visible is None else visible.T                         # key j's column: the queries that see it
    _, err_cols = _rows_sum_to_one(np.swapaxes(wrong, -1, -2), seen)
    hidden = 0 if visible is None else int((~visible.any(axis=0)).sum())
    return PitfallResult(correct, wrong, difference(correct, wrong), "each query's weights sum to 1",
                         ok, not bad,
                         f"Largest |row sum − 1|: correct {err_c:.1e}, wrong {err_w:.3g}. The wrong version's "
                         f"columns sum to 1 instead (largest |column sum − 1| {err_cols:.1e}): each key distributes "
                         f"itself over the queries"
                         + (f"; the {hidden} key(s) no query may see keep a column of zeros." if hidden else ".")
                         + _one_token(trace),
                         trace["weights"].axes, "attention weights")


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


def no_scaling(source) -> PitfallResult:
    """Q Kᵀ without / √d_k: the scores' spread grows like √d_k and softmax saturates to one-hot rows.

    Shown on the learner's X with wide seeded projections (d_k = 512). The check measures the RMS
    score over 48 seeded inits at d_k = 16 and at d_k = 512: with / √d_k it stays put, without it
    grows ×√32 ≈ 5.7; the limit is the geometric middle, ×2.4.
    """
    trace, _ = _trace(source)
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


# ---- 3. −inf masks and a fully masked row -------------------------------------------------------------

def naive_softmax(x: np.ndarray) -> np.ndarray:
    """exp(x − max) / Σ exp(x − max), nothing more: a row of −∞ gives −∞ − (−∞) = NaN."""
    with np.errstate(invalid="ignore"):
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)


def neg_inf_nan(source) -> PitfallResult:
    """A query whose every key is masked: −∞ everywhere, and the naive softmax returns NaN.

    Uses the learner's mask; when no row is fully hidden, the last query is hidden entirely
    (as a padding query would be).
    """
    trace, config = _trace(source)
    t = settings_of(trace, config).temperature
    s = trace[_before_mask(trace)].value                                  # (h?, n, n)
    n = trace.n
    mask = _mask_of(trace)
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


def dropout_at_inference(source) -> PitfallResult:
    """F.dropout(alpha, p=0.1) without training=self.training: weights are dropped at inference too."""
    trace, _ = _trace(source)
    correct = trace["weights"].value                                      # (h?, n_q, n_k): inference, no dropout
    wrong = dropout(correct, DROPOUT_P, param_rng(0, "pitfall:dropout"))
    again = dropout(correct, DROPOUT_P, param_rng(1, "pitfall:dropout"))
    visible = _mask_of(trace)
    ok, err_c = _rows_sum_to_one(correct, visible)
    bad, err_w = _rows_sum_to_one(wrong, visible)
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

def scores_times_v(source) -> PitfallResult:
    """context = scores @ V instead of softmax(scores) @ V: the mix is no longer an average."""
    trace, _ = _trace(source)
    h = trace.facts["n_heads"]
    v = trace["v_heads" if h > 1 else "v"].value                          # (h_kv?, n, d_v)
    if h > 1:
        v = expand_kv(v, h)                                               # (H, n, d_v): head h reads KV head ⌊h/g⌋
    logits = trace["scaled_scores" if "scaled_scores" in trace else "scores"].value   # (h?, n, n)
    weights = trace["weights"].value
    correct = weights @ v                                                 # (h?, n, d_v)
    wrong = logits @ v
    visible = _mask_of(trace)
    sums_c, err_c = _rows_sum_to_one(weights, visible)
    sums_w, err_w = _rows_sum_to_one(logits)
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


# ---- 6. one softmax Jacobian for every row (seed 000) --------------------------------------------------

@dataclass(frozen=True)
class SmallAttention:
    """The seed-000 layer on the learner's X, head 0: softmax(Q Kᵀ/√d_k) V with L = Σ C ∘ G."""
    x: np.ndarray                    # (n, d_model)
    w_q: np.ndarray                  # (d_model, d_k)
    w_k: np.ndarray                  # (d_model, d_k)
    w_v: np.ndarray                  # (d_model, d_v)
    g: np.ndarray                    # (n, d_v), fixed: dL/dC

    def forward(self, w_q=None):
        w_q = self.w_q if w_q is None else w_q
        q, k, v = self.x @ w_q, self.x @ self.w_k, self.x @ self.w_v                 # (n, d_k), (n, d_k), (n, d_v)
        a = att.softmax(q @ k.T / np.sqrt(q.shape[1]))                               # (n, n)
        c = a @ v                                                                    # (n, d_v)
        return float(np.sum(c * self.g)), (q, k, v, a)

    def grad_w_q(self, one_jacobian: bool = False) -> np.ndarray:                   # (d_model, d_k)
        _, (q, k, v, a) = self.forward()
        d_a = self.g @ v.T                                                           # dL/dA (n, n)
        if one_jacobian:                  # seed 000: J from α[j] (Julia linear indexing: the first column), every row
            c = a[:, 0]
            d_s = d_a @ (np.diag(c) - np.outer(c, c))
        else:                             # row i: J_i = diag(α_i) − α_i α_iᵀ
            d_s = a * (d_a - np.sum(d_a * a, axis=1, keepdims=True))
        d_q = d_s @ k / np.sqrt(q.shape[1])                                          # (n, d_k)
        return self.x.T @ d_q

    def directional_check(self, grad: np.ndarray, n_dirs: int = 3, eps: float = 1e-5) -> float:
        """Largest gap between ⟨grad, D⟩ and the central difference (L(W+εD) − L(W−εD)) / 2ε along seeded
        directions D, relative to ‖grad‖·‖D‖ (floored, so that a zero gradient is not divided by 0)."""
        rng = param_rng(0, "pitfall:directions")
        loss = self.forward()[0]
        worst = 0.0
        for _ in range(n_dirs):
            d = rng.standard_normal(self.w_q.shape)
            fd = (self.forward(self.w_q + eps * d)[0] - self.forward(self.w_q - eps * d)[0]) / (2 * eps)
            an = float(np.sum(grad * d))
            scale = max(float(np.linalg.norm(grad) * np.linalg.norm(d)), 1e-4 * (1 + abs(loss)))
            worst = max(worst, abs(an - fd) / scale)
        return worst


def small_attention(trace: Trace) -> SmallAttention:
    h, d_k, d_v = trace.facts["n_heads"], trace.facts["d_k"], trace.facts["d_v"]
    x = trace["x"].value
    g = param_rng(0, "pitfall:G").standard_normal((trace.n, d_v))
    return SmallAttention(x, trace["w_q"].value[:, :d_k], trace["w_k"].value[:, :d_k], trace["w_v"].value[:, :d_v], g)


def one_jacobian(source) -> PitfallResult:
    """dL/dW_Q with the softmax Jacobian built once, from α's first column, and used for every row."""
    trace, _ = _trace(source)
    model = small_attention(trace)
    correct = model.grad_w_q()
    wrong = model.grad_w_q(one_jacobian=True)
    tol = 1e-6
    err_c, err_w = model.directional_check(correct), model.directional_check(wrong)
    size = float(np.linalg.norm(correct))
    rel = (f"{float(np.linalg.norm(wrong - correct)) / size:.3g}× ‖correct‖" if size
           else f"{float(np.linalg.norm(wrong)):.3g} while ‖correct‖ = 0")
    return PitfallResult(correct, wrong, difference(correct, wrong), "gradient matches finite differences of L",
                         err_c < tol, err_w >= tol,
                         f"L = Σ C ∘ G (G fixed, seeded) for C = softmax(Q_0 K_0ᵀ/√d_k) V_0 on your X with head 0's "
                         f"columns of W_Q, W_K, W_V (no mask, no bias, T = 1). Relative gap to central differences "
                         f"along 3 seeded directions: {err_c:.1e} (per-row Jacobians), {err_w:.3g} (one Jacobian); "
                         f"‖wrong − correct‖ is {rel}." + _one_token(trace),
                         ("d_model", "d_k"), "∂L/∂W_Q" + (" (head 0's columns)" if trace.facts["n_heads"] > 1 else ""))


# ---- 7. / √(n·d_k) instead of / √d_k (seed 000) --------------------------------------------------------

def sqrt_len_q(source) -> PitfallResult:
    """Scores divided by sqrt(length(q)): all n·d_k elements of Q, not d_k: the scale depends on n.

    The check appends one token (a copy of the last row of Q and K): a pair's scaled score must
    not change when another word joins the sentence.
    """
    trace, _ = _trace(source)
    q, k = _query_key_rows(trace)                                         # (h?, n, d_k) each
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


def _query_key_rows(trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    """(Q, K) as the scores read them: rotated under RoPE, per head with heads, K repeated so that query head h
    meets KV head ⌊h/g⌋; ((h?, n, d_k), (h?, n, d_k)), without a head axis for one head."""
    if "q_rot" in trace:
        q, k = trace["q_rot"].value, trace["k_rot"].value
    elif trace.facts["n_heads"] > 1:
        q, k = trace["q_heads"].value, trace["k_heads"].value
    else:
        q, k = trace["q"].value, trace["k"].value
    if q.ndim == 3:
        k = expand_kv(k, q.shape[0])
    return q, k


# ---- 8. odd d_model: the sinusoidal encoding's last column left at zero (seed 001) --------------------

def seed_001_encoding(n_positions: int, d_model: int, base: float = 10_000.0) -> np.ndarray:
    """Seed 001's loop: columns 2i and 2i+1 for i < int(d/2), so an odd d leaves the last column 0."""
    pe = np.zeros((n_positions, d_model))
    for p in range(n_positions):
        for i in range(d_model // 2):
            denominator = np.power(base, 2 * i / d_model)
            pe[p, 2 * i] = np.sin(p / denominator)
            pe[p, 2 * i + 1] = np.cos(p / denominator)
    return pe


def odd_pe_zero(source) -> PitfallResult:
    """With an odd width the last column never gets a sine: every position has 0 there.

    Uses the learner's embedding width if it is odd, else one more; at least 2 positions.
    """
    trace, config = _trace(source)
    base = settings_of(trace, config).pe_base
    d = trace["x_embed"].shape[1]
    d_odd = d if d % 2 else d + 1
    n = max(trace.n, 2)
    correct = sinusoidal_encoding(n, d_odd, base)                         # (n, d_odd)
    wrong = seed_001_encoding(n, d_odd, base)
    varies = lambda pe: bool(np.all(np.ptp(pe, axis=0) > 0))
    last = lambda pe: float(np.ptp(pe[:, -1]))
    return PitfallResult(correct, wrong, difference(correct, wrong), "every column changes with position",
                         varies(correct), not varies(wrong),
                         f"d = {d_odd}{'' if d_odd == d else f' (your width {d} is even, so {d_odd} here)'}, "
                         f"{n} positions: the last column ranges over {last(correct):.3g} (a sine of its own "
                         f"frequency) versus {last(wrong):.3g} (never written: no position information there).",
                         ("n", "d_model"), "sinusoidal encoding")


# ---- today's attention: RoPE, ALiBi, windows, the KV cache (docs/notation.md, "Today's attention") ----------

def _heads_of(trace: Trace, name: str) -> np.ndarray:
    """(H, n, d): every head's columns of Q, K or V (one head gets a leading axis of 1)."""
    return trace[f"{name}_heads"].value if trace.facts["n_heads"] > 1 else trace[name].value[None]


def _rotated_heads(trace: Trace, name: str) -> np.ndarray:
    """(H, n, d): Q^R or K^R per head, as RoPE's forward pass caches and scores them (one head: a leading 1)."""
    value = trace[f"{name}_rot"].value
    return value if value.ndim == 3 else value[None]


def _one_head_squeezed(a: np.ndarray, trace: Trace) -> np.ndarray:
    """Drop the head axis again with one head, as the forward pass's own steps have none."""
    return a if trace.facts["n_heads"] > 1 else a[0]


def _count(k: int, word: str) -> str:
    """'1 key', '3 keys'."""
    return f"{k} {word}{'' if k == 1 else 's'}"


def _power(m: float) -> str:
    """A slope 2^−x written as the paper writes it: 2^−1.5."""
    return f"2^−{-math.log2(m):g}"


# ---- 9. ALiBi slopes without [0::2] ---------------------------------------------------------------------

ALIBI_HEADS_SHOWN = 12          # the brief's and the paper's non-power-of-two example when the learner's H is not one


def alibi_slopes_without_step(n_heads: int) -> np.ndarray:
    """The mistake: the H − c extra heads take the first H − c slopes of the 2c-head sequence, not every other one."""
    c = 2 ** int(math.floor(math.log2(n_heads)))
    slopes = [2.0 ** (-8.0 * h / c) for h in range(1, c + 1)]
    slopes += [2.0 ** (-8.0 * h / (2 * c)) for h in range(1, 2 * c + 1)][: n_heads - c]      # no [0::2]
    return np.array(slopes)


def _alibi_heads(n_heads: int) -> int:
    """The learner's H when the mistake changes a slope there (H − c ≥ 2), else 12."""
    c = 2 ** int(math.floor(math.log2(n_heads)))
    return n_heads if n_heads - c >= 2 else ALIBI_HEADS_SHOWN


def alibi_no_step(source) -> PitfallResult:
    """ALiBi's slopes for H not a power of two without the reference code's [0::2].

    Shown on the last query of the learner's sentence (causal: it sees every key): ALiBi head h adds
    −m_h·(i − j) to Q Kᵀ/√d_k of the learner's head h mod H. Heads counted from 0.
    """
    trace, _ = _trace(source)
    from ..math.alibi import alibi_slopes
    h_learner = trace.facts["n_heads"]
    n_alibi = _alibi_heads(h_learner)
    right, bad = alibi_slopes(n_alibi), alibi_slopes_without_step(n_alibi)          # (H,), m_0 … m_{H−1}
    q = _heads_of(trace, "q")                                                       # (H_learner, n, d_k)
    k = expand_kv(_heads_of(trace, "k"), h_learner)                                 # head h reads KV head ⌊h/g⌋
    n, d_k = q.shape[1], q.shape[2]
    which = np.arange(n_alibi) % h_learner                                          # ALiBi head h reads head h mod H
    s = np.einsum("hd,hjd->hj", q[which, -1], k[which]) / np.sqrt(d_k)              # (H, n): q_{n−1} Kᵀ/√d_k
    distance = (n - 1) - np.arange(n)                                                # i − j for i = n − 1
    correct = att.softmax(s - right[:, None] * distance)                            # (H, n_k)
    wrong = att.softmax(s - bad[:, None] * distance)
    distinct = lambda m: len(set(m.tolist())) == len(m)
    c = 2 ** int(math.floor(math.log2(n_alibi)))
    repeats = [f"m_{h} = {_power(bad[h])} is head {int(np.flatnonzero(bad[:h] == bad[h])[0])}'s slope"
               for h in range(c, n_alibi) if bad[h] in bad[:h]]
    which_h = (f"your H = {h_learner}" if n_alibi == h_learner else
               f"H = {n_alibi} ALiBi heads (your H = {h_learner} {'is a power of two' if h_learner == 2 ** int(math.log2(h_learner)) else 'has one head past a power of two'}, "
               f"where the two agree)")
    return PitfallResult(correct, wrong, difference(correct, wrong), "every head has its own slope",
                         distinct(right),
                         not distinct(bad),
                         f"{which_h}: c = {c}, and heads {c} … {n_alibi - 1} get "
                         f"{', '.join(_power(m) for m in right[c:])} with [0::2] (every slope distinct), "
                         f"{', '.join(_power(m) for m in bad[c:])} without: {'; '.join(repeats)}, so those heads "
                         f"look exactly as far back as an earlier one, and the small slopes "
                         f"{', '.join(_power(m) for m in right[c:] if m not in bad)} (heads that look far back) are "
                         f"missing. Weights of the last query ({_count(n, 'key')}) for each ALiBi head h: "
                         f"softmax(q Kᵀ/√d_k − m_h·(i − j)) with the Q and K of your head "
                         f"{'h mod ' + str(h_learner) if h_learner > 1 else '0'}.",
                         ("ALiBi head h", "n_k"), f"weights A_h of the last token with ALiBi (H = {n_alibi})")


# ---- 10. RoPE pairing mismatched with the weights ------------------------------------------------------

def rope_pairing(source) -> PitfallResult:
    """Weights converted for the half pairing (W_Q, W_K columns permuted) used with the interleaved rotation.

    The learner's head-0 Q and K play the projections of a rotary model with interleaved pairs (Meta's
    Llama code); their columns permuted by half_permutation are the converted checkpoint (Hugging Face's).
    """
    from ..math.rope import half_permutation, rotary_embedding
    trace, _ = _trace(source)
    q, k = _heads_of(trace, "q")[0], _heads_of(trace, "k")[0]                       # (n, d_k): head 0
    d_k = q.shape[1]
    if d_k % 2:                                          # RoPE rotates pairs: an odd width loses its last column
        q, k = (np.pad(a, ((0, 0), (0, 1))) if d_k == 1 else a[:, :-1] for a in (q, k))
    d = q.shape[1]
    perm = half_permutation(d)
    scores = lambda a, b, pairing: rotary_embedding(a, pairing=pairing) @ rotary_embedding(b, pairing=pairing).T \
        / np.sqrt(d)                                                                # (n, n): Ŝ of the rotated rows
    original = scores(q, k, "interleaved")                                          # the model as trained
    correct = scores(q[:, perm], k[:, perm], "half")                                # converted weights, half pairing
    wrong = scores(q[:, perm], k[:, perm], "interleaved")                           # converted weights, interleaved
    tol = 1e-9 * max(1.0, float(np.abs(original).max()))
    gap_c, gap_w = float(np.abs(correct - original).max()), float(np.abs(wrong - original).max())
    width = "" if d == d_k else (f" (RoPE needs an even width: your d_k = {d_k}, so "
                                 + ("one zero column is added)" if d_k == 1 else f"its first {d} columns)"))
    same = (" With d = 2 there is one pair and both pairings are the same: the two versions coincide."
            if d == 2 else "")
    return PitfallResult(correct, wrong, difference(correct, wrong), "the scores equal the original model's",
                         gap_c <= tol, gap_w > tol,
                         f"Head 0's Q and K{width} as a rotary model with interleaved pairs; its converted weights "
                         f"permute the columns by {perm.tolist()}. Largest |Ŝ − original Ŝ|: {gap_c:.1e} with the "
                         f"half pairing, {gap_w:.3g} with the interleaved one. Both are still functions of i − j "
                         f"only, so nothing looks broken: only a comparison with the original model catches it."
                         + same + (" With one token there is only position 0, which RoPE leaves unrotated: the "
                                   "two versions coincide." if trace.n == 1 else ""),
                         ("n_q", "n_k"), "scaled scores Ŝ = Q^R K^R⊤ / √d_k of head 0 (RoPE, base 10,000)")


# ---- 11. is_causal=True with fewer queries than keys ----------------------------------------------------

def causal_upper_left(source) -> PitfallResult:
    """One new query against n cached keys with torch's is_causal=True: the mask is aligned to the upper left.

    torch builds it as torch.ones(L, S).tril(): query 0 of the L new ones sees key 0 only. The new token t = n − 1
    must see keys 0 … t: the lower-right alignment, tril(diagonal = S − L).
    """
    trace, _ = _trace(source)
    rope = "q_rot" in trace
    q, k = (_rotated_heads(trace, "q"), _rotated_heads(trace, "k")) if rope else (_heads_of(trace, "q"), _heads_of(trace, "k"))
    k = expand_kv(k, q.shape[0])                                                    # (H, n, d_k): head h reads KV head ⌊h/g⌋
    n, d_k = q.shape[1], q.shape[2]
    s = q[:, -1:] @ np.swapaxes(k, -1, -2) / np.sqrt(d_k)                           # (H, 1, n): the new query's Ŝ
    lower_right = np.tril(np.ones((1, n), bool), k=n - 1)                           # sees keys 0 … n − 1
    upper_left = np.tril(np.ones((1, n), bool))                                     # is_causal=True: key 0 only
    correct = att.softmax(att.apply_mask(s, lower_right))[:, 0]                      # (H, n)
    wrong = att.softmax(att.apply_mask(s, upper_left))[:, 0]
    word = trace.tokens[-1]
    return PitfallResult(_one_head_squeezed(correct, trace), _one_head_squeezed(wrong, trace),
                         difference(correct, wrong), f"the new token t = {n - 1} sees every key 0 … {n - 1}",
                         bool(lower_right.all()), not bool(upper_left.all()),
                         f"L = 1 new query (token t = {n - 1}, “{word}”) against S = {_count(n, 'key')} in the cache. "
                         f"Lower-right mask: {_count(int(lower_right.sum()), 'key')} visible, weight on key 0 "
                         f"{float(correct[:, 0].max()):.3g}{' (largest over the heads)' if len(q) > 1 else ''}. "
                         f"is_causal=True: {int(upper_left.sum())} key visible, so all the weight, 1, goes to key 0 "
                         f"and the output is token 0's value whatever the sentence says."
                         + (" With one token the cache is the token itself: the two versions coincide."
                            if n == 1 else ""),
                         (("head",) if len(q) > 1 else ()) + ("n_k",),
                         f"weights of the new token t = {n - 1} over the cached keys, softmax(q{'^R' if rope else ''}_t "
                         f"K{'^R' if rope else ''}ᵀ/√d_k)" + (", query head h reading KV head ⌊h/g⌋"
                                                             if trace.facts.get("n_kv_heads", len(q)) < len(q) else ""))


# ---- 12. a window of W keys read as W + 1 ---------------------------------------------------------------

def window_w_plus_one(source) -> PitfallResult:
    """The sliding window 0 ≤ i − j < W (W keys: Hugging Face's, flash-attn's) written as i − j ≤ W (W + 1 keys:
    Mistral's paper's reading, and PyTorch's flex-attention example's).

    W is half the learner's tokens (at least 1), so that the window cuts; the weights are softmax(Q_h K_hᵀ/√d_k)
    (Q^R, K^R under RoPE), query head h reading KV head ⌊h/g⌋.
    """
    trace, _ = _trace(source)
    rope = "q_rot" in trace
    q, k = (_rotated_heads(trace, "q"), _rotated_heads(trace, "k")) if rope else (_heads_of(trace, "q"), _heads_of(trace, "k"))
    k = expand_kv(k, q.shape[0])                                                    # (H, n, d_k): head h reads ⌊h/g⌋
    n, d_k = q.shape[1], q.shape[2]
    w = max(1, n // 2)
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(d_k)                                   # (H, n, n)
    right, bad = att.sliding_window_mask(n, w), att.sliding_window_mask(n, w + 1)   # i − j < W; i − j ≤ W
    correct = att.softmax(att.apply_mask(s, right))
    wrong = att.softmax(att.apply_mask(s, bad))
    extra = bad & ~right                                                            # the key j = i − W
    r = "^R" if rope else ""
    kv = "⌊h/g⌋" if trace.facts.get("n_kv_heads", len(q)) < len(q) else "h"         # query head h's KV head
    seen_c, seen_w = int(right.sum(axis=1).max()), int(bad.sum(axis=1).max())
    rows = np.flatnonzero(extra.any(axis=1))
    return PitfallResult(_one_head_squeezed(correct, trace), _one_head_squeezed(wrong, trace),
                         difference(correct, wrong), f"each query sees at most W = {_count(w, 'key')}, itself included",
                         seen_c <= w, seen_w > w,
                         f"W = {w} (half your {_count(n, 'token')}, at least 1). 0 ≤ i − j < W: at most "
                         f"{_count(seen_c, 'key')} per query. i − j ≤ W: {seen_w}"
                         + (f" for queries {rows[0]} … {rows[-1]}, whose extra key j = i − {w} takes weight up to "
                            f"{float(wrong[:, extra].max()):.3g}." if rows.size else
                            " as well: with one token there is no key before the query, so the two versions "
                            "coincide."),
                         trace["weights"].axes,
                         f"weights softmax(Q{r}_h K{r}_{kv}ᵀ/√d_k) with a sliding window of W = {_count(w, 'key')}")


# ---- 13. a latent KV cache multiplied by 2 --------------------------------------------------------------

DEEPSEEK_V3 = {"layers": 61, "latent": 512, "rope_key": 64, "bytes": 2}   # config.json: kv_lora_rank, qk_rope_head_dim; BF16


def latent_cache_bytes_per_token(layers: int, latent: int, rope_key: int, bytes_per_value: int) -> int:
    """MLA caches (d_c + d_h^R) values per layer per token (DeepSeek-V2's Table 1): the latent c_KV and one RoPE key."""
    return layers * (latent + rope_key) * bytes_per_value


def latent_cache_x2(source) -> PitfallResult:
    """DeepSeek-V3's cache with the ×2 of the K-and-V formula: its latent serves as both, it is stored once."""
    trace, _ = _trace(source)
    n = trace.n
    v3 = DEEPSEEK_V3
    per_token = latent_cache_bytes_per_token(v3["layers"], v3["latent"], v3["rope_key"], v3["bytes"])
    per_token_x2 = 2 * per_token                                                    # the K-and-V formula's 2 ·
    tokens = np.arange(1, n + 1)                                                    # the cache after tokens 0 … t
    correct, wrong = tokens * per_token / 1024, tokens * per_token_x2 / 1024         # (n,) KiB
    paper = (v3["latent"] + v3["rope_key"]) * v3["layers"] * v3["bytes"]            # (d_c + d_h^R)·l elements
    context = 131_072
    gib = lambda b: b * context / 2 ** 30
    mha = v3["layers"] * 128 * (192 + 128) * v3["bytes"]                            # 128 heads, K 192 wide, V 128
    return PitfallResult(correct, wrong, difference(correct, wrong),
                         "bytes per token = layers · (d_c + d_h^R) · bytes, the papers' (d_c + d_h^R)·l values",
                         per_token == paper, per_token_x2 != paper,
                         f"Per token: {v3['layers']} layers × ({v3['latent']} + {v3['rope_key']}) values × "
                         f"{v3['bytes']} bytes (BF16) = {per_token:,} bytes = {per_token / 1024:.1f} KiB; ×2 gives "
                         f"{per_token_x2 / 1024:.1f} KiB. Your {_count(n, 'token')}: {correct[-1]:.1f} KiB, not "
                         f"{wrong[-1]:.1f}. At the full 128K context ({context:,} tokens): {gib(per_token):.2f} GiB, "
                         f"not {gib(per_token_x2):.2f} GiB. (Caching full K and V of its 128 heads, K 192 and V 128 "
                         f"wide, would take {mha / 2 ** 20:.2f} MiB per token.)",
                         ("n",), "DeepSeek-V3's KV cache after each of your tokens, KiB (BF16)")


PITFALLS: tuple[Pitfall, ...] = (
    Pitfall("softmax_axis", "Softmax over the wrong axis", "common",
            "softmax({arg}, axis=−2) normalises each key's column over the queries (axis −2 is the query axis; "
            "written axis=0 it is the same only without heads: with heads, axis 0 is the head axis). Each query's "
            "row, its distribution over the keys, must be normalised: softmax({arg}, axis=−1).",
            _labelled(softmax_axis)),
    Pitfall("no_scaling", "No √d_k scaling at large d_k", "common",
            "Dot products of d_k-wide vectors with independent random components have a spread growing like "
            "√d_k; unscaled, a large d_k pushes softmax towards one-hot rows, whose gradients vanish. "
            "Divide by √d_k.",
            _labelled(no_scaling)),
    Pitfall("neg_inf_nan", "−∞ mask, fully masked row, NaN", "common",
            "Masking with −∞ is right, but a query with every key hidden then feeds a row of −∞ to softmax; "
            "exp(−∞ − (−∞)) is NaN and it spreads. A safe softmax returns zeros for such a row.",
            _labelled(neg_inf_nan)),
    Pitfall("dropout_at_inference", "Dropout left on at inference", "002",
            "F.dropout(alpha, p=0.1) without training=self.training drops attention weights at inference too: "
            "rows stop summing to 1 and the same input gives different outputs.",
            _labelled(dropout_at_inference)),
    Pitfall("scores_times_v", "Scores @ V instead of weights @ V", "001",
            "context = scores @ values skips the softmax: {scores} V mixes the values with the scores "
            "themselves, signed and unnormalised. It must be the weights: C = A V with A = softmax({arg}).",
            _labelled(scores_times_v)),
    Pitfall("one_jacobian", "One softmax Jacobian for every row", "000",
            "The tutorial builds the softmax Jacobian diag(α) − ααᵀ once, from α[j] (Julia's linear indexing "
            "makes it the first column of the weights A), and uses it for every row. Each row A_i is its own "
            "softmax and needs its own diag(A_i) − A_i A_iᵀ.",
            _labelled(one_jacobian)),
    Pitfall("sqrt_len_q", "Dividing by √(n·d_k) instead of √d_k", "000",
            "sqrt(length(q)) counts every element of Q, n·d_k, not the key width d_k: the scaling then "
            "depends on the sentence length.",
            _labelled(sqrt_len_q)),
    Pitfall("odd_pe_zero", "Odd width: the last encoding column stays 0", "001",
            "The loop over i < int(d/2) writes columns 2i and 2i+1 only; with an odd d the last column is never "
            "written. Give column j the frequency of pair ⌊j/2⌋ (a sine for even j, a cosine for odd j).",
            _labelled(odd_pe_zero)),
    Pitfall("alibi_no_step", "ALiBi slopes without [0::2]", "common",
            "For H heads, H not a power of two, ALiBi takes the slopes m_h of the c = 2^⌊log₂ H⌋ heads of the "
            "nearest power of two, then for the H − c heads left every other slope of the 2c-head sequence: "
            "the reference code's `[0::2][:H − c]`. Without `[0::2]` the first H − c are taken instead, and every "
            "second one of them is a slope an earlier head already has (for H = 12: heads 9 and 11 get 2^−1 and "
            "2^−2, the slopes of heads 0 and 1).",
            _labelled(alibi_no_step)),
    Pitfall("rope_pairing", "RoPE pairing mismatched with the weights", "common",
            "RoPE rotates pairs of columns of Q and K: columns 2i and 2i + 1 in Meta's Llama code, columns i and "
            "i + d/2 in Hugging Face's rotate_half. A checkpoint converted from one to the other permutes the columns of W_Q "
            "and W_K; used with the other rotation, every pair mixes two columns that were never a pair, and the "
            "scores Ŝ = Q^R K^R⊤ / √d_k change. The rotation must be the one the weights were converted for.",
            _labelled(rope_pairing)),
    Pitfall("causal_upper_left", "is_causal=True with fewer queries than keys", "common",
            "Decoding with a KV cache feeds one new query (L = 1) against all S cached keys. torch's "
            "scaled_dot_product_attention(q, k, v, is_causal=True) builds its mask as torch.ones(L, S).tril(), "
            "aligned to the upper left: the new token sees key 0 only. Query t must see keys 0 … t: the mask "
            "aligned to the lower right, tril(diagonal = S − L) (torch.nn.attention.bias.causal_lower_right), or, "
            "for a single new token and no sliding window, no mask at all.",
            _labelled(causal_upper_left)),
    Pitfall("window_w_plus_one", "A window of W keys read as W + 1", "common",
            "A sliding window of W keys lets query i see keys j with 0 ≤ i − j < W: itself and the W − 1 tokens "
            "before it (Hugging Face transformers keeps key j when j > i − W, flash-attn takes W − 1 keys to the "
            "left; this app's window too). Mistral's paper writes the window as positions i − W … i, and PyTorch's "
            "own sliding-window example for its flexible attention keeps a key when i − j ≤ W: W + 1 keys. Mixing "
            "the two readings, e.g. i − j ≤ W for a model trained with W keys, gives every query from i = W on one "
            "key too many.",
            _labelled(window_w_plus_one)),
    Pitfall("latent_cache_x2", "A latent KV cache multiplied by 2", "common",
            "The usual cache size, 2 · layers · H_kv · d_head values per token, counts K and V. DeepSeek-V3's "
            "multi-head latent attention caches neither: per layer it keeps one latent vector c_KV (512 values), "
            "from which both K and V are expanded, and one shared RoPE key (64 values): 61 layers × 576 values "
            "per token. Multiplying by 2 counts the latent twice.",
            _labelled(latent_cache_x2)),
)
FROM_TUTORIALS: tuple[Pitfall, ...] = tuple(p for p in PITFALLS if p.tutorial is not None)
PITFALLS_BY_KEY: dict[str, Pitfall] = {p.key: p for p in PITFALLS}
