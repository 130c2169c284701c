"""The next token's explainers: each cell's formula, the live numbers put in, and the value recomputed from them.

    z_j = Σ_m N_f(X_2)_{n−1,m} W_U[m, j]      (z_j − max z) / T      p_j = e^{(z_j − max z)/T} / Σ_i e^{(z_i − max z)/T}
    kept_j (top-k and top-p recomputed: the k-th largest z, top-p's order and the mass ahead of j)
    p′_j = p_j / Σ_{kept} p_i        F_j = Σ_{i ≤ j} p′_i
    the sample (the first j with F_j > u)              A_{h,n−1,j} = e^{S̃_j − max S̃} / Σ_i e^{S̃_i − max S̃}
"""
from __future__ import annotations

import math

import numpy as np

from ...explanations import Context, Explanation, fmt, join_terms, register, softmax_fraction
from ...math.sampling import TOP_P_TOLERANCE
from .trace import KIND


def _n(v) -> str:
    return fmt(v, 3)


def _t(v) -> str:
    return fmt(v, 3, latex=False)


def _p(v) -> str:
    return f"({_n(v)})" if float(v) < 0 or r"\times" in _n(v) else _n(v)


def _word(ctx: Context, j: int) -> str:
    """Token j's word in quotes, or what it is when no word of the sentence was given to it."""
    f = ctx.trace.facts
    return f"“{f['labels'][j]}”" if j < len(f.get("words", f["labels"])) else "no word of the sentence"


def _out(key, cell, lhs, lhs_text, sym, shown, text_sym, text_shown, value, note, reads=(), n_terms=0, hidden=0):
    return Explanation(key, cell, f"{lhs} = {sym}", shown, f"{lhs} = {_n(value)}", float(value),
                       f"{lhs_text} = {text_sym}\n  = {text_shown}\n  = {_t(value)}", note=note, n_terms=n_terms,
                       n_elided=hidden, reads=tuple(reads))


@register("logits", kind=KIND)
def _logit(ctx: Context, cell) -> Explanation:
    (j,) = cell
    h, w = ctx.value("h"), ctx.value("w_u")[:, j]
    terms = [rf"{_p(h[m])} \cdot {_p(w[m])}" for m in range(h.size)]
    terms_text = [f"{_t(h[m])}·{_t(w[m])}" for m in range(h.size)]
    shown, hidden = join_terms(terms)
    shown_text, _ = join_terms(terms_text, latex=False)
    value = math.fsum(float(h[m]) * float(w[m]) for m in range(h.size))
    return _out("logits", cell, f"z_{{{j}}}", f"z_{j}",
                rf"\sum_{{m=0}}^{{{h.size - 1}}} N_f(X_2)_{{n-1,\,m}}\, (W_U)_{{m,{j}}}",
                shown, f"Σ_m N_f(X_2)[n−1,m] W_U[m,{j}]", shown_text, value,
                f"Token {j} ({_word(ctx, j)}): the last position's row after the final norm, N_f(X_2)_(n−1), "
                f"against W_U's column {j}.",
                [("h", (m,)) for m in range(h.size)] + [("w_u", (m, j)) for m in range(h.size)], h.size, hidden)


def _over_t(d: float, T: float) -> float:
    """(z_j − max z) / T, d ≤ 0 and T > 0, divided as Python's floats divide (IEEE, no warning): −∞ where the
    quotient lies below float64's range (|d| / T > 1.8e308)."""
    return d / T


@register("scaled", kind=KIND)
def _scaled(ctx: Context, cell) -> Explanation:
    (j,) = cell
    z, T = ctx.value("logits"), ctx.trace.facts["temperature"]
    if T == 0:
        return _out("scaled", cell, f"z_{{{j}}}", f"z_{j}", f"z_{{{j}}}", _n(z[j]), f"z_{j}", _t(z[j]), float(z[j]),
                    "T = 0: nothing is divided; the next token is the argmax of z.", [("logits", (j,))])
    top = float(z.max())
    value = _over_t(float(z[j]) - top, T)
    below = math.isinf(value)
    return _out("scaled", cell, rf"(z_{{{j}}} - \max z) / T", f"(z_{j} − max z) / T",
                rf"\frac{{z_{{{j}}} - \max z}}{{T}}",
                rf"\frac{{{_n(z[j])} - {_p(top)}}}{{{fmt(T, 4)}}}", f"(z_{j} − max z) / T",
                f"({_t(z[j])} − {_t(top)}) / {T:g}", value,
                "The temperature divides the logits before softmax (after softmax it would change nothing). The "
                "largest logit is taken away first: softmax is the same with or without it, and the largest entry "
                "becomes 0, so no exponential overflows however small T is."
                + (" This quotient lies below the most negative number a 64-bit float holds (−1.8 × 10³⁰⁸), so it is −∞: "
                   "its exponential is 0, as it would be anyway." if below else ""),
                [("logits", (i,)) for i in range(z.size)])


