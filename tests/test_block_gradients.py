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
