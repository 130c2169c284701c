"""The KV cache page: decoding the sidebar's forward pass (its heads and KV heads, weights, biases, RoPE, ALiBi,
window, score and temperature) equals that pass's own output and weights and torch SDPA with enable_gqa; every
cell's arithmetic; the cache-size calculator against hand-computed figures and the published configs; the page's
claims as property tests; and the page through AppTest (its controls in the link, a clicked cell restored, the
sidebar buttons, hostile inputs, the claims walked under unusual settings)."""
from __future__ import annotations

import re

import numpy as np
import pytest

from attention_core import Config, ConfigError, run_forward
from attention_core.lessons import kv_cache as kv
from attention_core.math.alibi import alibi_bias, alibi_slopes
from attention_core.math.attention import causal_mask, sliding_window_mask
from attention_core.forward.claims import CLAIMS, holds, say, shown_outside
from attention_core.explanations import explain
from attention_core.math.gqa import grouped_query_attention, kv_head_of
from attention_core.math.kv_cache import kv_cache_decode
from tests.apptest_util import charts, messages, no_exception, open_page
from ui.page_state import KV_CACHE_TABS as TABS

PAGE = "app_pages/42_kv_cache.py"
RANDOM = dict(embedding="random", d_model=6, weights="random", seed=5)
LONG = "the cat sat on the mat and looked at the dog"                          # 11 tokens
CONFIGS = {                                                                   # the sidebar's settings walked here
    "defaults (trained, mask none)": Config(),
    "MQA RoPE W=2": Config(n_heads=4, n_kv_heads=1, positional="rope", mask="sliding_window", window=2),
    "GQA ALiBi bias": Config(n_heads=4, n_kv_heads=2, positional="alibi", bias=True, mask="causal"),
    "H=3 ALiBi dot T=0.5 padding": Config(n_heads=3, positional="alibi", score="dot", temperature=0.5,
                                          mask="padding", padding=(1,)),
    "H=6/3 W=9>n bias d_v=3": Config(n_heads=6, n_kv_heads=3, mask="sliding_window", window=9, bias=True, d_v=3,
                                     **RANDOM),
    "long RoPE base 500000 W=3 bias": Config(sentence=LONG, positional="rope", pe_base=500_000.0, n_heads=2,
                                             mask="sliding_window", window=3, bias=True, **RANDOM),
    "one token": Config(sentence="hello", n_heads=2, n_kv_heads=1, positional="rope"),
    "additive, learned": Config(score="additive", positional="learned", n_heads=2, **RANDOM),
}


def n_of(config: Config) -> int:
    return run_forward(config).n


def prompts(config: Config) -> list[int]:
    n = n_of(config)
    return list(range(n + 1)) if n <= 6 else [0, 1, 2, 4, n - 1, n]


# ---- decoding is the forward pass ----------------------------------------------------------------------

@pytest.mark.parametrize("name", CONFIGS)
def test_decoding_equals_the_forward_pass_of_the_decoding_config(name):
    """Every prompt length P = 0 … n: every output row, every step's weights, every query and cached row are
    the forward pass's own (the sidebar's Config, with the causal mask where it has none or padding)."""
    config = CONFIGS[name]
    used = kv.decoding_config(config)
    assert used.mask in ("causal", "sliding_window") and used.score in ("dot", "scaled_dot")
    assert (used == config) == (config.mask in ("causal", "sliding_window") and config.score in ("dot", "scaled_dot"))
    full = run_forward(used)
    for prefill in prompts(config):
        check = kv.check_against_full_pass(config, prefill)
        assert max(check[k] for k in ("outputs", "weights", "queries", "keys", "values")) < 1e-12, (name, prefill)
        np.testing.assert_allclose(kv.decode(config, prefill).outputs, full["output"].value, atol=1e-12, rtol=0)


def test_with_the_sidebars_mask_none_it_is_the_causal_pass_of_pages_5_to_7():
    """Decoding the defaults (mask None) gives exactly trace["output"] of the Config with mask="causal", what
    pages 5–7 show once the sidebar's mask is Causal; padding the same."""
    for config in (Config(), Config(mask="padding", padding=(0, 2), n_heads=2)):
        causal = run_forward(config.replace(mask="causal"))
        assert kv.decoding_config(config) == config.replace(mask="causal")
        np.testing.assert_allclose(kv.decode(config, 2).outputs, causal["output"].value, atol=1e-12, rtol=0)
        assert not np.allclose(kv.decode(config, 2).outputs, run_forward(config)["output"].value, atol=1e-6)


@pytest.mark.parametrize("name", ["MQA RoPE W=2", "GQA ALiBi bias", "H=3 ALiBi dot T=0.5 padding",
                                  "long RoPE base 500000 W=3 bias"])
def test_a_steps_numbers_are_the_forward_passs_entries(name):
    """q_t is row t of Q^R (Q), the cache rows are K^R's and V's, ŝ is row t of Ŝ (S), b is row t of ALiBi's B,
    a is row t of A, o is row t of O: on the visible entries, at every step, prompt or not."""
    config = CONFIGS[name]
    fwd = run_forward(kv.decoding_config(config))
    q, k, v = kv.heads_of(fwd, "q"), kv.heads_of(fwd, "k"), kv.heads_of(fwd, "v")
    sh = lambda a: a if a.ndim == 3 else a[None]                              # noqa: E731
    scores = sh(fwd["scaled_scores" if config.score == "scaled_dot" else "scores"].value)
    a = sh(fwd["weights"].value)
    n = fwd.n
    for prefill in (0, 2):
        for t in range(n):
            step = kv.kv_cache_trace(config, prefill, t)
            p = step.facts["positions"]
            np.testing.assert_allclose(step["q_t"].value, q[:, t], atol=1e-12)
            np.testing.assert_allclose(step["k_cache"].value, k[:, p], atol=1e-12)
            np.testing.assert_allclose(step["v_cache"].value, v[:, p], atol=1e-12)
            shown = step["scores_t"].value
            seen = np.isfinite(shown)
            assert (seen == (np.array(p) <= t)[None] & (t - np.array(p) < (step.facts["window"] or n + 1))[None]).all()
            np.testing.assert_allclose(shown[seen], scores[:, t, p][seen], atol=1e-12)
            if step.facts["alibi"]:
                np.testing.assert_allclose(step["alibi_t"].value[seen], sh(fwd["alibi"].value)[:, t, p][seen],
                                           atol=1e-15)
            np.testing.assert_allclose(step["weights_t"].value, a[:, t, p], atol=1e-12)
            np.testing.assert_allclose(step["output_t"].value, fwd["output"].value[t], atol=1e-12)


