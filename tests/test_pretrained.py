"""Defaults that teach (issue 10): GloVe keeps a student's words, 1/2/4 heads run on the defaults,
trained W_Q, W_K, W_V give attention that is far from uniform, and the weights are what they say."""
from pathlib import Path

import numpy as np
import pytest

from attention_core import Config, ConfigError, classifier as clf, pretrained, run_forward, vocabulary_limit
from attention_core.labs.export import config_from_query, config_to_query
from attention_core.math.text import tokenize

SENTENCES = [line.strip() for line in (Path(__file__).resolve().parents[1] / "data" / "student_sentences.txt")
             .read_text().splitlines() if line.strip() and not line.startswith("#")]


def test_the_student_sentences_are_varied_enough():
    assert len(SENTENCES) >= 40
    assert len({w for s in SENTENCES for w in tokenize(s)[0]}) >= 200


def test_default_vocabulary_keeps_95_percent_of_a_students_words():
    default = Config()
    kept = total = 0
    for s in SENTENCES:
        total += len(tokenize(s)[0])
        kept += run_forward(default.replace(sentence=s)).n
    assert kept / total >= 0.95, kept / total
    t = run_forward(default.replace(sentence="my dog chased the ball"))
    assert t.tokens == ("my", "dog", "chased", "the", "ball")


def test_vocabulary_limit_says_what_is_kept_before_anything_is_typed():
    assert vocabulary_limit(Config()) == "GloVe knows the 20,000 most frequent English words; rarer words are dropped."
    assert "<unk>" in vocabulary_limit(Config(unknown="unk"))
    assert "knows 20 words" in vocabulary_limit(Config(embedding="toy"))
    assert "Any word" in vocabulary_limit(Config(embedding="random", d_model=12)) and "12-d" in vocabulary_limit(
        Config(embedding="random", d_model=12))


@pytest.mark.parametrize("heads", [1, 2, 4])
def test_one_two_and_four_heads_run_on_the_defaults(heads):
    t = run_forward(Config(sentence="my dog chased the ball across the park", n_heads=heads))
    n, d_k, d_v = 8, Config().d_k, Config().d_v
    assert t["x"].shape == (n, 50)
    assert t["w_q"].shape == (50, heads * d_k) and t["w_v"].shape == (50, heads * d_v)
    lead = (heads,) if heads > 1 else ()
    assert t["weights"].shape == lead + (n, n)
    assert t["context"].shape == lead + (n, d_v)
    assert t["output"].shape == (n, 50)
    np.testing.assert_allclose(t["weights"].value.sum(axis=-1), 1.0, atol=1e-12)


def test_heads_need_not_divide_d_model():
    t = run_forward(Config(embedding="random", d_model=10, n_heads=3, weights="random"))
    assert t["w_q"].shape == (10, 3 * Config().d_k)


def peak_ratios(config: Config) -> np.ndarray:
    """Per sentence (4 or more tokens kept): mean over query rows (and heads) of the largest weight, times n."""
    ratios = []
    for s in SENTENCES:
        w = run_forward(config.replace(sentence=s))["weights"].value
        n = w.shape[-1]
        if n >= 4:
            ratios.append(w.max(axis=-1).mean() * n)
    return np.array(ratios)


@pytest.mark.parametrize("heads", [1, 2, 4])
def test_trained_attention_is_at_least_twice_as_peaked_as_uniform(heads):
    config = Config(n_heads=heads)
    assert config.temperature == 1.0 and config.weights == "trained"
    ratios = peak_ratios(config)
    assert len(ratios) >= 35
    assert ratios.mean() >= 2.0 and np.percentile(ratios, 10) >= 2.0, ratios
    assert ratios.mean() > peak_ratios(config.replace(weights="random")).mean() + 1.0


def test_trained_weights_focus_on_the_words_that_carry_meaning():
    t = run_forward(Config(sentence="the battery died within a week"))
    assert {t.tokens[j] for j in t["weights"].value.argmax(axis=1)} == {"died"}


def test_weights_say_what_they_are_and_the_accuracy_is_recomputed():
    config = Config()
    t = run_forward(config)
    trained = pretrained.trained_weights(config)
    samples, n_dataset = pretrained.training_samples(config)
    assert n_dataset == len(clf.load_dataset()) and trained.n_sentences == len(samples)
    retrained = pretrained.train_weights(pretrained.training_key(config))   # the classifier's w_o is not kept:
    assert retrained.accuracy == trained.accuracy                            # recompute by training again
    assert retrained.accuracy == clf.evaluate(retrained.classifier, samples)["accuracy"]
    assert f"train accuracy {trained.accuracy:.0%}" in t["w_q"].why
    assert f"for {trained.epochs} epochs" in t["w_q"].why and f"{trained.n_sentences} labelled sentences" in t["w_q"].why
    np.testing.assert_array_equal(t["w_q"].value, trained.params["w_q"])
    assert "seeded random start" in t["w_o"].why and "only W_Q, W_K, W_V are trained" in t["w_o"].why
    r = run_forward(config.replace(weights="random"))
    assert "Seeded random weights, N(0, 1/d_model)" in r["w_q"].why and "trained" not in r["w_o"].why


