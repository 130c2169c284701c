"""The next-token lesson (attention_core/lessons/next_token) and its page (/next_token): the Steps recomputed
independently (torch's softmax, the sampler's stages, the model run again for each generated token), every
explainer's value against its cell, the shipped model's copying, and the page's values and bad inputs."""
import math

import numpy as np
import pytest

from apptest_util import charts, messages, no_exception, open_page
from attention_core import ConfigError
from attention_core.explanations import explain
from attention_core.lessons.next_token import lm_params, next_token_trace
from attention_core.math.sampling import next_token, uniforms
from attention_core.training.lm.model import N_CTX, lm_trace, sentence_ids

EXAMPLE = "the cat sat on the mat and the cat sat on the"
PAGE = "app_pages/51_next_token.py"
SETTINGS = [(1.0, 0, 1.0, 0), (0.7, 5, 0.9, 3), (2.0, 31, 0.5, 11), (0.0, 0, 0.0, 2), (1.3, 40, 0.0, 5),
            (0.5, 3, 1.0, 9)]


@pytest.mark.parametrize("T,k,p,seed", SETTINGS)
def test_steps_are_the_model_s_last_row_and_the_sampler_s_stages(T, k, p, seed):
    torch = pytest.importorskip("torch")
    t = next_token_trace(EXAMPLE, T, k, p, seed, 3)
    ids, _, labels, _ = sentence_ids(EXAMPLE)
    z = lm_trace(lm_params(), ids, labels)["logits"].value[-1]
    assert np.array_equal(t["logits"].value, z)
    if T:
        assert np.max(np.abs(t["probs"].value - torch.softmax(torch.tensor(z) / T, -1).numpy())) < 1e-12
        assert np.max(np.abs(t["scaled"].value - (z - z.max()) / T)) < 1e-15 and t["scaled"].value.max() == 0
    else:
        assert t["probs"].value.tolist() == [float(j == np.argmax(z)) for j in range(z.size)]
    u = np.random.default_rng(seed).random()
    stages = next_token(z, T, k, p, u)
    assert t.facts["u"] == u
    assert t["kept"].value.tolist() == stages["kept"].astype(float).tolist()
    assert np.max(np.abs(t["renormalised"].value - stages["renormalised"])) < 1e-15
    assert abs(t["renormalised"].value.sum() - 1) < 1e-12
    assert np.max(np.abs(t["cdf"].value - np.cumsum(stages["renormalised"]))) < 1e-15
    j = int(t["sample"].value)
    assert j == t.facts["token"] == stages["token"] and t["cdf"].value[j] > u
    assert j == 0 or t["cdf"].value[j - 1] <= u
    assert t["renormalised"].value[j] > 0 and t["kept"].value[j] == 1


@pytest.mark.parametrize("T,k,p,seed", SETTINGS)
def test_every_cell_s_explanation_recomputes_it(T, k, p, seed):
    t = next_token_trace(EXAMPLE, T, k, p, seed, 0)
    for key in ("logits", "scaled", "probs", "kept", "renormalised", "cdf"):
        for j in range(31):
            e = explain(t, key, (j,))
            assert math.isfinite(e.value) and abs(e.value - t[key].value[j]) < 1e-12, (key, j)
            assert "nan" not in e.text.lower()
    assert explain(t, "sample", ()).value == t.facts["token"]
    for h in range(4):
        for j in range(t.n):
            assert abs(explain(t, "heads", (h, j)).value - t["heads"].value[h, j]) < 1e-12


def test_the_probability_explainer_shows_the_live_exponentials():
    t = next_token_trace(EXAMPLE, 0.5, 0, 1.0, 0, 0)
    z = t["logits"].value
    e = explain(t, "probs", (2,))                                   # token 2 is "sat" (not the most likely: its
    m = z.max() / 0.5                                               # exponential is not e^0 = 1)
    assert int(np.argmax(z)) != 2
    assert f"{math.exp(z[2] / 0.5 - m):.3f}" in e.text and "“sat”" in e.note
    assert abs(e.value - math.exp(z[2] / 0.5 - m) / sum(math.exp(x / 0.5 - m) for x in z)) < 1e-15
    kept = next_token_trace(EXAMPLE, 1.0, 3, 1.0, 0, 0)
    dropped = int(np.argmin(kept["logits"].value))
    assert "outside the top k = 3" in explain(kept, "kept", (dropped,)).note
    assert explain(kept, "renormalised", (dropped,)).value == 0


