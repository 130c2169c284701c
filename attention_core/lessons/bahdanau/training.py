"""The toy task (seed 004) and its training: put shuffled pairs back in order.

The inputs are the pairs [0, 1], [1, 2], ..., [n, n+1], with [0, 1] first and the rest shuffled. Given the previous
output [k, k+1], attention must find [k+1, k+2] among the inputs, so that the context *is* the next output. torch
(imported inside the functions) trains: teacher forcing, SGD with momentum, one update per output position.
"""
from __future__ import annotations

import contextlib
import math
import zlib
from dataclasses import dataclass
from typing import Iterator

import numpy as np

from ...math.limits import ConfigError, _check_int
from .alignment import init_params
from .torch_module import torch_model

MAX_INPUTS = 200


def toy_sequence(length: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """(inputs (length+1, 2), targets (length+1, 2)).

    targets = [0,1], [1,2], ..., [length, length+1]; inputs = [0,1] then the rest shuffled.
    `rng` is a numpy Generator or an int seed.

    >>> x, y = toy_sequence(3, 0)
    >>> y.tolist()
    [[0.0, 1.0], [1.0, 2.0], [2.0, 3.0], [3.0, 4.0]]
    >>> sorted(x.tolist()) == y.tolist() and x[0].tolist() == [0.0, 1.0]
    True
    """
    _check_int("length", length, 0, MAX_INPUTS - 1)
    rng = np.random.default_rng(rng)
    j = np.arange(length + 1, dtype=np.float64)
    targets = np.stack([j, j + 1], axis=1)                               # (length+1, 2)
    inputs = np.concatenate([targets[:1], rng.permutation(targets[1:])])
    return inputs, targets


def stream(seed: int, purpose: str) -> np.random.Generator:
    """Training and evaluation draw from different streams for the same seed."""
    return np.random.default_rng([seed, zlib.crc32(purpose.encode())])


@dataclass(frozen=True)
class ToySettings:
    lr: float = 5e-4                  # SGD learning rate at the start
    momentum: float = 0.9
    steps: int = 1500                 # training sequences; one SGD update per output position
    min_len: int = 5                  # pairs per sequence (after the fixed [0, 1])
    max_len: int = 20
    d_a: int = 20                     # width of the alignment network's hidden layer
    init_scale: float = 0.1           # parameters start N(0, init_scale²)
    final_lr_fraction: float = 0.1    # the learning rate falls linearly to final_lr_fraction × lr
    seed: int = 0

    def __post_init__(self):
        _check_int("steps", self.steps, 1, 20_000)
        _check_int("min_len", self.min_len, 1, 60)
        _check_int("max_len", self.max_len, 1, 60)
        _check_int("d_a", self.d_a, 1, 256)
        _check_int("seed", self.seed, 0, 2**32 - 1)
        if self.min_len > self.max_len:
            raise ConfigError(f"min_len={self.min_len} is above max_len={self.max_len}; make min_len ≤ max_len.")
        for name, low, high in (("lr", 0.0, 1.0), ("momentum", 0.0, 0.999), ("init_scale", 0.0, 10.0),
                                ("final_lr_fraction", 0.0, 1.0)):
            x = getattr(self, name)
            if not isinstance(x, (int, float)) or isinstance(x, bool) or not math.isfinite(x):
                raise ConfigError(f"{name} must be a finite number, not {x!r}.")
            if not (low <= x <= high) or (name in ("lr", "init_scale") and x == 0):
                raise ConfigError(f"{name}={x:g} is out of range; use a value in "
                                  f"{'(' if name in ('lr', 'init_scale') else '['}{low:g}, {high:g}].")


@dataclass(frozen=True)
class Progress:
    step: int                         # 1 .. steps
    steps: int
    loss: float                       # mean squared error over this sequence's output positions
    lr: float

    @property
    def fraction(self) -> float:
        return self.step / self.steps


def make_model(settings: ToySettings = ToySettings()):
    """The untrained torch model for the toy task: d_s = d_h = 2 (pairs)."""
    return torch_model(init_params(2, 2, settings.d_a, settings.seed, settings.init_scale))


@contextlib.contextmanager
def _one_thread(torch):
    """Tensors this small gain nothing from threads, and on a busy 2-core machine torch's
    thread pool waiting on the other core made training ~8x slower (measured). The setting
    is process-wide, so it is restored before control goes back to the caller."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def lr_at(step: int, settings: ToySettings = ToySettings()) -> float:
    """The learning rate of training sequence `step` (1 … steps): lr, falling linearly by
    (1 − final_lr_fraction) · lr / steps a sequence, so the last one trains at
    (final_lr_fraction + (1 − final_lr_fraction) / steps) · lr, just above final_lr_fraction · lr.

    >>> lr_at(1, ToySettings(lr=0.1, steps=10)), round(lr_at(10, ToySettings(lr=0.1, steps=10)), 12)
    (0.1, 0.019)
    """
    return settings.lr * (1 - (1 - settings.final_lr_fraction) * (step - 1) / settings.steps)


def train(model, settings: ToySettings = ToySettings()) -> Iterator[Progress]:
    """Train `model` in place on fresh shuffled sequences; yields a Progress per sequence.

    As in seed 004: teacher forcing (the decoder is given the true previous output), one
    SGD-with-momentum update per output position, MSE between the context and the next
    pair. Unlike it, the learning rate falls linearly towards final_lr_fraction × lr (lr_at; seed 004 drops it
    10x once the loss is low; a fixed rate here now and then undoes a trained model).
    Raises ConfigError if the loss stops being finite.
    """
    import torch
    rng = stream(settings.seed, "bahdanau/train")
    optimizer = torch.optim.SGD(model.parameters(), lr=settings.lr, momentum=settings.momentum)
    loss_fn = torch.nn.MSELoss()
    for step in range(1, settings.steps + 1):
        lr = lr_at(step, settings)
        for group in optimizer.param_groups:
            group["lr"] = lr
        inputs, targets = toy_sequence(int(rng.integers(settings.min_len, settings.max_len + 1)), rng)
        h, y = torch.from_numpy(inputs), torch.from_numpy(targets)
        total = 0.0
        with _one_thread(torch):
            for i in range(1, len(y)):                  # predict y_i from y_{i-1} and all inputs
                optimizer.zero_grad()
                context, _ = model(y[i - 1], h)
                loss = loss_fn(context, y[i])
                loss.backward()
                optimizer.step()
                total += loss.item()
        loss = total / (len(y) - 1)
        if not math.isfinite(loss):
            raise ConfigError(f"Training diverged at step {step} (the loss is {loss}); "
                              f"lower the learning rate (now {settings.lr:g}) or the momentum.")
        yield Progress(step, settings.steps, loss, lr)


def fit(settings: ToySettings = ToySettings()) -> tuple[object, list[float]]:
    """make_model + train to the end: (trained torch model, loss per step)."""
    model = make_model(settings)
    return model, [p.loss for p in train(model, settings)]