def test_training_starts_from_the_random_weights_and_moves_them():
    config = Config(n_heads=2)
    start = run_forward(config.replace(weights="random"))["w_q"].value
    params = clf.init_params(50, config.d_k, config.d_v, config.seed, n_heads=2)
    np.testing.assert_array_equal(params["w_q"], start)
    assert np.abs(pretrained.trained_weights(config).params["w_q"] - start).max() > 0.1


@pytest.mark.parametrize("n_heads", pretrained.SHIPPED_HEADS)
def test_the_shipped_default_weights_are_reproduced_by_retraining(n_heads):
    shipped = pretrained.load_shipped(pretrained.shipped_path(n_heads), n_heads)
    assert shipped is not None, "data/trained_default*.npz is stale: run python scripts/make_shipped_data.py"
    again = pretrained.train_weights(pretrained.training_key(Config(n_heads=n_heads)))
    assert set(shipped.params) == set(again.params) == {"w_q", "w_k", "w_v"}
    # Same data, same seed, same steps; only BLAS's summation order differs between CPUs (vector width),
    # which over the whole run moves weights by up to ~1e-11 (seen: 2.4e-12). Stale data differs by far more.
    for name, value in again.params.items():
        np.testing.assert_allclose(shipped.params[name], value, rtol=0, atol=1e-9)
    for name, value in again.classifier.items():
        np.testing.assert_allclose(shipped.classifier[name], value, rtol=0, atol=1e-9)
    assert (shipped.epochs, shipped.accuracy, shipped.n_sentences) == (again.epochs, again.accuracy, again.n_sentences)
    samples, _ = pretrained.training_samples(Config())
    assert clf.evaluate(shipped.classifier, samples, n_heads=n_heads)["accuracy"] == shipped.accuracy


def test_the_cache_ignores_the_sentence_and_the_score_settings():
    a = pretrained.training_key(Config(sentence="hello there", temperature=2.0, mask="causal", score="dot"))
    assert a == pretrained.training_key(Config())
    assert pretrained.training_key(Config(d_k=6)) != a


def test_biases_are_trained_only_when_the_settings_have_them():
    config = Config(bias=True, n_heads=2)
    t = run_forward(config)
    b_q = pretrained.trained_weights(config).params["b_q"]
    np.testing.assert_array_equal(t["b_q"].value, b_q)
    assert b_q.shape == (2 * config.d_k,) and np.abs(b_q).max() > 0
    assert "b_q" not in pretrained.trained_weights(Config()).params


def test_toy_vectors_cannot_be_trained_and_say_what_to_change():
    with pytest.raises(ConfigError, match="Trained weights need GloVe or random embeddings, or set the weights to seeded random"):
        run_forward(Config(embedding="toy"))
    assert run_forward(Config(embedding="toy", weights="random")).tokens == ("i", "love", "you", "today")


def test_large_settings_train_in_bounded_work():
    config = Config(embedding="random", d_model=512, d_k=512, d_v=512)
    samples, _ = pretrained.training_samples(config)
    assert pretrained.epochs_for(samples, 512, config) == 1
    assert pretrained.epochs_for(*pretrained.training_samples(Config())[:1], 50, Config()) == pretrained.EPOCHS


def test_weights_travel_in_the_url():
    config = Config(weights="random", n_heads=2)
    assert config_to_query(config)["weights"] == "random"
    back, notices = config_from_query(config_to_query(config))
    assert back == config and notices == []
    back, notices = config_from_query({"weights": "pretrained<script>", "d_k": "6"})
    assert back == Config(d_k=6)
    assert notices == ["Link setting “weights” is not one of trained, random; using the default (trained)."]


@pytest.mark.parametrize("heads", [1, 2, 4])
def test_multi_head_classifier_gradients_match_torch_autograd(heads):
    rng = np.random.default_rng(heads)
    params = clf.init_params(7, 3, 2, seed=1, n_heads=heads)
    params = {k: v + 0.2 * rng.standard_normal(v.shape) for k, v in params.items()}   # non-zero biases too
    x = rng.standard_normal((5, 7))
    loss, hand = clf.loss_and_gradients(params, x, 1, n_heads=heads)
    torch_loss, auto = clf.torch_loss_and_gradients(params, x, 1, n_heads=heads)
    assert abs(loss - torch_loss) < 1e-12
    assert set(hand) == set(auto)
    for name in auto:
        assert hand[name].shape == auto[name].shape
        np.testing.assert_allclose(hand[name], auto[name], rtol=1e-9, atol=1e-12, err_msg=name)


