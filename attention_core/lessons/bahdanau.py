"""Bahdanau's additive alignment, one decoder step at a time, and a toy task that trains it.

    e_ij = vᵀ tanh(W s_{i-1} + U h_j)      how well input j fits output i
    α_ij = softmax_j(e_ij)                  a distribution over the inputs
    c_i  = Σ_j α_ij h_j                     the context: a blend of the inputs

Counted from 0 like the rest of the app (docs/notation.md): inputs h_0 … h_{n-1}, decoder states
s_0 (the start), s_1, …; output i = 1, 2, … reads s_{i-1} and becomes s_i, as in Bahdanau's paper.

Rows are vectors here, as everywhere in the core: s_{i-1} (d_s,), H (n, d_h) with h_j in
row j, W (d_s, d_a), U (d_h, d_a), v (d_a,). The paper writes W s with W (d_a, d_s); our
s W is the same number with W stored transposed.

The toy task (seed 004): the inputs are the pairs [0, 1], [1, 2], ..., [n, n+1], with [0, 1]
first and the rest shuffled. Given the previous output [k, k+1], attention must find
[k+1, k+2] among the inputs, so that the context *is* the next output. No encoder, no
decoder RNN: the previous output plays s_{i-1}, the raw pairs play h_j.

numpy does the step-through and the sorting; torch (imported inside functions) trains.
"""
from __future__ import annotations

import contextlib
import functools
import math
import zlib
from dataclasses import dataclass
from typing import Iterator

import numpy as np

from ..math import attention as att
from ..math.limits import ConfigError, _check_int
from ..forward.weights import param_rng
from ..forward.trace import Trace

MAX_INPUTS = 200


# ---- the alignment function, numpy -----------------------------------------------------

def init_params(d_s: int = 2, d_h: int = 2, d_a: int = 20, seed: int = 0, scale: float = 0.1) -> dict:
    """W (d_s, d_a), U (d_h, d_a), v (d_a,), each N(0, scale²), one generator per parameter.

    Seed 004 starts from torch.rand (uniform 0..1); with inputs as large as 20 that puts
    tanh deep in saturation and training often stalls, so the start here is small.
    """
    return {"w": scale * param_rng(seed, "bahdanau_w").standard_normal((d_s, d_a)),
            "u": scale * param_rng(seed, "bahdanau_u").standard_normal((d_h, d_a)),
            "v": scale * param_rng(seed, "bahdanau_v").standard_normal(d_a)}


def alignment_scores(s_prev, h, w, u, v) -> np.ndarray:
    """e_j = vᵀ tanh(s_{i-1} W + h_j U); s_prev (d_s,), h (n, d_h) -> (n,).

    s_prev may also be (T, d_s), T decoder steps at once -> (T, n).
    """
    s = np.atleast_2d(np.asarray(s_prev, dtype=np.float64))                 # (T, d_s)
    e = att.additive_scores(s, np.asarray(h, dtype=np.float64), w, u, v)    # (T, n)
    return e if np.ndim(s_prev) == 2 else e[0]


def additive_attention(s_prev, h, params: dict) -> tuple[np.ndarray, np.ndarray]:
    """One decoder step: (context (d_h,), weights (n,)); with s_prev (T, d_s): (T, d_h), (T, n)."""
    h = np.asarray(h, dtype=np.float64)
    weights = att.softmax(alignment_scores(s_prev, h, params["w"], params["u"], params["v"]))
    return weights @ h, weights


def pair_label(row) -> str:
    """[3., 4.] -> '[3, 4]'."""
    return "[" + ", ".join(f"{x:g}" for x in np.asarray(row, dtype=np.float64)) + "]"


