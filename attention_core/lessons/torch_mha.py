"""Multi-head self-attention the way PyTorch code writes it (seed 002), next to the numpy one.

    Q, K, V = fc_q(x), fc_k(x), fc_v(x)                         [batch, len, hid_dim]
    view + permute into heads                                   [batch, heads, len, head_dim]
    energy = Q Kᵀ / √head_dim                                   [batch, heads, len, len]
    energy.masked_fill(mask == 0, -1e10); alpha = softmax(energy)
    alpha = dropout(alpha)   (only while training)
    a = alpha V, permute + view back, fc_o(a)                   [batch, len, hid_dim]

Seed 002 calls F.dropout(alpha, p=0.1) without training=self.training. F.dropout's
`training` defaults to True, so its weights are dropped at inference too; `pitfall=True`
reproduces that, so a page can show both.

nn.Linear computes x Wᵀ + b: its weight is our (d_in, d_out) matrix transposed.
torch is imported inside functions only. score_costs (plain arithmetic) lives here too.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from ..math import attention as att
from ..math.limits import ConfigError, _check_int, check_heads
from ..forward.weights import init_bias, init_weight
from ..forward.trace import Trace

MODES = ("eval", "train", "pitfall")     # correct module in eval / train mode; seed 002's module in eval mode
LAYER_BIAS = False     # the page's layer: no biases, so it holds exactly numpy multi_head_attention's four matrices


@functools.cache
def _module_class():
    import torch
    import torch.nn.functional as F
    from torch import nn

    class MultiheadAttentionLayer(nn.Module):
        def __init__(self, hid_dim: int, n_heads: int, dropout: float = 0.1, pitfall: bool = False,
                     bias: bool = True):
            super().__init__()
            self.hid_dim, self.n_heads, self.head_dim = hid_dim, n_heads, hid_dim // n_heads
            self.fc_q = nn.Linear(hid_dim, hid_dim, bias=bias, dtype=torch.float64)
            self.fc_k = nn.Linear(hid_dim, hid_dim, bias=bias, dtype=torch.float64)
            self.fc_v = nn.Linear(hid_dim, hid_dim, bias=bias, dtype=torch.float64)
            self.fc_o = nn.Linear(hid_dim, hid_dim, bias=bias, dtype=torch.float64)
            self.p, self.pitfall = dropout, pitfall
            self.scale = math.sqrt(self.head_dim)

        def steps(self, x, mask=None) -> dict:
            """Every intermediate, by name. x [batch, len, hid_dim]; mask [batch, len], 0 = padding."""
            batch = x.shape[0]
            s = {"x": x}
            s["q"], s["k"], s["v"] = self.fc_q(x), self.fc_k(x), self.fc_v(x)         # [batch, len, hid_dim]
            for name in ("q", "k", "v"):                                              # [batch, heads, len, head_dim]
                s[f"{name}_heads"] = s[name].view(batch, -1, self.n_heads, self.head_dim).permute(0, 2, 1, 3)
            s["k_t"] = s["k_heads"].permute(0, 1, 3, 2)                               # [batch, heads, head_dim, len]
            energy = torch.matmul(s["q_heads"], s["k_t"]) / self.scale               # [batch, heads, len, len]
            s["energy"] = energy
            if mask is not None:
                energy = energy.masked_fill(mask[:, None, None, :] == 0, -1e10)      # mask [batch, 1, 1, len]
                s["masked_energy"] = energy
            s["alpha"] = torch.softmax(energy, dim=-1)                               # [batch, heads, len, len]
            if self.pitfall:                                                  # tutorial 3's line: always drops
                s["alpha_dropped"] = F.dropout(s["alpha"], p=self.p)
            else:
                s["alpha_dropped"] = F.dropout(s["alpha"], p=self.p, training=self.training)
            s["a_heads"] = torch.matmul(s["alpha_dropped"], s["v_heads"])            # [batch, heads, len, head_dim]
            s["a"] = s["a_heads"].permute(0, 2, 1, 3).contiguous().view(batch, -1, self.hid_dim)  # [batch, len, hid_dim]
            s["output"] = self.fc_o(s["a"])                                           # [batch, len, hid_dim]
            return s

        def forward(self, x, mask=None):
            s = self.steps(x, mask)
            return s["output"], s["alpha"]

    return MultiheadAttentionLayer


def mha_module(hid_dim: int, n_heads: int, dropout: float = 0.1, pitfall: bool = False, bias: bool = True,
               seed: int = 0):
    """A fresh torch MultiheadAttentionLayer (float64), torch's default Linear init drawn from
    `seed` without moving torch's global random state."""
    import torch
    _check_int("hid_dim", hid_dim, 1, 512)
    _check_int("n_heads", n_heads, 1, 16)
    check_heads(hid_dim, n_heads)
    if not 0 <= dropout < 1:
        raise ConfigError(f"dropout={dropout:g} is out of range; use 0 ≤ p < 1.")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return _module_class()(hid_dim, n_heads, dropout, pitfall, bias)


