"""Sentences of the transformer pages that were false under some settings (issue 30, item 5), each checked at the
setting that made it false: the core's numbers first, then the words said beside them."""
from __future__ import annotations

import numpy as np
import pytest

from attention_core.explanations import explain
from attention_core.lessons.next_token import next_token_trace, sampling_notes
from attention_core.math.text import set_aside
from attention_core.forward.transformer import Arch
from attention_core.training.lm.model import ARCH, sentence_ids
from tests.apptest_util import messages, no_exception, open_page

REPEAT = "the cat sat on the mat and the cat sat on the"


def test_characters_set_aside_are_quoted_and_counted_so_a_comma_is_not_read_as_the_lists():
    _, _, _, notices = sentence_ids(", , , , . cat")
    assert notices == ["Not words, set aside: “,” (4 times), “.”."]          # it said "set aside: , , , , ."
    assert set_aside(list("ab")) == "Not words, set aside: “a”, “b”."
    # each character once: no pair of $ (LaTeX), * or ` (markdown) can form out of what a learner typed
    said = set_aside(list("$$**``"))
    assert said == "Not words, set aside: “$” (2 times), “*” (2 times), “`” (2 times)." and said.count("$") == 1
    from attention_core.forward.config import Config
    from attention_core.forward.stages import start
    assert "Not words, set aside: “!” (2 times)." in start(Config(sentence="hello!! world")).trace.notices


def test_one_word_cut_is_said_in_the_singular():
    words = [f"w{i}" for i in range(41)]                     # 41 words, 41 distinct: 1 over the context
    notices = sentence_ids(" ".join(words))[3]
    assert "the first word is cut, the last 40 kept" in notices[0] and "1 words" not in " ".join(notices)
    assert "of the last 40, the first 9 words are cut" in notices[1]              # 40 distinct > 31 tokens
    notices = sentence_ids(" ".join(["a"] + words[:31]))[3]  # 32 words, 32 distinct: 1 over the vocabulary
    assert notices == ["The model has 31 tokens, one per distinct word: the first word is cut, so that the rest use "
                       "at most 31 distinct words."]


def test_at_t_0_no_note_says_every_token_stays():
    t = next_token_trace(REPEAT, 0.0, 0, 0.9, 0, 0)
    assert int(t["kept"].value.sum()) == 1                       # the argmax alone
    notes = " ".join(t.facts["notes"])
    assert "stay" not in notes.replace("one token is kept", "") and "one token is kept" in notes
    assert sampling_notes(0.0, 31, 1.0) == sampling_notes(0.0, 0, 0.0)          # T = 0 alone decides


def test_top_p_1_with_top_k_says_what_top_k_kept_already_adds_up_to_1():
    t = next_token_trace(REPEAT, 0.5, 10, 1.0, 0, 0)
    kept = t["kept"].value.astype(bool)
    assert kept.sum() == 10 and abs(t["renormalised"].value[kept].sum() - 1) < 1e-12
    note = " ".join(t.facts["notes"])
    assert "whole vocabulary is needed" not in note and "it drops none of the tokens top-k kept" in note
    assert "drops none of the tokens (p_top = 1" in " ".join(sampling_notes(0.5, 0, 1.0))


def test_the_heads_softmax_writes_its_row_maximum_as_max_not_m():
    t = next_token_trace(REPEAT, 0.5, 10, 0.9, 0, 0)
    e = explain(t, "heads", (0, 3))
    assert r"\max \tilde S" in e.latex and " - m}" not in e.latex and "max S̃ = " in e.note
    s = t["heads_scores"].value[0]
    top = float(s[np.isfinite(s)].max())
    w = np.exp(s[np.isfinite(s)] - top)
    assert abs(e.value - w[3] / w.sum()) < 1e-15 and f"max S̃ = {top:.3f}"[:12] in e.note


