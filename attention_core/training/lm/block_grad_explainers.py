r"""Every gradient of the block's training step explained, cell by cell, recomputed from its terms.

step_trace.py makes a trace of kind "block_grad" and writes, for each gradient step, how it is made:
trace.facts["rules"][key] = (rule, operand keys). One explainer per rule reads the operands' cells and redoes
the arithmetic in scalars (math.fsum), never reading the cell it explains:

    ce        ∂L/∂Z_{i,j} = (P_{i,j} − [j = y_i]) / (n − 1), P recomputed from the row of Z
    matT      ∂L/∂W_{a,b} = Σ_i R_{i,a} ∂L/∂Y_{i,b}          (every weight)
    matWt     ∂L/∂R_{i,a} = Σ_b ∂L/∂Y_{i,b} W_{a,b}          (back through a weight)
    colsum    ∂L/∂b_j = Σ_i ∂L/∂Y_{i,j}                      (a bias, a norm's β)
    gamma     ∂L/∂γ_j = Σ_i ∂L/∂Y_{i,j} x̂_{i,j}, x̂ recomputed from the norm's input row
    norm_in   a norm's input, from its whole row: (u_j − ū − x̂_j·mean(u ⊙ x̂)) / s, s = √(σ² + ε), or u_j/r − x_j·mean(u ⊙ x)/r³
    copy      a residual add passes its gradient on unchanged
    add       the stream's gradient: what skips the sublayer plus what flows back through it
    three     ∂L/∂Q W_Qᵀ + ∂L/∂K W_Kᵀ + ∂L/∂V W_Vᵀ
    gelu      ∂L/∂H = ∂L/∂GELU(H) · (Φ(h) + h φ(h))
    dweights, dscores, dq, dk, dv   attention, head by head
    tok, pos  the embeddings: a token's row sums its positions' gradients

Importing this module registers them (step_trace.py imports it).
"""
from __future__ import annotations

import math

from ...explanations import Context, Explanation, join_terms, register
from ...explanations.symbols import cell_of

KIND = "block_grad"
_LAYER_STEPS = ("ln1", "attn", "sum1", "mid", "ln2", "hidden", "act", "mlp", "sum2", "out", "q", "k", "v", "weights",
                "scores", "concat", "attn_branch", "mlp_branch", "w_q", "w_k", "w_v", "w_o", "w_1", "b_1", "w_2", "b_2",
                "ln1.g", "ln1.b", "ln2.g", "ln2.b")
GRADIENTS = ("logits", "w_u", "ln_f", "ln_f.g", "ln_f.b", "x", "tok_emb", "pos_emb",
             *[f"l{l}.{s}" for l in range(4) for s in _LAYER_STEPS])


def _sym(ctx: Context, key: str) -> tuple[str, str]:
    return ctx.trace.facts["symbols"].get(key, (key, key))


def _ref(ctx: Context, key: str, index) -> str:
    return cell_of(_sym(ctx, key)[0], ",".join(str(i) for i in index))


def _ref_text(ctx: Context, key: str, index) -> str:
    return f"{_sym(ctx, key)[1]}[{','.join(str(i) for i in index)}]"


def _done(ctx, key, cell, rhs, rhs_text, shown, shown_text, value, note, reads=(), n_terms=0, hidden=0):
    lhs, lhs_text = _ref(ctx, key, cell), _ref_text(ctx, key, cell)
    value = float(value)
    return Explanation(key, cell, f"{lhs} = {rhs}", shown, f"{lhs} = {ctx.num(value)}", value,
                       f"{lhs_text} = {rhs_text}\n  = {shown_text}\n  = {ctx.num_text(value)}", note=note,
                       n_terms=n_terms, n_elided=hidden, reads=tuple(reads))