@register("probs", kind=KIND)
def _prob(ctx: Context, cell) -> Explanation:
    (j,) = cell
    f, z = ctx.trace.facts, ctx.value("logits")
    T = f["temperature"]
    if T == 0:
        top = int(np.argmax(z))
        return _out("probs", cell, f"p_{{{j}}}", f"p_{j}", rf"[\,{j} = \arg\max_i z_i = {top}\,]",
                    "1" if j == top else "0", f"[{j} = argmax z = {top}]", str(int(j == top)), float(j == top),
                    "T = 0 is greedy decoding: all the probability on the largest logit (on the first of them, the "
                    "lowest token number, if several tie).", [("logits", (i,)) for i in range(z.size)])
    s = ctx.value("scaled")
    x = [_over_t(float(v) - float(z.max()), T) for v in z]     # (z_i − max z) / T, recomputed from z
    e = [math.exp(v) for v in x]
    total = math.fsum(e)
    exps = [rf"e^{{{_n(v)}}}" for v in x]
    exps_text = [f"e^({_t(v)})" for v in x]
    shown, text, hidden = softmax_fraction(ctx, exps, exps_text, e, j, total, masked=[False] * len(x))
    ties = sum(v == 0 for v in x)
    return _out("probs", cell, f"p_{{{j}}}", f"p_{j}",
                rf"\frac{{e^{{(z_{{{j}}} - \max z)/T}}}}{{\sum_{{i=0}}^{{{z.size - 1}}} e^{{(z_i - \max z)/T}}}}", shown,
                f"e^((z_{j} − max z)/T) / Σ_i e^((z_i − max z)/T)", text, e[j] / total,
                f"Token {j} ({_word(ctx, j)}): its exponential over the sum of all {z.size}. The largest logit, "
                f"max z = {_t(z.max())}, is taken away before dividing by T = {T:g}: it cancels, and the largest "
                "term becomes e⁰ = 1, so no exponential overflows."
                + _underflow(x, e, ties),
                [("scaled", (i,)) for i in range(s.size)], s.size, hidden)


def _underflow(x: list[float], e: list[float], ties: int) -> str:
    """What a tiny T does to the exponentials, said only when some underflow to 0: all the probability on the
    largest logit(s) only when every other e^(…) is exactly 0, else how many still hold a share, however small."""
    zero = sum(v == 0.0 for v in e)
    if not zero:
        return ""
    rest = len(e) - zero - ties
    top = "largest logit takes" if ties == 1 else f"{ties} tied largest logits share"
    if rest == 0:
        return (f" T is so small that every logit more than about 745·T below the largest has e^(…) = 0: the {top} "
                "all the probability.")
    small = max(v for v in e if 0 < v < 1)
    return (f" T is so small that the {zero} logit{'s' if zero > 1 else ''} more than about 745·T "
            "below the largest get e^(…) = 0 exactly; the other "
            f"{rest} below it keep a share, however small (the largest of them e^(…) = {small:.3g}), so the "
            f"{top.replace('takes', 'takes almost').replace('share', 'share almost')} all the probability.")


