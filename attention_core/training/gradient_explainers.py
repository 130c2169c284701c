r"""Every number of the classifier's trace explained: its forward steps and its hand-written backward pass.

classifier.forward() and classifier.backward(..., trace) make a trace of kind "classifier" (see
explain.trace_kind). Its forward steps reuse names of run_forward's trace for other math ("scores"
is already divided by √d_k, "w_o" maps d_v to 3 classes), so they get their own explainers here,
registered with kind="classifier" (and only for traces whose facts carry the classes and the
label they read: `is_classifier_trace`); so do the gradient steps "dL/d<name>" and the row Jacobians
"dweights/dscores". Each explainer follows the formula already written on its step
(trace[key].formula): row vectors, X W with W of shape (d_in, d_out), Ŝ = Q Kᵀ / √d_k, f̄ the
mean of F's rows, L = −log p_y. Every value is recomputed from the stored cells it reads (scalar
arithmetic, math.fsum), never read back, except the leaves: X and the parameters, which nothing in
the trace computes (`independent=False`).

    >>> import numpy as np
    >>> from attention_core import classifier as clf
    >>> from attention_core.explanations import explain
    >>> params = clf.init_params(d_in=3, d_k=2, d_v=2, seed=0)
    >>> x = np.array([[0.5, -1.0, 0.0], [1.0, 0.25, 1.0]])
    >>> loss, trace = clf.forward(params, x, "positive", ("good", "day"))
    >>> _ = clf.backward(params, x, "positive", trace)
    >>> e = explain(trace, "dL/dw_q", (1, 0))
    >>> e.symbolic
    '\\frac{\\partial L}{\\partial (W_Q)_{1,0}} = \\sum_{i=0}^{1} X_{i,1}\\, \\frac{\\partial L}{\\partial Q_{i,0}}'
    >>> bool(abs(e.value - trace["dL/dw_q"].value[1, 0]) < 1e-15)
    True

Importing this module registers the explainers; classifier.py imports it, so they are there
whenever a classifier trace can exist. It imports only explain.py (numpy), never classifier.py
at import time, so there is no import cycle.
"""
from __future__ import annotations

import math

import numpy as np

from ..explanations import Context, Explanation, join_terms, latex_text, register, row_excerpt, softmax_fraction

KIND = "classifier"


def is_classifier_trace(trace) -> bool:
    """Made by classifier.forward: its facts name the classes and the label these explainers read
    (a trace merely labelled facts["kind"] = "classifier" is not explained by them)."""
    return "classes" in trace.facts and "label" in trace.facts


def _register(*keys: str):
    return register(*keys, kind=KIND, when=is_classifier_trace)


# How the classifier's formulas write each step (classifier._SYMBOLS / _PLAIN, plus p, y, L).
TEX = {"x": "X", "w_q": "W_Q", "b_q": "b_Q", "w_k": "W_K", "b_k": "b_K", "w_v": "W_V", "b_v": "b_V",
       "w_o": "W_O", "b_o": "b_O", "q": "Q", "k": "K", "v": "V", "scores": r"\hat S", "weights": "A", "context": "C",
       "f": "F", "pooled": r"\bar f", "p": "p", "y": "y", "loss": "L"}
PLAIN = {**TEX, "scores": "Ŝ", "pooled": "f̄"}
JACOBIAN = "dweights/dscores"
FAN_IN = {"w_q": "d_in", "w_k": "d_in", "w_v": "d_in", "w_o": "d_v"}


# ---- naming cells ------------------------------------------------------------------------------------

def _sub(index) -> str:
    return ",".join(str(i) for i in index)


def _symbol(name: str, index) -> str:
    """One cell of a forward step: Q_{1,2}, (W_Q)_{0,1}, \\hat S_{0,1}, \\bar f_{2}, L."""
    tex = TEX[name]
    if not index:
        return tex
    if "_" in tex and not tex.startswith("\\"):
        tex = f"({tex})"
    return f"{tex}_{{{_sub(index)}}}"


def ref(key: str, index=()) -> str:
    """LaTeX for one cell of a classifier step; a gradient is written ∂L/∂(cell)."""
    index = tuple(index)
    if key == JACOBIAN:
        i, *rest = index
        return rf"(J_{{{i}}})_{{{_sub(rest)}}}"
    if key.startswith("dL/d"):
        return rf"\frac{{\partial L}}{{\partial {_symbol(key[4:], index)}}}"
    return _symbol(key, index)


def ref_text(key: str, index=()) -> str:
    """Plain text for one cell: dL/dW_Q[0,1], A[2,3], Ŝ[1,0], J_2[0,1], L."""
    index = tuple(index)
    if key == JACOBIAN:
        i, *rest = index
        return f"J_{i}[{_sub(rest)}]"
    name, prefix = (key[4:], "dL/d") if key.startswith("dL/d") else (key, "")
    return prefix + PLAIN[name] + (f"[{_sub(index)}]" if index else "")


