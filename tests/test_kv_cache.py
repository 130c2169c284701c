"""The KV cache page: decoding against the full causal (windowed) pass and torch SDPA with enable_gqa, every
cell's arithmetic, the cache-size calculator against hand-computed figures, the page's claims as property
tests, and the page through AppTest (its controls, hostile inputs, the three tabs)."""
from __future__ import annotations

import itertools
import re

import numpy as np
import pytest

from attention_core import Config, ConfigError
from attention_core import lesson_kv_cache as kv
from attention_core.claims import CLAIMS, holds, say
from attention_core.explain import explain
from attention_core.gqa import kv_head_of
from tests.apptest_util import charts, messages, no_exception, open_page

CONFIG = Config()                                   # "I love you today", GloVe, d_k = 4
LONG = Config(sentence="the cat sat on the mat and looked at the dog", embedding="random", d_model=6, d_k=3, seed=5)
SETTINGS = [(h, h_kv, w, p) for h, h_kv in ((4, 4), (4, 2), (4, 1), (6, 3), (1, 1))
            for w in (None, 1, 3, 50) for p in (0, 2, 11)]
PAGE = "app_pages/42_kv_cache.py"


def kv_settings(h, h_kv, w=None, p=0, n=4):
    return kv.KVSettings(h, h_kv, w, p, n)


# ---- decoding is the full pass ---------------------------------------------------------------------------

@pytest.mark.parametrize("h, h_kv, window, prefill", SETTINGS)
def test_decoding_equals_the_full_causal_pass(h, h_kv, window, prefill):
    """MHA, GQA, MQA, with and without a window, any prompt: every output row and every step's weights are
    the full pass's (grouped_query_attention with causal_mask / sliding_window_mask)."""
    check = kv.check_against_full_pass(LONG, h, h_kv, window, prefill)
    assert check["outputs"] < 1e-12 and check["weights"] < 1e-12


@pytest.mark.parametrize("h, h_kv, window, prefill", SETTINGS[::3])
def test_decoding_equals_torch_sdpa_with_enable_gqa(h, h_kv, window, prefill):
    """torch's scaled_dot_product_attention(enable_gqa=True) with an explicit bool mask, and with is_causal."""
    result = kv.torch_check(LONG, h, h_kv, window, prefill)
    assert result["mask"] < 1e-12
    assert (result["is_causal"] is None) == (window is not None)
    if window is None:
        assert result["is_causal"] < 1e-12


def test_each_steps_output_row_is_torchs_row():
    """Step t's output o_t (from the cache alone) is row t of torch SDPA over the whole sentence."""
    import torch
    import torch.nn.functional as F
    d = kv.decode(LONG, 4, 2, 3, 2)
    n, w, dh = len(d.tokens), d.weights, d.d_head
    heads = lambda a, h: torch.from_numpy(a.reshape(n, h, dh).transpose(1, 0, 2).copy())[None]   # noqa: E731
    mask = torch.from_numpy(kv.sliding_window_mask(n, 3))
    out = F.scaled_dot_product_attention(heads(d.x @ w["w_q"], 4), heads(d.x @ w["w_k"], 2), heads(d.x @ w["w_v"], 2),
                                         attn_mask=mask, enable_gqa=True)[0].numpy()          # (H, n, d_head)
    for t in range(n):
        trace = kv.kv_cache_trace(LONG, 4, 2, 3, 2, t)
        np.testing.assert_allclose(trace["context_t"].value, out[:, t], atol=1e-12)
        np.testing.assert_allclose(trace["output_t"].value, out[:, t].reshape(-1) @ w["w_o"], atol=1e-12)


@pytest.mark.parametrize("window", [None, 2, 4])
def test_the_shown_cache_is_kv_cache_decodes(window):
    """The last decoded step's K and V are kv_cache_decode's final cache, rows and positions."""
    d = kv.decode(LONG, 4, 2, window, 0)
    last = kv.kv_cache_trace(LONG, 4, 2, window, 0, len(d.tokens) - 1)
    np.testing.assert_array_equal(last["k_cache"].value, d.cache["k"])
    np.testing.assert_array_equal(last["v_cache"].value, d.cache["v"])
    assert last.facts["positions"] == d.cache["positions"]


