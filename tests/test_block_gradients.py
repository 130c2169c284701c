"""The block's hand-written backward pass (training/lm/backprop.py) against torch autograd, in float64, to 1e-9;
a finite-difference spot check; one SGD step lowers the loss; the step trace's explainers recompute their cells;
the page shows the loss."""
from __future__ import annotations

import math

import numpy as np
import pytest

from attention_core.forward.transformer import Arch, init_params, lm_input, run_transformer
from attention_core.training.lm.backprop import backward, next_token_loss
from attention_core.training.lm.model import attention_config, sentence_ids

SENTENCES = ("the cat sat on the mat and the cat sat on the", "a b c d a b c")
D, H, VOCAB, N_CTX = 8, 2, 31, 40
ARCHES = [Arch(n_layers=n, placement=p, norm=norm, mlp=m)
          for n in (1, 2) for p in ("pre", "post") for norm in ("layer", "rms") for m in (True, False)]


def small_params(arch: Arch, seed: int = 0) -> dict:
    """A seeded start with its norms' γ, β and the MLP's biases moved off 1 and 0, and its own embeddings."""
    params = init_params(arch, d_model=D, vocab=VOCAB, seed=seed, n_heads=H)
    rng = np.random.default_rng(seed + 7)
    for name in params:
        if name.endswith((".g", ".b", ".b_1", ".b_2")):
            params[name] = params[name] + 0.3 * rng.standard_normal(params[name].shape)
    params["tok_emb"] = rng.standard_normal((VOCAB, D))
    params["pos_emb"] = 0.5 * rng.standard_normal((N_CTX, D))
    return params


