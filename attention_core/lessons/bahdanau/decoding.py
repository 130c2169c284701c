"""Sorting with a model: decode the outputs one step at a time, each fed back as the next decoder state; the
alignment matrix as a Trace; and how many fresh sequences a model sorts exactly."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...forward.trace import Trace
from ...math.limits import ConfigError, _check_int
from .alignment import additive_attention, pair_label
from .torch_module import params_of
from .training import MAX_INPUTS, stream, toy_sequence


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
    rng = stream(seed, "bahdanau/evaluate")
    n_sorted = correct = total = 0
    for _ in range(n_sequences):
        inputs, targets = toy_sequence(int(rng.integers(min_len, max_len + 1)), rng)
        outputs, _ = sort_sequence(params, inputs)
        right = np.all(outputs == targets[1:], axis=1)
        n_sorted += bool(right.all())
        correct += int(right.sum())
        total += right.size
    return Evaluation(n_sorted, n_sequences, correct, total)
