"""The transformer block against torch in float64 (nn.LayerNorm, nn.RMSNorm, F.gelu, the MLP, the backward
functions against autograd, whole blocks built from nn.MultiheadAttention or by hand), every cell of a block
explained from its terms, the claims about the block, and the block page under AppTest."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attention_core import Config, run_forward
from attention_core.explanations import can_explain, explain
from attention_core.forward.claims import CLAIMS, holds
from attention_core.forward.transformer import Arch, init_params, run_transformer, sidebar_block
from attention_core.math.mlp import gelu, gelu_derivative, mlp, mlp_backward
from attention_core.math.norms import layer_norm, layer_norm_backward, rms_norm, rms_norm_backward
from tests.test_explain import balanced
from tests.test_modern_core import get_slopes, meta_apply_rotary_emb, meta_precompute_freqs_cis

TOL = 1e-9
torch.set_default_dtype(torch.float64)


def T(a):
    return torch.tensor(np.asarray(a), dtype=torch.float64)


def close(a, b, tol=TOL):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return a.shape == b.shape and float(np.max(np.abs(a - b), initial=0.0)) <= tol * max(1.0, float(np.max(np.abs(b), initial=0.0)))


def rng(seed=0):
    return np.random.default_rng(seed)


# ---- 1. the parts against torch -------------------------------------------------------------------------

@pytest.mark.parametrize("n, d, eps", [(1, 2, 1e-5), (4, 7, 1e-5), (6, 50, 1e-6), (3, 64, 0.1)])
def test_layer_norm_is_torchs(n, d, eps):
    r = rng(d)
    x, g, b = r.standard_normal((n, d)) * 3 + 1, r.standard_normal(d), r.standard_normal(d)
    ln = torch.nn.LayerNorm(d, eps=eps)
    with torch.no_grad():
        ln.weight.copy_(T(g)), ln.bias.copy_(T(b))
    assert close(layer_norm(x, g, b, eps), ln(T(x)).detach().numpy())
    # the biased variance: torch.var(unbiased=False) is what it divides by
    assert close(((x - x.mean(1, keepdims=True)) ** 2).mean(1), torch.var(T(x), dim=1, unbiased=False).numpy())


@pytest.mark.parametrize("n, d, eps", [(1, 2, 1e-5), (4, 7, 1e-5), (6, 50, 1e-6), (3, 64, 0.1)])
def test_rms_norm_is_torchs(n, d, eps):
    r = rng(d + 1)
    x, g = r.standard_normal((n, d)) * 2, r.standard_normal(d)
    rms = torch.nn.RMSNorm(d, eps=eps)                       # eps given: torch's default is the dtype's eps
    with torch.no_grad():
        rms.weight.copy_(T(g))
    assert close(rms_norm(x, g, eps), rms(T(x)).detach().numpy())


def test_gelu_and_its_derivative_are_torchs():
    h = np.concatenate([np.linspace(-8, 8, 161), rng(3).standard_normal(50) * 3])
    t = T(h).requires_grad_(True)
    y = F.gelu(t)                                            # approximate="none": the erf form
    y.sum().backward()
    assert close(gelu(h), y.detach().numpy()) and close(gelu_derivative(h), t.grad.numpy())


@pytest.mark.parametrize("n, d, d_ff", [(1, 3, 12), (5, 8, 32), (4, 50, 200)])
def test_mlp_and_its_backward_are_torchs(n, d, d_ff):
    r = rng(d_ff)
    x, w_1, b_1 = r.standard_normal((n, d)), r.standard_normal((d, d_ff)) / math.sqrt(d), r.standard_normal(d_ff)
    w_2, b_2, dy = r.standard_normal((d_ff, d)) / math.sqrt(d_ff), r.standard_normal(d), r.standard_normal((n, d))
    ts = {k: T(v).requires_grad_(True) for k, v in dict(x=x, w_1=w_1, b_1=b_1, w_2=w_2, b_2=b_2).items()}
    lin1, lin2 = torch.nn.Linear(d, d_ff), torch.nn.Linear(d_ff, d)        # nn.Linear stores Wᵀ
    with torch.no_grad():
        lin1.weight.copy_(T(w_1.T)), lin1.bias.copy_(T(b_1)), lin2.weight.copy_(T(w_2.T)), lin2.bias.copy_(T(b_2))
    hidden, act, out = mlp(x, w_1, b_1, w_2, b_2)
    assert close(out, lin2(F.gelu(lin1(T(x)))).detach().numpy())
    y = F.gelu(ts["x"] @ ts["w_1"] + ts["b_1"]) @ ts["w_2"] + ts["b_2"]
    (y * T(dy)).sum().backward()
    grads = mlp_backward(dy, x, hidden, act, w_1, w_2)
    for k in ("x", "w_1", "b_1", "w_2", "b_2"):
        assert close(grads[k], ts[k].grad.numpy()), k


@pytest.mark.parametrize("norm", ["layer", "rms"])
@pytest.mark.parametrize("n, d", [(1, 4), (5, 8), (3, 50)])
def test_norm_backward_is_autograd(norm, n, d):
    r = rng(n * d)
    x, g, b, dy = r.standard_normal((n, d)) * 2 + 0.5, r.standard_normal(d), r.standard_normal(d), r.standard_normal((n, d))
    tx, tg, tb = T(x).requires_grad_(True), T(g).requires_grad_(True), T(b).requires_grad_(True)
    if norm == "layer":
        y = F.layer_norm(tx, (d,), tg, tb, eps=1e-5)
        dx, dg, db = layer_norm_backward(dy, x, g, 1e-5)
    else:
        y = F.rms_norm(tx, (d,), tg, eps=1e-5)
        dx, dg = rms_norm_backward(dy, x, g, 1e-5)
    (y * T(dy)).sum().backward()
    assert close(dx, tx.grad.numpy()) and close(dg, tg.grad.numpy())
    if norm == "layer":
        assert close(db, tb.grad.numpy())


# ---- 2. whole blocks against torch ------------------------------------------------------------------------

def torch_attention(sub, x):
    """One layer's attention by hand in torch, from its W_Q … W_O (and biases), on its input rows x (n, d):
    RoPE as Meta's Llama code, ALiBi's bias from the ALiBi repository's slopes, a causal mask, GQA by
    F.scaled_dot_product_attention(enable_gqa=True), the scale 1/√d_k."""
    config = sub.facts["config"]
    h, h_kv, d_k, d_v, n = config.n_heads, config.kv_heads, config.d_k, config.d_v, x.shape[0]
    p = {k: T(sub[k].value) for k in ("w_q", "w_k", "w_v", "w_o", "b_q", "b_k", "b_v", "b_o") if k in sub}
    lin = lambda name: x @ p[f"w_{name}"] + (p[f"b_{name}"] if f"b_{name}" in p else 0)
    q = lin("q").reshape(n, h, d_k).transpose(0, 1)                          # (H, n, d_k)
    k = lin("k").reshape(n, h_kv, d_k).transpose(0, 1)
    v = lin("v").reshape(n, h_kv, d_v).transpose(0, 1)
    if config.positional == "rope":
        freqs = meta_precompute_freqs_cis(d_k, range(n), config.pe_base)
        q, k = meta_apply_rotary_emb(q, freqs), meta_apply_rotary_emb(k, freqs)
    bias = torch.zeros(h, n, n)
    if config.positional == "alibi":
        dist = (torch.arange(n)[:, None] - torch.arange(n)[None, :]).abs().to(torch.float64)
        bias = -T(get_slopes(h))[:, None, None] * dist
    if config.mask == "causal":
        bias = bias.masked_fill(~torch.ones(n, n, dtype=torch.bool).tril(), float("-inf"))
    ctx = F.scaled_dot_product_attention(q[None], k[None], v[None], attn_mask=bias[None], enable_gqa=True)[0]
    out = ctx.transpose(0, 1).reshape(n, h * d_v) @ p["w_o"]
    return out + p["b_o"] if "b_o" in p else out


def torch_mha(sub, x):
    """nn.MultiheadAttention with the layer's W_Q, W_K, W_V, W_O (transposed: it stores (out, in)) and biases."""
    config = sub.facts["config"]
    d, n = x.shape[1], x.shape[0]
    m = torch.nn.MultiheadAttention(d, config.n_heads, bias=config.bias, batch_first=True)
    with torch.no_grad():
        m.in_proj_weight.copy_(torch.cat([T(sub[k].value.T) for k in ("w_q", "w_k", "w_v")]))
        m.out_proj.weight.copy_(T(sub["w_o"].value.T))
        if config.bias:
            m.in_proj_bias.copy_(torch.cat([T(sub[k].value) for k in ("b_q", "b_k", "b_v")]))
            m.out_proj.bias.copy_(T(sub["b_o"].value))
    mask = ~torch.ones(n, n, dtype=torch.bool).tril() if config.mask == "causal" else None
    return m(x[None], x[None], x[None], attn_mask=mask, need_weights=False)[0][0]


