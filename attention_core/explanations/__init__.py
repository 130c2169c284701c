"""Layer 3, explanations: click any number of a Trace and see the arithmetic that made it.

    registry   Explanation, Context, register, explain: one explainer per step key, found through the registry;
               and the explainers of the forward pass's steps

An explainer reads the Trace (and the Config for the seeded draws); it never recomputes a step its own way.
Later layers register explainers for their own steps (training: the gradients; lessons: their pages' steps).

May import: the math, the forward pass, and each other.
"""
from .registry import (SYMBOLS, EXPLAINERS, Context, Explanation, can_explain, cell_of, elide, explain, fmt,
                       join_terms, latex_text, register, row_excerpt, settings_of, softmax_fraction, trace_kind)

__all__ = ["SYMBOLS", "EXPLAINERS", "Context", "Explanation", "can_explain", "cell_of", "elide", "explain", "fmt",
           "join_terms", "latex_text", "register", "row_excerpt", "settings_of", "softmax_fraction", "trace_kind"]