def _products(ctx, key, cell, pairs, rhs, rhs_text, note, divisor=None):
    """Σ a·b over pairs = [(a_key, a_index, b_key, b_index)] (b_key None: b_index is a (latex, value) computed)."""
    terms, reads = [], []
    for a_key, a_index, b_key, b_index in pairs:
        a = float(ctx.value(a_key)[a_index])
        b = float(ctx.value(b_key)[b_index]) if b_key else float(b_index[1])
        terms.append(a * b)
        reads += [(a_key, a_index)] + ([(b_key, b_index)] if b_key else [])
    shown, hidden = join_terms([rf"{ctx.factor(ctx.value(a)[i])} \cdot "
                                rf"{ctx.factor(ctx.value(b)[j] if b else j[1])}" for a, i, b, j in pairs])
    shown_text, _ = join_terms([f"{ctx.factor_text(ctx.value(a)[i])}·{ctx.factor_text(ctx.value(b)[j] if b else j[1])}"
                                for a, i, b, j in pairs], latex=False)
    value = math.fsum(terms)
    if divisor is not None:
        value /= divisor[1]
        shown, shown_text = rf"\frac{{{shown}}}{{{divisor[0]}}}", f"({shown_text}) / {divisor[0]}"
    return _done(ctx, key, cell, rhs, rhs_text, shown, shown_text, value, note, reads, len(pairs), hidden)


def _plain_sum(ctx, key, cell, items, rhs, rhs_text, note):
    """Σ of stored cells: items = [(step key, index)]."""
    values = [float(ctx.value(k)[i]) for k, i in items]
    shown, hidden = join_terms([ctx.factor(v) for v in values]) if values else ("0", 0)
    shown_text, _ = join_terms([ctx.factor_text(v) for v in values], latex=False) if values else ("0", 0)
    return _done(ctx, key, cell, rhs, rhs_text, shown, shown_text, math.fsum(values), note, items, len(items), hidden)


def _norm_row(ctx: Context, x_key: str, i: int):
    """(x̂ row, σ or r, mean) recomputed from the norm's input row i, as the trace's arch normalises."""
    arch = ctx.trace.facts["arch"]
    x = [float(v) for v in ctx.value(x_key)[i]]
    d = len(x)
    if arch.norm == "layer":
        mu = math.fsum(x) / d
        sigma = math.sqrt(math.fsum((v - mu) ** 2 for v in x) / d + arch.eps)
        return [(v - mu) / sigma for v in x], sigma, mu
    r = math.sqrt(math.fsum(v * v for v in x) / d + arch.eps)
    return [v / r for v in x], r, 0.0


def _rule_explainer(key: str):
    def explain(ctx: Context, cell) -> Explanation:
        rule, ops = ctx.trace.facts["rules"][key]
        return RULES[rule](ctx, key, cell, *ops)
    return explain


# ---- the rules ---------------------------------------------------------------------------------------------

def _ce(ctx, key, cell, logits):
    i, j = cell
    n = ctx.trace.n
    if i == n - 1:
        return _done(ctx, key, cell, "0", "0", "0", "0", 0.0,
                     "The last token has no token after it in the sentence, so the loss does not score its logits.")
    z = [float(v) for v in ctx.value(logits)[i]]
    top = max(z)
    p = math.exp(z[j] - top) / math.fsum(math.exp(v - top) for v in z)
    y = ctx.trace.facts["targets"][i]
    hit = int(j == y)
    word = ctx.trace.facts["vocab"][y]
    return _done(ctx, key, cell, rf"\frac{{P_{{{i},{j}}} - [\,{j} = y_{{{i}}}\,]}}{{n - 1}}",
                 f"(P[{i},{j}] - [{j} = y_{i}]) / (n - 1)", rf"\frac{{{ctx.num(p)} - {hit}}}{{{n - 1}}}",
                 f"({ctx.num_text(p)} - {hit}) / {n - 1}", (p - hit) / (n - 1),
                 f"P recomputed from row {i} of Z (softmax). The token after position {i} is “{word}” (y_{i} = {y}); "
                 + ("this is it, so the gradient pushes its logit up, by 1 − P" if hit else "this is another token, "
                    "so the gradient pushes its logit down, by its probability P")
                 + (f", divided by the {n - 1} scored positions (the loss is their mean)." if n > 2 else
                    " (one position is scored, so nothing is divided)."), [(logits, (i, k)) for k in range(len(z))])


def _mat_t(ctx, key, cell, a, g):
    p, q = cell
    n = ctx.value(a).shape[0]
    return _products(ctx, key, cell, [(a, (i, p), g, (i, q)) for i in range(n)],
                     rf"\sum_{{i=0}}^{{{n - 1}}} {_ref(ctx, a, ('i', p))}\, {_ref(ctx, g, ('i', q))}",
                     f"Σ_i {_ref_text(ctx, a, ('i', p))}·{_ref_text(ctx, g, ('i', q))}",
                     f"Entry ({p}, {q}) carries input column {p} into output column {q} at every position, so its "
                     "gradient adds, position by position, that input times that output's gradient.")


