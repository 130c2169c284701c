"""Layer 3, explanations: click any number of a Trace and see the arithmetic that made it.

    symbols       SYMBOLS: each step's symbol, a head's symbol, a cell of it, any string as safe LaTeX text
    formatting    fmt, exact: numbers; join_terms, elide, softmax_fraction, row_excerpt: long sums and rows
    context       Explanation, Settings (settings_of), Context: what an explainer reads and builds with
    registry      register, explain, can_explain, trace_kind: one explainer per (trace kind, step key)
    inputs        X_emb (a row looked up), PE (a position encoded), X (the two added or side by side)
    parameters    W_Q, W_K, W_V, W_O, the score parameters and the biases: seeded start, or trained
    projections   Q, K, V = X W (+ b), and each head's block of columns
    scores        S: dot, scaled (Ŝ = S / √d_k), additive, bilinear
    masking       M, S̃ (hidden keys' scores −∞) and the softmax A
    mixing        C = A V, the heads side by side, O = C W_O (+ b_O)
    rope_alibi    Q^R, K^R (RoPE's rotation) and ALiBi's bias B and biased scores
    block         the transformer block: a norm's cell (μ, σ², ε; RMSNorm's r), residual adds, the MLP, GELU,
                  logits, γ, β, W_1 … W_U; and X, W_Q … W_O of a layer's attention inside a block

Importing the package registers every explainer of the forward pass's steps (the modules from inputs on).
An explainer reads the Trace (and the Config for the seeded draws); it never recomputes a step its own way.
Later layers register explainers for their own steps (training: the gradients; lessons: their pages' steps).

May import: the math, the forward pass, and each other.
"""
from .context import Context, Explanation, settings_of
from .formatting import elide, fmt, join_terms, row_excerpt, softmax_fraction
from .registry import EXPLAINERS, can_explain, explain, register, trace_kind
from .symbols import SYMBOLS, cell_of, latex_text
from . import inputs, parameters, projections, scores, masking, mixing, rope_alibi, block  # noqa: F401, E402  (they register)

__all__ = ["SYMBOLS", "EXPLAINERS", "Context", "Explanation", "can_explain", "cell_of", "elide", "explain", "fmt",
           "join_terms", "latex_text", "register", "row_excerpt", "settings_of", "softmax_fraction", "trace_kind"]
