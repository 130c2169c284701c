"""The next-token page's computation: the learner's sentence through the small language model, the last
position's logits turned into a token (temperature before softmax, top-k, top-p, renormalised, a seeded draw),
a few tokens generated one at a time, and the layer-1 heads that did the copying.

`next_token_trace(sentence, temperature, k, p, seed, n_new)` is a Trace of kind "next_token", cached per process;
the explainers make every number of its Steps clickable. This package is the page's entry point.

    weights    lm_params: the shipped weights of the small LM, as float64
    trace      next_token_trace, sampling_notes: the Steps, the generated tokens, the heads' facts
    explain    the explainers of z, z / T, p, the kept set, p′, F, the sample and the heads' weights
"""
from .weights import lm_params
from .trace import COPY_LAYER, KIND, MAX_NEW, heads_facts, next_token_trace, sampling_notes
from . import explain  # noqa: F401  (it registers the explainers)

__all__ = ["lm_params", "COPY_LAYER", "KIND", "MAX_NEW", "heads_facts", "next_token_trace", "sampling_notes"]