def torch_block(trace, attention):
    """The block by hand in torch: nn.LayerNorm / nn.RMSNorm, the MLP with F.gelu, the residual adds, pre or post."""
    arch = trace.facts["arch"]
    d = trace["x"].shape[1]
    p = lambda key: T(trace[key].value)

    def norm(name, x):
        if arch.norm == "layer":
            m = torch.nn.LayerNorm(d, eps=arch.eps)
            with torch.no_grad():
                m.weight.copy_(p(f"{name}.g")), m.bias.copy_(p(f"{name}.b"))
        else:
            m = torch.nn.RMSNorm(d, eps=arch.eps)
            with torch.no_grad():
                m.weight.copy_(p(f"{name}.g"))
        return m(x)

    def ffn(l, x):
        return F.gelu(x @ p(f"l{l}.w_1") + p(f"l{l}.b_1")) @ p(f"l{l}.w_2") + p(f"l{l}.b_2")

    x, seen = p("x"), {}
    for l in range(arch.n_layers):
        sub = trace.facts["attention"][l]
        if arch.placement == "pre":
            a = attention(sub, norm(f"l{l}.ln1", x))
            x = x + a
            if arch.mlp:
                x = x + ffn(l, norm(f"l{l}.ln2", x))
        else:
            a = attention(sub, x)
            x = norm(f"l{l}.ln1", x + a)
            if arch.mlp:
                x = norm(f"l{l}.ln2", x + ffn(l, x))
        seen[f"l{l}.attn"], seen[f"l{l}.out"] = a, x
    if arch.placement == "pre":
        x = norm("ln_f", x)
    seen["logits"] = x @ p("w_u")
    return {k: v.detach().numpy() for k, v in seen.items()}