def block_trace(arch, params, sentence):
    ids, words, labels, _ = sentence_ids(sentence)
    tokens = [labels[i] for i in ids]
    config = attention_config(tokens).replace(d_model=D, n_heads=H, d_k=D // H, d_v=D // H)
    return ids, run_transformer(config, arch, params, lm_input(params, ids), tokens, labels)


def torch_loss(arch: Arch, params: dict, ids):
    """The same model written in torch (nn.functional's layer_norm, rms_norm, gelu; attention by hand); float64."""
    import torch
    import torch.nn.functional as F
    t = {name: torch.tensor(value, dtype=torch.float64, requires_grad=True) for name, value in params.items()}
    ids_t = torch.tensor(ids)
    n = len(ids)
    kept = {}

    def norm(name, x):
        if arch.norm == "layer":
            return F.layer_norm(x, (D,), t[f"{name}.g"], t[f"{name}.b"], arch.eps)
        return F.rms_norm(x, (D,), t[f"{name}.g"], arch.eps)

    def keep(key, x):
        x.retain_grad()
        kept[key] = x
        return x

    def attention(l, x):
        d_k = D // H
        q, k, v = (x @ t[f"l{l}.w_{m}"] for m in "qkv")
        split = lambda m: m.view(n, H, d_k).transpose(0, 1)                    # (H, n, d_k)
        scores = split(q) @ split(k).transpose(1, 2) / math.sqrt(d_k)
        scores = scores.masked_fill(~torch.tril(torch.ones(n, n, dtype=torch.bool)), float("-inf"))
        weights = keep(f"l{l}.weights", torch.softmax(scores, dim=-1))
        concat = keep(f"l{l}.concat", (weights @ split(v)).transpose(0, 1).reshape(n, H * d_k))
        return keep(f"l{l}.attn", concat @ t[f"l{l}.w_o"])

    def mlp(l, x):
        hidden = keep(f"l{l}.hidden", x @ t[f"l{l}.w_1"] + t[f"l{l}.b_1"])
        return keep(f"l{l}.mlp", F.gelu(hidden) @ t[f"l{l}.w_2"] + t[f"l{l}.b_2"])

    x = keep("x", t["tok_emb"][ids_t] + t["pos_emb"][:n])
    for l in range(arch.n_layers):
        after = f"l{l}.mid" if arch.mlp else f"l{l}.out"
        if arch.placement == "pre":
            x = keep(after, x + attention(l, keep(f"l{l}.ln1", norm(f"l{l}.ln1", x))))
            if arch.mlp:
                x = keep(f"l{l}.out", x + mlp(l, keep(f"l{l}.ln2", norm(f"l{l}.ln2", x))))
        else:
            x = keep(after, norm(f"l{l}.ln1", keep(f"l{l}.sum1", x + attention(l, x))))
            if arch.mlp:
                x = keep(f"l{l}.out", norm(f"l{l}.ln2", keep(f"l{l}.sum2", x + mlp(l, x))))
    if arch.final_norm:
        x = keep("ln_f", norm("ln_f", x))
    logits = keep("logits", x @ t["w_u"])
    loss = F.cross_entropy(logits[:-1], ids_t[1:])
    loss.backward()
    grads = {f"dL/d{name}": value.grad.numpy() for name, value in t.items()}
    grads.update({f"dL/d{key}": value.grad.numpy() for key, value in kept.items()})
    return loss.item(), grads


@pytest.mark.parametrize("arch", ARCHES, ids=lambda a: f"{a.n_layers}L-{a.placement}-{a.norm}-{'mlp' if a.mlp else 'attn'}")
@pytest.mark.parametrize("sentence", SENTENCES)
def test_every_gradient_matches_torch_autograd(arch, sentence):
    pytest.importorskip("torch")
    params = small_params(arch)
    ids, trace = block_trace(arch, params, sentence)
    g = backward(trace, params, ids)
    loss, expected = torch_loss(arch, params, ids)
    assert abs(float(g["loss"]) - loss) < 1e-12
    for name in params:                                      # every parameter and both embeddings
        assert np.abs(g[f"dL/d{name}"] - expected[f"dL/d{name}"]).max() < 1e-9, name
    for key in expected:                                     # and every stream step torch kept
        if key.split("/d", 1)[1] not in params:
            assert np.abs(g[key] - expected[key]).max() < 1e-9, key
    assert len(expected) - len(params) >= 4 + arch.n_layers * (3 + 2 * arch.mlp)


def test_finite_differences_spot_check():
    arch = Arch(n_layers=2, placement="pre", norm="layer", mlp=True)
    params = small_params(arch, seed=3)
    ids, trace = block_trace(arch, params, SENTENCES[0])
    g = backward(trace, params, ids)
    eps = 1e-6
    for name, cell in (("l0.w_q", (2, 3)), ("l1.ln2.g", (5,)), ("l0.b_1", (7,)), ("ln_f.b", (0,)), ("w_u", (4, 2)),
                       ("tok_emb", (ids[1], 1)), ("pos_emb", (3, 6))):
        losses = []
        for sign in (1, -1):
            moved = {k: v.copy() for k, v in params.items()}
            moved[name][cell] += sign * eps
            losses.append(next_token_loss(block_trace(arch, moved, SENTENCES[0])[1]["logits"].value, ids)[0])
        numeric = (losses[0] - losses[1]) / (2 * eps)
        assert abs(numeric - g[f"dL/d{name}"][cell]) < 1e-7, name


def test_a_repeated_token_adds_its_rows_and_unused_positions_get_nothing():
    arch = Arch(n_layers=1, mlp=False)
    params = small_params(arch)
    ids, trace = block_trace(arch, params, SENTENCES[1])     # a b c d a b c: "a" at 0 and 4
    g = backward(trace, params, ids)
    assert np.allclose(g["dL/dtok_emb"][0], g["dL/dx"][0] + g["dL/dx"][4], atol=1e-15)
    assert not g["dL/dtok_emb"][len(set(ids)):].any() and not g["dL/dpos_emb"][len(ids):].any()
    assert not g["dL/dlogits"][-1].any()                     # the last position has no next token


# ---- the step trace: SGD, the explainers, the page ----------------------------------------------------------

def _step(arch, lr=0.05, sentence=SENTENCES[0]):
    from attention_core.training.lm.step_trace import training_step
    ids, words, labels, _ = sentence_ids(sentence)
    return training_step(arch, small_params(arch), ids, labels, lr, n_heads=H)


@pytest.mark.parametrize("arch", ARCHES[::3], ids=lambda a: f"{a.n_layers}L-{a.placement}-{a.norm}-{a.mlp}")
def test_one_small_sgd_step_lowers_the_loss_and_a_huge_one_need_not(arch):
    step = _step(arch)
    assert step.loss_after < step.loss
    before, after = np.array(step.trace.facts["surprise"]).T          # −log P_{i,y_i}: their means are the losses
    assert abs(before.mean() - step.loss) < 1e-12 and abs(after.mean() - step.loss_after) < 1e-12
    expected = {k: v - 0.05 * step.trace[f"dL/d{k}"].value for k, v in step.params.items()}
    assert all(np.array_equal(step.new_params[k], expected[k]) for k in expected)
    # to first order the loss falls by η‖g‖²
    g2 = sum(float((step.trace[f"dL/d{k}"].value ** 2).sum()) for k in step.params)
    tiny = _step(arch, lr=1e-4)
    assert abs((tiny.loss - tiny.loss_after) / (1e-4 * g2) - 1) < 0.01


def test_the_trace_holds_every_gradient_in_reading_order_with_its_shape():
    arch = Arch(n_layers=2, placement="pre", norm="layer", mlp=True)
    step = _step(arch)
    keys = [k for k in step.trace.keys() if k.startswith("dL/d")]
    assert keys[:3] == ["dL/dlogits", "dL/dw_u", "dL/dln_f"] and keys[-2:] == ["dL/dtok_emb", "dL/dpos_emb"]
    assert keys.index("dL/dl1.mlp") < keys.index("dL/dl1.attn") < keys.index("dL/dl0.mlp") < keys.index("dL/dx")
    for name in step.params:                                 # every parameter's gradient, with its shape
        assert step.trace[f"dL/d{name}"].shape == step.params[name].shape, name
    for key in keys:
        s = step.trace[key]
        assert s.formula and s.why and s.inputs and all(i in step.trace for i in s.inputs), key
        assert s.formula.count("{") == s.formula.count("}") and "}_{" not in s.formula.replace(r"\right)_{", ""), key
    assert step.trace["dL/dl0.weights"].shape == (H, step.trace.n, step.trace.n)


@pytest.mark.parametrize("arch", [Arch(n_layers=2, placement="pre", norm="layer", mlp=True),
                                  Arch(n_layers=1, placement="post", norm="rms", mlp=True),
                                  Arch(n_layers=2, placement="post", norm="layer", mlp=False)], ids=str)
def test_every_gradient_cell_explained_from_its_terms(arch):
    from attention_core.explanations import explain
    from test_explain import balanced
    step = _step(arch)
    trace = step.trace
    rng = np.random.default_rng(1)
    n = trace.n
    for key in [k for k in trace.keys() if k.startswith("dL/d")]:
        shape = trace[key].shape
        cells = {tuple(int(rng.integers(s)) for s in shape) for _ in range(4)}
        if len(shape) == 3:
            cells |= {(0, 1, 3), (1, 5, 2)}                  # a masked key (j > i) and a seen one
        if key == "dL/dlogits":
            cells |= {(n - 1, 0), (0, trace.facts["targets"][0])}
        for cell in cells:
            e = explain(trace, key, cell)
            assert abs(e.value - trace[key].value[cell]) < 1e-12, (key, cell)
            assert e.symbolic and e.substituted and e.reads or e.value == 0, (key, cell)
            assert balanced(e.symbolic) and balanced(e.substituted), (key, cell)
    e = explain(trace, "loss", ())
    assert abs(e.value - step.loss) < 1e-12 and e.n_terms == n - 1


def test_the_fan_in_explainer_adds_the_skip_and_the_branch():
    from attention_core.explanations import explain
    step = _step(Arch(n_layers=2, placement="pre", norm="layer", mlp=False))
    e = explain(step.trace, "dL/dl0.out", (2, 3))           # X_1 = X_2's skip + layer 1's attention branch
    skip, branch = step.trace["dL/dl1.out"].value[2, 3], step.trace["dL/dl1.attn_branch"].value[2, 3]
    assert [r[0] for r in e.reads] == ["dL/dl1.out", "dL/dl1.attn_branch"]
    assert e.value == skip + branch and "sum" in e.note


def test_bad_input_is_said_plainly():
    from attention_core import ConfigError
    from attention_core.training.lm.step_trace import training_step
    arch = Arch(n_layers=1)
    with pytest.raises(ConfigError, match="two tokens"):
        training_step(arch, small_params(arch), [3], ["a"], 0.1, n_heads=H)
    with pytest.raises(ConfigError, match="learning rate"):
        training_step(arch, small_params(arch), [0, 1], ["a", "b"], 0.0, n_heads=H)


def test_the_shipped_model_takes_every_block():
    from attention_core.training.lm.model import ARCH
    from attention_core.training.lm.step_trace import block_params, shipped_params
    params, fresh = block_params(shipped_params(), ARCH)
    assert not fresh and set(params) == set(shipped_params())
    params, fresh = block_params(shipped_params(), Arch(n_layers=2, placement="post", norm="rms", mlp=True))
    assert "l0.w_1" in fresh and "ln_f.g" not in params and "l0.ln1.b" not in params
    assert np.array_equal(params["l1.w_q"], shipped_params()["l1.w_q"])


def test_page_shows_the_losses_and_checks_against_autograd():
    pytest.importorskip("torch")
    from apptest_util import no_exception, open_page
    from attention_core.training.lm.model import ARCH
    from attention_core.training.lm.step_trace import block_params, shipped_params, training_step
    at = open_page("app_pages/53_block_gradients.py", {"sentence": SENTENCES[0]})
    no_exception(at)
    ids, _, labels, _ = sentence_ids(SENTENCES[0])
    step = training_step(ARCH, block_params(shipped_params(), ARCH)[0], ids, labels, 0.1)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Loss before the step"] == f"{step.loss:.5f}"
    assert metrics["after one SGD step"] == f"{step.loss_after:.5f}" and step.loss_after < step.loss
    at.toggle(key="block_gradients.mlp").set_value(True).run()
    no_exception(at)
    assert any("seeded initialisation" in i.value for i in at.info)
    at.button(key="block_gradients.check").click().run()
    worst = float(at.success[0].value.split("= ")[1].split(" ")[0])
    assert worst < 1e-9


def test_page_keeps_the_last_good_sentence_on_a_one_word_one():
    from apptest_util import no_exception, open_page
    at = open_page("app_pages/53_block_gradients.py", {"sentence": SENTENCES[1]})
    before = {m.label: m.value for m in at.metric}
    at.text_input(key="w.sentence").set_value("hello").run()
    no_exception(at)
    assert "at least two tokens" in at.error[0].value and "last sentence" in at.error[0].value
    assert {m.label: m.value for m in at.metric} == before