def _word(ctx: Context, i: int) -> str:
    return f"{i} (“{ctx.trace.tokens[i]}”)"


def _class(ctx: Context, c: int) -> str:
    return f"{c} ({ctx.trace.facts['classes'][c]})"


def _label(ctx: Context) -> int:
    return int(np.argmax(ctx.value("y")))


def _done(ctx: Context, key, cell, rhs, rhs_text, shown, shown_text, value, note="", n_terms=0, n_elided=0,
          reads=(), independent=True) -> Explanation:
    lhs, lhs_text = ref(key, cell), ref_text(key, cell)
    value = float(value)
    return Explanation(key, cell, f"{lhs} = {rhs}", shown, f"{lhs} = {ctx.num(value)}", value,
                       f"{lhs_text} = {rhs_text}\n  = {shown_text}\n  = {ctx.num_text(value)}",
                       note=note, n_terms=n_terms, n_elided=n_elided, reads=tuple(reads), independent=independent)


# ---- sums of products --------------------------------------------------------------------------------

def _shown(ctx: Context, terms) -> tuple[str, str, list[float], int]:
    """terms: [(factors, reads)] -> (LaTeX, text, products, n_left_out), long sums elided."""
    tex = [r" \cdot ".join(ctx.factor(f) for f in factors) for factors, _ in terms]
    txt = ["·".join(ctx.factor_text(f) for f in factors) for factors, _ in terms]
    shown, hidden = join_terms(tex)
    shown_text, _ = join_terms(txt, latex=False)
    return shown, shown_text, [math.prod(float(f) for f in factors) for factors, _ in terms], hidden


def _sum(ctx: Context, key, cell, rhs, rhs_text, terms, bias=None, divisor=None, prefix=False, note="",
         extra_reads=()) -> Explanation:
    """value = (Σ_t Π factors_t (+ bias)) (/ divisor).

    terms: [(factors, reads)], reads = ((key, cell), ...); bias: (value, read) or None;
    divisor: (latex, text, value) or None, shown as \\frac{1}{d}(...) when `prefix`, else \\frac{...}{d}.
    """
    shown, shown_text, parts, hidden = _shown(ctx, terms)
    reads = [r for _, rs in terms for r in rs]
    if bias is not None:
        shown, shown_text = f"{shown} + {ctx.factor(bias[0])}", f"{shown_text} + {ctx.factor_text(bias[0])}"
        parts.append(float(bias[0]))
        reads.append(bias[1])
    value = math.fsum(parts)
    if divisor is not None:
        total, (d_tex, d_text, d) = value, divisor
        value = total / float(d)
        if prefix:
            shown = rf"\frac{{1}}{{{d_tex}}} \left({shown}\right) = \frac{{{ctx.num(total)}}}{{{d_tex}}}"
            shown_text = f"(1/{d_text})·({shown_text}) = {ctx.num_text(total)} / {d_text}"
        else:
            shown = rf"\frac{{{shown}}}{{{d_tex}}} = \frac{{{ctx.num(total)}}}{{{d_tex}}}"
            shown_text = f"({shown_text}) / {d_text} = {ctx.num_text(total)} / {d_text}"
    return _done(ctx, key, cell, rhs, rhs_text, shown, shown_text, value, note, len(terms), hidden,
                 reads + list(extra_reads))


def _sqrt_d_k(ctx: Context) -> tuple[str, str, float]:
    d_k = ctx.trace.facts.get("d_k", ctx.trace["q"].shape[1])
    return rf"\sqrt{{{d_k}}}", f"√{d_k}", math.sqrt(d_k)


def _settings(ctx: Context):
    """The TrainingSettings the trace was made under (classifier.forward records them; not known: positional None)."""
    settings = ctx.trace.facts.get("settings")
    if settings is None:
        from .training_input import TrainingSettings
        settings = TrainingSettings(positional=None)
    return settings


def _top(values) -> int:
    return int(np.argmax(np.abs(np.asarray(values, dtype=float))))


# ---- leaves: the input and the parameters --------------------------------------------------------------

