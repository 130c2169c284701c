"""Hand-written backward pass vs torch autograd, as ratios measured in one run.

    python bench/backward.py [--repeats 200] [--threads=1]

1. One sentence at bench size (n=64, d_in = d_k = d_v = 256, float64): the backward pass
   alone (the forward already done: hand `_backward` on the forward's intermediates, torch
   `loss.backward()` on a retained graph), and forward + backward together. Median of repeats.
2. A full default training run on the shipped dataset (attention_core.classifier.DEFAULTS):
   the same `train` loop, once with the hand gradients, once with torch autograd's.

A ratio hand / torch below 1 means the hand-written pass is faster. Target: ≤ 1.
On a 2-core machine shared with other work, both BLAS thread pools slow down a lot when a
core is busy: run it on a quiet machine, or with --threads=1 (numpy's OpenBLAS and torch alike).
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

from attention_core import classifier as clf  # noqa: E402
from attention_core.math.embeddings import glove_vocabulary  # noqa: E402


def seconds(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def block_medians(fns: dict, repeats: int, rounds: int = 5, warmup: int = 5) -> dict[str, float]:
    """Median seconds of each function, timed in blocks taken in turns (a×k, b×k, a×k, ...):
    neither side gains from running second (allocator state is shared by the process), and
    neither pays for the other's thread pool still spinning (a pause before every block)."""
    for fn in fns.values():
        fn()
    times = {name: [] for name in fns}
    per_block = max(1, repeats // rounds)
    for _ in range(rounds):
        for name, fn in fns.items():
            time.sleep(0.05)
            for _ in range(warmup):
                fn()
            times[name] += [seconds(fn) for _ in range(per_block)]
    return {name: statistics.median(t) for name, t in times.items()}


def bench_one_sentence(n: int, d: int, repeats: int) -> dict[str, float]:
    import torch
    rng = np.random.default_rng(0)
    params = clf.init_params(d, d, d, seed=0)
    x = rng.standard_normal((n, d))
    y = 2

    # the backward pass alone: both sides start from a forward pass already done
    cache = clf._forward(params, x, y)
    leaves = {name: torch.tensor(a).requires_grad_() for name, a in {**params, "x": x}.items()}
    loss = clf.torch_forward(leaves, leaves["x"], y)

    def torch_backward():
        for t in leaves.values():
            t.grad = None
        loss.backward(retain_graph=True)

    return block_medians({
        "hand backward": lambda: clf._backward(params, cache, y),
        "torch backward": torch_backward,
        # forward + backward: numpy in, numpy gradients out
        "hand forward+backward": lambda: clf.loss_and_gradients(params, x, y),
        "torch forward+backward": lambda: clf.torch_loss_and_gradients(params, x, y),
    }, repeats)


def bench_training(repeats: int) -> dict[str, float]:
    d = clf.DEFAULTS
    samples, _ = clf.encode_dataset(clf.load_dataset(), glove_vocabulary(), d["positional"])
    params = clf.init_params(samples[0].x.shape[1], d["d_k"], d["d_v"], seed=d["seed"])

    def run(gradients):
        for state in clf.train(params, samples, d["lr"], d["epochs"], d["batch_size"], gradients=gradients):
            pass
        return state

    results, accuracy, times = {}, {}, {"hand": [], "torch": []}
    gradients = {"hand": clf.loss_and_gradients, "torch": clf.torch_loss_and_gradients}
    for _ in range(repeats):
        for label in ("hand", "torch"):
            time.sleep(0.05)
            start = time.perf_counter()
            accuracy[label] = run(gradients[label])["accuracy"]
            times[label].append(time.perf_counter() - start)
    results = {label: statistics.median(t) for label, t in times.items()}
    results["accuracy"] = accuracy
    results["sentences"] = len(samples)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=200, help="repeats per one-sentence timing (median)")
    parser.add_argument("--train-repeats", type=int, default=3, help="repeats of the training run (median)")
    parser.add_argument("-n", type=int, default=64, help="words in the bench sentence")
    parser.add_argument("-d", type=int, default=256, help="d_in = d_k = d_v")
    parser.add_argument("--threads", help="threads for numpy's BLAS and torch (default: theirs)")
    args = parser.parse_args()
    import torch
    print(f"numpy {np.__version__} (BLAS threads: {THREADS or 'default'}), torch {torch.__version__} "
          f"({torch.get_num_threads()} threads), float64, load average {os.getloadavg()[0]:.2f}")

    one = bench_one_sentence(args.n, args.d, args.repeats)
    print(f"\nOne sentence, n={args.n}, d_in=d_k=d_v={args.d} (median of {args.repeats}):")
    for key, seconds in one.items():
        print(f"  {key:<24} {seconds * 1e3:8.3f} ms")
    print(f"  ratio hand / torch, backward alone:      {one['hand backward'] / one['torch backward']:.2f}")
    print(f"  ratio hand / torch, forward + backward:  "
          f"{one['hand forward+backward'] / one['torch forward+backward']:.2f}")

    run = bench_training(args.train_repeats)
    d = clf.DEFAULTS
    print(f"\nDefault training run: {d['epochs']} epochs × {run['sentences']} sentences = "
          f"{d['epochs'] * run['sentences']} SGD steps, d_k=d_v={d['d_k']}, "
          f"lr={d['lr']} (median of {args.train_repeats}):")
    print(f"  hand gradients   {run['hand']:7.3f} s   final accuracy {run['accuracy']['hand']:.3f}")
    print(f"  torch autograd   {run['torch']:7.3f} s   final accuracy {run['accuracy']['torch']:.3f}")
    print(f"  ratio hand / torch, training run:        {run['hand'] / run['torch']:.2f}")


if __name__ == "__main__":
    main()
