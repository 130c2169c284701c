"""Mistakes in where position comes in: the sinusoidal encoding's last column left at zero for an odd width,
ALiBi's slopes without the reference code's [0::2], and RoPE's pairing mismatched with converted weights.

    >>> alibi_slopes_without_step(12)[8:].tolist() == [2 ** -0.5, 2 ** -1, 2 ** -1.5, 2 ** -2]   # 9, 11 repeat 0, 1
    True
"""
from __future__ import annotations

import math

import numpy as np

from ...explanations import settings_of
from ...math import attention as att
from ...math.gqa import expand_kv
from ...math.positional import sinusoidal_encoding
from .base import PitfallResult, count, difference, heads_of, pitfall, power, trace_of


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


@pitfall("Odd width: the last encoding column stays 0", "001",
         "The loop over i < int(d/2) writes columns 2i and 2i+1 only; with an odd d the last column is never "
         "written. Give column j the frequency of pair ⌊j/2⌋ (a sine for even j, a cosine for odd j).")
def odd_pe_zero(source) -> PitfallResult:
    """With an odd width the last column never gets a sine: every position has 0 there.

    Uses the learner's embedding width if it is odd, else one more; at least 2 positions.
    """
    trace, config = trace_of(source)
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


@pitfall("ALiBi slopes without [0::2]", "common",
         "For H heads, H not a power of two, ALiBi takes the slopes m_h of the c = 2^⌊log₂ H⌋ heads of the "
         "nearest power of two, then for the H − c heads left every other slope of the 2c-head sequence: "
         "the reference code's `[0::2][:H − c]`. Without `[0::2]` the first H − c are taken instead, and every "
         "second one of them is a slope an earlier head already has (for H = 12: heads 9 and 11 get 2^−1 and "
         "2^−2, the slopes of heads 0 and 1).")
def alibi_no_step(source) -> PitfallResult:
    """ALiBi's slopes for H not a power of two without the reference code's [0::2].

    Shown on the last query of the learner's sentence (causal: it sees every key): ALiBi head h adds
    −m_h·(i − j) to Q Kᵀ/√d_k of the learner's head h mod H. Heads counted from 0.
    """
    trace, _ = trace_of(source)
    from ...math.alibi import alibi_slopes
    h_learner = trace.facts["n_heads"]
    n_alibi = _alibi_heads(h_learner)
    right, bad = alibi_slopes(n_alibi), alibi_slopes_without_step(n_alibi)          # (H,), m_0 … m_{H−1}
    q = heads_of(trace, "q")                                                       # (H_learner, n, d_k)
    k = expand_kv(heads_of(trace, "k"), h_learner)                                 # head h reads KV head ⌊h/g⌋
    n, d_k = q.shape[1], q.shape[2]
    which = np.arange(n_alibi) % h_learner                                          # ALiBi head h reads head h mod H
    s = np.einsum("hd,hjd->hj", q[which, -1], k[which]) / np.sqrt(d_k)              # (H, n): q_{n−1} Kᵀ/√d_k
    distance = (n - 1) - np.arange(n)                                                # i − j for i = n − 1
    correct = att.softmax(s - right[:, None] * distance)                            # (H, n_k)
    wrong = att.softmax(s - bad[:, None] * distance)
    distinct = lambda m: len(set(m.tolist())) == len(m)
    c = 2 ** int(math.floor(math.log2(n_alibi)))
    repeats = [f"m_{h} = {power(bad[h])} is head {int(np.flatnonzero(bad[:h] == bad[h])[0])}'s slope"
               for h in range(c, n_alibi) if bad[h] in bad[:h]]
    which_h = (f"your H = {h_learner}" if n_alibi == h_learner else
               f"H = {n_alibi} ALiBi heads (your H = {h_learner} {'is a power of two' if h_learner == 2 ** int(math.log2(h_learner)) else 'has one head past a power of two'}, "
               f"where the two agree)")
    return PitfallResult(correct, wrong, difference(correct, wrong), "every head has its own slope",
                         distinct(right),
                         not distinct(bad),
                         f"{which_h}: c = {c}, and heads {c} … {n_alibi - 1} get "
                         f"{', '.join(power(m) for m in right[c:])} with [0::2] (every slope distinct), "
                         f"{', '.join(power(m) for m in bad[c:])} without: {'; '.join(repeats)}, so those heads "
                         f"look exactly as far back as an earlier one, and the small slopes "
                         f"{', '.join(power(m) for m in right[c:] if m not in bad)} (heads that look far back) are "
                         f"missing. Weights of the last query ({count(n, 'key')}) for each ALiBi head h: "
                         f"softmax(q Kᵀ/√d_k − m_h·(i − j)) with the Q and K of your head "
                         f"{'h mod ' + str(h_learner) if h_learner > 1 else '0'}.",
                         ("ALiBi head h", "n_k"), f"weights A_h of the last token with ALiBi (H = {n_alibi})")


# ---- 10. RoPE pairing mismatched with the weights ------------------------------------------------------

@pitfall("RoPE pairing mismatched with the weights", "common",
         "RoPE rotates pairs of columns of Q and K: columns 2i and 2i + 1 in Meta's Llama code, columns i and "
         "i + d/2 in Hugging Face's rotate_half. A checkpoint converted from one to the other permutes the columns of W_Q "
         "and W_K; used with the other rotation, every pair mixes two columns that were never a pair, and the "
         "scores Ŝ = Q^R K^R⊤ / √d_k change. The rotation must be the one the weights were converted for.")
def rope_pairing(source) -> PitfallResult:
    """Weights converted for the half pairing (W_Q, W_K columns permuted) used with the interleaved rotation.

    The learner's head-0 Q and K play the projections of a rotary model with interleaved pairs (Meta's
    Llama code); their columns permuted by half_permutation are the converted checkpoint (Hugging Face's).
    """
    from ...math.rope import half_permutation, rotary_embedding
    trace, _ = trace_of(source)
    q, k = heads_of(trace, "q")[0], heads_of(trace, "k")[0]                       # (n, d_k): head 0
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
