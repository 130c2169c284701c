"""Training the small model on the copy task: seeded, reproducible, with the heads' scores logged as it learns.

    θ₀ ~ seeded start (numpy: embeddings N(0, 1), weights U(±1/√fan_in), γ = 1, β = 0: torch's defaults)
    for step 1 … STEPS:  a batch of 32 copy-task sequences (task.batch), loss = mean −log p(next token),
                         AdamW(lr = 3e-3, β = (0.9, 0.999), weight decay 0.01) on θ

Every `log_every` steps the history gets a row: the step, the training loss (the mean over the steps since the
last row), the copy loss and both scores of every head on fixed repeated random tokens (scores.py), and whatever
`snapshot(params)` returns of the weights at that step (the induction lesson keeps every head's pattern and the
K-composition: lessons.induction.snapshot), so the run can be replayed step by step. The loss
sits on a plateau at ln 31 ≈ 3.43 nats (nothing before the repeat is predictable, and the model cannot yet
copy), then drops when a previous-token head in layer 0 and induction heads in layer 1 form: drop_step finds
where, from the history. Bit-reproducible on one machine: the seeds fix the start and the batches, and the
torch thread count is fixed while it trains (a sum split over other threads rounds differently).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ...forward.transformer import Arch
from ...math.limits import ConfigError
from .model import ARCH, D_HEAD, D_MODEL, N_CTX, N_HEADS, VOCAB
from .scores import torch_scores
from .task import BATCH, batch, repeated_tokens

LR = 3e-3
STEPS = 1500                # the default run (the steps box and the shipped run): the drop near step 800, then the heads sharpen
LOG_EVERY = 50
THREADS = 1                 # one torch thread: bit-reproducible (two split sums differently from run to run)
EVAL_SEED = 1234            # the repeated random tokens the scores are measured on (16 sequences of 20 + 20)
EVAL_SEQS = 16
DROP_NATS = 0.5             # the drop: the first logged step where the copy loss is this far below ln 31
PLATEAU_NATS = 0.1          # the plateau: the copy loss within this of ln 31 (or above it)
LOG_ROWS = 40               # a long run logs less often: at most LOG_ROWS + 1 rows (log_every_for), so that with its
                            # snapshots it stays within a room's 400 KB (measured: 292 KB for the default run's 31 rows, ≈ 5 KB a row)
PATTERN_LEVELS = 255        # a run keeps each head's pattern to the nearest 1/255 (uint8): kept()


@dataclass
class Result:
    params: dict | None         # float32, as trained; None if the run diverged (keep the previous weights)
    history: dict               # step (m,), loss (m,), copy_loss (m,), prev (m, L, H), induction (m, L, H)
    status: str                 # "done" | "stopped" (the callback returned False) | "diverged"
    message: str = ""
    seconds: float = 0.0
    steps: int = 0              # optimiser steps taken
    start: dict = field(default_factory=dict)   # the step-0 weights (float32)


def init_params(seed: int = 0, arch: Arch = ARCH, d_model: int = D_MODEL, n_heads: int = N_HEADS,
                d_head: int = D_HEAD) -> dict[str, np.ndarray]:
    """The seeded step-0 weights, float32, with torch's default initialisers drawn by numpy."""
    rng = np.random.default_rng([seed, 0])
    uniform = lambda shape, fan_in: rng.uniform(-1, 1, shape) / np.sqrt(fan_in)
    p = {"tok_emb": rng.standard_normal((VOCAB, d_model)), "pos_emb": rng.standard_normal((N_CTX, d_model))}
    for l in range(arch.n_layers):
        for norm in ("ln1", "ln2") if arch.mlp else ("ln1",):
            p[f"l{l}.{norm}.g"] = np.ones(d_model)
            if arch.norm == "layer":
                p[f"l{l}.{norm}.b"] = np.zeros(d_model)
        for name in ("w_q", "w_k", "w_v"):
            p[f"l{l}.{name}"] = uniform((d_model, n_heads * d_head), d_model)
        p[f"l{l}.w_o"] = uniform((n_heads * d_head, d_model), n_heads * d_head)
        if arch.mlp:
            d_ff = arch.d_ff_mult * d_model
            p.update({f"l{l}.w_1": uniform((d_model, d_ff), d_model), f"l{l}.b_1": uniform(d_ff, d_model),
                      f"l{l}.w_2": uniform((d_ff, d_model), d_ff), f"l{l}.b_2": uniform(d_model, d_ff)})
    if arch.final_norm:
        p["ln_f.g"] = np.ones(d_model)
        if arch.norm == "layer":
            p["ln_f.b"] = np.zeros(d_model)
    p["w_u"] = uniform((d_model, VOCAB), d_model)
    return {k: v.astype(np.float32) for k, v in p.items()}


