"""What every pitfall shares: the result it returns, its card (key, title, source, words), the @pitfall mark
that makes the card, the scores' symbols for its words, and the small helpers the checks use.

A pitfall is a function source -> PitfallResult, where source is a Config (the forward pass is run) or a
Trace; `@pitfall(title, seed_source, description)` hangs its card on it as `.pitfall`, and pitfalls.py
lists the cards in order.

    >>> difference(np.array([1.0, np.nan]), np.array([1.5, np.nan]))
    0.5
    >>> count(1, "key"), count(3, "key"), power(2 ** -1.5)
    ('1 key', '3 keys', '2^−1.5')
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Callable

import numpy as np

from ...explanations import settings_of
from ...forward.config import Config
from ...forward.stages import run_forward
from ...forward.trace import Trace
from ...math.gqa import expand_kv
from ...math.text import count  # noqa: F401  (the pitfalls import it from here)

ROW_SUM_TOL = 1e-9


@dataclass(frozen=True, eq=False)
class PitfallResult:
    correct: np.ndarray              # the right computation
    wrong: np.ndarray                # the mistake, same shape
    difference: float                # max |wrong − correct|; inf where one is NaN/inf and the other is not
    check_name: str                  # what the check tests, in a few words
    check_passes_on_correct: bool
    check_flags_wrong: bool
    check_detail: str                # the check's numbers, in a sentence or two
    axes: tuple[str, ...] = ()       # names of the arrays' axes (for labels)
    what: str = ""                   # what the arrays are ("attention weights at d_k = 512")
    labels: dict = field(default_factory=dict)   # tick labels of axes the sentence does not name {"vocab": [...]}


TUTORIAL_OF_SEED = {"000": 1, "001": 2, "002": 3, "003": 4, "004": 5}   # docs/notation.md, "The tutorials"


@dataclass(frozen=True, eq=False)
class Pitfall:
    key: str
    title: str
    seed_source: str                 # "000", "001", "002" (a source text), or "common"
    description: str                 # str.format fields: the scores' symbols under the settings (text(config))
    compute: Callable[[Config | Trace], PitfallResult]

    @property
    def tutorial(self) -> int | None:
        """The number of the tutorial the mistake comes from (docs/notation.md), None for a common one."""
        return TUTORIAL_OF_SEED.get(self.seed_source)

    @property
    def source(self) -> str:
        """Where the mistake comes from, in a learner's words: 'from tutorial 3' or 'a classic'."""
        return f"from tutorial {self.tutorial}" if self.tutorial else "a classic"

    def text(self, source: Config | Trace | None = None) -> str:
        """The description with the scores named as these settings compute them (S, Ŝ or S̃, / T)."""
        return self.description.format(**symbols(source))


def pitfall(title: str, seed_source: str, description: str):
    """Mark a compute function as a pitfall: its card, keyed by the function's name, becomes `compute.pitfall`;
    the card's compute says so when the two versions coincide on the input (see labelled)."""
    def mark(compute):
        compute.pitfall = Pitfall(compute.__name__, title, seed_source, description, labelled(compute))
        return compute
    return mark


def labelled(compute):
    """Say so when the two versions coincide on this input (one token, all scores equal, X = 0)."""
    def run(source) -> PitfallResult:
        r = compute(source)
        if r.difference == 0 and "coincide" not in r.check_detail:
            r = replace(r, check_detail=r.check_detail + " On this input the two versions coincide (one token, "
                                                            "or every score equal): try a longer or more varied sentence.")
        return r
    run.__name__, run.__doc__ = compute.__name__, compute.__doc__
    return run