@_register("x")
def _x(ctx: Context, cell):
    i, a = cell
    x = ctx.value("x")
    n, d_in = x.shape
    value = float(x[cell])
    shown, hidden = row_excerpt([ctx.num(v) for v in x[i]], a)
    shown_text, _ = row_excerpt([ctx.num_text(v) for v in x[i]], a, latex=False)
    settings = _settings(ctx)
    positional = settings.positional
    index_column = positional == "index" and np.array_equal(x[:, -1], np.arange(n))
    where = (f"column {a} of columns 0 … {d_in - 1} (boxed). X is the input: nothing on this page computes it from "
             "other numbers, so the number is read back.")
    if index_column and a == d_in - 1:
        value = float(i)                                       # seed 000's position column: regenerated
        note = (f"The last column of X is the word's position (tutorial 1's index feature): word {_word(ctx, i)} "
                f"is at position {i}.")
    elif index_column:
        note = (f"Row {i} is the input vector of word {_word(ctx, i)}: its embedding in columns 0 … {d_in - 2}, its "
                f"position in the last column, {d_in - 1}; " + where)
    elif positional == "sinusoidal" and settings.combine == "concat" and d_in % 2 == 0:
        half = d_in // 2
        note = (f"Row {i} is the input vector of word {_word(ctx, i)}: its embedding in columns 0 … {half - 1}, then "
                f"the sinusoidal encoding of its position {i} in columns {half} … {d_in - 1} (this entry is in the "
                + ("embedding" if a < half else "encoding") + "); " + where)
    elif positional == "sinusoidal":
        note = (f"Row {i} is the input vector of word {_word(ctx, i)}: its embedding plus the sinusoidal encoding "
                f"of its position {i}; " + where)
    elif positional == "none":
        note = (f"Row {i} is the input vector of word {_word(ctx, i)}: its embedding alone, no position; " + where)
    else:
        note = f"Row {i} is the input vector of word {_word(ctx, i)}; " + where
    word = ctx.trace.tokens[i]
    return _done(ctx, "x", cell, rf"x\left({latex_text(word)}\right)_{{{a}}}", f"x('{word}')[{a}]",
                 rf"\left[{shown}\right]_{{{a}}}", f"[{shown_text}][{a}]", value, note, d_in, hidden,
                 independent=bool(index_column and a == d_in - 1))


def _parameter_explainer(key: str):
    def explain_parameter(ctx: Context, cell):
        value = float(ctx.value(key)[cell])
        init = "at 0" if key.startswith("b_") else f"as a seeded draw from N(0, 1/{FAN_IN[key]})"
        note = (f"A parameter: no formula makes it. It starts {init} and each gradient step moves it "
                f"by −η·{ref_text('dL/d' + key, cell)}, unless it is frozen; here it is read from the trace.")
        return _done(ctx, key, cell, r"\text{learned}", "learned", ctx.num(value), ctx.num_text(value), value,
                     note, independent=False)
    return explain_parameter


for _key in ("w_q", "b_q", "w_k", "b_k", "w_v", "b_v", "w_o", "b_o"):
    _register(_key)(_parameter_explainer(_key))


@_register("y")
def _y(ctx: Context, cell):
    (c,) = cell
    classes = ctx.trace.facts["classes"]
    y = classes.index(ctx.trace.facts["label"])
    value = float(c == y)
    return _done(ctx, "y", cell, rf"[\,{c} = y\,],\ y = {y}", f"[{c} = y], y = {y}",
                 rf"[\,{c} = {y}\,]", f"[{c} = {y}]", value,
                 f"One-hot label: the sentence is {classes[y]} (class {y}), so y is 1 there and 0 for "
                 f"{classes[c] if c != y else 'the other classes'}.")


# ---- forward: projections, scores, softmax, context, classes --------------------------------------------

def _projection_explainer(name: str):
    """Q = X W_Q + b_Q (K, V alike): Q_{i,j} = Σ_m X_{i,m} (W_Q)_{m,j} + (b_Q)_j."""
    w_key, b_key = f"w_{name}", f"b_{name}"

    def explain_projection(ctx: Context, cell):
        i, j = cell
        x, w, b = ctx.value("x"), ctx.value(w_key), ctx.value(b_key)
        d_in = x.shape[1]
        terms = [((x[i, m], w[m, j]), (("x", (i, m)), (w_key, (m, j)))) for m in range(d_in)]
        rhs = (rf"\sum_{{m=0}}^{{{d_in - 1}}} {ref('x', (i, 'm'))}\, {ref(w_key, ('m', j))} + {ref(b_key, (j,))}")
        rhs_text = f"Σ_m {ref_text('x', (i, 'm'))}·{ref_text(w_key, ('m', j))} + {ref_text(b_key, (j,))}"
        role = {"q": "query", "k": "key", "v": "value"}[name]
        return _sum(ctx, name, cell, rhs, rhs_text, terms, bias=(b[j], (b_key, (j,))),
                    note=f"Word {_word(ctx, i)}'s {role}, entry {j}: row {i} of X times column {j} of "
                         f"{TEX[w_key]}, plus the bias.")
    return explain_projection


for _name in ("q", "k", "v"):
    _register(_name)(_projection_explainer(_name))


@_register("scores")
def _scores(ctx: Context, cell):
    i, j = cell
    q, k = ctx.value("q"), ctx.value("k")
    d_k = q.shape[1]
    terms = [((q[i, m], k[j, m]), (("q", (i, m)), ("k", (j, m)))) for m in range(d_k)]
    rhs = rf"\frac{{\sum_{{m=0}}^{{{d_k - 1}}} {ref('q', (i, 'm'))}\, {ref('k', (j, 'm'))}}}{{\sqrt{{d_k}}}}"
    rhs_text = f"(Σ_m {ref_text('q', (i, 'm'))}·{ref_text('k', (j, 'm'))}) / √d_k"
    return _sum(ctx, "scores", cell, rhs, rhs_text, terms, divisor=_sqrt_d_k(ctx),
                note=f"Query {_word(ctx, i)} against key {_word(ctx, j)}: their dot product, divided by "
                     f"√d_k = √{d_k} (the classifier's scores Ŝ are scaled: Ŝ = S / √d_k).")


