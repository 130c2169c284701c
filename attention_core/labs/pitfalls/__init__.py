"""Known wrong versions of attention, each next to the correct computation and a check that tells them apart.

The source texts (see /work/shared/seeds/README.md, "Known errors") and common practice contain
mistakes. The explorer computes the correct version everywhere else; here, and only here, each
mistake is computed on purpose, labelled, beside the correct result, with a check that passes
on the correct one and flags the wrong one.

    >>> from attention_core import Config
    >>> [p.key for p in PITFALLS]            # doctest: +NORMALIZE_WHITESPACE
    ['softmax_axis', 'no_scaling', 'neg_inf_nan', 'dropout_at_inference', 'scores_times_v',
     'one_jacobian', 'sqrt_len_q', 'odd_pe_zero', 'alibi_no_step', 'rope_pairing', 'causal_upper_left',
     'window_w_plus_one', 'latent_cache_x2', 'temperature_after_softmax', 'unbiased_variance',
     'post_formula_pre_code', 'fixed_offset']
    >>> r = PITFALLS_BY_KEY["scores_times_v"].compute(Config())
    >>> r.check_passes_on_correct, r.check_flags_wrong
    (True, True)

compute(config_or_trace) takes a Config (it runs the forward pass) or a Trace. Pitfalls that
need softmax rows want at least two tokens: with one token every softmax is [1], so several
wrong versions coincide with the right one (the check_detail says so).

The mistakes live by family, each function marked with its card (@pitfall: title, source, words):

    base       PitfallResult, Pitfall, the @pitfall mark, symbols, the checks' helpers
    softmax    softmax over the wrong axis, −∞ and a fully masked row, dropout at inference, scores @ V
    scaling    no √d_k at a large d_k, / √(n·d_k)
    gradient   one softmax Jacobian for every row
    positions  the odd width's last encoding column, ALiBi without [0::2], RoPE's pairing
    decoding   is_causal=True against a KV cache, a window of W + 1 keys, a latent cache × 2
    block      temperature after softmax, the unbiased variance in LayerNorm, a post-norm formula with pre-norm
               code, the copy task with a fixed offset (the transformer block and the small language model)
"""
from __future__ import annotations

from .block import fixed_offset, post_formula_pre_code, temperature_after_softmax, unbiased_variance
from .base import Pitfall, PitfallResult, difference, symbols
from .decoding import causal_upper_left, latent_cache_bytes_per_token, latent_cache_x2, window_w_plus_one
from .gradient import SmallAttention, one_jacobian, small_attention
from .positions import alibi_no_step, alibi_slopes_without_step, odd_pe_zero, rope_pairing, seed_001_encoding
from .scaling import no_scaling, sqrt_len_q
from .softmax import dropout_at_inference, naive_softmax, neg_inf_nan, scores_times_v, softmax_axis

PITFALLS: tuple[Pitfall, ...] = tuple(compute.pitfall for compute in (
    softmax_axis, no_scaling, neg_inf_nan, dropout_at_inference, scores_times_v, one_jacobian, sqrt_len_q,
    odd_pe_zero, alibi_no_step, rope_pairing, causal_upper_left, window_w_plus_one, latent_cache_x2,
    temperature_after_softmax, unbiased_variance, post_formula_pre_code, fixed_offset))
FROM_TUTORIALS: tuple[Pitfall, ...] = tuple(p for p in PITFALLS if p.tutorial is not None)
PITFALLS_BY_KEY: dict[str, Pitfall] = {p.key: p for p in PITFALLS}

__all__ = ["PITFALLS", "FROM_TUTORIALS", "PITFALLS_BY_KEY", "Pitfall", "PitfallResult", "difference", "symbols",
           "naive_softmax", "seed_001_encoding", "small_attention", "SmallAttention", "alibi_slopes_without_step",
           "latent_cache_bytes_per_token"]