@pytest.mark.parametrize("name", ["defaults (trained, mask none)", "MQA RoPE W=2", "GQA ALiBi bias",
                                  "H=3 ALiBi dot T=0.5 padding", "H=6/3 W=9>n bias d_v=3"])
def test_decoding_equals_torch_sdpa_with_enable_gqa(name):
    """torch's scaled_dot_product_attention(enable_gqa=True) on the forward pass's (rotated) Q, K, V, with the
    window / causal mask and ALiBi's bias as one float matrix, and with is_causal where that is the mask."""
    result = kv.torch_check(CONFIGS[name], 2)
    assert result["mask"] < 1e-12
    config = kv.decoding_config(CONFIGS[name])
    assert (result["is_causal"] is None) == (config.mask != "causal" or config.positional == "alibi")
    if result["is_causal"] is not None:
        assert result["is_causal"] < 1e-12


def test_alibi_decoding_adds_the_bias_row_and_equals_the_full_pass():
    """The core's ALiBi row −m_h·(t − j) (a new part of kv_cache_decode) gives the full pass with the bias
    −m_h·|i − j| added to every score, under GQA, a window, a prompt and a temperature; the claim is said only
    under ALiBi."""
    rng = np.random.default_rng(3)
    n, h, h_kv, d = 7, 4, 2, 3
    x = rng.standard_normal((n, 5))
    w_q, w_k, w_v, w_o = (rng.standard_normal(s) for s in ((5, h * d), (5, h_kv * d), (5, h_kv * d), (h * d, 5)))
    slopes = alibi_slopes(h)
    for window, prefill in ((None, 0), (3, 4), (2, 1)):
        mask = causal_mask(n) if window is None else sliding_window_mask(n, window)
        full, a = grouped_query_attention(x, x, w_q, w_k, w_v, w_o, h, h_kv, mask=mask, bias=alibi_bias(n, h))
        outputs, cache = kv_cache_decode(x, w_q, w_k, w_v, w_o, h, h_kv, window=window, prefill=prefill,
                                         alibi_slopes=slopes)
        np.testing.assert_allclose(outputs, full, atol=1e-12, rtol=0)
        for step in cache["steps"]:
            t, p = step["t"], np.array(step["positions"])
            seen = np.isfinite(step["scores"])
            np.testing.assert_allclose(step["bias"][seen], (-slopes[:, None] * (t - p)[None] + 0 * seen)[seen])
            np.testing.assert_allclose(step["weights"], a[:, t, p], atol=1e-12)
    # without the slopes the outputs differ: the bias row is doing the work
    assert np.abs(kv_cache_decode(x, w_q, w_k, w_v, w_o, h, h_kv)[0] - full).max() > 1e-3
    assert holds("kv_alibi_from_distance", kv.KVSettings(positional="alibi"))
    assert not holds("kv_alibi_from_distance", kv.KVSettings(positional="rope"))


def test_rope_cache_holds_the_rotated_keys_of_the_forward_pass():
    """Under RoPE the cached rows are the forward pass's K^R (not K), the same whatever step or prompt reads
    them: a later query's rotation never changes them. The claim is said only under RoPE."""
    config = CONFIGS["MQA RoPE W=2"]
    fwd = run_forward(config)
    rotated, plain = kv.heads_of(fwd, "k"), fwd["k_heads"].value
    rows = [kv.decode(config, prefill).cache["k_rows"] for prefill in (0, 1, 4)]
    for r in rows:
        np.testing.assert_allclose(r, rotated, atol=1e-12)
    np.testing.assert_allclose(rows[0][:, 0], plain[:, 0], atol=1e-12)              # position 0 is not turned
    assert np.abs(rows[0][:, 1:] - plain[:, 1:]).max() > 1e-3
    assert holds("kv_rope_rotated_once", kv.KVSettings(positional="rope"))
    assert not holds("kv_rope_rotated_once", kv.KVSettings(positional="alibi"))
    assert "k^R_j" in kv.kv_cache_trace(config, 1, 3)["kv_cache"].why
    assert "k^R_j" not in kv.kv_cache_trace(Config(), 1, 3)["kv_cache"].why


# ---- the cache's size, step by step (#13) and one query or a square (#14) --------------------------------

def cache_sizes(config: Config, prefill: int) -> list[int]:
    """Rows in the cache while step t is computed, for every t (the prompt's steps: all P rows)."""
    return [len(kv.kv_cache_trace(config, prefill, t).facts["positions"]) for t in range(n_of(config))]


def test_cache_size_step_by_step():
    """The four sentences about the cache's growth hold exactly where the sizes say so: no window (one row per
    token, none dropped), W < n with P ≤ W (grows to W, then stays), P > W (the prompt's P rows at once, then
    W), W ≥ n (never drops). Each setting shows exactly one of them."""
    base = Config(sentence=LONG, n_heads=2, n_kv_heads=1, **RANDOM)
    n = n_of(base)
    from ui.today.kv_cache_view import status_text
    growth = ("kv_grows", "kv_stops_growing", "kv_prompt_beyond_window", "kv_window_covers")
    for window in (None, 1, 2, 4, n, n + 5):
        config = base if window is None else base.replace(mask="sliding_window", window=window)
        for prefill in (0, 1, 2, 4, n):
            sizes = cache_sizes(config, prefill)
            s = kv.settings_for(config, prefill, 0, n)
            said = [k for k in growth if holds(k, s)]
            assert len(said) == 1, (window, prefill, said)
            last = kv.decode(config, prefill).cache["positions"]                  # after the last token
            if window is None or window >= n:
                assert said == ["kv_window_covers" if window else "kv_grows"]
                assert last == list(range(n)) and max(sizes) == n
                assert sizes[prefill:] == list(range(prefill + 1, n + 1))
                if window is None:                          # one row per decoded token, the prompt's P rows at once
                    words = status_text(kv.kv_cache_trace(config, prefill, n - 1))
                    assert ("the cache grows by one row per decoded token" + (
                        f" (the prompt's {prefill} rows enter at once)" if prefill > 1 else "") + " and never drops one"
                            ) in words, words
            elif prefill <= window:
                assert said == ["kv_stops_growing"] and max(sizes) == window
                assert sizes[-1] == window and last == list(range(n - window, n))
            else:
                assert said == ["kv_prompt_beyond_window"] and max(sizes) == prefill > window
                assert sizes[prefill:] == [window] * (n - prefill) and last == list(range(n - window, n))


