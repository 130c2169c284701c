"""SymPy derivations of two gradients the training page shows, checked against the numbers.

Every index counts from 0, as the rest of the app (docs/notation.md): s_0, s_1, s_2; q_0, q_1; k_{00} … k_{11}.
Symbols are made here, never parsed from user text. sympy is imported inside the functions,
so `import attention_core` does not pay for it.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Derivation:
    latex: list[str]                 # the steps, each one LaTeX line
    symbolic: object                 # the sympy Matrix
    numeric_from_symbols: np.ndarray  # the symbolic result with the live numbers substituted
    numeric: np.ndarray              # the same quantity from the numeric code path
    max_abs_difference: float
    identity_holds: bool = True      # SymPy simplified (symbolic − closed form) to exactly 0


def softmax_jacobian(scores_row) -> Derivation:
    """∂a/∂s for a = softmax(s) with len(s) = 2 or 3, derived by differentiating exp(s_i)/Σ exp(s_j).

    SymPy's Jacobian simplifies to diag(a) − a aᵀ; substituting the live scores gives a matrix that
    must equal the numeric Jacobian built from the weights.
    """
    s_row = np.asarray(scores_row, dtype=np.float64)
    m = s_row.size
    if m not in (2, 3):
        raise ValueError("the symbolic panel derives a 2- or 3-key softmax")
    s, jac, holds, lines = _softmax_jacobian_symbolic(m)
    numbers = {s[i]: float(s_row[i]) for i in range(m)}
    from_symbols = np.array(jac.subs(numbers).evalf(30).tolist(), dtype=np.float64)
    from ..math.attention import softmax
    w = softmax(s_row)
    numeric = np.diag(w) - np.outer(w, w)
    return Derivation(list(lines), jac, from_symbols, numeric, float(np.abs(from_symbols - numeric).max()), holds)


@functools.lru_cache(maxsize=None)
def _softmax_jacobian_symbolic(m: int):
    """The number-free part (symbols, Jacobian, identity check, LaTeX): derived once per process and size."""
    import sympy as sp
    s = sp.symbols(f"s_0:{m}", real=True)
    total = sum(sp.exp(si) for si in s)
    a = sp.Matrix([sp.exp(si) / total for si in s])
    jac = a.jacobian(sp.Matrix(s))
    a_sym = sp.symbols(f"a_0:{m}", positive=True)
    pattern = sp.diag(*a_sym) - sp.Matrix(a_sym) * sp.Matrix(a_sym).T       # the closed form, in a_i
    closed = pattern.subs({a_sym[i]: a[i] for i in range(m)})              # ... written back in s_i
    holds = (jac - closed).applyfunc(sp.simplify) == sp.zeros(m, m)
    lines = (r"a_i = \frac{e^{s_i}}{\sum_j e^{s_j}}",
             r"\frac{\partial a_0}{\partial s_0} = " + sp.latex(sp.simplify(sp.diff(a[0], s[0]))) + r",\quad "
             r"\frac{\partial a_0}{\partial s_1} = " + sp.latex(sp.simplify(sp.diff(a[0], s[1]))),
             r"J = " + sp.latex(pattern) + r" = \mathrm{diag}(a) - a a^\top")
    return s, jac, bool(holds), lines


def scaled_dot_gradient(q_row, keys, upstream) -> Derivation:
    """∂L/∂q for one query against 2 keys of width d = 2, where L = Σ_j g_j a_j and a = softmax(K q / √2).

    Derived by SymPy from the definitions; compared with the chain rule the backward pass uses:
    ∂L/∂q = Kᵀ (J g) / √2, with J = diag(a) − a aᵀ.
    """
    q_row, keys, upstream = (np.asarray(v, dtype=np.float64) for v in (q_row, keys, upstream))
    if q_row.shape != (2,) or keys.shape != (2, 2) or upstream.shape != (2,):
        raise ValueError("the symbolic panel uses one 2-d query, two 2-d keys and 2 upstream gradients")
    q, k, g, grad, holds, lines = _scaled_dot_gradient_symbolic()
    d = 2
    numbers = {**{q[i]: q_row[i] for i in range(2)}, **{k[i, j]: keys[i, j] for i in range(2) for j in range(2)},
               **{g[i]: upstream[i] for i in range(2)}}
    from_symbols = np.array(grad.subs(numbers).evalf(30).tolist(), dtype=np.float64).ravel()
    from ..math.attention import softmax
    w = softmax(keys @ q_row / np.sqrt(d))
    jac = np.diag(w) - np.outer(w, w)
    numeric = keys.T @ (jac @ upstream) / np.sqrt(d)
    return Derivation(list(lines), grad, from_symbols, numeric, float(np.abs(from_symbols - numeric).max()), holds)


@functools.lru_cache(maxsize=None)
def _scaled_dot_gradient_symbolic():
    """The number-free part (symbols, gradient, identity check, LaTeX): derived once per process."""
    import sympy as sp
    q = sp.Matrix(sp.symbols("q_0:2", real=True))
    k = sp.Matrix(2, 2, sp.symbols("k_00 k_01 k_10 k_11", real=True))     # row j is key j
    g = sp.Matrix(sp.symbols("g_0:2", real=True))
    d = 2
    s = k * q / sp.sqrt(d)
    total = sum(sp.exp(si) for si in s)
    a = sp.Matrix([sp.exp(si) / total for si in s])
    loss = (g.T * a)[0]
    grad = sp.Matrix([sp.diff(loss, qi) for qi in q])
    closed = k.T * (sp.diag(*a) - a * a.T) * g / sp.sqrt(d)
    holds = (grad - closed).applyfunc(sp.simplify) == sp.zeros(2, 1)
    lines = (r"s_j = \frac{k_j \cdot q}{\sqrt{2}},\quad a = \mathrm{softmax}(s),\quad L = g_0 a_0 + g_1 a_1",
             r"\frac{\partial L}{\partial q_0} = " + sp.latex(sp.simplify(grad[0])),
             r"\frac{\partial L}{\partial q} = \frac{1}{\sqrt{2}} K^\top \left(\mathrm{diag}(a) - a a^\top\right) g")
    return q, k, g, grad, bool(holds), lines