def test_dl_da_at_a_masked_key_is_said_to_be_a_change_that_cannot_happen():
    from attention_core.training.lm.step_trace import shipped_params, training_step
    ids, _, labels, _ = sentence_ids(REPEAT)
    s = training_step(ARCH, shipped_params(), ids, labels, 0.1)
    dA, dS = s.trace["dL/dl0.weights"].value, s.trace["dL/dl0.scores"].value
    h, i, j = 0, 2, 7                                                      # key 7 after query 2: masked
    assert abs(dA[h, i, j]) > 1e-6 and dS[h, i, j] == 0                   # non-zero ∂L/∂A, zero ∂L/∂Ŝ there
    note = explain(s.trace, "dL/dl0.weights", (h, i, j)).note
    assert "causal mask hides it" in note and "cannot" in note
    assert "causal mask" not in explain(s.trace, "dL/dl0.weights", (h, 7, 2)).note      # a key it sees
    assert "j > i" in s.trace["dL/dl0.weights"].why
    assert explain(s.trace, "dL/dtok_emb", (0, 3)).note == "Token 0 (“the”) stands at positions 0, 4, 7, 11."


@pytest.mark.parametrize("k,said", [(1, "**1** of the 31 is kept"), (3, "**3** of the 31 are kept")])
def test_the_kept_count_agrees_with_its_verb(k, said):
    at = open_page("app_pages/51_next_token.py", query={"next_token.k": str(k), "next_token.p": "1"})
    no_exception(at)
    assert said in "\n".join(m.value for m in at.markdown)


def test_the_context_page_names_a_word_of_the_sentence_not_cat():
    at = open_page("app_pages/6_context.py", query={"sentence": "dogs chase red balls"})
    no_exception(at)
    text = "\n".join(m.value for m in at.markdown)
    assert "“cat”" not in text and "puts most of its weight on “dogs” takes on mostly the value row of “dogs”" in text
    assert not messages(at).startswith("Traceback")


def test_two_words_have_one_scored_position_and_one_word_one_logit():
    from attention_core.training.lm.step_trace import shipped_params, training_step
    ids, _, labels, _ = sentence_ids("hello world")
    s = training_step(ARCH, shipped_params(), ids, labels, 0.1)
    assert "shared out over the 1 scored position." in s.trace["dL/dlogits"].why
    at = open_page("app_pages/50_block.py", query={"sentence": "hello"})
    no_exception(at)
    text = "\n".join(m.value for m in at.markdown)
    assert "(“hello”) gives its only word, “hello”," in text and "highest" not in text.split("Row 0")[1][:60]


def test_with_two_words_no_head_is_named_the_previous_token_head():
    t = next_token_trace("hello world", 0.5, 10, 0.9, 0, 0)
    prev = t.facts["previous"]
    assert max(prev) == prev[2] > prev[0]            # head 2 looks at the first token, which is also the previous
    at = open_page("app_pages/51_next_token.py", query={"sentence": "hello world"})
    no_exception(at)
    text = "\n".join(m.value for m in at.markdown)
    assert "cannot be told from a head that looks at the first token" in text and ": the previous-token head" not in text
    at = open_page("app_pages/51_next_token.py", query={"sentence": "a b c d e"})
    assert ": the previous-token head" in "\n".join(m.value for m in at.markdown)


def test_the_last_query_hides_no_key_and_says_so():
    t = next_token_trace(REPEAT, 0.5, 10, 0.9, 0, 0)
    assert np.isfinite(t["heads_scores"].value).all()                 # the last query sees every key
    note = explain(t, "heads", (1, 4)).note
    assert "hides none" in note and "for all 12 keys" in note and "hidden by" not in note
    assert "hides none" in t["heads_scores"].why and "−∞" not in t["heads_scores"].why


def test_k_composition_at_the_first_repeat_says_which_head_carries_the_first_token():
    """At i = 20 the earlier occurrence is token 0, so key j + 1 = 1's previous token is the first token: a layer-0
    head that looks at the first token (named 'spread out' by its average habit) carries token j there too, and its
    share is the largest; the text said only that the previous-token head did it."""
    from attention_core.lessons import induction as ind
    from ui.transformer import induction_run, induction_view
    _, an = induction_run.shipped()
    lesson = ind.k_composition(an["after"], an["params"], 20, induction_view.roles(an)[1])
    rows, a0 = ind.shares(lesson), ind.patterns(an["after"])[0]
    assert lesson.facts["r"] == 1
    f = lesson.facts
    text = induction_view.composition_text(lesson, rows, an["names"], a0)
    ranked = sorted(range(len(rows)), key=lambda p: -rows[p]["singles out j+1 by"])[:3]
    said = [p - 2 for p in ranked if 0 <= p - 2 < 4 and not (f["back"][p - 2] == 1 and f["back_weight"][p - 2] >= ind.CLEAR)
            and a0[p - 2, 1, 0] >= ind.CLEAR]
    for h in range(4):
        assert (f"At row j + 1 = 1, layer-0 head {h} puts {a0[h, 1, 0]:.2f} of its weight on key j = 0" in text) == (h in said)
    assert said                              # the shipped run: at least one layer-0 head looks at the first token
    later = ind.k_composition(an["after"], an["params"], 30, induction_view.roles(an)[1])
    assert "At row" not in induction_view.composition_text(later, ind.shares(later), an["names"], a0)