def test_one_head_fast_path_is_bit_identical_to_the_traced_pass():
    params = clf.init_params(6, 3, 2, seed=0)
    x = np.random.default_rng(0).standard_normal((4, 6))
    loss, trace = clf.forward(params, x, "positive")
    fast = clf._forward(params, x, 2, n_heads=1)
    assert loss == float(fast["loss"])
    assert (trace["weights"].value == fast["weights"]).all()
    grads = clf.backward(params, x, "positive")
    _, fast_grads = clf.loss_and_gradients(params, x, 2, n_heads=1)
    assert all((grads[k] == fast_grads[k]).all() for k in grads)


def test_multi_head_weights_are_per_head_softmaxes():
    params = clf.init_params(5, 2, 3, seed=0, n_heads=4)
    p, weights = clf.predict(params, np.ones((3, 5)), n_heads=4)
    assert weights.shape == (4, 3, 3) and abs(p.sum() - 1) < 1e-12
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0)
    with pytest.raises(ConfigError, match="n_heads=3"):
        clf.predict(params, np.ones((3, 5)), n_heads=3)


def test_the_shipped_word_list_is_the_start_of_glove_s_list():
    from attention_core.math import embeddings
    shipped = embeddings.WORD_LIST_PATH.read_text(encoding="utf-8").split("\n")
    assert len(shipped) == embeddings.SHIPPED_WORDS
    assert tuple(shipped) == embeddings._parquet_words(embeddings.SHIPPED_WORDS)
    assert embeddings.glove_vocabulary(1000).words == tuple(shipped[:1000])
    assert len(embeddings.glove_vocabulary(25_000).words) == 25_000                   # past the list: the parquet file


def test_a_trained_weight_is_explained_as_trained_not_as_a_random_draw():
    from attention_core import explain
    config = Config(bias=True)
    t = run_forward(config)
    random_start = run_forward(config.replace(weights="random"))["w_q"].value[2, 1]
    e = explain(t, "w_q", (2, 1), config=config)
    assert e.value == t["w_q"].value[2, 1] and e.independent
    import re
    start, moved = (float(m.replace("−", "-")) for m in
                    re.search(r"started at (\S+) .* moved it by (\S+?)\.$", e.note).groups())
    assert start == pytest.approx(random_start, abs=1e-3) and moved == pytest.approx(e.value - random_start, abs=1e-3)
    assert "seeded init N(0, 1/50)" in e.note and "20 epochs of SGD on 84 sentiment sentences" in e.note
    w_o = explain(t, "w_o", (0, 0), config=config)
    assert "here it is at its start" in w_o.note


@pytest.mark.parametrize("weights", ["trained", "random"])
def test_the_scaling_why_states_the_spread_the_scores_have(weights):
    t = run_forward(Config(weights=weights))
    spread = float(np.mean(np.std(t["scaled_scores"].value, axis=-1)))
    assert f"Their spread here: {spread:.2g}" in t["scaled_scores"].why
    assert ("trained weights learned" in t["scaled_scores"].why) == (weights == "trained")


@pytest.mark.parametrize("n_heads", [1, 2, 4])
def test_trained_rows_tend_to_agree_as_the_weights_step_counts(n_heads):
    """Under trained weights the weights' why counts the rows whose largest weight is on the most
    chosen key, and names it: the count is the trace's own. On the student sentences that key draws
    at least 80% of a head's rows on average (why the sentence is worth showing)."""
    import re
    sentences = [s for s in SENTENCES if len(s.split()) >= 4]
    agree = []
    for sentence in sentences:
        trace = run_forward(Config(sentence=sentence, n_heads=n_heads))
        weights = trace["weights"].value.reshape(-1, trace.n, trace.n)         # (H, n_q, n_k)
        top = weights.argmax(axis=-1).ravel()                                  # every row of every head
        said = re.search(r"here (\d+) of the (\d+) rows(?: \(all (\d+) heads\))? put their largest weight on “(.+?)”",
                         trace["weights"].why)
        assert said, trace["weights"].why
        count, rows, heads, word = said.groups()
        assert (int(count), int(rows)) == (np.bincount(top).max(), top.size) and (heads is None) == (n_heads == 1)
        assert word == trace.token_labels()[np.bincount(top).argmax()]
        for head in weights:
            agree.append(np.bincount(head.argmax(axis=-1)).max() / trace.n)
    assert np.mean(agree) >= 0.8, np.mean(agree)
    assert "largest weight on" not in run_forward(Config(weights="random"))["weights"].why
