"""W_Q, W_K, W_V trained for the forward pages: the attention they give has been taught something.

The forward pass's projections are trained with the project's own classifier (classifier.py:
self-attention, a linear layer, mean pooling, softmax; the hand-written backward pass and SGD)
on the shipped sentences of data/sentiment.csv, each encoded exactly as the forward pass
encodes a sentence under the same settings (forward.encode: embedding source and vocabulary
size, unknown-word policy, positional encoding, combine, pe_base), with the same d_k, d_v and
number of heads. Training starts from the forward pass's seeded random W_Q, W_K, W_V (same
generator names, shapes and N(0, 1/d_model) scale), so "random" is where "trained" began.

Kept from training: w_q, w_k (d_model, H·d_k), w_v (d_model, H·d_v), and b_q, b_k, b_v when
the settings have biases (without, they are held at 0 while training). The classifier's own
output layer is not used by the forward pages.

    >>> from attention_core import Config
    >>> t = trained_weights(Config())
    >>> t.params["w_q"].shape, t.epochs
    ((50, 4), 20)

Results are cached per the settings that change them (not the sentence). The default
settings' weights (with 1, 2 or 4 heads) ship in data/trained_default*.npz (`python scripts/make_shipped_data.py`
writes it; a test retrains and compares), so the first page load trains nothing.
"""
from __future__ import annotations

import functools
import json
from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np

from . import classifier as clf
from ..forward.config import Config
from ..forward.weights import provide_trained
from ..math.data import DATA_DIR
from ..math.limits import ConfigError
from ..math.embeddings import TOY_VECTORS, vocabulary_for
from ..forward.encode import encode

SHIPPED_HEADS = (1, 2, 4)      # the defaults with 1, 2 or 4 heads ship trained: moving the heads slider trains nothing


def shipped_path(n_heads: int = 1) -> Path:
    name = "trained_default.npz" if n_heads == 1 else f"trained_default_h{n_heads}.npz"
    return DATA_DIR / name


SHIPPED_PATH = shipped_path(1)
LR = 0.05
EPOCHS = 20                    # at most; fewer for large sizes (see epochs_for), never fewer than MIN_EPOCHS
MIN_EPOCHS = 1
WORK_BUDGET = 1.5e9            # multiply-adds per training run; bounds the epochs at large sizes (down to 1)
# Measured on the 2-core machine while shared (load 8-10): the defaults' 20 epochs 3.6 s (0.6-0.9 s when
# quieter; they ship, so no page load waits for them); d_model = H·d_k = H·d_v = 512, 1 epoch: 26 s there.
MIN_SENTENCES = 20             # fewer usable training sentences than this: nothing worth learning
# The settings that change the trained weights; the sentence, score, mask, temperature do not.
TRAINING_FIELDS = ("embedding", "d_model", "glove_vocab", "unknown", "positional", "combine", "pe_base",
                   "d_k", "d_v", "n_heads", "bias", "seed", "vectors")


@dataclass(frozen=True, eq=False)
class TrainedWeights:
    params: dict                  # w_q, w_k, w_v (and b_q, b_k, b_v with bias), read-only arrays
    epochs: int
    lr: float
    n_sentences: int              # training sentences with at least one known word
    n_dataset: int                # sentences in data/sentiment.csv
    accuracy: float               # on the training sentences, after the last epoch
    loss: float
    classifier: dict              # every parameter of the trained classifier (w_o, b_o too): to recompute the accuracy

    @property
    def why(self) -> str:
        return (f"Trained on {self.n_sentences} labelled sentences of data/sentiment.csv (a sentiment classifier: "
                f"this attention, a linear layer, the mean over words) for {self.epochs} epochs of SGD, learning "
                f"rate {self.lr:g}, each sentence encoded as this page encodes yours; train accuracy "
                f"{self.accuracy:.0%}. Training started from the seeded random weights (choose “random” to see them).")


def training_key(config: Config) -> Config:
    """The settings with everything that does not change the trained weights set to its default."""
    base = Config()
    key = base.replace(**{name: getattr(config, name) for name in TRAINING_FIELDS})
    if key.positional in ("rope", "alibi"):       # X = X_emb: RoPE and ALiBi act after the projections
        key = key.replace(positional="none")
    if key.positional != "sinusoidal":            # the base and how PE is combined change nothing then
        key = key.replace(pe_base=base.pe_base, combine=base.combine if key.positional != "learned" else key.combine)
    return key


def trained_weights(config: Config) -> TrainedWeights:
    """W_Q, W_K, W_V (and biases) trained under these settings; cached, reproducible."""
    return _trained(training_key(config))


@functools.lru_cache(maxsize=16)
def _trained(key: Config) -> TrainedWeights:
    for h in SHIPPED_HEADS:
        if key == training_key(Config(n_heads=h)) and shipped_path(h).is_file():
            shipped = load_shipped(shipped_path(h), h)
            if shipped is not None:
                return shipped
    return train_weights(key)