def _softmax(ctx: Context, key, cell, src, row_index, j, var, note) -> Explanation:
    """cell = exp(s_j − m) / Σ_j' exp(s_j' − m), m = max_j' s_j', over src[row_index]."""
    s = [float(v) for v in ctx.value(src)[row_index]]
    top = max(s)
    e = [math.exp(v - top) for v in s]
    total = math.fsum(e)
    value = e[j] / total
    n = len(s)
    row = ref(src, (*row_index, var))
    rhs = (rf"\frac{{\exp({ref(src, (*row_index, j))} - m)}}{{\sum_{{{var}=0}}^{{{n - 1}}} \exp({row} - m)}},"
           rf"\quad m = \max_{{{var}}} {row}")
    rhs_text = (f"exp({ref_text(src, (*row_index, j))} - m) / Σ_{var} exp({ref_text(src, (*row_index, var))} - m), "
                f"m = max")
    exps = [rf"e^{{{ctx.num(v)} - {ctx.factor(top)}}}" for v in s]
    exps_text = [f"exp({ctx.num_text(v)} - {ctx.factor_text(top)})" for v in s]
    shown, shown_text, hidden = softmax_fraction(ctx, exps, exps_text, e, j, total)
    note += (f" Subtracting the maximum m = {ctx.num_text(top)} keeps exp from overflowing and changes nothing.")
    return _done(ctx, key, cell, rhs, rhs_text, shown, shown_text, value, note, n, hidden,
                 [(src, (*row_index, jj)) for jj in range(n)])


@_register("weights")
def _weights(ctx: Context, cell):
    i, j = cell
    return _softmax(ctx, "weights", cell, "scores", (i,), j, "j'",
                    f"Row {i} is its own softmax over the {ctx.trace.n} keys: how word {_word(ctx, i)} spreads its "
                    f"attention; this is the share of key {_word(ctx, j)}.")


@_register("context")
def _context(ctx: Context, cell):
    i, j = cell
    a, v = ctx.value("weights"), ctx.value("v")
    n = a.shape[1]
    terms = [((a[i, m], v[m, j]), (("weights", (i, m)), ("v", (m, j)))) for m in range(n)]
    rhs = rf"\sum_{{m=0}}^{{{n - 1}}} {ref('weights', (i, 'm'))}\, {ref('v', ('m', j))}"
    rhs_text = f"Σ_m {ref_text('weights', (i, 'm'))}·{ref_text('v', ('m', j))}"
    top = int(np.argmax(a[i]))
    return _sum(ctx, "context", cell, rhs, rhs_text, terms,
                note=f"Column {j} of V averaged with row {i} of the weights; word {_word(ctx, top)} counts most, "
                     f"with {ctx.num_text(a[i, top])}.")


@_register("f")
def _f(ctx: Context, cell):
    i, c = cell
    context, w, b = ctx.value("context"), ctx.value("w_o"), ctx.value("b_o")
    d_v = context.shape[1]
    terms = [((context[i, m], w[m, c]), (("context", (i, m)), ("w_o", (m, c)))) for m in range(d_v)]
    rhs = rf"\sum_{{m=0}}^{{{d_v - 1}}} {ref('context', (i, 'm'))}\, {ref('w_o', ('m', c))} + {ref('b_o', (c,))}"
    rhs_text = f"Σ_m {ref_text('context', (i, 'm'))}·{ref_text('w_o', ('m', c))} + {ref_text('b_o', (c,))}"
    return _sum(ctx, "f", cell, rhs, rhs_text, terms, bias=(b[c], ("b_o", (c,))),
                note=f"Word {_word(ctx, i)}'s score for class {_class(ctx, c)}: its context vector times column "
                     f"{c} of W_O, plus the bias.")


@_register("pooled")
def _pooled(ctx: Context, cell):
    (c,) = cell
    f = ctx.value("f")
    n = f.shape[0]
    terms = [((f[i, c],), (("f", (i, c)),)) for i in range(n)]
    rhs = rf"\frac{{1}}{{n}} \sum_{{i=0}}^{{{n - 1}}} {ref('f', ('i', c))}"
    rhs_text = f"(1/n) Σ_i {ref_text('f', ('i', c))}"
    return _sum(ctx, "pooled", cell, rhs, rhs_text, terms, divisor=(str(n), str(n), n), prefix=True,
                note=f"The sentence's logit for class {_class(ctx, c)}: the mean of the {n} words' scores.")


