"""The learner's settings as the classifier's input: what carries over, and what cannot.

The classifier (classifier.py) takes any word vectors: toy, GloVe, seeded random or uploaded,
with the forward pages' unknown-word policy, so X is built exactly as those pages build it.
Its own parts are fixed: one head, the scaled dot product, no mask, temperature 1, biases that
start at 0, and no trainable position table. Each setting that cannot carry over is named,
with why and what is used instead.

TrainingSettings is what the training pages' words depend on (the claims of attention_core/claims.py
with about="training" read it): how position enters X, the heads the classifier runs, whether the
last layer is frozen, and, on the training-step page, the shared settings it started from.

    >>> from attention_core import Config
    >>> inp = classifier_input(Config(sentence="I love you", embedding="toy", weights="random", positional="index"))
    >>> inp.tokens, inp.x.shape, inp.switches
    (('i', 'love', 'you'), (3, 4), ())
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..forward.claims import holds, say
from ..forward.config import Config
from ..math.embeddings import embed, vocabulary_for
from ..forward.encode import position_encoding, with_position
from ..math.text import resolve, set_aside


POSITIONS = ("index", "sinusoidal", "none")      # how position can enter the classifier's X


@dataclass(frozen=True)
class TrainingSettings:
    """The training pages' own settings, as the claims about them (about="training") read them."""
    positional: str | None = "index"   # index | sinusoidal | none, as the classifier gets it; None: not known
    combine: str = "add"               # sinusoidal: added to the embedding, or concatenated ("concat")
    n_heads: int = 1                   # heads the classifier runs (both training pages run one)
    frozen: bool = False               # the last layer (W_O, b_O) held fixed
    embedding: str = "glove"
    forward: Config | None = None      # the training-step page: the shared settings it starts from


def training_settings(config: Config, frozen: bool = False) -> TrainingSettings:
    """The training-step page's settings from the shared ones: a learned table becomes the index column
    (classifier_input's switch), and the classifier runs one head whatever config.n_heads asks."""
    positional = "index" if config.positional == "learned" else config.positional
    return TrainingSettings(positional, config.combine if positional == "sinusoidal" else "add", 1, bool(frozen),
                            config.embedding, config)


def position_words(settings: TrainingSettings, pe_base: float | None = None) -> str:
    """How position enters X under these settings, in words (true under them)."""
    if settings.positional == "index":
        return "the index column 0, 1, …, n−1 appended (one more feature)"
    if settings.positional == "sinusoidal":
        base = f" (base {pe_base:g})" if pe_base is not None else ""
        return f"sinusoids{base} " + ("concatenated" if settings.combine == "concat" else "added")
    if settings.positional == "none":
        return "none: " + say("train_order_blind", settings)
    return "as given"


@dataclass(frozen=True)
class ClassifierInput:
    tokens: tuple[str, ...]
    x: np.ndarray                  # (n, d_in): word vectors with position, the classifier's X
    source: str                    # where the word vectors come from, in words
    position: str                  # how position enters X, in words
    notices: tuple[str, ...]       # words dropped or given <unk>, characters set aside
    switches: tuple[str, ...]      # settings that cannot carry over: why, and what is used instead
    same_as_forward: bool          # Q, K, V, Ŝ, A start equal to the forward pages' under these settings
    settings: TrainingSettings     # what the classifier runs with (frozen: False; the page sets its own)


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
        notices.append(set_aside(tokens.skipped))

    switches = []
    positional = config.positional
    if positional == "learned":
        switches.append("Position: a learned table would be a parameter the classifier does not have, so no "
                        "training step could move it. The index column (0, 1, …, n−1 appended to X, tutorial 1's "
                        "choice) is used instead.")
        positional = "index"
    used = config.replace(positional=positional)
    x = with_position(used, x_embed, position_encoding(used, n, d_embed))        # (n, d_in), as the forward pass
    settings = training_settings(config)
    position = position_words(settings, config.pe_base)

    if config.n_heads > 1:
        switches.append(f"Heads: this page runs the classifier with one attention head, not {config.n_heads} (its "
                        f"trace and the explanation of every cell are written for one head); d_k={config.d_k} and "
                        f"d_v={config.d_v} are that head's widths.")
    if config.score != "scaled_dot":
        switches.append(f"Score: the classifier scores with the scaled dot product QKᵀ/√d_k, the function its "
                        f"backward pass differentiates, not the {config.score.replace('_', ' ')} score.")
    if config.mask != "none":
        switches.append(f"Mask: the classifier has none ({config.mask} masking is not in its backward pass); "
                        "every word attends to every word.")
    if config.temperature != 1.0:
        switches.append(f"Temperature: softmax(Ŝ) as written (temperature 1), not {config.temperature:g}.")
    if config.bias:
        switches.append("Biases: the classifier's b_Q, b_K, b_V, b_O start at 0 (the forward pages draw "
                        "random biases). A gradient step moves b_Q, b_V and b_O (b_O only while the last layer is "
                        "not frozen); b_K stays at 0, its gradient is 0 up to rounding.")
    if config.weights == "trained":
        switches.append("Weights: the classifier starts from the seeded random W_Q, W_K, W_V (the "
                        "forward pages show them trained); one step here is one step from that start.")
    same = holds("train_same_as_forward", settings)
    return ClassifierInput(tokens.words, x, source, position, tuple(notices), tuple(switches), same, settings)
