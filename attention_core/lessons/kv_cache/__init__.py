"""The KV cache page's lesson: the forward pass's own computation decoded token by token, and a cache-size
calculator. This package is the page's entry point: ui/ and the tests import every name from here.

The page decodes the sidebar's forward pass: its X, its W_Q, W_K, W_V, W_O (trained or seeded, as the
sidebar's Weights say; with its biases when Bias is on), its H query heads and H_kv KV heads, RoPE
(base pe_base) or ALiBi when the sidebar's Position says so, its window W, score (dot or scaled dot)
and temperature. Decoding sees only earlier tokens, so what it computes is the forward pass under the
causal mask (or the sidebar's window): `decoding_config` is that Config, and its forward pass is the
live proof's reference (the decoded outputs equal its trace["output"]).

    settings               KVSettings, decoding_config: what is decoded, and what the claims are about
    decoding               decode: the forward pass's Trace fed through kv_cache_decode, step by step
    checks                 the decoded numbers against the forward pass's, and against torch's SDPA
    step_trace             kv_cache_trace: step t as Steps (q_t, the K and V cache, scores, weights, c_t, o_t)
    calculator             the published models' configurations (PRESETS) and cache_bytes, calculator_trace
    cells                  Cells (a cached row named by its token) and the projected rows' arithmetic
    explainers             the explainers of a decoding step's cells
    calculator_explainer   the explainer of the calculator's cells
    claims                 the page's claims, one table for the decoding lesson, one for the calculator

Notation (docs/notation.md, "Today's attention"): H query heads, H_kv KV heads, g = H / H_kv, query
head h reads KV head ⌊h / g⌋; t the token being decoded; W the window (W keys, the token included).
"""
from .settings import DECODED_SCORES, KIND, PARAMS, KVSettings, decoding_config, settings_for, window_of
from .decoding import Decoded, check_prefill, decode, forward_pass, heads_of
from .checks import check_against_full_pass, torch_check
from .step_trace import count, kv_cache_trace
from .calculator import (BYTES, CONTEXTS, PRESETS, CalcSettings, Preset, bytes_per_token, cache_bytes,
                         calculator_trace, human, memory_curves)
from .cells import Cells, explainer
from . import explainers, calculator_explainer, claims  # noqa: F401  (they register the explainers and claims)
from .calculator_explainer import number

__all__ = ["DECODED_SCORES", "KIND", "PARAMS", "KVSettings", "decoding_config", "settings_for", "window_of",
           "Decoded", "check_prefill", "decode", "forward_pass", "heads_of", "check_against_full_pass", "torch_check",
           "count", "kv_cache_trace", "BYTES", "CONTEXTS", "PRESETS", "CalcSettings", "Preset", "bytes_per_token",
           "cache_bytes", "calculator_trace", "human", "memory_curves", "Cells", "explainer", "number"]