def test_generation_appends_each_token_and_runs_the_model_again():
    T, k, p, seed, n = 1.0, 5, 0.9, 4, 6
    t = next_token_trace(EXAMPLE, T, k, p, seed, n)
    ids, _, labels, _ = sentence_ids(EXAMPLE)
    us = np.random.default_rng(seed).random(n)
    for g, u in zip(t.facts["generated"], us):
        z = lm_trace(lm_params(), ids[-N_CTX:], labels)["logits"].value[-1]
        j = next_token(z, T, k, p, u)["token"]
        assert g["token"] == j and g["u"] == u and g["word"] == labels[j]
        ids.append(j)
    assert t.facts["generated"][0]["token"] == t.facts["token"]
    assert next_token_trace(EXAMPLE, T, k, p, seed, n).facts["generated"] == t.facts["generated"]   # same seed


# The shipped model's greedy continuation of the example (the default run, 1,500 steps: it copies "mat" after the
# last "the", then, with three earlier "the"s to choose from, it does not follow one phrase: measured)
GREEDY = ["mat", "the", "mat", "and", "the", "mat"]


def test_the_shipped_model_continues_the_repeat_with_mat():
    """Argmax at the last "the" of the example is "mat" (z ahead of the next token by 0.26 with the shipped weights,
    1,500 steps), greedy decoding then goes on as GREEDY. Sampled at the page's defaults the first token is "and"
    (T = 0.5 leaves "mat" at p = 0.11); later draws leave the phrase (the model was trained on one repeat, not three)."""
    t = next_token_trace(EXAMPLE, 0.0, 0, 1.0, 0, 6)
    labels, z = t.facts["labels"], t["logits"].value
    assert labels[int(np.argmax(z))] == "mat"
    assert z.max() - np.sort(z)[-2] > 0.2
    assert [g["word"] for g in t.facts["generated"]] == GREEDY
    assert t.facts["targets"] == [1, 5, 8]
    sampled = next_token_trace(EXAMPLE, 0.5, 10, 0.9, 0, 6)                 # the page's defaults
    assert [g["word"] for g in sampled.facts["generated"]][:1] == ["and"]


def test_the_heads_of_the_last_position():
    t = next_token_trace(EXAMPLE, 1.0, 0, 1.0, 0, 0)
    w = t["heads"].value
    assert w.shape == (4, 12) and np.allclose(w.sum(axis=1), 1, atol=1e-12)
    block = lm_trace(lm_params(), *sentence_ids(EXAMPLE)[::2])
    assert np.array_equal(w, block.facts["attention"][1]["weights"].value[:, -1, :])
    for h in t.facts["heads"]:
        assert h["weight"] == w[h["head"]].max() and h["on_targets"] == pytest.approx(w[h["head"], [1, 5, 8]].sum())
    assert max(h["on_targets"] for h in t.facts["heads"]) > 0.5           # one head looks after the earlier "the"
    a0 = block.facts["attention"][0]["weights"].value
    assert t.facts["previous"] == pytest.approx([np.mean([a0[h, i, i - 1] for i in range(1, 12)]) for h in range(4)])
    assert max(t.facts["previous"]) > 0.8                                  # a previous-token head in layer 0
    assert any(h["top"] == 5 and h["weight"] > 0.5 for h in t.facts["heads"])   # a layer-1 head looks at "mat"


def test_a_long_sentence_is_cut_with_a_notice_and_bad_settings_get_messages():
    long = " ".join(["the cat sat on the mat"] * 8)                   # 48 words
    t = next_token_trace(long, 1.0, 0, 1.0, 0, 2)
    assert t.n == N_CTX and any("at most 40 tokens" in n for n in t.notices)
    assert t.facts["generated"][-1]["cut"]
    for bad in [(-0.5, 0, 0.5), (1.0, -1, 0.5), (1.0, 0, 1.2), (float("nan"), 0, 0.5)]:
        with pytest.raises(ConfigError):
            next_token_trace(EXAMPLE, *bad, 0, 1)
    with pytest.raises(ConfigError):
        next_token_trace("  ", 1.0, 0, 1.0, 0, 1)


def _text(at) -> str:
    return "\n".join(m.value for m in at.markdown) + "\n" + messages(at)


def test_page_at_the_defaults_and_with_the_example():
    at = open_page(PAGE)
    no_exception(at)
    assert not at.error
    t = next_token_trace("I love you today", 0.5, 10, 0.9, 0, 5)
    text = _text(at)
    # the drawn token is one no word was given (the 4 words are tokens 0-3): named ⟨token j⟩, in the text, the
    # bars and the generated line alike
    j = t.facts["token"]
    assert j >= 4 and f"u = {uniforms(0, 1)[0]:.4f}" in text and f"the next token is **⟨token {j}⟩**" in text
    assert "does not occur earlier in the words the model reads" in text and "top-k is off" not in text
    named = [w if k < 4 else f"⟨token {k}⟩" for k, w in enumerate(t.facts["labels"])]
    bars = charts(at)[0]["data"]["values"]
    p = {r["token"].replace(" ✓", ""): r["probability"] for r in bars if r["series"].startswith("2")}
    assert len(p) == 15 and all(abs(p[named[j]] - t["probs"].value[j]) < 1e-12 for j in range(31) if named[j] in p)
    assert f"i love you today **⟨token {j}⟩**" in text
    assert sum(r["token"].endswith("✓") for r in bars) == 3 * int(t["kept"].value.sum())
    at.button(key="next_token.example").click().run()
    no_exception(at)
    text = _text(at)
    assert "positions 1 (“cat”), 5 (“mat”), 8 (“cat”)" in text and "does not occur earlier in the words the model reads" not in text
    assert "the KV cache page" in text and "nan" not in text.lower()


