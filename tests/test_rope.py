"""RoPE: attention_core.math.rope and the /rope page (attention_core.lessons.rope, ui/today/rope_view.py).

Against torch as the model libraries write it (Meta's Llama code: torch.polar / view_as_complex; Hugging
Face's Llama: cos/sin with rotate_half), against RoFormer's formula θ_i = 10000^(−2(i−1)/d) (i from 1
there), against hand-computed rotations; the page's claims as properties (hypothesis); the page's numbers
against the forward pass's own (Position = RoPE under the sidebar's settings: its base, weights, heads, KV
heads, bias, score); every explainer's numbers reproduce its cell; the page in AppTest, from a link, and
walked for its claims under unusual settings.
"""
from __future__ import annotations

import itertools
import math
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attention_core import Config, ConfigError, run_forward
from attention_core.forward.claims import CLAIMS, holds, say, shown_outside
from attention_core.explanations import explain
from attention_core.lessons.rope import (RopeSettings, complex_form, head_rows, pair_path, rope_lesson, score_key,
                                         shift_check, torch_checks, torch_rope_complex, torch_rope_rotate_half,
                                         with_rope)
from attention_core.math.rope import (half_permutation, rope_angles, rope_frequencies, rotary_complex,
                                      rotary_embedding, rotate_half)
from tests.apptest_util import formulas, messages, no_exception, open_page

PAGE = "app_pages/40_rope.py"
SETTINGS = settings(max_examples=30, deadline=None)

even_d = st.integers(1, 8).map(lambda h: 2 * h)
bases = st.sampled_from([10_000.0, 500_000.0, 1_000_000.0, 2.0, 123.4])
SENTENCE = "the cat sat on the mat"


def rows(seed: int, n: int, d: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, d))


def lesson_of(config: Config, head: int = 0, pairing: str = "interleaved", offset: int = 0):
    forward = run_forward(config)
    return forward, rope_lesson(forward, head, pairing, offset)


# ---- the rotation against torch and the papers -------------------------------------------------------

def test_torch_forms_rotate_a_unit_vector_by_one_radian_at_position_one():
    x = np.array([[1.0, 0.0], [1.0, 0.0]])                     # the same row at positions 0 and 1, d = 2
    want = np.array([[1.0, 0.0], [math.cos(1.0), math.sin(1.0)]])
    for f in (torch_rope_complex, torch_rope_rotate_half):
        np.testing.assert_allclose(f(x, None, 10_000.0), want, atol=1e-15)
    np.testing.assert_allclose(rotary_embedding(x), want, atol=1e-15)