def test_the_query_row_is_x_t_times_w_q():
    trace = kv.kv_cache_trace(CONFIG, 4, 2, None, 2, 3)
    x, w_q = trace["x"].value, trace["w_q"].value
    np.testing.assert_allclose(trace["q_t"].value, (x[3] @ w_q).reshape(4, 4), atol=1e-14)
    np.testing.assert_allclose(trace["weights_t"].value.sum(axis=1), 1.0, atol=1e-14)


def test_prefill_rows_are_masked_after_their_token():
    """In the prompt, row t's scores against later prompt tokens are −∞ and their weights 0."""
    trace = kv.kv_cache_trace(CONFIG, 2, 1, None, 4, 1)
    assert trace.facts["prefill"] and trace.facts["positions"] == [0, 1, 2, 3]
    assert np.isneginf(trace["scores_t"].value[:, 2:]).all() and (trace["weights_t"].value[:, 2:] == 0).all()


def test_sidebar_changes_that_do_not_touch_x_reuse_the_numbers():
    a = kv.kv_cache_trace(CONFIG, 4, 2, None, 2, 3)
    b = kv.kv_cache_trace(CONFIG.replace(temperature=0.5, mask="causal", n_heads=2, score="dot"), 4, 2, None, 2, 3)
    assert a is b


# ---- every cell's arithmetic -----------------------------------------------------------------------------

@pytest.mark.parametrize("h, h_kv, window, prefill, t", [(4, 2, None, 2, 3), (4, 1, 2, 0, 3), (2, 2, None, 4, 1),
                                                          (6, 3, 3, 2, 2)])
