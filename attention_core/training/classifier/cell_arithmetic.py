r"""The vocabulary of the classifier's explainers: how a cell is named, and how its arithmetic is written.

gradient_explainers.py explains every cell of a classifier trace; this file holds what its explainers share:

    ref, ref_text          one cell in LaTeX and in plain text: Q_{1,2}, (W_Q)_{0,1}, ∂L/∂Ŝ_{0,1}, (J_2)_{0,1}
    sum_of                 Σ_m Π factors for one cell, its factors named by index letters ("im", "mj")
    sum_explanation        an Explanation of such a sum (+ a bias, over a divisor), long sums elided
    Sum, explain_sum       a step that is one such sum, as a row of data (gradient_explainers.SUMS), and its explainer
    explanation            any Explanation: the formula, the live numbers, the value, one per line
    register               registers an explainer for classifier traces only

    >>> ref("w_q", (0, 1)), ref_text("dL/dscores", (1, 0)), ref("dweights/dscores", (2, 0, 1))
    ('(W_Q)_{0,1}', 'dL/dŜ[1,0]', '(J_{2})_{0,1}')
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ...explanations import Context, Explanation, join_terms
from ...explanations import register as register_explainer

KIND = "classifier"


def is_classifier_trace(trace) -> bool:
    """Made by classifier.forward: its facts name the classes and the label these explainers read
    (a trace merely labelled facts["kind"] = "classifier" is not explained by them)."""
    return "classes" in trace.facts and "label" in trace.facts


def register(*keys: str):
    return register_explainer(*keys, kind=KIND, when=is_classifier_trace)


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


def word(ctx: Context, i: int) -> str:
    return f"{i} (“{ctx.trace.tokens[i]}”)"


def class_name(ctx: Context, c: int) -> str:
    return f"{c} ({ctx.trace.facts['classes'][c]})"


def label(ctx: Context) -> int:
    return int(np.argmax(ctx.value("y")))


def settings(ctx: Context):
    """The TrainingSettings the trace was made under (classifier.forward records them; not known: positional None)."""
    made_under = ctx.trace.facts.get("settings")
    if made_under is None:
        from ..training_input import TrainingSettings
        made_under = TrainingSettings(positional=None)
    return made_under


def sqrt_d_k(ctx: Context) -> tuple[str, str, float]:
    """√d_k as a divisor: (LaTeX, text, value)."""
    d_k = ctx.trace.facts.get("d_k", ctx.trace["q"].shape[1])
    return rf"\sqrt{{{d_k}}}", f"√{d_k}", math.sqrt(d_k)


# ---- writing an explanation ----------------------------------------------------------------------------

def explanation(ctx: Context, key, cell, rhs, rhs_text, shown, shown_text, value, note="", n_terms=0, n_elided=0,
                reads=(), independent=True) -> Explanation:
    """key[cell] = rhs (the formula) = shown (the live numbers) = value, in LaTeX and in plain text."""
    lhs, lhs_text = ref(key, cell), ref_text(key, cell)
    value = float(value)
    return Explanation(key, cell, f"{lhs} = {rhs}", shown, f"{lhs} = {ctx.num(value)}", value,
                       f"{lhs_text} = {rhs_text}\n  = {shown_text}\n  = {ctx.num_text(value)}",
                       note=note, n_terms=n_terms, n_elided=n_elided, reads=tuple(reads), independent=independent)


def sum_of(ctx: Context, factors, over: str, at: dict) -> tuple[list, str, str, int]:
    """Σ_over Π factors for one cell: (terms, LaTeX, text, the number of terms).

    factors: ((step, index letters), ...); `at` binds the cell's letters to numbers, `over` runs over the
    first factor's axis of that letter. terms: [(factors' values, their reads ((step, cell), ...))].
    """
    def index(letters, m):
        return tuple(m if letter == over else at[letter] for letter in letters)

    first, letters = factors[0]
    n = ctx.value(first).shape[letters.index(over)]
    terms = [(tuple(ctx.value(key)[index(ls, m)] for key, ls in factors),
              tuple((key, index(ls, m)) for key, ls in factors)) for m in range(n)]
    tex = rf"\sum_{{{over}=0}}^{{{n - 1}}} " + r"\, ".join(ref(key, index(ls, over)) for key, ls in factors)
    text = f"Σ_{over} " + "·".join(ref_text(key, index(ls, over)) for key, ls in factors)
    return terms, tex, text, n


def shown_terms(ctx: Context, terms) -> tuple[str, str, list[float], int]:
    """terms: [(factors, reads)] -> (LaTeX, text, products, n_left_out), long sums elided."""
    tex = [r" \cdot ".join(ctx.factor(f) for f in factors) for factors, _ in terms]
    txt = ["·".join(ctx.factor_text(f) for f in factors) for factors, _ in terms]
    shown, hidden = join_terms(tex)
    shown_text, _ = join_terms(txt, latex=False)
    return shown, shown_text, [math.prod(float(f) for f in factors) for factors, _ in terms], hidden


def sum_explanation(ctx: Context, key, cell, rhs, rhs_text, terms, bias=None, divisor=None, prefix=False,
                    note="") -> Explanation:
    """value = (Σ_t Π factors_t (+ bias)) (/ divisor).

    terms: [(factors, reads)], reads = ((key, cell), ...); bias: (value, read) or None;
    divisor: (latex, text, value) or None, shown as \\frac{1}{d}(...) when `prefix`, else \\frac{...}{d}.
    """
    shown, shown_text, parts, hidden = shown_terms(ctx, terms)
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
    return explanation(ctx, key, cell, rhs, rhs_text, shown, shown_text, value, note, len(terms), hidden, reads)


# ---- a step that is one sum of products, as a row of data -------------------------------------------------

@dataclass(frozen=True)
class Sum:
    """key[cell] = Σ_over Π factors (+ bias), scaled: one row of gradient_explainers.SUMS.

    Letters name the indices: cell="ij", over="m", factors=(("q", "im"), ("k", "jm")) reads
    Ŝ_{i,j} = Σ_m Q_{i,m} K_{j,m}; the sum runs over the first factor's axis lettered `over`.
    """
    key: str
    cell: str                                  # the letters of the cell's indices
    over: str                                  # the letter summed over
    factors: tuple[tuple[str, str], ...]       # (step, its index letters), multiplied
    note: Callable[..., str]                   # note(ctx, *cell): the sentence of why
    bias: tuple[str, str] | None = None        # (step, its index letters), added after the sum
    scale: str = ""                            # a key of SCALES, or "" for none


# A scale: how the formula writes the divisor (LaTeX, text), whether 1/d stands in front of the sum
# (else the sum is over d), and its live value (ctx, summed length) -> (LaTeX, text, number).
SCALES = {"/√d_k": (r"\sqrt{d_k}", "√d_k", False, lambda ctx, n: sqrt_d_k(ctx)),
          "1/√d_k": (r"\sqrt{d_k}", "√d_k", True, lambda ctx, n: sqrt_d_k(ctx)),
          "1/n": ("n", "n", True, lambda ctx, n: (str(n), str(n), n))}


def explain_sum(row: Sum, ctx: Context, cell) -> Explanation:
    """The explainer of every Sum row: its formula written from the row's letters, its terms read from the trace."""
    at = dict(zip(row.cell, cell))
    terms, rhs, rhs_text, n = sum_of(ctx, row.factors, row.over, at)
    bias = None
    if row.bias is not None:
        b_key, letters = row.bias
        b_cell = tuple(at[letter] for letter in letters)
        rhs, rhs_text = f"{rhs} + {ref(b_key, b_cell)}", f"{rhs_text} + {ref_text(b_key, b_cell)}"
        bias = (ctx.value(b_key)[b_cell], (b_key, b_cell))
    divisor, prefix = None, False
    if row.scale:
        d_tex, d_text, prefix, value = SCALES[row.scale]
        divisor = value(ctx, n)
        if prefix:
            rhs, rhs_text = rf"\frac{{1}}{{{d_tex}}} {rhs}", f"(1/{d_text}) {rhs_text}"
        else:
            rhs, rhs_text = rf"\frac{{{rhs}}}{{{d_tex}}}", f"({rhs_text}) / {d_text}"
    return sum_explanation(ctx, row.key, cell, rhs, rhs_text, terms, bias, divisor, prefix, row.note(ctx, *cell))
