r"""The trace of one training step: the classifier's forward pass and its gradients as Steps a page shows.

forward() runs the model (model.py) on one sentence and records every intermediate as a Step of a Trace,
with its axes, its formula and a sentence of why; backward(..., trace) adds every gradient of the
hand-written backward pass (backprop.py) as a Step "dL/d<name>", and the row Jacobians "dweights/dscores".
Importing this file registers the explainers of every one of those Steps (gradient_explainers.py).

    >>> from attention_core.training.classifier.model import init_params
    >>> params = init_params(d_in=4, d_k=2, d_v=3, seed=0)
    >>> loss, trace = forward(params, np.arange(12.0).reshape(3, 4) / 10, "positive")
    >>> trace["scores"].formula
    '\\hat S = \\frac{Q K^\\top}{\\sqrt{d_k}} = \\frac{Q K^\\top}{\\sqrt{2}}'
    >>> _ = backward(params, np.arange(12.0).reshape(3, 4) / 10, "positive", trace)
    >>> trace["dL/dscores"].title, trace["dL/dscores"].axes
    ('∂L/∂Ŝ', ('n_q', 'n_k'))
"""
from __future__ import annotations

import math

import numpy as np

from . import gradient_explainers  # noqa: F401  (registers the explainers of this trace's steps)
from ...forward.claims import say
from ...forward.trace import Trace
from ...math.limits import ConfigError
from .backprop import _backward, softmax_jacobians
from .cell_arithmetic import PLAIN, TEX
from .model import CLASSES, PARAM_AXES, PARAM_NAMES, _as_input, _forward, label_index
from ..training_input import TrainingSettings

# How the math writes each name (LaTeX), and how a title writes it (plain text).
_SYMBOLS = {name: TEX[name] for name in (*PARAM_NAMES, "x", "q", "k", "v", "scores", "weights", "context", "f",
                                          "pooled")}
_PLAIN = {name: PLAIN[name] for name in _SYMBOLS}


def symbol(name: str) -> str:
    """How a learner reads a parameter's (or step's) code name: w_q -> W_Q, b_k -> b_K, scores -> Ŝ."""
    return _PLAIN.get(name, name)


# ---- forward ------------------------------------------------------------------------------

