"""The same alignment function as a torch.nn.Module (float64), for training, checked against the numpy one.
torch is imported inside the functions."""
from __future__ import annotations

import functools

import numpy as np

from .alignment import additive_attention, alignment_scores


@functools.cache
def _module_class():
    import torch
    from torch import nn

    class AdditiveAttention(nn.Module):
        """context, weights = model(s_prev (d_s,) or (T, d_s), h (n, d_h))."""

        def __init__(self, w, u, v):
            super().__init__()
            self.w = nn.Parameter(torch.as_tensor(np.array(w), dtype=torch.float64))   # (d_s, d_a)
            self.u = nn.Parameter(torch.as_tensor(np.array(u), dtype=torch.float64))   # (d_h, d_a)
            self.v = nn.Parameter(torch.as_tensor(np.array(v), dtype=torch.float64))   # (d_a,)

        def scores(self, s_prev, h):
            hidden = torch.tanh((s_prev @ self.w).unsqueeze(-2) + h @ self.u)   # (T?, n, d_a)
            return hidden @ self.v                                              # (T?, n)

        def forward(self, s_prev, h):
            weights = torch.softmax(self.scores(s_prev, h), dim=-1)             # (T?, n)
            return weights @ h, weights                                         # (T?, d_h), (T?, n)

    return AdditiveAttention


def torch_model(params: dict):
    """A torch.nn.Module (float64) starting from the numpy parameters {'w', 'u', 'v'}."""
    return _module_class()(params["w"], params["u"], params["v"])


def params_of(model) -> dict:
    """The numpy parameters of a torch model (copies), or a params dict as it is."""
    if isinstance(model, dict):
        return model
    return {k: getattr(model, k).detach().numpy().copy() for k in ("w", "u", "v")}


def compare_with_torch(s_prev, h, params: dict) -> dict:
    """Max |numpy − torch| for scores, weights and context of one step (float64 both)."""
    import torch
    model = torch_model(params)
    with torch.no_grad():
        s_t, h_t = torch.as_tensor(np.array(s_prev, dtype=np.float64)), torch.as_tensor(np.array(h, dtype=np.float64))
        context_t, weights_t = model(s_t, h_t)
        scores_t = model.scores(s_t, h_t)
    scores = alignment_scores(s_prev, h, params["w"], params["u"], params["v"])
    context, weights = additive_attention(s_prev, h, params)
    return {"scores": float(np.max(np.abs(scores - scores_t.numpy()))),
            "weights": float(np.max(np.abs(weights - weights_t.numpy()))),
            "context": float(np.max(np.abs(context - context_t.numpy())))}
