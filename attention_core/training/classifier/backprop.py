"""The classifier's backward pass, by hand: each derivative under the forward line it undoes.

From the loss back to X in three parts, in the order a learner reads them:

    _backward_head         through L = −log softmax(f̄)_y, f̄ = mean_i F_{i,:}, F = C W_O + b_O:
                           ∂L/∂f̄, ∂L/∂F, ∂L/∂W_O, ∂L/∂b_O, ∂L/∂C
    _backward_attention    through C = A V, A = softmax(Ŝ) row by row, Ŝ = Q Kᵀ / √d_k:
                           ∂L/∂A, ∂L/∂V, ∂L/∂Ŝ, ∂L/∂Q, ∂L/∂K
                           (_backward_attention_heads: the same, on each head's column block)
    _backward_projections  through Q = X W_Q + b_Q, K and V alike: ∂L/∂W_Q, ∂L/∂b_Q, …, ∂L/∂X

With H heads, C, Q, K, V and their gradients are (n, H·d): the heads' column blocks side by side.

Gradients are named "dL/d<name>" and have the shape of <name>. tests/test_classifier.py checks them against
torch autograd and finite differences (gradient_check.py) to 1e-9.

    >>> from attention_core.training.classifier.model import _forward, init_params
    >>> params = init_params(d_in=4, d_k=2, d_v=3, seed=0)
    >>> c = _forward(params, np.ones((5, 4)), 2)
    >>> g = _backward(params, c, 2)
    >>> g["dL/dw_q"].shape, g["dL/dscores"].shape, g["dL/dx"].shape
    ((4, 2), (5, 5), (5, 4))
"""
from __future__ import annotations

import math

import numpy as np

from ...math.attention import merge_heads, split_heads
from .model import PARAM_NAMES, _forward


def _backward(params: dict, c: dict, y: int, n_heads: int = 1) -> dict[str, np.ndarray]:
    """∂L/∂(everything), from the loss back to X, in the order a learner reads it.

    `c` is _forward's dict. Each derivative sits under the forward line it undoes.
    """
    g = _backward_head(params, c, y)
    if n_heads > 1:
        g.update(_backward_attention_heads(c, g["dL/dcontext"], n_heads))
    else:
        g.update(_backward_attention(c, g["dL/dcontext"]))
    g.update(_backward_projections(params, c["x"], g))
    return g


def _backward_head(params: dict, c: dict, y: int) -> dict[str, np.ndarray]:
    """From the loss back to the context vectors C (n, H·d_v): the same for any number of heads."""
    context, p = c["context"], c["p"]
    n = context.shape[0]
    # L = −log softmax(f̄)_y                    ⇒  ∂L/∂f̄ = p − onehot(y)
    dL_dpooled = p.copy()                                       # (3,)
    dL_dpooled[y] -= 1.0
    # f̄ = (1/n) Σ_i F_{i,:}                     ⇒  every row of ∂L/∂F is ∂L/∂f̄ / n
    dL_df = np.broadcast_to(dL_dpooled / n, (n, len(p)))        # (n, 3)
    # F = C W_O + b_O                          ⇒  ∂L/∂W_O = Cᵀ ∂L/∂F,  ∂L/∂b_O = Σ_i ∂L/∂F_{i,:},  ∂L/∂C = ∂L/∂F W_Oᵀ
    dL_dw_o = context.T @ dL_df                                 # (H·d_v, 3)
    dL_db_o = dL_df.sum(axis=0)                                 # (3,)
    dL_dcontext = dL_df @ params["w_o"].T                       # (n, H·d_v)
    return {"dL/dpooled": dL_dpooled, "dL/df": dL_df, "dL/dw_o": dL_dw_o, "dL/db_o": dL_db_o,
            "dL/dcontext": dL_dcontext}


def _backward_attention(c: dict, dL_dcontext: np.ndarray) -> dict[str, np.ndarray]:
    """From ∂L/∂C back to Q, K and V: one head."""
    q, k, v, weights = c["q"], c["k"], c["v"], c["weights"]
    d_k = q.shape[1]
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
    return {"dL/dweights": dL_dweights, "dL/dv": dL_dv, "dL/dscores": dL_dscores, "dL/dq": dL_dq, "dL/dk": dL_dk}


