"""The two training pages through AppTest, and the parameter file round trip."""
import numpy as np
import pytest

from attention_core import ConfigError
from attention_core import classifier as clf
from tests.apptest_util import messages, no_exception, open_page
from attention_core import Config
from attention_core.forward.stages import run_forward
from attention_core.training.training_input import classifier_input
from ui.training.classifier_view import ModelSettings, initial_params, params_from_npz, params_npz, shipped_examples
from ui.training.step_view import GROUPS, step_for


WALK = [g for g, _ in GROUPS]


def autograd_checks(at) -> list[str]:
    return [c.value for c in at.caption if "against autograd" in c.value]


def test_training_step_walks_every_gradient_a_group_at_a_time():
    at = open_page("app_pages/10_training_step.py", timeout=120)
    no_exception(at)
    seen = {}
    for group in WALK:                                          # only the open tab runs: its checks, no others
        at.session_state["ts_walk"] = group
        at.run()
        no_exception(at)
        seen[group] = autograd_checks(at)
    assert [len(seen[g]) for g in WALK] == [0, 2, 0, 0, 6, 1]   # checks are of parameters and x
    checks = [c for g in WALK for c in seen[g]]
    assert len(checks) == len(clf.PARAM_NAMES) + 1            # every parameter and x, each checked once
    assert all(c.startswith("✓") for c in checks), checks
    before, after = (m for m in at.metric if m.label.startswith(("Loss on", "after one")))
    assert float(after.value) < float(before.value)          # a small step lowers the loss on that sentence


def test_training_step_sympy_runs_only_when_opened():
    at = open_page("app_pages/10_training_step.py", timeout=120)
    assert not any("yes ✓" in c.value for c in at.caption)  # closed: nothing derived
    at.session_state["ts_sympy"] = True
    at.run()
    no_exception(at)
    assert sum("yes ✓" in c.value for c in at.caption) == 2  # both SymPy identities hold


def test_training_step_starts_from_the_shared_sentence_and_embeddings():
    query = {"sentence": "the sound is great", "embedding": "glove", "weights": "random", "positional": "index", "d_k": "3", "seed": "7"}
    at = open_page("app_pages/10_training_step.py", query, timeout=120)
    no_exception(at)
    text = "\n".join(m.value for m in at.markdown)
    assert "`the` `sound` `is` `great`" in text
    assert not at.info                                        # nothing had to switch
    assert "start equal to pages 3–5's" in "\n".join(c.value for c in at.caption)
    # the numbers are the classifier's on exactly those settings, with the forward pages' weights
    config = Config(sentence="the sound is great", embedding="glove", weights="random", positional="index", d_k=3, seed=7)
    inp = classifier_input(config)
    assert inp.x.shape == (4, 51)
    params = clf.init_params(51, 3, config.d_v, 7)
    loss, _ = clf.forward(params, inp.x, "positive", inp.tokens)
    shown = next(m.value for m in at.metric if m.label.startswith("Loss L"))
    assert shown == f"{loss:.4f}"
    trace = step_for(config, "positive", 0.05, ())[3]
    np.testing.assert_allclose(trace["q"].value, run_forward(config)["q"].value, atol=1e-12)
    # the student picks the label: the loss is −log p of that class
    at.selectbox(key="ts_label").set_value("negative").run()
    loss_neg, _ = clf.forward(params, inp.x, "negative", inp.tokens)
    assert next(m.value for m in at.metric if m.label.startswith("Loss L")) == f"{loss_neg:.4f}"
    assert next(m.value for m in at.metric if m.label == "True label") == "negative"


def test_training_step_says_what_cannot_carry_over():
    at = open_page("app_pages/10_training_step.py", {"embedding": "toy", "weights": "random", "positional": "learned", "score": "dot", "mask": "causal"},
                   timeout=120)
    no_exception(at)
    info = "\n".join(i.value for i in at.info)
    assert "learned table" in info and "index column" in info
    assert "scaled dot product" in info and "causal masking" in info
    assert "one attention head" not in info                  # one head: nothing to say about heads
    assert not any("start equal to pages" in c.value for c in at.caption)
    assert any("n=4 × d_in=4" in m.value for m in at.markdown)        # toy 3-d + the index column = 4


