"""How a step is written: its symbol, a symbol per head, a cell of it, and any string as safe LaTeX text.

    >>> cell_of(head_symbol(SYMBOLS["scores"][0], 1), "2,3")
    '(S_{1})_{2,3}'

One notation for the whole app (docs/notation.md, math/notation.py): S raw scores, Ŝ scaled, S̃ masked,
A weights, C context (one head's, or the heads concatenated), O output.
"""
from __future__ import annotations

from ..math import notation

# step key -> (LaTeX symbol, plain-text symbol).
# A symbol with a subscript is parenthesised before indexing: (W_Q)_{m,j}.
SYMBOLS: dict[str, tuple[str, str]] = {
    "x_embed": (r"X_{\text{emb}}", "X_emb"), "pe": ("PE", "PE"), "x": ("X", "X"),
    "w_q": ("W_Q", "W_Q"), "w_k": ("W_K", "W_K"), "w_v": ("W_V", "W_V"),
    "b_q": ("b_Q", "b_Q"), "b_k": ("b_K", "b_K"), "b_v": ("b_V", "b_V"),
    "q": ("Q", "Q"), "k": ("K", "K"), "v": ("V", "V"),
    "q_heads": ("Q", "Q"), "k_heads": ("K", "K"), "v_heads": ("V", "V"),
    "scores": (notation.S, "S"), "scaled_scores": (notation.S_SCALED, "Ŝ"),
    "masked_scores": (notation.S_MASKED, "S̃"),
    "w_a_q": ("W_1", "W_1"), "w_a_k": ("W_2", "W_2"), "v_a": ("v", "v"), "w_b": ("W", "W"),
    "mask": (notation.M, "M"), "weights": (notation.A, "A"), "context": (notation.C, "C"),
    "concat": (notation.C, "C"), "w_o": ("W_O", "W_O"), "b_o": ("b_O", "b_O"), "output": (notation.O, "O"),
    "q_rot": ("Q^R", "Q^R"), "k_rot": ("K^R", "K^R"), "alibi": ("B", "B"),
    "biased_scores": (r"(\hat S + B)", "(Ŝ+B)"),
}
# Steps with a head axis whose head is written as the notation's subscript h (Q_h, S_h, Ŝ_h, A_h, C_h);
# the score functions' own parameters per head (W_1, W_2, v, W) carry it as a superscript (h) instead.
HEAD_SUBSCRIPT = ("q_heads", "k_heads", "v_heads", "scores", "scaled_scores", "masked_scores", "weights", "context",
                  "q_rot", "k_rot", "alibi", "biased_scores")


def head_symbol(symbol: str, head, latex: bool = True) -> str:
    r"""A step's symbol for head h, the notation's subscript h on each matrix: S_h, and for a sum of two
    matrices each one's, (Ŝ_h + B_h), never (Ŝ + B)_h.

    >>> head_symbol(r"\hat S", 4), head_symbol(r"(\hat S + B)", 4), head_symbol("(Ŝ+B)", 4, latex=False)
    ('\\hat S_{4}', '(\\hat S_{4} + B_{4})', '(Ŝ_4+B_4)')
    """
    sub = (lambda x: f"{x}_{{{head}}}") if latex else (lambda x: f"{x}_{head}")
    if symbol.startswith("(") and symbol.endswith(")") and "+" in symbol:
        sep = " + " if " + " in symbol else "+"
        return "(" + sep.join(sub(x.strip()) for x in symbol[1:-1].split(sep)) + ")"
    return sub(symbol)


def cell_of(symbol: str, sub: str) -> str:
    r"""A matrix symbol indexed, parenthesised only where the subscript would be ambiguous:
    S_{1,2}, (W_Q)_{m,j}, (\hat S_{4} + B_{4})_{2,1}, never ((\hat S_{4} + B_{4}))_{2,1}.

    >>> cell_of("S", "1,2"), cell_of("W_Q", "m,j"), cell_of(r"(\hat S_{4} + B_{4})", "2,1")
    ('S_{1,2}', '(W_Q)_{m,j}', '(\\hat S_{4} + B_{4})_{2,1}')
    """
    if symbol.startswith("(") and symbol.endswith(")"):
        return rf"{symbol}_{{{sub}}}"
    if "_" in symbol and not symbol.startswith("\\"):
        return rf"({symbol})_{{{sub}}}"
    return rf"{symbol}_{{{sub}}}"


_LATEX_ESCAPES = {"\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "$": r"\$", "&": r"\&", "#": r"\#",
                  "^": r"\textasciicircum{}", "_": r"\_", "%": r"\%", "~": r"\textasciitilde{}",
                  "<": r"\textless{}", ">": r"\textgreater{}"}


def latex_text(s: str) -> str:
    r"""Any string as LaTeX text mode: \text{...} with every special character escaped.

    >>> latex_text("don't")
    "\\text{don't}"
    >>> latex_text("a_b{c}")
    '\\text{a\\_b\\{c\\}}'
    """
    s = "".join(_LATEX_ESCAPES.get(c, c) for c in str(s) if c.isprintable())
    return rf"\text{{{s}}}"
