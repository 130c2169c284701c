"""Seed 000's sentiment classifier: self-attention, a linear layer, mean pooling, softmax.

Rows are tokens (the Julia tutorial writes the transpose: its x is (d, n) and q = Q x).
Everything is float64, so the hand-written backward pass can be checked against torch to 1e-9.

    X (n, d_in)         each word's vector, with its position: seed 000's index column appended,
                        sinusoids added or concatenated, or none (TrainingSettings.positional)
    Q = X W_Q + b_Q     (n, d_k)      K = X W_K + b_K  (n, d_k)      V = X W_V + b_V  (n, d_v)
    Ŝ = Q Kᵀ / √d_k     (n, n)        the scaled scores (docs/notation.md: S is Q Kᵀ before scaling)
    A = softmax(Ŝ)      (n, n)        row by row: row i is how word i spreads its attention
    C = A V             (n, d_v)
    F = C W_O + b_O     (n, 3)        one score per class for every word
    f̄ = mean_i F_i,:    (3,)          the class logits of the sentence, i = 0 … n−1
    p = softmax(f̄)      (3,)
    L = −log p_y        ()            cross-entropy with the true class y

Two mistakes of the tutorial are fixed: each row of A is its own softmax, so each row has its
own Jacobian diag(a_i) − a_i a_iᵀ (the text builds one from A's first column and uses it for
every row); and the scores are divided by √d_k, not by √(number of entries of Q).

    >>> params = init_params(d_in=4, d_k=2, d_v=3, seed=0)
    >>> x = np.arange(12.0).reshape(3, 4) / 10                  # 3 words, 4 features each
    >>> loss, trace = forward(params, x, "positive")
    >>> trace["weights"].shape_text, float(trace["p"].value.sum().round(12))
    ('n_q=3 × n_k=3', 1.0)
    >>> grads = backward(params, x, "positive", trace)
    >>> grads["w_q"].shape, trace["dL/dw_q"].axes
    ((4, 2), ('d_in', 'd_k'))
"""
from __future__ import annotations

import csv
import functools
import io
import math
from pathlib import Path
from typing import NamedTuple

import numpy as np

from . import gradient_explainers  # noqa: F401  (registers the explainers of this trace's steps)
from ..math.attention import merge_heads, softmax, split_heads
from ..math.data import DATA_DIR
from ..math.limits import MAX_CHARS, MAX_DIM, MAX_HEADS, ConfigError
from ..math.embeddings import Vocabulary, embed
from ..forward.weights import init_weight
from ..math.positional import index_feature, sinusoidal_encoding
from ..math.text import resolve
from ..forward.trace import Trace

CLASSES = ("negative", "neutral", "positive")    # seed 000's one-hot order: [1,0,0], [0,1,0], [0,0,1]
PARAM_NAMES = ("w_q", "b_q", "w_k", "b_k", "w_v", "b_v", "w_o", "b_o")
PARAM_AXES = {"w_q": ("d_in", "d_k"), "b_q": ("d_k",), "w_k": ("d_in", "d_k"), "b_k": ("d_k",),
              "w_v": ("d_in", "d_v"), "b_v": ("d_v",), "w_o": ("d_v", "class"), "b_o": ("class",)}
POSITIONALS = ("index", "sinusoidal", "none")
DATA_PATH = DATA_DIR / "sentiment.csv"
MAX_DATASET_BYTES = 1_000_000
MAX_DATASET_ROWS = 2_000
MAX_EPOCHS = 5_000
# A default run: fits the shipped set in well under a second (100% of its sentences, 71% of held-out ones).
DEFAULTS = {"d_k": 16, "d_v": 16, "lr": 0.05, "epochs": 30, "batch_size": 1, "seed": 0, "positional": "index"}


# ---- parameters -------------------------------------------------------------------------