ARCHES = [Arch(n_layers=L, placement=pl, norm=nm, mlp=m)
          for L, pl, nm, m in itertools.product((1, 2, 3, 4), ("pre", "post"), ("layer", "rms"), (True, False))]
SETTINGS = {
    "defaults": Config(),
    "causal, 2 heads, bias": Config(mask="causal", n_heads=2, bias=True),
    "GQA 4/2, RoPE": Config(positional="rope", n_heads=4, n_kv_heads=2, mask="causal"),
    "ALiBi, 2 heads": Config(positional="alibi", n_heads=2),
    "random 8-d, causal": Config(embedding="random", d_model=8, n_heads=2, weights="random", mask="causal", bias=True),
    "index position (W_U seeded)": Config(embedding="random", d_model=6, positional="index", n_heads=7, d_k=3,
                                          weights="random", sentence="the cat sat on the mat"),
}


def max_error(trace, ours: dict) -> float:
    worst = 0.0
    for key, value in ours.items():
        stored = trace[key].value
        assert stored.shape == value.shape, key
        worst = max(worst, float(np.max(np.abs(stored - value)) / max(1.0, float(np.max(np.abs(value))))))
    return worst


@pytest.mark.parametrize("name", SETTINGS)
@pytest.mark.parametrize("arch", ARCHES, ids=lambda a: f"{a.n_layers}{a.placement}-{a.norm}-{'mlp' if a.mlp else 'attn'}")
def test_block_is_a_torch_block_built_by_hand(name, arch):
    config = SETTINGS[name]
    trace = sidebar_block(config, arch, run_forward(config))
    assert max_error(trace, torch_block(trace, torch_attention)) <= TOL


@pytest.mark.parametrize("arch", ARCHES[:8], ids=lambda a: f"{a.n_layers}{a.placement}-{a.norm}-{'mlp' if a.mlp else 'attn'}")
def test_block_is_a_torch_block_of_nn_multihead_attention(arch):
    config = SETTINGS["random 8-d, causal"]                 # d_k = d_model / H: what nn.MultiheadAttention can hold
    trace = sidebar_block(config, arch, run_forward(config))
    assert max_error(trace, torch_block(trace, torch_mha)) <= TOL