def symbols(source: Config | Trace | None = None) -> dict[str, str]:
    """The scores' symbols the pitfalls' words use, under these settings (plain text, docs/notation.md):
    scores: what the score step gives (Ŝ for the scaled dot product, else S), unmasked;
    arg: what softmax reads, divided by T when T ≠ 1 (S, Ŝ, Ŝ + B with ALiBi's bias, or S̃ with a mask)."""
    if source is None:
        source = Config()
    if isinstance(source, Trace):
        trace, config = source, source.facts.get("config")
        scaled, masked, biased = "scaled_scores" in trace, "mask" in trace, "alibi" in trace
        t = settings_of(trace, config).temperature
    else:
        scaled, masked, t = source.score == "scaled_dot", source.mask != "none", source.temperature
        biased = source.positional == "alibi"
    scores = "Ŝ" if scaled else "S"
    arg = "S̃" if masked else f"{scores} + B" if biased else scores
    if t != 1:
        arg = f"({arg}) / {t:g}" if " + " in arg else f"{arg} / {t:g}"
    return {"scores": scores, "arg": arg}


# ---- the checks' helpers --------------------------------------------------------------------------------

def difference(correct: np.ndarray, wrong: np.ndarray) -> float:
    """max |wrong − correct|, counting a NaN or infinity on one side only as an infinite difference."""
    correct, wrong = np.asarray(correct, float), np.asarray(wrong, float)
    same = (correct == wrong) | (np.isnan(correct) & np.isnan(wrong))
    with np.errstate(invalid="ignore"):
        gap = np.where(same, 0.0, np.abs(wrong - correct))
    gap = np.where(np.isnan(gap), np.inf, gap)
    return float(gap.max()) if gap.size else 0.0


def trace_of(source: Config | Trace) -> tuple[Trace, Config | None]:
    """(the trace, its Config or None): a Config is run through the forward pass."""
    if isinstance(source, Trace):
        return source, source.facts.get("config")
    return run_forward(source), source


def rows_sum_to_one(a: np.ndarray, visible: np.ndarray | None = None) -> tuple[bool, float]:
    """(every row with a visible key sums to 1, the largest |row sum − 1| among them)."""
    sums = a.sum(axis=-1)
    rows = np.ones(sums.shape, bool) if visible is None else np.broadcast_to(visible.any(axis=-1), sums.shape)
    if not rows.any():
        return True, 0.0
    err = float(np.nanmax(np.where(rows, np.abs(sums - 1), 0.0))) if not np.isnan(sums[rows]).any() else math.inf
    return err <= ROW_SUM_TOL, err


def mask_of(trace: Trace) -> np.ndarray | None:
    """The mask M as booleans (n_q, n_k), None without one."""
    return trace["mask"].value.astype(bool) if "mask" in trace else None


def one_token(trace: Trace) -> str:
    """The sentence a check adds when the sentence has one token."""
    return " With one token every softmax row is [1], so the two versions coincide." if trace.n == 1 else ""


def power(m: float) -> str:
    """A slope 2^−x written as the paper writes it: 2^−1.5."""
    return f"2^−{-math.log2(m):g}"


# ---- Q and K per head, as the scores read them ----------------------------------------------------------

def heads_of(trace: Trace, name: str) -> np.ndarray:
    """(H, n, d): every head's columns of Q, K or V (one head gets a leading axis of 1)."""
    return trace[f"{name}_heads"].value if trace.facts["n_heads"] > 1 else trace[name].value[None]


def rotated_heads(trace: Trace, name: str) -> np.ndarray:
    """(H, n, d): Q^R or K^R per head, as RoPE's forward pass caches and scores them (one head: a leading 1)."""
    value = trace[f"{name}_rot"].value
    return value if value.ndim == 3 else value[None]


def one_head_squeezed(a: np.ndarray, trace: Trace) -> np.ndarray:
    """Drop the head axis again with one head, as the forward pass's own steps have none."""
    return a if trace.facts["n_heads"] > 1 else a[0]


def query_key_heads(trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    """(Q, K), each (H, n, d_k), as the scores read them: Q^R, K^R under RoPE, K repeated so that query head h
    meets KV head ⌊h/g⌋."""
    per_head = rotated_heads if "q_rot" in trace else heads_of
    q, k = per_head(trace, "q"), per_head(trace, "k")
    return q, expand_kv(k, q.shape[0])


def query_key_rows(trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    """query_key_heads without the head axis for one head: ((h?, n, d_k), (h?, n, d_k))."""
    q, k = query_key_heads(trace)
    return one_head_squeezed(q, trace), one_head_squeezed(k, trace)