def step_trace(s_prev, h, params: dict, labels=None) -> Trace:
    """Every intermediate of one decoder step i, named, for the step-through page.

    s_prev (d_s,), h (n, d_h); labels name the inputs (default: their values, '[3, 4]').
    Step keys: s_prev, h, w, u, v, w_s, u_h, pre_tanh, hidden, scores, weights, context.
    """
    s_prev = np.asarray(s_prev, dtype=np.float64)
    h = np.asarray(h, dtype=np.float64)
    w, u, v = (np.asarray(params[k], dtype=np.float64) for k in ("w", "u", "v"))
    if s_prev.ndim != 1 or h.ndim != 2 or w.shape != (s_prev.size, v.size) or u.shape != (h.shape[1], v.size):
        raise ConfigError(f"Shapes do not fit: s_prev {s_prev.shape}, h {h.shape}, W {w.shape}, U {u.shape}, "
                          f"v {v.shape}; need s_prev (d_s,), h (n, d_h), W (d_s, d_a), U (d_h, d_a), v (d_a,).")
    n = h.shape[0]
    trace = Trace(tuple(labels) if labels is not None else tuple(pair_label(r) for r in h))
    trace.add("s_prev", "Previous decoder state sᵢ₋₁", s_prev, ("d_s",), r"s_{i-1}",
              why="The decoder's previous state (s₀ is its start; after that, what it produced last). It is the "
                  "question: which input comes next?")
    trace.add("h", "Inputs hⱼ", h, ("n", "d_h"),
              r"H = \begin{bmatrix} h_0 \\ \vdots \\ h_{n-1} \end{bmatrix}",
              why="The candidates, one row each, counted from 0. In translation these are the encoder's states; "
                  "here the raw pairs.")
    trace.add("w", "W (decoder side)", w, ("d_s", "d_a"), r"W \in \mathbb{R}^{d_s \times d_a}",
              why="Learned: maps the decoder state into the d_a-wide alignment space. "
                  "The paper writes W s with W stored transposed.")
    trace.add("u", "U (input side)", u, ("d_h", "d_a"), r"U \in \mathbb{R}^{d_h \times d_a}",
              why="Learned: maps each input into the same alignment space, so the two can be added.")
    trace.add("v", "v (reduction)", v, ("d_a",), r"v \in \mathbb{R}^{d_a}",
              why="Learned: turns a d_a-wide hidden vector into one score.")

    w_s = s_prev @ w                                                    # (d_a,)
    trace.add("w_s", "W sᵢ₋₁ (as s W)", w_s, ("d_a",), r"s_{i-1} W", ("s_prev", "w"),
              why="The decoder's half of the comparison, computed once for this step and shared by every input.")
    u_h = h @ u                                                         # (n, d_a)
    trace.add("u_h", "U hⱼ for every input", u_h, ("n", "d_a"), r"H U \;(\text{row } j = h_j U)", ("h", "u"),
              why="Each input's half. It does not depend on the decoder, so a translator computes it once per sentence.")
    pre = w_s[None, :] + u_h                                            # (n, d_a)
    trace.add("pre_tanh", "The sum W s + U hⱼ", pre, ("n", "d_a"), r"z_j = s_{i-1} W + h_j U",
              ("w_s", "u_h"), why="The same decoder row is added to every input's row: "
              "this addition is what makes the score 'additive'.")
    hidden = np.tanh(pre)                                               # (n, d_a)
    trace.add("hidden", "tanh", hidden, ("n", "d_a"), r"\tanh(z_j)", ("pre_tanh",),
              why="A non-linearity, squashing each entry into (−1, 1): the alignment is a small neural network, "
                  "not a fixed similarity.")
    scores = hidden @ v                                                 # (n,)
    trace.add("scores", "Alignment scores eᵢⱼ", scores, ("n",), r"e_{ij} = v^\top \tanh(s_{i-1} W + h_j U)",
              ("hidden", "v"), why="One number per input: how well it fits as output i. Any real number; "
              "tutorial 3 labels this energy α, but it is not yet a distribution.")
    weights = att.softmax(scores)                                       # (n,)
    trace.add("weights", "Attention weights αᵢⱼ", weights, ("n",),
              r"\alpha_{ij} = \frac{\exp e_{ij}}{\sum_{k=0}^{n-1} \exp e_{ik}}", ("scores",), scale="sequential",
              why="Softmax over the inputs j: non-negative, summing to 1. Bahdanau's 'soft search'.")
    context = weights @ h                                               # (d_h,)
    trace.add("context", "Context cᵢ", context, ("d_h",), r"c_i = \sum_{j=0}^{n-1} \alpha_{ij} h_j",
              ("weights", "h"), why="A weighted average of the inputs. When one weight is near 1, "
              "the context is that input: the decoder has found what it was looking for.")
    trace.facts.update(n=n, d_s=s_prev.size, d_h=h.shape[1], d_a=v.size, best=int(np.argmax(weights)))
    return trace