def test_given_attention_weights_are_used_and_layer_seeds_differ():
    config = Config(embedding="random", d_model=8, n_heads=2, weights="random")
    arch = Arch(n_layers=2)
    x = run_forward(config)["x"].value
    params = init_params(arch, 8, 3, seed=5, n_heads=2)                     # W_Q … W_O given
    trace = run_transformer(config, arch, params, x, run_forward(config).tokens, ["a", "b", "c"])
    assert np.array_equal(trace.facts["attention"][1]["w_q"].value, params["l1.w_q"])
    assert max_error(trace, torch_block(trace, torch_attention)) <= TOL
    drawn = sidebar_block(config, arch, run_forward(config))
    assert not np.allclose(drawn.facts["attention"][0]["w_q"].value, drawn.facts["attention"][1]["w_q"].value)


# ---- 3. every cell explained from its terms ------------------------------------------------------------------

def cells(shape, seed):
    r = rng(seed)
    corners = [tuple(0 for _ in shape), tuple(s - 1 for s in shape)]
    return corners + [tuple(int(r.integers(0, s)) for s in shape) for _ in range(2)]


def check_explained(trace, read_back=()):
    for step in trace:
        assert can_explain(trace, step.key), step.key
        for cell in cells(step.shape, len(step.key)):
            e = explain(trace, step.key, cell)
            stored = float(step.value[cell])
            same = e.value == stored or abs(e.value - stored) <= TOL * max(1.0, abs(stored))
            assert same, (step.key, cell, e.value, stored, e.text)
            assert e.independent or step.key in read_back, step.key
            assert e.text.count("\n") == 2 and all(balanced(t) for t in (e.symbolic, e.substituted, e.result)), e.text


@pytest.mark.parametrize("name", ["defaults", "GQA 4/2, RoPE", "random 8-d, causal", "index position (W_U seeded)"])
@pytest.mark.parametrize("arch", [Arch(), Arch(n_layers=2, placement="post", norm="rms"),
                                  Arch(n_layers=4, mlp=False, norm="rms"), Arch(n_layers=3, placement="post")],
                         ids=lambda a: f"{a.n_layers}{a.placement}-{a.norm}-{'mlp' if a.mlp else 'attn'}")
def test_every_cell_of_a_block_is_recomputed_from_its_terms(name, arch):
    config = SETTINGS[name]
    trace = sidebar_block(config, arch, run_forward(config))
    check_explained(trace)
    for sub in trace.facts["attention"]:                    # a layer's attention inside the block, its X the stream
        check_explained(sub)


def test_a_norm_cell_names_the_biased_variance_and_epsilon():
    config = Config()
    trace = sidebar_block(config, Arch(), run_forward(config))
    e = explain(trace, "l0.ln1", (1, 2))
    x = trace["x"].value[1]
    assert f"{x.var():.3f}" in e.substituted and "biased" in e.note and f"{x.var(ddof=1):.3f}" in e.note
    assert r"\sqrt{\sigma^2_{1} + \epsilon}" in e.symbolic
    rms = explain(sidebar_block(config, Arch(norm="rms"), run_forward(config)), "l0.ln1", (1, 2))
    assert "no mean is taken away" in rms.note and f"{math.sqrt((x ** 2).mean() + 1e-5):.3f}" in rms.substituted


def test_the_language_models_block_is_explained_too():
    from attention_core.training.lm.model import as_float64, lm_trace, sentence_ids
    from attention_core.math.data import DATA_DIR as DATA
    weights = as_float64(dict(np.load(DATA / "induction_lm.npz")))
    ids, _, labels, _ = sentence_ids("the cat sat on the mat and the cat sat on the")
    trace = lm_trace(weights, ids, labels)
    params = {"x"} | {k for k in trace.keys() if k.endswith((".g", ".b")) or k == "w_u"}
    check_explained(trace, read_back=params)
    for sub in trace.facts["attention"]:
        check_explained(sub, read_back={"w_q", "w_k", "w_v", "w_o", "b_q", "b_k", "b_v", "b_o"})