def _backward_attention_heads(c: dict, dL_dcontext: np.ndarray, h: int) -> dict[str, np.ndarray]:
    """_backward_attention for H = h > 1 heads: every line of the one-head pass, on each head's column block.
    scores, weights and their gradients are (H, n, n); q, k, v and theirs (n, H·d)."""
    weights = c["weights"]
    q_h, k_h, v_h = (split_heads(c[name], h) for name in ("q", "k", "v"))   # (H, n, d_k), (H, n, d_k), (H, n, d_v)
    d_k = q_h.shape[2]
    dL_dcontext_h = split_heads(dL_dcontext, h)                 # (H, n, d_v)  C_h = A_h V_h, per head
    dL_dweights = dL_dcontext_h @ v_h.transpose(0, 2, 1)        # (H, n, n)
    dL_dv = merge_heads(weights.transpose(0, 2, 1) @ dL_dcontext_h)   # (n, H·d_v)
    dL_dscores = weights * (dL_dweights - (weights * dL_dweights).sum(axis=2, keepdims=True))   # (H, n, n)
    dL_dq = merge_heads(dL_dscores @ k_h) / math.sqrt(d_k)     # (n, H·d_k)   per head ∂L/∂Ŝ_h K_h / √d_k
    dL_dk = merge_heads(dL_dscores.transpose(0, 2, 1) @ q_h) / math.sqrt(d_k)   # (n, H·d_k)
    return {"dL/dweights": dL_dweights, "dL/dv": dL_dv, "dL/dscores": dL_dscores, "dL/dq": dL_dq, "dL/dk": dL_dk}


def _backward_projections(params: dict, x: np.ndarray, g: dict) -> dict[str, np.ndarray]:
    """From ∂L/∂Q, ∂L/∂K, ∂L/∂V to the projections' parameters and the input X (any number of heads)."""
    dL_dq, dL_dk, dL_dv = g["dL/dq"], g["dL/dk"], g["dL/dv"]
    # Q = X W_Q + b_Q (and K, V alike)         ⇒  ∂L/∂W_Q = Xᵀ ∂L/∂Q,  ∂L/∂b_Q = Σ_i ∂L/∂Q_{i,:}
    #   (∂L/∂b_K comes out 0 up to rounding: b_K adds q_i · b_K / √d_k to every score of row i, and softmax
    #    ignores a shift of a whole row. The sum is kept literal, so the learner sees it vanish.)
    dL_dw_q, dL_db_q = x.T @ dL_dq, dL_dq.sum(axis=0)           # (d_in, H·d_k), (H·d_k,)
    dL_dw_k, dL_db_k = x.T @ dL_dk, dL_dk.sum(axis=0)           # (d_in, H·d_k), (H·d_k,)
    dL_dw_v, dL_db_v = x.T @ dL_dv, dL_dv.sum(axis=0)           # (d_in, H·d_v), (H·d_v,)
    # X feeds all three projections            ⇒  ∂L/∂X = ∂L/∂Q W_Qᵀ + ∂L/∂K W_Kᵀ + ∂L/∂V W_Vᵀ
    dL_dx = dL_dq @ params["w_q"].T + dL_dk @ params["w_k"].T + dL_dv @ params["w_v"].T   # (n, d_in)
    return {"dL/dw_q": dL_dw_q, "dL/db_q": dL_db_q, "dL/dw_k": dL_dw_k, "dL/db_k": dL_db_k, "dL/dw_v": dL_dw_v,
            "dL/db_v": dL_db_v, "dL/dx": dL_dx}


def softmax_jacobians(weights: np.ndarray) -> np.ndarray:
    """J[i] = diag(a_i) − a_i a_iᵀ, the Jacobian of row i of A with respect to row i of Ŝ; (n, n) -> (n, n, n).

    J[i, j, l] = ∂A_ij / ∂Ŝ_il = A_ij (δ_jl − A_il). Row i of A depends on row i of Ŝ only.
    """
    n = weights.shape[-1]
    jacobians = -weights[:, :, None] * weights[:, None, :]      # (n, n, n)   −a_i a_iᵀ
    jacobians[:, np.arange(n), np.arange(n)] += weights         #             + diag(a_i)
    return jacobians


def loss_and_gradients(params: dict, x, y, n_heads: int = 1) -> tuple[float, dict[str, np.ndarray]]:
    """(L, {name: ∂L/∂name}) by hand, without a Trace: what the training loop calls."""
    c = _forward(params, x, y, n_heads)
    g = _backward(params, c, y, n_heads)
    return float(c["loss"]), {name: g[f"dL/d{name}"] for name in (*PARAM_NAMES, "x")}
