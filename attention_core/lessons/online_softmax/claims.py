"""The online softmax page's sentences that are true only under some controls (Controls: the sidebar's Config, the
block size B_c, the block b and the head h), as one table. Each row: the key, the words, when they hold, that in
words, the property test in tests/test_online_softmax.py that proves it, and what is said otherwise (if anything).
"""
from __future__ import annotations

from ...forward.claims import claim
from .block_trace import facts
from .head import KIND, head_of

PROOF = "tests/test_online_softmax.py::"
RESCALED_TEST = "test_rescaled_rows_are_exactly_those_whose_maximum_rose"
SKIPPED_TEST = "test_skipped_tiles_are_the_fully_masked_ones"
ONLINE_SOFTMAX = (
    ("os_first_block",
     "Block 0 is the first: every m_i starts at −∞ and ℓ_i, o_i at 0, so there is nothing to rescale yet",
     lambda c: c.block == 0, "the first key block, b = 0", "test_first_block_starts_from_nothing"),
    ("os_rescaled",
     "the running maximum rose in this block for {rows}, so their ℓ_i and o_i were multiplied by "
     "e^(m_i − m_i′) < 1 (▼ in the table) before the block's terms were added",
     lambda c: bool(facts(c)["rescaled"]), "a block b > 0 in which some row's maximum rises above a finite m_i",
     RESCALED_TEST),
    ("os_not_rescaled",
     "No row that had already seen a key and whose tile is computed here finds a larger score in this block: for "
     "each, e^(m_i − m_i′) = 1, so its ℓ_i and o_i are only added to",
     lambda c: c.block > 0 and not facts(c)["rescaled"] and facts(c)["seen_computed"],
     "a block b > 0 in which no finite m_i rises, some row that had seen a key before it having its tile computed",
     RESCALED_TEST),
    ("os_seen_all_skipped",
     "The rows that had seen a key are all in skipped tiles here",
     lambda c: c.block > 0 and facts(c)["any_seen"] and not facts(c)["seen_computed"],
     "a block b > 0 in which every row that had seen a key before it has its tile skipped", RESCALED_TEST),
    ("os_first_seen",
     "first keys in this block for {rows}: m_i rises from −∞ to the block's row maximum, and e^(m_i − m_i′) = 0 "
     "multiplies the ℓ_i = 0 and o_i = 0 from before (● in the table)",
     lambda c: c.block > 0 and bool(facts(c)["first_seen"]),
     "a block b > 0 that holds the first keys some row may see (a window, or padding at the start)",
     "test_rows_that_see_their_first_keys_start_from_nothing"),
    ("os_skipped",
     "{which} every score masked{where}: nothing in {them} is computed, and m_i, ℓ_i, o_i pass through {them} "
     "unchanged",
     lambda c: facts(c)["n_skipped"] > 0, "a mask that hides a whole B_r × B_c tile (causal: above the diagonal)",
     SKIPPED_TEST, "No tile was skipped: {every_tile} at least one score its queries may use"),
    ("os_skipped_here",
     "in this block the tiles of {rows} are skipped: their m_i, ℓ_i and o_i did not change",
     lambda c: bool(facts(c)["skipped_here"]), "a skipped tile in block b", SKIPPED_TEST),
    ("os_empty_rows",
     "{rows} may see no key at all: ℓ_i stays 0, so C_i is set to 0 instead of 0/0 = NaN, as the forward pass's "
     "softmax gives a row of zeros there",
     lambda c: bool(facts(c)["empty_rows"]), "a mask that hides every key from some query (padding everything)",
     "test_fully_masked_rows_give_zero_not_nan"),
    ("os_one_block",
     "B_c = {B} ≥ n = {n}: every key fits in one block, so the loop runs once and is the plain softmax in one go "
     "(still exact)",
     lambda c: c.block_size >= len(head_of(c.config, c.head).tokens), "a block size of at least n",
     "test_block_larger_than_n_is_one_block_and_still_right"),
    ("os_any_score",
     "FlashAttention's kernels score a query against a key by their dot product q_i · k_j (scaled, with options "
     "such as ALiBi's bias). "
     "The recurrence itself needs only that each score is made from its query and its key alone, which the "
     "{score} score is too: its blocks give the same weights as the forward pass",
     lambda c: c.config.score in ("additive", "bilinear"),
     "an additive or bilinear score (FlashAttention's own is the dot product)",
     "test_every_score_function_is_computed_block_by_block"),
)

for key, text, holds, condition, test, *otherwise in ONLINE_SOFTMAX:
    claim(key, text, holds, condition, PROOF + test, about=KIND, otherwise="".join(otherwise))
