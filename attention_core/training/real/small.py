"""The project's own small language model as a RealModel: the real-model pages' first choice, offline and instant.

training/lm's model (2 pre-norm LayerNorm blocks of attention only, 4 heads of d_k = 16, d_model = 64, learned
positions, 31 tokens, a context of 40), with the shipped run's trained weights (data/induction_lm.npz, float32 as
trained), run by run_real like any checkpoint: a GPT-2-like block (LayerNorm, learned positions, W_U its own)
without the MLP (CheckpointConfig.mlp False) and without biases. Its "tokenizer" is the small model's own rule
(lm/model.py sentence_ids): each distinct word of the sentence one token, numbered by first appearance, at most 31
of them and the last 40 words; no BPE, no vocabulary of pieces. So a token id means a word only within one sentence:
`SmallTokenizer.encode(text)` gives the ids with the sentence's own `WordTokens` (its words as the pieces) and the
same notices as the small model's pages; ids without a sentence (the repeated random tokens) are named t0 … t30, as
the induction page names them.

    >>> model = small_model()
    >>> model.config.n_layers, model.config.n_heads, model.config.vocab, model.config.mlp
    (2, 4, 31, False)
    >>> enc = model.tokenizer.encode("the cat sat on the mat")
    >>> enc.ids, enc.pieces
    ((0, 1, 2, 3, 0, 4), ('the', 'cat', 'sat', 'on', 'the', 'mat'))
"""
from __future__ import annotations

import functools

import numpy as np

from ..lm import shipped
from ..lm.model import D_HEAD, D_MODEL, N_CTX, N_HEADS, VOCAB, sentence_ids, token_labels
from ..lm.task import REPEAT_HALF, repeated_tokens
from ..lm.train import EVAL_SEED, EVAL_SEQS
from ...math.norms import EPS
from .checkpoint_config import CheckpointConfig
from .load import RealModel
from .tokenizer import Encoded

NAME = "the project's small model"
MODEL_TYPE = "small_lm"
CONFIG = CheckpointConfig("gpt2", MODEL_TYPE, 2, D_MODEL, N_HEADS, N_HEADS, D_HEAD, 0, VOCAB, N_CTX, EPS, "none",
                          False, mlp=False)


class WordTokens:
    """One sentence's tokens: token k is its k-th distinct word; a token no word was given is 'token k'."""

    vocab_size = VOCAB

    def __init__(self, words=()):
        self.words = tuple(words)
        self.labels = token_labels(list(self.words))

    def piece(self, token_id: int) -> str:
        return self.labels[int(token_id)]

    def decode(self, ids) -> str:
        return " ".join(self.piece(i) for i in ids)

    def encode(self, text: str, max_tokens: int | None = None, special: bool = True) -> Encoded:
        return SmallTokenizer().encode(text, max_tokens, special)


class SmallTokenizer(WordTokens):
    """The rule, with no sentence yet: an id alone is t0 … t30 (random tokens stand for nothing)."""

    def __init__(self):
        super().__init__()
        self.labels = [f"t{k}" for k in range(VOCAB)]

    def encode(self, text: str, max_tokens: int | None = None, special: bool = True) -> Encoded:
        """sentence_ids(text): the ids, the words as pieces, the sentence's WordTokens and its notices (words set
        aside, cut to the last 40, cut to 31 distinct). No words: no tokens (run_real says so)."""
        if not text.strip():
            return Encoded((), ())
        ids, words, _, notices = sentence_ids(text)           # a ConfigError (a ValueError) if it has no words
        return Encoded(tuple(ids), tuple(words[i] for i in ids), 0, tuple(notices), WordTokens(words))


@functools.lru_cache(maxsize=1)
def small_model() -> RealModel:
    """The shipped run's trained weights as a RealModel (float32 as trained, read-only), once per process."""
    params = {}
    for name, value in shipped._read(shipped.FILES["copy"][0]).items():
        value = np.array(value, dtype=np.float32)
        value.setflags(write=False)
        params[name] = value
    return RealModel(NAME, shipped.path(shipped.FILES["copy"][0]), CONFIG, params, SmallTokenizer())


def is_small(model) -> bool:
    return getattr(getattr(model, "config", None), "model_type", "") == MODEL_TYPE


def probe() -> np.ndarray:
    """(16, 40): the repeated random tokens the induction page measures its scores on (the training's probe)."""
    return repeated_tokens(EVAL_SEED, EVAL_SEQS, REPEAT_HALF)