def test_a_window_is_a_rolling_buffer_of_w_rows():
    """With a window W the cache is a rolling buffer: while a decoded step t is computed it holds exactly tokens
    max(0, t − W + 1) … t, every one visible (no −∞ in its row), and between steps never more than W rows; a prompt
    step holds the prompt's rows. The two sentences (W ≥ 2, W = 1) are shown exactly there, with these numbers."""
    from ui.today.kv_cache_view import window_text
    base = Config(sentence=LONG, n_heads=2, n_kv_heads=1, **RANDOM)
    n = n_of(base)
    for window in (1, 2, 3, n + 2):
        config = base.replace(mask="sliding_window", window=window)
        for prefill in (0, 1, 5):
            steps = kv.decode(config, prefill).cache["steps"]
            for step in steps:
                t = step["t"]
                if step["prefill"]:
                    assert step["positions"] == list(range(prefill))
                else:
                    assert step["positions"] == list(range(max(0, t - window + 1), t + 1)), (window, prefill, t)
                    assert np.isfinite(step["scores"]).all() and len(step["positions"]) <= window
        s = kv.settings_for(config, 0, 0, n)
        assert holds("kv_rolling_buffer", s) == (window >= 2) and holds("kv_window_of_one", s) == (window == 1)
        words = window_text(config, n)
        if window >= 2:
            assert f"rolling buffer of W rows for the decoded tokens: as token t's row comes in, token t − {window}'s" in words
            assert f"step t reads tokens t − {window - 1} … t" in words
        else:
            assert "each token sees only itself: a decoded token's row replaces the one before" in words
    assert window_text(base, n) == "" and not holds("kv_rolling_buffer", kv.settings_for(base, 0, 0, n))


def test_a_decoded_step_has_one_query_and_a_prompt_step_a_square():
    """A decoded step (t ≥ P, or a prompt of one token) computes one query row and one score row against the
    cache; a step of a longer prompt is one row of P queries computed together, their P × P scores masked after
    each row's token. The two claims and their `otherwise` follow."""
    config = Config(n_heads=2)
    d = kv.decode(config, 3)
    steps = d.cache["steps"]
    assert [s["prefill"] for s in steps] == [True, True, True, False]
    assert [s["cache_len"] for s in steps] == [3, 3, 3, 4]
    prompt = np.stack([s["scores"] for s in steps[:3]], axis=1)                       # (H, 3, 3): the square
    assert prompt.shape == (2, 3, 3) and (np.isneginf(prompt) == ~causal_mask(3)[None]).all()
    for prefill, t, together in ((3, 1, True), (3, 3, False), (1, 0, False), (0, 0, False), (4, 3, True)):
        s = kv.settings_for(config, prefill, t, 4)
        assert s.together == together == (len(kv.decode(config, prefill).cache["steps"][t]["positions"]) > t + 1
                                          or (t < prefill and prefill > 1))
        for key in ("kv_one_query", "kv_one_row"):
            assert holds(key, s) == (not together)
        trace = kv.kv_cache_trace(config, prefill, t)
        assert ("Only the newest token asks a question" in trace["q_t"].why) == (not together)
        assert ("a decoding step scores one query" in trace["scores_t"].why) == (not together)
        if together:
            assert f"all {prefill} queries are computed together; this is row {t}" in trace["q_t"].why
            assert f"scored as one {prefill} × {prefill} square" in trace["scores_t"].why
    # a prompt's row: "masked after each row's token" alone only where no window hides keys inside the prompt
    for window, prefill, t in ((None, 4, 3), (4, 4, 3), (9, 4, 3), (2, 4, 3), (1, 4, 1), (3, 4, 3), (2, 0, 3)):
        config = Config(n_heads=2) if window is None else Config(n_heads=2, mask="sliding_window", window=window)
        s, trace = kv.settings_for(config, prefill, t, 4), kv.kv_cache_trace(config, prefill, t)
        rows = [st["scores"] for st in kv.decode(config, prefill).cache["steps"][:prefill]]
        beyond_causal = prefill > 1 and bool((np.isneginf(np.stack(rows, axis=1)) & causal_mask(prefill)[None]).any())
        assert holds("kv_prompt_square_window", s) == beyond_causal, (window, prefill)   # the window hides prompt keys
        assert holds("kv_prompt_square", s) == (s.together and not beyond_causal)
        assert sum(holds(k, s) for k in ("kv_one_row", "kv_prompt_square", "kv_prompt_square_window")) == 1
        if beyond_causal:
            assert (f"masked after each row's token and more than W − 1 = {window - 1} token{'s' * (window != 2)} "
                    f"before it (the window of W = {window}); this is its row {t}") in trace["scores_t"].why


# ---- the claims about heads (the sidebar's H and H_kv) ------------------------------------------------

HEADS = [(h, k) for h in range(1, 9) for k in range(1, h + 1) if h % k == 0]


def test_mha_every_query_head_reads_its_own_kv_head():
    for h, h_kv in HEADS:
        s = kv.KVSettings(h, h_kv)
        own = all(kv_head_of(q, h, h_kv) == q for q in range(h))
        assert (own and h > 1) == holds("kv_mha_own_heads", s), s              # one head: nothing to share


