"""Gradient descent on the classifier: one SGD step, the training loop, and the loss and accuracy on a dataset.

    θ ← θ − η ∂L/∂θ            for every parameter θ not frozen (sgd_step)

train() runs epochs of such steps over the sentences, one at a time (seed 000's loop) or averaged over
mini-batches, and stops with TrainingDiverged, keeping the last good parameters, as soon as the loss or a
parameter is NaN or infinite.

    >>> from attention_core.training.classifier.model import init_params
    >>> params = init_params(d_in=2, d_k=2, d_v=2, seed=0)
    >>> moved = sgd_step(params, {name: np.ones_like(value) for name, value in params.items()}, 0.5, frozen=("b_o",))
    >>> float(moved["b_q"][0]), float(moved["b_o"][0])
    (-0.5, 0.0)
"""
from __future__ import annotations

import functools
import math

import numpy as np

from ...math.limits import ConfigError
from .backprop import loss_and_gradients
from .dataset import MAX_DATASET_ROWS
from .model import PARAM_NAMES, _forward

MAX_EPOCHS = 5_000
# A default run: fits the shipped set in well under a second (100% of its sentences, 71% of held-out ones).
DEFAULTS = {"d_k": 16, "d_v": 16, "lr": 0.05, "epochs": 30, "batch_size": 1, "seed": 0, "positional": "index"}


def sgd_step(params: dict, grads: dict, lr: float, frozen=()) -> dict[str, np.ndarray]:
    """θ ← θ − lr ∂L/∂θ for each parameter not in `frozen` (seed 000 freezes w_o and b_o). Pure."""
    return {name: value if name in frozen else value - lr * grads[name] for name, value in params.items()}


class TrainingDiverged(ConfigError):
    """The loss or a parameter became NaN or infinite; `params` are the last good ones."""

    def __init__(self, message: str, params: dict, epoch: int, step: int):
        super().__init__(message)
        self.params, self.epoch, self.step = params, epoch, step


def _all_finite(params: dict) -> bool:
    return all(np.isfinite(a).all() for a in params.values())


def _check_run(dataset: list, lr, epochs, batch_size, frozen) -> None:
    if not dataset:
        raise ConfigError("The dataset is empty: there is nothing to train on.")
    if isinstance(lr, bool) or not isinstance(lr, (int, float)) or not math.isfinite(lr) or lr <= 0:
        raise ConfigError(f"The learning rate must be a positive number, not {lr!r}; try {DEFAULTS['lr']}.")
    for name, value, high in (("epochs", epochs, MAX_EPOCHS), ("batch_size", batch_size, MAX_DATASET_ROWS)):
        if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= high:
            raise ConfigError(f"{name}={value!r} is out of range; use a whole number from 1 to {high:,}.")
    unknown = [name for name in frozen if name not in PARAM_NAMES]
    if unknown:
        raise ConfigError(f"Cannot freeze {', '.join(map(repr, unknown))}: the parameters are {', '.join(PARAM_NAMES)}.")


def _batch_gradients(gradients, params: dict, batch: list) -> tuple[float, dict[str, np.ndarray]]:
    """The loss and gradients of a mini-batch: its sentences', averaged (a batch of one: as they are)."""
    loss, grads = gradients(params, batch[0].x, batch[0].y)
    for sample in batch[1:]:
        more_loss, more = gradients(params, sample.x, sample.y)
        loss += more_loss
        grads = {name: grads[name] + more[name] for name in PARAM_NAMES}
    if len(batch) > 1:
        loss, grads = loss / len(batch), {name: grads[name] / len(batch) for name in PARAM_NAMES}
    return loss, grads


def train(params: dict, dataset, lr: float, epochs: int, batch_size: int = 1, frozen=(), shuffle_seed: int | None = 0,
          gradients=loss_and_gradients, n_heads: int = 1):
    """Gradient descent, a generator: yields {"epoch", "loss", "accuracy", "running_loss", "params"} per epoch.

    batch_size 1 is seed 000's loop, one SGD step per sentence; otherwise the gradients of a
    mini-batch of sentences are averaged. The order is reshuffled every epoch from
    shuffle_seed (None keeps the dataset's order, as seed 000). loss and accuracy are of the
    epoch's final params on the whole dataset; running_loss is the mean loss seen during the
    epoch (what seed 000 prints). `gradients(params, x, y) -> (loss, grads)` defaults to the
    hand-written backward pass (the benchmark swaps in torch autograd); with n_heads > 1 it is
    called as gradients(params, x, y, n_heads=n_heads).

    Raises TrainingDiverged (carrying the last good params) as soon as the loss or a parameter
    is NaN or infinite: training never continues on NaN.
    """
    dataset = list(dataset)
    _check_run(dataset, lr, epochs, batch_size, frozen)
    rng = None if shuffle_seed is None else np.random.default_rng(shuffle_seed)
    last_good, step = params, 0
    if n_heads > 1:
        gradients = functools.partial(gradients, n_heads=n_heads)

    def diverged(epoch, what):
        return TrainingDiverged(
            f"Training diverged at epoch {epoch}, step {step}: {what} became NaN or infinite. The learning "
            f"rate {lr:g} is too large; try {lr / 10:g} or smaller. Training stopped at the last good parameters.",
            last_good, epoch, step)

    for epoch in range(1, epochs + 1):
        order = np.arange(len(dataset)) if rng is None else rng.permutation(len(dataset))
        seen = []
        with np.errstate(all="ignore"):                        # overflow is detected below, not warned about
            for start in range(0, len(order), batch_size):
                step += 1
                loss, grads = _batch_gradients(gradients, params, [dataset[i] for i in order[start:start + batch_size]])
                if not math.isfinite(loss):
                    raise diverged(epoch, "the loss")
                seen.append(loss)
                last_good, params = params, sgd_step(params, grads, lr, frozen)
                if not _all_finite(params):
                    raise diverged(epoch, "a parameter")
            stats = evaluate(params, dataset, n_heads)
        if not math.isfinite(stats["loss"]):
            raise diverged(epoch, "the loss")
        last_good = params
        yield {"epoch": epoch, "loss": stats["loss"], "accuracy": stats["accuracy"],
               "running_loss": float(np.mean(seen)), "params": params}


def evaluate(params: dict, dataset, n_heads: int = 1) -> dict[str, float]:
    """{"loss": mean cross-entropy, "accuracy": fraction predicted right, "n": sentences}."""
    losses, right = [], 0
    for sample in dataset:
        c = _forward(params, sample.x, sample.y, n_heads)
        losses.append(float(c["loss"]))
        right += int(np.argmax(c["p"]) == sample.y)
    if not losses:
        raise ConfigError("The dataset is empty: there is nothing to evaluate.")
    return {"loss": float(np.mean(losses)), "accuracy": right / len(losses), "n": len(losses)}
