"""A class poll: one multiple-choice question, its right choice, and the arithmetic shown when it is revealed.

`choose` makes the choices: the right one and the distractors (each what a wrong mental model gives), written as
they are displayed, deduplicated (a distractor that reads like the answer is dropped), at most four, the answer's
place drawn by the seed.

    >>> rng = np.random.default_rng(0)
    >>> choices, answer = choose("0.5", ["2", "0.5", "0.25", "1"], rng)
    >>> sorted(choices), choices[answer]
    (['0.25', '0.5', '1', '2'], '0.5')
    >>> choose("0", ["0", "0"], rng) is None                     # fewer than 3 distinct choices: no poll
    True
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

MIN_CHOICES, MAX_CHOICES = 3, 4


@dataclass(frozen=True)
class Poll:
    kind: str                          # a key of POLL_KINDS
    prompt: str                        # plain text, the notation's Unicode math
    choices: tuple[str, ...]           # 3 or 4, distinct as displayed
    answer: int                        # index of the right choice
    explanation: str                   # the arithmetic with the numbers, shown at the reveal
    step_key: str | None = None        # the step of the teacher's trace to show beside it, if there is one

    def to_dict(self) -> dict:
        """What a room's poll holds: {"kind", "prompt", "choices", "answer", "explanation", "step_key"}."""
        d = asdict(self)
        d["choices"] = list(self.choices)
        return d


def choose(answer: str, distractors, rng: np.random.Generator) -> tuple[tuple[str, ...], int] | None:
    """(choices, index of the answer): the answer and the first distinct distractors (up to MAX_CHOICES in all),
    shuffled by rng; None when fewer than MIN_CHOICES distinct choices are left."""
    kept = [answer]
    for d in distractors:
        if d is not None and d not in kept:
            kept.append(d)
        if len(kept) == MAX_CHOICES:
            break
    if len(kept) < MIN_CHOICES:
        return None
    order = [int(k) for k in rng.permutation(len(kept))]
    return tuple(kept[k] for k in order), order.index(0)


def count_choices(answer: str, distractors) -> int:
    """How many distinct choices `choose` would make (at most MAX_CHOICES)."""
    return min(len({answer, *(d for d in distractors if d is not None)}), MAX_CHOICES)


def make(kind: str, prompt: str, answer: str, distractors, explanation: str, rng: np.random.Generator,
         step_key: str | None = None) -> Poll | None:
    """A Poll with its choices drawn by rng; None when the distractors leave fewer than 3 distinct choices."""
    made = choose(answer, distractors, rng)
    if made is None:
        return None
    choices, index = made
    return Poll(kind, prompt, choices, index, explanation, step_key)
