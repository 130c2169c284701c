"""A checkpoint's tensors renamed and turned into the project's notation: rows are tokens, Y = X W.

The parameter names are forward/transformer.py's (tok_emb, l0.w_q, l0.ln1.g, ln_f.g, w_u …), plus pos_emb for
GPT-2's learned positions and l{l}.w_gate, l{l}.w_up, l{l}.w_down for SwiGLU. What each family stores:

    GPT-2     h.{l}.attn.c_attn.weight (d, 3d): Conv1D stores (in, out), already X @ W, so W_Q, W_K, W_V are its
              three blocks of d columns (a view each); c_proj, c_fc, mlp.c_proj likewise (in, out); wte (|V|, d)
              is E and W_U = Eᵀ (tied); wpe (n_ctx, d) the learned positions
    Llama     layers.{l}.self_attn.q_proj.weight (H·d_k, d): nn.Linear stores (out, in) and computes x Wᵀ, so
              W_Q = q_projᵀ (d, H·d_k); k_proj, v_proj (H_kv·d_k, d) -> W_K, W_V (d, H_kv·d_k); o_proj ->
              W_O (H·d_k, d); gate/up/down_proj likewise; lm_head.weight (|V|, d) -> W_U = lm_headᵀ, or Eᵀ if tied
    Qwen2     the same, plus q_proj.bias, k_proj.bias, v_proj.bias -> b_Q, b_K, b_V

A transpose or a column block is a numpy view: nothing is copied. The "transformer." / "model." prefix some
savers add is taken off first; buffers that are not parameters (GPT-2's attn.bias mask) are left out.
"""
from __future__ import annotations

import numpy as np

from .checkpoint_config import CheckpointConfig
from .errors import CorruptFile

PREFIXES = ("transformer.", "model.")


def strip_prefix(tensors: dict) -> dict:
    out = {}
    for name, value in tensors.items():
        for prefix in PREFIXES:
            if name.startswith(prefix):
                name = name[len(prefix):]
                break
        out[name] = value
    return out


class _Reader:
    """Takes tensors by name, checking each one's shape; a missing one or a wrong shape is a CorruptFile."""

    def __init__(self, tensors: dict):
        self.tensors = tensors

    def __call__(self, name: str, shape: tuple) -> np.ndarray:
        if name not in self.tensors:
            raise CorruptFile(f"The checkpoint has no tensor {name!r} although its config.json asks for it: the "
                              "weights and the config do not belong together, or a shard is missing. Download the "
                              "model again.")
        value = self.tensors[name]
        if tuple(value.shape) != tuple(shape):
            raise CorruptFile(f"{name} has shape {tuple(value.shape)} but config.json implies {tuple(shape)}: the "
                              "weights and the config do not belong together. Download the model again.")
        return value

    def maybe(self, name: str, shape: tuple) -> np.ndarray | None:
        return self(name, shape) if name in self.tensors else None


def project_params(config: CheckpointConfig, tensors: dict) -> dict[str, np.ndarray]:
    """The checkpoint's tensors (float32, any prefix) -> the project's parameter dict, X @ W everywhere."""
    take = _Reader(strip_prefix(tensors))
    return (_gpt2 if config.family == "gpt2" else _llama)(config, take)


def _gpt2(c: CheckpointConfig, take: _Reader) -> dict:
    d, v, f = c.d_model, c.vocab, c.d_ff
    p = {"tok_emb": take("wte.weight", (v, d)), "pos_emb": take("wpe.weight", (c.n_ctx, d))}
    for l in range(c.n_layers):
        h = f"h.{l}."
        w_qkv, b_qkv = take(h + "attn.c_attn.weight", (d, 3 * d)), take(h + "attn.c_attn.bias", (3 * d,))
        for i, name in enumerate("qkv"):                                   # (d, 3d) = [W_Q | W_K | W_V]
            p[f"l{l}.w_{name}"] = w_qkv[:, i * d:(i + 1) * d]              # (d, H·d_k)
            p[f"l{l}.b_{name}"] = b_qkv[i * d:(i + 1) * d]
        p[f"l{l}.w_o"], p[f"l{l}.b_o"] = take(h + "attn.c_proj.weight", (d, d)), take(h + "attn.c_proj.bias", (d,))
        for ours, theirs in (("ln1", "ln_1"), ("ln2", "ln_2")):
            p[f"l{l}.{ours}.g"], p[f"l{l}.{ours}.b"] = take(h + theirs + ".weight", (d,)), take(h + theirs + ".bias", (d,))
        p[f"l{l}.w_1"], p[f"l{l}.b_1"] = take(h + "mlp.c_fc.weight", (d, f)), take(h + "mlp.c_fc.bias", (f,))
        p[f"l{l}.w_2"], p[f"l{l}.b_2"] = take(h + "mlp.c_proj.weight", (f, d)), take(h + "mlp.c_proj.bias", (d,))
    p["ln_f.g"], p["ln_f.b"] = take("ln_f.weight", (d,)), take("ln_f.bias", (d,))
    p["w_u"] = (p["tok_emb"] if c.tied else take("lm_head.weight", (v, d))).T   # (d, |V|), tied: Eᵀ
    return p


def _llama(c: CheckpointConfig, take: _Reader) -> dict:
    d, v, f = c.d_model, c.vocab, c.d_ff
    q, kv = c.n_heads * c.d_head, c.n_kv_heads * c.d_head
    p = {"tok_emb": take("embed_tokens.weight", (v, d))}
    for l in range(c.n_layers):
        a, m = f"layers.{l}.self_attn.", f"layers.{l}.mlp."
        for name, width in (("q", q), ("k", kv), ("v", kv)):
            p[f"l{l}.w_{name}"] = take(a + f"{name}_proj.weight", (width, d)).T   # (out, in) -> (d, width)
            bias = take.maybe(a + f"{name}_proj.bias", (width,))
            if bias is not None:
                p[f"l{l}.b_{name}"] = bias
        p[f"l{l}.w_o"] = take(a + "o_proj.weight", (d, q)).T                     # (H·d_k, d)
        bias = take.maybe(a + "o_proj.bias", (d,))
        if bias is not None:
            p[f"l{l}.b_o"] = bias
        p[f"l{l}.ln1.g"] = take(f"layers.{l}.input_layernorm.weight", (d,))
        p[f"l{l}.ln2.g"] = take(f"layers.{l}.post_attention_layernorm.weight", (d,))
        p[f"l{l}.w_gate"] = take(m + "gate_proj.weight", (f, d)).T                # (d, d_ff)
        p[f"l{l}.w_up"] = take(m + "up_proj.weight", (f, d)).T                    # (d, d_ff)
        p[f"l{l}.w_down"] = take(m + "down_proj.weight", (d, f)).T                # (d_ff, d)
    p["ln_f.g"] = take("norm.weight", (d,))
    head = None if c.tied else take.maybe("lm_head.weight", (v, d))
    if head is None and not c.tied:
        raise CorruptFile("The checkpoint has no lm_head.weight and its config.json says the unembedding is not tied "
                          "(tie_word_embeddings false). Download the model again.")
    p["w_u"] = (p["tok_emb"] if head is None else head).T                          # (d, |V|)
    return p
