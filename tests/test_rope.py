"""RoPE: attention_core.rope and the /rope page (attention_core.lesson_rope).

Against torch as the model libraries write it (Meta's Llama code: torch.polar / view_as_complex; Hugging
Face's Llama: cos/sin with rotate_half), against RoFormer's formula θ_i = 10000^(−2(i−1)/d) (i from 1
there), against hand-computed rotations; the relative-position property as a property test (hypothesis);
every explainer's numbers reproduce its cell; the page's numbers and hostile inputs in AppTest.
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
from attention_core.claims import CLAIMS, holds, say
from attention_core.explain import explain
from attention_core.lesson_rope import (BASES, ShiftSettings, complex_form, pair_path, parse_base, rope_trace,
                                        shift_check, torch_checks, torch_rope_complex, torch_rope_rotate_half)
from attention_core.rope import (half_permutation, rope_angles, rope_frequencies, rotary_complex, rotary_embedding,
                                 rotate_half)
from tests.apptest_util import formulas, messages, no_exception, open_page

PAGE = "app_pages/40_rope.py"
SETTINGS = settings(max_examples=60, deadline=None)

even_d = st.integers(1, 8).map(lambda h: 2 * h)
bases = st.sampled_from([10_000.0, 500_000.0, 1_000_000.0, 2.0, 123.4])


def rows(seed: int, n: int, d: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, d))


# ---- the rotation against torch and the papers -------------------------------------------------------

def test_torch_forms_rotate_a_unit_vector_by_one_radian_at_position_one():
    x = np.array([[1.0, 0.0], [1.0, 0.0]])                     # the same row at positions 0 and 1, d = 2
    want = np.array([[1.0, 0.0], [math.cos(1.0), math.sin(1.0)]])
    for f in (torch_rope_complex, torch_rope_rotate_half):
        np.testing.assert_allclose(f(x, None, 10_000.0), want, atol=1e-15)
    np.testing.assert_allclose(rotary_embedding(x), want, atol=1e-15)


def test_frequencies_are_roformers():
    """RoFormer (eq. 15): Θ = {θ_i = 10000^(−2(i−1)/d), i = 1 … d/2}; this app counts pairs from 0."""
    d = 8
    paper = [10_000 ** (-2 * (i - 1) / d) for i in range(1, d // 2 + 1)]
    np.testing.assert_allclose(rope_frequencies(d), paper, rtol=1e-15)
    assert rope_frequencies(d)[0] == 1.0
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


# ---- the relative-position property (claim rope_shift_invariant) ---------------------------------------

@SETTINGS
@given(seed=st.integers(0, 10_000), d=even_d, base=bases, m=st.integers(0, 200), n=st.integers(0, 200),
       offset=st.integers(0, 2000), pairing=st.sampled_from(["interleaved", "half"]))
def test_dot_product_scores_depend_only_on_the_distance(seed, d, base, m, n, offset, pairing):
    """(R_m q)·(R_n k) = q·R_(n−m) k: moving both positions by the same offset changes no dot product (exact in
    real arithmetic; float64 rounding only). Outside the claim's settings it fails: a position vector added to X,
    or a bilinear score of the rotated rows, moves with the sentence."""
    q, k = rows(seed, 1, d), rows(seed + 1, 1, d)
    rot = lambda x, p: rotary_embedding(x, [p], base, pairing)[0]
    score = rot(q, m) @ rot(k, n)
    assert abs(rot(q, m + offset) @ rot(k, n + offset) - score) <= 1e-9 * (1 + abs(score))
    # q · R_(n−m) k (for n ≥ m; otherwise R_(m−n) q · k)
    rel = q[0] @ rot(k, n - m) if n >= m else rot(q, m - n) @ k[0]
    assert abs(rel - score) <= 1e-9 * (1 + abs(score))
    assert holds("rope_shift_invariant", ShiftSettings("rope", "scaled_dot"))
    assert holds("rope_shift_invariant", ShiftSettings("rope", "dot"))


def test_the_shift_changes_scores_outside_the_claim():
    q, k = rows(1, 1, 4), rows(2, 1, 4)
    w = np.random.default_rng(3).standard_normal((4, 4))
    rot = lambda x, p: rotary_embedding(x, [p], 10_000.0)[0]
    assert abs(rot(q, 1) @ w @ rot(k, 3) - rot(q, 11) @ w @ rot(k, 13)) > 1e-3           # bilinear: not relative
    assert not holds("rope_shift_invariant", ShiftSettings("rope", "bilinear"))
    assert not holds("rope_shift_invariant", ShiftSettings("added", "scaled_dot"))
    s = shift_check(Config(), 10_000.0, "interleaved", 100)                               # sinusoidal PE added to X
    assert s["added"] > 1e-2 and s["rope"] < 1e-12 and s["rot"] > 1e-2
    assert say("rope_shift_invariant", ShiftSettings("added")) == CLAIMS["rope_shift_invariant"].otherwise


# ---- the two pairings and the permutation between them (claim rope_pairings_differ) ---------------------

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


@SETTINGS
@given(seed=st.integers(0, 10_000), d=even_d, base=bases)
def test_pairings_differ_unless_d_k_is_2(seed, d, base):
    x = rows(seed, 4, d)
    inter, half = rotary_embedding(x, base=base), rotary_embedding(x, base=base, pairing="half")
    if d == 2:
        np.testing.assert_array_equal(half_permutation(2), [0, 1])
        np.testing.assert_allclose(half, inter, atol=1e-15)
        assert not holds("rope_pairings_differ", d)
    else:
        assert np.abs(half - inter).max() > 1e-6          # random rows: the pairs are other columns
        assert holds("rope_pairings_differ", d)


def test_rotate_half_is_hugging_faces():
    np.testing.assert_array_equal(rotate_half(np.array([1.0, 2, 3, 4])), [-3.0, -4, 1, 2])
    np.testing.assert_array_equal(half_permutation(6), [0, 2, 4, 1, 3, 5])


# ---- the page's trace ---------------------------------------------------------------------------------

@pytest.mark.parametrize("config,pairing", [(Config(), "interleaved"), (Config(), "half"),
                                            (Config(d_k=6, n_heads=2, bias=True, weights="random"), "half"),
                                            (Config(embedding="toy", weights="random", d_k=2), "interleaved")])
def test_trace_is_the_sentences_q_and_k_rotated(config, pairing):
    t = rope_trace(config, 500_000.0, pairing)
    plain = run_forward(config.replace(positional="none"))
    d = config.d_k
    assert t.facts["kind"] == "rope" and t["x_embed"].value.tolist() == plain["x"].value.tolist()
    np.testing.assert_allclose(t["q"].value, plain["x_embed"].value @ plain["w_q"].value[:, :d]
                               + (plain["b_q"].value[:d] if config.bias else 0), atol=1e-12)
    np.testing.assert_allclose(t["q_rot"].value, rotary_embedding(t["q"].value, base=5e5, pairing=pairing))
    np.testing.assert_allclose(t["angles"].value, rope_angles(t.n, d, 5e5))
    np.testing.assert_allclose(t["scaled_scores"].value, t["q_rot"].value @ t["k_rot"].value.T / math.sqrt(d))
    assert t.facts["complex_gap"] < 1e-12 and t.facts["perm_rotation_gap"] < 1e-12
    assert t.facts["perm_scores_gap"] < 1e-10
    assert (t.facts["mismatch_gap"] > 1e-6) == (d >= 4)
    checks = torch_checks(t)
    assert max(checks.values()) < 1e-12, checks


@pytest.mark.parametrize("config,pairing,offset", [(Config(), "interleaved", 0), (Config(d_k=6, bias=True), "half", 0),
                                                   (Config(d_k=4, n_heads=2, weights="random"), "interleaved", 0),
                                                   (Config(d_k=6), "half", 137)])
def test_every_explanation_reproduces_its_cell(config, pairing, offset):
    t = rope_trace(config, 10_000.0, pairing, offset)
    for key in ("q", "k", "angles", "q_rot", "k_rot", "scaled_scores"):
        value = t[key].value
        for cell in itertools.product(*map(range, value.shape)):
            e = explain(t, key, cell)
            assert abs(e.value - value[cell]) <= 1e-12 * max(1.0, abs(value[cell])), (key, cell)
            for read_key, read_cell in e.reads:
                assert read_key in t and np.ndim(t[read_key].value) == len(read_cell)


def test_explanations_show_the_rotation_arithmetic():
    t = rope_trace(Config(d_k=6), 10_000.0, "half")
    e = explain(t, "q_rot", (2, 4))                         # half: column 4 = pair 1's second (i + d/2)
    assert e.text.startswith("Q^R[2,4] = Q[2,1]·sin(2θ_1) + Q[2,4]·cos(2θ_1)"), e.text
    a = explain(t, "angles", (3, 2))
    assert "3 · 10000^(−4/6)" in a.text and abs(a.value - 3 * 10_000 ** (-4 / 6)) < 1e-15
    s = explain(t, "scaled_scores", (1, 2))
    assert "√6" in s.text and s.n_terms == 6


def test_the_shifted_trace_rotates_by_p_plus_offset_and_keeps_the_scores():
    t, moved = rope_trace(Config(d_k=6), 5e5, "half"), rope_trace(Config(d_k=6), 5e5, "half", 250)
    np.testing.assert_allclose(moved["angles"].value, rope_angles(np.arange(t.n) + 250, 6, 5e5))
    np.testing.assert_allclose(moved["scaled_scores"].value, t["scaled_scores"].value, atol=1e-12)
    assert np.abs(moved["q_rot"].value - t["q_rot"].value).max() > 1e-2
    assert max(torch_checks(moved).values()) < 1e-12 and moved.facts["complex_gap"] < 1e-12
    e = explain(moved, "angles", (1, 0))
    assert "p=251" in e.text and abs(e.value - 251.0) < 1e-12
    assert "sin(251θ_0)" in explain(moved, "q_rot", (1, 3)).text
    assert shift_check(Config(d_k=6), 5e5, "half", 250)["trace"] is moved


def test_pair_path_turns_by_theta_per_position_as_rotary_embedding_does():
    path = pair_path(np.array([1.0, 0.0]), 0.5, 4)
    assert [r["position"] for r in path] == [0, 1, 2, 3, 4] and path[-1]["now"] and not path[0]["now"]
    assert abs(path[2]["x"] - math.cos(1.0)) < 1e-15 and abs(path[2]["y"] - math.sin(1.0)) < 1e-15
    q = rows(5, 1, 8)
    for pairing, (c0, c1) in (("interleaved", (4, 5)), ("half", (2, 6))):           # pair 2 in each pairing
        end = pair_path(q[0, [c0, c1]], rope_frequencies(8, 5e5)[2], 37)[-1]
        np.testing.assert_allclose([end["x"], end["y"]], rotary_embedding(q, [37], 5e5, pairing)[0, [c0, c1]],
                                   atol=1e-12)


def test_bad_d_k_and_bases_are_config_errors_that_say_what_to_change():
    with pytest.raises(ConfigError, match=r"RoPE needs an even d_k.*d_k = 5 is odd.*4 or 6"):
        rope_trace(Config(d_k=5), 10_000.0, "interleaved")
    for bad, words in (("abc", "must be a number"), ("1e400", "finite number above 1"), ("nan", "finite"),
                       ("1", "above 1"), ("-3", "above 1"), ("1e13", "too large")):
        with pytest.raises(ConfigError, match=words):
            parse_base(bad)
    assert parse_base("500,000") == 5e5 and parse_base(" 1e6 ") == 1e6
    with pytest.raises(ConfigError, match="pairing"):
        rope_trace(Config(), 10_000.0, "sideways")
    with pytest.raises(ConfigError, match="offset"):
        shift_check(Config(), 10_000.0, "interleaved", -1)


# ---- the page (AppTest) ----------------------------------------------------------------------------------

def page_text(at) -> str:
    return "\n".join([m.value for m in at.markdown] + [c.value for c in at.caption] + formulas(at))


def test_page_shows_the_steps_and_what_they_were_checked_against():
    at = open_page(PAGE)
    no_exception(at)
    text = page_text(at)
    for words in ("RoPE's complex-number form", "max |Q^R, K^R − complex form| = **", "torch.polar",
                  "rotate_half", "Meta's Llama code", "GPT-NeoX", r"\pi = [0, 2, 1, 3]",
                  CLAIMS["rope_shift_invariant"].marker, CLAIMS["rope_pairings_differ"].marker):
        assert words in text, words
    gap = float(re.search(r"complex form\| = \*\*([0-9.e+-]+)\*\*", text).group(1))
    assert gap < 1e-12
    assert r"p\,\theta_i = p \cdot 10000^{-2i/4}" in formulas(at)
    assert "## 1 · The angles p·θ_i" in text and "## 6 · Interleaved or half" in text


def shown_gaps(at) -> tuple[float, float]:
    text = page_text(at)
    rope = float(re.search(r"max \|ΔŜ\| = \*\*([0-9.e+-]+)\*\*: every score", text).group(1))
    added = float(re.search(r"X\*\* \(same base.*?max \|ΔŜ\| = \*\*([0-9.e+-]+)\*\*", text).group(1))
    return rope, added


def test_shifting_the_sentence_keeps_the_scores_and_an_added_pe_does_not():
    at = open_page(PAGE)
    for offset in (0, 1, 500):
        at.slider(key="rope.offset").set_value(offset).run()
        no_exception(at)
        rope, added = shown_gaps(at)
        assert rope < 1e-12
        assert (added > 1e-3) == (offset > 0)


def test_base_and_pairing_controls_change_the_math():
    at = open_page(PAGE)
    at.segmented_control(key="rope.base").set_value("5e5").run()
    assert r"p\,\theta_i = p \cdot 500000^{-2i/4}" in formulas(at)
    at.toggle(key="rope.half").set_value(True).run()
    no_exception(at)
    assert any(r"(x_i,\, x_{i+2})" in f for f in formulas(at))
    at.segmented_control(key="rope.base").set_value("custom").run()
    at.text_input(key="rope.custom").input("2e6").run()
    assert r"p\,\theta_i = p \cdot 2000000^{-2i/4}" in formulas(at)


def test_the_position_slider_turns_the_pair_by_p_theta():
    at = open_page(PAGE)
    for p in (0, 5):
        at.slider(key="rope.p").set_value(p).run()
        assert any(f"p\\,\\theta_{{0}} = {p} \\cdot 1 = {p}\\ \\text{{rad}}" in f for f in formulas(at))
    at.slider(key="rope.pair").set_value(1).run()                    # θ_1 = 10000^(−2/4) = 0.01
    assert any(r"p\,\theta_{1} = 5 \cdot 0.0100 = 0.0500" in f for f in formulas(at))


@pytest.mark.parametrize("typed,words", [("abc", "must be a number"), ("1e400", "finite number above 1"),
                                         ("0.5", "above 1"), ("1e20", "too large")])
def test_hostile_bases_get_a_message(typed, words):
    at = open_page(PAGE)
    at.segmented_control(key="rope.base").set_value("custom").run()
    at.text_input(key="rope.custom").input(typed).run()
    no_exception(at)
    assert words in messages(at)


def test_odd_d_k_gets_a_message_not_a_traceback():
    at = open_page(PAGE, query={"d_k": "5"})
    no_exception(at)
    assert "RoPE needs an even d_k" in messages(at)


def test_d_k_2_says_the_pairings_agree_and_heads_say_head_0():
    at = open_page(PAGE, query={"d_k": "2", "n_heads": "2"})
    no_exception(at)
    text = page_text(at)
    assert CLAIMS["rope_pairings_differ"].marker not in text
    assert CLAIMS["rope_pairings_differ"].otherwise in text
    assert "head 0's d_k columns" in text


def test_the_shifted_scores_open_cell_by_cell():
    at = open_page(PAGE)
    at.slider(key="rope.offset").set_value(40).run()
    at.session_state["rope.shifted"] = True
    at.run()
    no_exception(at)
    assert "Scaled scores Ŝ of the rotated rows at positions p + 40" in page_text(at)


def test_torch_check_opens_on_demand():
    at = open_page(PAGE)
    assert "Meta's Llama `apply_rotary_emb`" not in page_text(at)          # closed: torch not run
    at.session_state["rope.torch"] = True
    at.run()
    no_exception(at)
    gaps = [float(g) for g in re.findall(r"max \|Δ\|[^*]*= \*\*([0-9.e+-]+)\*\*", page_text(at))]
    assert len(gaps) == 3 and max(gaps) < 1e-12
