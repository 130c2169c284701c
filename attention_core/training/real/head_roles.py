"""What each head of a real model does, as a number read from its attention weights, every layer and head at once.

Measured as the small language model's page measures them (lessons/induction/head_scores.py, Olsson et al. 2022,
"In-context Learning and Induction Heads"), on a sequence of random tokens repeated once, so that no meaning of
the words can stand in for the pattern:

    previous-token score  mean over the queries i ≥ 1 of A_h[i, i−1]              how much i looks one token back
    induction score       mean over the queries i with a target of Σ_{j ≤ i : x_{j−1} = x_i} A_h[i, j]
                          (the key right AFTER an earlier occurrence of i's own token: prefix matching)
    sink score            mean over the queries i ≥ 1 of A_h[i, 0]                the weight sent to the first token
                          (Xiao et al. 2023, "Efficient Streaming Language Models with Attention Sinks": a head with
                          nothing to look at parks its weight there; query 0 can only see token 0, so it is left out)

All three lie in [0, 1]. `head_roles(model)` runs the model on the repeated random tokens (after the special tokens
its tokenizer puts first, e.g. Llama's <s>) and returns a Trace of kind "real_roles" whose Steps prev_token,
induction and sink are (layer, head) tables; `role_scores(trace)` reads the same three from any real Trace (the
learner's sentence: there the induction score has targets only where a token repeats).
"""
from __future__ import annotations

import numpy as np

from ...forward.trace import Trace
from .forward import MAX_TOKENS, run_real
from .load import RealModel

KIND = "real_roles"
SEED = 0
HALF = 50                      # random tokens, then the same again: 100 tokens (fewer where the context is shorter)
ROLES = ("prev_token", "induction", "sink")


def patterns(trace: Trace) -> np.ndarray:
    """(layer, head, n_q, n_k): every head's attention weights, read from each layer's attention Trace."""
    return np.stack([att["weights"].value for att in trace.facts["attention"]])


def previous_token(a: np.ndarray) -> np.ndarray:
    """(layer, head) from a (layer, head, n, n): the mean of A[i, i−1] over i ≥ 1 (0 for a single token)."""
    n = a.shape[-1]
    if n < 2:
        return np.zeros(a.shape[:2])
    i = np.arange(1, n)
    return a[..., i, i - 1].mean(axis=-1)


def sink(a: np.ndarray) -> np.ndarray:
    """(layer, head): the mean of A[i, 0] over the queries i ≥ 1 (0 for a single token)."""
    return a[..., 1:, 0].mean(axis=-1) if a.shape[-1] > 1 else np.zeros(a.shape[:2])


def targets(ids) -> np.ndarray:
    """(n, n) bool: key j is an induction target of query i when 1 ≤ j ≤ i and x_{j−1} = x_i."""
    ids = np.asarray(ids)
    before = np.concatenate([[-1], ids[:-1]])                                  # x_{j−1}
    return (ids[:, None] == before[None, :]) & np.tri(len(ids), dtype=bool)


def induction(a: np.ndarray, ids) -> np.ndarray:
    """(layer, head): the mean, over the queries that have a target, of the weight on their targets (0 if none)."""
    t = targets(ids)                                                           # (n, n)
    rows = t.any(axis=-1)                                                      # (n,): queries with a target
    if not rows.any():
        return np.zeros(a.shape[:2])
    on = (a * t).sum(axis=-1)                                                  # (layer, head, n)
    return on[..., rows].mean(axis=-1)


def role_scores(trace: Trace) -> dict[str, np.ndarray]:
    """{"prev_token", "induction", "sink"}: (layer, head) tables on the trace's own tokens."""
    a = patterns(trace)
    return {"prev_token": previous_token(a), "induction": induction(a, trace.facts["ids"]), "sink": sink(a)}


def special_ids(model: RealModel) -> list[int]:
    """The ids the tokenizer itself puts before any text (Llama's <s>; GPT-2: none)."""
    return list(model.tokenizer.encode("").ids)


def repeated_random_ids(model: RealModel, half: int = HALF, seed: int = SEED) -> list[int]:
    """The tokenizer's own prefix, then `half` distinct random ordinary tokens, then the same again: at most
    the model's context (and MAX_TOKENS)."""
    prefix = special_ids(model)
    room = (min(model.config.n_ctx, MAX_TOKENS) - len(prefix)) // 2
    half = max(1, min(half, room))
    added = getattr(getattr(model.tokenizer, "_tok", None), "get_added_tokens_decoder", dict)()
    avoid = set(prefix) | {int(i) for i in added}
    known = min(model.config.vocab, model.tokenizer.vocab_size)     # rows past the tokenizer's are padding (Qwen2.5)
    pool = np.array([i for i in range(known) if i not in avoid and model.tokenizer.piece(i) is not None])
    segment = np.random.default_rng(seed).choice(pool, size=min(half, len(pool)), replace=False)
    return prefix + [int(i) for i in segment] * 2


def pooled_scores(runs: list[Trace]) -> dict[str, np.ndarray]:
    """role_scores over several sequences at once, as the induction page pools its batch: every query of every
    sequence in one mean (the induction score's over the queries that have a target)."""
    a = [patterns(r) for r in runs]
    t = [targets(r.facts["ids"]) for r in runs]
    rows = sum(int(x.any(axis=-1).sum()) for x in t)
    on = sum(((w * x).sum(axis=-1) * x.any(axis=-1)).sum(axis=-1) for w, x in zip(a, t))
    return {"prev_token": np.mean([previous_token(w) for w in a], axis=0),
            "induction": on / rows if rows else np.zeros(a[0].shape[:2]),
            "sink": np.mean([sink(w) for w in a], axis=0)}


def head_roles(model: RealModel, half: int = HALF, seed: int = SEED) -> Trace:
    """Every head's three scores on repeated random tokens, a Trace of kind "real_roles" (steps prev_token,
    induction, sink: (layer, head)); facts: the ids, their pieces, the half, the model's forward Trace, and how many
    sequences ("sequences": the project's small model is measured on the induction page's own 16, small.probe)."""
    from .small import is_small, probe
    batch = [list(map(int, row)) for row in probe()] if is_small(model) else [repeated_random_ids(model, half, seed)]
    runs = [run_real(model, ids=row) for row in batch]
    ids, run = batch[0], runs[0]
    scores = pooled_scores(runs) if len(runs) > 1 else role_scores(run)
    c = model.config
    trace = Trace(tuple(run.tokens))          # the rows of its steps are layers, the columns heads: counted from 0
    trace.facts.update(kind=KIND, ids=tuple(ids), half=(len(ids) - len(special_ids(model))) // 2, run=run,
                       n_layers=c.n_layers, n_heads=c.n_heads, sequences=len(runs))
    trace.add("prev_token", "Previous-token score", scores["prev_token"], ("layer", "head"),
              r"\frac{1}{n-1} \sum_{i \ge 1} A_h[i, i-1]", scale="sequential",
              why="How much of each query's weight goes to the token just before it.")
    trace.add("induction", "Induction score", scores["induction"], ("layer", "head"),
              r"\operatorname{mean}_{i\ \text{with a target}} \sum_{j \le i:\ x_{j-1} = x_i} A_h[i, j]", scale="sequential",
              why="In the repeat, how much of each query's weight goes to the token that followed its own token "
                  "the first time: the head that lets a model continue what it has seen.")
    trace.add("sink", "Sink score", scores["sink"], ("layer", "head"), r"\frac{1}{n-1} \sum_{i \ge 1} A_h[i, 0]",
              scale="sequential", why="How much of each query's weight goes to the first token, whatever it is.")
    return trace