def _mat_wt(ctx, key, cell, g, w):
    i, a = cell
    m = ctx.value(w).shape[1]
    return _products(ctx, key, cell, [(g, (i, b), w, (a, b)) for b in range(m)],
                     rf"\sum_{{b=0}}^{{{m - 1}}} {_ref(ctx, g, (i, 'b'))}\, {_ref(ctx, w, (a, 'b'))}",
                     f"Σ_b {_ref_text(ctx, g, (i, 'b'))}·{_ref_text(ctx, w, (a, 'b'))}",
                     f"Input {a} of row {i} reaches all {m} outputs through row {a} of the weights, so their gradients "
                     "come back weighted by it.")


def _colsum(ctx, key, cell, g):
    (j,) = cell
    n = ctx.value(g).shape[0]
    return _plain_sum(ctx, key, cell, [(g, (i, j)) for i in range(n)], rf"\sum_{{i=0}}^{{{n - 1}}} "
                      + _ref(ctx, g, ("i", j)), f"Σ_i {_ref_text(ctx, g, ('i', j))}",
                      "Added to every row, so its gradient sums the column over the rows.")


def _gamma(ctx, key, cell, g, x):
    (j,) = cell
    n = ctx.value(g).shape[0]
    pairs = [(g, (i, j), None, (rf"\hat x_{{{i},{j}}}", _norm_row(ctx, x, i)[0][j])) for i in range(n)]
    return _products(ctx, key, cell, pairs, rf"\sum_{{i=0}}^{{{n - 1}}} {_ref(ctx, g, ('i', j))}\, \hat x_{{i,{j}}}",
                     f"Σ_i {_ref_text(ctx, g, ('i', j))}·x̂[i,{j}]",
                     f"x̂ is the norm's input row normalised, recomputed from {_sym(ctx, x)[1]}. "
                     f"{_sym(ctx, key[4:])[1]}[{j}] scales column {j} of every row, so each row adds its gradient "
                     "there times the x̂ it scaled.")


def _norm_in(ctx, key, cell, g, x, gamma):
    i, j = cell
    arch = ctx.trace.facts["arch"]
    x_hat, sigma, _ = _norm_row(ctx, x, i)
    d = len(x_hat)
    u = [float(ctx.value(g)[i, k]) * float(ctx.value(gamma)[k]) for k in range(d)]
    reads = [(g, (i, k)) for k in range(d)] + [(x, (i, k)) for k in range(d)] + [(gamma, (k,)) for k in range(d)]
    if arch.norm == "layer":
        u_bar, ux = math.fsum(u) / d, math.fsum(a * b for a, b in zip(u, x_hat)) / d
        value = (u[j] - u_bar - x_hat[j] * ux) / sigma
        rhs = rf"\frac{{u_{{{j}}} - \bar u - \hat x_{{{i},{j}}}\, \overline{{u \odot \hat x}}}}{{s_{{{i}}}}}"
        shown = (rf"\frac{{{ctx.num(u[j])} - {ctx.factor(u_bar)} - {ctx.factor(x_hat[j])} \cdot {ctx.factor(ux)}}}"
                 rf"{{{ctx.num(sigma)}}}")
        shown_text = (f"({ctx.num_text(u[j])} - {ctx.factor_text(u_bar)} - {ctx.factor_text(x_hat[j])}·"
                      f"{ctx.factor_text(ux)}) / {ctx.num_text(sigma)}")
        note = (f"u = ∂L/∂y ⊙ γ along row {i}; ū = {ctx.num_text(u_bar)} its mean, mean(u ⊙ x̂) = {ctx.num_text(ux)}, "
                f"s = √(σ² + ε) = {ctx.num_text(sigma)} and x̂ = (x − μ)/s, all from the row's {d} entries: moving one "
                "input moves the row's mean and variance, and so every output of the row.")
        return _done(ctx, key, cell, rhs, "(u_j - ū - x̂_j·mean(u⊙x̂)) / s", shown, shown_text, value, note, reads, d)
    xs = [float(v) for v in ctx.value(x)[i]]
    ux = math.fsum(a * b for a, b in zip(u, xs)) / d
    value = u[j] / sigma - xs[j] * ux / sigma ** 3
    rhs = rf"\frac{{u_{{{j}}}}}{{r_{{{i}}}}} - x_{{{i},{j}}} \frac{{\overline{{u \odot x}}}}{{r_{{{i}}}^3}}"
    shown = rf"\frac{{{ctx.num(u[j])}}}{{{ctx.num(sigma)}}} - {ctx.factor(xs[j])} \cdot \frac{{{ctx.num(ux)}}}{{{ctx.num(sigma)}^3}}"
    shown_text = f"{ctx.num_text(u[j])} / {ctx.num_text(sigma)} - {ctx.factor_text(xs[j])}·{ctx.num_text(ux)} / {ctx.num_text(sigma)}³"
    note = (f"u = ∂L/∂y ⊙ γ along row {i}, mean(u ⊙ x) = {ctx.num_text(ux)}, r = √(mean x² + ε) = "
            f"{ctx.num_text(sigma)}: moving one input moves the row's r, and so every output of the row.")
    return _done(ctx, key, cell, rhs, "u_j / r - x_j·mean(u⊙x) / r³", shown, shown_text, value, note, reads, d)


