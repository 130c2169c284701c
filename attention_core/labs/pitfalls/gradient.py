"""The gradient mistake of tutorial 1: one softmax Jacobian, built from the first column of the weights, used for
every row. A small one-head attention layer on the learner's X carries the forward pass, its hand-written
backward pass to W_Q (right and wrong) and a finite-difference check.

    >>> from attention_core import Config
    >>> r = one_jacobian(Config())
    >>> r.check_passes_on_correct, r.check_flags_wrong
    (True, True)
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...forward.trace import Trace
from ...forward.weights import param_rng
from ...math import attention as att
from .base import PitfallResult, difference, one_token, pitfall, trace_of


@dataclass(frozen=True)
class SmallAttention:
    """The seed-000 layer on the learner's X, head 0: softmax(Q Kᵀ/√d_k) V with L = Σ C ∘ G."""
    x: np.ndarray                    # (n, d_model)
    w_q: np.ndarray                  # (d_model, d_k)
    w_k: np.ndarray                  # (d_model, d_k)
    w_v: np.ndarray                  # (d_model, d_v)
    g: np.ndarray                    # (n, d_v), fixed: dL/dC

    def forward(self, w_q=None):
        w_q = self.w_q if w_q is None else w_q
        q, k, v = self.x @ w_q, self.x @ self.w_k, self.x @ self.w_v                 # (n, d_k), (n, d_k), (n, d_v)
        a = att.softmax(q @ k.T / np.sqrt(q.shape[1]))                               # (n, n)
        c = a @ v                                                                    # (n, d_v)
        return float(np.sum(c * self.g)), (q, k, v, a)

    def grad_w_q(self, one_jacobian: bool = False) -> np.ndarray:                   # (d_model, d_k)
        _, (q, k, v, a) = self.forward()
        d_a = self.g @ v.T                                                           # dL/dA (n, n)
        if one_jacobian:                  # seed 000: J from α[j] (Julia linear indexing: the first column), every row
            c = a[:, 0]
            d_s = d_a @ (np.diag(c) - np.outer(c, c))
        else:                             # row i: J_i = diag(α_i) − α_i α_iᵀ
            d_s = a * (d_a - np.sum(d_a * a, axis=1, keepdims=True))
        d_q = d_s @ k / np.sqrt(q.shape[1])                                          # (n, d_k)
        return self.x.T @ d_q

    def directional_check(self, grad: np.ndarray, n_dirs: int = 3, eps: float = 1e-5) -> float:
        """Largest gap between ⟨grad, D⟩ and the central difference (L(W+εD) − L(W−εD)) / 2ε along seeded
        directions D, relative to ‖grad‖·‖D‖ (floored, so that a zero gradient is not divided by 0)."""
        rng = param_rng(0, "pitfall:directions")
        loss = self.forward()[0]
        worst = 0.0
        for _ in range(n_dirs):
            d = rng.standard_normal(self.w_q.shape)
            fd = (self.forward(self.w_q + eps * d)[0] - self.forward(self.w_q - eps * d)[0]) / (2 * eps)
            an = float(np.sum(grad * d))
            scale = max(float(np.linalg.norm(grad) * np.linalg.norm(d)), 1e-4 * (1 + abs(loss)))
            worst = max(worst, abs(an - fd) / scale)
        return worst


def small_attention(trace: Trace) -> SmallAttention:
    d_k, d_v = trace.facts["d_k"], trace.facts["d_v"]
    x = trace["x"].value
    g = param_rng(0, "pitfall:G").standard_normal((trace.n, d_v))
    return SmallAttention(x, trace["w_q"].value[:, :d_k], trace["w_k"].value[:, :d_k], trace["w_v"].value[:, :d_v], g)


@pitfall("One softmax Jacobian for every row", "000",
         "The tutorial builds the softmax Jacobian diag(α) − ααᵀ once, from α[j] (Julia's linear indexing "
         "makes it the first column of the weights A), and uses it for every row. Each row A_i is its own "
         "softmax and needs its own diag(A_i) − A_i A_iᵀ.")
def one_jacobian(source) -> PitfallResult:
    """dL/dW_Q with the softmax Jacobian built once, from α's first column, and used for every row."""
    trace, _ = trace_of(source)
    model = small_attention(trace)
    correct = model.grad_w_q()
    wrong = model.grad_w_q(one_jacobian=True)
    tol = 1e-6
    err_c, err_w = model.directional_check(correct), model.directional_check(wrong)
    size = float(np.linalg.norm(correct))
    rel = (f"{float(np.linalg.norm(wrong - correct)) / size:.3g}× ‖correct‖" if size
           else f"{float(np.linalg.norm(wrong)):.3g} while ‖correct‖ = 0")
    return PitfallResult(correct, wrong, difference(correct, wrong), "gradient matches finite differences of L",
                         err_c < tol, err_w >= tol,
                         f"L = Σ C ∘ G (G fixed, seeded) for C = softmax(Q_0 K_0ᵀ/√d_k) V_0 on your X with head 0's "
                         f"columns of W_Q, W_K, W_V (no mask, no bias, T = 1). Relative gap to central differences "
                         f"along 3 seeded directions: {err_c:.1e} (per-row Jacobians), {err_w:.3g} (one Jacobian); "
                         f"‖wrong − correct‖ is {rel}." + one_token(trace),
                         ("d_model", "d_k"), "∂L/∂W_Q" + (" (head 0's columns)" if trace.facts["n_heads"] > 1 else ""))
