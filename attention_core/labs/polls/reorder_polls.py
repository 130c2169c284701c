"""reorder: the sentence's words in another order. The settings' sentence is the reordered one; the poll quotes
the weight one word gave another in the earlier order and asks for it now. Without a positional encoding and
without a mask the weight moves with its words (the rows and columns of A are reordered with them); with either,
where a word stands enters the scores and the weight changes. The distractors are what wrong mental models give,
each computed by a forward pass: the same place of the earlier sentence (the weight stays with the place), the
same words with the other choice of position (none or sinusoidal), 1/n (an even share).

    >>> from attention_core import Config, run_forward
    >>> trace = run_forward(Config(positional="none", sentence="today you love I"))
    >>> p = reorder_poll(trace, np.random.default_rng(0), {"row": "2", "col": "2", "order": "3 2 1 0"})
    >>> p.choices[p.answer], "A[1,1] = 0.9959" in p.prompt
    ('0.9959', True)
"""
from __future__ import annotations

import re

import numpy as np

from ...forward.stages import run_forward
from ...forward.trace import Trace
from ...math.limits import ConfigError
from ..quiz.notation import at as cell, by_head, config_of, num
from .pins import Unfit, pin_int, pinned
from .poll import MIN_CHOICES, Poll, count_choices, make

POSITIONS = {"sinusoidal": "a sinusoidal encoding added to X", "learned": "learned positions added to X",
             "index": "the position index as a column of X", "none": "no positional encoding",
             "alibi": "ALiBi's bias", "rope": "RoPE"}
MASKS = {"causal": "the causal mask", "sliding_window": "a sliding window", "padding": "a padding mask"}


def _order(at: dict | None, n: int) -> list[int]:
    """The earlier sentence's words as indices into the settings' tokens ("3 2 1 0": it read token 3 first); the
    reversed order unless pinned. Unfit for anything that is not a reordering of 0 … n − 1."""
    if not at or "order" not in at:
        return list(range(n))[::-1]
    parts = at["order"].split()
    if not all(re.fullmatch(r"\d{1,4}", p) for p in parts) or sorted(map(int, parts)) != list(range(n)):
        raise Unfit(f"order = {at['order']!r} is not a reordering of 0 … {n - 1}")
    return [int(p) for p in parts]


def _run(config, sentence: str, tokens) -> Trace | None:
    try:
        t = run_forward(config.replace(sentence=sentence))
    except ConfigError:
        return None
    return t if tuple(t.tokens) == tuple(tokens) else None


def _first_upper(text: str) -> str:
    return text[:1].upper() + text[1:]


def reorder_poll(trace: Trace, rng: np.random.Generator, at: dict | None = None) -> Poll | None:
    """at: {"row": i, "col": j, "head": h, "order": the earlier order}: A[i,j] now, A of the same two words quoted
    from the earlier order."""
    config = config_of(trace)
    n = trace.n
    if config is None or n < 2 or "weights" not in trace:
        return None
    order = _order(at, n)
    if order == list(range(n)) or [trace.tokens[k] for k in order] == list(trace.tokens):
        if at:
            raise Unfit("the earlier order is the same sentence")
        return None
    earlier_words = [trace.tokens[k] for k in order]
    earlier = _run(config, " ".join(earlier_words), earlier_words)
    other_position = "sinusoidal" if config.positional == "none" else "none"
    other = _run(config.replace(positional=other_position), " ".join(trace.tokens), trace.tokens)
    if earlier is None or other is None:
        return None
    now, before, moved = (by_head(t["weights"].value) for t in (trace, earlier, other))
    where = [order.index(i) for i in range(n)]              # token i of the settings stood at where[i] before

    def wrong(h, i, j):
        return [num(before[h, i, j]), num(moved[h, i, j]), num(1 / n), num(before[h, where[i], where[j]])]
    heads = now.shape[0]
    cells = [(h, i, j) for h in range(heads) for i in range(n) for j in range(n)
             if count_choices(num(now[h, i, j]), wrong(h, i, j)) >= MIN_CHOICES]
    if at:
        i, j = pin_int(at, "row", 0, n - 1), pin_int(at, "col", 0, n - 1)
        h = pin_int(at, "head", 0, heads - 1) if heads > 1 else None
        if heads == 1 and "head" in at:
            raise Unfit("these settings have one head")
        cells = pinned(cells, lambda c: (i is None or c[1] == i) and (j is None or c[2] == j)
                       and (h is None or c[0] == h))
    if not cells:
        return None
    h, i, j = cells[int(rng.integers(len(cells)))]
    head = h if heads > 1 else None
    labels = trace.token_labels()
    ki, kj = where[i], where[j]
    a_now, a_before, a_place = cell("A", head, i, j), cell("A", head, ki, kj), cell("A", head, i, j)
    in_head = f" in head {h}" if head is not None else ""
    apart = config.positional == "alibi" and all(abs(i - k) == abs(ki - where[k]) for k in range(n))  # ALiBi: distances
    reasons = ([f"{POSITIONS[config.positional]} writes "
                + ("how far apart two words stand" if config.positional == "alibi" else "where a word stands")
                + " into the scores"] if config.positional != "none" else []) + (
              [f"{MASKS[config.mask]} hides keys by their place"] if config.mask != "none" else [])
    same = num(now[h, i, j]) == num(before[h, ki, kj])
    why = ("Without a positional encoding or a mask nothing in attention knows where a word stands: reordering the "
           "words reorders the rows and columns of A with them, so the weight stays. " if not reasons else
           _first_upper("; ".join(reasons)) + (", so the weight changes. " if not same else
                                                  ", and each word stands as far from this query in both orders, so "
                                                  "the weight stays. " if apart and config.mask == "none" else
                                                  ", yet here the weight reads the same. "))
    return make("reorder",
                f"With {POSITIONS[config.positional]}{'' if config.mask == 'none' else ' and ' + MASKS[config.mask]}, "
                f"the sentence “{' '.join(earlier_words)}” gave {a_before} = {num(before[h, ki, kj])}{in_head}: the "
                f"weight “{labels[i]}” (row {ki}) gave “{labels[j]}” (key {kj}). Reordered to "
                f"“{' '.join(trace.tokens)}” (the sentence of these settings), what weight {a_place} does "
                f"“{labels[i]}” (now row {i}) give “{labels[j]}” (now key {j}){in_head}?",
                num(now[h, i, j]), wrong(h, i, j),
                f"Computed on both sentences: {a_place} = {num(now[h, i, j])} now, {a_before} = "
                f"{num(before[h, ki, kj])} before, for the same two words. {why}The same place of the earlier "
                f"sentence, {cell('A', head, i, j)} = {num(before[h, i, j])}, is the weight “{earlier_words[i]}” gave "
                f"“{earlier_words[j]}”; with "
                f"{POSITIONS[other_position]} the weight would be {num(moved[h, i, j])}; 1/n = 1/{n} = {num(1 / n)} "
                "would be an even share.", rng, "weights")