@pytest.mark.parametrize("key,value,words", [
    ("next_token.temperature", 0.0, "argmax (greedy decoding)"),
    ("next_token.k", 0, "top-k is off"),
    ("next_token.k", 31, "at least the vocabulary's 31 tokens"),
    ("next_token.p", 0.0, "only the most probable token stays"),
    ("next_token.p", 1.0, "top-p = 1 turns top-p off: it drops none of the tokens top-k kept"),
])
def test_page_edges_are_said(key, value, words):
    at = open_page(PAGE, query={"sentence": EXAMPLE})
    (at.slider(key=key) if key != "next_token.k" else at.number_input(key=key)).set_value(value).run()
    no_exception(at)
    assert not at.error and words in messages(at)
    assert "nan" not in _text(at).lower()


def test_page_with_a_sentence_longer_than_the_context():
    at = open_page(PAGE, query={"sentence": " ".join(["the cat sat on the mat"] * 8)})
    no_exception(at)
    assert "at most 40 tokens" in messages(at)


def test_page_reads_its_controls_from_the_link_and_takes_a_one_word_sentence():
    at = open_page(PAGE, query={"sentence": "hello", "next_token.temperature": "0.5", "next_token.k": "3",
                                "next_token.p": "0.8", "next_token.seed": "7", "next_token.n_new": "2"})
    no_exception(at)
    assert at.slider(key="next_token.temperature").value == 0.5 and at.number_input(key="next_token.seed").value == 7
    t = next_token_trace("hello", 0.5, 3, 0.8, 7, 2)
    text = _text(at)
    assert f"u = {t.facts['u']:.4f}" in text and "does not occur earlier in the words the model reads" in text and "the previous-token head." not in text
    assert len(at.dataframe[0].value) == 2


# ---- the edges (issue 30, item 4) --------------------------------------------------------------------------------

EDGE_TS = [1e-308, 1e-300, 1e-12, 5e-324, 3.0]       # 5e-324: the smallest positive T a link can give; 3: the largest


@pytest.mark.parametrize("T", EDGE_TS)
def test_edge_temperatures_give_the_argmax_and_every_explainer_recomputes_its_cell(T):
    import warnings
    with warnings.catch_warnings(), np.errstate(over="raise", invalid="raise", divide="raise"):
        warnings.simplefilter("error")
        t = next_token_trace(EXAMPLE, T, 10, 0.9, 0, 4)
        es = {(key, j): explain(t, key, (j,)) for key in ("scaled", "probs", "kept", "renormalised", "cdf")
              for j in range(31)}
    z = t["logits"].value
    top = int(np.argmax(z))
    assert t["scaled"].value[top] == 0 and not np.isnan(t["scaled"].value).any()
    if T < 1e-3:
        assert t["probs"].value.tolist() == [float(j == top) for j in range(31)]        # exactly one-hot
        assert t.facts["token"] == top and [g["word"] for g in t.facts["generated"]] == GREEDY[:4]
    for (key, j), e in es.items():
        cell = t[key].value[j]
        assert e.value == cell or abs(e.value - cell) < 1e-12, (key, j, e.value, cell)
        assert "nan" not in (e.text + e.note).lower()
    if T < 1e-3:
        assert "745·T" in es[("probs", top)].note and " m " not in es[("probs", top)].note


def _lesson_trace(probs, k, top_p):
    """A next-token Trace at T = 1 on the given probabilities exactly (z = log p), its kept set made as
    sampling.next_token makes it."""
    from attention_core.forward.trace import Trace
    from attention_core.math.sampling import renormalise, top_k_keep, top_p_keep
    probs = np.asarray(probs, dtype=np.float64)
    z = np.log(probs)
    kept_k = top_k_keep(z, k)
    kept_p = top_p_keep(renormalise(probs, kept_k), top_p)
    t = Trace(tokens=tuple(f"w{j}" for j in range(z.size)), notices=[])
    t.add("logits", "z", z, ("vocab",), "z")
    t.add("probs", "p", probs, ("vocab",), "p", ("logits",))
    t.add("kept", "kept", (kept_k & kept_p).astype(float), ("vocab",), "kept", ("logits", "probs"))
    t.facts.update(kind="next_token", labels=t.tokens, temperature=1.0, k=k, p=top_p, kept_k=kept_k, kept_p=kept_p)
    return t


