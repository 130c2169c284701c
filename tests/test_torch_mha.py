"""Tutorial 3's PyTorch multi-head layer vs the numpy one; its formulas; its dropout pitfall; score costs."""
import subprocess
import sys

import numpy as np
import pytest
import torch

from attention_core import torch_mha as tm
from attention_core.math.attention import merge_heads, multi_head_attention, softmax, split_heads
from attention_core.math.limits import ConfigError

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


# ---- the formulas are the module's, in the app's notation (docs/notation.md) ---------------------------------

def _formulas(t) -> str:
    return "\n".join(s.formula for s in t)


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("heads,pad", [(1, ()), (2, (1,)), (4, (0, 3))])
def test_formulas_follow_the_module_and_its_numbers(bias, heads, pad):
    """Q = x W_Q (+ b_Q only when the module has biases), Ŝ_h, S̃_h, A_h = softmax(…), C_h = A'_h V_h,
    C = [C_0 | … | C_{H−1}], O = C W_O (+ b_O): each checked against the module's own numbers, with W_Q the
    app's (d_model, H·d_k) matrix and fc_q.weight its transpose."""
    x = np.random.default_rng(heads).standard_normal((5, 8))
    t = tm.pytorch_trace(x, heads, seed=4, pad=pad, bias=bias)
    assert t.facts["bias"] is bias
    w_q, w_k, w_v, w_o = tm.seeded_weights(8, 4)
    b_q, b_k, b_v, b_o = tm.seeded_biases(8, 4) if bias else (0.0,) * 4
    for key, w, b, name in (("q", w_q, b_q, "Q"), ("k", w_k, b_k, "K"), ("v", w_v, b_v, "V")):
        assert t[key].formula == rf"{name} = x\, W_{name}" + (rf" + b_{name}" if bias else "")
        np.testing.assert_allclose(t[key].value[0], x @ w + b, atol=1e-12)
        assert f"fc_{key}.weight holds W_{name}ᵀ" in t[key].why
    assert t["output"].formula == r"O = C\, W_O" + (r" + b_O" if bias else "")
    np.testing.assert_allclose(t["output"].value[0], t["a"].value[0] @ w_o + b_o, atol=1e-12)
    if not bias:
        assert "b_" not in _formulas(t) and "bias=False" in t["q"].why and "no b_O" in t["output"].why
    assert r"^\top +" not in _formulas(t) and r"W_Q^\top" not in _formulas(t)       # W_Q is the app's, not torch's
    d_k = 8 // heads
    q, k, v = (t[f"{n}_heads"].value[0] for n in "qkv")
    np.testing.assert_allclose(q[heads - 1], (x @ w_q + b_q)[:, (heads - 1) * d_k:heads * d_k], atol=1e-12)
    assert r"h d_k : (h+1) d_k" in t["q_heads"].formula and r"h = 0, \dots, H-1" in t["q_heads"].formula
    assert t["energy"].formula == r"\hat S_h = \frac{Q_h K_h^\top}{\sqrt{d_k}}"
    np.testing.assert_allclose(t["energy"].value[0], q @ k.transpose(0, 2, 1) / np.sqrt(d_k), atol=1e-12)
    assert t["alpha"].formula == (r"A_h = \mathrm{softmax}(\tilde S_h)" if pad else r"A_h = \mathrm{softmax}(\hat S_h)")
    assert ("masked_energy" in t) == bool(pad)
    np.testing.assert_allclose(t["alpha"].value[0], softmax(t["masked_energy" if pad else "energy"].value[0]),
                               atol=1e-12)
    assert t["a_heads"].formula == r"C_h = A'_h V_h"
    np.testing.assert_allclose(t["a_heads"].value[0], t["alpha_dropped"].value[0] @ v, atol=1e-12)
    assert t["a"].formula == (r"C = \left[\,C_0 \mid \cdots \mid C_{H-1}\,\right]" if heads > 1 else "C = C_0")
    np.testing.assert_allclose(t["a"].value[0], merge_heads(t["a_heads"].value[0]), atol=1e-12)
    # A names the weights and C the context, nowhere the other way round
    assert all(not s.formula.startswith("A =") for s in t) and "alpha" not in _formulas(t)


def test_fc_weight_is_the_transpose_of_the_apps_matrix():
    w = tm.seeded_weights(6, 2)
    module = tm.from_numpy_weights(*w, 3)
    for fc, m in zip((module.fc_q, module.fc_k, module.fc_v, module.fc_o), w):
        np.testing.assert_array_equal(fc.weight.detach().numpy(), m.T)
        assert fc.bias is None
    assert tm.LAYER_BIAS is False and tm.pytorch_trace(np.ones((2, 6)), 3).facts["bias"] is False


@pytest.mark.parametrize("mode", tm.MODES)
def test_dropout_formula_only_where_the_module_drops(mode):
    x = np.random.default_rng(3).standard_normal((6, 8))
    t = tm.pytorch_trace(x, 2, p=0.3, mode=mode, dropout_seed=5)
    a, dropped = t["alpha"].value, t["alpha_dropped"].value
    if mode == "eval":
        assert t["alpha_dropped"].formula == "A'_h = A_h"
        np.testing.assert_array_equal(dropped, a)
    else:
        assert r"\frac{m \odot A_h}{1 - p}" in t["alpha_dropped"].formula and "p = 0.3" in t["alpha_dropped"].formula
        kept = dropped != 0
        assert (~kept).any()
        np.testing.assert_allclose(dropped[kept], a[kept] / 0.7, atol=1e-12)
    assert t["alpha_dropped"].title == ("F.dropout(alpha, p)" if mode == "pitfall"
                                        else "F.dropout(alpha, p, training=self.training)")


def test_pitfall_module_at_inference_drops_what_training_drops():
    """The page says: with the same draw, tutorial 3's module at inference drops exactly what training drops."""
    x = np.random.default_rng(4).standard_normal((5, 8))
    r = tm.dropout_at_inference(x, 2, p=0.3, seed=1, dropout_seed=9)
    np.testing.assert_array_equal(r["alpha_pitfall"], r["alpha_train"])
    np.testing.assert_array_equal(r["pitfall"], r["train"])


def test_every_key_padding_is_explained_as_the_module_computes_it():
    x = np.random.default_rng(6).standard_normal((3, 4))
    t = tm.pytorch_trace(x, 2, pad=(0, 1, 2))
    np.testing.assert_allclose(t["alpha"].value, 1 / 3, atol=1e-12)       # spread evenly, not 0
    assert "spreads the weight evenly" in t["masked_energy"].why
    assert "exactly 0" in tm.pytorch_trace(x, 2, pad=(1,))["masked_energy"].why


def test_no_step_text_names_a_seed_file():
    x = np.random.default_rng(7).standard_normal((4, 8))
    for mode in tm.MODES:
        t = tm.pytorch_trace(x, 2, pad=(1,), mode=mode)
        for s in t:
            assert "seed 00" not in f"{s.title} {s.formula} {s.why}".lower(), s.key
    from ui.variants.torch_view import code_excerpt
    assert "seed 00" not in code_excerpt().lower() and "tutorial 3" in code_excerpt()
