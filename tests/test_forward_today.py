"""The forward pass with today's attention (RoPE, ALiBi, grouped-query heads, a sliding window) against torch."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attention_core import Config, explain, run_forward
from attention_core.math.alibi import alibi_bias
from attention_core.forward.claims import CLAIMS, holds
from attention_core.math.rope import rotary_complex, rotary_embedding

SENTENCE = "the cat sat on the mat today"
SETTINGS = [
    Config(sentence=SENTENCE, positional="rope", n_heads=4, n_kv_heads=2, mask="causal", weights="random"),
    Config(sentence=SENTENCE, positional="rope", n_heads=2, n_kv_heads=1, pe_base=500_000.0),        # trained, MQA
    Config(sentence=SENTENCE, positional="alibi", n_heads=3, mask="sliding_window", window=3),
    Config(sentence=SENTENCE, positional="alibi", n_heads=4, n_kv_heads=1, weights="random", temperature=0.7),
    Config(sentence=SENTENCE, n_heads=4, n_kv_heads=2, mask="sliding_window", window=2, bias=True, weights="random"),
    Config(sentence=SENTENCE, positional="rope", mask="sliding_window", window=9, d_k=6),             # W ≥ n
]


def torch_forward(trace, config: Config) -> np.ndarray:
    """The same layer in torch: SDPA with enable_gqa, RoPE by the complex form, ALiBi as a float mask."""
    t = lambda key: torch.tensor(trace[key].value)
    h, h_kv, d_k, n = config.n_heads, config.kv_heads, config.d_k, trace.n
    x = t("x")
    q, k, v = x @ t("w_q"), x @ t("w_k"), x @ t("w_v")
    if config.bias:
        q, k, v = q + t("b_q"), k + t("b_k"), v + t("b_v")
    q = q.reshape(n, h, d_k).transpose(0, 1)                              # (H, n, d_k)
    k = k.reshape(n, h_kv, d_k).transpose(0, 1)                           # (H_kv, n, d_k)
    v = v.reshape(n, h_kv, config.d_v).transpose(0, 1)
    if config.positional == "rope":                                        # Meta's Llama: complex numbers
        angles = torch.arange(n, dtype=torch.float64)[:, None] * config.pe_base ** (
            -torch.arange(0, d_k, 2, dtype=torch.float64) / d_k)
        freqs = torch.polar(torch.ones_like(angles), angles)              # (n, d_k/2)
        rot = lambda a: torch.view_as_real(torch.view_as_complex(a.reshape(*a.shape[:-1], -1, 2).contiguous())
                                           * freqs).flatten(-2)
        q, k = rot(q), rot(k)
    mask = torch.zeros(h, n, n, dtype=torch.float64)
    if config.positional == "alibi":
        mask = mask + torch.tensor(alibi_bias(n, h)) / config.temperature     # softmax((Ŝ + B) / T): B / T here
    i, j = torch.arange(n)[:, None], torch.arange(n)[None, :]
    if config.mask == "causal":
        mask = mask.masked_fill(j > i, float("-inf"))
    if config.mask == "sliding_window":
        mask = mask.masked_fill(~((i - j >= 0) & (i - j < config.window)), float("-inf"))
    context = F.scaled_dot_product_attention(q[None], k[None], v[None], attn_mask=mask[None], enable_gqa=True,
                                             scale=1 / (config.temperature * d_k ** 0.5))[0]   # (H, n, d_v)
    out = context.transpose(0, 1).reshape(n, h * config.d_v) @ t("w_o")
    if config.bias:
        out = out + t("b_o")
    return out.numpy()


@pytest.mark.parametrize("config", SETTINGS, ids=lambda c: f"{c.positional}-H{c.n_heads}-kv{c.kv_heads}-{c.mask}")
def test_forward_matches_torch_sdpa(config):
    trace = run_forward(config)
    assert np.abs(trace["output"].value - torch_forward(trace, config)).max() < 1e-12
    if config.kv_heads < config.n_heads:
        assert trace["w_k"].shape[1] == config.kv_heads * config.d_k and trace["k_heads"].shape[0] == config.kv_heads


@pytest.mark.parametrize("config", SETTINGS, ids=lambda c: f"{c.positional}-H{c.n_heads}-kv{c.kv_heads}-{c.mask}")
def test_every_cell_of_the_new_steps_is_explained_with_its_own_numbers(config):
    trace = run_forward(config)
    keys = [k for k in ("q_rot", "k_rot", "alibi", "biased_scores", "k_heads", "scores", "scaled_scores", "mask",
                        "masked_scores", "weights", "context") if k in trace]
    for key in keys:
        for cell in itertools.product(*map(range, trace[key].shape)):
            value = trace[key].value[cell]
            got = explain(trace, key, cell).value
            assert got == value if np.isinf(value) else abs(got - value) < 1e-9, (key, cell)


def test_rope_scores_depend_on_the_distance_only():
    config = Config(sentence=SENTENCE, positional="rope", weights="random", d_k=8)
    trace = run_forward(config)
    assert holds("rope_relative", config) and CLAIMS["rope_relative"].marker in trace["scores"].why
    q, k = trace["q"].value, trace["k"].value                              # before rotation, (n, d_k)
    rng = np.random.default_rng(0)
    for _ in range(50):                                                    # any positions p, p′ with the same p′ − p
        a, b, shift = rng.integers(0, 40, size=3)
        one = rotary_embedding(q[:1], [a], config.pe_base) @ rotary_embedding(k[1:2], [b], config.pe_base).T
        two = rotary_embedding(q[:1], [a + shift], config.pe_base) @ rotary_embedding(k[1:2], [b + shift], config.pe_base).T
        assert abs(one - two).max() < 1e-12
    # the trace's rotated rows are the complex form's
    assert np.abs(trace["q_rot"].value - rotary_complex(q, base=config.pe_base)).max() < 1e-12
    # outside its condition: an additive or bilinear score of the rotated rows is not shift-invariant
    for score in ("additive", "bilinear"):
        other = config.replace(score=score)
        assert not holds("rope_relative", other)
        assert CLAIMS["rope_relative"].marker not in run_forward(other)["scores"].why


def test_bad_settings_get_a_message():
    from attention_core import ConfigError
    for bad, words in ((dict(positional="rope", d_k=5), "d_k must be even"),
                       (dict(n_heads=4, n_kv_heads=3), "Set the KV heads to 1, 2 or 4"),
                       (dict(mask="sliding_window", window=0), "window=0 is out of range")):
        with pytest.raises(ConfigError, match=words):
            Config(**bad)
    assert Config(n_heads=4, n_kv_heads=4) == Config(n_heads=4)            # H_kv = H is plain multi-head
    trace = run_forward(SETTINGS[-1])
    assert any("same as the causal mask" in n for n in trace.notices)