def test_every_cell_is_explained_with_its_own_number(h, h_kv, window, prefill, t):
    trace = kv.kv_cache_trace(CONFIG, h, h_kv, window, prefill, t)
    for key in ("x", "w_q", "w_k", "w_v", "w_o", "heads_map", "q_t", "k_cache", "v_cache", "kv_cache", "scores_t", "weights_t",
                "context_t", "output_t"):
        value = trace[key].value
        cells = list(np.ndindex(value.shape))
        for cell in cells[:: max(1, len(cells) // 40)]:
            e = explain(trace, key, cell)
            stored = value[cell]
            assert e.value == stored or abs(e.value - stored) <= 1e-12 * max(1, abs(stored)), (key, cell)
            assert e.independent, (key, cell)


def test_a_score_cell_shows_q_dot_k_over_root_d_head():
    trace = kv.kv_cache_trace(CONFIG, 4, 2, None, 2, 3)
    e = explain(trace, "scores_t", (3, 1))
    assert "⌊3/2⌋ = 1" in e.note and e.n_terms == 4
    assert e.text.splitlines()[0] == "ŝ[3,1] = Σ_c q_t[3,c]·K_cache[1,1,c] / √d_head"
    q, k = trace["q_t"].value[3], trace["k_cache"].value[1, 1]
    assert e.value == pytest.approx(q @ k / 2, abs=1e-15)


def test_a_cache_row_is_x_j_times_its_kv_heads_columns():
    trace = kv.kv_cache_trace(CONFIG, 4, 2, 2, 0, 3)              # the cache holds tokens 2 and 3
    e = explain(trace, "k_cache", (1, 0, 2))
    assert e.text.startswith("K_cache[1,0,2] = Σ_m X[2,m]·W_K[m,6]")   # token 2, column 1·4 + 2
    assert "token 2" in e.note and "KV head 1" in e.note
    v = explain(trace, "kv_cache", (1, 0, 4 + 2))                 # the right half is V's
    assert v.text.startswith("V_cache[1,0,2] = Σ_m X[2,m]·W_V[m,6]")
    assert v.value == pytest.approx(trace["kv_cache"].value[1, 0, 6], abs=1e-14)


# ---- the calculator --------------------------------------------------------------------------------------

def test_llama_3_8b_by_hand():
    p = kv.PRESETS["Llama 3 8B"]
    assert kv.bytes_per_token(p, 2) == 2 * 32 * 8 * 128 * 2 == 131_072 == 128 * 1024
    assert kv.human(kv.bytes_per_token(p, 2)) == "128 KiB"
    assert kv.cache_bytes(p, 8192, 2) == 2 ** 30 and kv.human(2 ** 30) == "1 GiB"
    assert kv.cache_bytes(p, 8192, 2, mha=True) == 4 * 2 ** 30          # 32 KV heads instead of 8
    assert kv.bytes_per_token(p, 1) == 65_536                            # fp8


@pytest.mark.parametrize("name, per_token", [
    ("Llama 3 70B", 2 * 80 * 8 * 128 * 2), ("Mistral 7B", 2 * 32 * 8 * 128 * 2), ("Qwen2.5-7B", 2 * 28 * 4 * 128 * 2),
    ("Gemma 2 9B", 2 * 42 * 8 * 256 * 2), ("DeepSeek-V3", 61 * (512 + 64) * 2)])
def test_presets_bytes_per_token_by_hand(name, per_token):
    assert kv.bytes_per_token(kv.PRESETS[name], 2) == per_token
    assert kv.bytes_per_token(kv.PRESETS[name], 1) * 2 == per_token


def test_calculator_window_presets_stop_growing():
    """Mistral stops at 4096 tokens on every layer; Gemma 2's local half stops, its global half grows;
    the presets without a window grow linearly. The claims hold exactly where that is so."""
    for p in kv.PRESETS.values():
        per = p.values_per_token_layer * 2
        w = 4096
        growth = kv.cache_bytes(p, 4 * w) - kv.cache_bytes(p, 2 * w)
        local = p.local_layers if p.window else 0
        assert growth == per * (p.layers - local) * 2 * w
        assert holds("kv_calc_window", p) == (growth == 0)
        assert holds("kv_calc_half_window", p) == (0 < growth < per * p.layers * 2 * w)
        assert kv.cache_bytes(p, w) == kv.bytes_per_token(p) * w      # up to the window every layer grows
    gemma = kv.PRESETS["Gemma 2 9B"]
    assert kv.cache_bytes(gemma, 8192) == 2 * 8 * 256 * 2 * (21 * 8192 + 21 * 4096)


def test_latent_cache_is_not_doubled():
    """DeepSeek-V3 keeps one latent (512) and one shared RoPE key (64) per token and layer: no ×2; the others
    keep a K and a V row per KV head."""
    for p in kv.PRESETS.values():
        doubled = 2 * p.layers * p.n_kv_heads * p.d_head * 2
        assert (kv.bytes_per_token(p) == doubled) == (not holds("kv_calc_latent", p))
    ds = kv.PRESETS["DeepSeek-V3"]
    assert kv.bytes_per_token(ds) == 61 * 576 * 2 == 70_272
    assert kv.cache_bytes(ds, 1, mha=True) == 61 * 128 * (192 + 128) * 2


def test_calculator_cells_are_explained():
    trace = kv.calculator_trace(2, 8192)
    for cell in np.ndindex(trace["cache_bytes"].shape):
        e = explain(trace, "cache_bytes", cell)
        assert e.value == trace["cache_bytes"].value[cell]
    e = explain(trace, "cache_bytes", (0, 0))
    assert e.text.splitlines()[1].strip() == "= 2·32·8·128·2·1" and "131,072 bytes = 128 KiB" in e.text


def test_memory_curves_bend_at_the_window():
    rows = kv.memory_curves(2, 16384)
    mistral = {r["tokens"]: r["GiB"] for r in rows if r["preset"] == "Mistral 7B" and r["cache"] == "as published"}
    assert 4096 in mistral and mistral[16384] == mistral[4096] == 0.5


# ---- hostile inputs --------------------------------------------------------------------------------------

@pytest.mark.parametrize("args, words", [
    ((4, 3, None, 2), "cannot be shared evenly"), ((4, 8, None, 2), "cannot be shared evenly"),
    ((4, 2, 0, 2), "at least 1 key"), ((4, 2, -3, 2), "at least 1 key"), ((4, 2, None, 9), "set it to 0 … 4"),
    ((0, 1, None, 2), "from 1 to 8"), ((9, 1, None, 2), "from 1 to 8"), ((True, 1, None, 2), "from 1 to 8"),
    ((4, 2, None, -1), "set it to 0 … 4")])
def test_bad_controls_say_what_to_change(args, words):
    with pytest.raises(ConfigError, match=re.escape(words)):
        kv.kv_cache_trace(CONFIG, *args, 0)


def test_bad_step_and_calculator_inputs():
    with pytest.raises(ConfigError, match="0 … 3"):
        kv.kv_cache_trace(CONFIG, 4, 2, None, 2, 4)
    with pytest.raises(ConfigError, match="2 \\(bf16\\) or 1"):
        kv.calculator_trace(4, 8192)
    with pytest.raises(ConfigError, match="context length"):
        kv.calculator_trace(2, 0)
    with pytest.raises(ConfigError, match="more than 512"):
        kv.kv_cache_trace(Config(embedding="random", d_k=128, d_v=4), 8, 1, None, 0, 0)


# ---- the page's claims, as properties -------------------------------------------------------------------

GRID = [kv_settings(h, h_kv, w) for h in range(1, 9) for h_kv in range(1, 9) if h % h_kv == 0 for w in (None, 2)]


def test_mha_every_query_head_reads_its_own_kv_head():
    for s in GRID:
        own = all(kv_head_of(h, s.n_heads, s.n_kv_heads) == h for h in range(s.n_heads))
        assert own == holds("kv_mha_own_heads", s), s


def test_gqa_cache_is_g_times_smaller_than_mha():
    """The cache's size (kv_cache_decode's, not a formula) is g times MHA's; "smaller" only when g > 1."""
    for h, h_kv in [(h, k) for h in (1, 2, 4, 6, 8) for k in range(1, h + 1) if h % k == 0]:
        ours = kv.decode(CONFIG, h, h_kv, None, 0).cache
        mha = kv.decode(CONFIG, h, h, None, 0).cache
        ratio = mha["k"].size / ours["k"].size
        assert ratio == h // h_kv and mha["v"].size / ours["v"].size == ratio
        s = kv_settings(h, h_kv)
        assert holds("kv_gqa_smaller", s) == (ratio > 1)
        assert ("times smaller" in say("kv_gqa_smaller", s, g=s.g, n_kv_heads=h_kv, n_heads=h)) == (ratio > 1)


def test_mqa_all_query_heads_read_kv_head_0():
    for s in GRID:
        one = {kv_head_of(h, s.n_heads, s.n_kv_heads) for h in range(s.n_heads)} == {0}
        assert (one and s.n_heads > 1) == holds("kv_mqa_one_head", s), s


@pytest.mark.parametrize("config", [CONFIG, LONG])
def test_cache_stops_growing_at_the_window(config):
    """With W the decoded steps' caches hold min(t + 1, W) tokens, the last W; without one t + 1, every
    step one more (the claim's `otherwise`)."""
    n = len(kv.decode(config, 2, 1, None, 0).tokens)
    for window in (None, 1, 2, 3, n, n + 5):
        sizes = [len(kv.kv_cache_trace(config, 2, 1, window, 0, t).facts["positions"]) for t in range(n)]
        s = kv_settings(2, 1, window, 0, n)
        if window is None:
            assert sizes == list(range(1, n + 1)) and not holds("kv_stops_growing", s)
            assert say("kv_stops_growing", s) == CLAIMS["kv_stops_growing"].otherwise
        else:
            assert sizes == [min(t + 1, window) for t in range(n)] and holds("kv_stops_growing", s)
            assert kv.kv_cache_trace(config, 2, 1, window, 0, n - 1).facts["positions"] == \
                list(range(max(0, n - window), n))


def test_every_claim_of_the_page_names_a_test_here():
    import tests.test_kv_cache as here
    mine = [c for c in CLAIMS.values() if c.about in ("kv_cache", "kv_cache_calc")]
    assert len(mine) == 7
    for c in mine:
        path, name = c.proof.split("::")
        assert path == "tests/test_kv_cache.py" and callable(getattr(here, name, None)), c.key


# ---- the page --------------------------------------------------------------------------------------------

def proof(at) -> tuple[float, float]:
    box = next(m.value for m in at.markdown if "Decoding = the full pass" in m.value)
    found = re.search(r"max \|o_decoded − o_full\| = \*\*(\S+)\*\*.*max \|a_t − A_full\[t\]\| = \*\*(\S+)\*\*", box)
    return float(found[1]), float(found[2])


def badge_of(at, title: str) -> str:
    md = next(m.value for m in at.markdown if title in m.value)
    return re.findall(r"straighten: ([^\]]+)\]", md)


def test_page_decodes_and_proves_it_live():
    at = open_page(PAGE)
    no_exception(at)
    assert not at.error, messages(at)
    outputs, weights = proof(at)
    assert outputs < 1e-12 and weights < 1e-12
    assert "mask=causal_mask(n)" in next(m.value for m in at.markdown if "Decoding = the full pass" in m.value)
    assert badge_of(at, "The cache: K and V") == ["KV head=2 × cached=3 × 2·d_head=8"]     # t = 2 after a 2-token prompt
    assert "**t = 2 “you”** is decoded alone" in next(m.value for m in at.markdown if "**t = 2" in m.value)
    assert len(charts(at)) == 1 + 2 + 2 + 2                  # q_t, [K | V] per KV head, ŝ and a, c and o


def test_step_slider_and_window_move_the_cache():
    at = open_page(PAGE)
    at.slider(key="kv_cache.t").set_value(3).run()
    no_exception(at)
    assert badge_of(at, "The cache: K and V")[0] == "KV head=2 × cached=4 × 2·d_head=8"
    at.number_input(key="kv_cache.window").set_value(2).run()
    no_exception(at)
    assert badge_of(at, "The cache: K and V")[0] == "KV head=2 × cached=2 × 2·d_head=8"
    text = next(m.value for m in at.markdown if "**t = 3" in m.value)
    assert "token 1's row falls out" in text and "The cache stops growing at W = 2 tokens" in text
    assert "sliding_window_mask(n, 2)" in next(m.value for m in at.markdown if "Decoding = the full pass" in m.value)
    at.slider(key="kv_cache.t").set_value(0).run()
    text = next(m.value for m in at.markdown if "**t = 0" in m.value)
    assert "is in the prompt" in text and "masked after token 0" in text
    assert proof(at)[0] < 1e-12


def test_kv_heads_change_the_cache_and_the_sharing():
    at = open_page(PAGE)
    at.slider(key="kv_cache.kv_heads").set_value(1).run()
    no_exception(at)
    assert badge_of(at, "The cache: K and V")[0] == "KV head=1 × cached=3 × 2·d_head=8"
    at.session_state["kv_cache.tab"] = "Which heads share K and V"
    at.run()
    no_exception(at)
    text = next(m.value for m in at.markdown if "g = H / H_kv" in m.value)
    assert "multi-query attention (MQA)" in text and "g = 4 times smaller than MHA's" in text
    assert "multi-head attention (MHA)" not in text
    table = next(df.value for df in at.dataframe if "H_kv" in df.value.columns)
    assert list(table.index) == ["MHA", "MQA"] and list(table["K and V cache, each"]) == ["(4, 4, 4)", "(1, 4, 4)"]
    assert list(table["× smaller than MHA"]) == [1, 4]


@pytest.mark.parametrize("key, kind, value, words", [
    ("kv_cache.window", "number_input", 0, "The window W must be at least 1 key"),
    ("kv_cache.kv_heads", "slider", 3, "4 query heads cannot be shared evenly by 3 KV heads"),
    ("kv_cache.prefill", "number_input", 9, "The prompt (prefill) is 9 tokens but the sentence has 4")])
def test_hostile_controls_get_a_message(key, kind, value, words):
    at = open_page(PAGE)
    getattr(at, kind)(key=key).set_value(value).run()
    no_exception(at)
    assert words in messages(at)


def test_a_window_longer_than_the_sentence_is_said():
    at = open_page(PAGE)
    at.number_input(key="kv_cache.window").set_value(10).run()
    no_exception(at)
    assert "W = 10 ≥ n = 4" in messages(at) and not at.error


def test_a_shorter_sentence_keeps_the_step_inside_it():
    at = open_page(PAGE)
    at.slider(key="kv_cache.t").set_value(3).run()
    at.text_input(key="w.sentence").set_value("I love").run()
    no_exception(at)
    assert not at.error, messages(at)
    assert at.slider(key="kv_cache.t").value == 1
    at.number_input(key="kv_cache.prefill").set_value(2).run()
    at.text_input(key="w.sentence").set_value("hello").run()            # one token: no step slider, prompt 1
    no_exception(at)
    assert not at.error, messages(at)
    assert at.number_input(key="kv_cache.prefill").value == 1
    assert "**t = 0 “hello”** is in the prompt" in next(m.value for m in at.markdown if "**t = 0" in m.value)


def test_calculator_tab_shows_the_presets():
    at = open_page(PAGE)
    at.session_state["kv_cache.tab"] = "Cache size calculator"
    at.run()
    no_exception(at)
    text = next(m.value for m in at.markdown if m.value.startswith("**Llama 3 8B:**"))
    assert "128 KiB per token, **1 GiB** at 8,192 tokens (MHA: 4 GiB)" in text
    table = next(df.value for df in at.dataframe if "per token" in df.value.columns)
    assert table.loc["Llama 3 8B", "per token"] == "128 KiB" and table.loc["DeepSeek-V3", "per token"] == "68.6 KiB"
    spec = next(c for c in charts(at) if c.get("mark", {}).get("type") == "line" or c.get("mark") == "line")
    assert {r["preset"] for r in spec["data"]["values"]} == set(kv.PRESETS)
    at.selectbox(key="kv_cache.preset").set_value("Mistral 7B").run()
    at.select_slider(key="kv_cache.tokens").set_value(131072).run()
    text = next(m.value for m in at.markdown if m.value.startswith("**Mistral 7B:**"))
    assert "**512 MiB** at 131,072 tokens" in text and "Every layer's cache stops growing at 4,096 tokens." in text
    at.radio(key="kv_cache.bytes").set_value(1).run()
    text = next(m.value for m in at.markdown if m.value.startswith("**Mistral 7B:**"))
    assert "64 KiB per token, **256 MiB**" in text
    at.session_state["kv_cache.calc.table"] = {"selection": {"rows": [], "columns": [], "cells": [(0, "per token")]}}
    at.run()
    no_exception(at)
    shown = [m.value for m in at.markdown if "was made" in m.value]
    assert shown and "2 \\cdot 32 \\cdot 8 \\cdot 128 \\cdot 1 \\cdot 1" in shown[0]
    at.session_state["kv_cache.calc.table"] = {"selection": {"rows": [], "columns": [],
                                                             "cells": [(2, "MHA at 131,072")]}}
    at.run()
    shown = [m.value for m in at.markdown if "was made" in m.value]
    assert "2 \\cdot 32 \\cdot 128 \\cdot 1 \\cdot (32 \\cdot \\min(131072, 4096))" in shown[0], shown


def test_torch_expander_checks_live():
    at = open_page(PAGE)
    at.session_state["kv_cache.torch"] = True
    at.run()
    no_exception(at)
    text = next(m.value for m in at.markdown if "enable_gqa=True" in m.value)
    numbers = [float(x) for x in re.findall(r"\*\*(\S+)\*\*", text)]
    assert len(numbers) == 2 and max(numbers) < 1e-12


@pytest.mark.parametrize("key, cell, title", [("q_t.None", (1, 2), "q_t[1,2]"), ("kv_cache.1", (0, 5), "V_cache[1,0,1]"),
                                              ("scores_t.None", (3, 1), "ŝ[3,1]")])
def test_clicking_a_cell_explains_it(key, cell, title):
    """A click on a heatmap cell (its selection state, as the browser sends it) shows that number's arithmetic."""
    at = open_page(PAGE)
    at.session_state[f"kv_cache.hm.{key}"] = {"selection": {"cell": [{"i": cell[0], "j": cell[1]}]}}
    at.run()
    no_exception(at)
    shown = [m.value.replace("\\", "") for m in at.markdown if "was made" in m.value]
    assert shown and shown[0].startswith(f"**How {title} was made**"), shown
    assert any("✓ recomputed from the terms above" in c.value for c in at.caption)


def test_claims_shown_only_where_they_hold():
    """Walk the page's controls: no claim of this page is shown where it does not hold."""
    from attention_core.claims import shown_outside
    for h, h_kv, w in itertools.product((1, 4), (1, 2, 4), (None, 2)):
        if h % h_kv:
            continue
        at = open_page(PAGE)
        at.slider(key="kv_cache.heads").set_value(h)
        at.slider(key="kv_cache.kv_heads").set_value(h_kv)
        at.number_input(key="kv_cache.window").set_value(w).run()
        s = kv_settings(h, h_kv, w)
        for tab in ("Decoding, step by step", "Which heads share K and V"):
            at.session_state["kv_cache.tab"] = tab
            at.run()
            no_exception(at)
            text = "\n".join(m.value for m in at.markdown)
            assert not shown_outside(text, s, about="kv_cache"), (h, h_kv, w, tab)


def test_calculator_claims_shown_only_for_their_presets():
    from attention_core.claims import shown_outside
    at = open_page(PAGE)
    at.session_state["kv_cache.tab"] = "Cache size calculator"
    at.run()
    for name, p in kv.PRESETS.items():
        at.selectbox(key="kv_cache.preset").set_value(name).run()
        no_exception(at)
        text = next(m.value for m in at.markdown if m.value.startswith(f"**{name}:**"))
        assert not shown_outside(text, p, about="kv_cache_calc"), name
        assert ("no factor 2" in text) == (name == "DeepSeek-V3")
        assert ("keeps growing past 4,096" in text) == (name == "Gemma 2 9B")