def _copy(ctx, key, cell, g):
    v = float(ctx.value(g)[cell])
    return _done(ctx, key, cell, _ref(ctx, g, cell), _ref_text(ctx, g, cell), ctx.num(v), ctx.num_text(v), v,
                 "A residual add y = x + f passes ∂L/∂y to f's output unchanged: ∂y/∂f = 1.", [(g, cell)], 1)


def _add(ctx, key, cell, skip, branch):
    a, b = float(ctx.value(skip)[cell]), float(ctx.value(branch)[cell])
    return _done(ctx, key, cell, f"{_ref(ctx, skip, cell)} + {_ref(ctx, branch, cell)}",
                 f"{_ref_text(ctx, skip, cell)} + {_ref_text(ctx, branch, cell)}",
                 f"{ctx.num(a)} + {ctx.factor(b)}", f"{ctx.num_text(a)} + {ctx.factor_text(b)}", math.fsum((a, b)),
                 "The stream feeds the sublayer and skips past it; the add copies the gradient to both, so the "
                 f"stream's gradient is the sum: {ctx.num_text(a)} from the skip, {ctx.num_text(b)} back through the "
                 "sublayer.", [(skip, cell), (branch, cell)], 2)


def _three(ctx, key, cell, dq, wq, dk, wk, dv, wv):
    i, a = cell
    pairs = [(g, (i, c), w, (a, c)) for g, w in ((dq, wq), (dk, wk), (dv, wv)) for c in range(ctx.value(w).shape[1])]
    rhs = " + ".join(rf"\sum_c {_ref(ctx, g, (i, 'c'))}\, {_ref(ctx, w, (a, 'c'))}" for g, w in ((dq, wq), (dk, wk), (dv, wv)))
    return _products(ctx, key, cell, pairs, rhs, "Σ_c dQ·W_Q + Σ_c dK·W_K + Σ_c dV·W_V",
                     f"Row {i} of what attention read made its query, its key and its value: three paths, added.")


def _gelu(ctx, key, cell, g, hidden):
    h = float(ctx.value(hidden)[cell])
    slope = 0.5 * (1 + math.erf(h / math.sqrt(2))) + h * math.exp(-h * h / 2) / math.sqrt(2 * math.pi)
    a = float(ctx.value(g)[cell])
    return _done(ctx, key, cell, rf"{_ref(ctx, g, cell)} \left(\Phi(h) + h\,\varphi(h)\right),\ h = {_ref(ctx, hidden, cell)}",
                 f"{_ref_text(ctx, g, cell)}·(Φ(h) + h φ(h))", rf"{ctx.factor(a)} \cdot {ctx.factor(slope)}",
                 f"{ctx.factor_text(a)}·{ctx.factor_text(slope)}", a * slope,
                 f"GELU's slope at h = {ctx.num_text(h)} is {ctx.num_text(slope)}.", [(g, cell), (hidden, cell)], 2)


def _width(ctx, key):
    return ctx.value(key).shape[1] // ctx.trace.facts["n_heads"]


def _dweights(ctx, key, cell, dc, v):
    h, i, j = cell
    d = _width(ctx, v)
    return _products(ctx, key, cell, [(dc, (i, h * d + m), v, (j, h * d + m)) for m in range(d)],
                     rf"\sum_m {_ref(ctx, dc, (i, f'{h * d}+m'))}\, {_ref(ctx, v, (j, f'{h * d}+m'))}",
                     f"Σ_m dC[{i},{h * d}+m]·V[{j},{h * d}+m]",
                     f"Head {h}'s columns {h * d} … {h * d + d - 1}: how much token {i}'s context would move the loss "
                     f"if it took a little more of value row {j}." + (masked_weight_note(i, j) if j > i else ""))


