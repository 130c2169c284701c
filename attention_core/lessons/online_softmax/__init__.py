"""The online-softmax page's computation: FlashAttention-2's recurrence stepped block by block on the sentence.

One head h of the forward pass under the sidebar's settings (head 0 unless the page picks another): its
queries and keys as the scores read them (rotated by RoPE when the position is RoPE; the keys and values of
KV head ⌊h/g⌋ under grouped-query attention), its values, and exactly the scores its softmax reads: the
score function's S or Ŝ, plus ALiBi's B_h, −∞ where the settings' mask hides a key (S̃), divided by the
temperature T. The keys are cut into blocks b = 0, 1, … of B_c keys; the block's scores S_b are made only when
its keys are loaded (each score needs only its query and its key, whatever the score function), and each
query row i carries its running maximum m_i, running sum ℓ_i and unnormalised output o_i from block to block
(docs/notation.md, "Today's attention"). After the last block C_i = o_i / ℓ_i is row i of the forward pass's
C_h. As FlashAttention does, the queries are cut into blocks of B_r rows too (B_r = B_c here), so that a
B_r × B_c tile whose every score is masked is skipped: counted and shown here. (B_c, B_r: FlashAttention's names
for the key and query block sizes; B alone is ALiBi's bias in docs/notation.md.)

    >>> from attention_core import Config
    >>> t = online_softmax_trace(Config(sentence="I love you today", mask="causal"), 2, 1)
    >>> t["s_b"].shape_text, t.facts["keys"], t.facts["n_skipped"], t.facts["n_tiles"]
    ('n_q=4 × k_b=2', (2, 4), 1, 4)
    >>> bool(t.facts["max_diff"] < 1e-12), bool(t.facts["lse_diff"] < 1e-12)
    (True, True)

`online_softmax_trace(config, block_size, block, head)` is cached per process (Config is frozen); the claims
hold under `Controls(config, block_size, block, head)`; the explainers make every number clickable. This package
is the page's entry point: ui/ and the tests import every name from here.

    head                 Controls, head_of: head h of the forward pass's Trace, as the online softmax reads it
    blocks               run_blocks: the recurrence over the key blocks, and the tiles computed or skipped
    symbols              what softmax reads, in the notation; source_text; the recurrence as formulas
    block_trace          online_softmax_trace: block b as Steps, with the facts the claims read
    claims               the page's claims, one table
    cells                what the explainers share: numbers written, the block explained, one Explanation
    explain_inputs       the explainers of Q, K, V, the parameters, the whole rows, S_b, the mask, the tiles
    explain_recurrence   the explainers of m_i′, e^(m_i − m_i′), ℓ_i′, o_i′, the states, C, the logsumexp
"""
from .head import KIND, Controls, Head, check_block_size, check_head, head_of
from .blocks import block_scores, logsumexp_rows, run_blocks
from .symbols import (SCORE_ENTRIES, SCORE_ENTRIES_PER_HEAD, SCORE_NAMES, entry_symbol, mask_words, matrix_symbol,
                      reads_symbol, recurrence, recurrence_parts, source_text)
from .block_trace import facts, online_softmax_trace, rows_text, skipped_text, skipped_where
from . import claims, explain_inputs, explain_recurrence  # noqa: F401  (they register the claims and explainers)
from .explain_inputs import mask_rule

__all__ = ["KIND", "Controls", "Head", "check_block_size", "check_head", "head_of", "block_scores", "logsumexp_rows",
           "run_blocks", "SCORE_ENTRIES", "SCORE_ENTRIES_PER_HEAD", "SCORE_NAMES", "entry_symbol", "mask_words",
           "matrix_symbol", "reads_symbol", "recurrence", "recurrence_parts", "source_text", "facts",
           "online_softmax_trace", "rows_text", "skipped_text", "skipped_where", "mask_rule"]
