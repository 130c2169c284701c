"""attention_core: the attention forward pass (and later its gradients), computed in numpy.

No Streamlit here, and no torch at import: usable from a notebook.

    >>> from attention_core import Config, run_forward
    >>> trace = run_forward(Config(sentence="I love you today"))
    >>> trace["weights"].shape_text
    'n_q=4 × n_k=4'
"""
from .attention import (apply_mask, causal_mask, entropy, merge_heads, multi_head_attention,
                        padding_mask, scaled_dot_product_attention, sliding_window_mask, softmax,
                        softmax_with_sink, split_heads)
from .alibi import alibi_bias, alibi_slopes
from .gqa import grouped_query_attention
from .kv_cache import kv_cache_decode
from .online_softmax import online_softmax_attention
from .rope import rotary_embedding
from .config import Config, ConfigError
from .embeddings import glove_vocabulary, nearest, parse_vectors, toy_vocabulary, vocabulary_limit
from .forward import run_forward
from .positional import sinusoidal_encoding
from .text import tokenize
from .trace import Step, Trace
from . import bahdanau, classifier, grid, pretrained, torch_mha   # modules (torch only inside their functions)
from . import lesson_kv_cache, lesson_masks, lesson_online_softmax, lesson_rope   # today's attention pages' lessons (and their claims)
from .pretrained import trained_weights
from .classifier import TrainingDiverged
from .explain import Explanation, can_explain, explain
from .export import config_from_query, config_to_query, csv_files, npz_bytes, python_script
from .pitfalls import PITFALLS
from .quiz import grade, make_questions

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