# ---- a second fresh read (read1): sentences false under the settings below, each checked there ----------------

def test_one_word_the_last_query_has_its_only_key_not_keys_before_it():
    t = next_token_trace("hello", 1.0, 0, 1.0, 0, 0)
    assert t["heads"].value.shape == (4, 1) and np.allclose(t["heads"].value, 1.0)   # one key: weight 1
    note = explain(t, "heads", (2, 0)).note
    assert "for its only key, its own position" in note and "all 1 keys" not in note
    for s in ("hello", REPEAT):                        # the last key is the query's own position: nothing after it
        t = next_token_trace(s, 1.0, 0, 1.0, 0, 0)
        assert "comes after every key" not in explain(t, "heads", (0, 0)).note
        assert "comes after every key" not in t["heads_scores"].why and "No key comes after it" in t["heads_scores"].why


def test_a_small_t_that_zeroes_only_some_exponentials_does_not_say_all_the_probability():
    """A small T (a link may carry it; 0.002 did it on an earlier shipped run) where some logits are more than
    745·T below the largest (e^… = 0) and others are not (e^… tiny, not 0): the largest takes almost all the
    probability, not all of it."""
    z = np.sort(next_token_trace(REPEAT, 1.0, 0, 1.0, 0, 0)["logits"].value)[::-1]
    gaps = z[0] - z[1:]                                               # below the largest logit, > 0
    T = float(np.sqrt(gaps.min() * gaps.max())) / 745                 # e^(−gap/T) is 0 for some gaps, not for all
    t = next_token_trace(REPEAT, T, 0, 1.0, 0, 0)
    p = t["probs"].value
    assert 1 < int((p > 0).sum()) < p.size and p.max() == 1.0
    note = explain(t, "probs", (0,)).note
    assert "takes almost all the probability" in note and "keep a share" in note
    assert "takes all the probability" not in note
    t = next_token_trace(REPEAT, 1e-4, 0, 1.0, 0, 0)                 # every other e^… is 0: all of it
    assert int((t["probs"].value > 0).sum()) == 1
    assert "the largest logit takes all the probability" in explain(t, "probs", (0,)).note


def test_block_gradients_keeps_p_for_the_probabilities_and_names_the_position_embedding_otherwise():
    from attention_core.training.lm.step_trace import shipped_params, training_step
    ids, _, labels, _ = sentence_ids("the cat sat")
    s = training_step(ARCH, shipped_params(), ids, labels, 0.1)
    assert "P_{i,:}" in s.trace["dL/dlogits"].formula                              # P: the probabilities
    assert "P" not in s.trace.facts["symbols"]["pos_emb"][1]
    assert "P_{i" not in s.trace["dL/dpos_emb"].formula and "E_{i,:}^{\\mathrm{pos}}" in s.trace["dL/dpos_emb"].formula
    assert "row 0 of P " not in explain(s.trace, "dL/dpos_emb", (0, 0)).note
    note = explain(s.trace, "dL/dlogits", (0, 0)).note                              # (P − [j = y]) / (n − 1)
    assert "divided by the 2 scored positions" in note


def test_at_t_0_generation_says_argmax_not_a_draw_by_u():
    at = open_page("app_pages/51_next_token.py", query={"next_token.temperature": "0", "next_token.n_new": "3"})
    no_exception(at)
    text = "\n".join(m.value for m in at.markdown)
    assert "Each token is the argmax as above (T = 0: its u, in the table, changes nothing)" in text
    assert "drawn as above with its own u" not in text