def from_numpy_weights(w_q, w_k, w_v, w_o, n_heads: int, biases=None, dropout: float = 0.0,
                       pitfall: bool = False):
    """The torch module holding our (d_model, d_model) matrices; biases: (b_q, b_k, b_v, b_o) or None."""
    import torch
    module = mha_module(np.shape(w_q)[0], n_heads, dropout, pitfall, bias=biases is not None)
    with torch.no_grad():
        for i, (fc, w) in enumerate(zip((module.fc_q, module.fc_k, module.fc_v, module.fc_o), (w_q, w_k, w_v, w_o))):
            fc.weight.copy_(torch.as_tensor(np.asarray(w, dtype=np.float64).T))   # torch stores Wᵀ
            if biases is not None:
                fc.bias.copy_(torch.as_tensor(np.asarray(biases[i], dtype=np.float64)))
    return module


def seeded_weights(d_model: int, seed: int = 0) -> tuple[np.ndarray, ...]:
    """W_q, W_k, W_v, W_o, each (d_model, d_model), N(0, 1/d_model), one generator each."""
    return tuple(init_weight(seed, f"mha_w_{name}", (d_model, d_model), d_model) for name in "qkvo")


def seeded_biases(d_model: int, seed: int = 0) -> tuple[np.ndarray, ...]:
    """b_q, b_k, b_v, b_o, each (d_model,), N(0, 0.1²), one generator each."""
    return tuple(init_bias(seed, f"mha_b_{name}", (d_model,)) for name in "qkvo")


def _torch_mask(n: int, pad):
    import torch
    mask = torch.ones(1, n, dtype=torch.long)            # [batch=1, len]: 1 = real token
    mask[0, list(pad)] = 0
    return mask


def compare_with_numpy(x, w_q, w_k, w_v, w_o, n_heads: int, pad=()) -> dict:
    """Max |torch − numpy| of the output and the weights, torch module in eval mode.

    x (n, d_model); pad lists key positions hidden by the padding mask (numpy:
    attention.padding_mask, torch: masked_fill(mask == 0, -1e10)).
    """
    import torch
    x = np.asarray(x, dtype=np.float64)
    n = x.shape[0]
    output, weights = att.multi_head_attention(x, x, w_q, w_k, w_v, w_o, n_heads,
                                               att.padding_mask(n, n, pad) if pad else None)
    module = from_numpy_weights(w_q, w_k, w_v, w_o, n_heads, dropout=0.1).eval()
    with torch.no_grad():
        out_t, alpha_t = module(torch.as_tensor(x)[None], _torch_mask(n, pad) if pad else None)
    return {"output": float(np.max(np.abs(output - out_t[0].numpy()))),
            "weights": float(np.max(np.abs(weights - alpha_t[0].numpy())))}


def _run(module, x, pad, mode: str, dropout_seed: int) -> dict:
    """Run the module's steps under a fixed dropout draw, without touching torch's global RNG."""
    import torch
    module.train(mode == "train")
    with torch.random.fork_rng(devices=[]), torch.no_grad():
        torch.manual_seed(dropout_seed)
        steps = module.steps(torch.as_tensor(np.asarray(x, dtype=np.float64))[None],
                             _torch_mask(len(x), pad) if pad else None)
    return {k: v.numpy().copy() for k, v in steps.items()}