def train(seed: int = 0, steps: int = STEPS, lr: float = LR, fixed_offset: bool = False, log_every: int = LOG_EVERY,
          callback=None, threads: int = THREADS, params: dict | None = None, arch: Arch = ARCH,
          n_heads: int = N_HEADS, snapshot=None) -> Result:
    """Train from the seeded start (or from `params`); callback(step, loss, copy_loss, scores) after each history
    row, scores = {"prev": (L, H), "induction": (L, H)} and the snapshot's arrays; it returning False stops the run
    there. snapshot(params: float32 numpy weights) -> {name: array}: its arrays join the history, one per row."""
    import torch
    import torch.nn.functional as F

    from .torch_model import build

    if not (isinstance(steps, int) and 0 <= steps <= 100_000 and log_every >= 1 and np.isfinite(lr) and lr > 0):
        raise ConfigError("Training takes 0 to 100,000 steps, a history row every 1 or more steps, and a positive "
                          "learning rate.")
    params = params or init_params(seed, arch, n_heads=n_heads)
    start = {k: np.asarray(v, dtype=np.float32) for k, v in params.items()}
    old_threads = torch.get_num_threads()
    torch.set_num_threads(threads)
    torch.manual_seed(seed)
    try:
        module = build(start, arch, n_heads)
        opt = torch.optim.AdamW(module.parameters(), lr=lr)
        rng = np.random.default_rng([seed, 1])
        probe = repeated_tokens(EVAL_SEED, EVAL_SEQS)
        rows, losses, status, message = [], [], "done", ""
        t0 = time.perf_counter()
        for step in range(steps + 1):
            b = batch(rng, BATCH, fixed_offset)
            ids = torch.from_numpy(b.ids)
            logits = module(ids[:, :-1])                                      # (b, N_CTX, |V|)
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))
            value = float(loss.detach())
            if not np.isfinite(value):
                status = "diverged"
                message = (f"The loss became {value} at step {step}: the updates (learning rate {lr:g}) grew too "
                           "large. Training stopped, and the weights from before the run stay.")
                break
            losses.append(value)
            if step % log_every == 0 or step == steps:
                s = torch_scores(module, probe)
                snap = {} if snapshot is None else snapshot(module.params())
                rows.append((step, float(np.mean(losses)), s["copy_loss"], s["prev"], s["induction"], snap))
                losses = []
                if callback is not None and callback(step, rows[-1][1], s["copy_loss"],
                                                     {"prev": s["prev"], "induction": s["induction"],
                                                      **snap}) is False:
                    status, message = "stopped", f"Stopped at step {step} of {steps}."
                    break
            if step == steps:
                break
            opt.zero_grad()
            loss.backward()
            opt.step()
        seconds = time.perf_counter() - t0
    finally:
        torch.set_num_threads(old_threads)
    history = {"step": np.array([r[0] for r in rows], dtype=np.int64),
               "loss": np.array([r[1] for r in rows]), "copy_loss": np.array([r[2] for r in rows]),
               "prev": np.array([r[3] for r in rows]).reshape(len(rows), arch.n_layers, n_heads),
               "induction": np.array([r[4] for r in rows]).reshape(len(rows), arch.n_layers, n_heads)}
    for key in (rows[0][5] if rows else {}):
        history[key] = np.stack([r[5][key] for r in rows])
    return Result(None if status == "diverged" else module.params(), history, status, message, seconds,
                  int(step), start)


def log_every_for(steps: int) -> int:
    """The steps between two history rows for a run of `steps`: LOG_EVERY, or a multiple of it so that the run logs
    at most LOG_ROWS + 1 rows (10,000 steps: every 250), which keeps a run with its snapshots small enough to
    travel to a room.

    >>> log_every_for(1000), log_every_for(2000), log_every_for(2001), log_every_for(10_000)
    (50, 50, 100, 250)
    """
    return LOG_EVERY * max(1, -(-int(steps) // (LOG_EVERY * LOG_ROWS)))


def kept(history: dict) -> dict:
    """The history as a run keeps it (the shipped files, a run that travels to a room, a session's run): every
    head's pattern to the nearest 1/PATTERN_LEVELS (uint8), the rest as it is. So every screen shows the same."""
    out = dict(history)
    if "patterns" in out and out["patterns"].dtype != np.uint8:
        out["patterns"] = np.rint(np.clip(out["patterns"], 0, 1) * PATTERN_LEVELS).astype(np.uint8)
    return out


def pattern_weights(history: dict, row: int) -> np.ndarray:
    """(layer, head, n, n) float64: every head's pattern at a history row, as kept (k / PATTERN_LEVELS)."""
    a = np.asarray(history["patterns"][row])
    return a.astype(np.float64) / PATTERN_LEVELS if a.dtype == np.uint8 else a.astype(np.float64)


def drop_step(history: dict, nats: float = DROP_NATS) -> int | None:
    """The step of the drop: the first logged step whose copy loss is `nats` below ln |V| (≈ 3.43 nats, the loss of
    a uniform guess, where the plateau sits: a model that cannot copy does no better on a repeat). None if the
    copy loss never falls that far (as with a fixed offset, whose model never learns to copy)."""
    steps, copy = np.asarray(history["step"]), np.asarray(history["copy_loss"])
    below = np.flatnonzero(copy <= np.log(VOCAB) - nats)
    return int(steps[below[0]]) if below.size else None


def plateau_end(history: dict, nats: float = PLATEAU_NATS) -> int | None:
    """The last logged step before the drop whose copy loss is still within `nats` of ln |V| or above it: where
    the plateau ends and the fall begins. None without a drop."""
    drop = drop_step(history)
    if drop is None:
        return None
    steps, copy = np.asarray(history["step"]), np.asarray(history["copy_loss"])
    flat = np.flatnonzero((steps < drop) & (copy >= np.log(VOCAB) - nats))
    return int(steps[flat[-1]]) if flat.size else int(steps[0])


def plateau_level(history: dict) -> float:
    """The copy loss the plateau sits at: its median over the logged steps before the drop (all, if none)."""
    steps, copy = np.asarray(history["step"]), np.asarray(history["copy_loss"])
    drop = drop_step(history)
    return float(np.median(copy if drop is None else copy[steps < drop]))