@_register("p")
def _p(ctx: Context, cell):
    (c,) = cell
    return _softmax(ctx, "p", cell, "pooled", (), c, "c'",
                    f"The probability of class {_class(ctx, c)}: a softmax over the 3 pooled logits.")


@_register("loss")
def _loss(ctx: Context, cell):
    f = [float(v) for v in ctx.value("pooled")]
    y = _label(ctx)
    p_y = float(ctx.value("p")[y])
    top = max(f)
    value = top + math.log(math.fsum(math.exp(v - top) for v in f)) - f[y]      # log Σ e^f̄ − f̄_y, no log(0)
    rhs = (rf"-\log {ref('p', (y,))} = \log \sum_{{c=0}}^{{{len(f) - 1}}} e^{{{ref('pooled', ('c',))}}} "
           rf"- {ref('pooled', (y,))}")
    rhs_text = f"-log p[{y}] = log Σ_c exp(f̄[c]) - f̄[{y}]"
    exps, _ = join_terms([rf"e^{{{ctx.num(v)}}}" for v in f])
    exps_text, _ = join_terms([f"exp({ctx.num_text(v)})" for v in f], latex=False)
    shown = rf"-\log {ctx.num(p_y)} = \log\left({exps}\right) - {ctx.factor(f[y])}"
    shown_text = f"-log {ctx.num_text(p_y)} = log({exps_text}) - {ctx.factor_text(f[y])}"
    return _done(ctx, "loss", cell, rhs, rhs_text, shown, shown_text, value,
                 f"Cross-entropy: the true class is {_class(ctx, y)}, which the model gives p = "
                 f"{ctx.num_text(p_y)}; the surer and righter, the closer to 0. (Computed as log Σ e^f̄ − f̄_y, so "
                 "a tiny p_y never means log 0.)", len(f), 0,
                 [("pooled", (c,)) for c in range(len(f))] + [("p", (y,)), ("y", (y,))])


# ---- backward: loss -> f̄ -> F -> W_O, b_o, C ----------------------------------------------------------

def _pooled_direction(true_class: bool, value: float) -> str:
    """What the sign of p_c − y_c asks of gradient descent, from the value itself (p can round to 1 or 0)."""
    if value == 0:
        return ("It is exactly 0: the model gives " + ("the true class probability 1" if true_class else
                "this class probability 0") + " to the last digit, so gradient descent leaves its logit alone.")
    if true_class:
        return "It is the true class, so the gradient is negative and gradient descent raises its logit."
    return "It is not the true class, so the gradient is positive and gradient descent lowers its logit."


@_register("dL/dpooled")
def _dl_dpooled(ctx: Context, cell):
    (c,) = cell
    p, y = float(ctx.value("p")[c]), float(ctx.value("y")[c])
    value = p - y
    return _done(ctx, "dL/dpooled", cell, f"{ref('p', (c,))} - {ref('y', (c,))}", f"p[{c}] - y[{c}]",
                 f"{ctx.num(p)} - {ctx.factor(y)}", f"{ctx.num_text(p)} - {ctx.factor_text(y)}", value,
                 f"Softmax then cross-entropy: predicted minus true probability of class {_class(ctx, c)}. "
                 + _pooled_direction(bool(y), value),
                 reads=(("p", (c,)), ("y", (c,))))


@_register("dL/df")
def _dl_df(ctx: Context, cell):
    i, c = cell
    n = ctx.value("f").shape[0]
    p, y = float(ctx.value("p")[c]), float(ctx.value("y")[c])
    value = (p - y) / n
    return _done(ctx, "dL/df", cell,
                 rf"\frac{{1}}{{n}} {ref('dL/dpooled', (c,))} = \frac{{{ref('p', (c,))} - {ref('y', (c,))}}}{{n}}",
                 f"(1/n)·dL/df̄[{c}] = (p[{c}] - y[{c}]) / n",
                 rf"\frac{{{ctx.num(p)} - {ctx.factor(y)}}}{{{n}}}",
                 f"({ctx.num_text(p)} - {ctx.factor_text(y)}) / {n}", value,
                 f"f̄ is the mean of the {n} rows of F, so word {_word(ctx, i)}, like every word, gets the same "
                 f"1/{n} share of ∂L/∂f̄[{c}].", reads=(("dL/dpooled", (c,)), ("p", (c,)), ("y", (c,))))


@_register("dL/dw_o")
def _dl_dw_o(ctx: Context, cell):
    a, c = cell
    context, g = ctx.value("context"), ctx.value("dL/df")
    n = context.shape[0]
    terms = [((context[i, a], g[i, c]), (("context", (i, a)), ("dL/df", (i, c)))) for i in range(n)]
    rhs = rf"\sum_{{i=0}}^{{{n - 1}}} {ref('context', ('i', a))}\, {ref('dL/df', ('i', c))}"
    rhs_text = f"Σ_i {ref_text('context', ('i', a))}·{ref_text('dL/df', ('i', c))}"
    return _sum(ctx, "dL/dw_o", cell, rhs, rhs_text, terms,
                note=f"(Cᵀ ∂L/∂F)[{a},{c}]: W_O[{a},{c}] carries context entry {a} of every word into class "
                     f"{_class(ctx, c)}, so its gradient pairs that input with the class's gradient, word by word "
                     f"(every row of ∂L/∂F is the same: this is (p_{c} − y_{c}) times the mean of column {a} of C).")


