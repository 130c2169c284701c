"""What each head does, as a number: the previous-token score, the induction (prefix-matching) score, and the
copy loss, measured on repeated random tokens (task.repeated_tokens), as Olsson et al. (2022) measure them.

    previous-token score of head h = mean over queries i ≥ 1 of A_h[i, i − 1]
        the attention a token pays to the token just before it;
    induction score of head h = mean over queries i that have an earlier occurrence of their token of
        Σ_{j ≤ i : token[j − 1] = token[i]} A_h[i, j]
        the attention a token pays to the tokens that FOLLOWED earlier occurrences of it (Olsson et al.'s
        "prefix matching": [A][B] … [A] attends to [B]); on `half` tokens repeated twice, A_h[i, i − half + 1];
    copy loss = mean over the positions whose next token lies inside the repeat, after its first token, of
        −log p(next token): ln 31 ≈ 3.43 nats for a model that cannot copy, 0 for one that copies perfectly.

Both scores lie in [0, 1]: 1 means all the head's attention goes where the score looks. One version reads the
float64 forward pass (numpy, for the pages); one reads a torch batch (for the training loop; torch imported
inside it).
"""
from __future__ import annotations

import numpy as np

from .model import lm_trace
from .task import repeat_copy_targets


def induction_targets(ids: np.ndarray) -> np.ndarray:
    """(…, n, n) bool: key j is a target of query i when j ≤ i, j ≥ 1 and token[j − 1] = token[i]."""
    ids = np.asarray(ids)
    n = ids.shape[-1]
    before = np.concatenate([np.full(ids.shape[:-1] + (1,), -1), ids[..., :-1]], axis=-1)   # token[j − 1]
    same = ids[..., :, None] == before[..., None, :]                                        # (…, n_q, n_k)
    return same & np.tri(n, dtype=bool)


def previous_token_score(weights: np.ndarray) -> np.ndarray:
    """weights (…, H, n, n) -> (H,): mean of A[i, i − 1] over the queries i ≥ 1 (and over the leading axes)."""
    w = np.asarray(weights)
    n = w.shape[-1]
    diag = w[..., np.arange(1, n), np.arange(n - 1)]                          # (…, H, n − 1)
    return np.moveaxis(diag, -2, 0).reshape(w.shape[-3], -1).mean(axis=1)


def induction_score(weights: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """weights (b, H, n, n) and ids (b, n) -> (H,): the attention on the induction targets, averaged over the
    queries that have one."""
    w = np.asarray(weights)
    targets = induction_targets(ids)                                          # (b, n, n)
    rows = targets.any(axis=-1)                                               # (b, n): queries with a target
    on_targets = (w * targets[:, None]).sum(axis=-1)                          # (b, H, n)
    return (on_targets * rows[:, None]).sum(axis=(0, 2)) / max(rows.sum(), 1)


def copy_loss(logits: np.ndarray, ids: np.ndarray, copyable: np.ndarray | None = None) -> float:
    """logits (b, n, |V|) for ids (b, n): the mean −log p(ids[i + 1]) over the copyable positions i (default:
    repeated tokens' second half)."""
    logits, ids = np.asarray(logits, dtype=np.float64), np.asarray(ids)
    copyable = repeat_copy_targets(ids) if copyable is None else np.asarray(copyable)
    z = logits[:, :-1] - logits[:, :-1].max(axis=-1, keepdims=True)
    log_p = z - np.log(np.exp(z).sum(axis=-1, keepdims=True))                 # (b, n − 1, |V|)
    nll = -np.take_along_axis(log_p, ids[:, 1:, None], axis=-1)[..., 0]       # (b, n − 1)
    mask = copyable[:, :-1]
    return float(nll[mask].mean())


def head_scores(params: dict, ids_batch: np.ndarray, labels=None) -> dict:
    """From the float64 forward pass (model.lm_trace) on each sequence of ids_batch (b, n): {"prev": (L, H),
    "induction": (L, H), "copy_loss": float, "weights": [(b, H, n, n) per layer]}."""
    ids_batch = np.atleast_2d(np.asarray(ids_batch))
    labels = labels or [f"token {k}" for k in range(int(params["w_u"].shape[1]))]
    traces = [lm_trace(params, row, labels) for row in ids_batch]
    n_layers = len(traces[0].facts["attention"])
    weights = [np.stack([t.facts["attention"][l]["weights"].value for t in traces]) for l in range(n_layers)]
    logits = np.stack([t["logits"].value for t in traces])                    # (b, n, |V|)
    return {"prev": np.stack([previous_token_score(w) for w in weights]),
            "induction": np.stack([induction_score(w, ids_batch) for w in weights]),
            "copy_loss": copy_loss(logits, ids_batch), "weights": weights}


def torch_scores(module, ids_batch: np.ndarray) -> dict:
    """The same numbers from a torch module (torch_model.build) on ids_batch (b, n), without gradients:
    {"prev": (L, H), "induction": (L, H), "copy_loss": float}."""
    import torch
    import torch.nn.functional as F

    ids = torch.as_tensor(np.asarray(ids_batch, dtype=np.int64))
    targets = torch.as_tensor(induction_targets(ids_batch))                   # (b, n, n)
    rows = targets.any(-1)                                                    # (b, n)
    with torch.no_grad():
        logits, weights = module(ids, with_weights=True)
        prev, ind = [], []
        for w in weights:                                                     # (b, H, n, n)
            prev.append(w.diagonal(offset=-1, dim1=-2, dim2=-1).mean(dim=(0, 2)))
            ind.append(((w * targets[:, None]).sum(-1) * rows[:, None]).sum(dim=(0, 2)) / rows.sum().clamp(min=1))
        mask = torch.as_tensor(repeat_copy_targets(ids_batch))[:, :-1]
        nll = F.cross_entropy(logits[:, :-1].transpose(1, 2).double(), ids[:, 1:], reduction="none")
    return {"prev": torch.stack(prev).double().numpy(), "induction": torch.stack(ind).double().numpy(),
            "copy_loss": float(nll[mask].mean())}
