"""The block's backward pass, by hand: from the next-token loss back to every parameter and the embeddings.

The forward pass is forward/transformer.py's run_transformer (a Trace of kind "block"); this file reads its
values (the stream steps, and each layer's attention Trace in trace.facts["attention"][l]) and undoes it line
by line, from the loss to the embeddings, in the order a learner reads it:

    _backward_loss       L = mean_i −log softmax(Z_i)_{y_i}, y_i the token after token i  ⇒  ∂L/∂Z
    _backward_unembed    Z = N_f(X_L) W_U                       ⇒  ∂L/∂W_U, ∂L/∂N_f, ∂L/∂γ_f, ∂L/∂β_f, ∂L/∂X_L
    per layer, last first:
    _backward_mlp        X'' = X' + MLP(N(X'))  (or N(X' + MLP(X')), post-norm)
    _backward_attention_layer  X' = X + MHA(N(X))   (or N(X + MHA(X))):  the classifier's attention part
                         (classifier/backprop.py: _backward_attention_heads, masked weights are 0 so the
                         causal mask needs nothing more), then W_Q, W_K, W_V as its projections
    _backward_embed      X_0 = E[ids] + E^pos[0:n]                  ⇒  ∂L/∂E (rows added up per id), ∂L/∂E^pos

A residual add y = x + f(x) sends ∂L/∂y to both branches unchanged: ∂L/∂x = ∂L/∂y + (what comes back through f).

Gradients are named "dL/d<name>", <name> a parameter ("l0.w_q", "ln_f.g", "w_u", "tok_emb") or a step of the
block's trace ("logits", "l0.mid", "x") or of a layer's attention ("l0.q", "l0.weights", "l0.scores", the
softmax's input Ŝ, "l0.concat"), each with the shape of <name>; "l0.attn_branch" and "l0.mlp_branch" are what
a sublayer's branch sends back to the stream it read, before the add's skip is added.
tests/test_block_gradients.py checks every one against torch autograd to 1e-9.
"""
from __future__ import annotations

import numpy as np

from ...forward.trace import Trace
from ...math.limits import ConfigError
from ...math.mlp import mlp_backward
from ...math.norms import layer_norm_backward, rms_norm_backward
from ..classifier.backprop import _backward_attention, _backward_attention_heads


def targets(ids) -> np.ndarray:
    """y_i = ids[i + 1]: position i is scored on the token after it; (n − 1,)."""
    ids = np.asarray(ids, dtype=int)
    if len(ids) < 2:
        raise ConfigError("The next-token loss needs at least two tokens: one to read, one to predict.")
    return ids[1:]


def next_token_loss(logits: np.ndarray, ids) -> tuple[float, np.ndarray]:
    """(L, P): L = mean over i < n − 1 of −log softmax(Z_i)_{y_i}; P = softmax(Z) row by row, (n, |V|)."""
    y = targets(ids)
    top = logits.max(axis=1, keepdims=True)                                   # (n, 1)  no overflow in exp
    log_p = logits - top - np.log(np.exp(logits - top).sum(axis=1, keepdims=True))   # (n, |V|)
    loss = -log_p[np.arange(len(y)), y].mean()
    return float(loss), np.exp(log_p)


def check_supported(trace: Trace) -> None:
    """The hand-written attention part undoes scaled dot-product attention with H query and key heads, no RoPE,
    ALiBi, temperature or projection biases: say so for anything else."""
    config = trace.facts["config"]
    bad = [what for what, wrong in (
        ("a score other than the scaled dot product", config.score != "scaled_dot"),
        ("RoPE or ALiBi", config.positional in ("rope", "alibi")),
        ("a temperature other than 1", config.temperature != 1),
        ("grouped-query attention", config.kv_heads != config.n_heads),
        ("projection biases", config.bias)) if wrong]
    if bad:
        raise ConfigError("The hand-written backward pass of the block covers scaled dot-product attention only, "
                          f"not {', '.join(bad)}.")


