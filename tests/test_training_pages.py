"""The two training pages through AppTest, and the parameter file round trip."""
import numpy as np
import pytest

from attention_core import ConfigError
from attention_core import classifier as clf
from tests.apptest_util import messages, no_exception, open_page
from ui.training import ModelSettings, initial_params, params_from_npz, params_npz


def test_training_step_page_checks_every_gradient():
    at = open_page("app_pages/10_training_step.py", timeout=120)
    no_exception(at)
    checks = [c.value for c in at.caption if "against autograd" in c.value]
    assert len(checks) == len(clf.PARAM_NAMES) + 1            # every parameter and x
    assert all(c.startswith("✓") for c in checks), checks
    before, after = (m for m in at.metric if m.label.startswith(("Loss on", "after one")))
    assert float(after.value) < float(before.value)          # a small step lowers the loss on that sentence
    assert any("yes ✓" in c.value for c in at.caption)       # the SymPy identity holds


def test_training_step_own_sentence_and_bad_one():
    at = open_page("app_pages/10_training_step.py", timeout=120)
    at.selectbox(key="ts_pick").set_value("(type your own)").run()
    at.text_input(key="ts_text").set_value("the speaker is awful").run()
    no_exception(at)
    assert "`awful`" in "\n".join(m.value for m in at.markdown)
    at.text_input(key="ts_text").set_value("zzqx qqzv").run()
    no_exception(at)
    assert "None of the words" in messages(at)


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
