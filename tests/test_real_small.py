"""The project's shipped small model as a real model (attention_core/training/real/small.py): run_real on its weights
against the small model's own forward pass (training/lm/model.py lm_trace, forward/transformer.py run_transformer,
float64), its tokens as the small model's pages number them, its head roles as the induction page's scores, and the
picker's first choice and default when the host set no model of its own."""
from __future__ import annotations

import numpy as np
import pytest

from attention_core.explanations import explain
from attention_core.training.lm import shipped
from attention_core.training.lm.model import lm_trace, sentence_ids
from attention_core.training.real import run_real
from attention_core.training.real.head_roles import head_roles
from attention_core.training.real.small import small_model
from tests.apptest_util import messages, no_exception, open_page
from ui.text import md_escape

SENTENCE = "the cat sat on the mat and the cat sat on the"
TOLERANCE = 1e-5                       # float32 against float64: max |ours − theirs| / max |theirs| per tensor


def relative(ours, theirs) -> float:
    return float(np.abs(np.asarray(ours, np.float64) - theirs).max() / np.abs(theirs).max())


@pytest.fixture(scope="module")
def pair():
    """(run_real's trace, lm_trace's) on the sentence's ids: the same ids, the same trained weights."""
    model = small_model()
    ids, words, labels, _ = sentence_ids(SENTENCE)
    return run_real(model, SENTENCE), lm_trace(shipped.load().params, ids, labels)


def test_every_hidden_state_every_head_and_the_logits_match_the_small_models_own_forward(pair):
    ours, theirs = pair
    assert ours.facts["ids"] == theirs.facts["ids"] and ours.n == theirs.n == 12
    stream = ["x", "l0.ln1", "l0.attn", "l0.out", "l1.ln1", "l1.attn", "l1.out", "ln_f", "logits"]
    assert [k for k in ours.steps if k not in ("x_embed", "pe")] == stream    # no MLP: no mid, ln2, hidden, mlp
    for key in stream:
        assert ours[key].value.dtype == np.float32
        assert relative(ours[key].value, theirs[key].value) <= TOLERANCE, (key, relative(ours[key].value, theirs[key].value))
    for l in range(2):
        a, b = ours.facts["attention"][l], theirs.facts["attention"][l]
        for key in ("q", "k", "v", "scores", "weights", "context", "output"):
            assert a[key].value.shape == b[key].value.shape, (l, key)
        for h in range(4):
            assert relative(a["weights"].value[h], b["weights"].value[h]) <= TOLERANCE, (l, h)
            assert relative(a["scores"].value[h], b["scores"].value[h]) <= TOLERANCE, (l, h)


def test_its_cells_explain_themselves_with_their_numbers(pair):
    ours, _ = pair
    cell = (ours.n - 1, 3)
    for key in ("x", "pe", "x_embed", "l0.ln1", "l0.attn", "l0.out", "l1.out", "ln_f", "logits"):
        e = explain(ours, key, cell)
        assert e.value == pytest.approx(ours[key].value[cell], rel=1e-5, abs=1e-6), key
    assert "(GPT-2)" not in explain(ours, "x", cell).note
    assert "“the”" in explain(ours, "logits", (ours.n - 1, 0)).note        # token 0 named by the sentence's word
    w = ours.facts["attention"][1]
    assert explain(w, "weights", (0, ours.n - 1, 2)).value == pytest.approx(w["weights"].value[0, ours.n - 1, 2], rel=1e-5)


def test_the_words_are_its_tokens_with_the_small_models_notices():
    trace = run_real(small_model(), "The cat, the cat! " + " ".join(f"w{k}" for k in range(45)))
    ids, words, _, notices = sentence_ids("The cat, the cat! " + " ".join(f"w{k}" for k in range(45)))
    assert list(trace.facts["ids"]) == ids and list(trace.tokens[:2]) == [words[i] for i in ids[:2]]
    assert trace.notices == notices and len(notices) == 3 and trace.facts["truncated"] == 0
    tok = trace.facts["tokenizer"]
    assert tok.piece(0) == words[0] and tok.decode(ids[:2]) == " ".join(words[i] for i in ids[:2])
    assert run_real(small_model(), "a b a").facts["tokenizer"].piece(30) == "token 30"   # an id no word was given
    from ui.real.tokens_view import words_said
    thirty = words_said(run_real(small_model(), " ".join(f"w{k}" for k in range(30))))
    assert "Token 30 was given no word" in thirty and "30 tokens for 30 words, 30 distinct" in thirty
    assert "keeps the id" not in thirty and "given no word" not in words_said(trace)   # 31 distinct: every id a word
    with pytest.raises(ValueError, match="no words"):
        run_real(small_model(), "!!! ...")
    with pytest.raises(ValueError, match="No tokens"):
        run_real(small_model(), "   ")