def init_params(d_in: int, d_k: int, d_v: int, seed: int = 0, n_heads: int = 1) -> dict[str, np.ndarray]:
    """Weights N(0, 1/fan_in), one seeded generator per name (as on the forward pages, so W_q, W_k,
    W_v start where the forward pass's seeded random ones are); biases 0. With H = n_heads:

    w_q, w_k (d_in, H·d_k), w_v (d_in, H·d_v), w_o (H·d_v, 3); b_q, b_k (H·d_k,), b_v (H·d_v,), b_o (3,).
    Head h = 0 … H−1 owns the column block h·d_k : (h+1)·d_k of w_q and w_k (h·d_v : (h+1)·d_v of w_v).
    """
    for name, size, high in (("d_in", d_in, 2 * MAX_DIM), ("d_k", d_k, MAX_DIM), ("d_v", d_v, MAX_DIM),
                             ("n_heads", n_heads, MAX_HEADS)):
        if not isinstance(size, int) or isinstance(size, bool) or not 1 <= size <= high:
            raise ConfigError(f"{name}={size!r} is out of range; use a whole number from 1 to {high}.")
    hk, hv = n_heads * d_k, n_heads * d_v
    if max(hk, hv) > MAX_DIM:
        raise ConfigError(f"n_heads × d_k and n_heads × d_v must stay ≤ {MAX_DIM}; lower d_k, d_v or n_heads.")
    return {
        "w_q": init_weight(seed, "w_q", (d_in, hk), d_in), "b_q": np.zeros(hk),
        "w_k": init_weight(seed, "w_k", (d_in, hk), d_in), "b_k": np.zeros(hk),
        "w_v": init_weight(seed, "w_v", (d_in, hv), d_in), "b_v": np.zeros(hv),
        "w_o": init_weight(seed, "w_o", (hv, len(CLASSES)), hv), "b_o": np.zeros(len(CLASSES)),
    }


def label_index(y) -> int:
    """A class as its index: 0, 1, 2 or 'negative', 'neutral', 'positive'."""
    if isinstance(y, str) and y.strip().lower() in CLASSES:
        return CLASSES.index(y.strip().lower())
    if isinstance(y, (int, np.integer)) and not isinstance(y, bool) and 0 <= y < len(CLASSES):
        return int(y)
    raise ConfigError(f"The label {y!r} is not one of {', '.join(CLASSES)} (or 0, 1, 2).")


def _as_input(params: dict, x) -> np.ndarray:
    """x as a float64 (n, d_in) matrix matching w_q; a single word's (d_in,) vector becomes (1, d_in)."""
    missing = [name for name in PARAM_NAMES if name not in params]
    if missing:
        raise ConfigError(f"The parameters lack {', '.join(missing)}.")
    x = np.asarray(x, dtype=np.float64)
    x = x[None, :] if x.ndim == 1 else x
    d_in = params["w_q"].shape[0]
    if x.ndim != 2 or x.shape[0] == 0 or x.shape[1] != d_in:
        raise ConfigError(f"x has shape {x.shape}; the parameters expect (n, {d_in}) with n ≥ 1.")
    return x


# ---- forward ----------------------------------------------------------------------------

def _forward(params: dict, x: np.ndarray, y: int | None, n_heads: int = 1) -> dict[str, np.ndarray]:
    """Every intermediate of the forward pass, by name (no Trace: the training loop's fast path).
    Without a label y there is no loss. With n_heads = H > 1, head h uses the column block h of
    Q, K and V; scores and weights are then (H, n, n), and the heads' contexts are concatenated."""
    if n_heads > 1:
        return _forward_heads(params, x, y, n_heads)
    q = x @ params["w_q"] + params["b_q"]                  # (n, d_k)
    k = x @ params["w_k"] + params["b_k"]                  # (n, d_k)
    v = x @ params["w_v"] + params["b_v"]                  # (n, d_v)
    scores = q @ k.T / math.sqrt(q.shape[1])               # (n, n)    Ŝ_ij = q_i · k_j / √d_k
    weights = softmax(scores, axis=1)                      # (n, n)    each row sums to 1
    context = weights @ v                                  # (n, d_v)  C_i = Σ_j A_ij v_j
    return _head_of_classifier(params, x, y, q, k, v, scores, weights, context)


def _forward_heads(params: dict, x: np.ndarray, y: int | None, h: int) -> dict[str, np.ndarray]:
    """_forward for H = h > 1 heads: the same math once per column block."""
    _check_split(params, h)
    q = x @ params["w_q"] + params["b_q"]                  # (n, H·d_k)
    k = x @ params["w_k"] + params["b_k"]                  # (n, H·d_k)
    v = x @ params["w_v"] + params["b_v"]                  # (n, H·d_v)
    q_h, k_h, v_h = (split_heads(a, h) for a in (q, k, v)) # (H, n, d_k), (H, n, d_k), (H, n, d_v)
    scores = q_h @ k_h.transpose(0, 2, 1) / math.sqrt(q_h.shape[2])   # (H, n, n)  Ŝ_h per head, 1/√d_k
    weights = softmax(scores, axis=2)                      # (H, n, n)  each row of each head sums to 1
    context = merge_heads(weights @ v_h)                   # (n, H·d_v) [C_0 | C_1 | … | C_{H−1}]
    return _head_of_classifier(params, x, y, q, k, v, scores, weights, context)