def _mass(v: float, top_p: float, stays: bool, hold: str = "hold") -> str:
    """The mass ahead of a token against p_top, in words, with the digits the comparison needs."""
    shown = f"{v:.12g}" if abs(v - top_p) < 5e-5 else f"{v:.4f}"
    if stays:
        return f"{hold} {shown} < p_top = {top_p:g}, so the kept set has not reached p_top yet: it stays"
    if v < top_p:
        return (f"{hold} {v:.17g}, which is p_top = {top_p:g} up to rounding ({top_p - v:.1g} short, within the "
                "10⁻¹² allowed for rounding), so the kept set reached p_top before it: it is dropped")
    return f"{hold} {shown} ≥ p_top = {top_p:g}, so the kept set reached p_top before it: it is dropped"


def _ordinal(r: int) -> str:
    return f"{r}{'th' if 10 <= r % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(r % 10, 'th')}"


@register("kept", kind=KIND)
def _kept(ctx: Context, cell) -> Explanation:
    """Both filters recomputed from z and p: the k-th largest logit, then top-p's order of p̃ (p renormalised over
    what top-k kept; equal p̃ by token number) and the mass ahead of j, summed exactly (math.fsum)."""
    (j,) = cell
    f, z, p = ctx.trace.facts, ctx.value("logits"), ctx.value("probs")
    k, top_p, T, n = f["k"], f["p"], f["temperature"], z.size
    rank = int((z > z[j]).sum()) + 1
    if T == 0:
        by_k = by_p = bool(p[j] > 0)
        why = "T = 0: only the argmax stays."
    else:
        kth = float(np.sort(z)[::-1][k - 1]) if 0 < k < n else -math.inf
        in_k = z >= kth
        by_k = bool(in_k[j])
        after_k = np.where(in_k, p, 0.0)
        after_k = after_k / after_k.sum()
        order = sorted(range(n), key=lambda i: (-after_k[i], i))
        r = order.index(j)
        ahead = math.fsum(float(after_k[i]) for i in order[:r])
        by_p = top_p >= 1 or r == 0 or ahead < top_p - TOP_P_TOLERANCE
        k_text = ("top-k is off" if k == 0 or k >= n else
                  f"its logit is number {rank} of {n}, {'within' if by_k else 'outside'} the top k = {k}")
        if top_p >= 1:
            p_text = "top-p is off (p_top = 1)"
        elif not by_k:
            p_text = "dropped by top-k first"
        elif r == 0:
            p_text = ("it comes first in top-p's order (by p̃, p renormalised over what top-k kept, largest first), "
                      "and the first token always stays")
        else:
            tie = sum(1 for i in order[:r] if after_k[i] == after_k[j])
            p_text = (f"in top-p's order (by p̃, p renormalised over what top-k kept, largest first; equal p̃ by "
                      f"token number, the lower first) it comes {_ordinal(r + 1)}"
                      + (f", after {tie} token{'s' if tie > 1 else ''} of the same p̃ with a lower number" if tie else "")
                      + (f"; the {r} tokens ahead of it " if r > 1 else "; the token ahead of it ")
                      + _mass(ahead, top_p, by_p, "hold" if r > 1 else "holds"))
        why = f"{k_text}; {p_text}."
    value = float(by_k and by_p)
    return _out("kept", cell, rf"\text{{kept}}_{{{j}}}", f"kept_{j}", r"[\text{top-}k] \cdot [\text{top-}p]",
                rf"{int(by_k)} \cdot {int(by_p)}", "[top-k]·[top-p]", f"{int(by_k)}·{int(by_p)}", value,
                f"Token {j} ({_word(ctx, j)}): {why}", [("logits", (j,)), ("probs", (j,))])


@register("renormalised", kind=KIND)
def _renormalised(ctx: Context, cell) -> Explanation:
    (j,) = cell
    p, kept = ctx.value("probs"), ctx.value("kept")
    idx = [i for i in range(p.size) if kept[i]]
    total = math.fsum(float(p[i]) for i in idx)
    den, hidden = join_terms([_n(p[i]) for i in idx])
    den_text, _ = join_terms([_t(p[i]) for i in idx], latex=False)
    value = float(p[j]) * float(kept[j]) / total if total > 0 else float(kept[j]) / len(idx)
    return _out("renormalised", cell, f"p'_{{{j}}}", f"p′_{j}",
                rf"\frac{{p_{{{j}}}\, \text{{kept}}_{{{j}}}}}{{\sum_{{i\ \text{{kept}}}} p_i}}",
                rf"\frac{{{_n(p[j])} \cdot {int(kept[j])}}}{{{den}}} = \frac{{{_n(p[j] * kept[j])}}}{{{_n(total)}}}",
                f"p_{j} kept_{j} / Σ_kept p_i", f"{_t(p[j])}·{int(kept[j])} / ({den_text})", value,
                (f"The {len(idx)} kept tokens' probabilities, divided by their sum so that they add up to 1 again."
                 if len(idx) > 1 else "One token is kept: its probability divided by itself, 1."),
                [("probs", (i,)) for i in idx] + [("kept", (j,))], len(idx), hidden)