def test_the_sentence_tab_counts_one_word_in_the_singular():
    at = open_page("app_pages/52_induction_heads.py", query={"induction.tab": "3", "induction.sentence": "hello"},
                   timeout=120)
    no_exception(at)
    text = "\n".join(m.value for m in at.markdown)
    assert "“hello”: 1 word, 1 distinct" in text and "1 words" not in text
    from attention_core.training.lm import shipped
    from attention_core.training.lm.model import lm_trace
    ids, _, labels, _ = sentence_ids("a b c d e")
    guess = int(np.argmax(lm_trace(shipped.load().params, ids, labels)["logits"].value[-1]))
    assert guess not in ids                                                # a token no word of it was given
    at.text_input(key="induction.sentence").set_value("a b c d e").run()
    text = "\n".join(m.value for m in at.markdown)
    assert f"most likely next token is **⟨token {guess}⟩**, a token no word" in text and f"**token {guess}**" not in text
    at.text_input(key="induction.sentence").set_value(REPEAT).run()       # “the” occurred 3 times before
    text = "\n".join(m.value for m in at.markdown)
    assert "the word after each of the last word's earlier occurrences: “cat” (1), “mat” (5), “cat” (8)." in text


def test_the_kept_step_at_t_0_says_argmax_not_that_top_k_or_top_p_dropped_a_token():
    t = next_token_trace(REPEAT, 0.0, 0, 1.0, 0, 0)                  # top-k and top-p off, yet 30 tokens are 0
    assert int(t["kept"].value.sum()) == 1 and not t.facts["kept_k"].all()
    assert "T = 0: 1 for the argmax only" in t["kept"].why and "top-k or top-p dropped it" not in t["kept"].why
    t = next_token_trace(REPEAT, 1.0, 0, 0.5, 0, 0)                  # k = 0: said to be off in the rule's words
    assert "top-k = 0, or k ≥ 31, is off" in t["kept"].why


def test_the_scaled_step_at_t_0_is_titled_z_as_its_values_are():
    t = next_token_trace(REPEAT, 0.0, 0, 1.0, 0, 0)
    assert np.array_equal(t["scaled"].value, t["logits"].value)          # nothing shifted, nothing divided
    assert t["scaled"].title == "z itself (T = 0: no division)"
    assert next_token_trace(REPEAT, 0.5, 0, 1.0, 0, 0)["scaled"].title == "(z − max z) / T"


@pytest.mark.parametrize("arch", [ARCH, Arch(n_layers=2, placement="post", norm="rms", mlp=True)],
                         ids=["shipped", "post-rms-mlp"])
def test_a_word_only_at_the_last_position_is_told_why_its_embedding_gets_no_gradient(arch):
    """'the cat sat': 'sat' stands only at the last position, whose row of ∂L/∂X_0 is exactly 0 (its logits are not
    scored; the causal mask hides it from the earlier queries); the note said only where it stands."""
    from attention_core.training.lm.step_trace import block_params, shipped_params, training_step
    ids, _, labels, _ = sentence_ids("the cat sat")
    params, _ = block_params(shipped_params(), arch)
    s = training_step(arch, params, ids, labels, 0.1)
    assert not s.trace["dL/dx"].value[-1].any() and not s.trace["dL/dtok_emb"].value[2].any()
    assert s.trace["dL/dtok_emb"].value[0].any()
    assert "its logits are not scored" in explain(s.trace, "dL/dtok_emb", (2, 0)).note
    assert "not scored" not in explain(s.trace, "dL/dtok_emb", (0, 0)).note
    assert "Position 2 is the last" in explain(s.trace, "dL/dpos_emb", (2, 1)).note
    assert "is the last" not in explain(s.trace, "dL/dpos_emb", (1, 1)).note


def test_the_residual_caption_says_why_the_last_row_norm_is_0():
    at = open_page("app_pages/53_block_gradients.py", query={"sentence": "the cat sat"}, timeout=120)
    no_exception(at)
    cap = next(c.value for c in at.caption if c.value.startswith("Row norms"))
    assert "sat 0." in cap and "The last is 0: its logits are not scored" in cap