def _check_split(params: dict, h: int) -> None:
    for name, d in (("w_q", params["w_q"].shape[1]), ("w_v", params["w_v"].shape[1])):
        if d % h:
            raise ConfigError(f"{name} has {d} columns, which do not split into n_heads={h} equal blocks; "
                              f"give n_heads that divides {d}, or init_params(..., n_heads={h}).")


def _head_of_classifier(params, x, y, q, k, v, scores, weights, context) -> dict[str, np.ndarray]:
    """From the context vectors (n, H·d_v) to the class probabilities (and the loss when y is given)."""
    f = context @ params["w_o"] + params["b_o"]            # (n, 3)
    pooled = f.mean(axis=0)                                # (3,)      the logits f̄
    p = softmax(pooled)                                    # (3,)
    c = {"x": x, "q": q, "k": k, "v": v, "scores": scores, "weights": weights, "context": context,
         "f": f, "pooled": pooled, "p": p}
    if y is not None:
        top = pooled.max()
        c["loss"] = top + np.log(np.exp(pooled - top).sum()) - pooled[y]   # ()  = −log p_y, with no log(0)
    return c


def forward(params: dict, x, y, tokens=None, settings=None) -> tuple[float, Trace]:
    """The loss on one sentence and the Trace of every intermediate.

    x (n, d_in) embeddings with position; y the class (index or name); tokens name the rows
    (default "0", "1", ...); settings: the training pages' TrainingSettings X was built under (how
    position entered it; what the words on the trace may say), None if not known. The trace is of one
    head. Trace keys: x, the parameters, q, k, v, scores (Ŝ, already scaled), weights, context, f,
    pooled, p, y, loss.
    """
    from .training_input import TrainingSettings
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
    from ..forward.claims import say
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


# How the math writes each name (LaTeX), and how a title writes it (plain text).
_SYMBOLS = {"w_q": "W_Q", "b_q": "b_Q", "w_k": "W_K", "b_k": "b_K", "w_v": "W_V", "b_v": "b_V", "w_o": "W_O",
            "b_o": "b_O", "x": "X", "q": "Q", "k": "K", "v": "V", "scores": r"\hat S", "weights": "A", "context": "C",
            "f": "F", "pooled": r"\bar f"}
_PLAIN = {**_SYMBOLS, "scores": "Ŝ", "pooled": "f̄"}


def symbol(name: str) -> str:
    """How a learner reads a parameter's (or step's) code name: w_q -> W_Q, b_k -> b_K, scores -> Ŝ."""
    return _PLAIN.get(name, name)


# ---- backward, by hand -------------------------------------------------------------------

