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

Most steps are one sum of products (Q = X W_Q + b_Q, ∂L/∂W_Q = Xᵀ ∂L/∂Q, …): they are rows of the table
SUMS, read by one explainer; adding such a step's explainer is adding a row. The two softmaxes are rows
of SOFTMAXES. The rest have a shape of their own, each one function: the leaves (X, the parameters, y),
the loss, ∂L/∂f̄ and ∂L/∂F, the row Jacobians, ∂L/∂Ŝ and ∂L/∂X. How a cell is named and how an
Explanation is put together, and the explainer of a Sum row: cell_arithmetic.py.

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

Importing this module registers the explainers; step_trace.py (which makes the trace) imports it, so they are
there whenever a classifier trace can exist. It imports the explanations layer, the claims and cell_arithmetic,
never the classifier, so there is no import cycle.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from ...explanations import Context, join_terms, latex_text, row_excerpt, softmax_fraction
from ...forward.claims import say
from .cell_arithmetic import (FAN_IN, JACOBIAN, TEX, Sum, class_name, explain_sum, explanation, label, ref, ref_text,
                              register, settings, shown_terms, sum_of, word)


# ---- the sums of products: one row a step (Sum, explain_sum: cell_arithmetic.py) -----------------------

def _most_attended(ctx: Context, i: int) -> str:
    a = ctx.value("weights")[i]
    top = int(np.argmax(a))
    return f"word {word(ctx, top)} counts most, with {ctx.num_text(a[top])}"


def _projection_rows(name: str, role: str) -> tuple[Sum, ...]:
    """Q = X W_Q + b_Q, ∂L/∂W_Q = Xᵀ ∂L/∂Q, ∂L/∂b_Q = Σ_i ∂L/∂Q_{i,:} (K, V alike)."""
    w, b, g = f"w_{name}", f"b_{name}", f"dL/d{name}"

    def bias_note(ctx, j):
        note = f"{TEX[b]}[{j}] is added to column {j} of {TEX[name]} for every word, so its gradient sums that column."
        if name == "k":
            note += " " + say("train_b_k_zero", settings(ctx))
        return note

    return (
        Sum(name, "ij", "m", (("x", "im"), (w, "mj")), bias=(b, "j"),
            note=lambda ctx, i, j: f"Word {word(ctx, i)}'s {role}, entry {j}: row {i} of X times column {j} of "
                                   f"{TEX[w]}, plus the bias."),
        Sum(f"dL/d{w}", "ab", "i", (("x", "ia"), (g, "ib")),
            note=lambda ctx, a, b: f"(Xᵀ {ref_text(g)})[{a},{b}]: {TEX[w]}[{a},{b}] carries input feature {a} of "
                                   f"every word into column {b} of {TEX[name]}, so each word contributes its feature "
                                   f"{a} times its gradient there."),
        Sum(f"dL/d{b}", "b", "i", ((g, "ib"),), note=bias_note),
    )


