"""The next token's explainers: each cell's formula, the live numbers put in, and the value recomputed from them.

    z_j = Σ_m N_f(X_2)_{n−1,m} W_U[m, j]          z_j / T          p_j = e^{z_j/T − m} / Σ_i e^{z_i/T − m}
    kept_j (why top-k and top-p keep or drop j)        p′_j = p_j / Σ_{kept} p_i        F_j = Σ_{i ≤ j} p′_i
    the sample (the first j with F_j > u)              A_{h,n−1,j} = e^{S̃_j − m} / Σ_i e^{S̃_i − m}
"""
from __future__ import annotations

import math

import numpy as np

from ...explanations import Context, Explanation, fmt, join_terms, register, softmax_fraction
from .trace import KIND


def _n(v) -> str:
    return fmt(v, 3)


def _t(v) -> str:
    return fmt(v, 3, latex=False)


def _p(v) -> str:
    return f"({_n(v)})" if float(v) < 0 or r"\times" in _n(v) else _n(v)


def _word(ctx: Context, j: int) -> str:
    return ctx.trace.facts["labels"][j]


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
                f"Token {j} (“{_word(ctx, j)}”): the last position's row after the final norm, N_f(X_2)_(n−1), "
                f"against W_U's column {j}.",
                [("h", (m,)) for m in range(h.size)] + [("w_u", (m, j)) for m in range(h.size)], h.size, hidden)


@register("scaled", kind=KIND)
def _scaled(ctx: Context, cell) -> Explanation:
    (j,) = cell
    z, T = float(ctx.value("logits")[j]), ctx.trace.facts["temperature"]
    if T == 0:
        return _out("scaled", cell, f"z_{{{j}}}", f"z_{j}", f"z_{{{j}}}", _n(z), f"z_{j}", _t(z), z,
                    "T = 0: nothing is divided; the next token is the argmax of z.", [("logits", (j,))])
    return _out("scaled", cell, f"z_{{{j}}} / T", f"z_{j} / T", rf"\frac{{z_{{{j}}}}}{{T}}",
                rf"\frac{{{_n(z)}}}{{{fmt(T, 4)}}}", f"z_{j} / T", f"{_t(z)} / {T:g}", z / T,
                "The temperature divides the logits before softmax: after softmax it would change nothing.",
                [("logits", (j,))])


@register("probs", kind=KIND)
def _prob(ctx: Context, cell) -> Explanation:
    (j,) = cell
    f, s = ctx.trace.facts, ctx.value("scaled")
    if f["temperature"] == 0:
        top = int(np.argmax(s))
        return _out("probs", cell, f"p_{{{j}}}", f"p_{j}", rf"[\,{j} = \arg\max_i z_i = {top}\,]",
                    "1" if j == top else "0", f"[{j} = argmax z = {top}]", str(int(j == top)), float(j == top),
                    "T = 0 is the limit of softmax(z / T) as T → 0: all the probability on the largest logit.",
                    [("logits", (i,)) for i in range(s.size)])
    m = float(s.max())
    e = [math.exp(float(x) - m) for x in s]
    total = math.fsum(e)
    exps = [rf"e^{{{_n(x)} {'+' if m < 0 else '-'} {_n(abs(m))}}}" for x in s]
    exps_text = [f"e^({_t(x)} {'+' if m < 0 else '-'} {_t(abs(m))})" for x in s]
    shown, text, hidden = softmax_fraction(ctx, exps, exps_text, e, j, total)
    return _out("probs", cell, f"p_{{{j}}}", f"p_{j}",
                rf"\frac{{e^{{z_{{{j}}}/T - m}}}}{{\sum_{{i=0}}^{{{s.size - 1}}} e^{{z_i/T - m}}}}", shown,
                f"e^(z_{j}/T - m) / Σ_i e^(z_i/T - m)", text, e[j] / total,
                f"Token {j} (“{_word(ctx, j)}”): its exponential over the sum of all {s.size}; m = max_i z_i / T = "
                f"{_t(m)} is subtracted first so that no exponential overflows (it cancels).",
                [("scaled", (i,)) for i in range(s.size)], s.size, hidden)


