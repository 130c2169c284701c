"""The classifier's data: a CSV of sentences and labels, checked, and each sentence as a matrix X.

    text,label
    great product,positive          → Example("great product", "positive")
                                    → Sample(x (n, d_in), y = 2, tokens, text)

A sentence becomes the rows of its known words' vectors (unknown words are dropped, as seed 000 does),
with position: seed 000's index column 0, 1, …, n−1 appended ("index"), sinusoids added ("sinusoidal"),
or none. A bad file raises ConfigError naming its line.

    >>> load_dataset("text,label\\ngreat product,positive\\n")
    [Example(text='great product', label='positive')]
    >>> d_in_for(50, "index"), d_in_for(50, "sinusoidal")
    (51, 50)
"""
from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import NamedTuple

import numpy as np

from ...math.data import DATA_DIR
from ...math.embeddings import Vocabulary, embed
from ...math.limits import MAX_CHARS, ConfigError
from ...math.positional import index_feature, sinusoidal_encoding
from ...math.text import resolve
from .model import CLASSES, label_index

POSITIONALS = ("index", "sinusoidal", "none")
DATA_PATH = DATA_DIR / "sentiment.csv"
MAX_DATASET_BYTES = 1_000_000
MAX_DATASET_ROWS = 2_000


class Example(NamedTuple):
    text: str
    label: str


class Sample(NamedTuple):
    x: np.ndarray                  # (n, d_in)
    y: int                         # class index
    tokens: tuple[str, ...] = ()
    text: str = ""


# ---- from a sentence to X ------------------------------------------------------------------------

def d_in_for(d_embed: int, positional: str = "index") -> int:
    """The width of x: the embedding width, plus one for seed 000's index column."""
    return d_embed + (positional == "index")


def sentence_matrix(sentence: str, vocab: Vocabulary, positional: str = "index") -> tuple[tuple[str, ...], np.ndarray]:
    """(tokens, x (n, d_in)): words the vocabulary knows (others are dropped, as seed 000 does),
    each a row of its vector, with position: "index" appends 0, 1, ..., n−1 as a column (seed
    000), "sinusoidal" adds the sine/cosine encoding, "none" leaves x as it is.
    """
    if positional not in POSITIONALS:
        raise ConfigError(f"positional={positional!r} is not one of {', '.join(POSITIONALS)}.")
    words = resolve(sentence, lambda w: w in vocab, "drop").words
    x = embed(words, vocab)                                            # (n, d_embed)
    if positional == "index":
        x = np.concatenate([x, index_feature(len(words))], axis=1)     # (n, d_embed + 1)
    elif positional == "sinusoidal":
        x = x + sinusoidal_encoding(len(words), x.shape[1])            # (n, d_embed)
    return words, x


def encode_dataset(examples, vocab: Vocabulary, positional: str = "index") -> tuple[list[Sample], list[str]]:
    """(samples, dropped texts): each example as x and a class index; sentences with no known word are dropped."""
    samples, dropped = [], []
    for text, label in examples:
        try:
            tokens, x = sentence_matrix(text, vocab, positional)
        except ConfigError:
            dropped.append(text)
            continue
        samples.append(Sample(x, label_index(label), tokens, text))
    if not samples:
        raise ConfigError("No sentence in the dataset has a word in the vocabulary: nothing is left to train on.")
    return samples, dropped


# ---- reading the CSV --------------------------------------------------------------------------------

def _too_large(what: str) -> ConfigError:
    return ConfigError(f"{what} is larger than {MAX_DATASET_BYTES // 1_000_000} MB; keep at most "
                       f"{MAX_DATASET_ROWS:,} short sentences.")


def _is_file(text_or_path) -> bool:
    """A Path, or a one-line string naming a file that exists (a string too long for a file name is text)."""
    if isinstance(text_or_path, Path):
        return True
    if not isinstance(text_or_path, str) or "\n" in text_or_path:
        return False
    try:
        return Path(text_or_path).is_file()
    except (OSError, ValueError):
        return False


def _csv_text(text_or_path) -> str:
    """The CSV's text from a path, its text or its bytes (an upload), at most MAX_DATASET_BYTES."""
    if _is_file(text_or_path):
        path = Path(text_or_path)
        if path.stat().st_size > MAX_DATASET_BYTES:
            raise _too_large("The dataset file")
        text_or_path = path.read_bytes()
    if isinstance(text_or_path, (bytes, bytearray)):
        if len(text_or_path) > MAX_DATASET_BYTES:
            raise _too_large("The dataset file")
        try:
            text_or_path = bytes(text_or_path).decode("utf-8-sig")
        except UnicodeDecodeError as e:
            raise ConfigError(f"The dataset is not UTF-8 text (byte {e.start} cannot be read). Save it as UTF-8 CSV.") from None
    text = str(text_or_path).lstrip("\ufeff")
    if len(text.encode("utf-8", "replace")) > MAX_DATASET_BYTES:
        raise _too_large("The dataset")
    return text


def load_dataset(text_or_path=DATA_PATH) -> list[Example]:
    """Read and check a CSV with a header "text,label" and one sentence per row.

    Accepts a path, the CSV's text, or its bytes (an upload). Labels are negative, neutral or
    positive; at most 1 MB and 2,000 rows. A bad row raises ConfigError naming its line.
    """
    text = _csv_text(text_or_path)
    if not text.strip():
        raise ConfigError("The dataset is empty: the first line must be the header “text,label”, then a "
                          "sentence and its label per line.")
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = next(reader, [])
        if [h.strip().lower() for h in header] != ["text", "label"]:
            raise ConfigError(f"Line 1 must be the header “text,label”, not {','.join(header)[:60]!r}.")
        examples = []
        for row in reader:
            line = reader.line_num
            if not row or not any(cell.strip() for cell in row):
                continue
            if len(row) != 2:
                raise ConfigError(f"Line {line} has {len(row)} field{'s' * (len(row) != 1)}; expected 2 (text,label). "
                                  "Put quotes around a text that contains commas.")
            sentence, label = row[0].strip(), row[1].strip().lower()
            if not sentence:
                raise ConfigError(f"Line {line} has an empty text.")
            if len(sentence) > MAX_CHARS:
                raise ConfigError(f"Line {line}: the text has {len(sentence):,} characters; the limit is {MAX_CHARS:,}.")
            if label not in CLASSES:
                raise ConfigError(f"Line {line}: the label {row[1].strip()[:30]!r} is not one of {', '.join(CLASSES)}.")
            examples.append(Example(sentence, label))
            if len(examples) > MAX_DATASET_ROWS:
                raise ConfigError(f"The dataset has more than {MAX_DATASET_ROWS:,} rows (line {line}); keep fewer.")
    except csv.Error as e:
        raise ConfigError(f"Line {reader.line_num}: the CSV cannot be read ({e}); check the quotes on that line.") from None
    if not examples:
        raise ConfigError("The dataset has a header but no rows: add lines like “great product,positive”.")
    return examples
