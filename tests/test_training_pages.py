"""The two training pages through AppTest, and the parameter file round trip."""
import numpy as np
import pytest

from attention_core import ConfigError
from attention_core import classifier as clf
from tests.apptest_util import messages, no_exception, open_page
from attention_core import Config
from attention_core.forward import run_forward
from attention_core.training_input import classifier_input
from ui.training import ModelSettings, initial_params, params_from_npz, params_npz, shipped_examples
from ui.training_step import GROUPS, step_for


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