def dropout_at_inference(x, n_heads: int, p: float = 0.1, seed: int = 0, dropout_seed: int = 0) -> dict:
    """The same weights run three ways, to show seed 002's dropout mistake.

    Returns numpy arrays and numbers: reference (numpy MHA, no dropout), eval / pitfall /
    train outputs (n, d_model) and their dropped weights alpha_* (heads, n, n), and
    max |output − reference| for each. eval matches the reference; pitfall (seed 002's
    F.dropout without the training flag, module in eval mode) does not.
    """
    x = np.asarray(x, dtype=np.float64)
    w = seeded_weights(x.shape[1], seed)
    reference, weights = att.multi_head_attention(x, x, *w, n_heads)
    result = {"reference": reference, "weights": weights}
    for mode in MODES:
        module = from_numpy_weights(*w, n_heads, dropout=p, pitfall=mode == "pitfall")
        steps = _run(module, x, (), "train" if mode == "train" else "eval", dropout_seed)
        result[mode] = steps["output"][0]
        result[f"alpha_{mode}"] = steps["alpha_dropped"][0]
        result[f"diff_{mode}"] = float(np.max(np.abs(steps["output"][0] - reference)))
    return result


STEP_AXES = {
    "x": ("batch", "n", "hid_dim"), "q": ("batch", "n", "hid_dim"), "k": ("batch", "n", "hid_dim"),
    "v": ("batch", "n", "hid_dim"), "q_heads": ("batch", "head", "n", "head_dim"),
    "k_heads": ("batch", "head", "n", "head_dim"), "v_heads": ("batch", "head", "n", "head_dim"),
    "k_t": ("batch", "head", "head_dim", "n"), "energy": ("batch", "head", "n_q", "n_k"),
    "masked_energy": ("batch", "head", "n_q", "n_k"), "alpha": ("batch", "head", "n_q", "n_k"),
    "alpha_dropped": ("batch", "head", "n_q", "n_k"), "a_heads": ("batch", "head", "n", "head_dim"),
    "a": ("batch", "n", "hid_dim"), "output": ("batch", "n", "hid_dim"),
}
def linear_formula(out: str, inp: str, weight: str, bias: bool) -> str:
    """An nn.Linear in the app's notation: 'Q = x W_Q (+ b_Q)'. fc.weight holds W_Qᵀ (out × in), so
    fc(x) = x · fc.weightᵀ (+ fc.bias) = x W_Q (+ b_Q). The bias term only when the module has one."""
    return rf"{out} = {inp}\, W_{weight}" + (rf" + b_{weight}" if bias else "")


