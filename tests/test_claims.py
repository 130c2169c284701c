"""Words true under every setting they are shown with.

1. Each forward claim of attention_core/claims.py is checked as a property on the settings it holds
   under (and shown to fail outside them, so that its condition is needed).
2. Every claim names a property test that exists.
3. Every page is walked under a grid of settings (heads 1/2/4, every score function, every mask, every
   positional encoding, odd and even width, every embedding source), its lazy parts opened, and no claim
   may be shown where it does not hold; no tutorial is called by its file name ("seed 000"); the
   attention formula on /multi_head is the one the settings computed.
"""
from __future__ import annotations

import itertools
import re
from dataclasses import fields
from pathlib import Path

import numpy as np
import pytest

from attention_core import Config, run_forward, sinusoidal_encoding
from attention_core.forward.claims import CLAIMS, holds, say, shown_outside
from attention_core.math.embeddings import cosine_similarity, glove_vocabulary
from attention_core.math.notation import attention_parts, multi_head_formula
from tests.apptest_util import formulas
from tests.own_files import python_files

ROOT = Path(__file__).resolve().parents[1]


# ---- 1. the properties --------------------------------------------------------------------------

def output_moves_with_its_words(config: Config, a: str, b: str) -> bool:
    """Sentence b is a reordering of sentence a: is each row of b's output a's row of the same word?"""
    ta, tb = run_forward(config.replace(sentence=a)), run_forward(config.replace(sentence=b))
    assert sorted(ta.tokens) == sorted(tb.tokens) and len(set(ta.tokens)) == len(ta.tokens)
    order = [ta.tokens.index(w) for w in tb.tokens]
    return bool(np.allclose(ta["output"].value[order], tb["output"].value, atol=1e-12))


ORDER_SETTINGS = [dict(), dict(n_heads=3), dict(score="additive", n_heads=2), dict(score="bilinear", bias=True),
                  dict(score="dot", temperature=0.3), dict(embedding="random", d_model=7), dict(embedding="toy")]   # weights="random" below: toy vectors cannot train


@pytest.mark.parametrize("changes", ORDER_SETTINGS)
def test_order_blind_is_permutation_equivariance(changes):
    base = Config(weights="random", **changes)
    a, b = "i love you today", "today you love i"
    shown = base.replace(positional="none", mask="none")
    assert holds("order_blind", shown) and output_moves_with_its_words(shown, a, b)
    # outside its condition the words would be false: a causal mask, or any positional encoding
    c = "you today i love"            # not a reversal: ALiBi's |i − j| without a mask keeps a reversed sentence's distances
    for other in (shown.replace(mask="causal"), shown.replace(positional="sinusoidal"),
                  shown.replace(positional="index"), shown.replace(positional="learned"),
                  shown.replace(positional="rope"), shown.replace(positional="alibi"),
                  shown.replace(mask="sliding_window", window=2)):
        assert not holds("order_blind", other) and not output_moves_with_its_words(other, a, c)
    padded = shown.replace(mask="padding", padding=(0,))
    assert not holds("order_blind", padded) and not output_moves_with_its_words(padded, a, b)


def test_glove_puts_related_words_closer_than_unrelated_ones():
    related = [("good", "great"), ("cat", "dog"), ("monday", "tuesday"), ("france", "germany"), ("red", "blue")]
    unrelated = [("good", "tuesday"), ("cat", "germany"), ("monday", "blue"), ("france", "great"), ("red", "dog")]
    glove = glove_vocabulary(20_000)
    cos = lambda vocab, a, b: float(cosine_similarity(np.stack([vocab.vector(a), vocab.vector(b)]))[0, 1])
    assert min(cos(glove, *p) for p in related) > 0.6 > max(cos(glove, *p) for p in unrelated)
    assert holds("similar_meaning", Config()) and "similar rows" in run_forward(Config())["x_embed"].why
    # seeded random rows: related pairs are no closer than chance, and the words are not said
    for config in (Config(embedding="random", d_model=50), Config(embedding="toy", weights="random")):
        assert not holds("similar_meaning", config)
        assert CLAIMS["similar_meaning"].marker not in run_forward(config)["x_embed"].why
    from attention_core.math.embeddings import random_vector
    rv = lambda w: random_vector(w, 50, 0)
    assert np.mean([float(cosine_similarity(np.stack([rv(a), rv(b)]))[0, 1]) for a, b in related]) < 0.3