@_register("dL/db_o")
def _dl_db_o(ctx: Context, cell):
    (c,) = cell
    g = ctx.value("dL/df")
    n = g.shape[0]
    terms = [((g[i, c],), (("dL/df", (i, c)),)) for i in range(n)]
    return _sum(ctx, "dL/db_o", cell, rf"\sum_{{i=0}}^{{{n - 1}}} {ref('dL/df', ('i', c))}",
                f"Σ_i {ref_text('dL/df', ('i', c))}", terms,
                note=f"b_O[{c}] is added to every word's row of F, so its gradient sums the rows; the {n} equal "
                     f"shares add back up to p_{c} − y_{c}.")


@_register("dL/dcontext")
def _dl_dcontext(ctx: Context, cell):
    i, a = cell
    g, w = ctx.value("dL/df"), ctx.value("w_o")
    n_classes = w.shape[1]
    terms = [((g[i, c], w[a, c]), (("dL/df", (i, c)), ("w_o", (a, c)))) for c in range(n_classes)]
    rhs = rf"\sum_{{c=0}}^{{{n_classes - 1}}} {ref('dL/df', (i, 'c'))}\, {ref('w_o', (a, 'c'))}"
    rhs_text = f"Σ_c {ref_text('dL/df', (i, 'c'))}·{ref_text('w_o', (a, 'c'))}"
    return _sum(ctx, "dL/dcontext", cell, rhs, rhs_text, terms,
                note=f"(∂L/∂F W_Oᵀ)[{i},{a}]: context entry {a} of word {_word(ctx, i)} reaches every class score "
                     f"through row {a} of W_O, so the three class gradients come back weighted by it.")


# ---- backward through attention: C = A V, A = softmax(Ŝ), Ŝ = Q Kᵀ / √d_k -----------------------------

@_register("dL/dweights")
def _dl_dweights(ctx: Context, cell):
    i, j = cell
    g, v = ctx.value("dL/dcontext"), ctx.value("v")
    d_v = v.shape[1]
    terms = [((g[i, a], v[j, a]), (("dL/dcontext", (i, a)), ("v", (j, a)))) for a in range(d_v)]
    rhs = rf"\sum_{{a=0}}^{{{d_v - 1}}} {ref('dL/dcontext', (i, 'a'))}\, {ref('v', (j, 'a'))}"
    rhs_text = f"Σ_a {ref_text('dL/dcontext', (i, 'a'))}·{ref_text('v', (j, 'a'))}"
    return _sum(ctx, "dL/dweights", cell, rhs, rhs_text, terms,
                note=f"(∂L/∂C Vᵀ)[{i},{j}]: if word {_word(ctx, i)} attended a little more to word {_word(ctx, j)}, its "
                     f"context would move towards value row {j}; this dot product is how much the loss cares.")


@_register("dL/dv")
def _dl_dv(ctx: Context, cell):
    j, a = cell
    w, g = ctx.value("weights"), ctx.value("dL/dcontext")
    n = w.shape[0]
    terms = [((w[i, j], g[i, a]), (("weights", (i, j)), ("dL/dcontext", (i, a)))) for i in range(n)]
    rhs = rf"\sum_{{i=0}}^{{{n - 1}}} {ref('weights', ('i', j))}\, {ref('dL/dcontext', ('i', a))}"
    rhs_text = f"Σ_i {ref_text('weights', ('i', j))}·{ref_text('dL/dcontext', ('i', a))}"
    return _sum(ctx, "dL/dv", cell, rhs, rhs_text, terms,
                note=f"(Aᵀ ∂L/∂C)[{j},{a}]: value row {j} (word “{ctx.trace.tokens[j]}”) went into every word's context "
                     f"with weight A[i,{j}], so it collects each word's gradient in that proportion.")