def test_a_query_meets_only_the_keys_the_causal_mask_lets_it_see_and_says_so():
    """∂L/∂Q and ∂L/∂K sum over the whole row or column of ∂L/∂Ŝ, but above the diagonal it is 0 (the mask): the
    notes said 'query i met every key', 'key j met every query'."""
    from attention_core.training.lm.step_trace import shipped_params, training_step
    ids, _, labels, _ = sentence_ids("the cat sat on")
    s = training_step(ARCH, shipped_params(), ids, labels, 0.1)
    ds = s.trace["dL/dl1.scores"].value
    assert not ds[:, np.triu_indices(4, 1)[0], np.triu_indices(4, 1)[1]].any()
    notes = [explain(s.trace, k, c).note for k, c in [("dL/dl1.q", (1, 3)), ("dL/dl1.k", (2, 20))]]
    assert all("every" not in n for n in notes)
    assert "keys 0 … 1; the causal mask hides the later ones" in notes[0]
    assert "queries 2 … 3; the causal mask hides it from the earlier ones" in notes[1]
    assert "no key comes after it" in explain(s.trace, "dL/dl1.q", (3, 3)).note
    for k in ("dL/dl1.q", "dL/dl1.k"):
        assert "every" not in s.trace[k].why and "causal mask" in s.trace[k].why


def test_the_top_k_help_says_a_tie_with_the_k_th_is_kept():
    from attention_core.math.sampling import top_k_keep
    assert top_k_keep(np.array([3.0, 1.0, 1.0, 0.0]), 2).tolist() == [True, True, True, False]   # k = 2 keeps 3
    at = open_page("app_pages/51_next_token.py")
    assert "a token tied with the k-th is kept too" in at.number_input(key="next_token.k").help


@pytest.mark.parametrize("norm", ["layer", "rms"])
def test_the_block_input_does_not_say_post_norm_keeps_the_embedding_as_a_summand(norm):
    """Pre-norm: X_L − X_0 is exactly the sum of what the sublayers wrote; post-norm: it is not (the norms rescale
    each add), while X₀'s caption said 'a row keeps what the embedding put there and gathers more'."""
    from attention_core import Config, run_forward
    from attention_core.forward.transformer import sidebar_block
    config = Config(sentence="the cat sat on the mat")
    for placement in ("pre", "post"):
        t = sidebar_block(config, Arch(n_layers=2, placement=placement, norm=norm, mlp=False), run_forward(config))
        gap = np.abs(t["l1.out"].value - t["x"].value - t["l0.attn"].value - t["l1.attn"].value).max()
        if placement == "pre":
            assert gap < 1e-12 and "a row keeps what the embedding put there" in t["x"].why
        else:
            assert gap > 0.1 and "keeps what the embedding" not in t["x"].why
            assert "not as a plain summand" in t["x"].why and ("re-centred" in t["x"].why) == (norm == "layer")


def test_one_earlier_occurrence_is_said_in_the_singular_on_next_token():
    assert next_token_trace("one two three one two", 1.0, 0, 1.0, 0, 0).facts["targets"] == [2]
    at = open_page("app_pages/51_next_token.py", query={"sentence": "one two three one two"})
    text = "\n".join(m.value for m in at.markdown)
    assert "the token right after its earlier occurrence is at position 2 (“three”)." in text
    at = open_page("app_pages/51_next_token.py", query={"sentence": REPEAT})
    text = "\n".join(m.value for m in at.markdown)
    assert "the tokens right after its earlier occurrences are at positions 1 (“cat”), 5 (“mat”), 8 (“cat”)." in text


def test_the_trained_weights_note_with_one_word_names_its_only_row():
    """One word (one query, one key): not "1 of the 1 rows put their largest weight"."""
    from attention_core import Config
    from attention_core.forward.stages import run_forward
    from attention_core.forward.why import agreement_note
    one = Config(sentence="love")
    note = agreement_note(one, ["love"], run_forward(one)["weights"].value)
    assert "the one row puts all its weight on “love”, the only key" in note and "1 of the 1" not in note
    two = Config(sentence="love you")
    note = agreement_note(two, ["love", "you"], run_forward(two)["weights"].value)
    assert " of the 2 rows put their largest weight on " in note
