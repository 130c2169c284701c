"""The online-softmax page: its lesson is the forward pass's head h under the sidebar's settings (RoPE, ALiBi,
GQA, every mask, T, every score function), checked against the forward pass's own context and weights, torch
SDPA and torch.logsumexp; its claims as properties; its symbols built from the settings; every clicked number's
arithmetic; hostile block sizes; the page through AppTest, from a link and under a walk of settings."""
from __future__ import annotations

import math
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from attention_core import Config, ConfigError, online_softmax_attention, run_forward
from attention_core.forward.claims import CLAIMS, holds, say, shown_outside
from attention_core.explanations import explain, fmt
from attention_core.lessons.online_softmax import (Controls, entry_symbol, head_of, matrix_symbol,
                                                   online_softmax_trace, recurrence, rows_text, run_blocks,
                                                   skipped_text, source_text)
from tests.apptest_util import formulas, messages, no_exception, open_page

PAGE = "app_pages/43_online_softmax.py"
WORDS = "the cat sat on a mat while my dog ate every red apple".split()
MINE = sorted(k for k, c in CLAIMS.items() if c.about == "online_softmax")


def config_of(n: int, mask: str = "none", padding=(), heads: int = 1, d_k: int = 4, seed: int = 0, **more) -> Config:
    return Config(sentence=" ".join(WORDS[:n]), embedding="random", weights="random", d_model=6, d_k=d_k,
                  d_v=2, n_heads=heads, mask=mask, padding=tuple(padding), seed=seed, **more)


