"""run_forward: the Trace's steps, hand-computed cases, known numbers, determinism."""
import math
import sys

import numpy as np
import pytest

import attention_core as ac
from attention_core import Config, run_forward, sinusoidal_encoding
from old_defaults import toy_config


def test_import_does_not_import_torch():
    import subprocess
    code = "import attention_core, sys; attention_core.run_forward(attention_core.Config()); print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_sinusoidal_position_one_d4():
    pe = sinusoidal_encoding(2, 4)
    np.testing.assert_allclose(pe[0], [0, 1, 0, 1])
    np.testing.assert_allclose(pe[1], [math.sin(1), math.cos(1), math.sin(0.01), math.cos(0.01)], atol=1e-15)
    np.testing.assert_allclose(pe[1], [0.8414709848, 0.5403023059, 0.0099998333, 0.9999500004], atol=1e-10)


def test_sinusoidal_odd_d_fills_last_column():
    pe = sinusoidal_encoding(10, 3)
    # seed 001 leaves column 2 at zero; the pair-1 frequency is 10000^(2/3)
    np.testing.assert_allclose(pe[:, 2], np.sin(np.arange(10) / 10000 ** (2 / 3)))
    assert np.abs(pe[1:, 2]).min() > 0
    np.testing.assert_allclose(pe[:, :2], sinusoidal_encoding(10, 2, base=10000 ** (3 / 2))[:, :2] * 0 + pe[:, :2])
    np.testing.assert_allclose(pe[1, :2], [0.84147098, 0.54030231], atol=1e-8)   # seed 001's printed row


def test_sinusoidal_base():
    pe = sinusoidal_encoding(3, 4, base=100.0)
    np.testing.assert_allclose(pe[2, 2], math.sin(2 / 10.0))


def test_glove_red():
    red = ac.glove_vocabulary().vector("red")
    np.testing.assert_allclose(red[:5], [-0.12878, 0.8798, -0.60694, 0.12934, 0.5868], atol=1e-6)
    assert ac.glove_vocabulary().dim == 50


def test_glove_vocab_size_and_neighbours():
    vocab = ac.glove_vocabulary(1000)
    assert len(vocab.words) == 1000 and vocab.words[0] == "the"
    names = [w for w, _ in ac.nearest(ac.glove_vocabulary(), "red", 5)]
    assert "blue" in names and "yellow" in names


def test_toy_sentence_by_hand():
    """Seed 001's sentence with its 3-d vectors, no position, checked entry by entry."""
    t = run_forward(toy_config(sentence="I love you today", positional="none", d_k=2, d_v=2))
    x = np.array([[0, 1, 0], [0, 1, 1], [1, 1, 1], [0, 0, 0]], dtype=float)
    np.testing.assert_array_equal(t["x"].value, x)
    w_q, w_k, w_v = t["w_q"].value, t["w_k"].value, t["w_v"].value
    q, k, v = x @ w_q, x @ w_k, x @ w_v
    np.testing.assert_allclose(t["q"].value, q)
    # scores for "love" (row 1) with "you" (column 2), written out
    s12 = sum(q[1, m] * k[2, m] for m in range(2))
    assert t["scores"].value[1, 2] == pytest.approx(s12, abs=1e-14)
    assert t["scaled_scores"].value[1, 2] == pytest.approx(s12 / math.sqrt(2), abs=1e-14)
    row = t["scaled_scores"].value[1]
    expected = np.exp(row - row.max()) / np.exp(row - row.max()).sum()
    np.testing.assert_allclose(t["weights"].value[1], expected, atol=1e-15)
    np.testing.assert_allclose(t["context"].value[1], expected @ v, atol=1e-15)
    # "today" is the zero vector: without bias its query and key are zero, so its row is uniform
    np.testing.assert_allclose(t["weights"].value[3], 0.25)
    np.testing.assert_allclose(t["weights"].value.sum(axis=1), 1.0)


def test_default_trace_steps_and_shapes():
    t = run_forward(toy_config())
    assert t.keys() == ["x_embed", "pe", "x", "w_q", "q", "w_k", "k", "w_v", "v", "scores", "scaled_scores",
                        "weights", "context", "w_o", "output"]
    assert t["q"].shape_text == "n=4 × d_k=4"
    assert t["weights"].scale == "sequential"
    for step in t:
        assert step.formula and step.why
        assert all(i in t for i in step.inputs)


def test_multi_head_trace_matches_public_api():
    cfg = toy_config(embedding="random", d_model=8, d_k=2, d_v=2, n_heads=4, positional="none", sentence="a b c d e")
    t = run_forward(cfg)
    assert t["weights"].shape == (4, 5, 5) and t["concat"].shape == (5, 8)
    x = t["x"].value
    out, weights = ac.multi_head_attention(x, x, t["w_q"].value, t["w_k"].value, t["w_v"].value,
                                           t["w_o"].value, 4)
    np.testing.assert_allclose(t["output"].value, out, atol=1e-12)
    np.testing.assert_allclose(t["weights"].value, weights, atol=1e-12)


@pytest.mark.parametrize("score", ["dot", "scaled_dot", "additive", "bilinear"])
@pytest.mark.parametrize("heads", [1, 2])
def test_score_functions_and_heads(score, heads):
    t = run_forward(toy_config(embedding="random", d_model=6, sentence="the cat sat on the mat", score=score,
                           n_heads=heads, mask="causal", bias=True, temperature=0.7))
    w = t["weights"].value
    assert np.all(np.isfinite(w))
    np.testing.assert_allclose(w.sum(-1), 1.0, atol=1e-12)
    assert np.all(np.triu(w, 1) == 0)
    assert t["output"].shape == (6, 6)