def diagonal_spread(d: int, positions: int = 64) -> float:
    """How much cos(PE_p, PE_p′) varies along the diagonals p − p′ = const (0 = distance alone decides)."""
    sim = cosine_similarity(sinusoidal_encoding(positions, d, 10_000.0))
    return max(float(np.ptp(np.diagonal(sim, k))) for k in range(1, positions - 1))


@pytest.mark.parametrize("config, even", [(Config(), True), (Config(embedding="random", d_model=8), True),
                                          (Config(embedding="random", d_model=7), False),
                                          (Config(embedding="toy", weights="random"), False)])
def test_sinusoidal_similarity_depends_on_distance_alone_for_even_width(config, even):
    d = run_forward(config).facts["d_embed"]
    assert holds("pe_relative", config) == even == (d % 2 == 0)
    if even:
        assert diagonal_spread(d) < 1e-12
    else:
        assert diagonal_spread(d) > 1e-5           # odd width: almost, not exactly (3: off by 0.13, 7: 1.2e-4)
    assert not holds("pe_relative", config.replace(positional="learned"))


@pytest.mark.parametrize("config", [Config(), Config(mask="causal", n_heads=2), Config(mask="padding", padding=(0, 2)),
                                    Config(mask="padding", padding=(0, 1, 2, 3))])
def test_weight_rows_sum_to_one_unless_every_key_is_hidden(config):
    trace = run_forward(config)
    w = trace["weights"].value
    assert np.all(w >= 0)
    sums = w.sum(axis=-1)
    if holds("rows_sum_to_one", config):
        assert np.allclose(sums, 1.0, atol=1e-12)
        assert CLAIMS["rows_sum_to_one"].marker in trace["weights"].why
    else:
        assert np.all(sums == 0.0)                  # every key hidden: all-zero rows, not NaN
        assert CLAIMS["rows_sum_to_one"].marker not in trace["weights"].why
        assert "all hidden is all 0" in trace["weights"].why


# ---- 2. every claim has its proof ---------------------------------------------------------------

@pytest.mark.parametrize("key", sorted(CLAIMS))
def test_every_claim_names_a_property_test_that_exists(key):
    c = CLAIMS[key]
    path, _, name = c.proof.partition("::")
    assert name.startswith("test_"), c.proof
    source = (ROOT / path).read_text(encoding="utf-8")
    assert re.search(rf"^def {re.escape(name)}\(", source, flags=re.M), f"{key}: {c.proof} does not exist"
    assert c.marker and len(c.marker) >= 12, f"{key}: its words need a distinctive literal part"
    assert c.marker.lower() not in c.otherwise.lower(), f"{key}: its 'otherwise' repeats the claim"


def test_say_gives_the_words_only_where_they_hold():
    blind, seen = Config(positional="none"), Config(positional="none", mask="causal")
    assert say("order_blind", blind) == CLAIMS["order_blind"].text and say("order_blind", seen) == ""
    assert shown_outside("So " + CLAIMS["order_blind"].text, seen) == ["order_blind"]
    assert shown_outside("So " + CLAIMS["order_blind"].text, blind) == []


# ---- 3. every page under a grid of settings -----------------------------------------------------

def gf4_mul(a: int, b: int) -> int:
    """Multiplication in GF(4) = {0, 1, x, x+1} written 0..3: the field behind the orthogonal array."""
    table = [[0, 0, 0, 0], [0, 1, 2, 3], [0, 2, 3, 1], [0, 3, 1, 2]]
    return table[a][b]


def upload_vectors(width: int) -> str:
    rng = np.random.default_rng(width)
    words = ("i", "love", "you", "today", "the", "cat", "sat")
    return "\n".join(w + " " + " ".join(f"{x:.4f}" for x in rng.standard_normal(width)) for w in words)