def test_frequencies_are_roformers():
    """RoFormer (eq. 15): Θ = {θ_i = 10000^(−2(i−1)/d), i = 1 … d/2}; this app counts pairs from 0, so the
    paper's θ_1 = 1 is the app's θ_0."""
    d = 8
    paper = [10_000 ** (-2 * (i - 1) / d) for i in range(1, d // 2 + 1)]
    np.testing.assert_allclose(rope_frequencies(d), paper, rtol=1e-15)
    assert rope_frequencies(d)[0] == 1.0 == paper[0]
    np.testing.assert_allclose(rope_angles([0, 3, 7], d, 500_000.0), np.outer([0, 3, 7], rope_frequencies(d, 5e5)))


@SETTINGS
@given(seed=st.integers(0, 10_000), n=st.integers(1, 9), d=even_d, base=bases, start=st.integers(0, 5000))
def test_interleaved_equals_metas_complex_form_in_torch(seed, n, d, base, start):
    x = rows(seed, n, d)
    positions = np.arange(n) + start
    mine = rotary_embedding(x, positions, base, "interleaved")
    np.testing.assert_allclose(mine, torch_rope_complex(x, positions, base), atol=1e-12)
    np.testing.assert_allclose(mine, rotary_complex(x, positions, base), atol=1e-12)


@SETTINGS
@given(seed=st.integers(0, 10_000), n=st.integers(1, 9), d=even_d, base=bases, start=st.integers(0, 5000))
def test_half_equals_hugging_faces_rotate_half_in_torch(seed, n, d, base, start):
    x = rows(seed, n, d)
    positions = np.arange(n) + start
    mine = rotary_embedding(x, positions, base, "half")
    np.testing.assert_allclose(mine, torch_rope_rotate_half(x, positions, base), atol=1e-12)
    np.testing.assert_allclose(mine, complex_form(x, positions, base, "half"), atol=1e-12)


@SETTINGS
@given(seed=st.integers(0, 10_000), d=even_d, base=bases, p=st.integers(0, 1000))
def test_rotation_keeps_lengths(seed, d, base, p):
    x = rows(seed, 1, d)
    for pairing in ("interleaved", "half"):
        np.testing.assert_allclose(np.linalg.norm(rotary_embedding(x, [p], base, pairing)), np.linalg.norm(x))


# ---- the page's claims, as properties --------------------------------------------------------------------

@SETTINGS
@given(seed=st.integers(0, 10_000), d=even_d, base=bases, p=st.integers(0, 200), p2=st.integers(0, 200),
       offset=st.integers(0, 2000), pairing=st.sampled_from(["interleaved", "half"]))
def test_dot_product_scores_depend_only_on_the_distance(seed, d, base, p, p2, offset, pairing):
    """(R_p q)·(R_p′ k) = q·R_(p′−p) k: moving both positions by the same offset changes no dot product (exact in
    real arithmetic; float64 rounding only). The claim holds for dot-product scores only: a bilinear score of the
    rotated rows, or a position vector added to X, moves with the sentence (next test)."""
    q, k = rows(seed, 1, d), rows(seed + 1, 1, d)
    rot = lambda x, at: rotary_embedding(x, [at], base, pairing)[0]
    score = rot(q, p) @ rot(k, p2)
    assert abs(rot(q, p + offset) @ rot(k, p2 + offset) - score) <= 1e-9 * (1 + abs(score))
    rel = q[0] @ rot(k, p2 - p) if p2 >= p else rot(q, p - p2) @ k[0]          # q · R_(p′−p) k
    assert abs(rel - score) <= 1e-9 * (1 + abs(score))
    for score_name in ("dot", "scaled_dot"):
        assert holds("rope_shift_invariant", RopeSettings(Config(positional="rope", score=score_name), pairing))


def test_the_shift_changes_scores_outside_the_claim():
    q, k = rows(1, 1, 4), rows(2, 1, 4)
    w = np.random.default_rng(3).standard_normal((4, 4))
    rot = lambda x, p: rotary_embedding(x, [p], 10_000.0)[0]
    assert abs(rot(q, 1) @ w @ rot(k, 3) - rot(q, 11) @ w @ rot(k, 13)) > 1e-3           # bilinear: not relative
    for score in ("additive", "bilinear"):
        config = Config(sentence=SENTENCE, positional="rope", score=score, weights="random")
        s = RopeSettings(config, offset=100)
        assert not holds("rope_shift_invariant", s) and not holds("rope_distance_only", s)
        forward = run_forward(config)
        c = shift_check(forward, 0, "interleaved", 100)
        assert c["rope"] > 1e-3                                     # the page's own scores do move
        assert say("rope_shift_invariant", s) == CLAIMS["rope_shift_invariant"].otherwise
    c = shift_check(run_forward(with_rope(Config())), 0, "interleaved", 100)        # sinusoids added to X instead
    assert c["added"] > 1e-2 and c["rope"] < 1e-12 and c["rot"] > 1e-2


@pytest.mark.parametrize("config", [
    Config(sentence=SENTENCE, positional="rope", weights="random", d_k=6),
    Config(sentence=SENTENCE, positional="rope", score="dot", pe_base=500_000.0, n_heads=3, bias=True,
           weights="random"),
    Config(sentence=SENTENCE, positional="rope", n_heads=4, n_kv_heads=2, weights="random")])
@pytest.mark.parametrize("pairing", ["interleaved", "half"])
def test_lesson_scores_are_q_dot_r_of_the_distance_k(config, pairing):
    """Claim rope_distance_only: each score of the page is q_i · R_(j−i) k_j (/√d_k), for every head shown."""
    h = config.n_heads - 1
    _, t = lesson_of(config, h, pairing)
    q, k, base = t["q"].value, t["k"].value, config.pe_base
    scale = math.sqrt(config.d_k) if config.score == "scaled_dot" else 1.0
    for i, j in itertools.product(range(t.n), repeat=2):
        r = rotary_embedding(k[j:j + 1], [j - i], base, pairing)[0] if j >= i else None
        want = q[i] @ r if r is not None else rotary_embedding(q[i:i + 1], [i - j], base, pairing)[0] @ k[j]
        assert abs(t[score_key(config)].value[i, j] - want / scale) < 1e-10
    assert holds("rope_distance_only", RopeSettings(config, pairing))


@SETTINGS
@given(seed=st.integers(0, 10_000), n=st.integers(1, 6), d=even_d, base=bases, offset=st.integers(0, 1000),
       pairing=st.sampled_from(["interleaved", "half"]))
def test_a_shift_above_0_moves_every_rotated_row(seed, n, d, base, offset, pairing):
    """Claim rope_rows_move: at positions p + offset (offset > 0) every row's pair 0 turns `offset` radians further,
    never a whole number of turns, so every rotated row moves; at offset 0 nothing moves."""
    x = rows(seed, n, d)
    here, moved = rotary_embedding(x, None, base, pairing), rotary_embedding(x, np.arange(n) + offset, base, pairing)
    change = np.abs(moved - here).max(axis=1)                                          # (n,)
    s = RopeSettings(Config(d_k=d, positional="rope"), pairing, offset)
    assert holds("rope_rows_move", s) == (offset > 0)
    if offset:
        assert (change > 1e-9).all()
    else:
        assert (change == 0).all()
        assert say("rope_rows_move", s) == CLAIMS["rope_rows_move"].otherwise


@SETTINGS
@given(seed=st.integers(0, 10_000), d=even_d, base=bases, n=st.integers(1, 4))
def test_pairings_differ_unless_d_k_is_2_or_one_token(seed, d, base, n):
    """Claims rope_pairings_differ, rope_one_pair, rope_one_token: tokens at positions 0 … n − 1 give different
    rotated rows in the two pairings exactly when d_k ≥ 4 and n ≥ 2; with d_k = 2 both pair (x_0, x_1), and one
    token stands at position 0, where R_0 = I turns nothing."""
    x = rows(seed, n, d)
    inter, half = rotary_embedding(x, base=base), rotary_embedding(x, base=base, pairing="half")
    s = RopeSettings(Config(d_k=d, positional="rope"), n=n)
    assert holds("rope_one_pair", s) == (d == 2) and holds("rope_one_token", s) == (n == 1)
    if d == 2 or n == 1:
        np.testing.assert_allclose(half, inter, atol=1e-15)
        assert not holds("rope_pairings_differ", s)
        if d == 2:
            np.testing.assert_array_equal(half_permutation(2), [0, 1])
        if n == 1:
            np.testing.assert_array_equal(inter, x)                   # position 0: nothing turns
    else:
        assert np.abs(half - inter).max() > 1e-6          # random rows: the pairs are other columns
        assert holds("rope_pairings_differ", s)


@pytest.mark.parametrize("d_k, sentence", [(2, SENTENCE), (4, SENTENCE), (6, SENTENCE), (4, "love")])
def test_half_pairing_is_the_forward_pass_only_when_d_k_is_2_or_one_token(d_k, sentence):
    """Claim rope_half_not_forward: the half pairing's Q^R, K^R and scores differ from the forward pass's (which
    pairs (x_2i, x_2i+1)) exactly when d_k ≥ 4 and there are two tokens or more; the interleaved ones are the
    forward pass's own."""
    config = Config(sentence=sentence, positional="rope", d_k=d_k, n_heads=2, weights="random")
    forward, half = lesson_of(config, 1, "half")
    _, inter = lesson_of(config, 1, "interleaved")
    n = forward.n
    assert max(inter.facts["forward_gap"].values()) == 0.0
    assert holds("rope_half_not_forward", RopeSettings(config, "half", n=n)) == (d_k >= 4 and n >= 2)
    assert RopeSettings(config, "half").n == n                          # counted from the sentence when not given
    assert not holds("rope_half_not_forward", RopeSettings(config, "interleaved", n=n))
    gap = half.facts["forward_gap"]
    if d_k >= 4 and n >= 2:
        assert min(gap.values()) > 1e-3
        assert "a comparison the forward pass does not make" in half["q_rot"].why
    else:
        assert max(gap.values()) < 1e-12
        assert "a comparison the forward pass does not make" not in half["q_rot"].why
        assert ("with d_k = 2 its one pair is the forward pass's (x_0, x_1)" if d_k == 2 else
                "with one token at position 0 nothing turns, so these are the forward pass's") in half["q_rot"].why


@SETTINGS
@given(seed=st.integers(0, 10_000), n=st.integers(1, 6), d=even_d, base=bases)
def test_half_of_the_permuted_columns_is_the_permuted_interleaved_result(seed, n, d, base):
    x, perm = rows(seed, n, d), half_permutation(d)
    np.testing.assert_allclose(rotary_embedding(x[:, perm], base=base, pairing="half"),
                               rotary_embedding(x, base=base)[:, perm], atol=1e-12)
    # weights permuted consistently (W_Q, W_K columns): the same scores
    w_q, w_k = rows(seed + 1, 5, d), rows(seed + 2, 5, d)
    e = rows(seed + 3, n, 5)
    inter = rotary_embedding(e @ w_q, base=base) @ rotary_embedding(e @ w_k, base=base).T
    half = (rotary_embedding(e @ w_q[:, perm], base=base, pairing="half")
            @ rotary_embedding(e @ w_k[:, perm], base=base, pairing="half").T)
    np.testing.assert_allclose(half, inter, atol=1e-10)


def test_rotate_half_is_hugging_faces():
    np.testing.assert_array_equal(rotate_half(np.array([1.0, 2, 3, 4])), [-3.0, -4, 1, 2])
    np.testing.assert_array_equal(half_permutation(6), [0, 2, 4, 1, 3, 5])


# ---- the page's numbers are the forward pass's -----------------------------------------------------------

FORWARD_CONFIGS = [
    Config(positional="rope"),                                                              # trained, the defaults
    Config(sentence=SENTENCE, positional="rope", pe_base=500_000.0, n_heads=4, n_kv_heads=2, bias=True,
           mask="sliding_window", window=2, weights="random", d_k=6),                         # GQA, bias, window
    Config(sentence=SENTENCE, positional="rope", n_heads=2, n_kv_heads=1, score="additive", weights="random"),   # MQA
    Config(sentence=SENTENCE, positional="rope", n_heads=3, score="bilinear", d_k=2, weights="random"),
    Config(sentence=SENTENCE, positional="rope", score="dot", pe_base=1_000_000.0, weights="random"),
]


@pytest.mark.parametrize("config", FORWARD_CONFIGS, ids=["defaults", "gqa-bias-window", "mqa-additive",
                                                         "bilinear-h3-dk2", "dot-1e6"])
def test_the_page_shows_the_forward_passs_q_k_rotated_rows_and_scores(config):
    forward = run_forward(config)
    d, g = config.d_k, config.n_heads // config.kv_heads
    for h in range(config.n_heads):
        t = rope_lesson(forward, h, "interleaved")
        kv = h // g
        x = forward["x_embed"].value                                                     # X = X_emb under RoPE
        want_q = x @ forward["w_q"].value[:, h * d:(h + 1) * d] + (forward["b_q"].value[h * d:(h + 1) * d]
                                                                   if config.bias else 0)
        np.testing.assert_allclose(t["q"].value, want_q, atol=1e-12)
        np.testing.assert_array_equal(t["k"].value, forward["k"].value[:, kv * d:(kv + 1) * d])
        heads = config.n_heads > 1
        np.testing.assert_array_equal(t["q_rot"].value, forward["q_rot"].value[h] if heads else forward["q_rot"].value)
        np.testing.assert_array_equal(t["k_rot"].value, forward["k_rot"].value[kv] if heads else forward["k_rot"].value)
        key = score_key(config)
        np.testing.assert_array_equal(t[key].value, forward[key].value[h] if heads else forward[key].value)
        np.testing.assert_allclose(t["q_rot"].value, rotary_embedding(t["q"].value, base=config.pe_base), atol=1e-12)
        np.testing.assert_allclose(t["angles"].value, rope_angles(t.n, d, config.pe_base))
        assert t.facts["base"] == config.pe_base and t.facts["complex_gap"] < 1e-12
        assert t.facts["perm_rotation_gap"] < 1e-12 and t.facts["perm_scores_gap"] < 1e-10
        assert (t.facts["mismatch_gap"] > 1e-6) == (d >= 4)
        # the half pairing and a shift are recomputed with the same score function
        moved = rope_lesson(forward, h, "half", 9)
        np.testing.assert_allclose(moved["q_rot"].value, rotary_embedding(t["q"].value, np.arange(t.n) + 9,
                                                                          config.pe_base, "half"), atol=1e-12)
        if config.score in ("dot", "scaled_dot"):
            np.testing.assert_allclose(moved[key].value, rope_lesson(forward, h, "half")[key].value, atol=1e-10)


def test_torch_agrees_with_the_page_in_both_pairings_and_a_shift():
    forward = run_forward(FORWARD_CONFIGS[1])
    for pairing, offset in (("interleaved", 0), ("half", 250)):
        checks = torch_checks(rope_lesson(forward, 3, pairing, offset))
        assert max(checks.values()) < 1e-12, checks


@pytest.mark.parametrize("config,head,pairing,offset", [(FORWARD_CONFIGS[1], 3, "half", 0),
                                                        (FORWARD_CONFIGS[4], 0, "interleaved", 137),
                                                        (FORWARD_CONFIGS[3], 2, "half", 5)])
def test_every_explanation_reproduces_its_cell(config, head, pairing, offset):
    t = rope_lesson(run_forward(config), head, pairing, offset)
    keys = ["q", "k", "angles", "q_rot", "k_rot"] + ([score_key(config)] if config.score != "bilinear" else [])
    for key in keys:
        value = t[key].value
        for cell in itertools.product(*map(range, value.shape)):
            e = explain(t, key, cell)
            assert abs(e.value - value[cell]) <= 1e-12 * max(1.0, abs(value[cell])), (key, cell)
            for read_key, read_cell in e.reads:
                assert read_key in t and np.ndim(t[read_key].value) == len(read_cell)


def test_explanations_show_the_rotation_arithmetic():
    config = Config(sentence=SENTENCE, positional="rope", d_k=6, n_heads=2, n_kv_heads=1, weights="random")
    t = rope_lesson(run_forward(config), 1, "half")
    e = explain(t, "q_rot", (2, 4))                         # half: column 4 = pair 1's second (i + d/2)
    assert e.text.startswith("Q^R_1[2,4] = Q_1[2,1]·sin(2θ_1) + Q_1[2,4]·cos(2θ_1)"), e.text
    a = explain(t, "angles", (3, 2))
    assert "3 · 10000^(−4/6)" in a.text and abs(a.value - 3 * 10_000 ** (-4 / 6)) < 1e-15
    s = explain(t, "scaled_scores", (1, 2))
    assert "√6" in s.text and s.n_terms == 6 and "p′ − p = 2 − 1 = 1" in s.note
    k = explain(t, "k", (0, 5))                             # MQA: K_0's column 5 is column 0·6 + 5 of W_K
    assert k.text.startswith("K_0[0,5] = Σ_m X[0,m]·W_K[m,5]"), k.text
    q = explain(t, "q", (0, 5))                             # head 1's column 5 is column 1·6 + 5 = 11 of W_Q
    assert q.text.startswith("Q_1[0,5] = Σ_m X[0,m]·W_Q[m,11]") and "1·6 + 5 = 11" in q.note, q.text


def test_the_shifted_trace_rotates_by_p_plus_offset_and_keeps_the_scores():
    forward = run_forward(FORWARD_CONFIGS[1])
    t, moved = rope_lesson(forward, 0, "half"), rope_lesson(forward, 0, "half", 250)
    np.testing.assert_allclose(moved["angles"].value, rope_angles(np.arange(t.n) + 250, 6, 5e5))
    np.testing.assert_allclose(moved["scaled_scores"].value, t["scaled_scores"].value, atol=1e-12)
    assert np.abs(moved["q_rot"].value - t["q_rot"].value).max() > 1e-2
    e = explain(moved, "angles", (1, 0))
    assert "p=251" in e.text and abs(e.value - 251.0) < 1e-12
    assert "sin(251θ_0)" in explain(moved, "q_rot", (1, 3)).text
    assert shift_check(forward, 0, "half", 250)["trace"] is moved


def test_pair_path_turns_by_theta_per_position_as_rotary_embedding_does():
    path = pair_path(np.array([1.0, 0.0]), 0.5, 4)
    assert [r["position"] for r in path] == [0, 1, 2, 3, 4] and path[-1]["now"] and not path[0]["now"]
    assert abs(path[2]["x"] - math.cos(1.0)) < 1e-15 and abs(path[2]["y"] - math.sin(1.0)) < 1e-15
    q = rows(5, 1, 8)
    for pairing, (c0, c1) in (("interleaved", (4, 5)), ("half", (2, 6))):           # pair 2 in each pairing
        end = pair_path(q[0, [c0, c1]], rope_frequencies(8, 5e5)[2], 37)[-1]
        np.testing.assert_allclose([end["x"], end["y"]], rotary_embedding(q, [37], 5e5, pairing)[0, [c0, c1]],
                                   atol=1e-12)


def test_bad_inputs_are_config_errors_that_say_what_to_change():
    with pytest.raises(ConfigError, match=r"d_k must be even.*d_k=5 is odd.*4 or 6"):
        with_rope(Config(d_k=5))
    assert with_rope(Config()) == Config(positional="rope")
    forward = run_forward(Config(positional="rope", n_heads=2, weights="random"))
    for kwargs, words in ((dict(head=2), "not one of the 2 heads"), (dict(pairing="sideways"), "pairing"),
                          (dict(offset=-1), "offset"), (dict(offset=True), "offset")):
        with pytest.raises(ConfigError, match=words):
            rope_lesson(forward, **kwargs)
    with pytest.raises(ConfigError, match="Position = RoPE"):
        rope_lesson(run_forward(Config(weights="random")))


# ---- the page (AppTest) ----------------------------------------------------------------------------------

def page_text(at) -> str:
    return "\n".join([m.value for m in at.markdown] + [c.value for c in at.caption] + formulas(at))


def button(at, key: str):
    return next(b for b in at.button if b.key == key)


def test_the_page_under_sinusoidal_says_so_and_one_click_makes_the_sidebar_rope():
    at = open_page(PAGE)
    no_exception(at)
    text = page_text(at)
    assert "The sidebar's Position is Sinusoidal." in text and "same settings with Position = RoPE" in text
    assert "Its Q and K differ from page 3's (by up to" in text
    for words in (CLAIMS["rope_shift_invariant"].marker, CLAIMS["rope_pairings_differ"].marker,
                  CLAIMS["rope_distance_only"].marker, r"\pi = [0, 2, 1, 3]", "counted from 0 here (θ_0 = 1"):
        assert words.lower() in text.lower(), words
    assert r"p\,\theta_i = p \cdot 10000^{-2i/4}" in formulas(at)
    assert not any(w in text for w in ("tests/", "hypothesis", "rotary_embedding", "(d_k = 2, so 1 pairs)"))
    button(at, "rope.use").click().run()
    no_exception(at)
    assert at.session_state["s.positional"] == "rope" and at.query_params["positional"] == "rope"
    assert "The sidebar's Position is" not in page_text(at)
    assert "Page 3 shows them too." in page_text(at)


def test_the_base_is_the_sidebars_and_a_preset_sets_it():
    at = open_page(PAGE, query={"positional": "rope", "pe_base": "123"})
    no_exception(at)
    assert r"p\,\theta_i = p \cdot 123^{-2i/4}" in formulas(at)
    assert not [w for w in at.segmented_control] and not [w for w in at.text_input if w.key.startswith("rope.")]
    button(at, "rope.base.500000").click().run()
    no_exception(at)
    assert at.session_state["s.pe_base"] == 500_000.0
    assert r"p\,\theta_i = p \cdot 500000^{-2i/4}" in formulas(at)
    assert "rope.base.500000" not in [b.key for b in at.button]          # the base in force is not offered


def test_the_page_shows_the_sidebars_head_and_numbers():
    """Under RoPE, 4 heads, 2 KV heads, bias: head 3's Q^R, K^R and Ŝ are the forward pass's (the heatmaps' cells)."""
    query = {"positional": "rope", "n_heads": "4", "n_kv_heads": "2", "bias": "true", "weights": "random",
             "sentence": "we love you", "rope.head": "3"}
    at = open_page(PAGE, query=query)
    no_exception(at)
    text = page_text(at)
    assert "Head h = 3 of H = 4" in text and "KV head ⌊3/2⌋ = 1" in text and "Query head 3 reads KV head 1." in text
    assert "Q = X W_Q + b_Q and K = X W_K + b_K" in text
    assert any(r"\hat S_{3} = \frac{Q^R_{3} {K^R_{1}}^\top}" in f for f in formulas(at))
    forward = run_forward(at.session_state["s.last_good"])
    drawn = matrices(at)
    for want in (forward["q"].value[:, 12:16], forward["q_rot"].value[3], forward["scaled_scores"].value[3]):
        assert any(m.shape == want.shape and np.allclose(m, want, atol=1e-12) for m in drawn)


def matrices(at) -> list[np.ndarray]:
    """The heatmaps the page drew, as matrices (their cells' rows i, j, v)."""
    from tests.apptest_util import charts
    out = []
    for spec in charts(at):
        cells = spec.get("data", {}).get("values") or []
        if cells and {"i", "j", "v"} <= set(cells[0]):
            m = np.zeros((1 + max(c["i"] for c in cells), 1 + max(c["j"] for c in cells)))
            for c in cells:
                m[c["i"], c["j"]] = c["v"]
            out.append(m)
    return out


def test_shifting_keeps_the_dot_product_scores_and_says_nothing_moves_at_0():
    at = open_page(PAGE, query={"positional": "rope"})
    for offset in (0, 1, 500):
        at.slider(key="rope.offset").set_value(offset).run()
        no_exception(at)
        text = page_text(at)
        if offset == 0:
            assert CLAIMS["rope_rows_move"].otherwise.capitalize()[:20] in text
            assert "the rotated rows move" not in text and "do change" not in text
            continue
        rope = float(re.search(r"max \|ΔŜ\| = \*\*([0-9.e+-]+)\*\*: every score", text).group(1))
        added = float(re.search(r"X instead\*\*.*?max \|ΔŜ\| = \*\*([0-9.e+-]+)\*\*", text).group(1))
        assert rope < 1e-12 and added > 1e-3 and f"turns {offset}·θ_i further" in text


def test_the_pairing_toggle_and_the_position_slider():
    at = open_page(PAGE, query={"positional": "rope"})
    at.toggle(key="rope.half").set_value(True).run()
    no_exception(at)
    text = page_text(at)
    assert "columns (i, i + 2) of it, pair i" in text and r"(x_i, x_{i+2})" in text
    assert CLAIMS["rope_half_not_forward"].marker in text
    for p in (0, 5):
        at.slider(key="rope.p").set_value(p).run()
        assert any(f"p\\,\\theta_{{0}} = {p} \\cdot 1 = {p}\\ \\text{{rad}}" in f for f in formulas(at))
    at.slider(key="rope.pair").set_value(1).run()                    # θ_1 = 10000^(−2/4) = 0.01
    assert any(r"p\,\theta_{1} = 5 \cdot 0.0100 = 0.0500" in f for f in formulas(at))
    assert "columns 1, 3, half pairing" in page_text(at)


def test_odd_d_k_gets_a_message_and_a_click_not_a_traceback():
    at = open_page(PAGE, query={"d_k": "5"})
    no_exception(at)
    assert "needs an even d_k; the sidebar's d_k is 5" in messages(at)
    assert {b.key for b in at.button} >= {"rope.d_k.4", "rope.d_k.6"}
    button(at, "rope.d_k.6").click().run()
    no_exception(at)
    assert at.session_state["s.d_k"] == 6 and "needs an even d_k" not in messages(at)
    assert r"p\,\theta_i = p \cdot 10000^{-2i/6}" in formulas(at)


def test_d_k_2_says_the_pairings_agree():
    at = open_page(PAGE, query={"d_k": "2", "positional": "rope", "rope.half": "1"})
    no_exception(at)
    text = page_text(at)
    assert CLAIMS["rope_pairings_differ"].marker not in text and CLAIMS["rope_one_pair"].text in text
    assert CLAIMS["rope_half_not_forward"].marker not in text and "d_k = 2: one pair, i = 0" in text
    assert "(the half pairing: with d_k = 2 its one pair is the forward pass's (x_0, x_1))" in text
    assert "a comparison the forward pass does not make" not in text


@pytest.mark.parametrize("half", ["0", "1"])
def test_one_token_says_nothing_turns_and_no_gap_is_called_nonzero(half):
    """A one-word sentence stands at position 0, where R_0 = I: every gap between the pairings and from the
    forward pass is 0, and the page says why instead of calling them different."""
    at = open_page(PAGE, query={"positional": "rope", "sentence": "love", "rope.half": half})
    at.session_state["rope.checked"] = True
    at.run()
    no_exception(at)
    text = page_text(at)
    for words in (CLAIMS["rope_pairings_differ"].marker, CLAIMS["rope_half_not_forward"].marker,
                  "so these are not 0", "a comparison the forward pass does not make"):
        assert words not in text, words
    assert CLAIMS["rope_one_token"].text in text and "max difference **0**: with one token" in text
    gaps = re.findall(r"max \|Δ(?:Q\^R|K\^R|Ŝ)\| = \*\*([0-9.e+-]+)\*\*", text.split("**The forward pass.**")[1])
    assert gaps[:3] == ["0", "0", "0"]
    if half == "1":
        assert "(the half pairing: with one token at position 0 nothing turns, so these are the forward pass's)" in text


def test_the_checked_box_opens_with_live_torch_numbers_and_no_file_names():
    at = open_page(PAGE, query={"positional": "rope", "rope.half": "1"})
    assert "PyTorch, as two model libraries" not in page_text(at)            # closed: torch not run
    at.session_state["rope.checked"] = True
    at.run()
    no_exception(at)
    text = page_text(at)
    box = text[text.index("**The forward pass.**"):]
    gaps = [float(g) for g in re.findall(r"max difference \*\*([0-9.e+-]+)\*\*", box)]
    assert len(gaps) == 3 and max(gaps) < 1e-12, gaps
    assert not re.search(r"tests/|\.py|hypothesis|rotary_embedding|rotate_half\(|torch\.polar|view_as_complex", box)


def test_a_link_opens_the_same_view_with_the_same_numbers():
    """Own controls, the open tab and a clicked cell of K^R in the link, under the sidebar's RoPE, base, heads: the
    fresh session shows the same cell's arithmetic and writes the same link back."""
    query = {"positional": "rope", "pe_base": "500000", "n_heads": "2", "weights": "random",
             "rope.half": "1", "rope.head": "1", "rope.offset": "250", "rope.qk": "1", "rope.p": "7",
             "cell": "rope.hm:k_rot:None.2.3"}
    at = open_page(PAGE, query=query)
    no_exception(at)
    assert at.toggle(key="rope.half").value is True and at.slider(key="rope.offset").value == 250
    assert at.selectbox(key="rope.head").value == 1 and at.slider(key="rope.p").value == 7
    forward = run_forward(at.session_state["s.last_good"])
    want = rope_lesson(forward, 1, "half")["k_rot"].value[2, 3]
    text = page_text(at)
    assert any(f.startswith(r"\begin{aligned} (K^R_{1})_{2,3} &= (K_{1})_{2,1} \sin 2\theta_{1}") and f"{want:.6f}" in f
               for f in formulas(at))
    assert "Row 2 (“you”) stands at position p = 2. Its pair 1 is columns (1, 3) in the half pairing" in text
    assert dict(at.query_params) == query


# ---- the claims walk under the page's unusual settings --------------------------------------------------

WALK = [  # (sidebar settings, own controls)
    (Config(positional="rope", n_heads=3, n_kv_heads=1, score="bilinear", bias=True, weights="random"),
     {"rope.offset": 0, "rope.head": 2}),                                       # MQA, H not a power of two, shift 0
    (Config(positional="alibi", d_k=2, score="additive", mask="padding", padding=(0, 1, 2, 3), weights="random"),
     {"rope.half": True, "rope.shifted": True}),                                # d_k = 2, every key hidden
    (Config(positional="rope", n_heads=4, n_kv_heads=2, mask="sliding_window", window=2, pe_base=500_000.0),
     {"rope.half": True, "rope.offset": 1000, "rope.shifted": True, "rope.qk": "Keys: K → K^R"}),
    (Config(d_k=3, mask="sliding_window", window=9), {}),                       # odd d_k, a window wider than n
    (Config(positional="rope", sentence="love", mask="causal"), {"rope.half": True}),   # one token at position 0
]


@pytest.mark.parametrize("config,own", WALK, ids=["mqa-h3-bilinear-shift0", "alibi-dk2-additive-padding",
                                                  "gqa-window-half-1000", "odd-dk", "one-token-half"])
def test_no_claim_of_the_page_is_shown_where_it_does_not_hold(config, own):
    text, at = walk_own(config, own)
    assert shown_outside(text, config) == []                 # the forward claims, under the sidebar's settings
    recorded = at.session_state["s.claims"] if "s.claims" in at.session_state else {}
    if config.d_k % 2:
        assert "rope" not in recorded and "needs an even d_k" in text
        return
    s = recorded["rope"]
    assert s.config == with_rope(config) and s.offset == own.get("rope.offset", 100)
    assert s.pairing == ("half" if own.get("rope.half") else "interleaved")
    assert shown_outside(text, s, about="rope") == []
    for key, c in CLAIMS.items():                            # and each of the page's claims, or its otherwise, is there
        if c.about == "rope" and (key != "rope_half_not_forward" or s.pairing == "half"):
            assert (c.marker if holds(key, s) else c.otherwise[:30]).lower() in text.lower(), key


def walk_own(config: Config, own: dict):
    """tests/test_claims.py's walk of this page (its text as that walk reads it), the page's own controls and its
    checked box set first: (text, AppTest)."""
    from dataclasses import fields

    from streamlit.testing.v1 import AppTest

    from tests.test_claims import ROOT
    from tests.test_claims import page_text as walk_text
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.session_state["s.ready"], at.session_state["s.presenter"], at.session_state["s.url_notices"] = True, False, []
    for f in fields(Config):
        at.session_state[f"s.{f.name}"] = getattr(config, f.name)
    for key, value in {**own, "rope.checked": True}.items():     # as a link or a push gives them: the kept value,
        at.session_state[key] = at.session_state[f"p.{key}"] = value   # which the page's first run draws its control at
    at.switch_page(PAGE)
    at.run()
    no_exception(at)
    return walk_text(at), at