def backward(trace: Trace, params: dict, ids) -> dict[str, np.ndarray]:
    """∂L/∂(everything) of the block's trace, from the loss back to the embeddings; each derivative under the
    forward line it undoes. `params` are the ones the trace was run with (with tok_emb and pos_emb for ∂L/∂E)."""
    check_supported(trace)
    arch = trace.facts["arch"]
    g = _backward_loss(trace, ids)
    stream_key = _backward_unembed(trace, params, g)
    for l in reversed(range(arch.n_layers)):
        if arch.mlp:
            _backward_mlp(trace, params, l, g)
        _backward_attention_layer(trace, params, l, g)
    if "tok_emb" in params:
        _backward_embed(params, ids, g)
    return g


def _norm_backward(trace, params, name, dy, x):
    """∂L/∂x, ∂L/∂γ (and ∂L/∂β, LayerNorm) of y = N(x) with the norm `name`, into g's keys."""
    arch = trace.facts["arch"]
    if arch.norm == "layer":
        dx, dg, db = layer_norm_backward(dy, x, params[f"{name}.g"], arch.eps)
        return dx, {f"dL/d{name}.g": dg, f"dL/d{name}.b": db}
    dx, dg = rms_norm_backward(dy, x, params[f"{name}.g"], arch.eps)
    return dx, {f"dL/d{name}.g": dg}


def _backward_loss(trace: Trace, ids) -> dict[str, np.ndarray]:
    logits = trace["logits"].value                                            # (n, |V|)
    y = targets(ids)
    loss, p = next_token_loss(logits, ids)
    # L = −(1/(n−1)) Σ_{i<n−1} log softmax(Z_i)_{y_i}  ⇒  ∂L/∂Z_i = (p_i − onehot(y_i)) / (n − 1), and 0 for
    #   the last row (it has no next token to be scored on)
    dL_dlogits = p.copy()                                                     # (n, |V|)
    dL_dlogits[np.arange(len(y)), y] -= 1.0
    dL_dlogits[-1] = 0.0
    dL_dlogits /= len(y)
    return {"loss": np.array(loss), "probs": p, "dL/dlogits": dL_dlogits}


def _backward_unembed(trace: Trace, params: dict, g: dict) -> str:
    """Through Z = N_f(X_L) W_U (pre-norm) or Z = X_L W_U (post-norm); returns the key of X_L."""
    arch = trace.facts["arch"]
    last = f"l{arch.n_layers - 1}.out"
    read = "ln_f" if arch.final_norm else last
    # Z = R W_U                                ⇒  ∂L/∂W_U = Rᵀ ∂L/∂Z,  ∂L/∂R = ∂L/∂Z W_Uᵀ
    g["dL/dw_u"] = trace[read].value.T @ g["dL/dlogits"]                      # (d, |V|)
    g[f"dL/d{read}"] = g["dL/dlogits"] @ params["w_u"].T                     # (n, d)
    if arch.final_norm:
        # R = N_f(X_L)                         ⇒  the norm's backward (math/norms.py)
        dx, dparams = _norm_backward(trace, params, "ln_f", g["dL/dln_f"], trace[last].value)
        g.update(dparams)
        g[f"dL/d{last}"] = dx                                                 # (n, d)
    return last