def test_additive_scores_by_hand():
    t = run_forward(toy_config(score="additive", positional="none"))
    q, k = t["q"].value, t["k"].value
    w_1, w_2, v_a = t["w_a_q"].value, t["w_a_k"].value, t["v_a"].value
    e = v_a @ np.tanh(q[2] @ w_1 + k[0] @ w_2)
    assert t["scores"].value[2, 0] == pytest.approx(e, abs=1e-14)


def test_bilinear_scores_by_hand():
    t = run_forward(toy_config(score="bilinear", positional="none"))
    q, k, w = t["q"].value, t["k"].value, t["w_b"].value
    assert t["scores"].value[1, 3] == pytest.approx(q[1] @ w @ k[3], abs=1e-14)


def test_temperature_divides_logits():
    t1 = run_forward(toy_config(temperature=1.0))
    t2 = run_forward(toy_config(temperature=0.5))
    np.testing.assert_allclose(t2["weights"].value, ac.softmax(2 * t1["scaled_scores"].value), atol=1e-15)


def test_padding_mask_hides_columns_and_empty_rows_are_zero():
    t = run_forward(toy_config(mask="padding", padding=(1, 3)))
    w = t["weights"].value
    assert np.all(w[:, [1, 3]] == 0)
    np.testing.assert_allclose(w.sum(-1), 1.0)
    t = run_forward(toy_config(mask="padding", padding=(0, 1, 2, 3)))
    assert np.all(t["weights"].value == 0) and not np.isnan(t["context"].value).any()
    assert any("Every key is hidden" in n for n in t.notices)


def test_positional_kinds_change_d_model():
    assert run_forward(toy_config(positional="index"))["x"].shape == (4, 4)
    t = run_forward(toy_config(positional="index"))
    np.testing.assert_array_equal(t["x"].value[:, -1], [0, 1, 2, 3])
    assert run_forward(toy_config(positional="sinusoidal", combine="concat"))["x"].shape == (4, 6)
    assert run_forward(toy_config(positional="learned"))["x"].shape == (4, 3)
    t = run_forward(toy_config(positional="none"))
    assert "pe" not in t and t["x"].shape == (4, 3)


def test_unknown_words_drop_and_unk():
    t = run_forward(toy_config(sentence="I love zebras today"))
    assert t.tokens == ("i", "love", "today") and t.facts["unknown"] == ("zebras",)
    assert any("zebras" in n for n in t.notices)
    t = run_forward(toy_config(sentence="I love zebras today", unknown="unk"))
    assert t.tokens == ("i", "love", "zebras", "today")
    np.testing.assert_allclose(t["x_embed"].value[2], ac.toy_vocabulary().matrix.mean(axis=0))


def test_tokenizer_punctuation_and_scripts():
    assert ac.tokenize("Don't stop, now!") == (["don't", "stop", "now"], [",", "!"])
    tokens, skipped = ac.tokenize("hello 🙂 <b>world</b>")
    assert tokens == ["hello", "b", "world", "b"] and "🙂" in skipped
    tokens, _ = ac.tokenize("שלום עולם")
    assert tokens == ["שלום", "עולם"]


def test_random_vectors_stable_per_word():
    a = run_forward(toy_config(embedding="random", sentence="cat dog cat"))
    np.testing.assert_array_equal(a["x_embed"].value[0], a["x_embed"].value[2])
    b = run_forward(toy_config(embedding="random", sentence="dog cat"))
    np.testing.assert_array_equal(a["x_embed"].value[1], b["x_embed"].value[0])


def test_changing_d_v_keeps_w_q():
    a, b = run_forward(toy_config(d_v=2)), run_forward(toy_config(d_v=7))
    np.testing.assert_array_equal(a["w_q"].value, b["w_q"].value)


@pytest.mark.parametrize("cfg", [Config(), Config(n_heads=4, bias=True), toy_config(), toy_config(embedding="glove", sentence="the movie was great", n_heads=2,
                                                  score="additive", bias=True, mask="causal")])
def test_determinism_bit_identical(cfg):
    a, b = run_forward(cfg), run_forward(cfg)
    assert a.keys() == b.keys()
    for key in a.keys():
        assert a[key].value.tobytes() == b[key].value.tobytes()


def test_step_values_are_read_only():
    t = run_forward(toy_config())
    with pytest.raises(ValueError):
        t["weights"].value[0, 0] = 1.0


def test_uploaded_vectors():
    text = "cat 0.1 0.2 0.3\ndog 0.2 0.1 0.0\nsat 1 0 0\n"
    t = run_forward(toy_config(embedding="upload", vectors=text, sentence="cat sat dog"))
    np.testing.assert_array_equal(t["x_embed"].value[1], [1, 0, 0])


def test_no_control_characters_in_source():
    """A LaTeX string written without r"" turns \\t, \\a, \\b into control characters: catch them."""
    from tests.own_files import ROOT, python_files
    bad = [f"{p.relative_to(ROOT)}:{i}" for p in python_files("attention_core", "ui", "app_pages")
           for i, line in enumerate(p.read_text().splitlines(), 1)
           if any(ord(c) < 32 and c != "\t" for c in line) or "\t" in line]
    assert not bad, bad