def forward(params: dict, x, y, tokens=None, settings=None) -> tuple[float, Trace]:
    """The loss on one sentence and the Trace of every intermediate.

    x (n, d_in) embeddings with position; y the class (index or name); tokens name the rows
    (default "0", "1", ...); settings: the training pages' TrainingSettings X was built under (how
    position entered it; what the words on the trace may say), None if not known. The trace is of one
    head. Trace keys: x, the parameters, q, k, v, scores (Ŝ, already scaled), weights, context, f,
    pooled, p, y, loss.
    """
    x, y = _as_input(params, x), label_index(y)
    n = x.shape[0]
    tokens = tuple(str(i) for i in range(n)) if tokens is None else tuple(tokens)
    if len(tokens) != n:
        raise ConfigError(f"{len(tokens)} tokens name the {n} rows of x; give one token per row.")
    settings = TrainingSettings(positional=None) if settings is None else settings
    if settings.n_heads != 1:
        raise ConfigError(f"forward() traces one head, not n_heads={settings.n_heads}; train() and predict() "
                          "take several.")
    c = _forward(params, x, y)
    d_k, d_v = params["w_q"].shape[1], params["w_v"].shape[1]
    trace = Trace(tokens)
    trace.facts.update(n=n, d_in=x.shape[1], d_k=d_k, d_v=d_v, classes=CLASSES, label=CLASSES[y],
                       prediction=CLASSES[int(np.argmax(c["p"]))], settings=settings)
    add = trace.add
    add("x", "Input X", x, ("n", "d_in"), r"X \in \mathbb{R}^{n \times d_{in}}", why=x_why(settings))
    for name in PARAM_NAMES:
        add(name, _PLAIN[name], params[name], PARAM_AXES[name], _SYMBOLS[name],
            why="A parameter of the model (each gradient step moves it, unless it is frozen); its shape does not "
                "depend on the sentence length.")
    for name, role in (("q", "what word i is looking for"), ("k", "what word i offers to be found by"),
                       ("v", "what word i passes on when it is attended to")):
        big = name.upper()
        add(name, {"q": "Queries Q", "k": "Keys K", "v": "Values V"}[name], c[name], ("n", PARAM_AXES[f"w_{name}"][1]),
            rf"{big} = X W_{big} + b_{big}", ("x", f"w_{name}", f"b_{name}"), why=f"Row i is {role}.")
    add("scores", "Scaled scores Ŝ", c["scores"], ("n_q", "n_k"),
        rf"\hat S = \frac{{Q K^\top}}{{\sqrt{{d_k}}}} = \frac{{Q K^\top}}{{\sqrt{{{d_k}}}}}", ("q", "k"),
        why=f"How well query i matches key j, divided by √d_k = {math.sqrt(d_k):.3g} (not by √(n·d_k), the square "
            "root of Q's entry count, as tutorial 1's code does) so softmax does not saturate.")
    add("weights", "Attention weights", c["weights"], ("n_q", "n_k"),
        r"A_{i,:} = \mathrm{softmax}(\hat S_{i,:})", ("scores",), scale="sequential",
        why="Each row is its own softmax: a distribution over the words, summing to 1.")
    add("context", "Context vectors", c["context"], ("n", "d_v"), r"C = A V", ("weights", "v"),
        why="Row i is the mix of value rows that row i of the weights asks for.")
    add("f", "Class scores per word", c["f"], ("n", "class"), r"F = C W_O + b_O", ("context", "w_o", "b_o"),
        why="A linear layer turns each context vector into three numbers, one per class.")
    add("pooled", "Pooled logits", c["pooled"], ("class",), r"\bar f = \frac{1}{n} \sum_{i=0}^{n-1} F_{i,:}",
        ("f",), why="Averaging over the words gives one score per class for the whole sentence.")
    add("p", "Class probabilities", c["p"], ("class",), r"p = \mathrm{softmax}(\bar f)", ("pooled",),
        scale="sequential", why=f"Probabilities of {', '.join(CLASSES)} (classes 0, 1, 2); the model predicts "
                                f"{trace.facts['prediction']}.")
    add("y", "True class (one-hot)", np.eye(len(CLASSES))[y], ("class",), rf"y = e_{{{y}}}", scale="sequential",
        why=f"The label of this sentence: {CLASSES[y]}, class {y} (counted from 0).")
    add("loss", "Cross-entropy loss", c["loss"], (), r"L = -\log p_y", ("p", "y"),
        why=f"Small when the model gives the true class a high probability; here p_y = {c['p'][y]:.3f}.")
    return float(c["loss"]), trace


def x_why(settings) -> str:
    """What a row of X holds under these settings (TrainingSettings), in words true under them."""
    if settings.positional == "index":
        return ("One row per word: its embedding, then its position (0, 1, …, n−1) as the last column: tutorial 1's "
                "index feature.")
    if settings.positional == "sinusoidal":
        return ("One row per word: its embedding with the sinusoidal encoding of its position "
                + ("added to it (X keeps the embedding's width)." if settings.combine == "add" else
                   "appended after it (X is twice the embedding's width)."))
    if settings.positional == "none":
        return ("One row per word: its embedding alone; X holds no position, so "
                + say("train_order_blind", settings) + ".")
    return "One row per word: the vector it was given."


# ---- backward -----------------------------------------------------------------------------

def backward(params: dict, x, y, trace: Trace | None = None) -> dict[str, np.ndarray]:
    """∂L/∂(each parameter) and ∂L/∂x, by hand; same keys as params, plus "x", same shapes.

    With a trace (from forward), every gradient is added to it as a Step named "dL/d<name>",
    with the axes of <name>, plus the stack of row Jacobians "dweights/dscores" (n_q, n_k, n_k).
    """
    x, y = _as_input(params, x), label_index(y)
    c = _forward(params, x, y)
    g = _backward(params, c, y)
    if trace is not None:
        _add_gradient_steps(trace, params, c, g)
    return {name: g[f"dL/d{name}"] for name in (*PARAM_NAMES, "x")}


def _d(symbol: str) -> str:
    return rf"\frac{{\partial L}}{{\partial {symbol}}}"