def _backward(params: dict, c: dict, y: int, n_heads: int = 1) -> dict[str, np.ndarray]:
    """∂L/∂(everything), from the loss back to X, in the order a learner reads it.

    `c` is _forward's dict. Each derivative sits under the forward line it undoes.
    """
    if n_heads > 1:
        return _backward_heads(params, c, y, n_heads)
    x, q, k, v, weights, context, p = (c[name] for name in ("x", "q", "k", "v", "weights", "context", "p"))
    n, d_k = q.shape

    # L = −log softmax(f̄)_y                    ⇒  ∂L/∂f̄ = p − onehot(y)
    dL_dpooled = p.copy()                                       # (3,)
    dL_dpooled[y] -= 1.0
    # f̄ = (1/n) Σ_i F_{i,:}                     ⇒  every row of ∂L/∂F is ∂L/∂f̄ / n
    dL_df = np.broadcast_to(dL_dpooled / n, (n, len(p)))        # (n, 3)
    # F = C W_O + b_O                          ⇒  ∂L/∂W_O = Cᵀ ∂L/∂F,  ∂L/∂b_O = Σ_i ∂L/∂F_{i,:},  ∂L/∂C = ∂L/∂F W_Oᵀ
    dL_dw_o = context.T @ dL_df                                 # (d_v, 3)
    dL_db_o = dL_df.sum(axis=0)                                 # (3,)
    dL_dcontext = dL_df @ params["w_o"].T                       # (n, d_v)
    # C = A V                                  ⇒  ∂L/∂A = ∂L/∂C Vᵀ,  ∂L/∂V = Aᵀ ∂L/∂C
    dL_dweights = dL_dcontext @ v.T                             # (n, n)
    dL_dv = weights.T @ dL_dcontext                             # (n, d_v)
    # A_{i,:} = softmax(Ŝ_{i,:}), each row on its own  ⇒  J_i = ∂A_{i,:}/∂Ŝ_{i,:} = diag(a_i) − a_i a_iᵀ
    #   (one (n, n) per row, see softmax_jacobians). J_i is symmetric, so
    #   ∂L/∂Ŝ_{i,:} = J_i ∂L/∂A_{i,:} = a_i ⊙ (∂L/∂A_{i,:} − (a_i · ∂L/∂A_{i,:}) 1):
    #   the same numbers as multiplying by the n Jacobians, in O(n²) instead of O(n³).
    dL_dscores = weights * (dL_dweights - (weights * dL_dweights).sum(axis=1, keepdims=True))   # (n, n)
    # Ŝ = Q Kᵀ / √d_k                          ⇒  ∂L/∂Q = ∂L/∂Ŝ K / √d_k,  ∂L/∂K = (∂L/∂Ŝ)ᵀ Q / √d_k
    dL_dq = dL_dscores @ k / math.sqrt(d_k)                     # (n, d_k)
    dL_dk = dL_dscores.T @ q / math.sqrt(d_k)                   # (n, d_k)
    # Q = X W_Q + b_Q (and K, V alike)         ⇒  ∂L/∂W_Q = Xᵀ ∂L/∂Q,  ∂L/∂b_Q = Σ_i ∂L/∂Q_{i,:}
    #   (∂L/∂b_K comes out 0 up to rounding: b_K adds q_i · b_K / √d_k to every score of row i, and softmax
    #    ignores a shift of a whole row. The sum is kept literal, so the learner sees it vanish.)
    dL_dw_q, dL_db_q = x.T @ dL_dq, dL_dq.sum(axis=0)           # (d_in, d_k), (d_k,)
    dL_dw_k, dL_db_k = x.T @ dL_dk, dL_dk.sum(axis=0)           # (d_in, d_k), (d_k,)
    dL_dw_v, dL_db_v = x.T @ dL_dv, dL_dv.sum(axis=0)           # (d_in, d_v), (d_v,)
    # X feeds all three projections            ⇒  ∂L/∂X = ∂L/∂Q W_Qᵀ + ∂L/∂K W_Kᵀ + ∂L/∂V W_Vᵀ
    dL_dx = dL_dq @ params["w_q"].T + dL_dk @ params["w_k"].T + dL_dv @ params["w_v"].T   # (n, d_in)

    return {"dL/dpooled": dL_dpooled, "dL/df": dL_df, "dL/dw_o": dL_dw_o, "dL/db_o": dL_db_o,
            "dL/dcontext": dL_dcontext, "dL/dweights": dL_dweights, "dL/dv": dL_dv, "dL/dscores": dL_dscores,
            "dL/dq": dL_dq, "dL/dk": dL_dk, "dL/dw_q": dL_dw_q, "dL/db_q": dL_db_q, "dL/dw_k": dL_dw_k,
            "dL/db_k": dL_db_k, "dL/dw_v": dL_dw_v, "dL/db_v": dL_db_v, "dL/dx": dL_dx}


