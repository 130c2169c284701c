"""The block's pitfalls: temperature after softmax, the unbiased variance in LayerNorm, a post-norm formula with
pre-norm code, the copy task at a fixed offset. Values against torch and by hand, the checks, unusual settings."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attention_core import Config, run_forward
from attention_core.forward.stages import attend
from attention_core.forward.transformer import Arch, init_params
from attention_core.labs.pitfalls import PITFALLS, PITFALLS_BY_KEY
from attention_core.labs.pitfalls import block
from attention_core.training.lm import model as lm

BLOCK = ["temperature_after_softmax", "unbiased_variance", "post_formula_pre_code", "fixed_offset"]
EPS = 1e-5

UNUSUAL = {
    "one-token": Config(sentence="love"),
    "gqa-rope": Config(n_heads=4, n_kv_heads=2, positional="rope"),
    "mqa-alibi-causal": Config(n_heads=4, n_kv_heads=1, positional="alibi", mask="causal"),
    "padding-every-key": Config(mask="padding", padding=(0, 1, 2, 3)),
    "window-1-cold": Config(mask="sliding_window", window=1, temperature=0.01),
    "toy-d3": Config(embedding="toy", weights="random"),
    "random-d2": Config(embedding="random", d_model=2, weights="random"),
    "long-cut": Config(sentence=" ".join(["the cat sat on the mat and then the dog ran"] * 6)),
}


def _run(key, source):
    return PITFALLS_BY_KEY[key].compute(source)


def test_listed_last_in_the_lab_in_order():
    assert [p.key for p in PITFALLS][-4:] == BLOCK
    assert all(PITFALLS_BY_KEY[k].source == "a classic" for k in BLOCK)


@pytest.mark.parametrize("name", UNUSUAL)
@pytest.mark.parametrize("key", BLOCK)
def test_unusual_settings_compute_and_the_check_passes_on_the_correct(name, key):
    r = _run(key, UNUSUAL[name])
    assert r.correct.shape == r.wrong.shape and np.isfinite(r.correct).all()
    assert r.check_passes_on_correct, r.check_detail
    coincide = name == "one-token" and key == "temperature_after_softmax"      # one word: every softmax is [1]
    assert r.check_flags_wrong != coincide, r.check_detail
    assert ("coincide" in r.check_detail) == coincide
    assert "nan" not in r.check_detail.lower()


# ---- temperature after softmax ----------------------------------------------------------------------------

def _block_logits(config):
    trace = run_forward(config)
    return block.block_of(trace, config)["logits"].value[-1], trace


@pytest.mark.parametrize("config", [Config(), Config(n_heads=2, mask="causal", positional="rope")])
def test_temperature_before_softmax_against_torch_and_after_is_softmax_again(config):
    z, _ = _block_logits(config)
    r = _run("temperature_after_softmax", config)
    for row, t in enumerate(block.TEMPERATURES):
        want = torch.softmax(torch.tensor(z) / t, dim=-1).numpy()
        np.testing.assert_allclose(r.correct[row], want, atol=1e-12)
        p = torch.softmax(torch.tensor(z), dim=-1)
        np.testing.assert_allclose(r.wrong[row], (p / t / (p / t).sum()).numpy(), atol=1e-12)
        np.testing.assert_allclose(r.wrong[row], p.numpy(), atol=1e-12)               # the same at every T
    np.testing.assert_allclose(r.correct[1], r.wrong[1], atol=1e-15)                 # T = 1: nothing to get wrong
    assert r.labels["temperature"] == ["T = 0.5", "T = 1", "T = 2"]
    assert r.labels["vocab"] == list(dict.fromkeys(run_forward(config).tokens))


def test_temperature_by_hand():
    """Logits (0, ln 2): p = (1/3, 2/3); at T = 1/2, softmax(2z) = (1/5, 4/5); p/T renormalised is p."""
    z = np.array([0.0, np.log(2.0)])
    from attention_core.math import attention as att
    np.testing.assert_allclose(att.softmax(z / 0.5), [0.2, 0.8], atol=1e-15)
    p = att.softmax(z)
    np.testing.assert_allclose((p / 0.5) / (p / 0.5).sum(), [1 / 3, 2 / 3], atol=1e-15)


def test_temperature_detail_numbers_are_the_arrays():
    r = _run("temperature_after_softmax", Config())
    top = int(np.argmax(r.correct[1]))
    assert f"p = {', '.join(f'{x:.3g}' for x in r.correct[:, top])}" in r.check_detail
    assert "rows would sum to 2, 1, 0.5" in r.check_detail


# ---- the unbiased variance -------------------------------------------------------------------------------

@pytest.mark.parametrize("config", [Config(), Config(embedding="toy", weights="random"),
                                    Config(embedding="random", d_model=2, weights="random")])
def test_biased_is_torchs_layer_norm_unbiased_is_x_var(config):
    x = run_forward(config)["x"].value
    d = x.shape[1]
    r = _run("unbiased_variance", config)
    tx = torch.tensor(x)
    np.testing.assert_allclose(r.correct, F.layer_norm(tx, (d,), eps=EPS).numpy(), atol=1e-12)
    mistake = (tx - tx.mean(-1, keepdim=True)) / torch.sqrt(tx.var(-1, keepdim=True) + EPS)   # var's default: d − 1
    np.testing.assert_allclose(r.wrong, mistake.numpy(), atol=1e-12)
    assert f"√((d − 1)/d) = {np.sqrt((d - 1) / d):.4g} at d = {d}" in r.check_detail


def test_unbiased_variance_by_hand():
    """x = (1, 2, 3): μ = 2, biased σ² = 2/3, unbiased s² = 1; with ε = 0: x̂ = ±√(3/2), wrong ±1."""
    x = np.array([[1.0, 2.0, 3.0]])
    np.testing.assert_allclose(block.unbiased_layer_norm(x, eps=0.0), [[-1.0, 0.0, 1.0]], atol=1e-15)
    assert np.isnan(block.unbiased_layer_norm(np.ones((2, 1)))).all()                 # d = 1: 0/0
    ok, miss = block.has_torchs_variance(block.unbiased_layer_norm(x, eps=0.0), np.array([[2 / 3]]), eps=0.0)
    assert not ok and miss == pytest.approx(1 / 3)                                   # variance 2/3, not 1


# ---- a post-norm formula, pre-norm code ------------------------------------------------------------------

def _torch_ln(t):
    return F.layer_norm(t, (t.shape[-1],), eps=EPS)


@pytest.mark.parametrize("config", [Config(), Config(n_heads=4, n_kv_heads=2, positional="rope", mask="causal")])
def test_post_is_the_formula_pre_is_the_code(config):
    trace = run_forward(config)
    x = trace["x"].value
    n, d = x.shape
    vocab = list(dict.fromkeys(trace.tokens))
    p = {k: torch.tensor(v) for k, v in init_params(Arch(n_layers=1), d, len(vocab), config.seed,
                                                     n_heads=config.n_heads, attention=False).items()}
    mlp = lambda t: F.gelu(t @ p["l0.w_1"] + p["l0.b_1"]) @ p["l0.w_2"] + p["l0.b_2"]
    mha = lambda rows: torch.tensor(attend(config, rows, trace.tokens)["output"].value)   # the settings' attention
    tx = torch.tensor(x)
    mid = _torch_ln(tx + torch.tensor(trace["output"].value))                        # MHA(X) is the sidebar's output
    post = _torch_ln(mid + mlp(mid))                                                 # X'' = LN(X' + MLP(X'))
    code_mid = tx + mha(_torch_ln(tx).numpy())                                       # x = x + attn(ln(x))
    pre = code_mid + mlp(_torch_ln(code_mid))                                        # x = x + mlp(ln(x))
    r = _run("post_formula_pre_code", config)
    np.testing.assert_allclose(r.correct, post.numpy(), atol=1e-12)
    np.testing.assert_allclose(r.wrong, pre.numpy(), atol=1e-12)
    assert abs(r.correct.mean(axis=-1)).max() < 1e-12 and abs(r.correct.var(axis=-1) - 1).max() < 1e-2
    assert f"the layer's output by {r.difference:.3g}" in r.check_detail


# ---- the copy task at a fixed offset ---------------------------------------------------------------------

def test_repeated_segments_repeat_at_the_gap():
    for gap in (8, 20, 32):
        for ids, s in block.repeated_segments(gap):
            assert len(ids) == lm.N_CTX and 0 <= s and s + gap + block.SEGMENT <= lm.N_CTX
            np.testing.assert_array_equal(ids[s + gap: s + gap + block.SEGMENT], ids[s: s + block.SEGMENT])


def test_copy_loss_and_scores_are_the_models_by_hand():
    """One gap: the copy loss is torch's cross entropy of the trace's logits on the second copy, the scores the
    attention weights at the positions the definitions name."""
    gap = 12
    loss, induction, previous = block.copy_measures("random", (gap,))
    params, labels = block._lm_params("random"), lm.token_labels([])
    want_loss, want_ind, want_prev = 0.0, np.zeros((2, lm.N_HEADS)), np.zeros((2, lm.N_HEADS))
    for ids, s in block.repeated_segments(gap):
        trace = lm.lm_trace(params, ids, labels)
        q = np.arange(s + gap, s + gap + block.SEGMENT - 1)
        want_loss += F.cross_entropy(torch.tensor(trace["logits"].value[q]), torch.tensor(ids[q + 1])).item()
        for l in range(2):
            a = trace.facts["attention"][l]["weights"].value
            want_ind[l] += [np.mean([a[h, i, i - gap + 1] for i in q]) for h in range(lm.N_HEADS)]
            want_prev[l] += [np.mean([a[h, i, i - 1] for i in range(1, lm.N_CTX)]) for h in range(lm.N_HEADS)]
    k = block.PER_GAP
    assert loss[0] == pytest.approx(want_loss / k, abs=1e-9)
    np.testing.assert_allclose(induction[0], want_ind / k, atol=1e-12)
    np.testing.assert_allclose(previous[0], want_prev / k, atol=1e-12)


def test_fixed_offset_copies_only_at_its_gap_and_has_no_induction_head():
    r = _run("fixed_offset", Config())
    f = block._fixed_offset()
    gaps = sorted(set(block.GAPS) | {f})
    assert r.labels["gap"][gaps.index(f)] == f"{f}*" and r.axes == ("gap",)
    chance = np.log(lm.VOCAB)
    others = [i for i, g in enumerate(gaps) if g != f]
    assert r.wrong[gaps.index(f)] < chance / 2                                       # it copies at its own gap …
    assert r.wrong[others].min() > chance - 0.5                                      # … and guesses elsewhere
    assert r.correct[others].mean() < chance - 1                                     # the induction run copies
    _, ind_r, prev_r = block.copy_measures("random", tuple(gaps))
    _, ind_f, _ = block.copy_measures("fixed", tuple(gaps))
    assert ind_r[:, 1].mean(axis=0).max() > 0.3 > ind_f[:, 1].mean(axis=0).max()     # layer 1: an induction head
    assert prev_r[:, 0].mean(axis=0).max() > 0.3                                     # layer 0: a previous-token head
    assert r.check_passes_on_correct and r.check_flags_wrong