def _add_gradient_steps(trace: Trace, params: dict, c: dict, g: dict) -> None:
    d_k = params["w_q"].shape[1]
    axes = {**{name: PARAM_AXES[name] for name in PARAM_NAMES}, "x": ("n", "d_in"), "q": ("n", "d_k"),
            "k": ("n", "d_k"), "v": ("n", "d_v"), "scores": ("n_q", "n_k"), "weights": ("n_q", "n_k"),
            "context": ("n", "d_v"), "f": ("n", "class"), "pooled": ("class",)}

    def add(name, formula, inputs, why, lhs=None):
        """lhs: the left side when the right side is one row (∂L/∂Ŝ_{i,:}, ∂L/∂F_{i,:}), else ∂L/∂(whole)."""
        key = f"dL/d{name}"
        trace.add(key, f"∂L/∂{_PLAIN[name]}", g[key], axes[name],
                  rf"{lhs or _d(_SYMBOLS[name])} = {formula}", inputs, why)

    add("pooled", r"p - y", ("p", "y"),
        "Softmax followed by cross-entropy has the simplest gradient: predicted minus true probabilities.")
    add("f", rf"\frac{{1}}{{n}} {_d(_SYMBOLS['pooled'])},\quad i = 0, \dots, n-1", ("dL/dpooled",),
        "The mean passes an equal share, 1/n, of the gradient back to every word.", lhs=_d("F_{i,:}"))
    add("w_o", rf"C^\top {_d('F')}", ("context", "dL/df"), "Each weight's gradient pairs its input with its output's gradient.")
    add("b_o", rf"\sum_{{i=0}}^{{n-1}} {_d('F_{i,:}')}", ("dL/df",),
        "A bias is added to every row, so its gradient sums the rows.")
    add("context", rf"{_d('F')} W_O^\top", ("dL/df", "w_o"), "The gradient flows back through the linear layer's weights.")
    add("weights", rf"{_d('C')} V^\top", ("dL/dcontext", "v"),
        "Entry (i, j): how the loss changes if word i attended a little more to word j.")
    add("v", rf"A^\top {_d('C')}", ("weights", "dL/dcontext"),
        "Value j collects gradient from every word, in proportion to how much each attended to it.")
    trace.add("dweights/dscores", "Softmax Jacobian of each row", softmax_jacobians(c["weights"]),
              ("n_q", "n_k", "n_k"),
              r"J_i = \frac{\partial A_{i,:}}{\partial \hat S_{i,:}} = \mathrm{diag}(a_i) - a_i a_i^\top,\quad "
              r"a_i = A_{i,:}", ("weights",),
              "Every row of A is its own softmax, so each row i has its own n × n Jacobian. "
              "(Tutorial 1 builds one from the first column and reuses it for every row: wrong.)")
    g_row = _d("A_{i,:}")
    add("scores", rf"J_i\, {g_row} = a_i \odot \left({g_row} - \left(a_i^\top {g_row}\right) \mathbf{{1}}\right)",
        ("dweights/dscores", "dL/dweights"),
        "Row i's Jacobian turns the gradient of its weights into the gradient of its scores.",
        lhs=_d(r"\hat S_{i,:}"))
    add("q", rf"\frac{{1}}{{\sqrt{{{d_k}}}}} {_d(_SYMBOLS['scores'])} K", ("dL/dscores", "k"),
        "Query i meets every key in row i of the scores; the 1/√d_k scaling carries through.")
    add("k", rf"\frac{{1}}{{\sqrt{{{d_k}}}}} \left({_d(_SYMBOLS['scores'])}\right)^\top Q", ("dL/dscores", "q"),
        "Key j meets every query in column j of the scores.")
    for name in ("q", "k", "v"):
        big = name.upper()
        add(f"w_{name}", rf"X^\top {_d(big)}", ("x", f"dL/d{name}"),
            f"The same rule as for W_O: inputs transposed times the gradient of the output {big}.")
        add(f"b_{name}", rf"\sum_{{i=0}}^{{n-1}} {_d(big + '_{i,:}')}", (f"dL/d{name}",),
            "The bias is shared by every word, so its gradient sums over the words."
            + (" " + say("train_b_k_zero", trace.facts["settings"]) if name == "k" else ""))
    add("x", rf"{_d('Q')} W_Q^\top + {_d('K')} W_K^\top + {_d('V')} W_V^\top",
        ("dL/dq", "w_q", "dL/dk", "w_k", "dL/dv", "w_v"),
        "X feeds queries, keys and values, so its gradient adds the three paths.")

