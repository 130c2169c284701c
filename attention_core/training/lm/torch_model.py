"""The same transformer in torch: the numpy forward pass's math, with autograd, for training and as a reference.

One module over the flat parameter dict of forward/transformer.py (tok_emb, pos_emb, l{l}.w_q …, ln_f.g, w_u),
general over forward.transformer.Arch (pre- or post-norm, LayerNorm or RMSNorm, MLP on or off):

    X_0 = E[ids] + E^pos[0:n]
    pre:   X' = X + MHA(N(X)),   X'' = X' + MLP(N(X'))        then  Z = N_f(X_L) W_U
    post:  X' = N(X + MHA(X)),   X'' = N(X' + MLP(X'))        then  Z = X_L W_U
    MHA(Y) = concat_h softmax(Q_h K_hᵀ / √d_k + causal −∞) V_h · W_O,   Q = Y W_Q (+ b_Q), …

Heads split W_Q's columns as the numpy pass does (head h: columns h·d_k … (h+1)·d_k − 1). torch is imported
inside the functions only: the app's cold start never loads it.
"""
from __future__ import annotations

import math

import numpy as np

from ...forward.transformer import Arch
from .model import ARCH, N_HEADS


def _key(name: str) -> str:
    return name.replace(".", "__")          # nn.ParameterDict keys may not hold "."


def build(params: dict, arch: Arch = ARCH, n_heads: int = N_HEADS, dtype=None, trainable: bool = True):
    """A torch module holding a copy of `params` (numpy arrays), dtype float32 unless given (torch.float64 for
    checks). Its forward(ids (b, n) long, with_weights=False) -> logits (b, n, |V|) [, weights per layer
    (b, H, n, n)]; without the weights attention runs fused (F.scaled_dot_product_attention, same math)."""
    import torch
    import torch.nn.functional as F

    class Transformer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.arch, self.n_heads, self.names = arch, n_heads, list(params)
            self.p = torch.nn.ParameterDict({
                _key(k): torch.nn.Parameter(torch.tensor(np.asarray(v), dtype=dtype or torch.float32),
                                            requires_grad=trainable) for k, v in params.items()})

        def get(self, name):
            return self.p[_key(name)] if _key(name) in self.p else None

        def norm(self, name, x):                                              # (b, n, d) -> (b, n, d)
            if self.arch.norm == "layer":
                return F.layer_norm(x, x.shape[-1:], self.get(f"{name}.g"), self.get(f"{name}.b"), self.arch.eps)
            return self.get(f"{name}.g") * x / torch.sqrt((x * x).mean(-1, keepdim=True) + self.arch.eps)

        def attention(self, l, y, with_weights=True):                        # (b, n, d) -> (b, n, d), weights
            b, n, _ = y.shape
            h = self.n_heads
            qkv = []
            for name in ("q", "k", "v"):
                z = y @ self.get(f"l{l}.w_{name}")                            # (b, n, H·d_k)
                if self.get(f"l{l}.b_{name}") is not None:
                    z = z + self.get(f"l{l}.b_{name}")
                qkv.append(z.view(b, n, h, -1).transpose(1, 2))               # (b, H, n, d_k)
            q, k, v = qkv
            if not with_weights:    # the same softmax(QKᵀ/√d_k + causal −∞) V, fused: ≈ 25 % faster to train
                context, weights = F.scaled_dot_product_attention(q, k, v, is_causal=True), None
                return self.output(l, context.transpose(1, 2).reshape(b, n, -1)), weights
            scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])         # (b, H, n, n)
            hidden = torch.ones(n, n, dtype=torch.bool).triu(1)               # key j > query i
            weights = scores.masked_fill(hidden, float("-inf")).softmax(-1)  # (b, H, n, n)
            context = (weights @ v).transpose(1, 2).reshape(b, n, -1)         # (b, n, H·d_v)
            return self.output(l, context), weights

        def output(self, l, context):                                        # (b, n, H·d_v) -> (b, n, d)
            out = context @ self.get(f"l{l}.w_o")
            return out if self.get(f"l{l}.b_o") is None else out + self.get(f"l{l}.b_o")

        def mlp(self, l, y):
            hidden = y @ self.get(f"l{l}.w_1") + self.get(f"l{l}.b_1")        # (b, n, d_ff)
            return F.gelu(hidden) @ self.get(f"l{l}.w_2") + self.get(f"l{l}.b_2")

        def forward(self, ids, with_weights: bool = False):
            n = ids.shape[-1]
            x = F.embedding(ids, self.get("tok_emb")) + self.get("pos_emb")[:n]   # (b, n, d): E[ids] + E^pos[0:n]
            pre, all_weights = self.arch.placement == "pre", []
            for l in range(self.arch.n_layers):
                if pre:
                    out, w = self.attention(l, self.norm(f"l{l}.ln1", x), with_weights)
                    x = x + out
                else:
                    out, w = self.attention(l, x, with_weights)
                    x = self.norm(f"l{l}.ln1", x + out)
                all_weights.append(w)
                if self.arch.mlp and pre:
                    x = x + self.mlp(l, self.norm(f"l{l}.ln2", x))
                elif self.arch.mlp:
                    x = self.norm(f"l{l}.ln2", x + self.mlp(l, x))
            if self.arch.final_norm:
                x = self.norm("ln_f", x)
            logits = x @ self.get("w_u")                                      # (b, n, |V|)
            return (logits, all_weights) if with_weights else logits

        def params(self, dtype=np.float32) -> dict[str, np.ndarray]:
            """The parameters back as the flat numpy dict (names as in forward/transformer.py)."""
            return {k: self.get(k).detach().cpu().numpy().astype(dtype) for k in self.names}

    return Transformer()


def forward(params: dict, ids, arch: Arch = ARCH, n_heads: int = N_HEADS, with_weights: bool = False):
    """Logits (b, n, |V|) in float64 as numpy (and each layer's weights (b, H, n, n)): the reference pass.
    Without the weights it runs the fused attention, as training does."""
    import torch

    module = build(params, arch, n_heads, dtype=torch.float64, trainable=False)
    ids = torch.as_tensor(np.atleast_2d(np.asarray(ids, dtype=np.int64)))
    with torch.no_grad():
        if not with_weights:
            return module(ids).numpy()
        logits, weights = module(ids, with_weights=True)
    return logits.numpy(), [w.numpy() for w in weights]
