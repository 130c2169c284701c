"""attention_core: the attention mechanism computed in numpy, every intermediate named.

No Streamlit here, and no torch or sympy at import: usable from a notebook.

    >>> from attention_core import Config, run_forward
    >>> trace = run_forward(Config(sentence="I love you today"))
    >>> trace["weights"].shape_text
    'n_q=4 × n_k=4'

The folders are the layers, each importing only from those before it (tests/test_layers.py checks):

    math/          attention and its parts as numpy functions, one idea per file
    forward/       Config → Trace: the forward pass in stages
    explanations/  the arithmetic behind any number of a Trace
    training/      the classifier, its backward pass, the trained weights, the derivations
    lessons/       what each page family teaches beyond the forward pass
    labs/          pitfalls, quiz, export

This file is the public face: the names below, and the modules classifier, pretrained, bahdanau, grid
and torch_mha, import from the top level as they always have.
"""
import sys as _sys

from .math.attention import (apply_mask, causal_mask, entropy, merge_heads, multi_head_attention, padding_mask,
                             scaled_dot_product_attention, sliding_window_mask, softmax, softmax_with_sink,
                             split_heads)
from .math.alibi import alibi_bias, alibi_slopes
from .math.embeddings import glove_vocabulary, nearest, parse_vectors, toy_vocabulary, vocabulary_limit
from .math.gqa import grouped_query_attention
from .math.kv_cache import kv_cache_decode
from .math.online_softmax import online_softmax_attention
from .math.positional import sinusoidal_encoding
from .math.rope import rotary_embedding
from .math.text import tokenize
from .forward.config import Config
from .math.limits import ConfigError
from .forward.trace import Step, Trace
from .forward.stages import run_forward
from .explanations import Explanation, can_explain, explain
from .training import classifier, pretrained                     # pretrained hands the trained weights down
from .training.classifier import TrainingDiverged
from .training.pretrained import trained_weights
from .lessons import bahdanau, grid, torch_mha                   # torch only inside their functions
from .lessons import kv_cache as _kv_cache, masks as _masks, online_softmax as _online_softmax, rope as _rope  # noqa: F401  (their claims and explainers)
from .lessons import induction as _induction, next_token as _next_token  # noqa: F401  (their explainers)
from .training.lm import step_trace as _lm_step_trace  # noqa: F401  (the block gradients' explainers)
from .labs.export import config_from_query, config_to_query, csv_files, npz_bytes, python_script
from .labs.pitfalls import PITFALLS
from .labs.quiz import grade, make_questions

for _module in (classifier, pretrained, bahdanau, grid, torch_mha):      # `import attention_core.grid` still works
    _sys.modules[f"{__name__}.{_module.__name__.rsplit('.', 1)[1]}"] = _module

__all__ = [
    "Config", "ConfigError", "Step", "Trace", "run_forward",
    "sinusoidal_encoding", "softmax", "scaled_dot_product_attention", "multi_head_attention",
    "causal_mask", "padding_mask", "apply_mask", "split_heads", "merge_heads", "entropy",
    "tokenize", "toy_vocabulary", "glove_vocabulary", "parse_vectors", "nearest", "vocabulary_limit",
    "bahdanau", "classifier", "grid", "pretrained", "torch_mha", "TrainingDiverged", "trained_weights",
    "explain", "Explanation", "can_explain", "npz_bytes", "csv_files", "python_script",
    "config_to_query", "config_from_query", "PITFALLS", "make_questions", "grade",
    "rotary_embedding", "alibi_slopes", "alibi_bias", "sliding_window_mask", "softmax_with_sink",
    "grouped_query_attention", "online_softmax_attention", "kv_cache_decode",
]