def _backward_heads(params: dict, c: dict, y: int, h: int) -> dict[str, np.ndarray]:
    """_backward for H = h > 1 heads: every line of the one-head pass, on each head's column block.
    scores, weights and their gradients are (H, n, n); q, k, v and theirs (n, H·d)."""
    x, weights, context, p = (c[name] for name in ("x", "weights", "context", "p"))
    q_h, k_h, v_h = (split_heads(c[name], h) for name in ("q", "k", "v"))   # (H, n, d_k), (H, n, d_k), (H, n, d_v)
    n, d_k = x.shape[0], q_h.shape[2]
    dL_dpooled = p.copy()                                       # (3,)      p − onehot(y)
    dL_dpooled[y] -= 1.0
    dL_df = np.broadcast_to(dL_dpooled / n, (n, len(p)))        # (n, 3)
    dL_dw_o = context.T @ dL_df                                 # (H·d_v, 3)
    dL_db_o = dL_df.sum(axis=0)                                 # (3,)
    dL_dcontext = dL_df @ params["w_o"].T                       # (n, H·d_v)   the heads' blocks side by side
    dL_dcontext_h = split_heads(dL_dcontext, h)                 # (H, n, d_v)  C_h = A_h V_h, per head
    dL_dweights = dL_dcontext_h @ v_h.transpose(0, 2, 1)        # (H, n, n)
    dL_dv = merge_heads(weights.transpose(0, 2, 1) @ dL_dcontext_h)   # (n, H·d_v)
    dL_dscores = weights * (dL_dweights - (weights * dL_dweights).sum(axis=2, keepdims=True))   # (H, n, n)
    dL_dq = merge_heads(dL_dscores @ k_h) / math.sqrt(d_k)     # (n, H·d_k)   per head ∂L/∂Ŝ_h K_h / √d_k
    dL_dk = merge_heads(dL_dscores.transpose(0, 2, 1) @ q_h) / math.sqrt(d_k)   # (n, H·d_k)
    dL_dw_q, dL_db_q = x.T @ dL_dq, dL_dq.sum(axis=0)           # (d_in, H·d_k), (H·d_k,)
    dL_dw_k, dL_db_k = x.T @ dL_dk, dL_dk.sum(axis=0)           # (d_in, H·d_k), (H·d_k,)
    dL_dw_v, dL_db_v = x.T @ dL_dv, dL_dv.sum(axis=0)           # (d_in, H·d_v), (H·d_v,)
    dL_dx = dL_dq @ params["w_q"].T + dL_dk @ params["w_k"].T + dL_dv @ params["w_v"].T   # (n, d_in)
    return {"dL/dpooled": dL_dpooled, "dL/df": dL_df, "dL/dw_o": dL_dw_o, "dL/db_o": dL_db_o,
            "dL/dcontext": dL_dcontext, "dL/dweights": dL_dweights, "dL/dv": dL_dv, "dL/dscores": dL_dscores,
            "dL/dq": dL_dq, "dL/dk": dL_dk, "dL/dw_q": dL_dw_q, "dL/db_q": dL_db_q, "dL/dw_k": dL_dw_k,
            "dL/db_k": dL_db_k, "dL/dw_v": dL_dw_v, "dL/db_v": dL_db_v, "dL/dx": dL_dx}


def softmax_jacobians(weights: np.ndarray) -> np.ndarray:
    """J[i] = diag(a_i) − a_i a_iᵀ, the Jacobian of row i of A with respect to row i of Ŝ; (n, n) -> (n, n, n).

    J[i, j, l] = ∂A_ij / ∂Ŝ_il = A_ij (δ_jl − A_il). Row i of A depends on row i of Ŝ only.
    """
    n = weights.shape[-1]
    jacobians = -weights[:, :, None] * weights[:, None, :]      # (n, n, n)   −a_i a_iᵀ
    jacobians[:, np.arange(n), np.arange(n)] += weights         #             + diag(a_i)
    return jacobians


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


def loss_and_gradients(params: dict, x, y, n_heads: int = 1) -> tuple[float, dict[str, np.ndarray]]:
    """(L, {name: ∂L/∂name}) by hand, without a Trace: what the training loop calls."""
    c = _forward(params, x, y, n_heads)
    g = _backward(params, c, y, n_heads)
    return float(c["loss"]), {name: g[f"dL/d{name}"] for name in (*PARAM_NAMES, "x")}


def _d(symbol: str) -> str:
    return rf"\frac{{\partial L}}{{\partial {symbol}}}"


def _add_gradient_steps(trace: Trace, params: dict, c: dict, g: dict) -> None:
    from ..forward.claims import say
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


# ---- the same model in torch, for checking -----------------------------------------------

def torch_forward(params: dict, x, y: int, n_heads: int = 1):
    """The loss as a torch scalar, from torch tensors (params by name, x (n, d_in)): autograd's side.
    Heads as torch code writes them: view (n, H, d) and permute to (H, n, d)."""
    import torch
    n, h = x.shape[0], n_heads
    q = (x @ params["w_q"] + params["b_q"]).view(n, h, -1).permute(1, 0, 2)    # (H, n, d_k)
    k = (x @ params["w_k"] + params["b_k"]).view(n, h, -1).permute(1, 0, 2)    # (H, n, d_k)
    v = (x @ params["w_v"] + params["b_v"]).view(n, h, -1).permute(1, 0, 2)    # (H, n, d_v)
    weights = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(q.shape[2]), dim=2)   # (H, n, n)
    context = (weights @ v).permute(1, 0, 2).reshape(n, -1)                    # (n, H·d_v)
    f = context @ params["w_o"] + params["b_o"]
    return -torch.log_softmax(f.mean(dim=0), dim=0)[y]


def torch_loss_and_gradients(params: dict, x, y, n_heads: int = 1) -> tuple[float, dict[str, np.ndarray]]:
    """(L, {name: ∂L/∂name}) from torch autograd, for numpy params and x; keys as loss_and_gradients."""
    import torch
    leaves = {name: _tensor(torch, a).requires_grad_() for name, a in {**params, "x": x}.items()}
    loss = torch_forward(leaves, leaves["x"], label_index(y), n_heads)
    loss.backward()
    return loss.item(), {name: t.grad.numpy() for name, t in leaves.items()}