def masked_weight_note(i: int, j: int) -> str:
    """What ∂L/∂A says at a key the causal mask hides (j > i): a number, not a change that can happen."""
    return (f" But key {j} comes after query {i}: the causal mask hides it, so A[{i}, {j}] is 0 and stays 0 whatever "
            f"the weights do (its score is −∞ before softmax). This number is only what the loss would do if that "
            f"weight could move; it cannot, and the chain rule stops here: ∂L/∂Ŝ at this key is A·(…) = 0, so "
            f"nothing of it reaches the queries, keys or values.")


def _dscores(ctx, key, cell, weights, dw):
    h, i, j = cell
    a = [float(v) for v in ctx.value(weights)[h, i]]
    g = [float(v) for v in ctx.value(dw)[h, i]]
    s = math.fsum(x * y for x, y in zip(a, g))
    row = _ref(ctx, dw, (h, i, "j'"))
    rhs = rf"A_{{{h},{i},{j}}} \left( {_ref(ctx, dw, (h, i, j))} - \sum_{{j'}} A_{{{h},{i},j'}}\, {row} \right)"
    return _done(ctx, key, cell, rhs, f"A[{h},{i},{j}]·(dA[{h},{i},{j}] - Σ_j' A·dA)",
                 rf"{ctx.factor(a[j])} \cdot \left({ctx.num(g[j])} - {ctx.factor(s)}\right)",
                 f"{ctx.factor_text(a[j])}·({ctx.num_text(g[j])} - {ctx.factor_text(s)})", a[j] * (g[j] - s),
                 f"Row {i} of head {h} is one softmax: Σ_j' A·∂L/∂A = {ctx.num_text(s)} over the row."
                 + (" This key is hidden by the causal mask: its weight is 0, so its gradient is 0." if j > i else ""),
                 [(weights, (h, i, k)) for k in range(len(a))] + [(dw, (h, i, k)) for k in range(len(a))], len(a))


def _dq(ctx, key, cell, ds, k):
    i, c = cell
    h = c // _width(ctx, k)
    d = _width(ctx, k)
    n = ctx.trace.n
    return _products(ctx, key, cell, [(ds, (h, i, j), k, (j, c)) for j in range(n)],
                     rf"\frac{{1}}{{\sqrt{{{d}}}}} \sum_j {_ref(ctx, ds, (h, i, 'j'))}\, {_ref(ctx, k, ('j', c))}",
                     f"(1/√{d}) Σ_j dŜ[{h},{i},j]·K[j,{c}]", f"Column {c} is head {h}'s: query {i} met the keys "
                     f"in row {i} of that head's scores" + (f", keys 0 … {i}; the causal mask hides the later ones, so "
                     f"their dŜ is 0" if i < n - 1 else ", all of them (it is the last query: no key comes after it)")
                     + ".", (rf"\sqrt{{{d}}}", math.sqrt(d)))


def _dk(ctx, key, cell, ds, q):
    j, c = cell
    d = _width(ctx, q)
    h = c // d
    n = ctx.trace.n
    return _products(ctx, key, cell, [(ds, (h, i, j), q, (i, c)) for i in range(n)],
                     rf"\frac{{1}}{{\sqrt{{{d}}}}} \sum_i {_ref(ctx, ds, (h, 'i', j))}\, {_ref(ctx, q, ('i', c))}",
                     f"(1/√{d}) Σ_i dŜ[{h},i,{j}]·Q[i,{c}]", f"Column {c} is head {h}'s: key {j} met the queries in "
                     f"column {j} of that head's scores" + (f", queries {j} … {n - 1}; the causal mask hides it from the "
                     f"earlier ones, so their dŜ is 0" if j > 0 else ", all of them (the first key: every query sees "
                     "it)") + ".", (rf"\sqrt{{{d}}}", math.sqrt(d)))


def _dv(ctx, key, cell, weights, dc):
    j, c = cell
    h = c // _width(ctx, dc)
    n = ctx.trace.n
    return _products(ctx, key, cell, [(weights, (h, i, j), dc, (i, c)) for i in range(n)],
                     rf"\sum_i A_{{{h},i,{j}}}\, {_ref(ctx, dc, ('i', c))}", f"Σ_i A[{h},i,{j}]·dC[i,{c}]",
                     f"Value row {j} went into each token's context with weight A[{h}, i, {j}], so it collects each "
                     "token's gradient in that proportion" + (f" (0 for the tokens before {j}: the causal mask hides "
                     f"it from them)" if j > 0 else "") + ".")


