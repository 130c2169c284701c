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

In files (this package is the entry point, `attention_core.bahdanau` from the top level):

    alignment      the alignment function in numpy, and one decoder step as a Trace
    torch_module   the same as a torch.nn.Module, and the two checked against each other
    training       the toy task's sequences, its settings, training and its learning-rate schedule
    decoding       sorting with a model, the alignment matrix as a Trace, and the evaluation
"""
from __future__ import annotations

from .alignment import additive_attention, alignment_scores, init_params, pair_label, step_trace
from .decoding import Evaluation, alignment_trace, evaluate, sort_sequence
from .torch_module import compare_with_torch, params_of, torch_model
from .training import MAX_INPUTS, Progress, ToySettings, fit, lr_at, make_model, toy_sequence, train

__all__ = ["MAX_INPUTS", "Evaluation", "Progress", "ToySettings", "additive_attention", "alignment_scores",
           "alignment_trace", "compare_with_torch", "evaluate", "fit", "init_params", "lr_at", "make_model",
           "pair_label", "params_of", "sort_sequence", "step_trace", "toy_sequence", "torch_model", "train"]