def test_training_step_own_sentence_dataset_pick_and_bad_one():
    at = open_page("app_pages/10_training_step.py", {"embedding": "glove"}, timeout=120)
    at.text_input(key="w.sentence").set_value("the speaker is awful").run()
    no_exception(at)
    assert "`awful`" in "\n".join(m.value for m in at.markdown)
    example = shipped_examples()[0]
    at.selectbox(key="ts_example").set_value(example.text).run()
    no_exception(at)
    assert at.text_input(key="w.sentence").value == example.text
    assert at.selectbox(key="ts_label").value == example.label
    at.text_input(key="w.sentence").set_value("zzqx qqzv").run()
    no_exception(at)
    assert "None of the words" in messages(at) and "last settings that worked" in messages(at)
    assert f"`{example.text.split()[-1]}`" in "\n".join(m.value for m in at.markdown)   # previous state kept


def test_classifier_input_builds_x_as_the_forward_pages_do():
    config = Config(sentence="cats chase dogs", embedding="random", d_model=5, positional="sinusoidal",
                    combine="concat", pe_base=100.0, seed=3, weights="random")
    inp = classifier_input(config)
    forward = run_forward(config)
    np.testing.assert_array_equal(inp.x, forward["x"].value)          # (3, 10): 5 random + 5 sinusoid columns
    assert inp.x.shape == (3, 10) and inp.same_as_forward and not inp.switches
    inp = classifier_input(config.replace(n_heads=2, positional="learned", bias=True, temperature=2.0))
    assert inp.x.shape == (3, 6) and not inp.same_as_forward
    assert [s.split(":")[0] for s in inp.switches] == ["Position", "Heads", "Temperature", "Biases"]
    inp = classifier_input(config.replace(weights="trained"))        # the classifier starts from the seeded weights
    assert not inp.same_as_forward and [s.split(":")[0] for s in inp.switches] == ["Weights"]


def test_train_page_trains_and_reports():
    at = open_page("app_pages/11_train.py", timeout=120)
    at.number_input(key="tr_epochs").set_value(5).run()
    at.button(key="tr_go").click().run()
    no_exception(at)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Epochs run"] == "5"
    assert int(metrics["Training accuracy"].rstrip("%")) > 50


def test_train_page_stops_on_divergence():
    at = open_page("app_pages/11_train.py", timeout=120)
    at.number_input(key="tr_lr").set_value(100.0).run()
    at.number_input(key="tr_epochs").set_value(20).run()
    at.button(key="tr_go").click().run()
    no_exception(at)
    assert "Training diverged" in messages(at) and "too large" in messages(at)


def test_train_page_refuses_a_rate_of_zero_and_says_the_numbers_are_the_last_rates():
    """η = 0 reaches the page (the box takes it), is refused in words, the Train button waits for a rate, and the
    run on show is said to be the last accepted rate's, its numbers unchanged."""
    at = open_page("app_pages/11_train.py", timeout=120)
    at.number_input(key="tr_epochs").set_value(2).run()
    at.button(key="tr_go").click().run()
    shown = {m.label: m.value for m in at.metric}
    assert shown["Epochs run"] == "2" and not at.error
    at.number_input(key="tr_lr").set_value(0.0).run()
    no_exception(at)
    said = " ".join(e.value for e in at.error)
    assert "learning rate of 0 is refused" in said and "each weight moves by η times its gradient" in said
    assert "the last rate accepted, **0.0500**" in said and "numbers below are its last run's" in said
    assert {m.label: m.value for m in at.metric} == shown          # the last run stays on show, as it was
    assert at.button(key="tr_go").disabled
    at.number_input(key="tr_lr").set_value(0.05).run()              # back to a rate: the same run, nothing refused
    assert not at.error and not at.button(key="tr_go").disabled
    assert {m.label: m.value for m in at.metric} == shown


def test_a_refused_rate_names_a_small_kept_rate_as_it_is_not_as_the_boxs_zero():
    """The last accepted rate 2e-05, then η = 0: the page keeps 2e-05 and says so ("0.0000", the box's four
    places, read as the refused 0 itself)."""
    at = open_page("app_pages/11_train.py", timeout=120)
    at.number_input(key="tr_lr").set_value(0.00002).run()
    at.number_input(key="tr_lr").set_value(0.0).run()
    said = " ".join(e.value for e in at.error)
    assert "the last rate accepted, **2e-05**" in said and "**0.0000**" not in said