def _backward_mlp(trace: Trace, params: dict, l: int, g: dict) -> None:
    """From ∂L/∂X_{l+1} (the layer's output) back to ∂L/∂X_l' (the stream after attention)."""
    arch = trace.facts["arch"]
    mid = trace[f"l{l}.mid"].value                                            # (n, d)  X_l'
    d_out = g[f"dL/dl{l}.out"]                                                # (n, d)
    if arch.placement == "post":
        # X_{l+1} = N(Σ), Σ = X' + MLP(X')     ⇒  ∂L/∂Σ from the norm's backward
        d_sum, dparams = _norm_backward(trace, params, f"l{l}.ln2", d_out, trace[f"l{l}.sum2"].value)
        g.update(dparams)
        g[f"dL/dl{l}.sum2"] = d_sum
        d_out, read = d_sum, mid
    else:
        read = trace[f"l{l}.ln2"].value                                        # N(X')
    # X_{l+1} = X' + MLP(·): the add copies the gradient to both branches ⇒  ∂L/∂MLP = ∂L/∂X_{l+1}
    g[f"dL/dl{l}.mlp"] = d_out
    back = mlp_backward(d_out, read, trace[f"l{l}.hidden"].value, trace[f"l{l}.act"].value,
                        params[f"l{l}.w_1"], params[f"l{l}.w_2"])             # math/mlp.py, line by line
    for name in ("w_2", "b_2", "w_1", "b_1"):
        g[f"dL/dl{l}.{name}"] = back[name]
    g[f"dL/dl{l}.act"], g[f"dL/dl{l}.hidden"] = back["act"], back["hidden"]   # (n, d_ff) each
    if arch.placement == "pre":
        g[f"dL/dl{l}.ln2"] = back["x"]                                        # (n, d)  ∂L/∂N(X')
        # N(X') = LN(X')                       ⇒  the norm's backward
        d_read, dparams = _norm_backward(trace, params, f"l{l}.ln2", back["x"], mid)
        g.update(dparams)
    else:
        d_read = back["x"]
    g[f"dL/dl{l}.mlp_branch"] = d_read                                        # what the MLP branch sends back
    # X' feeds the skip and the MLP branch     ⇒  ∂L/∂X' = ∂L/∂X_{l+1} (the skip) + what the branch sends back
    g[f"dL/dl{l}.mid"] = d_out + d_read


def _backward_attention_layer(trace: Trace, params: dict, l: int, g: dict) -> None:
    """From ∂L/∂(the stream after attention) back to ∂L/∂X_l (the stream the layer read)."""
    arch = trace.facts["arch"]
    sub = trace.facts["attention"][l]                                         # the layer's attention Trace
    after = f"l{l}.mid" if arch.mlp else f"l{l}.out"
    before = "x" if l == 0 else f"l{l - 1}.out"
    d_after = g[f"dL/d{after}"]                                               # (n, d)
    if arch.placement == "post":
        # X' = N(Σ), Σ = X + MHA(X)            ⇒  ∂L/∂Σ from the norm's backward
        d_after, dparams = _norm_backward(trace, params, f"l{l}.ln1", d_after, trace[f"l{l}.sum1"].value)
        g.update(dparams)
        g[f"dL/dl{l}.sum1"] = d_after
    # X' = X + MHA(·): the add copies the gradient to both branches  ⇒  ∂L/∂O = ∂L/∂X'
    g[f"dL/dl{l}.attn"] = d_after                                             # (n, d)
    h = sub.facts["n_heads"]
    concat = sub["concat" if h > 1 else "context"].value                      # (n, H·d_v)
    # O = C W_O                                ⇒  ∂L/∂W_O = Cᵀ ∂L/∂O,  ∂L/∂C = ∂L/∂O W_Oᵀ
    g[f"dL/dl{l}.w_o"] = concat.T @ d_after                                   # (H·d_v, d)
    d_concat = d_after @ sub["w_o"].value.T                                   # (n, H·d_v)
    g[f"dL/dl{l}.concat"] = d_concat
    # C_h = A_h V_h, A_h = softmax(Ŝ_h) (masked: A = 0 there), Ŝ_h = Q_h K_hᵀ/√d_k: the classifier's attention part
    c = {name: sub[name].value for name in ("q", "k", "v", "weights")}
    back = _backward_attention_heads(c, d_concat, h) if h > 1 else _backward_attention(c, d_concat)
    for name in ("weights", "scores", "q", "k", "v"):
        g[f"dL/dl{l}.{name}"] = back[f"dL/d{name}"]
    read = sub["x"].value                                                     # (n, d)  what attention read
    # Q = R W_Q, K = R W_K, V = R W_V          ⇒  ∂L/∂W_Q = Rᵀ ∂L/∂Q, …,  ∂L/∂R = Σ ∂L/∂Q W_Qᵀ (three paths)
    d_read = np.zeros_like(read)
    for name in ("q", "k", "v"):
        g[f"dL/dl{l}.w_{name}"] = read.T @ back[f"dL/d{name}"]                # (d, H·d_k)
        d_read += back[f"dL/d{name}"] @ sub[f"w_{name}"].value.T
    if arch.placement == "pre":
        g[f"dL/dl{l}.ln1"] = d_read                                           # ∂L/∂N(X)
        # R = N(X)                             ⇒  the norm's backward
        d_read, dparams = _norm_backward(trace, params, f"l{l}.ln1", d_read, trace[before].value)
        g.update(dparams)
    g[f"dL/dl{l}.attn_branch"] = d_read                                       # what the attention branch sends back
    # X feeds the skip and the attention branch  ⇒  ∂L/∂X = ∂L/∂X' (the skip) + what the branch sends back
    g[f"dL/d{before}"] = d_after + d_read