def _tensor(torch, a):
    a = np.asarray(a, dtype=np.float64)
    return torch.from_numpy(a) if a.flags.writeable else torch.tensor(a)


def check_gradients(params: dict, x, y, entries=3, eps: float = 1e-5, seed: int = 0) -> dict[str, dict[str, float]]:
    """How far the hand gradients are from torch autograd and from central finite differences.

    Returns {name: {"torch": e, "finite_differences": e}} for each parameter and x, where e is
    the largest |hand − reference| over the compared entries divided by the largest |entry| of
    that gradient (autograd's), or by 1e-4 × the largest entry of all the gradients if that is
    larger: a gradient that is zero in exact arithmetic (∂L/∂b_K, see the backward pass) must
    not turn rounding noise of 1e-17 into a 100% error. 0 means identical. Finite differences
    (L(θ + ε) − L(θ − ε)) / 2ε are taken for `entries` seeded random entries of each array,
    or at the indices given as {name: [index, ...]}.
    """
    x, y = _as_input(params, x), label_index(y)
    hand = backward(params, x, y)
    _, auto = torch_loss_and_gradients(params, x, y)
    floor = 1e-4 * max(float(np.abs(g).max()) for g in auto.values()) or 1e-300
    rng = np.random.default_rng(seed)
    result = {}
    for name, grad in hand.items():
        scale = max(float(np.abs(auto[name]).max()), floor)
        value = x if name == "x" else params[name]
        if isinstance(entries, dict):
            picks = [tuple(int(j) for j in np.atleast_1d(i)) for i in entries.get(name, [])]
            if any(len(index) != value.ndim for index in picks):
                raise ConfigError(f"Entries of {name} need {value.ndim} indices each, as its shape {value.shape}.")
        else:
            flat = rng.choice(value.size, size=min(int(entries), value.size), replace=False)
            picks = [np.unravel_index(i, value.shape) for i in flat]
        fd_error = 0.0
        for index in picks:
            numeric = _central_difference(params, x, y, name, index, eps)
            fd_error = max(fd_error, abs(grad[index] - numeric) / scale)
        result[name] = {"torch": float(np.abs(grad - auto[name]).max() / scale), "finite_differences": float(fd_error)}
    return result


def _central_difference(params, x, y, name, index, eps) -> float:
    def loss_with(delta):
        p, xx = dict(params), x
        if name == "x":
            xx = x.copy()
            xx[index] += delta
        else:
            p[name] = params[name].copy()
            p[name][index] += delta
        return float(_forward(p, xx, y)["loss"])
    return (loss_with(eps) - loss_with(-eps)) / (2 * eps)


# ---- training -----------------------------------------------------------------------------

def sgd_step(params: dict, grads: dict, lr: float, frozen=()) -> dict[str, np.ndarray]:
    """θ ← θ − lr ∂L/∂θ for each parameter not in `frozen` (seed 000 freezes w_o and b_o). Pure."""
    return {name: value if name in frozen else value - lr * grads[name] for name, value in params.items()}


class TrainingDiverged(ConfigError):
    """The loss or a parameter became NaN or infinite; `params` are the last good ones."""

    def __init__(self, message: str, params: dict, epoch: int, step: int):
        super().__init__(message)
        self.params, self.epoch, self.step = params, epoch, step


class Sample(NamedTuple):
    x: np.ndarray                  # (n, d_in)
    y: int                         # class index
    tokens: tuple[str, ...] = ()
    text: str = ""


def _all_finite(params: dict) -> bool:
    return all(np.isfinite(a).all() for a in params.values())


