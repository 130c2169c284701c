"""The learner's settings as the classifier's input: what carries over, and what cannot.

The classifier (classifier.py) takes any word vectors: toy, GloVe, seeded random or uploaded,
with the forward pages' unknown-word policy, so X is built exactly as those pages build it.
Its own parts are fixed: one head, the scaled dot product, no mask, temperature 1, biases that
start at 0, and no trainable position table. Each setting that cannot carry over is named,
with why and what is used instead.

    >>> from attention_core import Config
    >>> inp = classifier_input(Config(sentence="I love you", embedding="toy", weights="random", positional="index"))
    >>> inp.tokens, inp.x.shape, inp.switches
    (('i', 'love', 'you'), (3, 4), ())
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .config import Config
from .embeddings import embed, vocabulary_for
from .forward import position_encoding, with_position
from .text import resolve


@dataclass(frozen=True)
class ClassifierInput:
    tokens: tuple[str, ...]
    x: np.ndarray                  # (n, d_in): word vectors with position, the classifier's X
    source: str                    # where the word vectors come from, in words
    position: str                  # how position enters X, in words
    notices: tuple[str, ...]       # words dropped or given <unk>, characters set aside
    switches: tuple[str, ...]      # settings that cannot carry over: why, and what is used instead
    same_as_forward: bool          # Q, K, V, S, A start equal to the forward pages' under these settings


def classifier_input(config: Config) -> ClassifierInput:
    """X (n, d_in) for the classifier from the shared settings. Raises ConfigError on unusable input."""
    vocab = vocabulary_for(config)
    known = (lambda w: True) if vocab is None else (lambda w: w in vocab)
    tokens = resolve(config.sentence, known, config.unknown)
    x_embed = embed(tokens.words, vocab, config.d_model, config.seed)         # (n, d_embed)
    n, d_embed = x_embed.shape
    source = vocab.name if vocab is not None else f"seeded random ({config.d_model}-d)"
    notices = []
    if tokens.unknown:
        action = "dropped" if config.unknown == "drop" else "given the <unk> vector (the mean of all vectors)"
        notices.append(f"Not in the vocabulary, {action}: {', '.join(tokens.unknown[:12])}"
                       + (" …" if len(tokens.unknown) > 12 else "") + ".")
    if tokens.skipped:
        notices.append(f"Not words, set aside: {' '.join(tokens.skipped[:20])}")

    switches = []
    positional = config.positional
    if positional == "learned":
        switches.append("Position: a learned table would be a parameter the classifier does not have, so no "
                        "training step could move it. The index column (0, 1, …, n−1 appended to X, seed 000's "
                        "choice) is used instead.")
        positional = "index"
    used = config.replace(positional=positional)
    x = with_position(used, x_embed, position_encoding(used, n, d_embed))        # (n, d_in), as the forward pass
    if positional == "index":
        position = "the index column 0, 1, …, n−1 appended (one more feature)"
    elif positional == "sinusoidal":
        position = f"sinusoids (base {config.pe_base:g}) " + ("concatenated" if config.combine == "concat" else "added")
    else:
        position = "none: the classifier cannot tell word order"

    if config.n_heads > 1:
        switches.append(f"Heads: the classifier has one attention head (its backward pass is written for one), "
                        f"not {config.n_heads}; d_k={config.d_k} and d_v={config.d_v} are that head's widths.")
    if config.score != "scaled_dot":
        switches.append(f"Score: the classifier scores with the scaled dot product QKᵀ/√d_k, the function its "
                        f"backward pass differentiates, not the {config.score.replace('_', ' ')} score.")
    if config.mask != "none":
        switches.append(f"Mask: the classifier has none ({config.mask} masking is not in its backward pass); "
                        "every word attends to every word.")
    if config.temperature != 1.0:
        switches.append(f"Temperature: softmax(S) as written (temperature 1), not {config.temperature:g}.")
    if config.bias:
        switches.append("Biases: the classifier's b_q, b_k, b_v, b_o start at 0 (the forward pages draw "
                        "random biases); training moves them.")
    if config.weights == "trained":
        switches.append("Weights: the classifier starts from the seeded random W_Q, W_K, W_V (the "
                        "forward pages show them trained); one step here is one step from that start.")
    same = (not switches and positional == config.positional)
    return ClassifierInput(tokens.words, x, source, position, tuple(notices), tuple(switches), same)