def test_its_head_roles_are_the_induction_pages_scores():
    """The induction page's table (ui/transformer/induction_run.batch_scores on its 16 repeated sequences, float64)
    and the roles page's numbers for the small model (float32) agree."""
    from attention_core.lessons import induction as ind
    from ui.transformer.induction_run import batch_scores
    page = batch_scores(shipped.load().params, ind.repeated_batch())
    roles = head_roles(small_model())
    assert roles.facts["sequences"] == 16 and roles.facts["half"] == 20
    assert np.allclose(roles["prev_token"].value, page["prev"], rtol=1e-5, atol=1e-6)
    assert np.allclose(roles["induction"].value, page["induction"], rtol=1e-5, atol=1e-6)
    assert roles["induction"].value[1].max() > 0.5                         # the shipped run has its induction heads


def test_the_small_model_is_the_pickers_first_choice_and_default_without_a_host_model(monkeypatch):
    from ui.real.tokens_view import words_said
    monkeypatch.delenv("ATTENTION_EXPLORER_REAL_MODEL_DIR", raising=False)
    at = open_page("app_pages/70_real_tokens.py", query={"sentence": "the cat sat on the mat, and the cat"})
    no_exception(at)
    assert not at.error, messages(at)
    box = at.selectbox(key="real.model")
    assert box.value == "small" and box.options[0].startswith("The project's small model") and len(box.options) == 7
    assert any(c.value.startswith("The project's small model") for c in at.caption)
    table = at.dataframe[0].value
    ids, words, _, notices = sentence_ids("the cat sat on the mat, and the cat")
    assert list(table["word"]) == [words[i] for i in ids] and list(table["id"]) == ids
    assert [w.value for w in at.warning] == [md_escape(n) for n in notices]   # the comma, set aside, said
    said = " ".join(m.value for m in at.markdown)
    assert "no BPE" in said and "numbered by first appearance" in said and "Why “Ġ”" not in said
    assert words_said(run_real(small_model(), "the cat sat on the mat, and the cat")) in said
    assert "9 tokens for 9 words, 6 distinct" in said and "Tokens 6 to 30 were given no word" in said
    assert "“the” at position 4 is token 0 again" in said
    assert at.session_state["real.model"] == "small"
    assert at.query_params.get("real.model") in ("small", ["small"])      # not the default "": a link names it


def test_the_last_layers_stream_is_said_to_be_read_by_the_final_norm_not_a_next_layer():
    """With no MLP, each layer's stream after attention is what the next layer reads; the last layer has none after
    it: its stream is what the final LayerNorm reads."""
    trace = run_real(small_model(), SENTENCE)
    last = small_model().config.n_layers - 1
    assert "next layer" in trace["l0.out"].why
    assert "next layer" not in trace[f"l{last}.out"].why and "final LayerNorm" in trace[f"l{last}.out"].why


def test_a_drawn_token_no_word_was_given_is_named_once():
    """The sentence's words name tokens 0 … k−1; a drawn id past them is “token j” already: said once, not
    “token j, “token j””."""
    from ui.real.next_view import sample, said
    trace = run_real(small_model(), "cat")
    out = next(o for seed in range(200) if (o := sample(trace, 1.0, 0, 1.0, seed))["token"] > 0)
    j = int(out["token"])
    text = said(trace, out, 1.0, 0, 1.0)
    assert f"**token {j}**" in text and f"“token {j}”" not in text
    greedy = said(trace, out, 0.0, 0, 1.0)
    assert f"token {j}, “token {j}”" not in greedy
    named = said(run_real(small_model(), SENTENCE), sample(run_real(small_model(), SENTENCE), 0.0, 0, 1.0, 0), 0.0, 0, 1.0)
    assert "“" in named.split("**token")[1]                           # a word's token keeps its word


def test_the_tokenizer_paragraph_says_the_words_are_lower_cased_and_symbols_set_aside():
    """“The” and “the” are one token (tokenize lower-cases), and a symbol or an emoji is set aside like a comma:
    the paragraph says both, as the tokens' table and the notice show them."""
    from ui.real.tokens_view import reading
    ids, words, _, notices = sentence_ids("The cat & the ☕ cat")
    assert ids == [0, 1, 0, 1] and "“&”" in notices[0] and "“☕”" in notices[0]
    said = reading(small_model())
    assert "lower-cased" in said and "punctuation and other symbols are set aside" in said