def train(params: dict, dataset, lr: float, epochs: int, batch_size: int = 1, frozen=(), shuffle_seed: int | None = 0,
          gradients=loss_and_gradients, n_heads: int = 1):
    """Gradient descent, a generator: yields {"epoch", "loss", "accuracy", "running_loss", "params"} per epoch.

    batch_size 1 is seed 000's loop, one SGD step per sentence; otherwise the gradients of a
    mini-batch of sentences are averaged. The order is reshuffled every epoch from
    shuffle_seed (None keeps the dataset's order, as seed 000). loss and accuracy are of the
    epoch's final params on the whole dataset; running_loss is the mean loss seen during the
    epoch (what seed 000 prints). `gradients(params, x, y) -> (loss, grads)` defaults to the
    hand-written backward pass (the benchmark swaps in torch autograd); with n_heads > 1 it is
    called as gradients(params, x, y, n_heads=n_heads).

    Raises TrainingDiverged (carrying the last good params) as soon as the loss or a parameter
    is NaN or infinite: training never continues on NaN.
    """
    dataset = list(dataset)
    if not dataset:
        raise ConfigError("The dataset is empty: there is nothing to train on.")
    if isinstance(lr, bool) or not isinstance(lr, (int, float)) or not math.isfinite(lr) or lr <= 0:
        raise ConfigError(f"The learning rate must be a positive number, not {lr!r}; try {DEFAULTS['lr']}.")
    for name, value, high in (("epochs", epochs, MAX_EPOCHS), ("batch_size", batch_size, MAX_DATASET_ROWS)):
        if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= high:
            raise ConfigError(f"{name}={value!r} is out of range; use a whole number from 1 to {high:,}.")
    unknown = [name for name in frozen if name not in PARAM_NAMES]
    if unknown:
        raise ConfigError(f"Cannot freeze {', '.join(map(repr, unknown))}: the parameters are {', '.join(PARAM_NAMES)}.")
    rng = None if shuffle_seed is None else np.random.default_rng(shuffle_seed)
    last_good, step = params, 0
    if n_heads > 1:
        gradients = functools.partial(gradients, n_heads=n_heads)

    def diverged(epoch, what):
        return TrainingDiverged(
            f"Training diverged at epoch {epoch}, step {step}: {what} became NaN or infinite. The learning "
            f"rate {lr:g} is too large; try {lr / 10:g} or smaller. Training stopped at the last good parameters.",
            last_good, epoch, step)

    for epoch in range(1, epochs + 1):
        order = np.arange(len(dataset)) if rng is None else rng.permutation(len(dataset))
        seen = []
        with np.errstate(all="ignore"):                        # overflow is detected below, not warned about
            for start in range(0, len(order), batch_size):
                batch = [dataset[i] for i in order[start:start + batch_size]]
                step += 1
                loss, grads = gradients(params, batch[0].x, batch[0].y)
                for sample in batch[1:]:
                    more_loss, more = gradients(params, sample.x, sample.y)
                    loss += more_loss
                    grads = {name: grads[name] + more[name] for name in PARAM_NAMES}
                if len(batch) > 1:
                    loss, grads = loss / len(batch), {name: grads[name] / len(batch) for name in PARAM_NAMES}
                if not math.isfinite(loss):
                    raise diverged(epoch, "the loss")
                seen.append(loss)
                last_good, params = params, sgd_step(params, grads, lr, frozen)
                if not _all_finite(params):
                    raise diverged(epoch, "a parameter")
            stats = evaluate(params, dataset, n_heads)
        if not math.isfinite(stats["loss"]):
            raise diverged(epoch, "the loss")
        last_good = params
        yield {"epoch": epoch, "loss": stats["loss"], "accuracy": stats["accuracy"],
               "running_loss": float(np.mean(seen)), "params": params}


