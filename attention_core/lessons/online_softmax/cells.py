"""What the online softmax's explainers share: its numbers written (3 digits, parenthesised when negative, a number
subtracted), the block being explained, and one Explanation built from a formula, its numbers and a note.
"""
from __future__ import annotations

import math

import numpy as np

from ...explanations import Context, Explanation, fmt


def num(v) -> str:
    """v to 3 significant digits, in LaTeX (num_text: in plain text)."""
    return fmt(v, 3)


def num_text(v) -> str:
    return fmt(v, 3, latex=False)


def par(v) -> str:
    """num(v), in parentheses when negative or written with a power of ten: a factor of a product."""
    s = num(v)
    return f"({s})" if float(v) < 0 or r"\times" in s else s


def par_text(v) -> str:
    return f"({num_text(v)})" if float(v) < 0 else num_text(v)


def minus_text(v) -> str:
    """'- 1.2', '+ 0.5' (for −0.5), '+ inf' (for −inf): a number subtracted, in plain text."""
    v = float(v)
    return ("+ inf" if v < 0 else "- inf") if math.isinf(v) else (f"+ {num_text(-v)}" if v < 0 else f"- {num_text(v)}")


def minus(v) -> str:
    """A number subtracted: '− 1.2' or '+ 0.5' for a negative, '+ ∞' for −∞."""
    v = float(v)
    if math.isinf(v):
        return r"+ \infty" if v < 0 else r"- \infty"
    return rf"+ {num(-v)}" if v < 0 else rf"- {num(v)}"


def block_of(ctx: Context):
    """(the facts, the block's first key, its stop, the block b) of the block being explained."""
    f = ctx.trace.facts
    return f, f["keys"][0], f["keys"][1], f["block"]


def block_terms(ctx: Context, i: int, m_new: float):
    """The exponentials e^{(S_b)_ij − m_i′} of row i's visible block scores: [(j, s, e)]."""
    f, start, _, _ = block_of(ctx)
    row = ctx.value("s_b")[i]
    return [(start + jj, float(s), math.exp(float(s) - m_new)) for jj, s in enumerate(row) if np.isfinite(s)]


def explanation(key, cell, sym, shown, value, text_sym, text_shown, note, reads=(), n_terms=0, hidden=0) -> Explanation:
    """One cell's Explanation: its formula `sym` (lhs = …), the numbers put in, the value; the same in text."""
    lhs = sym.split(" = ")[0]
    return Explanation(key, cell, sym, shown, f"{lhs} = {num(value)}", value,
                       f"{text_sym}\n  = {text_shown}\n  = {num_text(value)}", note=note, n_terms=n_terms,
                       n_elided=hidden, reads=tuple(reads))