# ---- 4. claims ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", SETTINGS)
def test_post_norm_layer_0_is_the_attention_pages_output(name):
    config = SETTINGS[name]
    forward = run_forward(config)
    for arch in (Arch(placement="post"), Arch(placement="post", norm="rms", mlp=False, n_layers=2)):
        assert holds("block_post_layer0", (config, arch))
        assert np.array_equal(sidebar_block(config, arch, forward)["l0.attn"].value, forward["output"].value)
    pre = Arch(placement="pre")
    assert not holds("block_post_layer0", (config, pre))
    assert not np.allclose(sidebar_block(config, pre, forward)["l0.attn"].value, forward["output"].value)


def test_tied_unembedding_scores_a_word_by_its_own_embedding():
    config = Config(sentence="the cat sat on the mat")
    forward = run_forward(config)
    trace = sidebar_block(config, Arch(), forward)
    assert trace.facts["start"]["w_u"] == "tied" and holds("block_tied", (config, Arch()))
    words = trace.facts["vocab"]
    assert words == ("the", "cat", "sat", "on", "mat")
    assert np.array_equal(trace["w_u"].value[:, 1], forward["x_embed"].value[1])
    concat = Config(sentence="the cat sat", combine="concat")
    untied = sidebar_block(concat, Arch(), run_forward(concat))
    assert untied.facts["start"]["w_u"] == "seeded" and not holds("block_tied", (concat, Arch()))
    assert "block_post_layer0" in CLAIMS


# ---- 5. the page ----------------------------------------------------------------------------------------------

PAGE = "app_pages/50_block.py"


def page_text(at) -> str:
    return "\n".join([m.value for m in at.markdown] + [c.value for c in at.caption] + [i.value for i in at.info])


def test_block_page_shows_the_numbers_of_the_block():
    from tests.apptest_util import no_exception, open_page
    at = open_page(PAGE)
    no_exception(at)
    assert not at.error
    config = Config()
    block = sidebar_block(config, Arch(), run_forward(config))
    text = page_text(at)
    z = block["logits"].value[-1]
    top = block.facts["vocab"][int(np.argmax(z))]
    assert f"scores “{top}” highest, {z.max():.3f}" in text and "|V| = 4" in text
    assert "n=4 × d_ff=200" in text and "in force below" in text
    assert CLAIMS["block_post_layer0"].otherwise in text            # pre-norm at the defaults: the claim's other words
    # the norm tab: the last row's μ and biased σ², and what d − 1 would give
    at.session_state["block.tab"] = "Norm"
    at.run()
    x = block["x"].value[-1]
    text = page_text(at)
    assert f"μ = {x.mean():.4f}, σ² = {x.var():.4f}" in text and f"{x.var(ddof=1):.4f}" in text


def test_block_page_follows_its_switches():
    from tests.apptest_util import no_exception, open_page
    at = open_page(PAGE)
    at.radio(key="block.placement").set_value("post").run()
    at.radio(key="block.norm").set_value("rms").run()
    at.slider(key="block.layers").set_value(3).run()
    no_exception(at)
    text = page_text(at)
    assert CLAIMS["block_post_layer0"].text in text
    config = Config()
    block = sidebar_block(config, Arch(n_layers=3, placement="post", norm="rms"), run_forward(config))
    z = block["logits"].value[-1]
    assert f"highest, {z.max():.3f}" in text and "Final" not in "".join(m.value for m in at.markdown if "| step |" in m.value)
    at.select_slider(key="block.layer").set_value(2).run()
    at.toggle(key="block.mlp").set_value(False).run()
    at.session_state["block.tab"] = "MLP"
    at.run()
    no_exception(at)
    assert any("The MLP is off" in i.value for i in at.info)
    assert str(at.query_params["block.layers"]) == "3" and str(at.query_params["block.placement"]) == "post"


def test_block_page_tampered_link_falls_back_with_a_notice():
    from tests.apptest_util import messages, no_exception, open_page
    at = open_page(PAGE, query={"block.layers": "9", "block.norm": "batch"})
    no_exception(at)
    notices = messages(at)
    assert "block.layers" in notices and "block.norm" in notices and "using the default" in notices
    assert at.slider(key="block.layers").value == 1 and at.radio(key="block.norm").value == "layer"
    assert not at.error