def predict(params: dict, x, n_heads: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """(p (3,), weights (n, n), or (H, n, n) with H heads): the class probabilities and the attention
    weights for one sentence."""
    c = _forward(params, _as_input(params, x), None, n_heads)
    return c["p"], c["weights"]


def evaluate(params: dict, dataset, n_heads: int = 1) -> dict[str, float]:
    """{"loss": mean cross-entropy, "accuracy": fraction predicted right, "n": sentences}."""
    losses, right = [], 0
    for sample in dataset:
        c = _forward(params, sample.x, sample.y, n_heads)
        losses.append(float(c["loss"]))
        right += int(np.argmax(c["p"]) == sample.y)
    if not losses:
        raise ConfigError("The dataset is empty: there is nothing to evaluate.")
    return {"loss": float(np.mean(losses)), "accuracy": right / len(losses), "n": len(losses)}


# ---- from text to data -----------------------------------------------------------------------

def d_in_for(d_embed: int, positional: str = "index") -> int:
    """The width of x: the embedding width, plus one for seed 000's index column."""
    return d_embed + (positional == "index")


def sentence_matrix(sentence: str, vocab: Vocabulary, positional: str = "index") -> tuple[tuple[str, ...], np.ndarray]:
    """(tokens, x (n, d_in)): words the vocabulary knows (others are dropped, as seed 000 does),
    each a row of its vector, with position: "index" appends 0, 1, ..., n−1 as a column (seed
    000), "sinusoidal" adds the sine/cosine encoding, "none" leaves x as it is.
    """
    if positional not in POSITIONALS:
        raise ConfigError(f"positional={positional!r} is not one of {', '.join(POSITIONALS)}.")
    words = resolve(sentence, lambda w: w in vocab, "drop").words
    x = embed(words, vocab)                                            # (n, d_embed)
    if positional == "index":
        x = np.concatenate([x, index_feature(len(words))], axis=1)     # (n, d_embed + 1)
    elif positional == "sinusoidal":
        x = x + sinusoidal_encoding(len(words), x.shape[1])            # (n, d_embed)
    return words, x


class Example(NamedTuple):
    text: str
    label: str


def load_dataset(text_or_path=DATA_PATH) -> list[Example]:
    """Read and check a CSV with a header "text,label" and one sentence per row.

    Accepts a path, the CSV's text, or its bytes (an upload). Labels are negative, neutral or
    positive; at most 1 MB and 2,000 rows. A bad row raises ConfigError naming its line.
    """
    if isinstance(text_or_path, Path) or (isinstance(text_or_path, str) and "\n" not in text_or_path
                                          and Path(text_or_path).is_file()):
        path = Path(text_or_path)
        if path.stat().st_size > MAX_DATASET_BYTES:
            raise ConfigError(f"The dataset file is larger than {MAX_DATASET_BYTES // 1_000_000} MB; keep at most "
                              f"{MAX_DATASET_ROWS:,} short sentences.")
        text_or_path = path.read_bytes()
    if isinstance(text_or_path, (bytes, bytearray)):
        if len(text_or_path) > MAX_DATASET_BYTES:
            raise ConfigError(f"The dataset file is larger than {MAX_DATASET_BYTES // 1_000_000} MB; keep at most "
                              f"{MAX_DATASET_ROWS:,} short sentences.")
        try:
            text_or_path = bytes(text_or_path).decode("utf-8-sig")
        except UnicodeDecodeError as e:
            raise ConfigError(f"The dataset is not UTF-8 text (byte {e.start} cannot be read). Save it as UTF-8 CSV.") from None
    text = str(text_or_path).lstrip("\ufeff")
    if len(text.encode("utf-8", "replace")) > MAX_DATASET_BYTES:
        raise ConfigError(f"The dataset is larger than {MAX_DATASET_BYTES // 1_000_000} MB; keep at most "
                          f"{MAX_DATASET_ROWS:,} short sentences.")
    if not text.strip():
        raise ConfigError("The dataset is empty: the first line must be the header “text,label”, then a "
                          "sentence and its label per line.")
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = next(reader, [])
        if [h.strip().lower() for h in header] != ["text", "label"]:
            raise ConfigError(f"Line 1 must be the header “text,label”, not {','.join(header)[:60]!r}.")
        examples = []
        for row in reader:
            line = reader.line_num
            if not row or not any(cell.strip() for cell in row):
                continue
            if len(row) != 2:
                raise ConfigError(f"Line {line} has {len(row)} field{'s' * (len(row) != 1)}; expected 2 (text,label). "
                                  "Put quotes around a text that contains commas.")
            sentence, label = row[0].strip(), row[1].strip().lower()
            if not sentence:
                raise ConfigError(f"Line {line} has an empty text.")
            if len(sentence) > MAX_CHARS:
                raise ConfigError(f"Line {line}: the text has {len(sentence):,} characters; the limit is {MAX_CHARS:,}.")
            if label not in CLASSES:
                raise ConfigError(f"Line {line}: the label {row[1].strip()[:30]!r} is not one of {', '.join(CLASSES)}.")
            examples.append(Example(sentence, label))
            if len(examples) > MAX_DATASET_ROWS:
                raise ConfigError(f"The dataset has more than {MAX_DATASET_ROWS:,} rows (line {line}); keep fewer.")
    except csv.Error as e:
        raise ConfigError(f"Line {reader.line_num}: the CSV cannot be read ({e}); check the quotes on that line.") from None
    if not examples:
        raise ConfigError("The dataset has a header but no rows: add lines like “great product,positive”.")
    return examples


def encode_dataset(examples, vocab: Vocabulary, positional: str = "index") -> tuple[list[Sample], list[str]]:
    """(samples, dropped texts): each example as x and a class index; sentences with no known word are dropped."""
    samples, dropped = [], []
    for text, label in examples:
        try:
            tokens, x = sentence_matrix(text, vocab, positional)
        except ConfigError:
            dropped.append(text)
            continue
        samples.append(Sample(x, label_index(label), tokens, text))
    if not samples:
        raise ConfigError("No sentence in the dataset has a word in the vocabulary: nothing is left to train on.")
    return samples, dropped