@_register(JACOBIAN)
def _jacobian(ctx: Context, cell):
    i, j, l = cell
    a_j, a_l = float(ctx.value("weights")[i, j]), float(ctx.value("weights")[i, l])
    delta = int(j == l)
    value = (a_j if delta else 0.0) - a_j * a_l                  # diag(a_i) − a_i a_iᵀ, as softmax_jacobians
    rhs = (rf"\frac{{\partial {ref('weights', (i, j))}}}{{\partial {ref('scores', (i, l))}}} = "
           rf"{ref('weights', (i, j))} \left(\delta_{{{j},{l}}} - {ref('weights', (i, l))}\right)")
    rhs_text = f"dA[{i},{j}]/dŜ[{i},{l}] = A[{i},{j}]·(δ[{j},{l}] - A[{i},{l}])"
    shown = rf"{ctx.num(a_j)} \cdot \left({delta} - {ctx.factor(a_l)}\right)"
    shown_text = f"{ctx.num_text(a_j)}·({delta} - {ctx.factor_text(a_l)})"
    note = (f"Row {i} of A is its own softmax, so it has its own Jacobian J_{i} = diag(a_{i}) − a_{i} a_{i}ᵀ; "
            + ("on the diagonal: raising a score raises its own weight at the rate a(1 − a)." if delta else
               f"off the diagonal: raising key {l}'s score takes weight from key {j}."))
    return _done(ctx, JACOBIAN, cell, rhs, rhs_text, shown, shown_text, value, note,
                 reads=(("weights", (i, j)), ("weights", (i, l))))


@_register("dL/dscores")
def _dl_dscores(ctx: Context, cell):
    i, j = cell
    a, g = ctx.value("weights")[i], ctx.value("dL/dweights")[i]
    n = a.shape[0]
    inner_terms = [((a[m], g[m]), (("weights", (i, m)), ("dL/dweights", (i, m)))) for m in range(n)]
    inner, inner_text, products, hidden = _shown(ctx, inner_terms)
    mean = math.fsum(products)                                    # a_iᵀ ∂L/∂A_{i,:}: the row's weighted average
    value = float(a[j]) * (float(g[j]) - mean)
    rhs = (rf"{ref('weights', (i, j))} \left({ref('dL/dweights', (i, j))} - \sum_{{m=0}}^{{{n - 1}}} "
           rf"{ref('weights', (i, 'm'))}\, {ref('dL/dweights', (i, 'm'))}\right)")
    rhs_text = (f"A[{i},{j}]·({ref_text('dL/dweights', (i, j))} - Σ_m A[{i},m]·{ref_text('dL/dweights', (i, 'm'))})")
    shown = (rf"{ctx.num(a[j])} \cdot \left({ctx.num(g[j])} - \left({inner}\right)\right)"
             rf" = {ctx.num(a[j])} \cdot \left({ctx.num(g[j])} - {ctx.factor(mean)}\right)")
    shown_text = (f"{ctx.num_text(a[j])}·({ctx.num_text(g[j])} - ({inner_text}))"
                  f" = {ctx.num_text(a[j])}·({ctx.num_text(g[j])} - {ctx.factor_text(mean)})")
    note = (f"Row {i}'s softmax Jacobian J_{i} applied to row {i} of ∂L/∂A: the weight "
            f"A[{i},{j}] times how far key {j}'s gradient is above the row's weight-averaged gradient "
            f"{ctx.num_text(mean)}. Raising one score takes weight from all the others, hence the subtraction.")
    reads = [r for _, rs in inner_terms for r in rs] + [("dL/dweights", (i, j))]
    return _done(ctx, "dL/dscores", cell, rhs, rhs_text, shown, shown_text, value, note, n, hidden, reads)


@_register("dL/dq")
def _dl_dq(ctx: Context, cell):
    i, m = cell
    g, k = ctx.value("dL/dscores"), ctx.value("k")
    n = g.shape[1]
    terms = [((g[i, j], k[j, m]), (("dL/dscores", (i, j)), ("k", (j, m)))) for j in range(n)]
    rhs = (rf"\frac{{1}}{{\sqrt{{d_k}}}} \sum_{{j=0}}^{{{n - 1}}} {ref('dL/dscores', (i, 'j'))}\, "
           rf"{ref('k', ('j', m))}")
    rhs_text = f"(1/√d_k) Σ_j {ref_text('dL/dscores', (i, 'j'))}·{ref_text('k', ('j', m))}"
    return _sum(ctx, "dL/dq", cell, rhs, rhs_text, terms, divisor=_sqrt_d_k(ctx), prefix=True,
                note=f"Query {_word(ctx, i)} meets every key in row {i} of the scores, so its gradient mixes the "
                     f"keys' column {m} by that row's score gradients; Ŝ is Q Kᵀ divided by √d_k, so this is too.")


@_register("dL/dk")
def _dl_dk(ctx: Context, cell):
    j, m = cell
    g, q = ctx.value("dL/dscores"), ctx.value("q")
    n = g.shape[0]
    terms = [((g[i, j], q[i, m]), (("dL/dscores", (i, j)), ("q", (i, m)))) for i in range(n)]
    rhs = (rf"\frac{{1}}{{\sqrt{{d_k}}}} \sum_{{i=0}}^{{{n - 1}}} {ref('dL/dscores', ('i', j))}\, "
           rf"{ref('q', ('i', m))}")
    rhs_text = f"(1/√d_k) Σ_i {ref_text('dL/dscores', ('i', j))}·{ref_text('q', ('i', m))}"
    return _sum(ctx, "dL/dk", cell, rhs, rhs_text, terms, divisor=_sqrt_d_k(ctx), prefix=True,
                note=f"Key {_word(ctx, j)} meets every query in column {j} of the scores, so its gradient mixes "
                     f"the queries' column {m} by that column's score gradients, over √d_k as in Ŝ.")


