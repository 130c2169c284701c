"""Seed 000's sentiment classifier: self-attention, a linear layer, mean pooling, softmax.

Rows are tokens (the Julia tutorial writes the transpose: its x is (d, n) and q = Q x).
Everything is float64, so the hand-written backward pass can be checked against torch to 1e-9.

    X (n, d_in)         each word's vector, with its position: seed 000's index column appended,
                        sinusoids added or concatenated, or none (TrainingSettings.positional)
    Q = X W_Q + b_Q     (n, d_k)      K = X W_K + b_K  (n, d_k)      V = X W_V + b_V  (n, d_v)
    Ŝ = Q Kᵀ / √d_k     (n, n)        the scaled scores (docs/notation.md: S is Q Kᵀ before scaling)
    A = softmax(Ŝ)      (n, n)        row by row: row i is how word i spreads its attention
    C = A V             (n, d_v)
    F = C W_O + b_O     (n, 3)        one score per class for every word
    f̄ = mean_i F_i,:    (3,)          the class logits of the sentence, i = 0 … n−1
    p = softmax(f̄)      (3,)
    L = −log p_y        ()            cross-entropy with the true class y

Two mistakes of the tutorial are fixed: each row of A is its own softmax, so each row has its
own Jacobian diag(a_i) − a_i a_iᵀ (the text builds one from A's first column and uses it for
every row); and the scores are divided by √d_k, not by √(number of entries of Q).

This folder's __init__ is the classifier's entry point (`from attention_core import classifier as clf`); each part
is a file of its own, and every name below is found here as well as there:

    model.py           the parameters and the forward pass, the shape of every line
    backprop.py        the backward pass by hand, each derivative under the forward line it undoes
    sgd.py             the SGD step, the training loop, the loss and accuracy on a dataset
    dataset.py         the CSV of sentences and labels, and a sentence as X
    step_trace.py      the trace of one training step: forward and backward as Steps, explained cell by cell
    gradient_check.py  the same model in torch, and the hand gradients against autograd and finite differences
    gradient_explainers.py  the arithmetic of each cell of the trace: a table of sums, the softmaxes, the rest
    cell_arithmetic.py      what those explainers share: naming a cell; a sum of products as a row of data

    >>> params = init_params(d_in=4, d_k=2, d_v=3, seed=0)
    >>> x = np.arange(12.0).reshape(3, 4) / 10                  # 3 words, 4 features each
    >>> loss, trace = forward(params, x, "positive")
    >>> trace["weights"].shape_text, float(trace["p"].value.sum().round(12))
    ('n_q=3 × n_k=3', 1.0)
    >>> grads = backward(params, x, "positive", trace)
    >>> grads["w_q"].shape, trace["dL/dw_q"].axes
    ((4, 2), ('d_in', 'd_k'))
"""
from __future__ import annotations

import numpy as np  # noqa: F401  (the doctest above uses it)

from ...forward.trace import Trace
from ...math.attention import softmax
from ...math.limits import ConfigError
from . import gradient_explainers  # noqa: F401  (registers the explainers of this trace's steps)
from .backprop import loss_and_gradients, softmax_jacobians
from .dataset import (DATA_PATH, MAX_DATASET_BYTES, MAX_DATASET_ROWS, POSITIONALS, Example, Sample, d_in_for,
                      encode_dataset, load_dataset, sentence_matrix)
from .gradient_check import check_gradients, torch_forward, torch_loss_and_gradients
from .model import CLASSES, PARAM_AXES, PARAM_NAMES, init_params, label_index, predict
from .sgd import DEFAULTS, MAX_EPOCHS, TrainingDiverged, evaluate, sgd_step, train
from .step_trace import backward, forward, symbol, x_why
# The fast path without a Trace, which tests and bench/backward.py call, and the symbols' tables, kept here too.
from .backprop import _backward  # noqa: F401
from .model import _as_input, _forward  # noqa: F401
from .step_trace import _PLAIN, _SYMBOLS  # noqa: F401

__all__ = ["CLASSES", "PARAM_NAMES", "PARAM_AXES", "POSITIONALS", "DEFAULTS", "DATA_PATH", "MAX_DATASET_BYTES",
           "MAX_DATASET_ROWS", "MAX_EPOCHS", "ConfigError", "Trace", "TrainingDiverged", "Example", "Sample",
           "init_params", "label_index", "forward", "backward", "x_why", "symbol", "softmax", "softmax_jacobians",
           "loss_and_gradients", "torch_forward", "torch_loss_and_gradients", "check_gradients", "sgd_step",
           "train", "predict", "evaluate", "d_in_for", "sentence_matrix", "load_dataset", "encode_dataset"]
