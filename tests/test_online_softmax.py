"""The online-softmax page: its lesson against plain softmax, torch SDPA and torch.logsumexp; its claims as
properties; every clicked number's arithmetic; hostile block sizes; the page through AppTest."""
from __future__ import annotations

import math
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from attention_core import Config, ConfigError, online_softmax_attention, scaled_dot_product_attention
from attention_core.claims import CLAIMS, holds, say, shown_outside
from attention_core.explain import explain, fmt
from attention_core.lesson_online_softmax import (Controls, head_zero, online_softmax_trace, rows_text,
                                                  run_blocks)
from tests.apptest_util import formulas, messages, no_exception, open_page

PAGE = "app_pages/43_online_softmax.py"
WORDS = "the cat sat on a mat while my dog ate every red apple".split()
MINE = sorted(k for k, c in CLAIMS.items() if c.about == "online_softmax")


def config_of(n: int, mask: str = "none", padding=(), heads: int = 1, d_k: int = 3, seed: int = 0) -> Config:
    return Config(sentence=" ".join(WORDS[:n]), embedding="random", weights="random", d_model=6, d_k=d_k,
                  d_v=2, n_heads=heads, mask=mask, padding=tuple(padding), seed=seed)


@st.composite
def controls(draw):
    """Random settings of the page: a sentence of 1–8 words, a mask, heads, d_k, any B from 1 to n + 2, a block."""
    n = draw(st.integers(1, 8))
    mask = draw(st.sampled_from(["none", "causal", "padding"]))
    padding = draw(st.sets(st.integers(0, n - 1), max_size=n)) if mask == "padding" else ()
    config = config_of(n, mask, sorted(padding), draw(st.sampled_from([1, 2])), draw(st.integers(1, 4)),
                       draw(st.integers(0, 3)))
    block_size = draw(st.integers(1, n + 2))
    block = draw(st.integers(0, -(-n // block_size) - 1))
    return Controls(config, block_size, block)


PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def plain(config: Config):
    """(Ŝ with −∞ where masked (n, n), C by the plain softmax (n, d_v)): the reference, all at once."""
    _, q, k, v, mask = head_zero(config)
    s = q @ k.T / math.sqrt(q.shape[1])
    return (s if mask is None else np.where(mask, s, -np.inf)), scaled_dot_product_attention(q, k, v, mask)[0]


# ---- against the plain softmax and torch ---------------------------------------------------------------

CASES = [config_of(5), config_of(5, "causal"), config_of(5, "padding", (1, 2)), config_of(6, "causal", heads=2),
         config_of(4, "padding", (0, 1, 2, 3)), Config(), Config(mask="causal", n_heads=2)]


@pytest.mark.parametrize("config", CASES)
@pytest.mark.parametrize("block_size", [1, 2, 3, 7])
def test_context_equals_plain_softmax_and_torch_sdpa(config, block_size):
    import torch
    lesson = online_softmax_trace(config, block_size, 0)
    _, q, k, v, mask = head_zero(config)
    _, reference = plain(config)
    assert np.abs(lesson["context"].value - reference).max() < 1e-12
    assert lesson.facts["max_diff"] < 1e-12
    for b in range(lesson.facts["n_blocks"]):
        here = online_softmax_trace(config, block_size, b).facts
        assert here["s_diff"] < 1e-12 and here["s_same_mask"]
    t = torch.nn.functional.scaled_dot_product_attention(
        torch.tensor(q), torch.tensor(k), torch.tensor(v),
        attn_mask=None if mask is None else torch.tensor(mask)).numpy()
    seen = np.ones(len(q), bool) if mask is None else mask.any(axis=1)
    assert np.allclose(lesson["context"].value[seen], t[seen], atol=1e-12, rtol=0)
    assert np.all(lesson["context"].value[~seen] == 0)         # torch: NaN in older versions, 0 since 2.5 or so
    assert np.all(np.isnan(t[~seen]) | (t[~seen] == 0))


@pytest.mark.parametrize("config", CASES)
@pytest.mark.parametrize("block_size", [1, 2, 4])
def test_m_plus_log_l_is_the_rows_logsumexp_against_torch(config, block_size):
    import torch
    lesson = online_softmax_trace(config, block_size, 0)
    s, _ = plain(config)
    expected = torch.logsumexp(torch.tensor(s), dim=-1).numpy()            # −∞ for a row of −∞
    lse = lesson["lse"].value
    assert np.array_equal(np.isneginf(lse), np.isneginf(expected))
    finite = np.isfinite(expected)
    assert np.allclose(lse[finite], expected[finite], atol=1e-12, rtol=0)
    assert np.allclose(lesson["logsumexp"].value[finite], expected[finite], atol=1e-12, rtol=0)
    assert lesson.facts["lse_diff"] < 1e-12


@pytest.mark.parametrize("config", CASES[:5])
@pytest.mark.parametrize("block_size", [1, 2, 3])
def test_one_pass_over_all_rows_equals_the_core_per_query_block_with_its_skips(config, block_size):
    """run_blocks runs the recurrence once over all rows: the same m, ℓ, o (up to the last bits of the matrix
    product, which BLAS blocks differently for 1 row or n) as the core run per B-row query block (FlashAttention's
    tiles), and its tile map is the core's own skipped flags; a skipped row's state passes through exactly."""
    blocks, tiles, context = run_blocks(config, block_size)
    _, q, k, v, mask = head_zero(config)
    for r, r0 in enumerate(range(0, len(q), block_size)):
        rows = slice(r0, r0 + block_size)
        c, per = online_softmax_attention(q[rows], k, v, block_size, None if mask is None else mask[rows])
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


# ---- the claims, as properties -------------------------------------------------------------------------

@PROPERTY
@given(controls())
def test_first_block_starts_from_nothing(c):
    lesson = online_softmax_trace(c.config, c.block_size, c.block)
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
    """Computed the plain way: the max over keys before the block against the max through it."""
    lesson = online_softmax_trace(c.config, c.block_size, c.block)
    s, _ = plain(c.config)
    start, stop = lesson.facts["keys"]
    before = s[:, :start].max(axis=1, initial=-np.inf)
    after = s[:, :stop].max(axis=1, initial=-np.inf)
    rose = np.flatnonzero(np.isfinite(before) & (after > before))
    assert lesson.facts["rescaled"] == tuple(rose)
    assert holds("os_rescaled", c) == bool(rose.size)
    assert holds("os_not_rescaled", c) == (c.block > 0 and not rose.size)
    f, l_prev, o_prev = lesson["rescale"].value, lesson["l_prev"].value, lesson["o_prev"].value
    assert np.allclose(lesson["m"].value, after) or np.array_equal(np.isneginf(after), np.isneginf(lesson["m"].value))
    for i in rose:                                    # the words: multiplied by e^(m − m′) < 1, then added to
        assert f[i] < 1 and abs(f[i] - math.exp(before[i] - after[i])) < 1e-12
        terms = np.exp(s[i, start:stop] - after[i])
        assert abs(lesson["l"].value[i] - (f[i] * l_prev[i] + terms.sum())) < 1e-12
    if holds("os_not_rescaled", c):                  # the words: factor 1 for every row that had seen a key
        seen = np.isfinite(before)
        assert np.all(f[seen] == 1.0)
        assert np.all(lesson["l"].value[seen] >= l_prev[seen])


@PROPERTY
@given(controls())
def test_skipped_tiles_are_the_fully_masked_ones(c):
    lesson = online_softmax_trace(c.config, c.block_size, c.block)
    _, _, _, _, mask = head_zero(c.config)
    n, B = lesson.n, c.block_size
    blocks = lesson.facts["blocks"]
    masked = [[mask is not None and not mask[r:r + B, c0:c1].any() for c0, c1 in blocks] for r in range(0, n, B)]
    count = int(np.sum(masked))
    assert lesson.facts["n_skipped"] == count and lesson.facts["n_tiles"] == len(masked) * len(blocks)
    assert holds("os_skipped", c) == (count > 0)
    if c.config.mask == "none":
        assert count == 0 and say("os_skipped", c).startswith("No tile was skipped")
    if c.config.mask == "causal":                    # the tiles entirely above the diagonal
        above = sum(c0 > min(r + B, n) - 1 for r in range(0, n, B) for c0, _ in blocks)
        assert count == above
    here = lesson.facts["skipped_here"]
    assert holds("os_skipped_here", c) == bool(here)
    for i in here:                                    # the words: m, ℓ, o did not change
        assert lesson["m"].value[i] == lesson["m_prev"].value[i] or np.isneginf(lesson["m"].value[i])
        assert lesson["l"].value[i] == lesson["l_prev"].value[i]
        assert np.array_equal(lesson["o"].value[i], lesson["o_prev"].value[i])


@PROPERTY
@given(controls())
def test_fully_masked_rows_give_zero_not_nan(c):
    lesson = online_softmax_trace(c.config, c.block_size, c.block)
    _, _, _, _, mask = head_zero(c.config)
    empty = [] if mask is None else list(np.flatnonzero(~mask.any(axis=1)))
    assert list(lesson.facts["empty_rows"]) == empty and holds("os_empty_rows", c) == bool(empty)
    assert not np.isnan(lesson["context"].value).any()
    for i in empty:                                   # the words: ℓ stays 0, C_i = 0
        assert lesson["l_final"].value[i] == 0 and not lesson["context"].value[i].any()
        assert np.isneginf(lesson["lse"].value[i]) and np.isneginf(lesson["logsumexp"].value[i])


@PROPERTY
@given(controls())
def test_block_larger_than_n_is_one_block_and_still_right(c):
    lesson = online_softmax_trace(c.config, c.block_size, c.block)
    n = lesson.n
    assert holds("os_one_block", c) == (c.block_size >= n)
    if c.block_size >= n:                            # the words: one block, the plain softmax, exact
        assert lesson.facts["n_blocks"] == 1 and lesson.facts["keys"] == (0, n)
        _, reference = plain(c.config)
        assert np.abs(lesson["context"].value - reference).max() < 1e-12
        assert lesson.facts["held"] == lesson.facts["full"] == n * n


def test_every_claim_of_the_page_is_registered_with_a_proof_here():
    assert set(MINE) == {"os_first_block", "os_rescaled", "os_not_rescaled", "os_skipped", "os_skipped_here",
                         "os_empty_rows", "os_one_block"}
    source = open(__file__, encoding="utf-8").read()
    for key in MINE:
        assert re.search(rf"^def {CLAIMS[key].proof.split('::')[1]}\(", source, flags=re.M), key


# ---- hostile inputs -----------------------------------------------------------------------------------

@pytest.mark.parametrize("bad", [0, -1, True, 2.5, "2", None])
def test_a_block_size_that_is_no_whole_number_of_keys_is_refused_with_a_message(bad):
    with pytest.raises(ConfigError, match="at least 1"):
        online_softmax_trace(Config(), bad, 0)


def test_a_block_outside_the_blocks_is_refused_with_a_message():
    with pytest.raises(ConfigError, match=r"0 … 1"):
        online_softmax_trace(Config(), 2, 2)


def test_the_settings_score_and_temperature_do_not_change_the_lesson():
    """The page always uses Ŝ = QKᵀ/√d_k at T = 1 (FlashAttention's score): one cache entry for them all."""
    a = online_softmax_trace(Config(), 2, 1)
    assert online_softmax_trace(Config(score="additive", temperature=3.0), 2, 1) is a


# ---- every number's arithmetic ---------------------------------------------------------------------------

@pytest.mark.parametrize("config", [config_of(5, "causal", heads=2), config_of(4, "padding", (0, 2)),
                                    config_of(3, "padding", (0, 1, 2)), Config()])
@pytest.mark.parametrize("block_size", [1, 2, 5])
def test_every_explanation_reproduces_its_cell(config, block_size):
    for b in range(online_softmax_trace(config, block_size, 0).facts["n_blocks"]):
        lesson = online_softmax_trace(config, block_size, b)
        for key in lesson.keys():
            value = lesson[key].value
            for cell in np.ndindex(value.shape):
                e = explain(lesson, key, cell)
                assert e.value == value[cell] or abs(e.value - value[cell]) <= 1e-9 * max(1, abs(value[cell])), \
                    (key, cell, e.text)
                assert "nan" not in e.text.lower(), e.text


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


def test_rows_text():
    assert rows_text(("a", "b", "c"), ()) == "" and rows_text(("a", "b"), (1,)) == "row 1 (“b”)"
    assert rows_text(("a", "b", "c"), (0, 2)) == "rows 0 (“a”) and 2 (“c”)"


# ---- the page ------------------------------------------------------------------------------------------

def text_of(at) -> str:
    parts = [e.value for kind in ("markdown", "caption", "subheader", "error", "info") for e in at.get(kind)]
    return "\n".join(parts)


def number_after(label: str, text: str) -> float:
    return float(re.search(re.escape(label) + r"\s*=\s*([0-9.e+-]+)", text).group(1).rstrip("."))


def test_page_at_defaults_shows_the_recurrence_and_the_live_checks():
    at = open_page(PAGE)
    no_exception(at)
    assert not at.error
    keys = [s.key for s in at.slider]
    assert "online_softmax.block_size" in keys and "online_softmax.block" in keys
    recurrence = next(f for f in formulas(at) if r"\ell_i'" in f)
    assert "^{-1}" not in recurrence and "e^{m_i - m_i'}" in recurrence
    text = text_of(at)
    assert "#991" in text
    assert number_after("max |C − softmax(Ŝ)V|", text.replace("**", "")) < 1e-12
    assert number_after("max |(m_i + log ℓ_i) − logsumexp_j Ŝ_ij|", text.replace("**", "")) < 1e-12
    assert "n_q × B = 4 × 1 = 4" in text and "n_q × n_k = 16" in text
    assert shown_outside(text, Controls(Config(), 1, 1), about="online_softmax") == []


def test_page_follows_the_block_size_and_the_block():
    at = open_page(PAGE)
    at.slider(key="online_softmax.block_size").set_value(2).run()
    no_exception(at)
    text = text_of(at)
    assert "n_q × B = 4 × 2 = 8" in text and "Block 1: keys 2 … 3" in text
    assert at.slider(key="online_softmax.block").max == 1
    at.slider(key="online_softmax.block").set_value(0).run()
    assert "Block 0 is the first" in text_of(at)
    frame = at.dataframe[0].value                       # the state table after block 0: m′ is the row max of S_0
    lesson = online_softmax_trace(Config(), 2, 0)
    assert [float(x.split()[-1]) for x in frame["c1"]] == pytest.approx(lesson["m"].value, abs=1e-3)


def test_page_with_a_causal_mask_says_how_many_tiles_were_skipped():
    at = open_page(PAGE, query={"mask": "causal"})
    at.slider(key="online_softmax.block_size").set_value(2).run()
    text = text_of(at)
    assert "1 of the 4 tiles have every score masked (with the causal mask: entirely above the diagonal)" in text
    assert "tiles of rows 0 (“i”) and 1 (“love”) are skipped" in text          # block 1 = keys 2, 3
    assert shown_outside(text, Controls(Config(mask="causal"), 2, 1), about="online_softmax") == []


def test_page_without_a_mask_says_no_tile_was_skipped_and_shows_no_skip_sentence():
    at = open_page(PAGE, query={"sentence": "the cat sat on a mat"})
    for B in (1, 2, 4):
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
    assert "16 of the 16 tiles" in text                     # B = 1: every 1 × 1 tile
    at.slider(key="online_softmax.block_size").set_value(2).run()
    assert "4 of the 4 tiles" in text_of(at) and not at.error


def test_page_keeps_a_block_size_larger_than_a_shortened_sentence_and_says_it_is_one_block():
    at = open_page(PAGE)
    at.slider(key="online_softmax.block_size").set_value(4).run()
    at.sidebar.text_input(key="w.sentence").set_value("I love").run()
    no_exception(at)
    text = text_of(at)
    assert at.slider(key="online_softmax.block_size").value == 4
    assert "B = 4 ≥ n = 2: every key fits in one block" in text and "still exact" in text
    assert number_after("max |C − softmax(Ŝ)V|", text.replace("**", "")) < 1e-12


def test_page_survives_a_block_size_of_zero():
    """Streamlit's slider puts an out-of-range value back to its default; the page then runs at B = 1 (the core
    refuses 0 with a message: test_a_block_size_that_is_no_whole_number_of_keys_is_refused_with_a_message)."""
    at = open_page(PAGE)
    at.session_state["online_softmax.block_size"] = 0
    at.run()
    no_exception(at)
    assert at.slider(key="online_softmax.block_size").value >= 1
    assert "n_q × B = 4 ×" in text_of(at) or "block size" in messages(at).lower()


def test_page_opens_the_torch_check():
    at = open_page(PAGE, query={"mask": "causal"})
    at.session_state["online_softmax.torch"] = True
    at.run()
    no_exception(at)
    text = text_of(at).replace("**", "")
    assert number_after("max |C − torch|", text) < 1e-12
    assert number_after("max |(m_i + log ℓ_i) − torch|", text) < 1e-12
    assert "torch.logsumexp" in text and "scaled_dot_product_attention(Q, K, V, attn_mask=M)" in text


WALK = [Config(), Config(mask="causal", n_heads=2, d_k=3), Config(mask="padding", padding=(0, 2), score="additive"),
        Config(sentence="the cat sat on a mat", mask="causal", temperature=2.0, positional="none")]


@pytest.mark.parametrize("config", WALK, ids=["defaults", "causal-2-heads", "padding-additive", "causal-6-T2"])
def test_no_sentence_of_the_page_is_shown_where_it_does_not_hold(config):
    """The page under a few settings, every block size and block: its claims appear only where they hold."""
    from tests.test_claims import page_text, walk
    for _, _, at in walk(config, [PAGE]):
        n = online_softmax_trace(config, 1, 0).n
        for B in range(1, n + 1):
            at.slider(key="online_softmax.block_size").set_value(B).run()
            for b in range(-(-n // B)):
                if b or B < n:
                    at.slider(key="online_softmax.block").set_value(b).run()
                no_exception(at)
                assert not at.error, messages(at)
                text = page_text(at)
                assert shown_outside(text, Controls(config, B, b), about="online_softmax") == [], (B, b)
                assert shown_outside(text, config) == [], (B, b)