def settings_grid() -> list[Config]:
    """An orthogonal array OA(16, 5, 4, 2): every pair of values of any two of score, positional, embedding,
    mask and heads appears together; widths odd and even, temperature, bias and combine vary with the row;
    then the issue's unusual settings together."""
    scores, positionals = ("dot", "scaled_dot", "additive", "bilinear"), ("sinusoidal", "learned", "index", "none")
    embeddings, masks, heads = ("toy", "glove", "random", "upload"), ("none", "causal", "padding", "none"), (1, 2, 4, 2)
    out = []
    for a, b in itertools.product(range(4), repeat=2):
        row = (a, b, a ^ b, a ^ gf4_mul(2, b), a ^ gf4_mul(3, b))
        odd = (a + b) % 2 == 1
        embedding = embeddings[row[2]]
        out.append(Config(
            score=scores[row[0]], positional=positionals[row[1]], embedding=embedding, mask=masks[row[3]],
            n_heads=heads[row[4]], padding=(1,) if masks[row[3]] == "padding" else (),
            d_model=7 if odd else 8, vectors=upload_vectors(5 if odd else 6) if embedding == "upload" else None,
            temperature=(1.0, 0.5, 2.0, 1.0)[b], bias=a == 3, combine="concat" if row[4] == 3 else "add",
            d_k=3 if odd else 4, weights="random"))
    out += [Config(mask="causal", positional="none", n_heads=4, score="additive", embedding="random", weights="random"),
            Config(mask="padding", padding=(0, 1, 2, 3), positional="none", n_heads=2, weights="random"),
            Config(),                                                  # the defaults, trained weights
            # today's attention: RoPE + grouped KV heads + a window; ALiBi with a non-power-of-two head count;
            # RoPE + MQA + additive; ALiBi + a window as wide as the sentence (the same as causal)
            Config(positional="rope", n_heads=4, n_kv_heads=2, mask="sliding_window", window=2),
            Config(positional="alibi", n_heads=3, mask="causal", embedding="random", weights="random", temperature=2.0),
            Config(positional="rope", n_heads=2, n_kv_heads=1, score="additive", weights="random", d_k=6),
            Config(positional="alibi", mask="sliding_window", window=9, score="dot", bias=True),
            # issue 20: ALiBi with H = 6 (not a power of two: head 4's slope 0.5 is above the first four's) and a
            # window shorter than the sentence; RoPE with the biases on, MQA, and padding that hides every key
            Config(positional="alibi", n_heads=6, mask="sliding_window", window=2, weights="random"),
            Config(positional="rope", n_heads=2, n_kv_heads=1, bias=True, mask="padding", padding=(0, 1, 2, 3),
                   pe_base=500_000.0),
            # the fresh read's settings: one token, padding with no position chosen, H = 6 with 3 KV heads under
            # RoPE, W = 1 with an unscaled score and H = 7 under ALiBi, padding hiding every key after its query
            Config(positional="alibi", sentence="love"), Config(positional="rope", sentence="love", d_k=2),
            Config(mask="padding"), Config(n_heads=6, n_kv_heads=3, positional="rope", weights="random"),
            Config(positional="alibi", n_heads=7, mask="sliding_window", window=1, score="additive", weights="random"),
            Config(positional="alibi", n_heads=6, mask="padding", padding=(1, 2, 3), weights="random"),
            Config(mask="sliding_window", window=1),
            Config(n_heads=2, mask="sliding_window", window=1, score="bilinear", positional="alibi", weights="random")]
    return out


GRID = settings_grid()
PAGES = [f for _, pages in __import__("ui.nav", fromlist=["SECTIONS"]).SECTIONS for f, *_ in pages if (ROOT / f).exists()]
OWN_SETTINGS = [p for p in PAGES if "settings=False" in (ROOT / p).read_text(encoding="utf-8")   # not the sidebar's
                or "from ui.real import" in (ROOT / p).read_text(encoding="utf-8")]   # a real model: the sentence only
TABBED = [p for p in PAGES if "word_tabs(" in (ROOT / p).read_text(encoding="utf-8")]        # One word / All words
LAZY_OPEN = {"scores.compare": True, "notation.open": True, "grp.position": True, "grp.score": True,
             "grp.display": True}
ALL_WORDS = {"qkv.tab": "All words", "scores.tab": "All words", "context.tab": "All words"}
SEED_NAME = re.compile(r"\bseed 00\d", re.I)


