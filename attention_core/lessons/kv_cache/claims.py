"""The KV cache page's sentences that are true only under some settings, one table each: the decoding lesson's
(about the sidebar's heads, window and position, the prompt P and the step t: KVSettings) and the calculator's
(about the chosen preset and context length: CalcSettings). Each row: the key, the words, when they hold, that in
words, the property test in tests/test_kv_cache.py that proves it, and what is said otherwise (if anything).
"""
from __future__ import annotations

from ...forward.claims import claim
from .settings import KIND

PROOF = "tests/test_kv_cache.py::"
SQUARE_TEST = "test_a_decoded_step_has_one_query_and_a_prompt_step_a_square"
DECODING = (
    ("kv_mha_own_heads",
     "every query head has its own K and V head: this is multi-head attention (MHA), the largest cache",
     lambda s: s.n_kv_heads == s.n_heads > 1, "H_kv = H > 1", "test_mha_every_query_head_reads_its_own_kv_head"),
    ("kv_gqa_smaller",
     "the cache is g = {g} times smaller than MHA's: {kv_heads_words} instead of {n_heads}",
     lambda s: s.n_kv_heads < s.n_heads, "H_kv < H (GQA or MQA)", "test_gqa_cache_is_g_times_smaller_than_mha"),
    ("kv_mqa_one_head",
     "all query heads read one and the same K and V head: multi-query attention (MQA)",
     lambda s: s.n_kv_heads == 1 and s.n_heads > 1, "H_kv = 1 < H", "test_mqa_all_query_heads_read_kv_head_0"),
    ("kv_grows",
     "without a window the cache grows by one row per decoded token{prompt_rows} and never drops one",
     lambda s: s.window is None, "no sliding window", "test_cache_size_step_by_step"),
    ("kv_stops_growing",
     "the cache stops growing at W = {window_tokens}: from then on each new token's row pushes out the oldest",
     lambda s: s.window is not None and s.prefill <= s.window < s.n,
     "a sliding window W shorter than the sentence, and a prompt of at most W tokens (a longer prompt puts "
     "all its rows into the cache at once)", "test_cache_size_step_by_step"),
    ("kv_prompt_beyond_window",
     "the prompt's {prefill} rows enter the cache together, more than W = {window}: while the prompt is computed "
     "each of its rows sees at most W of them, and after it the cache keeps only the last {window}, each new "
     "token's row then pushing out the oldest",
     lambda s: s.window is not None and s.prefill > s.window, "a sliding window W and a prompt longer than W",
     "test_cache_size_step_by_step"),
    ("kv_window_covers",
     "W = {window} is at least the sentence's {n_tokens}: here the window never drops a row, and the cache "
     "grows as it would without one",
     lambda s: s.window is not None and s.window >= s.n, "a sliding window W ≥ n", "test_cache_size_step_by_step"),
    ("kv_one_query",
     "only the newest token asks a question at this step; earlier queries are never needed again",
     lambda s: not s.together, "step t decoded alone (t ≥ P, or a prompt of one token)", SQUARE_TEST,
     "in the prompt all {prefill} queries are computed together; this is row {t} of them, "
     "and no query is needed again after the prompt"),
    ("kv_one_row",
     "a decoding step scores one query, not a square matrix",
     lambda s: not s.together, "step t decoded alone (t ≥ P, or a prompt of one token)", SQUARE_TEST),
    ("kv_prompt_square",
     "the prompt is scored as one {prefill} × {prefill} square at once, masked after each row's token; this is its "
     "row {t}",
     lambda s: s.together and (s.window is None or s.window >= s.prefill),
     "step t in a prompt of P > 1 tokens, and no window shorter than the prompt (it would hide keys inside it)",
     SQUARE_TEST),
    ("kv_prompt_square_window",
     "the prompt is scored as one {prefill} × {prefill} square at once, masked after each row's token and more "
     "than W − 1 = {w_back} before it (the window of W = {window}); this is its row {t}",
     lambda s: s.together and s.window is not None and s.window < s.prefill,
     "step t in a prompt of P > 1 tokens and a window W < P", SQUARE_TEST),
    ("kv_rolling_buffer",
     "With the sidebar's window W = {window} the cache is a rolling buffer of W rows for the decoded tokens: as "
     "token t's row comes in, token t − {window}'s, which t may not see, falls out, so step t reads tokens "
     "t − {w_back} … t (a prompt longer than W is computed whole, then keeps its last W)",
     lambda s: s.window is not None and s.window > 1, "a sliding window of W ≥ 2 keys",
     "test_a_window_is_a_rolling_buffer_of_w_rows"),
    ("kv_window_of_one",
     "With the sidebar's window W = 1 each token sees only itself: a decoded token's row replaces the one before, "
     "so the cache holds one row, token t's, and no earlier key or value is read",
     lambda s: s.window == 1, "a sliding window of W = 1 key (the token itself)",
     "test_a_window_is_a_rolling_buffer_of_w_rows"),
    ("kv_rope_rotated_once",
     "the cache keeps the rotated keys k^R_j: token j's rotation by its position is applied once, when it comes in, "
     "and a later query's rotation never changes it",
     lambda s: s.positional == "rope", "Position = RoPE",
     "test_rope_cache_holds_the_rotated_keys_of_the_forward_pass"),
    ("kv_alibi_from_distance",
     "row {t} of ALiBi's bias B_h, −m_h·({t} − j), comes from the distances alone, so nothing of it is cached",
     lambda s: s.positional == "alibi", "Position = ALiBi",
     "test_alibi_decoding_adds_the_bias_row_and_equals_the_full_pass"),
)
CALCULATOR = (
    ("kv_calc_window",
     "every layer's cache stops growing at {window:,} tokens",
     lambda s: s.preset.window is not None and s.preset.local_layers == s.preset.layers,
     "every layer has a sliding window", "test_calculator_window_presets_stop_growing"),
    ("kv_calc_some_global",
     "only its {n_global} global layers of {layers} keep growing past {window:,} tokens; the {n_local} windowed "
     "ones stop there",
     lambda s: s.preset.window is not None and 0 < s.preset.local_layers < s.preset.layers,
     "some layers windowed, some global (any split)", "test_calculator_window_presets_stop_growing"),
    ("kv_calc_latent",
     "a latent cache keeps one vector per token and layer, not a K and a V: no factor 2",
     lambda s: s.preset.latent is not None, "a latent (MLA) cache", "test_latent_cache_is_not_doubled"),
    ("kv_calc_beyond_context",
     "{tokens:,} tokens is more than {name}'s configured maximum of {context:,} positions: this is the arithmetic "
     "of a cache that long, not a length the model was made for",
     lambda s: s.tokens > s.preset.context, "a context length above the preset's configured maximum of positions",
     "test_calculator_says_when_the_length_is_beyond_the_models_context"),
)

for about, table in ((KIND, DECODING), ("kv_cache_calc", CALCULATOR)):
    for key, text, holds, condition, test, *otherwise in table:
        claim(key, text, holds, condition, PROOF + test, about=about, otherwise="".join(otherwise))