LAST_ROW_ZERO = ("the last position's row of ∂L/∂X_0 is 0: its logits are not scored (no token comes after it), "
                 "and the causal mask hides it from every earlier query, so nothing the loss sees depends on it")


def _tok(ctx, key, cell, dx):
    t, a = cell
    where = [i for i, tok in enumerate(ctx.trace.facts["ids"]) if tok == t]
    last = where == [ctx.trace.n - 1] and not ctx.value(dx)[ctx.trace.n - 1].any()
    return _plain_sum(ctx, key, cell, [(dx, (i, a)) for i in where],
                      rf"\sum_{{i:\ \mathrm{{id}}_i = {t}}} {_ref(ctx, dx, ('i', a))}", f"Σ_(i: id_i = {t}) dX_0[i,{a}]",
                      f"Token {t} (“{ctx.trace.tokens[where[0]] if where else ''}”) stands at "
                      f"position{'s' if len(where) != 1 else ''} {', '.join(map(str, where))}."
                      + (f" It stands only there, and {LAST_ROW_ZERO}: its row gets no gradient." if last else "")
                      if where else f"Token {t} is not in the sentence: its row gets no gradient.")


def _pos(ctx, key, cell, dx):
    i, a = cell
    if i >= ctx.trace.n:
        return _done(ctx, key, cell, "0", "0", "0", "0", 0.0, f"The sentence has {ctx.trace.n} tokens: position {i} "
                     "is not used, so its row gets no gradient.")
    v = float(ctx.value(dx)[cell])
    return _done(ctx, key, cell, _ref(ctx, dx, cell), _ref_text(ctx, dx, cell), ctx.num(v), ctx.num_text(v), v,
                 f"X_0 = E[id] + E^pos: row {i} of E^pos, the position embedding, is added to the stream at position {i} "
                 f"only, so its gradient is row {i} of ∂L/∂X_0, unchanged. (P on this page is the probabilities.)"
                 + (f" Position {i} is the last: {LAST_ROW_ZERO}." if i == ctx.trace.n - 1 and not
                    ctx.value(dx)[i].any() else ""), [(dx, cell)], 1)


RULES = {"ce": _ce, "matT": _mat_t, "matWt": _mat_wt, "colsum": _colsum, "gamma": _gamma, "norm_in": _norm_in,
         "copy": _copy, "add": _add, "three": _three, "gelu": _gelu, "dweights": _dweights, "dscores": _dscores,
         "dq": _dq, "dk": _dk, "dv": _dv, "tok": _tok, "pos": _pos}

for _name in GRADIENTS:
    _key = f"dL/d{_name}"
    register(_key, kind=KIND, when=lambda trace, key=_key: key in trace.facts.get("rules", {}))(_rule_explainer(_key))


@register("loss", kind=KIND)
def _loss(ctx: Context, cell) -> Explanation:
    z = ctx.value("logits")
    y = ctx.trace.facts["targets"]
    logs = []
    for i, t in enumerate(y):
        row = [float(v) for v in z[i]]
        top = max(row)
        logs.append(row[t] - top - math.log(math.fsum(math.exp(v - top) for v in row)))
    n = len(y)
    shown, hidden = join_terms([ctx.factor(v) for v in logs])
    shown_text, _ = join_terms([ctx.factor_text(v) for v in logs], latex=False)
    return Explanation("loss", (), rf"L = -\frac{{1}}{{{n}}} \sum_{{i=0}}^{{{n - 1}}} \log P_{{i,\,y_i}}",
                       rf"-\frac{{1}}{{{n}}}\left({shown}\right)", f"L = {ctx.num(-math.fsum(logs) / n)}",
                       -math.fsum(logs) / n, f"L = -(1/{n}) Σ_i log P[i, y_i]\n  = -(1/{n})({shown_text})\n  = "
                       f"{ctx.num_text(-math.fsum(logs) / n)}", note="Each log P recomputed from its row of Z.",
                       n_terms=n, n_elided=hidden, reads=tuple(("logits", (i, t)) for i, t in enumerate(y)))


__all__ = ["GRADIENTS", "KIND", "RULES"]