# ---- the same in torch, for training ------------------------------------------------------

@functools.cache
def _module_class():
    import torch
    from torch import nn

    class AdditiveAttention(nn.Module):
        """context, weights = model(s_prev (d_s,) or (T, d_s), h (n, d_h))."""

        def __init__(self, w, u, v):
            super().__init__()
            self.w = nn.Parameter(torch.as_tensor(np.array(w), dtype=torch.float64))   # (d_s, d_a)
            self.u = nn.Parameter(torch.as_tensor(np.array(u), dtype=torch.float64))   # (d_h, d_a)
            self.v = nn.Parameter(torch.as_tensor(np.array(v), dtype=torch.float64))   # (d_a,)

        def scores(self, s_prev, h):
            hidden = torch.tanh((s_prev @ self.w).unsqueeze(-2) + h @ self.u)   # (T?, n, d_a)
            return hidden @ self.v                                              # (T?, n)

        def forward(self, s_prev, h):
            weights = torch.softmax(self.scores(s_prev, h), dim=-1)             # (T?, n)
            return weights @ h, weights                                         # (T?, d_h), (T?, n)

    return AdditiveAttention


def torch_model(params: dict):
    """A torch.nn.Module (float64) starting from the numpy parameters {'w', 'u', 'v'}."""
    return _module_class()(params["w"], params["u"], params["v"])


def params_of(model) -> dict:
    """The numpy parameters of a torch model (copies), or a params dict as it is."""
    if isinstance(model, dict):
        return model
    return {k: getattr(model, k).detach().numpy().copy() for k in ("w", "u", "v")}


def compare_with_torch(s_prev, h, params: dict) -> dict:
    """Max |numpy − torch| for scores, weights and context of one step (float64 both)."""
    import torch
    model = torch_model(params)
    with torch.no_grad():
        s_t, h_t = torch.as_tensor(np.array(s_prev, dtype=np.float64)), torch.as_tensor(np.array(h, dtype=np.float64))
        context_t, weights_t = model(s_t, h_t)
        scores_t = model.scores(s_t, h_t)
    scores = alignment_scores(s_prev, h, params["w"], params["u"], params["v"])
    context, weights = additive_attention(s_prev, h, params)
    return {"scores": float(np.max(np.abs(scores - scores_t.numpy()))),
            "weights": float(np.max(np.abs(weights - weights_t.numpy()))),
            "context": float(np.max(np.abs(context - context_t.numpy())))}


# ---- the toy task: put shuffled pairs back in order ----------------------------------------

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


def _stream(seed: int, purpose: str) -> np.random.Generator:
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
    rng = _stream(settings.seed, "bahdanau/train")
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


