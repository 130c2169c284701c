"""The sliding window: which keys a window of W keeps for query i. The answer is row i of the settings' own window
mask (the forward pass's M), or, when the settings have another mask, of the window of the settings' W that the
masks lesson compares (the prompt says so). The distractors are the other readings: W + 1 keys (i − W … i, as
Mistral's paper writes it), W keys after the query, W keys before it without itself, every earlier key (causal).

    >>> key_range([1, 2, 3], ["I", "love", "you", "today"]), key_range([2], ["I", "love", "you"])
    ('keys 1 … 3 (love, you, today)', 'key 2 only (you)')
"""
from __future__ import annotations

import numpy as np

from ...forward.trace import Trace
from ...lessons.masks import RULES
from ..quiz.notation import config_of, num
from .pins import pin_int, pinned
from .poll import MIN_CHOICES, Poll, count_choices, make

MASK_WORDS = {"none": "no mask", "causal": "the causal mask", "padding": "a padding mask"}


def key_range(keys, labels) -> str | None:
    """'keys 1 … 3 (love, you, today)', 'key 2 only (you)'; the words only for up to 4 keys; None for no key."""
    keys = [int(k) for k in keys]
    if not keys:
        return None
    words = f" ({', '.join(labels[k] for k in keys)})" if len(keys) <= 4 else ""
    if len(keys) == 1:
        return f"key {keys[0]} only{words}"
    if keys != list(range(keys[0], keys[-1] + 1)):
        return "keys " + ", ".join(map(str, keys)) + words
    return f"keys {keys[0]} … {keys[-1]}{words}"


def _window(trace: Trace):
    """(W, the window mask (n, n) bool, whether it is the settings' own) or None without a config. Without a window
    in the settings: the masks lesson's window of the settings' W, or of W = n − 1 when W ≥ n ≥ 3 (a window as wide
    as the sentence hides nothing the causal mask does not)."""
    config = config_of(trace)
    if config is None:
        return None
    w = config.window
    if config.mask == "sliding_window" and "mask" in trace:
        return w, trace["mask"].value.astype(bool), True
    if w >= trace.n >= 3:                            # a window the sentence fills is the causal mask: narrow it
        w = trace.n - 1
    return w, RULES["window"].mask(trace.n, w).astype(bool), False


def _wrong_ranges(i: int, w: int, n: int) -> list[range]:
    """W + 1 keys (i − W … i), W keys from the query on (i … i + W − 1), W keys before it (i − W … i − 1), every
    key up to it (0 … i)."""
    rule = RULES["window1"]
    return [np.flatnonzero(rule.mask(n, w)[i]), range(i, min(n, i + w)), range(max(0, i - w), i), range(0, i + 1)]


def _rows(trace: Trace, w: int, mask: np.ndarray) -> list[int]:
    labels = trace.token_labels()
    return [i for i in range(trace.n)
            if count_choices(key_range(np.flatnonzero(mask[i]), labels),
                             [key_range(r, labels) for r in _wrong_ranges(i, w, trace.n)]) >= MIN_CHOICES]


def window_keys_poll(trace: Trace, rng: np.random.Generator, at: dict | None = None) -> Poll | None:
    """at: {"row": i}: the keys query i sees."""
    got = _window(trace)
    if got is None:
        return None
    w, mask, own = got
    rows = _rows(trace, w, mask)
    if not rows:
        return None
    full = [i for i in rows if i >= w - 1]                  # a row whose window is full, if there is one
    rows = full or rows
    if at:
        row = pin_int(at, "row", 0, trace.n - 1)
        rows = pinned(_rows(trace, w, mask), lambda i: row is None or i == row)
    i = rows[int(rng.integers(len(rows)))]
    labels, n = trace.token_labels(), trace.n
    keys = np.flatnonzero(mask[i])
    config = config_of(trace)
    intro = "" if own else f"Your settings have {MASK_WORDS[config.mask]}; take instead a sliding window. "
    first = i - w + 1
    return make("window_keys",
                f"{intro}A sliding window of W = {w} keys, the query itself counted among them. Which keys may query "
                f"i = {i} (“{labels[i]}”) see, of keys 0 … {n - 1}?",
                key_range(keys, labels), [key_range(r, labels) for r in _wrong_ranges(i, w, n)],
                f"Query i sees key j when 0 ≤ i − j < W: j from i − W + 1 = {i} − {w} + 1 = {num(first)} to i = {i}"
                + (f", and no key before 0: keys 0 … {i}" if first < 0 else "") + f", {len(keys)} key"
                + ("s" if len(keys) != 1 else "") + ". Mistral's paper writes the window as i − W … i, W + 1 keys; "
                "the app and Hugging Face count W keys, the query's own included.", rng, "mask" if own else None)
