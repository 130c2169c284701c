"""A sentence to X: its words embedded, with the positional encoding the settings ask for.

The forward pass encodes the learner's sentence this way, and training encodes each training sentence
with the same function, so trained weights meet the inputs they were trained on.
"""
from __future__ import annotations

import numpy as np

from ..math.embeddings import embed as embed_words
from ..math.positional import index_feature, learned_encoding, sinusoidal_encoding
from ..math.text import resolve
from .config import Config


def position_encoding(config: Config, n: int, d_embed: int) -> np.ndarray | None:
    """The positional encoding the settings ask for, (n, d_embed) or (n, 1) for "index"; None for "none"."""
    if config.positional == "sinusoidal":
        return sinusoidal_encoding(n, d_embed, config.pe_base)
    if config.positional == "learned":
        return learned_encoding(n, d_embed, config.seed)
    if config.positional == "index":
        return index_feature(n)
    return None


def with_position(config: Config, x_embed: np.ndarray, pe: np.ndarray | None) -> np.ndarray:   # (n, d_model)
    """X from the embeddings and the positional encoding: added, concatenated, or X_emb alone."""
    if pe is None:
        return x_embed
    if config.positional == "index" or config.combine == "concat":
        return np.concatenate([x_embed, pe], axis=1)
    return x_embed + pe


def encode(config: Config, sentence: str, vocab) -> tuple[tuple[str, ...], np.ndarray]:
    """(words, X (n, d_model)): a sentence as the forward pass encodes it under these settings
    (the unknown-word policy, the embedding source, the positional encoding and how it is combined).
    Training the weights (pretrained.py) encodes its sentences with this same function."""
    known = (lambda w: True) if vocab is None else (lambda w: w in vocab)
    words = resolve(sentence, known, config.unknown).words
    x_embed = embed_words(words, vocab, config.d_model, config.seed)           # (n, d_embed)
    return words, with_position(config, x_embed, position_encoding(config, *x_embed.shape))