@st.composite
def controls(draw):
    """Random settings: a sentence of 1–7 words, any mask (a window smaller or larger than n), any position
    (RoPE, ALiBi …), any score function, T, 1, 2 or 4 heads with grouped KV heads; any B from 1 to n + 2, a
    block and a head."""
    n = draw(st.integers(1, 7))
    mask = draw(st.sampled_from(["none", "causal", "padding", "sliding_window"]))
    padding = sorted(draw(st.sets(st.integers(0, n - 1), max_size=n))) if mask == "padding" else ()
    heads = draw(st.sampled_from([1, 2, 4]))
    config = config_of(n, mask, padding, heads, draw(st.sampled_from([2, 4])), draw(st.integers(0, 3)),
                       positional=draw(st.sampled_from(["sinusoidal", "none", "rope", "alibi"])),
                       score=draw(st.sampled_from(["scaled_dot", "dot", "additive", "bilinear"])),
                       temperature=draw(st.sampled_from([1.0, 0.5, 3.0])), window=draw(st.integers(1, 8)),
                       n_kv_heads=draw(st.sampled_from([d for d in (1, 2, 4) if heads % d == 0])))
    block_size = draw(st.integers(1, n + 2))
    block = draw(st.integers(0, -(-n // block_size) - 1))
    return Controls(config, block_size, block, draw(st.integers(0, heads - 1)))


PROPERTY = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def forward_head(config: Config, h: int = 0):
    """(what softmax reads ÷ T (n, n), A_h (n, n), C_h (n, d_v)): the forward pass's own, read from its trace."""
    f = run_forward(config)
    pick = (lambda a: a[h]) if config.n_heads > 1 else (lambda a: a)
    return (pick(f[f.facts["softmax_input"]].value) / config.temperature, pick(f["weights"].value),
            pick(f["context"].value))


# ---- the forward pass's head h, under the sidebar's settings ---------------------------------------------

SIDEBAR = {
    "defaults": Config(),
    "rope-causal": Config(positional="rope", mask="causal"),
    "rope-gqa-window": Config(positional="rope", n_heads=4, n_kv_heads=2, mask="sliding_window", window=2),
    "alibi3-causal-T2": config_of(6, "causal", heads=3, positional="alibi", temperature=2.0),
    "alibi-dot-nomask": Config(positional="alibi", score="dot", n_heads=2),
    "mqa-bilinear-T0.5": config_of(5, heads=4, n_kv_heads=1, score="bilinear", temperature=0.5),
    "additive-padding-all": config_of(4, "padding", (0, 1, 2, 3), heads=2, score="additive"),
    "window-larger-than-n": config_of(5, "sliding_window", window=9, positional="rope", bias=True),
}


@pytest.mark.parametrize("config", SIDEBAR.values(), ids=SIDEBAR.keys())
def test_the_blocks_give_the_forward_pass_s_weights_and_context_for_every_head(config):
    """C after the last block is the forward pass's C_h to 1e-12, every S_b is the block's columns of what its
    softmax reads (S̃ / T, with RoPE's rotated rows, ALiBi's bias, the mask), and m + log ℓ its logsumexp."""
    import torch
    n = run_forward(config).n
    for h in range(config.n_heads):
        reads, weights, context = forward_head(config, h)
        expected_lse = torch.logsumexp(torch.tensor(reads), dim=-1).numpy()
        for B in sorted({1, 2, 3, n + 1}):
            lesson = online_softmax_trace(config, B, 0, h)
            assert np.abs(lesson["context"].value - context).max() < 1e-12, (h, B)
            assert lesson.facts["max_diff"] < 1e-12 and lesson.facts["lse_diff"] < 1e-12
            lse = lesson["lse"].value
            assert np.array_equal(np.isneginf(lse), np.isneginf(expected_lse))
            finite = np.isfinite(expected_lse)
            assert np.allclose(lse[finite], expected_lse[finite], atol=1e-12, rtol=0)
            blocks, _, _ = run_blocks(config, B, h)
            got = np.concatenate([bl["scores"] for bl in blocks], axis=1)               # S_0 | S_1 | …
            assert np.array_equal(np.isneginf(got), np.isneginf(reads))
            assert np.allclose(np.where(np.isfinite(got), got, 0), np.where(np.isfinite(reads), reads, 0),
                               atol=1e-12, rtol=0)
            # the weights: e^(S − m) / ℓ with the final m, ℓ of each row
            m, l = blocks[-1]["m"], blocks[-1]["l"]
            seen = l > 0
            a = np.exp(got[seen] - m[seen, None]) / l[seen, None]
            assert np.allclose(a, weights[seen], atol=1e-12, rtol=0)


def test_head_h_reads_its_own_query_head_and_kv_head_floor_h_over_g():
    config = Config(positional="rope", n_heads=4, n_kv_heads=2, mask="causal")
    f = run_forward(config)
    for h in range(4):
        hd = head_of(config, h)
        assert hd.kv_head == h // 2
        assert np.array_equal(hd.q, f["q_rot"].value[h]) and np.array_equal(hd.k, f["k_rot"].value[h // 2])
        assert np.array_equal(hd.v, f["v_heads"].value[h // 2])
    with pytest.raises(ConfigError, match="0 … 3"):
        online_softmax_trace(config, 2, 0, 4)


def test_under_rope_the_scores_are_the_rotated_ones_not_the_unrotated():
    """Issue 20's #6: S_b under RoPE is q^R_i · k^R_j / √d_k (the forward pass's Ŝ), not q_i · k_j / √d_k."""
    config = Config(positional="rope")
    lesson = online_softmax_trace(config, 4, 0)
    f = run_forward(config)
    assert np.allclose(lesson["s_b"].value, f["scaled_scores"].value, atol=1e-12, rtol=0)
    unrotated = f["q"].value @ f["k"].value.T / 2.0
    assert np.abs(unrotated - lesson["s_b"].value).max() > 0.1


@pytest.mark.parametrize("name", ["defaults", "rope-causal", "alibi3-causal-T2", "alibi-dot-nomask",
                                  "rope-gqa-window", "additive-padding-all"])
def test_context_equals_torch_sdpa_with_the_same_bias_mask_and_scale(name):
    """Torch on the same rotated rows; ALiBi's bias rebuilt in torch from the slopes; T folded into the scale."""
    import torch
    config = SIDEBAR[name]
    f = run_forward(config)
    for h in range(config.n_heads):
        lesson = online_softmax_trace(config, 2, 0, h)
        q, k, v = (torch.tensor(lesson[s].value) for s in ("q", "k", "v"))
        n = q.shape[0]
        if config.score == "additive":                       # torch's SDPA has no additive score: its softmax
            s = torch.tensor(forward_head(config, h)[0])
            ref = (torch.softmax(s, -1).nan_to_num(0.0) @ v).numpy()
        else:
            scale = (1 / math.sqrt(q.shape[1]) if config.score == "scaled_dot" else 1.0) / config.temperature
            bias = torch.zeros(n, n, dtype=torch.float64)
            if config.positional == "alibi":
                i = torch.arange(n, dtype=torch.float64)
                bias = -f.facts["alibi_slopes"][h] * (i[:, None] - i[None, :]).abs() / config.temperature
            if "mask" in f:
                bias = bias.masked_fill(~torch.tensor(f["mask"].value.astype(bool)), float("-inf"))
            ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=bias, scale=scale).numpy()
        seen = ~np.isnan(ref).any(axis=1) & np.isfinite(lesson["lse"].value)
        assert np.allclose(lesson["context"].value[seen], ref[seen], atol=1e-12, rtol=0), (name, h)
        assert not lesson["context"].value[~seen].any()


def test_one_pass_over_all_rows_equals_the_core_per_query_block_with_its_skips():
    """run_blocks runs the recurrence once over all rows: the same m, ℓ, o (up to the last bits of the matrix
    product) as the core run per B-row query block (FlashAttention's tiles), and its tile map is the core's own
    skipped flags; a skipped row's state passes through exactly."""
    for config in (config_of(5, "causal"), config_of(5, "padding", (1, 2)), config_of(6, "sliding_window", window=2),
                   config_of(4, "padding", (0, 1, 2, 3))):
        for block_size in (1, 2, 3):
            blocks, tiles, context = run_blocks(config, block_size)
            hd = head_of(config)
            q, k, v, mask = hd.q, hd.k, hd.v, hd.mask
            for r, r0 in enumerate(range(0, len(q), block_size)):
                rows = slice(r0, r0 + block_size)
                c, per = online_softmax_attention(q[rows], k, v, block_size, mask[rows])
                assert np.allclose(c, context[rows], atol=1e-13, rtol=0)
                for b, (mine, core) in enumerate(zip(blocks, per)):
                    for key in ("m", "l", "o"):
                        assert np.allclose(mine[key][rows], core[key], atol=1e-13, rtol=0), (r, b, key)
                    assert tiles[r, b] == (0.0 if core["skipped"] else 1.0)
                    if core["skipped"]:
                        assert np.all(mine["rescale"][rows] == 1.0)
                        before = blocks[b - 1] if b else dict(m=np.full(len(q), -np.inf), l=np.zeros(len(q)),
                                                              o=np.zeros_like(mine["o"]))
                        for key in ("m", "l", "o"):
                            assert np.array_equal(mine[key][rows], before[key][rows])


def test_hand_computed_block_by_block():
    """One query, scores 1, 3, 2 (d_k = 1, q = 1, k = 1, 3, 2), values 10, 20, 30, B = 1: the paper's recurrence by hand."""
    context, blocks = online_softmax_attention(np.array([[1.0]]), np.array([[1.0], [3.0], [2.0]]),
                                               np.array([[10.0], [20.0], [30.0]]), 1)
    e = math.exp
    assert [b["m"][0] for b in blocks] == [1.0, 3.0, 3.0]
    assert np.allclose([b["l"][0] for b in blocks], [1, e(-2) + 1, e(-2) + 1 + e(-1)], atol=1e-15)
    assert np.allclose([b["o"][0, 0] for b in blocks], [10, 10 * e(-2) + 20, 10 * e(-2) + 20 + 30 * e(-1)])
    assert np.allclose([b["rescale"][0] for b in blocks], [0, e(-2), 1])
    w = np.array([e(1), e(3), e(2)]) / (e(1) + e(3) + e(2))
    assert abs(context[0, 0] - w @ [10, 20, 30]) < 1e-12
    # with the paper's spurious ⁻¹ on line 10 (flash-attention issue #991) the result is wrong:
    o = 10.0 / e(1 - 3) + 20.0
    o = o / 1.0 + 30 * e(2 - 3)
    assert abs(o / blocks[-1]["l"][0] - context[0, 0]) > 1
    # a temperature and a bias fold into the scores: scale 1/T, bias added (here T = 2, bias −1 on key 0)
    context, _ = online_softmax_attention(np.array([[1.0]]), np.array([[1.0], [3.0], [2.0]]),
                                          np.array([[10.0], [20.0], [30.0]]), 2, scale=0.5,
                                          bias=np.array([[-1.0, 0.0, 0.0]]))
    w = np.array([e(0.5 - 1), e(1.5), e(1.0)]) / (e(-0.5) + e(1.5) + e(1.0))
    assert abs(context[0, 0] - w @ [10, 20, 30]) < 1e-12


# ---- the claims, as properties -------------------------------------------------------------------------

def plain(c: Controls):
    return forward_head(c.config, c.head)


@PROPERTY
@given(controls())
def test_first_block_starts_from_nothing(c):
    lesson = online_softmax_trace(c.config, c.block_size, c.block, c.head)
    s_b = lesson["s_b"].value
    assert holds("os_first_block", c) == (c.block == 0)
    if c.block == 0:
        assert np.all(np.isneginf(lesson["m_prev"].value)) and not lesson["l_prev"].value.any()
        assert not lesson["o_prev"].value.any()
        seen = np.isfinite(s_b).any(axis=1)
        assert np.array_equal(lesson["m"].value[seen], s_b[seen].max(axis=1))   # m′ is the block's own row max


@PROPERTY
@given(controls())
def test_rescaled_rows_are_exactly_those_whose_maximum_rose(c):
    """Computed the plain way: the max over keys before the block against the max through it, of what the
    forward pass's softmax reads."""
    lesson = online_softmax_trace(c.config, c.block_size, c.block, c.head)
    s, _, _ = plain(c)
    start, stop = lesson.facts["keys"]
    before = s[:, :start].max(axis=1, initial=-np.inf)
    after = s[:, :stop].max(axis=1, initial=-np.inf)
    rose = np.flatnonzero(np.isfinite(before) & (after > before))
    assert lesson.facts["rescaled"] == tuple(rose)
    assert holds("os_rescaled", c) == bool(rose.size)
    mask, B = head_of(c.config, c.head).mask, c.block_size                # a row's tile in block b skipped: all masked
    skipped = np.array([mask is not None and not mask[(i // B) * B:(i // B + 1) * B, start:stop].any()
                        for i in range(lesson.n)], dtype=bool)
    seen_computed = np.isfinite(before) & ~skipped
    assert holds("os_not_rescaled", c) == (c.block > 0 and not rose.size and bool(seen_computed.any()))
    assert holds("os_seen_all_skipped", c) == (c.block > 0 and bool(np.isfinite(before).any())
                                               and not seen_computed.any())
    if holds("os_seen_all_skipped", c):              # the words: every row that had seen a key is in a skipped tile
        seen = np.isfinite(before)
        assert skipped[seen].all() and np.array_equal(lesson["l"].value[seen], lesson["l_prev"].value[seen])
    f, l_prev = lesson["rescale"].value, lesson["l_prev"].value
    assert np.array_equal(np.isneginf(after), np.isneginf(lesson["m"].value))
    finite = np.isfinite(after)
    assert np.allclose(lesson["m"].value[finite], after[finite], atol=1e-12, rtol=0)
    for i in rose:                                    # the words: multiplied by e^(m − m′) < 1, then added to
        assert f[i] < 1 and abs(f[i] - math.exp(before[i] - after[i])) < 1e-12
        terms = np.exp(s[i, start:stop] - after[i])
        assert abs(lesson["l"].value[i] - (f[i] * l_prev[i] + terms.sum())) < 1e-9 * max(1, lesson["l"].value[i])
    if holds("os_not_rescaled", c):                  # the words: factor 1 for every row that had seen a key
        seen = seen_computed
        assert seen.any() and np.all(after[seen] == before[seen])
        assert np.all(f[seen] == 1.0)
        assert np.all(lesson["l"].value[seen] >= l_prev[seen])


@PROPERTY
@given(controls())
def test_rows_that_see_their_first_keys_start_from_nothing(c):
    """os_first_seen, computed the plain way: the rows with no visible key before the block and one in it."""
    lesson = online_softmax_trace(c.config, c.block_size, c.block, c.head)
    s, _, _ = plain(c)
    start, stop = lesson.facts["keys"]
    before = s[:, :start].max(axis=1, initial=-np.inf)
    now = s[:, start:stop].max(axis=1, initial=-np.inf)
    first = np.flatnonzero(np.isneginf(before) & np.isfinite(now))
    assert lesson.facts["first_seen"] == tuple(first)
    assert holds("os_first_seen", c) == (c.block > 0 and bool(first.size))
    for i in first:                                   # the words: from −∞ to the row maximum; 0 times ℓ = 0, o = 0
        assert np.isneginf(lesson["m_prev"].value[i]) and abs(lesson["m"].value[i] - now[i]) < 1e-12
        assert lesson["rescale"].value[i] == 0 and lesson["l_prev"].value[i] == 0
        assert not lesson["o_prev"].value[i].any()
        assert abs(lesson["l"].value[i] - np.exp(s[i, start:stop] - now[i]).sum()) < 1e-12


def tiles_hidden(mask, n: int, B: int, blocks) -> list[list[bool]]:
    return [[mask is not None and not mask[r:r + B, c0:c1].any() for c0, c1 in blocks] for r in range(0, n, B)]


@PROPERTY
@given(controls())
def test_skipped_tiles_are_the_fully_masked_ones(c):
    lesson = online_softmax_trace(c.config, c.block_size, c.block, c.head)
    mask = head_of(c.config, c.head).mask
    n, B = lesson.n, c.block_size
    blocks = lesson.facts["blocks"]
    masked = tiles_hidden(mask, n, B, blocks)
    count = int(np.sum(masked))
    assert lesson.facts["n_skipped"] == count and lesson.facts["n_tiles"] == len(masked) * len(blocks)
    assert holds("os_skipped", c) == (count > 0)
    words = skipped_text(c)                           # the words shown, their counts and grammar
    tiles = len(masked) * len(blocks)
    if count == 0:
        assert words == "No tile was skipped: " + ("the one tile holds" if tiles == 1 else "every B_r × B_c tile holds") \
            + " at least one score its queries may use"
    else:
        assert words.startswith("The one tile has every score masked" if tiles == 1 else
                                f"{count} of the {tiles} tiles {'has' if count == 1 else 'have'} every score masked")
        assert (": nothing in it is computed" in words) == (count == 1) and ("them" in words) == (count > 1), words
    if c.config.mask == "none":
        assert count == 0
    rows = [(r, min(r + B, n) - 1) for r in range(0, n, B)]
    if c.config.mask == "causal":                    # the words: the tiles entirely above the diagonal
        assert count == sum(c0 > last for _, last in rows for c0, _ in blocks)
    if c.config.mask == "sliding_window":            # … above it, or entirely more than W − 1 keys back
        w = c.config.window
        assert count == sum(c0 > last or first - (c1 - 1) > w - 1 for first, last in rows for c0, c1 in blocks)
    if c.config.mask == "padding":                   # … every key in them padding (or no key left at all)
        assert count == sum(set(range(c0, c1)) <= set(c.config.padding) for _ in rows for c0, c1 in blocks)
    here = lesson.facts["skipped_here"]
    assert holds("os_skipped_here", c) == bool(here)
    for i in here:                                    # the words: m, ℓ, o did not change
        assert lesson["m"].value[i] == lesson["m_prev"].value[i] or np.isneginf(lesson["m"].value[i])
        assert lesson["l"].value[i] == lesson["l_prev"].value[i]
        assert np.array_equal(lesson["o"].value[i], lesson["o_prev"].value[i])


@PROPERTY
@given(controls())
def test_fully_masked_rows_give_zero_not_nan(c):
    lesson = online_softmax_trace(c.config, c.block_size, c.block, c.head)
    mask = head_of(c.config, c.head).mask
    empty = [] if mask is None else list(np.flatnonzero(~mask.any(axis=1)))
    assert list(lesson.facts["empty_rows"]) == empty and holds("os_empty_rows", c) == bool(empty)
    assert not np.isnan(lesson["context"].value).any()
    _, weights, _ = plain(c)
    for i in empty:                                   # the words: ℓ stays 0, C_i = 0, as the forward pass's row of 0
        assert lesson["l_final"].value[i] == 0 and not lesson["context"].value[i].any()
        assert not weights[i].any()
        assert np.isneginf(lesson["lse"].value[i]) and np.isneginf(lesson["logsumexp"].value[i])


@PROPERTY
@given(controls())
def test_block_larger_than_n_is_one_block_and_still_right(c):
    lesson = online_softmax_trace(c.config, c.block_size, c.block, c.head)
    n = lesson.n
    assert holds("os_one_block", c) == (c.block_size >= n)
    if c.block_size >= n:                            # the words: one block, the plain softmax, exact
        assert lesson.facts["n_blocks"] == 1 and lesson.facts["keys"] == (0, n)
        assert np.abs(lesson["context"].value - plain(c)[2]).max() < 1e-12
        assert lesson.facts["held"] == lesson.facts["full"] == n * n


@PROPERTY
@given(controls())
def test_every_score_function_is_computed_block_by_block(c):
    """The words of os_any_score: each score is made from its query and its key alone, so the blocks (made
    one at a time, from the block's keys only) give the forward pass's weights; said for additive and
    bilinear, FlashAttention's own score being the dot product."""
    assert holds("os_any_score", c) == (c.config.score in ("additive", "bilinear"))
    lesson = online_softmax_trace(c.config, c.block_size, c.block, c.head)
    reads, _, context = plain(c)
    start, stop = lesson.facts["keys"]
    s_b = lesson["s_b"].value
    assert np.array_equal(np.isneginf(s_b), np.isneginf(reads[:, start:stop]))
    assert np.allclose(np.where(np.isfinite(s_b), s_b, 0), np.where(np.isfinite(s_b), reads[:, start:stop], 0),
                       atol=1e-12, rtol=0)
    assert np.abs(lesson["context"].value - context).max() < 1e-12


def test_every_claim_of_the_page_is_registered_with_a_proof_here():
    assert set(MINE) == {"os_first_block", "os_rescaled", "os_not_rescaled", "os_seen_all_skipped", "os_first_seen",
                         "os_skipped", "os_skipped_here",
                         "os_empty_rows", "os_one_block", "os_any_score"}
    source = open(__file__, encoding="utf-8").read()
    for key in MINE:
        assert re.search(rf"^def {CLAIMS[key].proof.split('::')[1]}\(", source, flags=re.M), key


# ---- the symbols: the one softmax reads, built from the settings (docs/notation.md) ----------------------

@pytest.mark.parametrize("config, heads, matrix, entry", [
    (Config(), False, "Ŝ", "Ŝ_ij"),
    (Config(mask="causal"), False, "S̃", "S̃_ij"),
    (Config(score="dot"), False, "S", "S_ij"),
    (Config(score="dot", temperature=2.0), False, "S / 2", "S_ij / 2"),
    (Config(positional="alibi"), False, "Ŝ + B", "(Ŝ + B)_ij"),
    (Config(positional="alibi", temperature=0.5, n_heads=2), True, "(Ŝ_h + B_h) / 0.5", "(Ŝ_h + B_h)_ij / 0.5"),
    (Config(positional="alibi", mask="causal", n_heads=2), True, "S̃_h", "(S̃_h)_ij"),
    (Config(score="additive", mask="sliding_window", temperature=3.0), False, "S̃ / 3", "S̃_ij / 3"),
])
def test_the_symbol_is_the_one_softmax_reads_under_the_settings(config, heads, matrix, entry):
    assert matrix_symbol(config, heads) == matrix and entry_symbol(config, heads) == entry
    lesson = online_softmax_trace(config, 2, 0)
    assert lesson.facts["reads_text"] == matrix_symbol(config, config.n_heads > 1)
    assert f"e^{{{entry_symbol(config, heads, latex=True)}}}" in recurrence(config, heads)


def test_a_mask_makes_every_symbol_s_tilde_and_an_unscaled_score_has_no_s_hat():
    """Issue 20's #7: with a mask the numbers are S̃'s; with the dot score there is no Ŝ anywhere."""
    for config in (Config(mask="causal"), Config(mask="causal", positional="rope", n_heads=2)):
        text = recurrence(config, config.n_heads > 1) + source_text(config, 0)
        assert r"e^{\hat S" not in text and "S̃" in text
        lesson = online_softmax_trace(config, 2, 1)
        notes = " ".join(explain(lesson, key, cell).note + explain(lesson, key, cell).text
                         for key, cell in (("lse", (2,)), ("logsumexp", (2,)), ("context", (2, 0)), ("s_b", (2, 0))))
        assert "Ŝ" not in notes.replace("Ŝ_ij = q", "") and "S̃" in notes
    config = Config(score="dot", mask="causal")
    text = recurrence(config, False) + source_text(config, 0)
    lesson = online_softmax_trace(config, 1, 1)
    text += " ".join(explain(lesson, k, c).note for k, c in (("s_b", (1, 0)), ("lse", (0,)), ("context", (1, 0))))
    assert "Ŝ" not in text and r"\hat S" not in text


def test_the_source_sentence_names_the_settings():
    config = Config(positional="rope", n_heads=4, n_kv_heads=2, mask="sliding_window", window=2, temperature=2.0)
    text = source_text(config, 3)
    for part in ("head h = 3", "KV head ⌊h/g⌋ = ⌊3/2⌋ = 1", "q^R_i", "k^R_j rotated by RoPE", "W = 2",
                 "T = 2", "S̃_h / 2", "C_h"):
        assert part in text, part
    assert "temperature 1" not in text and "not the sidebar" not in text
    assert "plus ALiBi's bias B" in source_text(Config(positional="alibi"), 0)
    assert "the padding mask (key 1 hidden)" in source_text(Config(mask="padding", padding=(1,)), 0)
    assert "the padding mask (keys 0, 2 hidden)" in source_text(Config(mask="padding", padding=(0, 2)), 0)
    heads = Config(positional="rope", n_heads=4, n_kv_heads=2, score="additive")         # each head its own v, W_1, W_2
    assert "v^(h)ᵀ tanh(W_1^(h)ᵀ q^R_i + W_2^(h)ᵀ k^R_j)" in source_text(heads, 0)
    assert "q_iᵀ W^(h) k_j" in source_text(Config(n_heads=2, score="bilinear"), 1)
    assert "vᵀ tanh(W_1ᵀ q_i + W_2ᵀ k_j)" in source_text(Config(score="additive"), 0)     # one head: no superscript


# ---- hostile inputs -----------------------------------------------------------------------------------

@pytest.mark.parametrize("bad", [0, -1, True, 2.5, "2", None])
def test_a_block_size_that_is_no_whole_number_of_keys_is_refused_with_a_message(bad):
    with pytest.raises(ConfigError, match="at least 1"):
        online_softmax_trace(Config(), bad, 0)


def test_a_block_outside_the_blocks_is_refused_with_a_message():
    with pytest.raises(ConfigError, match=r"0 … 1"):
        online_softmax_trace(Config(), 2, 2)


def test_the_settings_score_and_temperature_change_the_lesson_as_they_change_the_forward_pass():
    """The old page always used q_i · k_j / √d_k at T = 1; now T and the score function are the sidebar's."""
    a = online_softmax_trace(Config(), 2, 1)
    b = online_softmax_trace(Config(temperature=2.0), 2, 1)
    assert np.allclose(b["s_b"].value, a["s_b"].value / 2, atol=1e-12)
    assert np.abs(b["context"].value - a["context"].value).max() > 1e-3
    c = online_softmax_trace(Config(score="additive"), 2, 1)
    assert np.abs(c["context"].value - forward_head(Config(score="additive"))[2]).max() < 1e-12


# ---- every number's arithmetic ---------------------------------------------------------------------------

EXPLAINED = [config_of(5, "causal", heads=2, positional="rope"), config_of(4, "padding", (0, 2), score="additive"),
             config_of(3, "padding", (0, 1, 2), heads=2, n_kv_heads=1), Config(),
             config_of(4, "sliding_window", window=2, heads=3, positional="alibi", temperature=2.0),
             config_of(4, score="bilinear", temperature=0.5), config_of(4, "causal", score="dot", positional="alibi")]


@pytest.mark.parametrize("config", EXPLAINED, ids=range(len(EXPLAINED)))
def test_every_explanation_reproduces_its_cell(config):
    for block_size in (1, 2, 5):
        h = config.n_heads - 1
        for b in range(online_softmax_trace(config, block_size, 0, h).facts["n_blocks"]):
            lesson = online_softmax_trace(config, block_size, b, h)
            for key in lesson.keys():
                value = lesson[key].value
                for cell in np.ndindex(value.shape):
                    e = explain(lesson, key, cell)
                    assert e.value == value[cell] or abs(e.value - value[cell]) <= 1e-9 * max(1, abs(value[cell])), \
                        (key, cell, e.text)
                    assert "nan" not in e.text.lower(), e.text


def test_the_mask_explainer_follows_the_window_rule():
    """The old explainer read a window mask as padding ("key 3 is not padding") and gave 1 for hidden keys."""
    config = config_of(5, "sliding_window", window=2)
    lesson = online_softmax_trace(config, 2, 0)
    e = explain(lesson, "mask", (4, 1))
    assert e.value == 0.0 == lesson["mask"].value[4, 1] and "window" in e.text and "padding" not in e.text


def test_explanations_show_the_recurrence_with_its_numbers():
    config = config_of(4)
    lesson = online_softmax_trace(config, 1, 1)
    i = lesson.facts["rescaled"][0] if lesson.facts["rescaled"] else 0
    m_old, m_new = lesson["m_prev"].value[i], lesson["m"].value[i]
    m = explain(lesson, "m", (i,))
    assert "max" in m.symbolic and fmt(m_old, 3, False) in m.text
    l = explain(lesson, "l", (i,))
    assert r"e^{m_{%d} - m_{%d}'}" % (i, i) in l.symbolic and fmt(lesson["l_prev"].value[i], 3, False) in l.text
    c = explain(lesson, "context", (i, 0))
    o, l_final = lesson["o_final"].value[i, 0], lesson["l_final"].value[i]
    assert fmt(o, 3, False) in c.text and fmt(l_final, 3, False) in c.text
    assert abs(c.value - o / l_final) < 1e-15
    r = explain(lesson, "rescale", (i,))
    assert abs(r.value - math.exp(m_old - m_new)) < 1e-15
    # the final division names what was summed: e^((S_b)_ij − m_i), S_b being what softmax reads (S̃ / T here)
    t = online_softmax_trace(Config(mask="causal", temperature=0.5), 2, 1)
    note = explain(t, "context", (1, 1)).note
    assert ("o_i summed e^((S_b)_ij − m_i) v_j and ℓ_i summed e^((S_b)_ij − m_i) over every block b" in note
            and "Σ_j A_ij v_j with A = softmax(S̃ / 0.5)" in note and "e^(S − m)" not in note), note


def test_a_score_explanation_shows_rope_alibi_and_t_with_their_numbers():
    config = config_of(5, "causal", heads=2, positional="alibi", temperature=2.0)
    lesson = online_softmax_trace(config, 2, 1, 1)
    e = explain(lesson, "s_b", (3, 0))                        # query 3, key 2
    slope = run_forward(config).facts["alibi_slopes"][1]
    assert r"(B_h)_{3,2}" in e.symbolic and f"- {fmt(slope, 3)} \\cdot |3 - 2|" in e.substituted
    assert e.symbolic.endswith("/ 2") and "(S̃_h)_3,2 / 2" in e.note
    assert "slope m_h = 1/256 of head h = 1" in e.note and slope == 1 / 256
    rope = online_softmax_trace(Config(positional="rope"), 2, 1)
    e = explain(rope, "s_b", (3, 1))
    assert "q^R_{3}" in e.symbolic and "k^R_{3}" in e.symbolic and "rotated" in e.note
    assert "forward pages (head 0)" not in e.note             # the old, false sentence (#6)
    additive = online_softmax_trace(Config(positional="rope", n_heads=4, n_kv_heads=2, score="additive"), 1, 2, 1)
    e = explain(additive, "s_b", (0, 0))                      # head 1's own parameters: a superscript (1)
    assert e.symbolic.startswith(r"(S_{2})_{0,2} = v^{(1)}{}^\top \tanh(W_1^{(1)}{}^\top q^R_{0} + W_2^{(1)}{}^\top k^R_{2})")
    assert "v^(1)ᵀ tanh(W_1^(1)ᵀ q^R_0 + W_2^(1)ᵀ k^R_2)" in e.text
    assert explain(additive, "w_1", (0, 0)).symbolic.startswith(r"(W_1^{(1)})_{0,0}")
    bilinear = online_softmax_trace(Config(n_heads=2, score="bilinear"), 1, 1, 1)
    assert r"q_{0}^\top W^{(1)}\, k_{1}" in explain(bilinear, "s_b", (0, 0)).symbolic
    one = online_softmax_trace(Config(score="additive"), 1, 1)
    assert r"v^\top \tanh(W_1^\top q_{0}" in explain(one, "s_b", (0, 0)).symbolic   # one head: none


def test_rows_text():
    assert rows_text(("a", "b", "c"), ()) == "" and rows_text(("a", "b"), (1,)) == "row 1 (“b”)"
    assert rows_text(("a", "b", "c"), (0, 2)) == "rows 0 (“a”) and 2 (“c”)"


# ---- the page ------------------------------------------------------------------------------------------

def text_of(at) -> str:
    parts = [e.value for kind in ("markdown", "caption", "subheader", "error", "info") for e in at.get(kind)]
    return "\n".join(parts)


def number_after(label: str, text: str) -> float:
    return float(re.search(re.escape(label) + r"\s*=\s*([0-9.e+-]+)", text).group(1).rstrip("."))


CODE_NAMES = re.compile(r"`|\.py\b|scaled_dot_product_attention|torch\.|sliding_window|online_softmax_attention|"
                        r"logsumexp_j|\(hypothesis\)|at temperature 1|not the sidebar")


def test_page_at_defaults_shows_the_recurrence_and_the_live_checks():
    at = open_page(PAGE)
    no_exception(at)
    assert not at.error
    keys = [s.key for s in at.slider if s.key.startswith("online_softmax.")]
    assert keys == ["online_softmax.block_size", "online_softmax.block"]          # one head: no head control
    recurrence_ = "\n".join(formulas(at))
    assert "^{-1}" not in recurrence_ and "e^{m_i - m_i'}" in recurrence_ and r"e^{\hat S_{ij}}" in recurrence_
    text = text_of(at).replace("**", "")
    assert "#991" in text
    assert number_after("max |C − A V|", text) < 1e-12
    assert number_after("max |(m_i + log ℓ_i) − log Σ_j e^(Ŝ_ij)|", text) < 1e-12
    assert "n_q × B_c = 4 × 1 = 4" in text and "n_q × n_k = 16" in text and "B_c at a time" in text
    assert at.slider(key="online_softmax.block_size").label == "Block size B_c (keys per block)"
    assert not CODE_NAMES.search(text), CODE_NAMES.search(text)
    assert shown_outside(text, Controls(Config(), 1, 1), about="online_softmax") == []


def test_page_follows_the_block_size_and_the_block():
    at = open_page(PAGE)
    at.slider(key="online_softmax.block_size").set_value(2).run()
    no_exception(at)
    text = text_of(at)
    assert "n_q × B_c = 4 × 2 = 8" in text and "Block 1: keys 2 … 3" in text
    assert "Which tiles are computed (B_r × B_c = 2 × 2 scores each, B_r = B_c here)" in text.replace("**", "")
    assert "one B_r × B_c tile (B_r = B_c = 2 here: 2 × 2 = 4 scores)" in text
    assert at.slider(key="online_softmax.block").max == 1
    at.slider(key="online_softmax.block").set_value(0).run()
    assert "Block 0 is the first" in text_of(at)
    frame = at.dataframe[0].value                       # the state table after block 0: m′ is the row max of S_0
    lesson = online_softmax_trace(Config(), 2, 0)
    assert [float(x.split()[-1]) for x in frame["c1"]] == pytest.approx(lesson["m"].value, abs=1e-3)


def test_page_under_rope_causal_and_two_heads_is_the_forward_pass_s_head():
    """Issue 20: under RoPE and a mask the page's numbers are the forward pass's S̃ and C_h, said as S̃."""
    query = {"positional": "rope", "mask": "causal", "n_heads": "2"}
    at = open_page(PAGE, query=query)
    at.slider(key="online_softmax.head").set_value(1).run()
    no_exception(at)
    config = Config(positional="rope", mask="causal", n_heads=2)
    text = text_of(at).replace("**", "")
    assert "head h = 1 of the forward pass's H = 2" in text and "rotated by RoPE" in text
    assert number_after("max |C − A_h V_h|", text) < 1e-12
    assert number_after("max |(m_i + log ℓ_i) − log Σ_j e^((S̃_h)_ij)|", text) < 1e-12
    assert "softmax(Ŝ)" not in text and "logsumexp_j Ŝ" not in text
    final = at.dataframe[1].value
    _, _, context = forward_head(config, 1)
    assert [float(x) for x in final["c1"]] == pytest.approx(context[:, 0], abs=1e-3)
    assert shown_outside(text, Controls(config, 1, 1, 1), about="online_softmax") == []
    assert at.session_state["s.claims"]["online_softmax"] == Controls(config, 1, 1, 1)


def test_page_with_a_causal_mask_says_how_many_tiles_were_skipped():
    at = open_page(PAGE, query={"mask": "causal"})
    at.slider(key="online_softmax.block_size").set_value(2).run()
    text = text_of(at)
    assert ("1 of the 4 tiles has every score masked (with the causal mask: entirely above the diagonal, the tiles "
            "FlashAttention skips)") in text
    assert "tiles of rows 0 (“i”) and 1 (“love”) are skipped" in text          # block 1 = keys 2, 3
    assert shown_outside(text, Controls(Config(mask="causal"), 2, 1), about="online_softmax") == []


def test_page_without_a_mask_says_no_tile_was_skipped_and_shows_no_skip_sentence():
    at = open_page(PAGE, query={"sentence": "the cat sat on a mat"})
    for B in (1, 4, 6):
        at.slider(key="online_softmax.block_size").set_value(B).run()
        text = text_of(at)
        assert "No tile was skipped" in text
        config = Config(sentence="the cat sat on a mat")
        b = at.slider(key="online_softmax.block").value if B < 6 else 0
        assert shown_outside(text, Controls(config, B, b), about="online_softmax") == []


def test_page_with_every_key_padded_gives_zero_and_says_why():
    at = open_page(PAGE, query={"mask": "padding", "padding": "0,1,2,3"})
    no_exception(at)
    text = text_of(at)
    assert "may see no key at all" in text and "nan" not in text.lower().replace("0/0 = nan", "")
    assert "16 of the 16 tiles" in text and "(every key in them is padding;" in text        # B = 1
    at.slider(key="online_softmax.block_size").set_value(2).run()
    assert "4 of the 4 tiles" in text_of(at) and not at.error
    at.slider(key="online_softmax.block_size").set_value(4).run()              # one tile, never computed
    text = text_of(at)
    assert "S_0 is never computed: every score in it is masked." in text and "made only now" not in text
    assert ("The one tile has every score masked (every key in it is padding; FlashAttention is given the sequences "
            "without their padding, so it never sees these keys): nothing in it is computed, and m_i, ℓ_i, o_i pass "
            "through it unchanged") in text and "of the 1 tiles" not in text


def test_a_block_whose_seen_rows_are_all_skipped_says_so():
    """W = 1, B_c = 2, block 1: rows 0 and 1, which saw their keys in block 0, are in skipped tiles; rows 2 and 3
    see their first keys. "No row that had already seen a key … only added to" would be about rows left unchanged."""
    query = {"mask": "sliding_window", "window": "1", "online_softmax.block_size": "2", "online_softmax.block": "1"}
    at = open_page(PAGE, query=query)
    no_exception(at)
    text = text_of(at)
    assert "The rows that had seen a key are all in skipped tiles here." in text
    assert "No row that had already seen a key" not in text and "only added to" not in text
    assert "tiles of rows 0 (“i”) and 1 (“love”) are skipped" in text
    assert "S_1 holds columns 2 … 3 of S̃, made only now (the rows of its skipped tiles are never computed" in text
    assert "W = 1 key hides" in text and "W = 1 keys" not in text


def test_page_keeps_a_block_size_larger_than_a_shortened_sentence_and_says_it_is_one_block():
    at = open_page(PAGE)
    at.slider(key="online_softmax.block_size").set_value(4).run()
    at.sidebar.text_input(key="w.sentence").set_value("I love").run()
    no_exception(at)
    text = text_of(at)
    assert at.slider(key="online_softmax.block_size").value == 4
    assert "B_c = 4 ≥ n = 2: every key fits in one block" in text and "still exact" in text
    assert ("n_q × n_k = 2 × 2 = 4 score entries exist at a time (B_c = 4 is more than the n_k = 2 keys, so they all "
            "fit in one block: every query row against all of them); the plain") in text.replace("**", "")
    assert ") (" not in text.replace("**", "") and "B × B" not in text and "B_r × B_c tile" not in text   # one tile
    assert "one tile (all 2 × 2 = 4 scores here, as B_c ≥ n)" in text and "the one tile holds" in text
    assert "n_q × B_c = 2 × 2" not in text.replace("**", "")                     # B_c is 4, not 2
    assert number_after("max |C − A V|", text.replace("**", "")) < 1e-12


def test_page_survives_a_block_size_of_zero():
    at = open_page(PAGE)
    at.session_state["online_softmax.block_size"] = 0
    at.run()
    no_exception(at)
    assert at.slider(key="online_softmax.block_size").value >= 1
    assert "n_q × B_c = 4 × 1" in text_of(at) or "block size B_c must be a whole number" in messages(at)


def test_an_additive_score_is_said_in_sight_with_one_click_to_the_scaled_dot_product():
    at = open_page(PAGE, query={"score": "additive"})
    no_exception(at)
    assert "which the additive score is too" in text_of(at)
    at.button(key="online_softmax.use_scaled_dot").click().run()
    no_exception(at)
    assert at.session_state["s.score"] == "scaled_dot" and "which the" not in text_of(at)
    assert r"e^{\hat S_{ij}}" in "\n".join(formulas(at))


def test_the_checked_box_says_what_the_numbers_were_checked_against_in_words():
    at = open_page(PAGE, query={"mask": "causal", "positional": "alibi", "n_heads": "2", "temperature": "2"})
    at.session_state["online_softmax.checked"] = True
    at.run()
    no_exception(at)
    box = next(e for e in at.expander if e.label == "How this page is checked")
    text = "\n".join(m.value for m in box.markdown).replace("**", "")
    assert number_after("max |C − PyTorch|", text) < 1e-12
    assert number_after("max |(m_i + log ℓ_i) − PyTorch|", text) < 1e-12
    assert "ALiBi's bias and mask" in text and "1/(T√d_k)" in text
    assert not CODE_NAMES.search(text), CODE_NAMES.search(text)
    assert len([e for e in at.expander if e.label == "How this page is checked"]) == 1


def test_a_link_opens_the_same_view_with_the_same_numbers_and_cell():
    """A session sets the sidebar and the page's controls and selects a cell of the state table; the link it
    writes opens the same controls, numbers and explanation in a new session."""
    at = open_page(PAGE, query={"positional": "rope", "mask": "causal", "n_heads": "2"})
    at.slider(key="online_softmax.block_size").set_value(2).run()
    at.slider(key="online_softmax.block").set_value(1).run()
    at.slider(key="online_softmax.head").set_value(1).run()
    from ui import page_state
    at.session_state["p.cell"] = (PAGE, "online_softmax.state", 3, 3)     # as a click on row 3, column ℓ_i′ records
    at.run()
    no_exception(at)
    link = dict(at.query_params)
    assert link["online_softmax.block_size"] == "2" and link["online_softmax.head"] == "1"
    assert link["cell"] == "online_softmax.state.3.3" and "online_softmax.block" not in link      # b = 1: the default
    made = [m.value for m in at.markdown if m.value.startswith("**How")]
    fresh = open_page(PAGE, query=link)
    no_exception(fresh)
    assert [fresh.slider(key=k).value for k in ("online_softmax.block_size", "online_softmax.block",
                                                "online_softmax.head")] == [2, 1, 1]
    assert [m.value for m in fresh.markdown if m.value.startswith("**How")] == made
    assert made and "How ℓ\\_3' was made" in made[0]
    lesson = online_softmax_trace(Config(positional="rope", mask="causal", n_heads=2), 2, 1, 1)
    assert fmt(lesson["l"].value[3], 6) in made[0]
    assert text_of(fresh) == text_of(at)
    assert page_state.parse_cell(link["cell"]) == ("online_softmax.state", 3, 3)


WALK = {"defaults": (Config(), 0),
        "rope-gqa-window2-h3": (Config(positional="rope", n_heads=4, n_kv_heads=2, mask="sliding_window", window=2), 3),
        "alibi3-causal-T2-h2": (config_of(5, "causal", heads=3, positional="alibi", temperature=2.0), 2),
        "padding-all-additive": (Config(mask="padding", padding=(0, 1, 2, 3), score="additive"), 0),
        "window9-dot-bias-h1": (Config(positional="alibi", mask="sliding_window", window=9, score="dot", bias=True,
                                       n_heads=2, n_kv_heads=1), 1),
        "causal-6-T2": (Config(sentence="the cat sat on a mat", mask="causal", temperature=2.0, positional="none"), 0)}


@pytest.mark.parametrize("config, head", WALK.values(), ids=WALK.keys())
def test_no_sentence_of_the_page_is_shown_where_it_does_not_hold(config, head):
    """The page under a few settings, every block size and block: its claims appear only where they hold,
    and no code name is in its text."""
    from tests.test_claims import page_text, walk
    for _, _, at in walk(config, [PAGE]):
        if config.n_heads > 1:
            at.slider(key="online_softmax.head").set_value(head).run()
        n = online_softmax_trace(config, 1, 0).n
        for B in range(1, n + 1):
            at.slider(key="online_softmax.block_size").set_value(B).run()
            for b in range(-(-n // B)):
                if b or B < n:
                    at.slider(key="online_softmax.block").set_value(b).run()
                no_exception(at)
                assert not at.error, messages(at)
                text = page_text(at)
                assert at.session_state["s.claims"]["online_softmax"] == Controls(config, B, b, head)
                assert shown_outside(text, Controls(config, B, b, head), about="online_softmax") == [], (B, b)
                assert shown_outside(text, config) == [], (B, b)
                assert not CODE_NAMES.search(text_of(at)), (B, b, CODE_NAMES.search(text_of(at)))


def test_a_link_with_a_block_or_head_beyond_the_sentence_is_fitted_and_the_address_bar_says_so():
    at = open_page(PAGE, query={"online_softmax.block_size": "6", "online_softmax.block": "3",
                                "online_softmax.head": "5"})
    no_exception(at)
    text = text_of(at).replace("**", "")
    assert "n_q × n_k = 4 × 4 = 16 score entries exist at a time (B_c = 6 is more than the n_k = 4 keys" in text
    assert "One key block: b = 0." in text and "Block 0: keys 0 … 3" in text
    assert dict(at.query_params) == {"online_softmax.block_size": "6", "online_softmax.block": "0"}   # h = 0: default


def test_a_link_to_a_cell_of_s_b_explains_that_score_with_its_numbers():
    query = {"positional": "rope", "mask": "causal", "n_heads": "2", "online_softmax.block_size": "2",
             "online_softmax.head": "1", "cell": "online_softmax.hm.s_b.3.0"}
    at = open_page(PAGE, query=query)
    no_exception(at)
    made = [m.value for m in at.markdown if m.value.startswith("**How")]
    assert len(made) == 1 and "How S\\_1\\[3,2\\] was made" in made[0]
    lesson = online_softmax_trace(Config(positional="rope", mask="causal", n_heads=2), 2, 1, 1)
    assert fmt(lesson["s_b"].value[3, 0], 6) in made[0] and "q^R_{3}" in made[0]
    assert dict(at.query_params) == query                          # the link stays as it came
