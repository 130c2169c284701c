"""The learner's settings, validated: one frozen dataclass.

Every choice and size is checked here (the bounds are in math/limits.py), so a Config that exists
can be computed with; a setting that cannot gives a ConfigError saying what to change.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, replace

from ..math.limits import (MAX_CHARS, MAX_DIM, MAX_GLOVE_VOCAB, MAX_HEADS, MAX_TOKENS, MAX_UPLOAD_BYTES,
                           MIN_GLOVE_VOCAB, ConfigError, _check_choice, _check_int, divisors, say_list)

EMBEDDINGS = ("toy", "glove", "random", "upload")
UNKNOWN_POLICIES = ("drop", "unk")
POSITIONALS = ("sinusoidal", "learned", "index", "none", "rope", "alibi")
COMBINES = ("add", "concat")
SCORES = ("dot", "scaled_dot", "additive", "bilinear")
MASKS = ("none", "causal", "padding", "sliding_window")
WEIGHTS = ("trained", "random")        # W_q, W_k, W_v: trained on data/sentiment.csv, or the seeded random start

@dataclass(frozen=True)
class Config:
    sentence: str = "I love you today"
    embedding: str = "glove"          # glove | toy | random | upload
    d_model: int = 8                  # embedding width of the random source (toy: 3, GloVe: 50)
    glove_vocab: int = 20_000         # use the first N GloVe words (they are sorted by frequency)
    unknown: str = "drop"             # unknown words: drop them, or map them to an <unk> vector
    positional: str = "sinusoidal"    # sinusoidal | learned | index | none | rope (rotates Q, K) | alibi (biases scores)
    combine: str = "add"              # sinusoidal / learned: add to X, or concatenate to it
    pe_base: float = 10_000.0         # the sinusoids' base, or RoPE's
    d_k: int = 4                      # per head
    d_v: int = 4                      # per head
    n_heads: int = 1
    n_kv_heads: int = 0               # key/value heads H_kv (grouped-query attention); 0: one per query head (MHA)
    score: str = "scaled_dot"         # dot | scaled_dot | additive | bilinear
    mask: str = "none"                # none | causal | padding | sliding_window
    padding: tuple[int, ...] = ()     # key positions hidden when mask == "padding"
    window: int = 3                   # W keys, the query included, when mask == "sliding_window"
    temperature: float = 1.0
    bias: bool = False
    weights: str = "trained"          # W_q, W_k, W_v: trained (on data/sentiment.csv) | random (seeded start)
    seed: int = 0
    vectors: str | None = field(default=None, repr=False)  # uploaded GloVe-format text

    def __post_init__(self):
        _check_choice("embedding", self.embedding, EMBEDDINGS)
        _check_choice("unknown", self.unknown, UNKNOWN_POLICIES)
        _check_choice("positional", self.positional, POSITIONALS)
        _check_choice("combine", self.combine, COMBINES)
        _check_choice("score", self.score, SCORES)
        _check_choice("mask", self.mask, MASKS)
        _check_choice("weights", self.weights, WEIGHTS)
        if not isinstance(self.sentence, str):
            raise ConfigError("The sentence must be text.")
        if not self.sentence.strip():
            raise ConfigError("The sentence is empty: type a few words, e.g. “I love you today”.")
        if len(self.sentence) > MAX_CHARS:
            raise ConfigError(f"The sentence has {len(self.sentence):,} characters; the limit is "
                              f"{MAX_CHARS:,}. Shorten it to a sentence or two.")
        _check_int("d_model", self.d_model, 1, MAX_DIM)
        if self.d_model < 2 and self.embedding == "random":
            raise ConfigError("d_model=1 leaves one number per word: nothing for attention to compare "
                              "but its sign. Use d_model of 2 or more.")
        _check_int("glove_vocab", self.glove_vocab, MIN_GLOVE_VOCAB, MAX_GLOVE_VOCAB)
        _check_int("d_k", self.d_k, 1, MAX_DIM)
        _check_int("d_v", self.d_v, 1, MAX_DIM)
        _check_int("n_heads", self.n_heads, 1, MAX_HEADS)
        _check_int("seed", self.seed, 0, 2**32 - 1)
        _check_int("n_kv_heads", self.n_kv_heads, 0, MAX_HEADS)
        _check_int("window", self.window, 1, MAX_TOKENS)
        if self.n_kv_heads == self.n_heads:           # H_kv = H is plain multi-head: one spelling, one Config
            object.__setattr__(self, "n_kv_heads", 0)
        if self.n_kv_heads and self.n_heads % self.n_kv_heads:
            raise ConfigError(f"{self.n_heads} query heads cannot be shared evenly by {self.n_kv_heads} KV heads: each "
                              f"KV head serves a group of the same size. Set the KV heads to "
                              f"{say_list(divisors(self.n_heads))}.")
        if self.positional == "rope" and self.d_k % 2:
            raise ConfigError(f"RoPE rotates pairs of columns of Q and K, so d_k must be even; d_k={self.d_k} is odd. "
                              f"Set d_k to {self.d_k - 1 if self.d_k > 1 else 2} or {self.d_k + 1}.")
        if self.n_heads * self.d_k > MAX_DIM or self.n_heads * self.d_v > MAX_DIM:
            raise ConfigError(f"n_heads × d_k and n_heads × d_v must stay ≤ {MAX_DIM}; "
                              f"lower d_k, d_v or the number of heads.")
        for name in ("pe_base", "temperature"):
            v = getattr(self, name)
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v):
                raise ConfigError(f"{name} must be a finite number, not {v!r}.")
        if not 2.0 <= self.pe_base <= 1e6:
            raise ConfigError(f"pe_base={self.pe_base:g} is out of range; use 2 to 1,000,000 (10,000 is standard).")
        if not 0.01 <= self.temperature <= 100:
            raise ConfigError(f"temperature={self.temperature:g} is out of range; use 0.01 to 100 (1 is plain softmax).")
        if not isinstance(self.bias, bool):
            raise ConfigError("bias must be true or false.")
        if not isinstance(self.padding, tuple) or not all(
                isinstance(p, int) and not isinstance(p, bool) and 0 <= p < MAX_TOKENS for p in self.padding):
            raise ConfigError(f"padding must be a list of token positions from 0 to {MAX_TOKENS - 1}.")
        if self.embedding == "upload":
            if not self.vectors:
                raise ConfigError("Choose a vectors file to upload (GloVe text format: a word, then its numbers, per line).")
            if len(self.vectors.encode("utf-8", "replace")) > MAX_UPLOAD_BYTES:
                raise ConfigError(f"The vectors file is larger than {MAX_UPLOAD_BYTES // 1_000_000} MB; "
                                  f"keep the words you need.")

    @property
    def kv_heads(self) -> int:
        """H_kv: the key/value heads in force (n_kv_heads, or one per query head)."""
        return self.n_kv_heads or self.n_heads

    def replace(self, **changes) -> "Config":
        return replace(self, **changes)

    def as_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}