SUMS = (
    # forward: Ŝ = Q Kᵀ / √d_k, C = A V, F = C W_O + b_O, f̄ = the mean of F's rows
    Sum("scores", "ij", "m", (("q", "im"), ("k", "jm")), scale="/√d_k",
        note=lambda ctx, i, j: f"Query {word(ctx, i)} against key {word(ctx, j)}: their dot product, divided by "
                               f"√d_k = √{ctx.value('q').shape[1]} (the classifier's scores Ŝ are scaled: "
                               "Ŝ = S / √d_k)."),
    Sum("context", "ij", "m", (("weights", "im"), ("v", "mj")),
        note=lambda ctx, i, j: f"Column {j} of V averaged with row {i} of the weights; {_most_attended(ctx, i)}."),
    Sum("f", "ic", "m", (("context", "im"), ("w_o", "mc")), bias=("b_o", "c"),
        note=lambda ctx, i, c: f"Word {word(ctx, i)}'s score for class {class_name(ctx, c)}: its context vector "
                               f"times column {c} of W_O, plus the bias."),
    Sum("pooled", "c", "i", (("f", "ic"),), scale="1/n",
        note=lambda ctx, c: f"The sentence's logit for class {class_name(ctx, c)}: the mean of the {ctx.trace.n} "
                            "words' scores."),
    # backward: F = C W_O + b_O, C = A V, Ŝ = Q Kᵀ / √d_k
    Sum("dL/dw_o", "ac", "i", (("context", "ia"), ("dL/df", "ic")),
        note=lambda ctx, a, c: f"(Cᵀ ∂L/∂F)[{a},{c}]: W_O[{a},{c}] carries context entry {a} of every word into "
                               f"class {class_name(ctx, c)}, so its gradient pairs that input with the class's "
                               f"gradient, word by word (every row of ∂L/∂F is the same: this is (p_{c} − y_{c}) "
                               f"times the mean of column {a} of C)."),
    Sum("dL/db_o", "c", "i", (("dL/df", "ic"),),
        note=lambda ctx, c: f"b_O[{c}] is added to every word's row of F, so its gradient sums the rows; the "
                            f"{ctx.trace.n} equal shares add back up to p_{c} − y_{c}."),
    Sum("dL/dcontext", "ia", "c", (("dL/df", "ic"), ("w_o", "ac")),
        note=lambda ctx, i, a: f"(∂L/∂F W_Oᵀ)[{i},{a}]: context entry {a} of word {word(ctx, i)} reaches every "
                               f"class score through row {a} of W_O, so the three class gradients come back "
                               "weighted by it."),
    Sum("dL/dweights", "ij", "a", (("dL/dcontext", "ia"), ("v", "ja")),
        note=lambda ctx, i, j: f"(∂L/∂C Vᵀ)[{i},{j}]: if word {word(ctx, i)} attended a little more to word "
                               f"{word(ctx, j)}, its context would move towards value row {j}; this dot product "
                               "is how much the loss cares."),
    Sum("dL/dv", "ja", "i", (("weights", "ij"), ("dL/dcontext", "ia")),
        note=lambda ctx, j, a: f"(Aᵀ ∂L/∂C)[{j},{a}]: value row {j} (word “{ctx.trace.tokens[j]}”) went into "
                               f"every word's context with weight A[i,{j}], so it collects each word's gradient "
                               "in that proportion."),
    Sum("dL/dq", "im", "j", (("dL/dscores", "ij"), ("k", "jm")), scale="1/√d_k",
        note=lambda ctx, i, m: f"Query {word(ctx, i)} meets every key in row {i} of the scores, so its gradient "
                               f"mixes the keys' column {m} by that row's score gradients; Ŝ is Q Kᵀ divided by "
                               "√d_k, so this is too."),
    Sum("dL/dk", "jm", "i", (("dL/dscores", "ij"), ("q", "im")), scale="1/√d_k",
        note=lambda ctx, j, m: f"Key {word(ctx, j)} meets every query in column {j} of the scores, so its "
                               f"gradient mixes the queries' column {m} by that column's score gradients, over "
                               "√d_k as in Ŝ."),
    # Q = X W_Q + b_Q and its gradients; K, V alike
    *_projection_rows("q", "query"), *_projection_rows("k", "key"), *_projection_rows("v", "value"),
)

for _row in SUMS:
    register(_row.key)(functools.partial(explain_sum, _row))


# ---- the softmaxes: A_{i,:} = softmax(Ŝ_{i,:}), p = softmax(f̄) ----------------------------------------

# key: (the logits it is the softmax of, the letter of their sum, note(ctx, *cell))
SOFTMAXES = {
    "weights": ("scores", "j'", lambda ctx, i, j: f"Row {i} is its own softmax over the {ctx.trace.n} keys: how "
                                                  f"word {word(ctx, i)} spreads its attention; this is the share of "
                                                  f"key {word(ctx, j)}."),
    "p": ("pooled", "c'", lambda ctx, c: f"The probability of class {class_name(ctx, c)}: a softmax over the 3 "
                                         "pooled logits."),
}


def explain_softmax(key: str, ctx: Context, cell):
    """cell = exp(s_j − m) / Σ_j' exp(s_j' − m), m = max_j' s_j', over the row of the logits the cell is in."""
    src, var, note = SOFTMAXES[key]
    *row_index, j = cell
    s = [float(v) for v in ctx.value(src)[tuple(row_index)]]
    top = max(s)
    e = [math.exp(v - top) for v in s]
    e_sum = math.fsum(e)
    n = len(s)
    row = ref(src, (*row_index, var))
    rhs = (rf"\frac{{\exp({ref(src, (*row_index, j))} - m)}}{{\sum_{{{var}=0}}^{{{n - 1}}} \exp({row} - m)}},"
           rf"\quad m = \max_{{{var}}} {row}")
    rhs_text = (f"exp({ref_text(src, (*row_index, j))} - m) / Σ_{var} exp({ref_text(src, (*row_index, var))} - m), "
                f"m = max")
    exps = [rf"e^{{{ctx.num(v)} - {ctx.factor(top)}}}" for v in s]
    exps_text = [f"exp({ctx.num_text(v)} - {ctx.factor_text(top)})" for v in s]
    substituted, substituted_text, hidden = softmax_fraction(ctx, exps, exps_text, e, j, e_sum)
    why = note(ctx, *cell) + (f" Subtracting the maximum m = {ctx.num_text(top)} keeps exp from overflowing and "
                              "changes nothing.")
    return explanation(ctx, key, cell, rhs, rhs_text, substituted, substituted_text, e[j] / e_sum, why, n, hidden,
                [(src, (*row_index, jj)) for jj in range(n)])