def _backward_embed(params: dict, ids, g: dict) -> None:
    """X_0 = E[ids] + E^pos[0:n]  ⇒  ∂L/∂E_t = Σ_{i: ids_i = t} ∂L/∂X_{0,i},  ∂L/∂E^pos_i = ∂L/∂X_{0,i} (i < n), else 0."""
    ids = np.asarray(ids, dtype=int)
    dx = g["dL/dx"]                                                           # (n, d)
    d_tok = np.zeros_like(params["tok_emb"])                                  # (|V|, d)
    np.add.at(d_tok, ids, dx)                                                 # a repeated token adds its rows
    d_pos = np.zeros_like(params["pos_emb"])                                  # (n_ctx, d)
    d_pos[: len(ids)] = dx
    g["dL/dtok_emb"], g["dL/dpos_emb"] = d_tok, d_pos


def loss_and_gradients(trace: Trace, params: dict, ids) -> tuple[float, dict[str, np.ndarray]]:
    """(L, {parameter name: ∂L/∂parameter}): what a training step needs."""
    g = backward(trace, params, ids)
    return float(g["loss"]), {name: g[f"dL/d{name}"] for name in params if f"dL/d{name}" in g}


def autograd_gradients(arch, params: dict, ids, n_heads: int) -> dict[str, np.ndarray]:
    """{"dL/d<parameter>": …} from torch autograd on the same model written in torch, float64: the page's check.
    Causal scaled dot-product attention with H = n_heads, nn.functional's layer_norm / rms_norm and exact gelu."""
    import torch
    import torch.nn.functional as F
    t = {name: torch.tensor(value, dtype=torch.float64, requires_grad=True) for name, value in params.items()}
    ids_t = torch.tensor([int(i) for i in ids])
    n, d = len(ids_t), params["w_u"].shape[0]
    d_k = params["l0.w_q"].shape[1] // n_heads
    hidden = ~torch.tril(torch.ones(n, n, dtype=torch.bool))

    def norm(name, x):
        if arch.norm == "layer":
            return F.layer_norm(x, (d,), t[f"{name}.g"], t[f"{name}.b"], arch.eps)
        return F.rms_norm(x, (d,), t[f"{name}.g"], arch.eps)

    def attention(l, x):
        heads = [(x @ t[f"l{l}.w_{m}"]).view(n, n_heads, -1).transpose(0, 1) for m in "qkv"]   # (H, n, d_k) each
        scores = (heads[0] @ heads[1].transpose(1, 2) / d_k ** 0.5).masked_fill(hidden, float("-inf"))
        return (torch.softmax(scores, -1) @ heads[2]).transpose(0, 1).reshape(n, -1) @ t[f"l{l}.w_o"]

    def mlp(l, x):
        return F.gelu(x @ t[f"l{l}.w_1"] + t[f"l{l}.b_1"]) @ t[f"l{l}.w_2"] + t[f"l{l}.b_2"]

    x = t["tok_emb"][ids_t] + t["pos_emb"][:n]
    for l in range(arch.n_layers):
        pre = arch.placement == "pre"
        x = x + attention(l, norm(f"l{l}.ln1", x)) if pre else norm(f"l{l}.ln1", x + attention(l, x))
        if arch.mlp:
            x = x + mlp(l, norm(f"l{l}.ln2", x)) if pre else norm(f"l{l}.ln2", x + mlp(l, x))
    logits = (norm("ln_f", x) if arch.final_norm else x) @ t["w_u"]
    F.cross_entropy(logits[:-1], ids_t[1:]).backward()
    return {f"dL/d{name}": value.grad.numpy() for name, value in t.items()}