def step_text(key: str, bias: bool, mode: str, masked: bool, p: float, n_heads: int) -> tuple[str, str, tuple, str]:
    """(title, LaTeX, inputs, why) of one step of the module, in the app's notation (docs/notation.md):
    Ŝ / S̃ the scores, A the weights, C the context, O the output, heads h = 0 … H−1; torch's names
    (energy, alpha, a) in the titles, which quote the code. Built from the module that ran: biases only
    when it has them, the dropout formula only when it drops, S̃ only when a mask was applied."""
    names = {"q": "Q", "k": "K", "v": "V"}
    heads = r"h = 0, \dots, H-1" + (rf" = {n_heads - 1}" if n_heads > 1 else "")
    if key == "x":
        return ("x", r"x = X \text{ with a batch axis: } x \in \mathbb{R}^{1 \times n \times \text{hid\_dim}}", (),
                "A batch of one sentence (the sidebar's X): PyTorch code keeps a batch axis first.")
    if key in names:
        name = names[key]
        return (f"{name} = fc_{key}(x)", linear_formula(name, "x", name, bias), ("x",),
                f"nn.Linear stores its weight transposed: fc_{key}.weight holds W_{name}ᵀ (out × in), and "
                f"fc_{key}(x) = x · fc_{key}.weightᵀ" + (f" + fc_{key}.bias = x W_{name} + b_{name}" if bias else
                                                         f" = x W_{name} (built with bias=False: no b_{name})")
                + ". One matrix for all heads at once.")
    if key in ("q_heads", "k_heads", "v_heads"):
        name = names[key[0]]
        title = {"q": "Q.view(bs, -1, heads, head_dim).permute(0, 2, 1, 3)", "k": "K split into heads",
                 "v": "V split into heads"}[key[0]]
        why = ("view cuts hid_dim into H heads × head_dim; permute brings heads before len, so each head h is a "
               "separate (len, head_dim) matrix." if key == "q_heads" else
               f"The same split for the {'keys' if key == 'k_heads' else 'values'}.")
        return (title, rf"{name}_h = {name}_{{[0,\,:,\, h d_k : (h+1) d_k]}},\quad d_k = \text{{head\_dim}} = "
                       rf"\text{{hid\_dim}} / H,\quad {heads}", (key[0],), why)
    if key == "k_t":
        return ("K.permute(0, 1, 3, 2)", r"K_h^\top", ("k_heads",), "Transpose the last two axes for the product.")
    if key == "energy":
        return ("energy = Q Kᵀ / √head_dim", r"\hat S_h = \frac{Q_h K_h^\top}{\sqrt{d_k}}", ("q_heads", "k_t"),
                "The scaled scores (the code calls them energy): torch.matmul multiplies the last two axes and "
                "batches over (batch, heads).")
    if key == "masked_energy":
        return ("energy.masked_fill(mask == 0, -1e10)",
                r"\tilde S_{h,ij} = \begin{cases} \hat S_{h,ij} & \text{mask}_j = 1 \text{ (a real token)} \\ "
                r"-10^{10} & \text{mask}_j = 0 \text{ (padding)} \end{cases}",
                ("energy",), "Padding keys get −10¹⁰ rather than −∞: after softmax their weight underflows to "
                             "exactly 0, as long as one key is real.")
    if key == "alpha":
        arg = r"\tilde S_h" if masked else r"\hat S_h"
        return ("alpha = softmax(energy, dim=-1)", rf"A_h = \mathrm{{softmax}}({arg})",
                ("masked_energy",) if masked else ("energy",),
                "The weights (the code calls them alpha): each row a distribution over the keys.")
    if key == "alpha_dropped":
        title = "F.dropout(alpha, p)" if mode == "pitfall" else "F.dropout(alpha, p, training=self.training)"
        if mode == "eval":
            return (title, r"A'_h = A_h", ("alpha",),
                    "module.eval(): F.dropout(..., training=self.training) passes the weights through unchanged.")
        drop = rf"A'_h = \frac{{m \odot A_h}}{{1 - p}},\ m_{{ij}} \sim \mathrm{{Bernoulli}}(1 - p),\ p = {p:g}"
        if mode == "train":
            return (title, drop, ("alpha",), f"Training: each weight is zeroed with probability {p:g} and the rest "
                                             f"scaled by 1/(1 − p), so rows no longer sum to 1.")
        return (title, drop, ("alpha",), "Tutorial 3's line F.dropout(alpha, p) has no training flag; it defaults "
                                         "to True, so weights are dropped even in eval mode: the pitfall.")
    if key == "a_heads":
        return ("alpha V", r"C_h = A'_h V_h", ("alpha_dropped", "v_heads"),
                "Each head's context vectors (the code calls them a).")
    if key == "a":
        return ("a.permute(0, 2, 1, 3).contiguous().view(bs, -1, hid_dim)",
                r"C = \left[\,C_0 \mid \cdots \mid C_{H-1}\,\right]" if n_heads > 1 else r"C = C_0",
                ("a_heads",), "Heads back beside each other: contiguous() because view needs memory in order.")
    if key == "output":
        return ("fc_o(a)", linear_formula("O", "C", "O", bias), ("a",),
                "fc_o.weight holds W_Oᵀ; fc_o mixes the heads into a row as wide as x"
                + ("." if bias else " (built with bias=False: no b_O)."))
    raise KeyError(key)


