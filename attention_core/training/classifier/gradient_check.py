"""The classifier again in torch, and how far the hand-written gradients are from autograd and finite differences.

torch is imported inside the functions only: attention_core never pulls it in at import.

    >>> from attention_core.training.classifier.model import init_params
    >>> params = init_params(d_in=3, d_k=2, d_v=2, seed=0)
    >>> errors = check_gradients(params, np.eye(3), "neutral")
    >>> max(e["torch"] for e in errors.values()) < 1e-9, max(e["finite_differences"] for e in errors.values()) < 1e-6
    (True, True)
"""
from __future__ import annotations

import math

import numpy as np

from ...math.limits import ConfigError
from .backprop import loss_and_gradients
from .model import _as_input, _forward, label_index


def torch_forward(params: dict, x, y: int, n_heads: int = 1):
    """The loss as a torch scalar, from torch tensors (params by name, x (n, d_in)): autograd's side.
    Heads as torch code writes them: view (n, H, d) and permute to (H, n, d)."""
    import torch
    n, h = x.shape[0], n_heads
    q = (x @ params["w_q"] + params["b_q"]).view(n, h, -1).permute(1, 0, 2)    # (H, n, d_k)
    k = (x @ params["w_k"] + params["b_k"]).view(n, h, -1).permute(1, 0, 2)    # (H, n, d_k)
    v = (x @ params["w_v"] + params["b_v"]).view(n, h, -1).permute(1, 0, 2)    # (H, n, d_v)
    weights = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(q.shape[2]), dim=2)   # (H, n, n)
    context = (weights @ v).permute(1, 0, 2).reshape(n, -1)                    # (n, H·d_v)
    f = context @ params["w_o"] + params["b_o"]
    return -torch.log_softmax(f.mean(dim=0), dim=0)[y]


def torch_loss_and_gradients(params: dict, x, y, n_heads: int = 1) -> tuple[float, dict[str, np.ndarray]]:
    """(L, {name: ∂L/∂name}) from torch autograd, for numpy params and x; keys as loss_and_gradients."""
    import torch
    leaves = {name: _tensor(torch, a).requires_grad_() for name, a in {**params, "x": x}.items()}
    loss = torch_forward(leaves, leaves["x"], label_index(y), n_heads)
    loss.backward()
    return loss.item(), {name: t.grad.numpy() for name, t in leaves.items()}


def _tensor(torch, a):
    a = np.asarray(a, dtype=np.float64)
    return torch.from_numpy(a) if a.flags.writeable else torch.tensor(a)


def check_gradients(params: dict, x, y, entries=3, eps: float = 1e-5, seed: int = 0) -> dict[str, dict[str, float]]:
    """How far the hand gradients are from torch autograd and from central finite differences.

    Returns {name: {"torch": e, "finite_differences": e}} for each parameter and x, where e is
    the largest |hand − reference| over the compared entries divided by the largest |entry| of
    that gradient (autograd's), or by 1e-4 × the largest entry of all the gradients if that is
    larger: a gradient that is zero in exact arithmetic (∂L/∂b_K, see the backward pass) must
    not turn rounding noise of 1e-17 into a 100% error. 0 means identical. Finite differences
    (L(θ + ε) − L(θ − ε)) / 2ε are taken for `entries` seeded random entries of each array,
    or at the indices given as {name: [index, ...]}.
    """
    x, y = _as_input(params, x), label_index(y)
    _, hand = loss_and_gradients(params, x, y)
    _, auto = torch_loss_and_gradients(params, x, y)
    floor = 1e-4 * max(float(np.abs(g).max()) for g in auto.values()) or 1e-300
    rng = np.random.default_rng(seed)
    result = {}
    for name, grad in hand.items():
        scale = max(float(np.abs(auto[name]).max()), floor)
        value = x if name == "x" else params[name]
        if isinstance(entries, dict):
            picks = [tuple(int(j) for j in np.atleast_1d(i)) for i in entries.get(name, [])]
            if any(len(index) != value.ndim for index in picks):
                raise ConfigError(f"Entries of {name} need {value.ndim} indices each, as its shape {value.shape}.")
        else:
            flat = rng.choice(value.size, size=min(int(entries), value.size), replace=False)
            picks = [np.unravel_index(i, value.shape) for i in flat]
        fd_error = 0.0
        for index in picks:
            numeric = _central_difference(params, x, y, name, index, eps)
            fd_error = max(fd_error, abs(grad[index] - numeric) / scale)
        result[name] = {"torch": float(np.abs(grad - auto[name]).max() / scale), "finite_differences": float(fd_error)}
    return result


def _central_difference(params, x, y, name, index, eps) -> float:
    def loss_with(delta):
        p, xx = dict(params), x
        if name == "x":
            xx = x.copy()
            xx[index] += delta
        else:
            p[name] = params[name].copy()
            p[name][index] += delta
        return float(_forward(p, xx, y)["loss"])
    return (loss_with(eps) - loss_with(-eps)) / (2 * eps)

