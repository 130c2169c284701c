"""The small language model: its shape, a sentence to its tokens, its forward pass.

Two pre-norm LayerNorm blocks of attention only (4 heads of d_k = 16, d_model = 64, causal), learned token and
position embeddings, an unembedding to 31 tokens, a context of 40 positions: the size at which Elhage et al.
(2021) and Olsson et al. (2022) watch induction heads form. It is trained on the copy task (task.py): random
tokens with one segment repeated, so what it learns is to copy, whatever the tokens stand for. A learner's
sentence therefore runs through it with each distinct word as one token, numbered in order of first appearance.

    >>> ids, words, labels, notices = sentence_ids("the cat sat on the mat and the cat sat on the")
    >>> ids[:8], words[:3], labels[:2], len(labels)
    ([0, 1, 2, 3, 0, 4, 5, 0], ['the', 'cat', 'sat'], ['the', 'cat'], 31)
"""
from __future__ import annotations

import numpy as np

from ...forward.config import Config
from ...forward.transformer import Arch, lm_input, run_transformer
from ...forward.trace import Trace
from ...math.limits import ConfigError
from ...math.text import set_aside, tokenize

VOCAB = 31                 # tokens 0 … 30
N_CTX = 40                 # positions 0 … 39
D_MODEL = 64
N_HEADS = 4
D_HEAD = 16
ARCH = Arch(n_layers=2, placement="pre", norm="layer", mlp=False)


def attention_config(words) -> Config:
    """The attention settings of every layer: H = 4 heads of d_k = d_v = 16, scaled dot product, causal, no
    positional step inside attention (the positions are learned embeddings added to X)."""
    return Config(sentence=" ".join(words) or "token", embedding="random", d_model=D_MODEL, positional="none",
                  n_heads=N_HEADS, d_k=D_HEAD, d_v=D_HEAD, score="scaled_dot", mask="causal", weights="random")


def token_labels(words) -> list[str]:
    """The 31 tokens' names: a word of the sentence where one is assigned, else 'token k'."""
    return [words[k] if k < len(words) else f"token {k}" for k in range(VOCAB)]


def first_cut(k: int) -> str:
    """'the first word is cut', 'the first 9 words are cut'."""
    return "the first word is cut" if k == 1 else f"the first {k} words are cut"


def sentence_ids(sentence: str) -> tuple[list[int], list[str], list[str], list[str]]:
    """(ids, distinct words, the 31 tokens' labels, notices): each distinct word one token, by first appearance.

    At most the last N_CTX words are kept, and of those the longest ending with at most VOCAB distinct words.
    """
    words, skipped = tokenize(sentence)
    if not words:
        raise ConfigError("The sentence has no words: type a few, e.g. “the cat sat on the mat and the cat sat on the”.")
    notices = [set_aside(skipped)] if skipped else []
    too_long = len(words) > N_CTX
    if too_long:
        cut = len(words) - N_CTX
        notices.append(f"The model reads at most {N_CTX} tokens: {first_cut(cut)}, the last {N_CTX} kept.")
        words = words[-N_CTX:]
    start = len(words)
    while start > 0 and len(set(words[start - 1:])) <= VOCAB:
        start -= 1
    if start:
        of = f"of the last {N_CTX}, " if too_long else ""
        notices.append(f"The model has {VOCAB} tokens, one per distinct word: {of}{first_cut(start)}, so that the "
                       f"rest use at most {VOCAB} distinct words.")
        words = words[start:]
    distinct = list(dict.fromkeys(words))
    ids = [distinct.index(w) for w in words]
    return ids, distinct, token_labels(distinct), notices


def lm_trace(params: dict, ids, labels: list[str], tokens=None) -> Trace:
    """The model's forward pass on token ids: a Trace of kind "block" (every layer's attention inside it),
    with X = E[ids] + E^pos[0:n] as its first step."""
    ids = [int(i) for i in ids]
    if not 1 <= len(ids) <= N_CTX or not all(0 <= i < VOCAB for i in ids):
        raise ConfigError(f"The model reads 1 to {N_CTX} tokens, each from 0 to {VOCAB - 1}.")
    tokens = list(tokens) if tokens is not None else [labels[i] for i in ids]
    trace = run_transformer(attention_config(tokens), ARCH, params, lm_input(params, ids), tokens, labels)
    trace.facts.update(ids=tuple(ids), lm=True)
    return trace


def as_float64(params: dict) -> dict[str, np.ndarray]:
    """The trained float32 parameters as float64 arrays (the forward pass computes in float64)."""
    return {name: np.asarray(value, dtype=np.float64) for name, value in params.items()}