for _key in SOFTMAXES:
    register(_key)(functools.partial(explain_softmax, _key))


# ---- leaves: the input, the parameters, the label --------------------------------------------------------

@register("x")
def _x(ctx: Context, cell):
    i, a = cell
    x = ctx.value("x")
    n, d_in = x.shape
    value = float(x[cell])
    substituted, hidden = row_excerpt([ctx.num(v) for v in x[i]], a)
    substituted_text, _ = row_excerpt([ctx.num_text(v) for v in x[i]], a, latex=False)
    positional, combine = settings(ctx).positional, settings(ctx).combine
    index_column = positional == "index" and np.array_equal(x[:, -1], np.arange(n))
    where = (f"column {a} of columns 0 … {d_in - 1} (boxed). X is the input: nothing on this page computes it from "
             "other numbers, so the number is read back.")
    row = f"Row {i} is the input vector of word {word(ctx, i)}"
    if index_column and a == d_in - 1:
        value = float(i)                                       # seed 000's position column: regenerated
        note = (f"The last column of X is the word's position (tutorial 1's index feature): word {word(ctx, i)} "
                f"is at position {i}.")
    elif index_column:
        note = f"{row}: its embedding in columns 0 … {d_in - 2}, its position in the last column, {d_in - 1}; " + where
    elif positional == "sinusoidal" and combine == "concat" and d_in % 2 == 0:
        half = d_in // 2
        note = (f"{row}: its embedding in columns 0 … {half - 1}, then the sinusoidal encoding of its position {i} "
                f"in columns {half} … {d_in - 1} (this entry is in the " + ("embedding" if a < half else "encoding")
                + "); " + where)
    elif positional == "sinusoidal":
        note = f"{row}: its embedding plus the sinusoidal encoding of its position {i}; " + where
    elif positional == "none":
        note = f"{row}: its embedding alone, no position; " + where
    else:
        note = f"{row}; " + where
    token = ctx.trace.tokens[i]
    return explanation(ctx, "x", cell, rf"x\left({latex_text(token)}\right)_{{{a}}}", f"x('{token}')[{a}]",
                rf"\left[{substituted}\right]_{{{a}}}", f"[{substituted_text}][{a}]", value, note, d_in, hidden,
                independent=bool(index_column and a == d_in - 1))


def explain_parameter(key: str, ctx: Context, cell):
    value = float(ctx.value(key)[cell])
    init = "at 0" if key.startswith("b_") else f"as a seeded draw from N(0, 1/{FAN_IN[key]})"
    note = (f"A parameter: no formula makes it. It starts {init} and each gradient step moves it "
            f"by −η·{ref_text('dL/d' + key, cell)}, unless it is frozen; here it is read from the trace.")
    return explanation(ctx, key, cell, r"\text{learned}", "learned", ctx.num(value), ctx.num_text(value), value,
                note, independent=False)


for _key in ("w_q", "b_q", "w_k", "b_k", "w_v", "b_v", "w_o", "b_o"):
    register(_key)(functools.partial(explain_parameter, _key))


@register("y")
def _y(ctx: Context, cell):
    (c,) = cell
    classes = ctx.trace.facts["classes"]
    y = classes.index(ctx.trace.facts["label"])
    return explanation(ctx, "y", cell, rf"[\,{c} = y\,],\ y = {y}", f"[{c} = y], y = {y}",
                rf"[\,{c} = {y}\,]", f"[{c} = {y}]", float(c == y),
                f"One-hot label: the sentence is {classes[y]} (class {y}), so y is 1 there and 0 for "
                f"{classes[c] if c != y else 'the other classes'}.")


# ---- the loss, and the first two gradients: L = −log softmax(f̄)_y, f̄ = mean_i F_{i,:} ------------------

