"""The masks-and-biases page: one head of the forward pass, from its scores to its weights, and masks compared.

    Ŝ_h (n, n) ──(+ B_h, ALiBi)──> Ŝ_h + B_h ──(mask M: −∞ where hidden)──> S̃_h ──softmax(· / T)──> A_h
                                                                             └─(+ e^{z_h} in the denominator)──> A_h (sink)

Every step up to A_h is head h of the forward pass's own trace under the sidebar's settings (run_forward):
its scores (after RoPE when the Position is RoPE, the sidebar's score function, query head h reading KV head
⌊h/g⌋), ALiBi's bias exactly when the Position is ALiBi (the sidebar's H heads and their slopes), the
sidebar's mask (causal, a window of W keys, padding) and its temperature T. The page adds only what the
sidebar has no setting for: a sink logit z_h, and masks shown side by side for comparison (the two readings
of a window, W and W + 1 keys; causal and window; causal and padding).

A clicked cell of a forward step is explained by the forward pass's own explainer (the same words and numbers
as the forward pages, head h); its `reads` name cells of that trace (facts["forward"]).
Masks are True = may attend; a shown mask M is 1/0.

The page in files, one idea each (this package is its entry point: import from here):

    claims       MaskSettings and the sentences true only under some settings (about="masks")
    compare      the masks shown side by side, one rule a row: the two readings of a window, causal, padding
    notation     head h's symbols, and the formulas and whys of the scores, ALiBi's slopes and the sidebar's mask
    lesson       masks_trace: the page's Trace (kind "masks"), cached, and the checks of its controls
    explainers   click a cell of kind "masks": the forward pass's own explainers, and the page's steps
"""
from __future__ import annotations

from . import explainers  # noqa: F401  (registers the click-a-cell explainers of kind "masks")
from .claims import KIND, MaskSettings, settings_of
from .compare import (COMPARE_TITLES, COMPARISONS, RULE_WHY, RULES, compared_rules, padding_compared, rule_formula,
                      rule_mask, rule_says)
from .lesson import MAX_SINK, check, logits_key, masks_trace
from .notation import (MASK_WHY, head_symbols, index_range, mask_formula, score_formula, scores_why, slope_parts,
                       slopes_formula)

_scores_why = scores_why                                 # the name tests/test_masks.py imports

__all__ = ["COMPARE_TITLES", "COMPARISONS", "KIND", "MASK_WHY", "MAX_SINK", "MaskSettings", "RULES", "RULE_WHY",
           "check", "compared_rules", "head_symbols", "index_range", "logits_key", "mask_formula", "masks_trace",
           "padding_compared", "rule_formula", "rule_mask", "rule_says", "score_formula", "scores_why",
           "settings_of", "slope_parts", "slopes_formula"]