def test_parameter_file_round_trip_and_errors():
    s = ModelSettings(d_k=4, d_v=3)
    params = initial_params(s)
    loaded = params_from_npz(params_npz(params, s), s)
    for name in clf.PARAM_NAMES:
        np.testing.assert_array_equal(loaded[name], params[name])
    with pytest.raises(ConfigError, match="not a parameter file"):
        params_from_npz(b"not a zip", s)
    with pytest.raises(ConfigError, match="has shape"):
        params_from_npz(params_npz(params, s), ModelSettings(d_k=5, d_v=3))
    bad = dict(params, w_q=np.full_like(params["w_q"], np.nan))
    with pytest.raises(ConfigError, match="finite"):
        params_from_npz(params_npz(bad, s), s)
    with pytest.raises(ConfigError, match="has no w_o"):
        params_from_npz(params_npz({k: v for k, v in params.items() if k != "w_o"}, s), s)


# ---- every sentence true under the settings it is shown with -------------------------------------------

def page_strings(at) -> str:
    """Everything the page sends that a learner can read: every string field of every element (text,
    captions, formulas, labels, options, help, chart specs), without table bytes, keys and ids."""
    from google.protobuf.json_format import MessageToDict
    out = []

    def strings(obj):
        if isinstance(obj, dict):
            for k, v in obj.items():
                if k not in ("data", "arrowData", "id", "formId", "key"):
                    strings(v)
        elif isinstance(obj, list):
            for v in obj:
                strings(v)
        elif isinstance(obj, str):
            out.append(obj)

    def walk(node):
        if getattr(node, "proto", None) is not None:
            strings(MessageToDict(node.proto))
        for child in getattr(node, "children", {}).values():
            walk(child)

    walk(at._tree)
    return "\n".join(out)


def assert_true_where_shown(text: str, settings) -> None:
    from attention_core.forward.claims import shown_outside
    assert shown_outside(text, settings, about="training") == [], settings
    assert "seed 00" not in text.lower(), [line for line in text.splitlines() if "seed 00" in line.lower()]


# (shared settings in the URL, freeze): Position none / index / sinusoidal added or concatenated / learned,
# one and two heads, frozen or not, three vocabularies, and switches (bias, score, mask, trained weights)
STEP_GRID = [
    ({"embedding": "toy", "weights": "random", "positional": "none", "sentence": "i love the cat"}, False),
    ({"embedding": "glove", "weights": "random", "positional": "index", "n_heads": "2"}, True),
    ({"embedding": "random", "weights": "random", "positional": "sinusoidal", "d_model": "6", "d_k": "1"}, True),
    ({"embedding": "glove", "weights": "random", "positional": "sinusoidal", "combine": "concat", "n_heads": "3",
      "sentence": "great"}, False),
    ({"embedding": "toy", "weights": "random", "positional": "learned", "bias": "1", "score": "dot",
      "mask": "causal", "temperature": "2"}, False),
    ({"embedding": "glove", "positional": "none", "n_heads": "2", "bias": "1"}, True),       # trained weights
]


@pytest.mark.parametrize("query, freeze", STEP_GRID, ids=lambda v: str(v))
def test_training_step_words_hold_under_its_settings(query, freeze):
    """Every tab of the backward walk and the SymPy panel under a grid of the page's settings: no claim about
    the training pages is shown where it does not hold, no learner reads "seed 00…", and what depends on the
    settings says what they are."""
    from attention_core.forward.claims import CLAIMS, holds
    from attention_core.training.training_input import training_settings
    at = open_page("app_pages/10_training_step.py", query, timeout=120)
    no_exception(at)
    if freeze:
        at.toggle(key="ts_freeze").set_value(True).run()
    at.session_state["ts_sympy"] = True
    seen = []
    for group in WALK:
        at.session_state["ts_walk"] = group
        at.run()
        no_exception(at)
        seen.append(page_strings(at))
    text = "\n".join(seen)
    config = at.session_state["ts.last_good"]
    settings = training_settings(config, freeze)
    assert settings.positional == {"learned": "index"}.get(query["positional"], query["positional"])
    assert_true_where_shown(text, settings)
    # the words that hold are there too (shown where they hold, not only hidden where they do not)
    for key in ("train_order_blind", "train_b_k_zero", "train_same_as_forward"):
        assert (CLAIMS[key].marker in text) == holds(key, settings), key
    # X's why and the position line name the position X really has
    x_why = next(c.value for c in at.caption if c.value.startswith("One row per word"))
    assert {"none": "X holds no position", "index": "its position (0, 1, …, n−1) as the last column",
            "sinusoidal": "sinusoidal encoding of its position"}[settings.positional] in x_why
    if settings.positional == "sinusoidal":
        assert ("appended" in x_why) == (config.combine == "concat")
    # the heads switch is there exactly when the shared settings ask for more than one head, and is true
    info = "\n".join(i.value for i in at.info)
    assert ("one attention head, not" in info) == (config.n_heads > 1)
    assert "backward pass is written for one" not in text
    # the finite-difference line counts the entries it compared
    for line in (c.value for c in at.caption if "against finite differences" in c.value):
        assert "(3 entries)" in line or "(1 entry)" in line or "(2 entries)" in line, line
    # heads counted from 0, scores named Ŝ once scaled; sums from 0
    assert "C_1 |" not in text and "C_h]" not in text and r"\sum_{i=1}" not in text
    assert r"\partial S}" not in text and r"\partial S_" not in text