@register("loss")
def _loss(ctx: Context, cell):
    f = [float(v) for v in ctx.value("pooled")]
    y = label(ctx)
    p_y = float(ctx.value("p")[y])
    top = max(f)
    value = top + math.log(math.fsum(math.exp(v - top) for v in f)) - f[y]      # log Σ e^f̄ − f̄_y, no log(0)
    rhs = (rf"-\log {ref('p', (y,))} = \log \sum_{{c=0}}^{{{len(f) - 1}}} e^{{{ref('pooled', ('c',))}}} "
           rf"- {ref('pooled', (y,))}")
    rhs_text = f"-log p[{y}] = log Σ_c exp(f̄[c]) - f̄[{y}]"
    exps, _ = join_terms([rf"e^{{{ctx.num(v)}}}" for v in f])
    exps_text, _ = join_terms([f"exp({ctx.num_text(v)})" for v in f], latex=False)
    substituted = rf"-\log {ctx.num(p_y)} = \log\left({exps}\right) - {ctx.factor(f[y])}"
    substituted_text = f"-log {ctx.num_text(p_y)} = log({exps_text}) - {ctx.factor_text(f[y])}"
    return explanation(ctx, "loss", cell, rhs, rhs_text, substituted, substituted_text, value,
                f"Cross-entropy: the true class is {class_name(ctx, y)}, which the model gives p = "
                f"{ctx.num_text(p_y)}; the surer and righter, the closer to 0. (Computed as log Σ e^f̄ − f̄_y, so "
                "a tiny p_y never means log 0.)", len(f), 0,
                [("pooled", (c,)) for c in range(len(f))] + [("p", (y,)), ("y", (y,))])


def _pooled_direction(true_class: bool, value: float) -> str:
    """What the sign of p_c − y_c asks of gradient descent, from the value itself (p can round to 1 or 0)."""
    if value == 0:
        return ("It is exactly 0: the model gives " + ("the true class probability 1" if true_class else
                "this class probability 0") + " to the last digit, so gradient descent leaves its logit alone.")
    if true_class:
        return "It is the true class, so the gradient is negative and gradient descent raises its logit."
    return "It is not the true class, so the gradient is positive and gradient descent lowers its logit."


@register("dL/dpooled")
def _dl_dpooled(ctx: Context, cell):
    (c,) = cell
    p, y = float(ctx.value("p")[c]), float(ctx.value("y")[c])
    value = p - y
    return explanation(ctx, "dL/dpooled", cell, f"{ref('p', (c,))} - {ref('y', (c,))}", f"p[{c}] - y[{c}]",
                f"{ctx.num(p)} - {ctx.factor(y)}", f"{ctx.num_text(p)} - {ctx.factor_text(y)}", value,
                f"Softmax then cross-entropy: predicted minus true probability of class {class_name(ctx, c)}. "
                + _pooled_direction(bool(y), value),
                reads=(("p", (c,)), ("y", (c,))))


@register("dL/df")
def _dl_df(ctx: Context, cell):
    i, c = cell
    n = ctx.value("f").shape[0]
    p, y = float(ctx.value("p")[c]), float(ctx.value("y")[c])
    return explanation(ctx, "dL/df", cell,
                rf"\frac{{1}}{{n}} {ref('dL/dpooled', (c,))} = \frac{{{ref('p', (c,))} - {ref('y', (c,))}}}{{n}}",
                f"(1/n)·dL/df̄[{c}] = (p[{c}] - y[{c}]) / n",
                rf"\frac{{{ctx.num(p)} - {ctx.factor(y)}}}{{{n}}}",
                f"({ctx.num_text(p)} - {ctx.factor_text(y)}) / {n}", (p - y) / n,
                f"f̄ is the mean of the {n} rows of F, so word {word(ctx, i)}, like every word, gets the same "
                f"1/{n} share of ∂L/∂f̄[{c}].", reads=(("dL/dpooled", (c,)), ("p", (c,)), ("y", (c,))))


# ---- through the softmax of each row: J_i = diag(a_i) − a_i a_iᵀ, ∂L/∂Ŝ_{i,:} = J_i ∂L/∂A_{i,:} ------------