# ---- backward into the parameters and the input --------------------------------------------------------

def _weight_gradient_explainer(name: str):
    """∂L/∂W_Q = Xᵀ ∂L/∂Q: ∂L/∂(W_Q)_{a,b} = Σ_i X_{i,a} ∂L/∂Q_{i,b} (K, V alike)."""
    key, g_key, w_key = f"dL/dw_{name}", f"dL/d{name}", f"w_{name}"

    def explain_weight_gradient(ctx: Context, cell):
        a, b = cell
        x, g = ctx.value("x"), ctx.value(g_key)
        n = x.shape[0]
        terms = [((x[i, a], g[i, b]), (("x", (i, a)), (g_key, (i, b)))) for i in range(n)]
        rhs = rf"\sum_{{i=0}}^{{{n - 1}}} {ref('x', ('i', a))}\, {ref(g_key, ('i', b))}"
        rhs_text = f"Σ_i {ref_text('x', ('i', a))}·{ref_text(g_key, ('i', b))}"
        return _sum(ctx, key, cell, rhs, rhs_text, terms,
                    note=f"(Xᵀ {ref_text(g_key, ())})[{a},{b}]: {TEX[w_key]}[{a},{b}] carries input feature {a} of "
                         f"every word into column {b} of {TEX[name]}, so each word contributes its feature {a} times "
                         f"its gradient there.")
    return explain_weight_gradient


def _bias_gradient_explainer(name: str):
    """∂L/∂b_Q = Σ_i ∂L/∂Q_{i,:} (K, V alike)."""
    key, g_key = f"dL/db_{name}", f"dL/d{name}"

    def explain_bias_gradient(ctx: Context, cell):
        (b,) = cell
        g = ctx.value(g_key)
        n = g.shape[0]
        terms = [((g[i, b],), ((g_key, (i, b)),)) for i in range(n)]
        note = f"{TEX[f'b_{name}']}[{b}] is added to column {b} of {TEX[name]} for every word, so its gradient sums that column."
        if name == "k":
            from ..forward.claims import say
            note += " " + say("train_b_k_zero", _settings(ctx))
        return _sum(ctx, key, cell, rf"\sum_{{i=0}}^{{{n - 1}}} {ref(g_key, ('i', b))}",
                    f"Σ_i {ref_text(g_key, ('i', b))}", terms, note=note)
    return explain_bias_gradient


for _name in ("q", "k", "v"):
    _register(f"dL/dw_{_name}")(_weight_gradient_explainer(_name))
    _register(f"dL/db_{_name}")(_bias_gradient_explainer(_name))


@_register("dL/dx")
def _dl_dx(ctx: Context, cell):
    """∂L/∂X = ∂L/∂Q W_Qᵀ + ∂L/∂K W_Kᵀ + ∂L/∂V W_Vᵀ: three sums, one per path."""
    i, a = cell
    rhs, rhs_text, shown, shown_text, partial, partial_text = [], [], [], [], [], []
    parts, reads, sums, n_terms, hidden = [], [], [], 0, 0
    for name in ("q", "k", "v"):
        g_key, w_key = f"dL/d{name}", f"w_{name}"
        g, w = ctx.value(g_key), ctx.value(w_key)
        width = g.shape[1]
        terms = [((g[i, m], w[a, m]), ((g_key, (i, m)), (w_key, (a, m)))) for m in range(width)]
        s, s_text, products, h = _shown(ctx, terms)
        total = math.fsum(products)
        rhs.append(rf"\sum_{{m=0}}^{{{width - 1}}} {ref(g_key, (i, 'm'))}\, {ref(w_key, (a, 'm'))}")
        rhs_text.append(f"Σ_m {ref_text(g_key, (i, 'm'))}·{ref_text(w_key, (a, 'm'))}")
        shown.append(rf"\left({s}\right)")
        shown_text.append(f"({s_text})")
        partial.append(ctx.factor(total))
        partial_text.append(ctx.factor_text(total))
        sums.append(ctx.num_text(total))
        parts += products
        reads += [r for _, rs in terms for r in rs]
        n_terms, hidden = n_terms + width, hidden + h
    value = math.fsum(parts)
    return _done(ctx, "dL/dx", cell, " + ".join(rhs), " + ".join(rhs_text),
                 " + ".join(shown) + " = " + " + ".join(partial),
                 " + ".join(shown_text) + " = " + " + ".join(partial_text), value,
                 f"Word {_word(ctx, i)}'s input feature {a} feeds its query, key and value, so its gradient adds "
                 f"the three paths (via Q: {sums[0]}, via K: {sums[1]}, via V: {sums[2]}).",
                 n_terms, hidden, reads)