def test_gqa_cache_is_g_times_smaller_than_mha():
    """The decoded cache's size (not a formula) is g times MHA's; "smaller" only when g > 1; the page's shapes
    table shows the decoded cache's shapes."""
    from ui.today.kv_cache_view import shapes_table, sharing_text
    for h, h_kv in [(h, k) for h in (1, 2, 4, 6) for k in range(1, h + 1) if h % k == 0]:
        config = Config(n_heads=h, n_kv_heads=h_kv, d_v=3, **RANDOM)
        ours = kv.decode(config, 0).cache
        table = shapes_table(kv.settings_for(config, 0, 0, 4), 4, 3)
        mine = table[table["yours"] == "←"]
        assert len(mine) == 1 and mine["K cache"].iloc[0] == str(ours["k"].shape)
        assert mine["V cache"].iloc[0] == str(ours["v"].shape) and len(set(table["H_kv"])) == len(table)
        mha = kv.decode(config.replace(n_kv_heads=0), 0).cache
        ratio = mha["k"].size / ours["k"].size
        assert ratio == h // h_kv and mha["v"].size / ours["v"].size == ratio
        s = kv.KVSettings(h, h_kv)
        assert holds("kv_gqa_smaller", s) == (ratio > 1)
        words = sharing_text(s)                                          # the words the sharing tab shows
        assert ("times smaller" in words) == (ratio > 1)
        if ratio > 1:                                                    # "1 KV head instead of 4", not "1 KV heads"
            assert f": {h_kv} KV head{'s' if h_kv > 1 else ''} instead of {h}." in words, words


def test_mqa_all_query_heads_read_kv_head_0():
    for h, h_kv in HEADS:
        s = kv.KVSettings(h, h_kv)
        one = {kv_head_of(q, h, h_kv) for q in range(h)} == {0}
        assert (one and h > 1) == holds("kv_mqa_one_head", s), s


# ---- every cell's arithmetic -----------------------------------------------------------------------------

@pytest.mark.parametrize("name, prefill, t", [("defaults (trained, mask none)", 2, 3), ("MQA RoPE W=2", 4, 3),
                                              ("GQA ALiBi bias", 0, 3), ("H=3 ALiBi dot T=0.5 padding", 3, 1),
                                              ("H=6/3 W=9>n bias d_v=3", 1, 2)])