TRAIN_GRID = [("toy", "none", False), ("glove", "index", True), ("glove", "sinusoidal", False),
              ("glove", "none", True)]


@pytest.mark.parametrize("embedding, positional, freeze", TRAIN_GRID, ids=str)
def test_train_page_words_hold_under_its_settings(embedding, positional, freeze):
    """The train page after a short run, under its own settings (vocabulary, Position, frozen last layer; it
    runs one head): no training claim shown outside its condition, no "seed 00…"; Position = none says the
    classifier cannot tell word order, and it is so for the trained parameters."""
    from attention_core.forward.claims import CLAIMS, holds
    from ui.training.classifier_view import ModelSettings, encoded, vocab
    at = open_page("app_pages/11_train.py", timeout=120)
    at.selectbox(key="tr_emb").set_value(embedding)
    at.selectbox(key="tr_pos").set_value(positional)
    at.toggle(key="tr_freeze").set_value(freeze)
    at.number_input(key="tr_epochs").set_value(3).run()
    at.button(key="tr_go").click().run()
    no_exception(at)
    assert {m.label: m.value for m in at.metric}["Epochs run"] == "3"
    text = page_strings(at)
    settings = ModelSettings(embedding=embedding, positional=positional).training(freeze)
    assert_true_where_shown(text, settings)
    assert (CLAIMS["train_order_blind"].marker in text) == holds("train_order_blind", settings)
    run = next(iter(at.session_state["train_runs"].values()))
    if freeze:
        np.testing.assert_array_equal(run["params"]["w_o"], run["params0"]["w_o"])
    if positional == "none":                     # the words hold for what was trained: a shuffle changes nothing
        samples, _ = encoded(shipped_examples(), embedding, positional)
        sample = max(samples, key=lambda s: len(s.tokens))
        _, shuffled = clf.sentence_matrix(" ".join(reversed(sample.tokens)), vocab(embedding), positional)
        np.testing.assert_allclose(clf.predict(run["params"], shuffled)[0], clf.predict(run["params"], sample.x)[0],
                                   rtol=0, atol=1e-12)


SAME_GRID = [dict(positional=p, combine=c) for p, c in (("none", "add"), ("index", "add"), ("sinusoidal", "add"),
                                                       ("sinusoidal", "concat"), ("learned", "add"))] + [
    dict(n_heads=2), dict(score="dot"), dict(score="additive"), dict(mask="causal"), dict(temperature=2.0),
    dict(bias=True), dict(weights="trained", embedding="glove")]


@pytest.mark.parametrize("change", SAME_GRID, ids=str)
def test_classifier_starts_equal_to_the_forward_pass_exactly_when_claimed(change):
    """claims.train_same_as_forward: where the step page says Q, K, V, Ŝ and A start equal to pages 3–5's, the
    classifier's numbers are the forward pass's to 1e-12; under every setting the claim excludes they are not."""
    from attention_core.forward.claims import holds
    from attention_core.training.training_input import training_settings
    config = Config(**{"sentence": "the sound is great", "embedding": "random", "d_model": 6, "weights": "random",
                       "d_k": 4, "d_v": 3, "seed": 2, **change})
    settings = training_settings(config)
    claimed = holds("train_same_as_forward", settings)
    assert classifier_input(config).same_as_forward == claimed
    trace = step_for(config, "positive", 0.05, ())[3]
    forward = run_forward(config)
    scaled = "scaled_scores" if "scaled_scores" in forward.keys() else "scores"
    pairs = [("q", "q"), ("k", "k"), ("v", "v"), ("scores", scaled), ("weights", "weights")]
    equal = [trace[a].shape == forward[b].shape and np.allclose(trace[a].value, forward[b].value, rtol=0, atol=1e-12)
             for a, b in pairs]
    assert all(equal) == claimed, (change, equal)
    assert claimed == (set(change) <= {"positional", "combine"} and change.get("positional") != "learned")