def pytorch_trace(x, n_heads: int, seed: int = 0, pad=(), p: float = 0.1, mode: str = "eval",
                  dropout_seed: int = 0, labels=None, bias: bool = LAYER_BIAS) -> Trace:
    """The torch module's intermediates as a Trace, with their PyTorch shapes (batch axis kept).

    x (n, hid_dim); weights from seeded_weights(hid_dim, seed); biases from seeded_biases with
    bias=True, none by default (the page's layer). mode: 'eval' (dropout off), 'train' (dropout on),
    'pitfall' (seed 002's module in eval mode). The formulas are the module's own (step_text):
    facts["bias"] says whether it has biases.
    """
    if mode not in MODES:
        raise ConfigError(f"mode={mode!r} is not one of {', '.join(MODES)}.")
    x = np.asarray(x, dtype=np.float64)
    n = x.shape[0]
    bad = [i for i in pad if not 0 <= i < n]
    if bad:
        raise ConfigError(f"Padding position {bad[0]} is outside the sentence (positions 0 to {n - 1}).")
    module = from_numpy_weights(*seeded_weights(x.shape[1], seed), n_heads,
                                biases=seeded_biases(x.shape[1], seed) if bias else None,
                                dropout=p, pitfall=mode == "pitfall")
    has_bias = module.fc_q.bias is not None
    steps = _run(module, x, tuple(pad), mode, dropout_seed)
    trace = Trace(tuple(labels) if labels is not None else tuple(str(i) for i in range(n)))
    for key, value in steps.items():
        title, formula, inputs, why = step_text(key, has_bias, mode, "masked_energy" in steps, p, n_heads)
        if key == "masked_energy" and np.all(value <= -1e9):
            why = ("Every key is padding: every score is −10¹⁰, so softmax spreads the weight evenly over the "
                   "padding instead of giving it 0.")
        trace.add(key, title, value, STEP_AXES[key], formula, inputs, why,
                  scale="sequential" if key.startswith("alpha") else "diverging")
    trace.facts.update(n_heads=n_heads, head_dim=x.shape[1] // n_heads, mode=mode, p=p, bias=has_bias)
    return trace


# ---- what each score function costs ------------------------------------------------------

def score_costs(n_q: int, n_k: int, d_k: int, d_a: int) -> list[dict]:
    """FLOPs, parameters and largest intermediate of each score function, as plain data.

    Counting: a multiply and an add are one FLOP each (a length-d dot product ≈ 2d), a
    division or a tanh one FLOP. Queries and keys both d_k wide; d_a is the additive
    score's hidden width. Each row: name, score (LaTeX), flops_formula, flops,
    params_formula, params, memory_formula, memory (entries of the largest array built).

    >>> [(c["name"], c["flops"], c["params"]) for c in score_costs(2, 3, 4, 5)]
    [('dot', 48, 0), ('scaled_dot', 54, 0), ('additive', 320, 45), ('bilinear', 112, 16)]
    """
    for name, value in (("n_q", n_q), ("n_k", n_k), ("d_k", d_k), ("d_a", d_a)):
        _check_int(name, value, 1, 1_000_000)
    nn = n_q * n_k
    return [
        {"name": "dot", "score": r"S_{ij} = q_i \cdot k_j",
         "flops_formula": r"2\, n_q n_k d_k", "flops": 2 * nn * d_k,
         "params_formula": "0", "params": 0,
         "memory_formula": r"n_q n_k", "memory": nn},
        {"name": "scaled_dot", "score": r"\hat S_{ij} = q_i \cdot k_j / \sqrt{d_k}",
         "flops_formula": r"2\, n_q n_k d_k + n_q n_k", "flops": 2 * nn * d_k + nn,
         "params_formula": "0", "params": 0,
         "memory_formula": r"n_q n_k", "memory": nn},
        {"name": "additive", "score": r"S_{ij} = v^\top \tanh(W_1^\top q_i + W_2^\top k_j)",
         "flops_formula": r"2\, d_k d_a (n_q + n_k) + 4\, n_q n_k d_a",
         "flops": 2 * d_k * d_a * (n_q + n_k) + 4 * nn * d_a,
         "params_formula": r"2\, d_k d_a + d_a", "params": 2 * d_k * d_a + d_a,
         "memory_formula": r"n_q n_k d_a", "memory": nn * d_a},
        {"name": "bilinear", "score": r"S_{ij} = q_i^\top W k_j",
         "flops_formula": r"2\, n_q d_k^2 + 2\, n_q n_k d_k", "flops": 2 * n_q * d_k * d_k + 2 * nn * d_k,
         "params_formula": r"d_k^2", "params": d_k * d_k,
         "memory_formula": r"\max(n_q d_k,\ n_q n_k)", "memory": max(n_q * d_k, nn)},
    ]