def test_every_cell_is_explained_with_its_own_number(name, prefill, t):
    trace = kv.kv_cache_trace(CONFIGS[name], prefill, t)
    for key in trace.keys():
        value = trace[key].value
        cells = list(np.ndindex(value.shape))
        for cell in cells[:: max(1, len(cells) // 25)]:
            e = explain(trace, key, cell)
            stored = value[cell]
            assert e.value == stored or abs(e.value - stored) <= 1e-12 * max(1, abs(stored)), (key, cell)
            assert e.independent, (key, cell)


def test_cell_explanations_say_the_math():
    """A clicked cell speaks the page's notation: a cached row by its token j (ŝ_{h,j}, K^cache_{u,j,c}, (B_h)_{t,j}),
    the unrotated row as q_t, k_j (u is the KV head), a head's column of W_Q as h·d_k + c, (c_t)_h and (o_t)_c for
    the context and output rows, and no double minus when the row's maximum is negative."""
    rope = kv.kv_cache_trace(CONFIGS["MQA RoPE W=2"], 1, 3)                  # the cache holds tokens 2 and 3
    assert rope.facts["positions"] == [2, 3]
    e = explain(rope, "q_t", (1, 1))
    assert e.text.startswith("q^R_3[1,1] = (q_3)[1,0]·sin(3θ_0) + (q_3)[1,1]·cos(3θ_0)")
    assert e.symbolic.startswith(r"(q^R_{3})_{1,1} = (q_{3})_{1,0} \sin(3\theta_{0})") and "u_" not in e.symbolic
    assert "turned by RoPE at position 3" in e.note and "Before the turn, q_3 = x_3·W_Q" in e.note
    k = explain(rope, "k_cache", (0, 0, 1))                                   # cached row 0 is token 2
    assert k.symbolic.startswith(r"K^{\text{cache}}_{0,2,1} = (k_{2})_{0,0} \sin(2\theta_{0})"), k.symbolic
    assert "Token 2's cached key, KV head 0" in k.note and "u =" not in k.note
    e = explain(rope, "scores_t", (3, 0))
    assert e.symbolic.startswith(r"\hat s_{3,2} = \sum_c (q^R_{3})_{3,c} K^{\text{cache}}_{0,2,c}"), e.symbolic
    assert "⌊3/4⌋ = 0" in e.note and "key j = 2 is token 2" in e.note and e.n_terms == 4
    assert e.value == pytest.approx(rope["q_t"].value[3] @ rope["k_cache"].value[0, 0] / 2, abs=1e-14)
    v = explain(rope, "kv_cache", (0, 1, 4 + 2))                              # the right half is V's: not rotated
    assert v.text.startswith("V_cache[0,3,2] = Σ_m X[3,m]·W_V[m,2]") and "Token 3's cached value" in v.note
    gqa = kv.kv_cache_trace(Config(n_heads=4, n_kv_heads=2), 2, 2)
    assert r"(W_Q)_{:,\; h d_k:(h+1) d_k}" in gqa["q_t"].formula and r"(W_K)_{:,\; u d_k:(u+1) d_k}" in gqa["kv_cache"].formula
    q = explain(gqa, "q_t", (1, 1))
    assert q.symbolic.startswith(r"(q_{2})_{1,1} = \sum_{m=0}^{49} X_{2,m} (W_Q)_{m,5}")
    assert "Head 1 owns W_Q's columns 4 … 7; column 5 = 1·4 + 1 is its column 1." in q.note
    assert gqa["context_t"].formula.startswith(r"(c_{2})_h = \sum_j a_{h,j}")
    assert gqa["output_t"].formula == r"o_{2} = [(c_{2})_0, \dots, (c_{2})_{H-1}]\, W_O"
    o = explain(gqa, "output_t", (0,))
    assert o.symbolic.startswith(r"(o_{2})_{0} = \sum_{h,e} (c_{2})_{h,e} (W_O)_{h d_v + e,\,0}")
    assert explain(gqa, "context_t", (3, 1)).symbolic.startswith(r"(c_{2})_{3,1} = \sum_j a_{3,j}")
    windowed_alibi = kv.kv_cache_trace(Config(positional="alibi", n_heads=2, mask="sliding_window", window=2), 0, 3)
    b = explain(windowed_alibi, "alibi_t", (0, 0))                            # cached row 0 is token 2: B_{3,2}
    assert b.symbolic == r"(B_{0})_{3,2} = -m_{0}\,(3 - 2)" and b.value == pytest.approx(-alibi_slopes(2)[0])
    assert b.text.splitlines()[0] == "B_0[3,2] = −m_0·(3 − 2)"
    alibi = kv.kv_cache_trace(CONFIGS["H=3 ALiBi dot T=0.5 padding"], 0, 3)
    b = explain(alibi, "alibi_t", (2, 0))
    assert b.text.splitlines()[0] == "B_2[3,0] = −m_2·(3 − 0)" and b.value == pytest.approx(-alibi_slopes(3)[2] * 3)
    w = explain(alibi, "weights_t", (0, 1))
    assert "/ 0.5" in w.text and "temperature T = 0.5" in w.note
    causal = kv.kv_cache_trace(Config(mask="causal"), 0, 3)
    top = max(causal["scores_t"].value[0])
    assert top < 0                                                            # the row's maximum is negative here
    w = explain(causal, "weights_t", (0, 0))
    assert rf"e^{{\hat s_{{0,0}} + {-top:.3f}}}" in w.substituted and "- -" not in w.substituted + w.text
    prompt = kv.kv_cache_trace(Config(), 4, 1)
    hidden = explain(prompt, "scores_t", (0, 3))
    assert hidden.value == float("-inf") and "comes later" in hidden.note
    windowed = kv.kv_cache_trace(CONFIGS["MQA RoPE W=2"], 4, 3)               # the prompt of 4, W = 2: token 0 hidden
    assert "outside the window of W = 2 keys" in explain(windowed, "scores_t", (0, 0)).note
    for leaf in ("x", "w_q", "w_o"):
        assert "the same number as on the forward pages" in explain(rope, leaf, (0, 0)).note
    assert "trained" in explain(rope, "w_q", (0, 0)).note and "seeded" in explain(rope, "w_o", (0, 0)).note


# ---- the calculator --------------------------------------------------------------------------------------

def test_llama_3_8b_by_hand():
    p = kv.PRESETS["Llama 3 8B"]
    assert kv.bytes_per_token(p, 2) == 2 * 32 * 8 * 128 * 2 == 131_072 == 128 * 1024
    assert kv.human(kv.bytes_per_token(p, 2)) == "128 KiB"
    assert kv.cache_bytes(p, 8192, 2) == 2 ** 30 and kv.human(2 ** 30) == "1 GiB"
    assert kv.cache_bytes(p, 8192, 2, mha=True) == 4 * 2 ** 30          # 32 KV heads instead of 8
    assert kv.bytes_per_token(p, 1) == 65_536                            # fp8


@pytest.mark.parametrize("name, layers, heads, kv_heads, d_head, context, per_token", [
    ("Llama 3 70B", 80, 64, 8, 128, 8192, 2 * 80 * 8 * 128 * 2),
    ("Mistral 7B", 32, 32, 8, 128, 32768, 2 * 32 * 8 * 128 * 2),
    ("Qwen2.5-7B", 28, 28, 4, 128, 131072, 2 * 28 * 4 * 128 * 2),
    ("Gemma 2 9B", 42, 16, 8, 256, 8192, 2 * 42 * 8 * 256 * 2),
    ("DeepSeek-V3", 61, 128, 128, 128, 163840, 61 * (512 + 64) * 2)])
def test_presets_are_the_published_configs(name, layers, heads, kv_heads, d_head, context, per_token):
    """num_hidden_layers, num_attention_heads, num_key_value_heads, head_dim (hidden_size / heads),
    max_position_embeddings of each published config.json (read for this page in copies of them: Llama 3 8B and
    70B, Mistral 7B v0.1, Qwen2.5-7B, Gemma 2 9B, DeepSeek-V3); bytes per token by hand; the source line says them."""
    p = kv.PRESETS[name]
    assert (p.layers, p.n_heads, p.n_kv_heads, p.d_head, p.context) == (layers, heads, kv_heads, d_head, context)
    assert kv.bytes_per_token(p, 2) == per_token and kv.bytes_per_token(p, 1) * 2 == per_token
    assert f"at most {context:,} positions" in p.source and f"{layers} layers" in p.source


def test_calculator_window_presets_stop_growing():
    """Mistral stops at 4096 tokens on every layer; Gemma 2's 21 local layers stop, its 21 global ones grow;
    a made-up model with 4 global layers of 26 keeps 4 growing (the claim names the count, not a half); the
    presets without a window grow linearly. The claims hold exactly where that is so."""
    made_up = kv.Preset("made-up", 26, 8, 8, 64, 32768, window=1024, local_layers=22)
    for p in list(kv.PRESETS.values()) + [made_up]:
        per = p.values_per_token_layer * 2
        w = p.window or 4096
        growth = kv.cache_bytes(p, 4 * w) - kv.cache_bytes(p, 2 * w)
        assert growth == per * p.global_layers * 2 * w
        s = kv.CalcSettings(p)
        assert holds("kv_calc_window", s) == (growth == 0)
        assert holds("kv_calc_some_global", s) == (0 < growth < per * p.layers * 2 * w)
        assert kv.cache_bytes(p, w) == kv.bytes_per_token(p) * w      # up to the window every layer grows
    gemma = kv.PRESETS["Gemma 2 9B"]
    assert kv.cache_bytes(gemma, 8192) == 2 * 8 * 256 * 2 * (21 * 8192 + 21 * 4096)
    words = say("kv_calc_some_global", kv.CalcSettings(made_up), n_global=4, layers=26, window=1024, n_local=22)
    assert words.startswith("only its 4 global layers of 26 keep growing past 1,024 tokens")


def test_latent_cache_is_not_doubled():
    """DeepSeek-V3 keeps one latent (512) and one shared RoPE key (64) per token and layer: no ×2; the others
    keep a K and a V row per KV head."""
    for p in kv.PRESETS.values():
        doubled = 2 * p.layers * p.n_kv_heads * p.d_head * 2
        assert (kv.bytes_per_token(p) == doubled) == (not holds("kv_calc_latent", kv.CalcSettings(p)))
    ds = kv.PRESETS["DeepSeek-V3"]
    assert kv.bytes_per_token(ds) == 61 * 576 * 2 == 70_272
    assert kv.cache_bytes(ds, 1, mha=True) == 61 * 128 * (192 + 128) * 2


def test_calculator_says_when_the_length_is_beyond_the_models_context():
    for p in kv.PRESETS.values():
        for tokens in kv.CONTEXTS:
            assert holds("kv_calc_beyond_context", kv.CalcSettings(p, tokens)) == (tokens > p.context)
    assert not holds("kv_calc_beyond_context", kv.CalcSettings(kv.PRESETS["Llama 3 8B"], 8192))
    assert holds("kv_calc_beyond_context", kv.CalcSettings(kv.PRESETS["Llama 3 8B"], 16384))


def test_calculator_cells_are_explained():
    trace = kv.calculator_trace(2, 131072)
    for cell in np.ndindex(trace["cache_bytes"].shape):
        e = explain(trace, "cache_bytes", cell)
        assert e.value == trace["cache_bytes"].value[cell]
    e = explain(trace, "cache_bytes", (0, 0))
    assert e.text.splitlines()[1].strip() == "= 2·32·8·128·2·1" and "131,072 bytes = 128 KiB" in e.text
    assert "more than Llama 3 8B's configured maximum of 8,192 positions" in explain(trace, "cache_bytes", (0, 1)).note
    assert "is more than" not in explain(trace, "cache_bytes", (3, 1)).note                 # Qwen2.5: 131,072
    # the calculator's number is "bytes", not B (ALiBi's bias on the same page); MHA in a sentence that parses
    assert e.symbolic.startswith(r"\text{bytes}(\text{Llama 3 8B, per token}) = ") and e.text.startswith("bytes(")
    assert "B_{" not in e.symbolic and "B[" not in e.text
    assert "K and V (the 2) of its 8 KV heads, each d_head = 128 wide" in e.note
    mha = explain(trace, "cache_bytes", (0, 2))
    assert "K and V (the 2) for all 32 heads, one KV head per query head as MHA has, each d_head = 128 wide" in mha.note
    from ui.today.kv_cache_view import calculator_table
    widths = calculator_table(trace)["d_head"]                     # DeepSeek-V3's keys are 128 + 64 wide, values 128
    assert widths["DeepSeek-V3"] == "K 192, V 128" and widths["Llama 3 8B"] == "128"


def test_memory_curves_bend_at_the_window():
    rows = kv.memory_curves(2, 16384)
    mistral = {r["tokens"]: r["GiB"] for r in rows if r["preset"] == "Mistral 7B" and r["cache"] == "as published"}
    assert 4096 in mistral and mistral[16384] == mistral[4096] == 0.5


# ---- hostile inputs --------------------------------------------------------------------------------------

def test_bad_prompt_step_and_calculator_inputs_say_what_to_change():
    for prefill in (5, -1, True, 1.5):
        with pytest.raises(ConfigError, match=re.escape("set it to 0 … 4")):
            kv.kv_cache_trace(Config(), prefill, 0)
    with pytest.raises(ConfigError, match="0 … 3"):
        kv.kv_cache_trace(Config(), 2, 4)
    with pytest.raises(ConfigError, match="2 \\(bf16\\) or 1"):
        kv.calculator_trace(4, 8192)
    with pytest.raises(ConfigError, match="context length"):
        kv.calculator_trace(2, 0)
    x = np.ones((3, 2))
    w = [np.ones((2, 2))] * 4
    for kwargs in ({"alibi_slopes": [1.0]}, {"temperature": 0.0}, {"temperature": float("nan")}):
        with pytest.raises(ConfigError):
            kv_cache_decode(x, *w, 2, **kwargs)


def test_every_claim_of_the_page_names_a_test_here():
    import tests.test_kv_cache as here
    mine = [c for c in CLAIMS.values() if c.about in ("kv_cache", "kv_cache_calc")]
    assert len(mine) == 19
    for c in mine:
        path, name = c.proof.split("::")
        assert path == "tests/test_kv_cache.py" and callable(getattr(here, name, None)), c.key


# ---- the page --------------------------------------------------------------------------------------------

def proof(at) -> tuple[float, float, str]:
    box = next(m.value for m in at.markdown if "Decoding = the full pass" in m.value)
    found = re.search(r"max \|o_decoded − O\| = \*\*(\S+)\*\*.*max \|a_t − A\[t\]\| = \*\*(\S+)\*\*", box)
    return float(found[1]), float(found[2]), box


def badge_of(at, title: str) -> list[str]:
    md = next(m.value for m in at.markdown if title in m.value)
    return re.findall(r":blue-badge\[([^\]]+)\]", md)


def status(at, t: int) -> str:
    return next(m.value for m in at.markdown if f"**t = {t} “" in m.value)


def page_text(at) -> str:
    from tests.test_claims import page_text as text
    return text(at)


def test_page_decodes_the_sidebars_pass_and_the_button_sets_the_mask():
    """Defaults: the sidebar's mask is None, said in sight with the causal pass's numbers; one click sets it,
    the notice goes and the proof names the sidebar's own settings. No control for H, H_kv or W."""
    at = open_page(PAGE)
    no_exception(at)
    outputs, weights, box = proof(at)
    assert outputs < 1e-12 and weights < 1e-12 and "with the causal mask" in box
    assert "equals the forward pass **with the causal mask**" in messages(at)
    assert badge_of(at, "The cache: K and V") == ["KV head=1 × cached=3 × k | v=8"]      # t = 2, H_kv = 1 (sidebar)
    assert "**t = 2 “you”** is decoded alone" in status(at, 2)
    assert len(charts(at)) == 1 + 1 + 2 + 2                  # q_t, [K | V] per KV head, ŝ and a, c and o
    assert {w.key for w in list(at.slider) + list(at.number_input)} >= {"kv_cache.t", "kv_cache.prefill"}
    assert not any(k in at.session_state for k in ("kv_cache.heads", "kv_cache.kv_heads", "kv_cache.window"))
    text = page_text(at)
    for code in ("kv_cache_decode", "grouped_query_attention", "crc32", "sliding_window_mask", "causal_mask(",
                 "scaled_dot_product_attention", "tests/", "enable_gqa"):
        assert code not in text, code
    at.button(key="kv_cache.use_causal").click().run()
    no_exception(at)
    assert at.session_state["s.mask"] == "causal" and "with the causal mask" not in messages(at)
    outputs, _, box = proof(at)
    assert outputs < 1e-12 and "(the sidebar's settings)" in box


def test_a_window_shorter_than_the_prompt_is_said_truly():
    """#13: W = 2, P = 4, t = 3: the prompt's 4 rows are in the cache together, more than W; after it, 2."""
    at = open_page(PAGE, query={"mask": "sliding_window", "window": "2", "kv_cache.prefill": "4", "kv_cache.t": "3"})
    no_exception(at)
    text = status(at, 3)
    assert "the cache holds tokens 0 … 3 (4 rows)" in text and "is masked before token 2 (the window)" in text
    assert "The prompt's 4 rows enter the cache together, more than W = 2" in text
    assert "stops growing at W" not in text
    assert "In the prompt all 4 queries are computed together; this is row 3" in page_text(at)
    assert "a decoding step scores one query" not in page_text(at)
    assert ("the prompt is scored as one 4 × 4 square at once, masked after each row's token and more than W − 1 = "
            "1 token before it (the window of W = 2); this is its row 3") in page_text(at)       # row 3 hides keys 0, 1
    assert ("With the sidebar's window W = 2 the cache is a rolling buffer of W rows for the decoded tokens: as token "
            "t's row comes in, token t − 2's, which t may not see, falls out, so step t reads tokens t − 1 … t (a prompt "
            "longer than W is computed whole, then keeps its last W).") in page_text(at)
    at.slider(key="kv_cache.t").set_value(1).run()
    assert "row 1 of the prompt's scores is masked after token 1;" in status(at, 1)   # W = 2: key 0 still seen
    at.slider(key="kv_cache.t").set_value(2).run()
    assert "is masked after token 2 and before token 1 (the window)" in status(at, 2)
    at.slider(key="kv_cache.t").set_value(3).run()
    at.number_input(key="kv_cache.prefill").set_value(2).run()
    text = status(at, 3)
    assert "token 1's row falls out (older than the window) and one row is appended" in text
    assert "the cache holds tokens 2 … 3 (2 rows)" in text and "The cache stops growing at W = 2 tokens" in text
    assert badge_of(at, "The cache: K and V")[0] == "KV head=1 × cached=2 × k | v=8"
    at.number_input(key="kv_cache.prefill").set_value(0).run()             # W = 1: one row, the token's own
    at.session_state["s.window"] = 1
    at.run()
    assert "the cache holds token 3 (1 row)" in status(at, 3) and badge_of(at, "The cache: K and V")[0] == \
        "KV head=1 × cached=1 × k | v=8"
    assert ("With the sidebar's window W = 1 each token sees only itself: a decoded token's row replaces the one "
            "before, so the cache holds one row, token t's") in page_text(at)
    assert "only the last W − 1" not in page_text(at) and "none: each token" not in page_text(at)


def test_share_link_carries_the_view_and_a_fresh_session_shows_the_same_numbers():
    """MQA + RoPE + W = 2 from the sidebar, t = 3, P = 1, the decoding tab with a clicked score cell: the link
    the page writes opens, in a new session, the same controls, the same cell's arithmetic and the same numbers."""
    query = {"n_heads": "4", "n_kv_heads": "1", "positional": "rope", "mask": "sliding_window", "window": "2"}
    at = open_page(PAGE, query=query)
    at.slider(key="kv_cache.t").set_value(3).run()
    at.number_input(key="kv_cache.prefill").set_value(1).run()
    at.session_state["kv_cache.hm.scores_t.None"] = {"selection": {"cell": [{"i": 2, "j": 1}]}}
    at.run()
    no_exception(at)
    link = dict(at.query_params)
    assert {k: link[k] for k in ("kv_cache.t", "kv_cache.prefill", "cell")} == {
        "kv_cache.t": "3", "kv_cache.prefill": "1", "cell": "kv_cache.hm.scores_t.None.2.1"}
    before = [m.value for m in at.markdown if "was made" in m.value or "Decoding = the full pass" in m.value]
    assert len(before) == 2 and "How ŝ[2,3] was made" in before[1].replace("\\", "")   # cached row 1 is token 3
    fresh = open_page(PAGE, query=link)
    no_exception(fresh)
    assert fresh.slider(key="kv_cache.t").value == 3 and fresh.number_input(key="kv_cache.prefill").value == 1
    after = [m.value for m in fresh.markdown if "was made" in m.value or "Decoding = the full pass" in m.value]
    assert after == before
    assert [c["data"]["values"] if "data" in c else c for c in charts(fresh)] == \
        [c["data"]["values"] if "data" in c else c for c in charts(at)]


def test_tab_and_calculator_controls_travel_in_the_link():
    at = open_page(PAGE, query={"n_heads": "4", "n_kv_heads": "2", "kv_cache.tab": "2",
                                "kv_cache.preset": "Gemma 2 9B", "kv_cache.tokens": "131072", "kv_cache.bytes": "1"})
    no_exception(at)
    assert "Link setting" not in messages(at)
    text = next(m.value for m in at.markdown if m.value.startswith("**Gemma 2 9B:**"))
    assert "168 KiB per token" in text and "Only its 21 global layers of 42 keep growing past 4,096 tokens" in text
    assert "131,072 tokens is more than Gemma 2 9B's configured maximum of 8,192 positions" in text
    assert at.radio(key="kv_cache.bytes").value == 1
    link = dict(at.query_params)
    assert {k: link.get(k) for k in ("kv_cache.tab", "kv_cache.preset", "kv_cache.tokens", "kv_cache.bytes")} == {
        "kv_cache.tab": "2", "kv_cache.preset": "Gemma 2 9B", "kv_cache.tokens": "131072", "kv_cache.bytes": "1"}
    at.session_state["kv_cache.tab"] = "Which heads share K and V"
    at.run()
    text = next(m.value for m in at.markdown if "g = H / H_kv" in m.value)
    assert "the sidebar's H = 4 query heads and H_kv = 2 KV heads" in text and "g = 2 times smaller" in text
    table = next(df.value for df in at.dataframe if "H_kv" in df.value.columns)
    assert list(table.index) == ["MHA", "GQA", "MQA"] and list(table["K cache"]) == ["(4, 4, 4)", "(2, 4, 4)", "(1, 4, 4)"]
    assert dict(at.query_params)["kv_cache.tab"] == "1"
    bad = open_page(PAGE, query={"kv_cache.tab": "7"})                   # a tab the page has not: named, not "(0)" alone
    assert ("Link setting “kv_cache.tab” (the open tab) must be from 0 to 2, not '7'; using the default "
            "(“Decoding, step by step”).") in messages(bad), messages(bad)


def test_sentence_changes_keep_t_and_p_inside_and_one_token_works():
    at = open_page(PAGE, query={"kv_cache.t": "3", "kv_cache.prefill": "4"})
    at.text_input(key="w.sentence").set_value("I love").run()
    no_exception(at)
    assert not at.error, messages(at)
    assert at.slider(key="kv_cache.t").value == 1 and at.number_input(key="kv_cache.prefill").value == 2
    at.text_input(key="w.sentence").set_value("hello").run()            # one token: no step slider
    no_exception(at)
    assert not at.error, messages(at)
    assert at.number_input(key="kv_cache.prefill").value == 1
    assert "**t = 0 “hello”** is the prompt of one token, decoded alone" in status(at, 0)
    at.number_input(key="kv_cache.prefill").set_value(0).run()
    assert "**t = 0 “hello”** is decoded alone" in status(at, 0) and proof(at)[0] < 1e-12


def test_an_additive_score_is_said_with_a_button():
    """The score is said with its button; with the mask None too, the causal notice names both changes (pages 5–7
    show this pass only once the mask is Causal and the score Scaled dot)."""
    at = open_page(PAGE, query={"score": "additive"})
    no_exception(at)
    assert "this page decodes the scaled dot product" in messages(at)
    assert "with the causal mask and the scaled dot product" in proof(at)[2]
    assert "With the sidebar's mask Causal and its score Scaled dot, these are pages 5–7's numbers." in messages(at)
    at.button(key="kv_cache.use_scaled").click().run()
    assert at.session_state["s.score"] == "scaled_dot" and "scaled dot product" not in proof(at)[2]
    assert "With the sidebar's mask Causal, these are pages 5–7's numbers." in messages(at)
    at.button(key="kv_cache.use_causal").click().run()
    assert "(the sidebar's settings)" in proof(at)[2]


def test_checked_box_runs_torch_live():
    at = open_page(PAGE, query={"positional": "alibi", "n_heads": "4", "n_kv_heads": "2", "mask": "causal"})
    at.session_state["kv_cache.checked"] = True
    at.run()
    no_exception(at)
    text = next(m.value for m in at.markdown if "Against PyTorch, live" in m.value)
    assert float(re.search(r"max \|torch − decoded\| = \*\*(\S+)\*\*", text)[1]) < 1e-12
    assert "causal flag" not in text                                       # ALiBi: the bias needs the matrix
    assert "the causal mask and ALiBi's bias as one matrix" in text and "rotated" not in text   # no RoPE: nothing turned


@pytest.mark.parametrize("key, cell, title", [("q_t.None", (1, 2), "q_2[1,2]"), ("kv_cache.0", (0, 5), "V_cache[0,0,1]"),
                                              ("weights_t.None", (0, 1), "a[0,1]")])
def test_clicking_a_cell_explains_it(key, cell, title):
    at = open_page(PAGE, query={"n_heads": "2"})
    at.session_state[f"kv_cache.hm.{key}"] = {"selection": {"cell": [{"i": cell[0], "j": cell[1]}]}}
    at.run()
    no_exception(at)
    shown = [m.value.replace("\\", "") for m in at.markdown if "was made" in m.value]
    assert shown and shown[0].startswith(f"**How {title} was made**"), shown
    assert any("✓ recomputed from the terms above" in c.value for c in at.caption)


WALK = [({}, {}), ({"n_heads": 4, "n_kv_heads": 1, "positional": "rope", "mask": "sliding_window", "window": 2},
                   {"kv_cache.prefill": 4, "kv_cache.t": 3}),
        ({"n_heads": 6, "n_kv_heads": 3, "positional": "alibi", "bias": True, "mask": "sliding_window", "window": 9},
         {"kv_cache.prefill": 0, "kv_cache.t": 3}),
        ({"n_heads": 4, "mask": "padding", "padding": (0, 1, 2, 3)}, {"kv_cache.prefill": 4, "kv_cache.t": 0}),
        ({"sentence": "hello", "n_heads": 2, "n_kv_heads": 1, "mask": "sliding_window", "window": 1},
         {"kv_cache.prefill": 1, "kv_cache.t": 0}),
        ({"n_heads": 2, "mask": "sliding_window", "window": 1, "score": "bilinear", "positional": "alibi"},
         {"kv_cache.prefill": 3, "kv_cache.t": 2})]


@pytest.mark.parametrize("changes, own", WALK, ids=["defaults", "mqa-rope-w2-p4", "alibi6-w9-bias", "padding-all",
                                                    "one-token-w1", "w1-bilinear-alibi-p3"])
def test_claims_walk_under_unusual_settings(changes, own):
    """The claims walk (tests/test_claims.py's walk) over this page under MQA/GQA/MHA, RoPE, ALiBi with H not a
    power of two, bias on, windows shorter and longer than the prompt, padding hiding every key, one token;
    each tab open: no claim of the page is shown where it does not hold."""
    config = Config(**changes)
    at = open_page(PAGE, query={k: ("1" if v is True else ",".join(map(str, v)) if isinstance(v, tuple) else str(v))
                                for k, v in {**changes, **own}.items()})
    assert "Link setting" not in messages(at)
    for tab in TABS:
        at.session_state["kv_cache.tab"] = tab
        at.run()
        no_exception(at)
        text = page_text(at)
        assert shown_outside(text, config) == [], (changes, tab)
        for about, settings in at.session_state["s.claims"].items():
            assert shown_outside(text, settings, about) == [], (changes, own, tab, about)
        assert at.session_state["s.claims"]["kv_cache"].t == own.get("kv_cache.t", 2)


def test_the_is_causal_pitfall_under_gqa_and_rope_reads_the_cached_keys():
    """The pitfalls lab's "is_causal=True with fewer queries than keys" under the sidebar's GQA and RoPE: the new
    token's weights are over the keys a cache holds (K^R, each query head reading its KV head), i.e. the last row
    of the full causal pass; is_causal's upper-left mask puts all the weight on key 0."""
    from attention_core.labs.pitfalls import PITFALLS_BY_KEY
    for config in (Config(n_heads=4, n_kv_heads=2, weights="random"), Config(n_heads=4, n_kv_heads=1, positional="rope")):
        r = PITFALLS_BY_KEY["causal_upper_left"].compute(config)
        full = run_forward(config.replace(mask="causal", temperature=1.0))
        np.testing.assert_allclose(r.correct, full["weights"].value[:, -1], atol=1e-12)
        np.testing.assert_array_equal(r.wrong[:, 0], 1.0)
        assert ("K^Rᵀ" in r.what) == (config.positional == "rope") and "KV head ⌊h/g⌋" in r.what
