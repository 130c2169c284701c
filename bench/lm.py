"""The small language model (Inside a transformer): a training run at the defaults, and the block's hand-written
backward pass against torch autograd, measured in one run.

    python bench/lm.py [--repeats 50] [--threads=1]

1. A training run as the induction page's Train button starts it: the seeded start, the default steps, the
   history logged every 50 steps; seconds against the issue's target of 30 s on a 2-core machine (ratio < 1
   meets it), the step where the copy loss drops and the scores at the end.
2. One training step's gradients on the small model (40 tokens, the shipped weights, float64), every block
   variant: the hand-written backward pass (reading the forward Trace) against torch autograd (forward +
   backward), median of repeats; and the largest difference between the two.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

_ARGS = " ".join(sys.argv[1:]).replace("--threads ", "--threads=").split()
THREADS = next((a.split("=", 1)[1] for a in _ARGS if a.startswith("--threads=")), None)
if THREADS:                 # before numpy and torch start their thread pools
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = THREADS

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import Table  # noqa: E402
from attention_core.forward.transformer import Arch  # noqa: E402
from attention_core.training.lm import shipped, train as lm_train  # noqa: E402
from attention_core.training.lm.backprop import autograd_gradients, backward  # noqa: E402
from attention_core.training.lm.model import N_HEADS, N_CTX, VOCAB  # noqa: E402
from attention_core.training.lm.step_trace import block_params  # noqa: E402

TARGET_SECONDS = 30.0


def training_run() -> Table:
    result = lm_train.train(seed=0)
    h = result.history
    drop = lm_train.drop_step(h)
    last = lambda key: float(np.max(h[key][-1][1 if key == "induction" else 0]))
    return Table(f"A training run at the defaults ({result.steps:,} steps, seed 0, {lm_train.THREADS} torch thread, "
                 f"load average {os.getloadavg()[0]:.2f})",
                 ["seconds", "ms a step", "target s", "ratio run / target", "drop at step", "copy loss at the end",
                  "best previous-token score (layer 0)", "best induction score (layer 1)"],
                 [[f"{result.seconds:.1f}", f"{result.seconds / max(result.steps, 1) * 1e3:.1f}", f"{TARGET_SECONDS:.0f}",
                   f"{result.seconds / TARGET_SECONDS:.2f}", drop, f"{float(h['copy_loss'][-1]):.2f}",
                   f"{last('prev'):.2f}", f"{last('induction'):.2f}"]],
                 [f"Status: {result.status}. The scores are measured every {lm_train.LOG_EVERY} steps on the same "
                  "repeated random tokens, inside the timed run."])


def backward_table(repeats: int) -> Table:
    rng = np.random.default_rng(0)
    ids = [int(i) for i in rng.integers(0, VOCAB, N_CTX)]
    labels = [str(i) for i in range(VOCAB)]
    base = shipped.load().params
    rows = []
    for arch in (Arch(n_layers=2, mlp=False), Arch(n_layers=2), Arch(n_layers=2, placement="post", norm="rms")):
        params, _ = block_params(base, arch)

        def hand():
            return backward(_trace(params, ids, labels, arch), params, ids)

        def torch_side():
            return autograd_gradients(arch, params, ids, N_HEADS)

        hand(), torch_side()
        times = {"hand": [], "torch": []}
        for _ in range(repeats):
            for name, fn in (("hand", hand), ("torch", torch_side)):
                t0 = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - t0)
        g_hand, g_torch = hand(), torch_side()
        diff = max(float(np.max(np.abs(g_hand[k] - g_torch[k]))) for k in g_torch if k in g_hand)
        th, tt = statistics.median(times["hand"]), statistics.median(times["torch"])
        what = f"{arch.placement}-norm, {'LayerNorm' if arch.norm == 'layer' else 'RMSNorm'}, MLP {'on' if arch.mlp else 'off'}"
        rows.append([what, f"{th * 1e3:.2f}", f"{tt * 1e3:.2f}", f"{th / tt:.2f}", f"{diff:.1e}"])
    import torch
    return Table(f"One training step's gradients, 2 layers, 40 tokens, float64 (median of {repeats}); torch "
                 f"{torch.__version__} ({torch.get_num_threads()} threads), load average {os.getloadavg()[0]:.2f}",
                 ["block", "hand forward + backward ms", "torch autograd ms", "ratio hand / torch", "max |hand − torch|"],
                 rows, ["The hand side runs the forward pass as the page does (every step a named Step, the "
                        "attention stages with their sentences), then the backward pass from that Trace."])


def _trace(params, ids, labels, arch):
    """The model's forward Trace for any block variant (model.lm_trace runs the shipped ARCH)."""
    from attention_core.forward.transformer import lm_input, run_transformer
    from attention_core.training.lm.model import attention_config
    tokens = [labels[i] for i in ids]
    return run_transformer(attention_config(tokens), arch, params, lm_input(params, ids), tokens, labels)


def measure(repeats: int = 50, train: bool = True) -> list[Table]:
    out = [training_run()] if train else []
    return out + [backward_table(repeats)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=50, help="repeats per gradient timing (median)")
    parser.add_argument("--no-train", action="store_true", help="leave the training run out")
    parser.add_argument("--threads", help="threads for numpy's BLAS and torch (default: theirs)")
    args = parser.parse_args()
    for t in measure(args.repeats, not args.no_train):
        print("\n" + t.text())


if __name__ == "__main__":
    main()