@register(JACOBIAN)
def _jacobian(ctx: Context, cell):
    i, j, l = cell
    a_j, a_l = float(ctx.value("weights")[i, j]), float(ctx.value("weights")[i, l])
    delta = int(j == l)
    value = (a_j if delta else 0.0) - a_j * a_l                  # diag(a_i) − a_i a_iᵀ, as softmax_jacobians
    rhs = (rf"\frac{{\partial {ref('weights', (i, j))}}}{{\partial {ref('scores', (i, l))}}} = "
           rf"{ref('weights', (i, j))} \left(\delta_{{{j},{l}}} - {ref('weights', (i, l))}\right)")
    rhs_text = f"dA[{i},{j}]/dŜ[{i},{l}] = A[{i},{j}]·(δ[{j},{l}] - A[{i},{l}])"
    substituted = rf"{ctx.num(a_j)} \cdot \left({delta} - {ctx.factor(a_l)}\right)"
    substituted_text = f"{ctx.num_text(a_j)}·({delta} - {ctx.factor_text(a_l)})"
    note = (f"Row {i} of A is its own softmax, so it has its own Jacobian J_{i} = diag(a_{i}) − a_{i} a_{i}ᵀ; "
            + ("on the diagonal: raising a score raises its own weight at the rate a(1 − a)." if delta else
               f"off the diagonal: raising key {l}'s score takes weight from key {j}."))
    return explanation(ctx, JACOBIAN, cell, rhs, rhs_text, substituted, substituted_text, value, note,
                reads=(("weights", (i, j)), ("weights", (i, l))))


@register("dL/dscores")
def _dl_dscores(ctx: Context, cell):
    i, j = cell
    a, g = ctx.value("weights")[i], ctx.value("dL/dweights")[i]
    # a_iᵀ ∂L/∂A_{i,:}: the row's weight-averaged gradient
    terms, inner_rhs, inner_rhs_text, n = sum_of(ctx, (("weights", "im"), ("dL/dweights", "im")), "m", {"i": i})
    inner, inner_text, products, hidden = shown_terms(ctx, terms)
    mean = math.fsum(products)
    value = float(a[j]) * (float(g[j]) - mean)
    rhs = rf"{ref('weights', (i, j))} \left({ref('dL/dweights', (i, j))} - {inner_rhs}\right)"
    rhs_text = f"{ref_text('weights', (i, j))}·({ref_text('dL/dweights', (i, j))} - {inner_rhs_text})"
    substituted = (rf"{ctx.num(a[j])} \cdot \left({ctx.num(g[j])} - \left({inner}\right)\right)"
                   rf" = {ctx.num(a[j])} \cdot \left({ctx.num(g[j])} - {ctx.factor(mean)}\right)")
    substituted_text = (f"{ctx.num_text(a[j])}·({ctx.num_text(g[j])} - ({inner_text}))"
                        f" = {ctx.num_text(a[j])}·({ctx.num_text(g[j])} - {ctx.factor_text(mean)})")
    note = (f"Row {i}'s softmax Jacobian J_{i} applied to row {i} of ∂L/∂A: the weight "
            f"A[{i},{j}] times how far key {j}'s gradient is above the row's weight-averaged gradient "
            f"{ctx.num_text(mean)}. Raising one score takes weight from all the others, hence the subtraction.")
    reads = [r for _, rs in terms for r in rs] + [("dL/dweights", (i, j))]
    return explanation(ctx, "dL/dscores", cell, rhs, rhs_text, substituted, substituted_text, value, note, n, hidden, reads)


# ---- into the input: X feeds Q, K and V --------------------------------------------------------------------

@register("dL/dx")
def _dl_dx(ctx: Context, cell):
    """∂L/∂X = ∂L/∂Q W_Qᵀ + ∂L/∂K W_Kᵀ + ∂L/∂V W_Vᵀ: three sums, one per path."""
    i, a = cell
    rhs, rhs_text, substituted, substituted_text, partial, partial_text = [], [], [], [], [], []
    parts, reads, sums, n_terms, hidden = [], [], [], 0, 0
    for name in ("q", "k", "v"):
        terms, path, path_text, width = sum_of(ctx, ((f"dL/d{name}", "im"), (f"w_{name}", "am")), "m",
                                               {"i": i, "a": a})
        s, s_text, products, h = shown_terms(ctx, terms)
        path_total = math.fsum(products)
        rhs.append(path)
        rhs_text.append(path_text)
        substituted.append(rf"\left({s}\right)")
        substituted_text.append(f"({s_text})")
        partial.append(ctx.factor(path_total))
        partial_text.append(ctx.factor_text(path_total))
        sums.append(ctx.num_text(path_total))
        parts += products
        reads += [r for _, rs in terms for r in rs]
        n_terms, hidden = n_terms + width, hidden + h
    return explanation(ctx, "dL/dx", cell, " + ".join(rhs), " + ".join(rhs_text),
                " + ".join(substituted) + " = " + " + ".join(partial),
                " + ".join(substituted_text) + " = " + " + ".join(partial_text), math.fsum(parts),
                f"Word {word(ctx, i)}'s input feature {a} feeds its query, key and value, so its gradient adds "
                f"the three paths (via Q: {sums[0]}, via K: {sums[1]}, via V: {sums[2]}).",
                n_terms, hidden, reads)