@register("kept", kind=KIND)
def _kept(ctx: Context, cell) -> Explanation:
    (j,) = cell
    f, z, p = ctx.trace.facts, ctx.value("logits"), ctx.value("probs")
    k, top_p, T = f["k"], f["p"], f["temperature"]
    by_k, by_p = bool(f["kept_k"][j]), bool(f["kept_p"][j])
    rank = int((z > z[j]).sum()) + 1
    if T == 0:
        why = "T = 0: only the argmax stays."
    else:
        after_k = np.where(f["kept_k"], p, 0.0)
        after_k = after_k / after_k.sum()
        above = math.fsum(float(q) for i, q in enumerate(after_k) if q > after_k[j] and i != j)
        k_text = ("top-k is off" if k == 0 or k >= z.size else
                  f"its logit is number {rank} of {z.size}, {'within' if by_k else 'outside'} the top k = {k}")
        p_text = ("top-p is off (p_top = 1)" if top_p >= 1 else
                  "dropped by top-k first" if not by_k else
                  "top-p = 0 keeps only the most probable token (after top-k), and this is it" if by_p and top_p == 0
                  else f"the more probable tokens (after top-k) hold {above:.4f} {'<' if by_p else '≥'} "
                       f"p_top = {top_p:g}")
        why = f"{k_text}; {p_text}."
    value = float(by_k and by_p)
    return _out("kept", cell, rf"\text{{kept}}_{{{j}}}", f"kept_{j}", r"[\text{top-}k] \cdot [\text{top-}p]",
                rf"{int(by_k)} \cdot {int(by_p)}", "[top-k]·[top-p]", f"{int(by_k)}·{int(by_p)}", value,
                f"Token {j} (“{_word(ctx, j)}”): {why}", [("logits", (j,)), ("probs", (j,))])


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
                f"Token {j} (“{_word(ctx, j)}”): u is drawn uniformly from [0, 1) by "
                f"numpy's generator seeded with {f['seed']}; the same seed draws the same u, so the same token.",
                [("cdf", (i,)) for i in range(j + 1)])


@register("heads", kind=KIND)
def _head(ctx: Context, cell) -> Explanation:
    h, j = cell
    s = ctx.value("heads_scores")[h]
    finite = np.isfinite(s)
    m = float(s[finite].max())
    e = [math.exp(float(x) - m) if np.isfinite(x) else 0.0 for x in s]
    total = math.fsum(e)
    exps = [rf"e^{{{_n(x)} {'+' if m < 0 else '-'} {_n(abs(m))}}}" if np.isfinite(x) else r"e^{-\infty}" for x in s]
    exps_text = [f"e^({_t(x)} - {_t(m)})" if np.isfinite(x) else "e^(-inf)" for x in s]
    shown, text, hidden = softmax_fraction(ctx, exps, exps_text, e, j, total, masked=[not x for x in finite])
    tok = ctx.trace.tokens
    return _out("heads", cell, f"A_{{{h},{ctx.trace.n - 1},{j}}}", f"A_{h}[{ctx.trace.n - 1},{j}]",
                rf"\frac{{e^{{\tilde S_{{{j}}} - m}}}}{{\sum_i e^{{\tilde S_i - m}}}}", shown,
                f"e^(S̃_{j} - m) / Σ_i e^(S̃_i - m)", text, e[j] / total,
                f"Head {h} of layer 1, the last query (“{tok[-1]}”) on key {j} (“{tok[j]}”): softmax over its scores "
                f"(the keys after it hidden by the causal mask).", [("heads_scores", (h, i)) for i in range(s.size)],
                int(finite.sum()), hidden)
