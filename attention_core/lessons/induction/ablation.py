"""Ablation: zero one head's output and measure how much worse the model copies.

Head h of layer l writes C_h W_O^{(h)} into the stream, where W_O^{(h)} is the block of d_v rows of W_O that
multiplies head h's columns of C = [C_0 | … | C_{H−1}]. Zeroing those rows of W_O removes exactly that term
(O = Σ_h C_h W_O^{(h)}) and nothing else: every other head, and layer 0's heads' inputs to layer 1, stay as
they were. The model is then run again with its own forward pass, and the copy loss measured:

    copy loss = − mean over the repeated sequences and the positions i = half … n−2 of log p(x_{i+1} | x_{≤i})

the cross-entropy where a copier knows the answer (sequence.copy_positions). Its change, ablated − intact, says
how much the model leaned on that head.
"""
from __future__ import annotations

import numpy as np

from ...training.lm.model import D_HEAD, N_HEADS, lm_trace, token_labels
from .sequence import copy_positions, token_names


def ablated(params: dict, layer: int, head: int) -> dict:
    """The parameters with head `head` of layer `layer` silenced: its d_v rows of W_O set to 0."""
    out = dict(params)
    w_o = np.array(params[f"l{layer}.w_o"], dtype=np.float64)                # (H·d_v, d_model)
    w_o[head * D_HEAD:(head + 1) * D_HEAD] = 0.0
    out[f"l{layer}.w_o"] = w_o
    return out


def log_probs(logits: np.ndarray) -> np.ndarray:
    """log softmax of each row (n, |V|), computed stably."""
    z = logits - logits.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


def copy_loss(params: dict, batch: np.ndarray) -> float:
    """The mean cross-entropy of the next token over the second copies of a batch (rows of 2·half ids)."""
    at = copy_positions(np.shape(batch)[-1])
    losses = []
    for ids in batch:
        trace = lm_trace(params, ids, token_labels([]), tokens=token_names(ids))
        lp = log_probs(trace["logits"].value)                                  # (n, |V|)
        losses.append(-lp[at, np.asarray(ids)[at + 1]])
    return float(np.mean(losses))


def ablation_table(params: dict, batch: np.ndarray) -> dict:
    """{"intact": copy loss, "ablated": (layer, head) copy loss with that head zeroed, "change": ablated − intact}."""
    layers = sum(1 for name in params if name.endswith(".w_o"))
    intact = copy_loss(params, batch)
    loss = np.array([[copy_loss(ablated(params, l, h), batch) for h in range(N_HEADS)] for l in range(layers)])
    return {"intact": intact, "ablated": loss, "change": loss - intact}
