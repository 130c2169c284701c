"""The classifier's parameters and its forward pass, with the shape of every line (numpy, float64).

    X (n, d_in) → Q, K, V → Ŝ = Q Kᵀ / √d_k → A = softmax(Ŝ) row by row → C = A V → F = C W_O + b_O
    → f̄ = the mean of F's rows → p = softmax(f̄) → L = −log p_y

`_forward` returns every intermediate by name, with no Trace: the training loop's fast path, and what
the backward pass (backprop.py) reads. With H heads, head h uses the column block h of Q, K and V.

    >>> params = init_params(d_in=4, d_k=2, d_v=3, seed=0)
    >>> sorted((name, value.shape) for name, value in params.items())[:3]
    [('b_k', (2,)), ('b_o', (3,)), ('b_q', (2,))]
    >>> c = _forward(params, np.ones((5, 4)), y=2)
    >>> c["weights"].shape, c["p"].shape, float(c["loss"]) > 0
    ((5, 5), (3,), True)
"""
from __future__ import annotations

import math

import numpy as np

from ...forward.weights import init_weight
from ...math.attention import merge_heads, softmax, split_heads
from ...math.limits import MAX_DIM, MAX_HEADS, ConfigError

CLASSES = ("negative", "neutral", "positive")    # seed 000's one-hot order: [1,0,0], [0,1,0], [0,0,1]
PARAM_NAMES = ("w_q", "b_q", "w_k", "b_k", "w_v", "b_v", "w_o", "b_o")
PARAM_AXES = {"w_q": ("d_in", "d_k"), "b_q": ("d_k",), "w_k": ("d_in", "d_k"), "b_k": ("d_k",),
              "w_v": ("d_in", "d_v"), "b_v": ("d_v",), "w_o": ("d_v", "class"), "b_o": ("class",)}


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


def predict(params: dict, x, n_heads: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """(p (3,), weights (n, n), or (H, n, n) with H heads): the class probabilities and the attention
    weights for one sentence."""
    c = _forward(params, _as_input(params, x), None, n_heads)
    return c["p"], c["weights"]