@register("cdf", kind=KIND)
def _cdf(ctx: Context, cell) -> Explanation:
    (j,) = cell
    q = ctx.value("renormalised")
    terms, hidden = join_terms([_n(q[i]) for i in range(j + 1)])
    terms_text, _ = join_terms([_t(q[i]) for i in range(j + 1)], latex=False)
    return _out("cdf", cell, f"F_{{{j}}}", f"F_{j}", rf"\sum_{{i=0}}^{{{j}}} p'_i",
                terms, f"Σ_(i≤{j}) p′_i", terms_text, math.fsum(float(x) for x in q[:j + 1]),
                "The sample is the first token whose F passes the uniform draw u.",
                [("renormalised", (i,)) for i in range(j + 1)], j + 1, hidden)


@register("sample", kind=KIND)
def _sample(ctx: Context, cell) -> Explanation:
    f, F = ctx.trace.facts, ctx.value("cdf")
    u, j = f["u"], f["token"]
    before = F[j - 1] if j > 0 else 0.0
    return _out("sample", cell, "j", "j", r"\min\{\, j : F_j > u \,\}",
                rf"F_{{{j - 1}}} = {_n(before)} \le u = {fmt(u, 4)} < F_{{{j}}} = {_n(F[j])}" if j else
                rf"u = {fmt(u, 4)} < F_0 = {_n(F[0])}", "min{j : F_j > u}",
                f"F_{j - 1} = {_t(before)} ≤ u = {u:.4f} < F_{j} = {_t(F[j])}", float(j),
                f"Token {j} ({_word(ctx, j)}): u is drawn uniformly from [0, 1) by "
                f"numpy's generator seeded with {f['seed']}; the same seed draws the same u, so the same token.",
                [("cdf", (i,)) for i in range(j + 1)])


@register("heads", kind=KIND)
def _head(ctx: Context, cell) -> Explanation:
    h, j = cell
    s = ctx.value("heads_scores")[h]
    finite = np.isfinite(s)
    top = float(s[finite].max())
    e = [math.exp(float(x) - top) if np.isfinite(x) else 0.0 for x in s]
    total = math.fsum(e)
    exps = [rf"e^{{{_n(x)} {'+' if top < 0 else '-'} {_n(abs(top))}}}" if np.isfinite(x) else r"e^{-\infty}" for x in s]
    exps_text = [f"e^({_t(x)} − {_t(top)})" if np.isfinite(x) else "e^(−∞)" for x in s]
    shown, text, hidden = softmax_fraction(ctx, exps, exps_text, e, j, total, masked=[not x for x in finite])
    tok = ctx.trace.tokens
    return _out("heads", cell, f"A_{{{h},{ctx.trace.n - 1},{j}}}", f"A_{h}[{ctx.trace.n - 1},{j}]",
                rf"\frac{{e^{{\tilde S_{{{j}}} - \max \tilde S}}}}{{\sum_i e^{{\tilde S_i - \max \tilde S}}}}", shown,
                f"e^(S̃_{j} − max S̃) / Σ_i e^(S̃_i − max S̃)", text, e[j] / total,
                f"Head {h} of layer 1, the last query (“{tok[-1]}”) on key {j} (“{tok[j]}”): softmax over its scores "
                + (f"for all {s.size} keys (no key comes after the last query, so the causal mask hides none of them); "
                   if s.size > 1 else "for its only key, its own position (nothing to hide, so its weight is 1); ")
                + f"max S̃ = {_t(top)}, the row's largest score, is taken "
                f"away first, so that no exponential overflows.", [("heads_scores", (h, i)) for i in range(s.size)],
                int(finite.sum()), hidden)