def test_the_grid_covers_every_value_of_every_setting():
    seen = lambda f: {getattr(c, f) for c in GRID}
    assert seen("score") == {"dot", "scaled_dot", "additive", "bilinear"}
    assert seen("positional") == {"sinusoidal", "learned", "index", "none", "rope", "alibi"}
    assert seen("embedding") == {"toy", "glove", "random", "upload"}
    assert seen("mask") == {"none", "causal", "padding", "sliding_window"}
    assert seen("n_heads") == {1, 2, 3, 4, 6, 7} and seen("d_model") == {7, 8} and seen("bias") == {True, False}
    assert {(c.n_heads, c.kv_heads) for c in GRID} >= {(4, 2), (2, 1), (4, 4)}   # GQA, MQA and MHA walked
    widths = {run_forward(c).facts["d_embed"] % 2 for c in GRID if c.positional == "sinusoidal"}
    assert widths == {0, 1}                              # odd and even encodings both walked
    assert len({(c.score, c.positional) for c in GRID[:16]}) == 16      # the array: every pair once


def page_text(at) -> str:
    """Everything a learner reads on the page: text elements, formulas, labels, chart titles and axes."""
    from tests.apptest_util import charts
    kinds = ("title", "header", "subheader", "markdown", "caption", "latex", "code", "text", "info", "warning",
             "error", "success", "expander", "tab", "selectbox", "radio", "slider", "select_slider", "toggle",
             "checkbox", "button", "number_input", "text_input", "multiselect")
    parts = []
    for kind in kinds:
        for e in at.get(kind):
            for attr in ("value", "label", "help", "body"):
                v = getattr(e, attr, None)
                if isinstance(v, str):
                    parts.append(v)
            for opt in getattr(e, "options", None) or ():
                parts.append(str(opt))
    for spec in charts(at):
        parts.append(str(spec.get("title", "")))
        for enc in spec.get("encoding", {}).values():
            if isinstance(enc, dict):
                parts.append(str(enc.get("title", "")))
    return "\n".join(parts)


def walk(config: Config, pages: list[str]):
    """`pages` in one session under `config` with every lazy part open (tabs on "One word"), then the
    tabbed ones again on "All words": (page, text, at) for each visit."""
    from streamlit.testing.v1 import AppTest
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.session_state["s.ready"], at.session_state["s.presenter"], at.session_state["s.url_notices"] = True, False, []
    for f in fields(Config):
        at.session_state[f"s.{f.name}"] = getattr(config, f.name)
    for key, value in LAZY_OPEN.items():
        at.session_state[key] = value
    visits = [(p, {}) for p in pages] + [(p, ALL_WORDS) for p in pages if p in TABBED]
    for page, lazy in visits:
        for key, value in lazy.items():
            at.session_state[key] = value
        at.switch_page(page)
        at.run()
        assert not at.exception, (page, config, [e.value for e in at.exception])
        yield page, page_text(at), at


@pytest.mark.parametrize("config", GRID, ids=[f"grid{i}" for i in range(len(GRID))])
def test_no_page_shows_a_claim_where_it_does_not_hold(config):
    pages = [p for p in PAGES if p not in OWN_SETTINGS or config == GRID[-1]]   # own-settings pages: once
    for page, text, at in walk(config, pages):
        assert shown_outside(text, config) == [], (page, config)
        for about, settings in (at.session_state["s.claims"] if "s.claims" in at.session_state else {}).items():
            assert shown_outside(text, settings, about) == [], (page, about, settings)   # a lesson page's own claims
        assert not SEED_NAME.search(text), (page, SEED_NAME.search(text).group(0))
        if page.endswith("7_multi_head.py"):
            latex = formulas(at)
            assert all(any(part in f for f in latex) for part in attention_parts(config, heads=config.n_heads > 1))
            assert multi_head_formula(config) in latex


# ---- the unit-variance sentences (proved in tests/test_explain.py and test_score_functions.py) ----

def test_no_sentence_says_the_spread_is_near_1_without_its_condition():
    """The words "near 1 whatever d_k" are false for inputs without unit variance: nowhere in the app."""
    for path in python_files("attention_core", "app_pages", "ui"):
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"near 1,? whatever d_k", text), path
