r"""One training step of the block as a Trace (kind "block_grad"): the loss, every gradient back to the
embeddings as a named Step, then one step of plain SGD and the loss after it.

The forward pass is run_transformer's (a "block" Trace); backprop.py undoes it. This trace holds what a learner
reads, in that order: the forward numbers the gradients are made from (the stream, each layer's Q, K, V, A, C,
the parameters), the loss, then "dL/d<name>" from the logits back to E and E^pos, each with the shape of <name>, its
rule as LaTeX, what it is computed from and a sentence of why; two of them per residual add are the add's own:
"dL/dl0.attn_branch" (what flows back through the sublayer) and the stream's gradient, the sum of that and what
skips it. block_grad_explainers.py explains every gradient cell.

    >>> from attention_core.forward.transformer import Arch, init_params
    >>> arch = Arch(n_layers=1, mlp=False)
    >>> params = init_params(arch, d_model=4, vocab=31, seed=0, n_heads=2)
    >>> params.update(tok_emb=np.eye(31, 4), pos_emb=np.zeros((40, 4)))
    >>> step = training_step(arch, params, [0, 1, 0, 1], ["a", "b"], lr=0.1, n_heads=2)
    >>> step.trace["dL/dl0.w_q"].shape, step.loss_after < step.loss
    ((4, 4), True)
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from . import block_grad_explainers  # noqa: F401  (registers the explainers of this trace's steps)
from ...forward.transformer import Arch, init_params, lm_input, run_transformer
from ...forward.trace import Trace
from ...math.limits import ConfigError
from .backprop import backward, next_token_loss, targets
from .model import N_HEADS, VOCAB, as_float64, attention_config


@dataclass
class TrainingStep:
    trace: Trace                       # kind "block_grad"
    block: Trace                       # the forward pass (kind "block")
    params: dict
    new_params: dict                   # θ − η ∂L/∂θ
    loss: float
    loss_after: float
    lr: float


def training_step(arch: Arch, params: dict, ids, labels: list[str], lr: float, tokens=None,
                  n_heads: int = N_HEADS) -> TrainingStep:
    """Forward, backward by hand, one SGD step θ ← θ − η ∂L/∂θ, and the loss after it on the same tokens.
    labels name the vocabulary (one per column of W_U); H = n_heads, d_k = d_v = (W_Q's width) / H."""
    if not (isinstance(lr, (int, float)) and 0 < lr <= 10):
        raise ConfigError(f"The learning rate η = {lr!r} must be a number above 0 and at most 10.")
    ids = [int(i) for i in ids]
    targets(ids)                                                     # two tokens at least, said plainly
    tokens = list(tokens) if tokens is not None else [labels[i] for i in ids]
    vocab = list(labels) + [f"token {k}" for k in range(len(labels), params["w_u"].shape[1])]
    d_head = params["l0.w_q"].shape[1] // n_heads
    config = attention_config(tokens).replace(d_model=params["w_u"].shape[0], n_heads=n_heads, d_k=d_head, d_v=d_head)
    block = run_transformer(config, arch, params, lm_input(params, ids), tokens, vocab)
    g = backward(block, params, ids)
    new_params = {name: value - lr * g[f"dL/d{name}"] for name, value in params.items()}
    after = run_transformer(config, arch, new_params, lm_input(new_params, ids), tokens, vocab)
    loss_after, probs_after = next_token_loss(after["logits"].value, ids)
    trace = step_trace(block, params, ids, g)
    y = targets(ids)
    trace.facts.update(lr=float(lr), loss_after=loss_after, surprise=tuple(       # −log P_{i, y_i}, before and after
        (float(-np.log(trace["probs"].value[i, t])), float(-np.log(probs_after[i, t]))) for i, t in enumerate(y)))
    return TrainingStep(trace, block, params, new_params, float(g["loss"]), loss_after, float(lr))


@functools.lru_cache(maxsize=1)
def shipped_params() -> dict[str, np.ndarray]:
    """The small LM's shipped weights (seed 0, trained by the project's own code), float64."""
    from .shipped import load
    return as_float64(load().params)


def block_params(shipped: dict, arch: Arch, seed: int = 0, n_heads: int = N_HEADS) -> tuple[dict, list[str]]:
    """The shipped model's parameters for another block (post-norm, RMSNorm, the MLP on): (params, the names
    that start from init_params' seeded values because the shipped model has none, e.g. the MLP's).
    Parameters the block has no use for (RMSNorm's β, post-norm's final norm) are left out."""
    d_model, vocab = shipped["w_u"].shape
    seeded = init_params(arch, d_model, vocab, seed, n_heads, prefix="lm")
    params, fresh = {}, []
    for name in ("tok_emb", "pos_emb", *seeded):
        if name in shipped:
            params[name] = np.asarray(shipped[name], dtype=np.float64)
        else:
            params[name] = seeded[name]
            fresh.append(name)
    return params, fresh


# ---- the trace ---------------------------------------------------------------------------------------------

def _d(symbol: str) -> str:
    return rf"\frac{{\partial L}}{{\partial {symbol}}}"


def _row(symbol: str) -> str:
    """Row i of a gradient: (∂L/∂Y)_{i,:}."""
    return rf"\left({_d(symbol)}\right)_{{i,:}}"


def step_trace(block: Trace, params: dict, ids, g: dict) -> Trace:
    """The forward numbers, the loss and every gradient, as Steps in reading order."""
    arch = block.facts["arch"]
    trace = Trace(block.tokens)
    n, d, vocab = block.n, block.facts["d_model"], block.facts["vocab"]
    h = block.facts["attention"][0].facts["n_heads"]
    trace.facts.update(kind="block_grad", arch=arch, n=n, d_model=d, d_ff=block.facts["d_ff"], n_heads=h,
                       ids=tuple(ids), vocab=vocab, axis_labels={"vocab": list(vocab)}, symbols={},
                       layers=arch.n_layers)
    sym = trace.facts["symbols"]
    names = _names(arch)

    def add(key, title, value, axes, formula="", inputs=(), why="", symbol=None, scale="diverging"):
        if symbol:
            sym[key] = symbol
        trace.add(key, title, value, axes, formula, inputs, why, scale)

    # forward: the numbers the gradients read
    for key in ("x", *[k for l in range(arch.n_layers) for k in _stream_keys(arch, l)], "ln_f", "logits"):
        if key in block:
            s = block[key]
            add(key, s.title, s.value, s.axes, s.formula, s.inputs, s.why, names[key])
    for l, sub in enumerate(block.facts["attention"]):
        for key, axes in (("q", ("n", "H·d_k")), ("k", ("n", "H·d_k")), ("v", ("n", "H·d_v")),
                          ("weights", ("head", "n_q", "n_k")), ("concat" if h > 1 else "context", ("n", "H·d_v"))):
            value = sub[key].value.reshape((h, n, n)) if key == "weights" else sub[key].value
            name = f"l{l}.{'concat' if key == 'context' else key}"
            add(name, f"Layer {l}: {sub[key].title}", value, axes, sub[key].formula, why=sub[key].why,
                symbol=names[name], scale="sequential" if key == "weights" else "diverging")
    for name, value in params.items():
        add(name, names[name][1], value, _param_axes(name, value), names[name],
            why="A parameter: each training step moves it by −η times its gradient.", symbol=names[name])
    loss, probs = next_token_loss(block["logits"].value, ids)
    add("probs", "Probabilities of the next token", probs, ("n", "vocab"), r"P_{i,:} = \mathrm{softmax}(Z_{i,:})",
        ("logits",), "Row i: the model's distribution over the token after token i.", ("P", "P"), "sequential")
    y = targets(ids)
    add("loss", "Next-token loss", np.array(loss), (), rf"L = -\frac{{1}}{{{n - 1}}} \sum_{{i=0}}^{{{n - 2}}} "
        r"\log P_{i,\,y_i},\quad y_i = \text{the token after token } i", ("probs",),
        f"How surprised the model is, on average, by each of the {n - 1} next tokens it can be scored on "
        f"(the last token has none after it). ln {VOCAB} = {np.log(VOCAB):.2f} is a uniform guess.", ("L", "L"))
    trace.facts.update(loss=loss, targets=tuple(int(t) for t in y))
    # backward, in reading order
    trace.facts["rules"] = {}
    for key, (formula, inputs, why, how) in _rules(arch, names, n).items():
        if key in g:
            name = key[4:]
            axes = _grad_axes(trace, name)
            value = g[key].reshape((h, n, n)) if axes[0] == "head" else g[key]
            title = f"∂L/∂{names[name][1]}"
            if name.endswith("_branch"):
                title = f"∂L/∂{names[name][1].split('|')[0]}, back through " + (
                    "attention" if name.endswith("attn_branch") else "the MLP")
            add(key, title, value, axes, formula, inputs, why,
                (rf"(\partial L/\partial {names[name][0]})", f"dL/d{names[name][1]}"))
            trace.facts["rules"][key] = how
    return trace


def _stream_keys(arch: Arch, l: int) -> list[str]:
    return [f"l{l}.ln1", f"l{l}.attn", f"l{l}.sum1", f"l{l}.mid", f"l{l}.ln2", f"l{l}.hidden", f"l{l}.act",
            f"l{l}.mlp", f"l{l}.sum2", f"l{l}.out"]


def _names(arch: Arch) -> dict[str, tuple[str, str]]:
    """(LaTeX, text) of every step and parameter: X_l, X_l', N(X_l), W_Q^{(l)}, γ_{l,1} …"""
    names = {"x": ("X_0", "X_0"), "ln_f": ("N_f", "N_f"), "logits": ("Z", "Z"), "w_u": ("W_U", "W_U"),
             "tok_emb": ("E", "E"), "pos_emb": (r"E^{\mathrm{pos}}", "E^pos"), "ln_f.g": (r"{\gamma_f}", "γ_f"), "ln_f.b": (r"{\beta_f}", "β_f")}
    for l in range(arch.n_layers):
        sup, t = f"^{{({l})}}", f"^({l})"
        mid = (rf"X_{{{l}}}'", f"X_{l}'") if arch.mlp else (rf"X_{{{l + 1}}}", f"X_{l + 1}")
        names.update({
            f"l{l}.ln1": (rf"N(X_{{{l}}})", f"N(X_{l})"), f"l{l}.attn": (rf"O_{{{l}}}", f"O_{l}"),
            f"l{l}.sum1": (rf"{{\Sigma_1{sup}}}", f"Σ_1{t}"), f"l{l}.mid": mid,
            f"l{l}.ln2": (rf"N(X_{{{l}}}')", f"N(X_{l}')"), f"l{l}.hidden": (rf"H{sup}", f"H{t}"),
            f"l{l}.act": (rf"\mathrm{{GELU}}(H{sup})", f"GELU(H{t})"), f"l{l}.mlp": (rf"M{sup}", f"M{t}"),
            f"l{l}.sum2": (rf"{{\Sigma_2{sup}}}", f"Σ_2{t}"), f"l{l}.out": (rf"X_{{{l + 1}}}", f"X_{l + 1}"),
            f"l{l}.q": (rf"Q{sup}", f"Q{t}"), f"l{l}.k": (rf"K{sup}", f"K{t}"), f"l{l}.v": (rf"V{sup}", f"V{t}"),
            f"l{l}.weights": (rf"A{sup}", f"A{t}"), f"l{l}.scores": (rf"\hat S{sup}", f"Ŝ{t}"),
            f"l{l}.concat": (rf"C{sup}", f"C{t}"), f"l{l}.attn_branch": (rf"X_{{{l}}}\!\mid_{{\mathrm{{attn}}}}",
                                                                       f"X_{l}|attn"),
            f"l{l}.mlp_branch": (rf"X_{{{l}}}'\!\mid_{{\mathrm{{MLP}}}}", f"X_{l}'|MLP")})
        for name in ("w_q", "w_k", "w_v", "w_o", "w_1", "w_2", "b_1", "b_2"):
            letter, sub = name.split("_")
            big = (letter.upper() if letter == "w" else letter) + "_" + (sub.upper() if sub.isalpha() else sub)
            names[f"l{l}.{name}"] = (rf"{big}{sup}", f"{big}{t}")
        for k, norm in ((1, "ln1"), (2, "ln2")):
            names[f"l{l}.{norm}.g"] = (rf"{{\gamma_{{{l},{k}}}}}", f"γ_{l},{k}")
            names[f"l{l}.{norm}.b"] = (rf"{{\beta_{{{l},{k}}}}}", f"β_{l},{k}")
    return names


def _param_axes(name: str, value) -> tuple[str, ...]:
    if name == "tok_emb":
        return ("vocab", "d_model")
    if name == "pos_emb":
        return ("position", "d_model")
    if name == "w_u":
        return ("d_model", "vocab")
    last = name.split(".")[-1]
    return {"w_q": ("d_model", "H·d_k"), "w_k": ("d_model", "H·d_k"), "w_v": ("d_model", "H·d_v"),
            "w_o": ("H·d_v", "d_model"), "w_1": ("d_model", "d_ff"), "w_2": ("d_ff", "d_model"),
            "b_1": ("d_ff",)}.get(last, ("d_model",))


def _grad_axes(trace: Trace, name: str) -> tuple[str, ...]:
    if name in trace:
        return trace[name].axes
    if name.endswith(".scores"):
        return ("head", "n_q", "n_k")
    return ("n", "d_model")                                          # the branches' gradients


# ---- the rules: each gradient's formula, inputs, why, and how its explainer recomputes a cell ----------------

def _norm_rule(arch: Arch, dy: str, x: str, name: str, x_text: str = "x") -> tuple[str, str]:
    """(LaTeX of ∂L/∂x from ∂L/∂y through y = N(x), why); x is a row of the norm's input, a bar a mean over it."""
    if arch.norm == "layer":
        return (rf"\frac{{1}}{{s}}\Big(u - \overline{{u}} - \hat x \odot \overline{{u \odot \hat x}}\Big),\ "
                rf"u = {_d(dy)} \odot \gamma,\ \hat x = \frac{{x - \mu}}{{s}},\ s = \sqrt{{\sigma^2 + \epsilon}}",
                f"x is a row of {x_text}, a bar its mean over the row. Each output of a LayerNorm row depends on every "
                "input of the row, through the row's mean and variance: the gradient loses its row mean and (up to "
                "ε) its part along x̂, then is divided by the row's s = √(σ² + ε).")
    return (rf"\frac{{u}}{{r}} - x \odot \frac{{\overline{{u \odot x}}}}{{r^3}},\ u = {_d(dy)} \odot \gamma,\ "
            rf"r = \sqrt{{\overline{{x^2}} + \epsilon}}",
            f"x is a row of {x_text}, a bar its mean over the row. RMSNorm divides the row by its root mean square r, "
            "which depends on every entry: the gradient is u / r, less (up to ε) its part along x.")


def _rules(arch: Arch, names: dict, n: int) -> dict[str, tuple]:
    """key -> (formula, inputs, why, how): how = (rule, operand keys) for block_grad_explainers.py."""
    T = lambda name: names[name][0]
    rules: dict[str, tuple] = {}

    def rule(name, rhs, inputs, why, how, lhs=None):
        rules[f"dL/d{name}"] = (rf"{lhs or _d(T(name))} = {rhs}", inputs, why, how)

    def through_norm(norm, dy, x, into):
        """into = N(x) read ∂L/∂N; the norm's γ, β and its input's gradient."""
        rule(f"{norm}.g", rf"\sum_i {_row(T(dy))} \odot \hat x_{{i,:}}", (f"dL/d{dy}", x),
             "γ scales column j of every row, so its gradient sums, over the rows, the output's gradient times the "
             f"normalised input x̂ it scaled (x̂ = " + ("(x − μ)/√(σ² + ε)" if arch.norm == "layer" else "x / r")
             + f", x a row of {names[x][1]}).", ("gamma", (f"dL/d{dy}", x)))
        if arch.norm == "layer":
            rule(f"{norm}.b", rf"\sum_i {_row(T(dy))}", (f"dL/d{dy}",),
                 "β is added to every row, so its gradient sums the rows.", ("colsum", (f"dL/d{dy}",)))
        formula, why = _norm_rule(arch, T(dy), T(x), norm, names[x][1])
        rule(into, formula, (f"dL/d{dy}", x, f"{norm}.g"), why, ("norm_in", (f"dL/d{dy}", x, f"{norm}.g")))

    def fan_in(name, skip, branch, sub):
        rule(name, rf"{_d(T(skip))} + {_d(T(branch))}", (f"dL/d{skip}", f"dL/d{branch}"),
             f"The residual add copies its gradient to both of its inputs, so the stream's gradient is the sum of "
             f"what flows back through the {sub} and what skips it (unchanged).", ("add", (f"dL/d{skip}", f"dL/d{branch}")))

    last = f"l{arch.n_layers - 1}.out"
    read = "ln_f" if arch.final_norm else last
    rule("logits", r"\frac{1}{n-1}\left(P_{i,:} - e_{y_i}\right),\ i < n - 1;\quad 0 \text{ for } i = n - 1",
         ("probs",), "Softmax then cross-entropy: the predicted probabilities minus the one-hot next token, shared "
         f"out over the {n - 1} scored position{'' if n == 2 else 's'}. The last row has no next token, so no gradient.",
         ("ce", ("logits",)), lhs=_d(r"Z_{i,:}"))
    rule("w_u", rf"{T(read)}^\top {_d('Z')}", (read, "dL/dlogits"),
         "Each weight's gradient pairs its input column with its output's gradient, summed over the positions.",
         ("matT", (read, "dL/dlogits")))
    rule(read, rf"{_d('Z')}\, W_U^\top", ("dL/dlogits", "w_u"),
         "The gradient flows back through the unembedding's weights: each vocabulary score sends its share.",
         ("matWt", ("dL/dlogits", "w_u")))
    if arch.final_norm:
        through_norm("ln_f", "ln_f", last, last)
    for l in reversed(range(arch.n_layers)):
        before = "x" if l == 0 else f"l{l - 1}.out"
        after = f"l{l}.mid" if arch.mlp else f"l{l}.out"
        if arch.mlp:
            out, mid = f"l{l}.out", f"l{l}.mid"
            if arch.placement == "post":
                through_norm(f"l{l}.ln2", out, f"l{l}.sum2", f"l{l}.sum2")
            top = f"l{l}.sum2" if arch.placement == "post" else out
            rule(f"l{l}.mlp", _d(T(top)), (f"dL/d{top}",), "A residual add passes its gradient to the MLP's "
                 "output unchanged (∂(x + m)/∂m = 1).", ("copy", (f"dL/d{top}",)))
            rule(f"l{l}.w_2", rf"{T(f'l{l}.act')}^\top {_d(T(f'l{l}.mlp'))}", (f"l{l}.act", f"dL/dl{l}.mlp"),
                 "The second linear map's weights: input transposed times the output's gradient.",
                 ("matT", (f"l{l}.act", f"dL/dl{l}.mlp")))
            rule(f"l{l}.b_2", rf"\sum_i {_row(T(f'l{l}.mlp'))}", (f"dL/dl{l}.mlp",),
                 "The bias is added to every row, so its gradient sums the rows.", ("colsum", (f"dL/dl{l}.mlp",)))
            rule(f"l{l}.act", rf"{_d(T(f'l{l}.mlp'))}\, W_2^\top", (f"dL/dl{l}.mlp", f"l{l}.w_2"),
                 "Back through W_2 to the d_ff activations.", ("matWt", (f"dL/dl{l}.mlp", f"l{l}.w_2")))
            hl = T(f"l{l}.hidden")
            rule(f"l{l}.hidden", rf"{_d(T(f'l{l}.act'))} \odot \mathrm{{GELU}}'({hl}),\ \mathrm{{GELU}}'(x) = "
                 r"\Phi(x) + x\,\varphi(x)", (f"dL/dl{l}.act", f"l{l}.hidden"),
                 "GELU acts on each entry alone, so its gradient is the incoming one times GELU's slope there "
                 "(Φ the standard normal CDF, φ its density): about 1 for a large entry, about 0 for a very negative "
                 "one.", ("gelu", (f"dL/dl{l}.act", f"l{l}.hidden")))
            src = f"l{l}.ln2" if arch.placement == "pre" else mid
            rule(f"l{l}.w_1", rf"{T(src)}^\top {_d(T(f'l{l}.hidden'))}", (src, f"dL/dl{l}.hidden"),
                 "The first linear map's weights: input transposed times the output's gradient.",
                 ("matT", (src, f"dL/dl{l}.hidden")))
            rule(f"l{l}.b_1", rf"\sum_i {_row(T(f'l{l}.hidden'))}", (f"dL/dl{l}.hidden",),
                 "The bias is added to every row, so its gradient sums the rows.", ("colsum", (f"dL/dl{l}.hidden",)))
            into = f"l{l}.ln2" if arch.placement == "pre" else f"l{l}.mlp_branch"
            rule(into, rf"{_d(T(f'l{l}.hidden'))}\, W_1^\top", (f"dL/dl{l}.hidden", f"l{l}.w_1"),
                 "Back through W_1 to the row the MLP read.", ("matWt", (f"dL/dl{l}.hidden", f"l{l}.w_1")))
            if arch.placement == "pre":
                through_norm(f"l{l}.ln2", f"l{l}.ln2", mid, f"l{l}.mlp_branch")
            fan_in(mid, top, f"l{l}.mlp_branch", "MLP")
        if arch.placement == "post":
            through_norm(f"l{l}.ln1", after, f"l{l}.sum1", f"l{l}.sum1")
        top = f"l{l}.sum1" if arch.placement == "post" else after
        a, c = f"l{l}.attn", f"l{l}.concat"
        rule(a, _d(T(top)), (f"dL/d{top}",), "A residual add passes its gradient to attention's output unchanged.",
             ("copy", (f"dL/d{top}",)))
        rule(f"l{l}.w_o", rf"C^\top {_d(T(a))}", (c, f"dL/d{a}"), "Each weight pairs its input with its output's "
             "gradient, summed over the positions.", ("matT", (c, f"dL/d{a}")))
        rule(c, rf"{_d(T(a))}\, W_O^\top", (f"dL/d{a}", f"l{l}.w_o"), "Back through W_O to the heads' context "
             "vectors, side by side.", ("matWt", (f"dL/d{a}", f"l{l}.w_o")))
        rule(f"l{l}.weights", rf"{_d('C_h')} V_h^\top", (f"dL/d{c}", f"l{l}.v"),
             "Entry (i, j) of head h: how the loss would change if token i attended a little more to token j. "
             "Above the diagonal (j > i) the causal mask holds the weight at 0, so there the number is not 0 yet "
             "describes a change that cannot happen: the next step, through softmax, gives those keys gradient 0.",
             ("dweights", (f"dL/d{c}", f"l{l}.v")), lhs=_d("A_h"))
        g_row = _d(r"A_{h,i,:}")
        rule(f"l{l}.scores", rf"a \odot \left({g_row} - (a^\top {g_row})\,\mathbf{{1}}\right),\ a = A_{{h,i,:}}",
             (f"l{l}.weights", f"dL/dl{l}.weights"), "Each row's softmax Jacobian, diag(a) − a aᵀ, applied to the "
             "row's gradient. A hidden key has weight 0, so the causal mask's entries get gradient 0.",
             ("dscores", (f"l{l}.weights", f"dL/dl{l}.weights")), lhs=_d(r"\hat S_{h,i,:}"))
        d_s = _d(r"\hat S_h")
        rule(f"l{l}.q", rf"\frac{{1}}{{\sqrt{{d_k}}}} {d_s} K_h", (f"dL/dl{l}.scores", f"l{l}.k"),
             "Query i meets the keys of row i of the scores, keys 0 … i (the causal mask hides the later ones: "
             "their ∂L/∂Ŝ is 0); the 1/√d_k carries through.",
             ("dq", (f"dL/dl{l}.scores", f"l{l}.k")), lhs=_d("Q_h"))
        rule(f"l{l}.k", rf"\frac{{1}}{{\sqrt{{d_k}}}} \left({d_s}\right)^\top Q_h",
             (f"dL/dl{l}.scores", f"l{l}.q"), "Key j meets the queries of column j of the scores, queries j … n − 1 (the "
             "causal mask hides it from the earlier ones: their ∂L/∂Ŝ is 0).",
             ("dk", (f"dL/dl{l}.scores", f"l{l}.q")), lhs=_d("K_h"))
        rule(f"l{l}.v", rf"A_h^\top {_d('C_h')}", (f"l{l}.weights", f"dL/d{c}"), "Value j collects gradient from "
             "each token, in proportion to how much each attended to it (0 for the tokens before j: the mask).", ("dv", (f"l{l}.weights", f"dL/d{c}")),
             lhs=_d("V_h"))
        src = f"l{l}.ln1" if arch.placement == "pre" else before
        for m in "qkv":
            rule(f"l{l}.w_{m}", rf"{T(src)}^\top {_d(m.upper())}", (src, f"dL/dl{l}.{m}"),
                 f"The same rule as every weight: the input attention read, transposed, times ∂L/∂{m.upper()}.",
                 ("matT", (src, f"dL/dl{l}.{m}")))
        into = f"l{l}.ln1" if arch.placement == "pre" else f"l{l}.attn_branch"
        three = tuple(k for m in "qkv" for k in (f"dL/dl{l}.{m}", f"l{l}.w_{m}"))
        rule(into, rf"{_d('Q')} W_Q^\top + {_d('K')} W_K^\top + {_d('V')} W_V^\top", three,
             "The row attention read feeds its query, its key and its value, so its gradient adds the three paths.",
             ("three", three))
        if arch.placement == "pre":
            through_norm(f"l{l}.ln1", f"l{l}.ln1", before, f"l{l}.attn_branch")
        fan_in(before, top, f"l{l}.attn_branch", "attention")
    rule("tok_emb", r"\sum_{i:\ \mathrm{id}_i = t} " + _d(r"X_{0,i,:}"), ("dL/dx",),
         "A token's embedding row is looked up at every position holding that token, so it collects their "
         "gradients; tokens not in the sentence get 0.", ("tok", ("dL/dx",)), lhs=_d("E_{t,:}"))
    d_x0 = _d(r"X_{0,i,:}")
    rule("pos_emb", rf"{d_x0}\ (i < n),\ 0 \text{{ after}}", ("dL/dx",),
         "Position i's row is added to the stream at position i only.", ("pos", ("dL/dx",)),
         lhs=_d(r"E_{i,:}^{\mathrm{pos}}"))
    return rules
