"""Seed 002's PyTorch multi-head layer vs the numpy one; its dropout pitfall; score costs."""
import subprocess
import sys

import numpy as np
import pytest
import torch

from attention_core import torch_mha as tm
from attention_core.attention import merge_heads, multi_head_attention, softmax, split_heads
from attention_core.config import ConfigError

SHAPES = [(1, 1, 1), (3, 4, 2), (5, 6, 3), (7, 8, 8), (6, 9, 3), (10, 32, 4)]     # n, d_model, heads


def test_modules_do_not_import_torch():
    code = ("import attention_core.bahdanau, attention_core.grid, attention_core.torch_mha, sys; "
            "assert 'torch' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=str(__import__("pathlib").Path(__file__).parents[1]))


@pytest.mark.parametrize("n,d_model,heads", SHAPES)
@pytest.mark.parametrize("pad", [(), "last"])
def test_matches_numpy_multi_head(n, d_model, heads, pad):
    pad = (n - 1,) if pad == "last" and n > 1 else ()
    x = np.random.default_rng(n * 100 + d_model).standard_normal((n, d_model))
    diffs = tm.compare_with_numpy(x, *tm.seeded_weights(d_model, seed=heads), heads, pad=pad)
    assert max(diffs.values()) < 1e-10, diffs


def test_padding_gets_exactly_zero_weight():
    x = np.random.default_rng(1).standard_normal((6, 8))
    t = tm.pytorch_trace(x, 2, pad=(1, 4))
    alpha = t["alpha"].value[0]                                         # (heads, n, n)
    assert np.all(alpha[:, :, [1, 4]] == 0.0)
    np.testing.assert_allclose(alpha.sum(-1), 1.0, atol=1e-12)
    assert np.all(t["masked_energy"].value[0][:, :, [1, 4]] == -1e10)


def test_with_biases_matches_hand_computation():
    rng = np.random.default_rng(5)
    n, d, h = 4, 6, 3
    x = rng.standard_normal((n, d))
    w = [rng.standard_normal((d, d)) / np.sqrt(d) for _ in range(4)]
    b = [rng.standard_normal(d) for _ in range(4)]
    module = tm.from_numpy_weights(*w, h, biases=b).eval()
    with torch.no_grad():
        out, alpha = module(torch.tensor(x)[None])
    q, k, v = (split_heads(x @ w[i] + b[i], h) for i in range(3))      # (h, n, d / h)
    weights = softmax(q @ k.transpose(0, 2, 1) / np.sqrt(d // h))
    expected = merge_heads(weights @ v) @ w[3] + b[3]
    np.testing.assert_allclose(out[0].numpy(), expected, atol=1e-10)
    np.testing.assert_allclose(alpha[0].numpy(), weights, atol=1e-10)


def test_trace_shapes_follow_pytorch():
    x = np.random.default_rng(2).standard_normal((5, 8))
    t = tm.pytorch_trace(x, 4, seed=3)
    assert t["q_heads"].shape == (1, 4, 5, 2) and t["k_t"].shape == (1, 4, 2, 5)
    assert t["energy"].shape == (1, 4, 5, 5) and t["a"].shape == (1, 5, 8)
    assert "masked_energy" not in t
    np.testing.assert_allclose(t["q_heads"].value[0], split_heads(t["q"].value[0], 4))
    np.testing.assert_allclose(t["a"].value[0], merge_heads(t["a_heads"].value[0]))
    output, weights = multi_head_attention(x, x, *tm.seeded_weights(8, 3), 4)
    np.testing.assert_allclose(t["output"].value[0], output, atol=1e-10)
    np.testing.assert_allclose(t["alpha"].value[0], weights, atol=1e-10)
    for step in t:
        assert step.why and all(i in t for i in step.inputs), step.key
    with pytest.raises(ConfigError):
        tm.pytorch_trace(x, 3)                                          # 8 is not divisible by 3
    with pytest.raises(ConfigError):
        tm.pytorch_trace(x, 2, pad=(7,))


def test_eval_dropout_changes_nothing_but_the_seed_002_pitfall_does():
    x = np.random.default_rng(4).standard_normal((6, 8))
    r = tm.dropout_at_inference(x, 2, p=0.2, seed=1, dropout_seed=3)
    assert r["diff_eval"] < 1e-12
    np.testing.assert_allclose(r["alpha_eval"], r["weights"], atol=1e-12)
    assert r["diff_pitfall"] > 1e-2 and r["diff_train"] > 1e-2
    # inverted dropout: each weight either zeroed or scaled by 1 / (1 − p)
    dropped, kept = r["alpha_pitfall"] == 0, r["alpha_pitfall"] != 0
    assert dropped.any() and kept.any()
    np.testing.assert_allclose(r["alpha_pitfall"][kept], r["weights"][kept] / 0.8, atol=1e-12)
    assert not np.allclose(r["alpha_pitfall"].sum(-1), 1.0)


def test_eval_mode_is_deterministic_and_pitfall_is_not():
    torch.manual_seed(0)
    x = torch.tensor(np.random.default_rng(6).standard_normal((1, 5, 8)))
    good = tm.mha_module(8, 2, dropout=0.5).eval()
    bad = tm.mha_module(8, 2, dropout=0.5, pitfall=True).eval()
    bad.load_state_dict(good.state_dict())
    with torch.no_grad():
        assert torch.equal(good(x)[0], good(x)[0])
        outs = [bad(x)[0] for _ in range(4)]
    assert not all(torch.equal(outs[0], o) for o in outs[1:])


def test_pytorch_trace_does_not_touch_global_rng():
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    tm.pytorch_trace(np.ones((3, 4)), 2, mode="train")
    assert torch.equal(torch.rand(3), expected)


def test_score_costs_by_hand():
    costs = {c["name"]: c for c in tm.score_costs(1, 1, 1, 1)}
    # dot: 1 multiply + 1 add; scaled: + 1 division; additive: q W1 (2) + k W2 (2) + add (1) + tanh (1) + v· (2)
    assert [costs[k]["flops"] for k in ("dot", "scaled_dot", "additive", "bilinear")] == [2, 3, 8, 4]
    assert [costs[k]["params"] for k in ("dot", "scaled_dot", "additive", "bilinear")] == [0, 0, 3, 1]
    costs = {c["name"]: c for c in tm.score_costs(2, 3, 4, 5)}
    assert costs["dot"]["flops"] == 2 * 2 * 3 * 4 == 48
    assert costs["scaled_dot"]["flops"] == 48 + 6
    assert costs["additive"]["flops"] == 2 * 2 * 4 * 5 + 2 * 3 * 4 * 5 + 6 * 5 + 6 * 5 + 2 * 6 * 5 == 320
    assert costs["additive"]["params"] == 4 * 5 + 4 * 5 + 5 and costs["additive"]["memory"] == 30
    assert costs["bilinear"]["flops"] == 2 * 2 * 16 + 2 * 6 * 4 and costs["bilinear"]["params"] == 16
    assert all(set(c) >= {"score", "flops_formula", "params_formula", "memory_formula"} for c in costs.values())
    with pytest.raises(ConfigError):
        tm.score_costs(0, 1, 1, 1)
