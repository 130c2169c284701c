"""The masks the page shows side by side: the two readings of a window (W and W + 1 keys), causal, padding.

Each compared mask is a row of RULES (its heading, symbol, formula, the mask as the math layer builds it, whether
query i may see key j and that rule with the numbers, and why); the page's steps mask_w, mask_w1, mask_causal and
mask_padding name a rule and its parameter (compared_rules).

    >>> rule_mask("window1", 1, 3).tolist()                  # W + 1 = 2 keys: query i sees i − 1 and i
    [[1.0, 0.0, 0.0], [1.0, 1.0, 0.0], [0.0, 1.0, 1.0]]
    >>> rule_says("padding", (2,), 0, 2)
    (False, 'key 2 is hidden')
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ...forward.config import Config
from ...math import attention as att

COMPARISONS = ("readings", "causal_window", "causal_padding")


@dataclass(frozen=True)
class Rule:
    """One compared mask; `arg` is its parameter: W for a window, the hidden keys for padding, None for causal."""
    title: str                                          # the heading: {w} is the sidebar's W, {w1} = W + 1
    symbol: str                                         # M, or M' for the W + 1 reading
    formula: Callable[[object], str]                    # arg -> LaTeX
    mask: Callable[[int, object], np.ndarray]           # (n, arg) -> (n, n), True = may attend
    sees: Callable[[int, int, object], bool]            # (i, j, arg) -> query i may see key j
    says: Callable[[int, int, object, bool], str]       # (i, j, arg, sees) -> the rule with the numbers
    why: str


def _yes(ok: bool) -> str:
    return "yes" if ok else "no"


RULES = {
    "window": Rule(
        "Up to W = {w} key(s)", "M", lambda w: rf"M_{{ij}} = [\,0 \le i - j < W\,],\quad W = {w}",
        lambda n, w: att.sliding_window_mask(n, w), lambda i, j, w: 0 <= i - j < w,
        lambda i, j, w, ok: f"0 ≤ i − j = {i - j} < {w}: {_yes(ok)}",
        "Query i sees keys i − W + 1 … i: W keys, itself included. Hugging Face transformers keeps key j "
        "when j > i − W, and flash-attn's window of W − 1 keys to the left plus the query is the same mask."),
    "window1": Rule(
        "Up to W + 1 = {w1} keys", "M'", lambda w: rf"M'_{{ij}} = [\,0 \le i - j \le W\,],\quad W = {w}",
        lambda n, w: att.sliding_window_mask(n, w + 1), lambda i, j, w: 0 <= i - j < w + 1,
        lambda i, j, w, ok: f"0 ≤ i − j = {i - j} ≤ {w}: {_yes(ok)}",
        "Query i sees keys i − W … i: W + 1 keys, itself included. Mistral's paper writes the window "
        "this way, and PyTorch's own sliding-window example for its flexible attention keeps a key when "
        "i − j ≤ W."),
    "causal": Rule(
        "Causal", "M", lambda _: r"M_{ij} = [\,j \le i\,]",
        lambda n, _: att.causal_mask(n), lambda i, j, _: j <= i,
        lambda i, j, _, ok: f"j = {j} ≤ i = {i}: {_yes(ok)}",
        "Query i sees itself and every key before it: what a model writing left to right may read."),
    "padding": Rule(
        "Padding", "M", lambda hidden: rf"M_{{ij}} = [\,j \notin \{{{', '.join(map(str, hidden))}\}}\,]",
        lambda n, hidden: att.padding_mask(n, n, hidden), lambda i, j, hidden: j not in hidden,
        lambda i, j, hidden, ok: f"key {j} {'is not' if ok else 'is'} hidden",
        "The hidden keys (padding a batch added) are invisible to every query, before or after it."),
}
COMPARE_TITLES = {kind: rule.title for kind, rule in RULES.items()}
RULE_WHY = {kind: rule.why for kind, rule in RULES.items()}


def compared_rules(config: Config, n: int) -> dict[str, tuple[str, object]]:
    """The comparison masks: step key -> (rule, its parameter)."""
    hidden = padding_compared(config, n)
    return {"mask_w": ("window", config.window), "mask_w1": ("window1", config.window),
            "mask_causal": ("causal", None), "mask_padding": ("padding", hidden)}


def padding_compared(config: Config, n: int) -> tuple[int, ...]:
    """The keys the compared padding mask hides: the sidebar's padding positions (those in the sentence),
    or the last token when it names none."""
    return tuple(sorted({p for p in config.padding if p < n})) or (n - 1,)


def rule_mask(kind: str, arg, n: int) -> np.ndarray:
    """(n, n) 1/0: window (arg = W keys), window1 (W + 1 keys), causal, padding (arg = hidden keys)."""
    return RULES[kind].mask(n, arg).astype(float)


def rule_formula(kind: str, arg) -> str:
    return RULES[kind].formula(arg)


def rule_says(kind: str, arg, i: int, j: int) -> tuple[bool, str]:
    """(query i may see key j, the rule with the numbers)."""
    rule = RULES[kind]
    ok = rule.sees(i, j, arg)
    return ok, rule.says(i, j, arg, ok)