def sort_sequence(model, inputs, snap: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Decode n − 1 outputs from the first input, each step's output fed back as s_{i-1}.

    model: a torch model or its params dict; inputs (n, d_h), row 0 the start ([0, 1]).
    snap rounds each output to whole numbers before feeding it back (as seed 004 does).
    Returns (outputs (n − 1, d_h), alignment (n − 1, n)): row i of alignment is output i's
    weights over the input positions, summing to 1.
    """
    params = params_of(model)
    inputs = _check_inputs(inputs, params)
    s, outputs, rows = inputs[0], [], []
    for _ in range(len(inputs) - 1):
        context, weights = additive_attention(s, inputs, params)     # (d_h,), (n,)
        s = np.round(context) if snap else context
        outputs.append(s)
        rows.append(weights)
    return np.array(outputs).reshape(-1, inputs.shape[1]), np.array(rows).reshape(-1, len(inputs))


def _check_inputs(inputs, params: dict) -> np.ndarray:
    try:
        inputs = np.asarray(inputs, dtype=np.float64)
    except (TypeError, ValueError):
        raise ConfigError("The inputs must be a table of numbers, one row per input.") from None
    d_h = params["u"].shape[0]
    if inputs.ndim != 2 or inputs.shape[1] != d_h or not 1 <= len(inputs) <= MAX_INPUTS:
        raise ConfigError(f"The inputs must be 1 to {MAX_INPUTS} rows of {d_h} numbers, not shape {inputs.shape}.")
    if not np.all(np.isfinite(inputs)):
        raise ConfigError("The inputs contain a value that is not a finite number.")
    return inputs


def alignment_trace(model, inputs, snap: bool = True) -> Trace:
    """sort_sequence as a Trace: inputs (n, d_h), outputs (n_out, d_h), alignment (n_out, n)."""
    outputs, alignment = sort_sequence(model, inputs, snap)
    trace = Trace(tuple(pair_label(r) for r in np.asarray(inputs, dtype=np.float64)))
    trace.add("inputs", "Shuffled inputs", inputs, ("n", "d_h"), r"h_0, \dots, h_{n-1}",
              why="The pairs to put in order; the first, h₀, is the fixed start [0, 1], which is also s₀.")
    trace.add("outputs", "Decoded outputs", outputs, ("n_out", "d_h"),
              (r"s_i = \mathrm{round}(c_i)" if snap else r"s_i = c_i") + r",\quad i = 1, \dots, n-1",
              ("inputs",), why="Output i is the context" + (", rounded," if snap else "") + " and becomes the "
              "decoder state s_i that step i + 1 reads.")
    trace.add("alignment", "Alignment matrix", alignment, ("n_out", "n"),
              r"\alpha_{ij} = \mathrm{softmax}_j\, v^\top \tanh(s_{i-1} W + h_j U),\quad i = 1, \dots, n-1,\ "
              r"j = 0, \dots, n-1", ("inputs", "outputs"),
              scale="sequential", why="Row i: where output i looked among the inputs. A trained model puts "
              "nearly all of each row on one input: a permutation, read off as a sorting.")
    trace.facts["output_labels"] = [pair_label(r) for r in outputs]
    return trace


@dataclass(frozen=True)
class Evaluation:
    n_sorted: int                     # sequences whose every output was right
    n_sequences: int
    steps_correct: int                # output positions that were right
    steps_total: int

    @property
    def share(self) -> float:
        return self.n_sorted / self.n_sequences


def evaluate(model, n_sequences: int = 200, seed: int = 0, min_len: int = 5, max_len: int = 20) -> Evaluation:
    """Sort fresh sequences (a stream training never draws from) and count the exact ones."""
    _check_int("n_sequences", n_sequences, 1, 10_000)
    params = params_of(model)
    rng = _stream(seed, "bahdanau/evaluate")
    n_sorted = correct = total = 0
    for _ in range(n_sequences):
        inputs, targets = toy_sequence(int(rng.integers(min_len, max_len + 1)), rng)
        outputs, _ = sort_sequence(params, inputs)
        right = np.all(outputs == targets[1:], axis=1)
        n_sorted += bool(right.all())
        correct += int(right.sum())
        total += right.size
    return Evaluation(n_sorted, n_sequences, correct, total)