def test_the_kept_explainer_states_the_tie_rule_with_the_numbers_of_the_code():
    """Four tokens at 0.25, p_top = 0.5: tokens 0 and 1 stay (the lower numbers first), 2 and 3 are dropped because
    the tokens ahead of them already hold 0.5 (the issue: the code kept [2, 3] while the explainer of token 0 said
    the more probable tokens "hold 0.0000 ≥ p_top")."""
    t = _lesson_trace([0.25] * 4, 0, 0.5)
    assert t["kept"].value.tolist() == [1, 1, 0, 0]
    notes = [explain(t, "kept", (j,)).note for j in range(4)]
    assert [explain(t, "kept", (j,)).value for j in range(4)] == [1, 1, 0, 0]
    assert "comes first" in notes[0] and "always stays" in notes[0]
    assert "comes 2nd, after 1 token of the same p̃ with a lower number" in notes[1] and "holds 0.2500 < p_top = 0.5" in notes[1]
    assert "the 2 tokens ahead of it hold 0.5 ≥ p_top = 0.5" in notes[2] and "dropped" in notes[2]
    assert "the 3 tokens ahead of it hold 0.7500 ≥ p_top = 0.5" in notes[3]
    assert not any("0.0000 ≥" in n for n in notes)


def test_the_kept_explainer_at_the_boundary_and_within_the_tolerance():
    t = _lesson_trace([0.5, 0.3, 0.2], 0, 0.8)                   # 0.5 + 0.3 = 0.8: two tokens reach p_top
    assert t["kept"].value.tolist() == [1, 1, 0]
    assert "the 2 tokens ahead of it hold 0.8 ≥ p_top = 0.8" in explain(t, "kept", (2,)).note
    probs = np.array([0.5, 0.3 - 4e-13, 0.2 + 4e-13])             # 4e-13 short of 0.8: reaches it up to rounding
    t = _lesson_trace(probs, 0, 0.8)
    assert t["kept"].value.tolist() == [1, 1, 0]
    note = explain(t, "kept", (2,)).note
    assert "hold 0.799999999999599" in note and "which is p_top = 0.8 up to rounding (4e-13 short" in note
    assert explain(t, "kept", (2,)).value == 0
    t = _lesson_trace(np.array([0.5, 0.3 - 4e-12, 0.2 + 4e-12]), 0, 0.8)   # 4e-12 short: the third stays
    assert t["kept"].value.tolist() == [1, 1, 1] and "< p_top = 0.8" in explain(t, "kept", (2,)).note
    t = _lesson_trace([0.25] * 4, 3, 0.5)                         # top-k = 3 keeps all four (ties with the 3rd)
    assert t["kept"].value.tolist() == [1, 1, 0, 0]
    assert [explain(t, "kept", (j,)).value for j in range(4)] == [1, 1, 0, 0]


def test_the_kept_formula_on_the_page_says_the_rule():
    t = next_token_trace(EXAMPLE, 1.0, 0, 0.5, 0, 0)
    assert r"\prec" in t["kept"].formula and "first" in t["kept"].formula
    assert "equal p̃ by token number, the lower first" in t["kept"].why and "10⁻¹²" in t["kept"].why


@pytest.mark.parametrize("T", ["1e-308", "5e-324"])
def test_page_from_a_link_at_a_tiny_temperature_shows_the_argmax(T):
    at = open_page(PAGE, query={"sentence": EXAMPLE, "next_token.temperature": T})
    no_exception(at)
    assert not at.error and at.slider(key="next_token.temperature").value == float(T)
    text = _text(at)
    assert "nan" not in text.lower() and "**“mat”**" in text
    bars = charts(at)[0]["data"]["values"]
    assert all(math.isfinite(r["probability"]) for r in bars)
    assert [r["token"] for r in bars if r["series"].startswith("2") and r["probability"] == 1.0] == ["mat ✓"]


def test_top_k_is_bounded_by_the_vocabulary_in_the_box_and_in_the_link():
    at = open_page(PAGE, query={"sentence": EXAMPLE, "next_token.k": "99", "next_token.p": "1"})
    no_exception(at)
    box = at.number_input(key="next_token.k")
    assert box.value == 31 and box.proto.max == 31
    assert "“next_token.k” (top-k) must be from 0 to 31, not '99'; using 31: top-k keeps every token once k reaches " \
           "the vocabulary's 31" in messages(at)
    assert "All 31" in _text(at) or "**31** of the 31 are kept" in _text(at)
    at = open_page(PAGE, query={"next_token.k": "-4"})
    no_exception(at)
    assert at.number_input(key="next_token.k").value == 10 and "not '-4'; using the default (10)" in messages(at)