def training_samples(config: Config) -> tuple[list[clf.Sample], int]:
    """(samples, sentences in the file): data/sentiment.csv encoded as the forward pass encodes a sentence."""
    if config.embedding == "toy":
        raise ConfigError(f"Trained weights need GloVe or random embeddings, or set the weights to seeded random: "
                          f"the toy vectors know {len(TOY_VECTORS)} words, so the training sentences keep little "
                          "more than “the”, “a” and “i”, nothing to learn from.")
    vocab = vocabulary_for(config)
    examples = clf.load_dataset()
    samples = []
    for text, label in examples:
        try:
            words, x = encode(config, text, vocab)                     # (n, d_model)
        except ConfigError:                                            # no known word: nothing to train on
            continue
        samples.append(clf.Sample(x, clf.label_index(label), words, text))
    if len(samples) < MIN_SENTENCES:
        raise ConfigError(f"Only {len(samples)} of the {len(examples)} training sentences have a word your vectors "
                          f"know (at least {MIN_SENTENCES} are needed): set the weights to seeded random, or "
                          "pick GloVe embeddings.")
    return samples, len(examples)


def epochs_for(samples, d_model: int, config: Config) -> int:
    """EPOCHS, or fewer when one epoch's multiply-adds (forward and backward, ~3x the forward) would
    push a run past WORK_BUDGET; at least MIN_EPOCHS."""
    h, d_k, d_v = config.n_heads, config.d_k, config.d_v
    per_epoch = 3 * sum(s.x.shape[0] * (d_model * h * (2 * d_k + d_v) + s.x.shape[0] * h * (d_k + d_v)
                                        + h * d_v * 3) for s in samples)
    return int(max(MIN_EPOCHS, min(EPOCHS, WORK_BUDGET // max(per_epoch, 1))))


def train_weights(config: Config) -> TrainedWeights:
    """Train the classifier from the forward pass's seeded start; keep its W_Q, W_K, W_V (and biases)."""
    samples, n_dataset = training_samples(config)
    d_model, h = samples[0].x.shape[1], config.n_heads
    params = clf.init_params(d_model, config.d_k, config.d_v, config.seed, h)
    frozen = () if config.bias else ("b_q", "b_k", "b_v")
    epochs = epochs_for(samples, d_model, config)
    try:
        for stats in clf.train(params, samples, LR, epochs, frozen=frozen, shuffle_seed=config.seed, n_heads=h):
            params = stats["params"]
    except clf.TrainingDiverged:
        raise ConfigError("Training the weights diverged under these settings: set the weights to seeded "
                          "random, or lower d_model.") from None
    kept = ("w_q", "w_k", "w_v") + (("b_q", "b_k", "b_v") if config.bias else ())
    return TrainedWeights({name: _frozen(params[name]) for name in kept}, epochs, LR, len(samples), n_dataset,
                          float(stats["accuracy"]), float(stats["loss"]),
                          {name: _frozen(value) for name, value in params.items()})


def _frozen(a) -> np.ndarray:
    a = np.array(a, dtype=np.float64)
    a.setflags(write=False)
    return a


# ---- the shipped default -------------------------------------------------------------------

def _settings_json(config: Config) -> str:
    key = training_key(config)
    return json.dumps({f.name: getattr(key, f.name) for f in fields(key) if f.name in TRAINING_FIELDS},
                      sort_keys=True)


def write_shipped(n_heads: int = 1) -> TrainedWeights:
    """Train the default settings' weights (with n_heads) and save them, with what they were trained under, as .npz."""
    config, path = Config(n_heads=n_heads), shipped_path(n_heads)
    t = train_weights(training_key(config))
    meta = {"settings": _settings_json(config), "epochs": t.epochs, "lr": t.lr, "n_sentences": t.n_sentences,
            "n_dataset": t.n_dataset, "accuracy": t.accuracy, "loss": t.loss}
    np.savez_compressed(path, **t.params, **{f"classifier_{k}": v for k, v in t.classifier.items()},
                        meta=np.array(json.dumps(meta)))
    return t


def load_shipped(path: Path = SHIPPED_PATH, n_heads: int = 1) -> TrainedWeights | None:
    """The shipped weights if they were trained under the default settings (with n_heads) and these LR/EPOCHS,
    else None."""
    with np.load(path, allow_pickle=False) as npz:
        meta = json.loads(str(npz["meta"]))
        if meta["settings"] != _settings_json(Config(n_heads=n_heads)) or meta["lr"] != LR or meta["epochs"] > EPOCHS:
            return None
        params = {name: _frozen(npz[name]) for name in npz.files if name != "meta" and "_" in name
                  and not name.startswith("classifier_")}
        classifier = {name.removeprefix("classifier_"): _frozen(npz[name]) for name in npz.files
                      if name.startswith("classifier_")}
    return TrainedWeights(params, meta["epochs"], meta["lr"], meta["n_sentences"], meta["n_dataset"],
                          meta["accuracy"], meta["loss"], classifier)


provide_trained(trained_weights)      # the forward pass's weights="trained" comes from here
