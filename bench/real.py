"""A real checkpoint in the project's numpy forward against transformers on the same files, as ratios in one run.

    python bench/real.py [--layers N] [--tokens 32] [--repeats 5] [--threads 1] [--dir DIR] [--models gpt2,smollm2]

Two randomly initialised checkpoints with the exact shapes of GPT-2 small (124,439,808 parameters: 12 layers of
12 heads, d 768, 50,257 tokens, learned positions, tied W_U) and of HuggingFaceTB/SmolLM2-135M (134,515,008: 30
layers, 9 query heads over 3 KV heads, d 576, RoPE θ 100,000, SwiGLU, tied), made by transformers in this bench
(a child process; saved once in --dir as float32 .safetensors and reused) with a tokenizer trained by `tokenizers`.
Then, for each, two fresh processes on the same files, the project's and transformers' (eager attention, float32,
no gradients), each measuring:

  load        the project: load_model(folder) (config, tokenizer.json, the weights memory-mapped); transformers:
              AutoModelForCausalLM.from_pretrained + its fast tokenizer from the same tokenizer.json. Imports apart.
  forward     the same 32 token ids through every layer to the logits with every head's attention weights (the
              project: run_real, which keeps every step; transformers: output_attentions and output_hidden_states).
              The first forward after the load apart (the project's reads the memory-mapped weights in it), then
              the median of --repeats.
  memory      the process's peak resident memory (ru_maxrss) after the load and every forward, against the
              weights' float32 size.

And a page rerun with a real model loaded, nothing changed, in AppTest in a fresh process against the one-slider page
(a rerun of it just before each page's rerun, round by round; the ratio the median of the pairs' ratios, so that a
change of the machine's load weighs on both):
every page of the navigation's "A real model" section if it exists (ATTENTION_EXPLORER_REAL_MODEL_DIR naming the
GPT-2-shaped folder), else a stand-in page on the cached path (the model from st.cache_resource, the sentence's Trace from
st.cache_resource, one layer's attention weights drawn by ui.views.step_box, every head's heatmap, as the real pages
do).

Targets (issue 33, item 5): load ≤ 2x, forward ≤ 2x, memory ≤ 1.5x the weights, rerun ≤ 8x the one-slider page.
BLAS threads: OPENBLAS_NUM_THREADS, OMP_NUM_THREADS and MKL_NUM_THREADS are set to --threads (default 1) in every
child before numpy or torch starts, and torch.set_num_threads(--threads): both sides get the same cores. On this
2-core machine shared with other work, 1 thread is what a server's session gets anyway; say the load average.
--layers N keeps every other shape and cuts the layers (a quick run while building; not the figures to commit).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_ARGS = " ".join(sys.argv[1:]).replace("--threads ", "--threads=").split()
THREADS = next((a.split("=", 1)[1] for a in _ARGS if a.startswith("--threads=")), "1")
if __name__ == "__main__":                       # before numpy or torch starts (imported by report.py: its own flag)
    for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[_var] = THREADS

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._common import Table

TARGETS = {"load": 2.0, "forward": 2.0, "memory": 1.5, "rerun": 8.0}
DEFAULT_DIR = Path(tempfile.gettempdir()) / "attention_explorer_bench_real"
SENTENCE = "the cat sat on the mat and the dog sat on the log"

# the published shapes (config.json of gpt2 and HuggingFaceTB/SmolLM2-135M), as transformers' config arguments
SHAPES = {
    "gpt2": ("GPT-2 small", "gpt2", {"vocab_size": 50257, "n_positions": 1024, "n_embd": 768, "n_layer": 12,
                                     "n_head": 12, "bos_token_id": 50256, "eos_token_id": 50256}),
    "smollm2": ("SmolLM2-135M", "llama", {"vocab_size": 49152, "hidden_size": 576, "intermediate_size": 1536,
                                          "num_hidden_layers": 30, "num_attention_heads": 9, "num_key_value_heads": 3,
                                          "max_position_embeddings": 8192, "rope_theta": 100000.0,
                                          "rms_norm_eps": 1e-5, "tie_word_embeddings": True, "hidden_act": "silu",
                                          "bos_token_id": 0, "eos_token_id": 0}),
}
LAYERS_KEY = {"gpt2": "n_layer", "llama": "num_hidden_layers"}


def thread_env(threads: int) -> dict:
    return {var: str(threads) for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}


def load_average() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


# ----------------------------------------------------------------------------------------
# the checkpoints
# ----------------------------------------------------------------------------------------

MAKE_CODE = """
import json, sys, torch
from pathlib import Path
from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM
from tests.real_checkpoints import train_tokenizer
folder, family, kwargs = Path(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3])
torch.manual_seed(0)
config = (GPT2Config if family == "gpt2" else LlamaConfig)(**kwargs)
model = (GPT2LMHeadModel if family == "gpt2" else LlamaForCausalLM)(config)
model.save_pretrained(folder)
train_tokenizer(folder, "gpt2" if family == "gpt2" else "sentencepiece")
print(sum(p.numel() for p in model.parameters()))
"""


def checkpoint(which: str, directory: Path, layers: int | None, threads: int) -> tuple[Path, str]:
    """The folder of the random checkpoint with `which`'s shapes (made once, then reused); and its label."""
    label, family, kwargs = SHAPES[which]
    kwargs = dict(kwargs)
    if layers:
        kwargs[LAYERS_KEY[family]] = layers
        label += f", {layers} layer{'s' * (layers != 1)}"
    folder = directory / f"{which}-L{kwargs[LAYERS_KEY[family]]}"
    if not folder.is_dir():                                   # made whole in a scratch folder, then renamed
        import shutil

        scratch = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=directory))
        try:
            subprocess.run([sys.executable, "-c", MAKE_CODE, str(scratch), family, json.dumps(kwargs)], cwd=ROOT,
                           check=True, env={**os.environ, **thread_env(threads), "PYTHONPATH": str(ROOT)},
                           stdout=subprocess.DEVNULL)
            scratch.rename(folder)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    return folder, label


# ----------------------------------------------------------------------------------------
# one side, in its own process
# ----------------------------------------------------------------------------------------

def child(side: str, folder: Path, tokens: int, repeats: int, threads: int) -> dict:
    """Runs in the child process: import, load, forward (first and warm), peak memory. Returns what it measured."""
    import resource

    t0 = time.perf_counter()
    if side == "ours":
        import numpy as np

        from attention_core.training import real
    else:
        import numpy as np
        import torch
        from transformers import AutoModelForCausalLM, PreTrainedTokenizerFast
        torch.set_num_threads(threads)
    t_import = time.perf_counter() - t0

    t0 = time.perf_counter()
    if side == "ours":
        model = real.load_model(folder)
        vocab, n_params = model.config.vocab, model.n_parameters
    else:
        model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32, attn_implementation="eager")
        model.eval()
        PreTrainedTokenizerFast(tokenizer_file=str(folder / "tokenizer.json"))
        vocab, n_params = model.config.vocab_size, sum(p.numel() for p in model.parameters())
    t_load = time.perf_counter() - t0

    ids = [int(i) for i in np.random.default_rng(0).integers(0, vocab, tokens)]
    if side == "ours":
        def forward():
            trace = real.run_real(model, ids=ids)
            return trace["logits"].value[-1], trace.facts["attention"][-1]["weights"].value
    else:
        batch = torch.tensor([ids])

        def forward():
            with torch.no_grad():
                out = model(batch, output_attentions=True, output_hidden_states=True)
            return out.logits[0, -1].numpy(), out.attentions[-1][0].numpy()

    times = []
    for _ in range(repeats + 1):
        t0 = time.perf_counter()
        logits, weights = forward()
        times.append(time.perf_counter() - t0)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024          # Linux: kilobytes
    return {"import_s": t_import, "load_s": t_load, "first_s": times[0], "forward_s": statistics.median(times[1:]),
            "peak_bytes": peak, "weights_bytes": 4 * n_params, "n_params": n_params,
            "last_logits": [float(x) for x in logits[:8]], "last_weights_row": [float(x) for x in weights[0, -1, :8]]}


def run_side(side: str, folder: Path, tokens: int, repeats: int, threads: int) -> dict:
    out = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", side, "--folder", str(folder),
                          "--tokens", str(tokens), "--repeats", str(repeats), "--threads", str(threads)],
                         cwd=ROOT, capture_output=True, text=True, check=False,
                         env={**os.environ, **thread_env(threads), "PYTHONPATH": str(ROOT)})
    if out.returncode:
        raise RuntimeError(f"the {side} side failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def verdict(ratio: float, target: float) -> str:
    return f"{ratio:.2f}x ({'ok' if ratio <= target else 'OVER'} ≤ {target:g}x)"


def model_table(models: list[str], directory: Path, layers: int | None, tokens: int, repeats: int,
                threads: int) -> Table:
    before = load_average()
    rows = []
    for which in models:
        folder, label = checkpoint(which, directory, layers, threads)
        ours = run_side("ours", folder, tokens, repeats, threads)
        theirs = run_side("theirs", folder, tokens, repeats, threads)
        close = max(abs(a - b) for a, b in zip(ours["last_weights_row"], theirs["last_weights_row"]))
        weights = ours["weights_bytes"]
        rows.append([
            f"{label} ({ours['n_params']:,} parameters, {weights / 1e6:.0f} MB float32)",
            f"{ours['load_s']:.2f} / {theirs['load_s']:.2f}",
            f"{ours['load_s'] + ours['first_s']:.2f} / {theirs['load_s'] + theirs['first_s']:.2f}",
            verdict((ours["load_s"] + ours["first_s"]) / (theirs["load_s"] + theirs["first_s"]), TARGETS["load"]),
            f"{ours['import_s']:.2f} / {theirs['import_s']:.2f}",
            f"{ours['first_s']:.2f} / {theirs['first_s']:.2f}",
            f"{ours['forward_s'] * 1e3:.0f} / {theirs['forward_s'] * 1e3:.0f}",
            verdict(ours["forward_s"] / theirs["forward_s"], TARGETS["forward"]),
            f"{ours['peak_bytes'] / 1e6:.0f} / {theirs['peak_bytes'] / 1e6:.0f}",
            verdict(ours["peak_bytes"] / weights, TARGETS["memory"]),
            f"{theirs['peak_bytes'] / weights:.2f}x",
            f"{close:.1e}",
        ])
    return Table(f"A real checkpoint, the project's numpy forward (ours) against transformers (theirs), each in its own "
                 f"process on the same files; {tokens} tokens, median of {repeats} forwards after the first; "
                 f"{threads} BLAS/torch thread(s); load average {before} before, {load_average()} after",
                 ["checkpoint (random weights, the real shapes)", "load s ours / theirs",
                  "load + first forward s ours / theirs", "load ratio (load + first forward)",
                  "imports s ours / theirs", "first forward s ours / theirs", "forward ms ours / theirs",
                  "forward ratio", "peak memory MB ours / theirs", "ours / the weights",
                  "theirs / the weights", "max |Δ| a weights row"],
                 rows,
                 ["Ours loads by memory-mapping the .safetensors (config, tokenizer.json, shapes checked): the weights "
                  "are read from the file by the first forward, which is why it is slower than the next ones, and why "
                  "the load's ratio is taken until the first forward has ended on both sides. The files are in the "
                  "OS's page cache (made or read before): a cold disk adds the same read to both sides. "
                  "Peak memory is ru_maxrss of the whole process (Python, numpy or torch, the tokenizer and the "
                  "weights' pages, the forward's Trace: every step of every layer and head kept). The last column "
                  "checks that both sides computed the same attention (the last row of layer −1's head 0)."])


# ----------------------------------------------------------------------------------------
# a page rerun with a real model loaded
# ----------------------------------------------------------------------------------------

STAND_IN = '''import streamlit as st
from attention_core.training import real
from ui.views import step_box

FOLDER = {folder!r}


@st.cache_resource
def model(folder):
    return real.load_model(folder)


@st.cache_resource(max_entries=32)
def trace(folder, text):
    return real.run_real(model(folder), text)


text = st.text_input("Sentence", {sentence!r})
t = trace(FOLDER, text)
layer = st.slider("Layer", 0, len(t.facts["attention"]) - 1, 0)
st.write(" ".join(t.tokens))
step_box(t.facts["attention"][layer], "weights")
'''


def rerun_rows(folder: Path, repeats: int, root: Path) -> dict:
    """Runs in a child process (cwd and sys.path: `root`, the checkout whose pages are measured): the one-slider page
    and the real pages of root's navigation (or the stand-in), each in its own AppTest; in every round, each page's
    plain rerun right after one of the one-slider page, so that a machine whose load changes during the run weighs
    on the reference and the page alike. A page's ratio is the median of its reruns each over the one-slider rerun
    just before it; ms are medians. The reference's medians over the first and the second half of the run are
    kept too: far apart, the load changed while it ran."""
    from streamlit.testing.v1 import AppTest

    from bench._common import TRIVIAL_APP, sections

    def elements(node) -> int:
        children = getattr(node, "children", None)
        return 1 if children is None else sum(elements(c) for c in children.values())

    cpu: list[float] = []                          # the process's CPU time of the last timed run, ms

    def timed(at) -> float:
        c0, t0 = time.process_time(), time.perf_counter()
        at.run()
        cpu.append((time.process_time() - c0) * 1e3)
        return (time.perf_counter() - t0) * 1e3

    scratch = Path(tempfile.mkdtemp(prefix="real_rerun_"))
    (scratch / "one.py").write_text(TRIVIAL_APP)
    one = AppTest.from_file(str(scratch / "one.py")).run()
    pages = [p for section, ps in sections(root) for p in ps if section == "A real model"]
    apps = []
    for page in pages or [None]:
        if page is None:
            (scratch / "real_page.py").write_text(STAND_IN.format(folder=str(folder), sentence=SENTENCE))
            apps.append((STAND_IN_NAME, AppTest.from_file(str(scratch / "real_page.py"), default_timeout=600)))
        else:
            at = AppTest.from_file(str(root / "app.py"), default_timeout=600)
            at.switch_page(page.file)
            apps.append((page.url_path, at))
    first = {name: timed(at) for name, at in apps}
    for at in (one, *(at for _, at in apps)):
        at.run()
    reference: list[float] = []
    times: dict[str, list[float]] = {name: [] for name, _ in apps}
    ratios: dict[str, list[float]] = {name: [] for name, _ in apps}
    cpu_ratios: dict[str, list[float]] = {name: [] for name, _ in apps}
    for _ in range(repeats):
        for name, at in apps:                       # each page's rerun right after a rerun of the one-slider page
            reference.append(timed(one))
            times[name].append(timed(at))
            ratios[name].append(times[name][-1] / reference[-1])
            cpu_ratios[name].append(cpu[-1] / max(cpu[-2], 1e-3))
    half = len(reference) // 2
    rows = [{"page": name, "elements": elements(at._tree), "first": first[name],
             "plain": statistics.median(times[name]), "ratio": statistics.median(ratios[name]),
             "cpu_ratio": statistics.median(cpu_ratios[name]),
             "errors": len(at.exception)} for name, at in apps]
    return {"reference": statistics.median(reference), "before": statistics.median(reference[:half] or reference),
            "after": statistics.median(reference[half:]), "rows": rows, "pages": bool(pages)}


STAND_IN_NAME = "stand-in: one layer's weights, every head"


def rerun_table(folder: Path, repeats: int, threads: int, root: Path = ROOT) -> Table:
    """A page rerun with a real model loaded, nothing changed, against the one-slider page, in a fresh process."""
    before = load_average()
    out = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", "rerun", "--folder", str(folder),
                          "--repeats", str(repeats), "--threads", str(threads), "--root", str(root)],
                         cwd=root, capture_output=True, text=True, check=False,
                         env={**os.environ, **thread_env(threads), "PYTHONPATH": str(root),
                              "PYTHONDONTWRITEBYTECODE": "1", "ATTENTION_EXPLORER_REAL_MODEL_DIR": str(folder)})
    if out.returncode:
        raise RuntimeError(f"the rerun part failed:\n{out.stderr[-3000:]}")
    r = json.loads(out.stdout.strip().splitlines()[-1])
    rows = [[row["page"], row["elements"], f"{row['first']:.0f}", f"{row['plain']:.1f}",
             verdict(row["ratio"], TARGETS["rerun"]), f"{row['cpu_ratio']:.2f}x", row["errors"]] for row in r["rows"]]
    what = ("the navigation's \"A real model\" pages, ATTENTION_EXPLORER_REAL_MODEL_DIR naming the checkpoint"
            if r["pages"] else
            "a stand-in page (no \"A real model\" section in the navigation yet): the model from st.cache_resource, "
            "the sentence's Trace from st.cache_resource, one layer's weights drawn by ui.views.step_box")
    return Table(f"A page rerun with a real model loaded (the GPT-2-shaped checkpoint), nothing changed, AppTest in a "
                 f"fresh process; the one-slider page {r['reference']:.1f} ms (the first / the second half of the "
                 f"run: {r['before']:.1f} / {r['after']:.1f}), a rerun of it just before each page's; {repeats} rounds "
                 f"(every page once a round); ratio: the median of a page's rerun over the one-slider rerun just before "
                 f"it; load average {before} before, {load_average()} after",
                 ["page", "elements", "first run ms (the load and the forward in it)", "plain rerun ms", "ratio",
                  "CPU-time ratio", "errors"], rows, [f"Measured: {what}. What a page builds from the sentence's cached Trace and its "
                                    "own controls is kept beside the Trace (ui/cache.py beside: the next token's "
                                    "draw, its sentence and bars; the tokens' table; the grid of every head), so a "
                                    "rerun with nothing changed pays for Streamlit's elements and little else. "
                                    "The CPU-time ratio is the same pairs' ratio of the process's CPU time "
                                    "(time.process_time): what the reruns cost, whatever else the machine runs; the "
                                    "target is on the ratio of wall-clock times. What is left is Streamlit's per "
                                    "element cost, and a keyed widget's grows with what a visitor's state holds: in Streamlit 1.67 "
                                    "every keyed selectbox, number input, slider, text input or radio reads the "
                                    "whole of st.session_state (SessionState.filtered_state, for the check of a key set "
                                    "to None: streamlit/streamlit#8529), so a page's widgets times the state's "
                                    "keys; the heads page has the most (13 selectboxes, 2 number inputs, 7 charts "
                                    "that hold a selection)."])


def measure(models: list[str], directory: Path = DEFAULT_DIR, layers: int | None = None, tokens: int = 32,
            repeats: int = 5, threads: int = 1, rerun: bool = True, root: Path = ROOT) -> list[Table]:
    """The model table (every model of `models`: none, the rerun table alone), then the rerun table (if `rerun`)."""
    import datetime

    directory.mkdir(parents=True, exist_ok=True)
    out = [model_table(models, directory, layers, tokens, repeats, threads)] if models else []
    if out:
        out[0].notes.append(f"Measured {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC on "
                        f"{os.cpu_count()} cores" + (f", every model cut to {layers} layer{'s' * (layers != 1)} (a quick run)" if layers
                                                     else "") + ".")
    if rerun:
        folder, _ = checkpoint("gpt2", directory, layers, threads)
        out.append(rerun_table(folder, max(3 * repeats, 15), threads, root))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="gpt2,smollm2",
                    help="which shapes: gpt2, smollm2 (comma-separated; empty: the rerun part alone)")
    ap.add_argument("--layers", type=int, default=None, help="cut every model to N layers (a quick run)")
    ap.add_argument("--tokens", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=5, help="forwards (and reruns) after the first, median")
    ap.add_argument("--threads", type=int, default=1, help="BLAS and torch threads on both sides (default 1)")
    ap.add_argument("--dir", type=Path, default=DEFAULT_DIR, help="where the random checkpoints are kept")
    ap.add_argument("--no-rerun", action="store_true", help="leave the page rerun out")
    ap.add_argument("--root", type=Path, default=ROOT,
                    help="the checkout whose real pages the rerun part measures (default: this one)")
    ap.add_argument("--write", action="store_true",
                    help="write the tables into docs/performance.md's real section (with --models \"\": the rerun "
                         "table alone, the model table kept)")
    ap.add_argument("--child", choices=("ours", "theirs", "rerun"), help=argparse.SUPPRESS)
    ap.add_argument("--folder", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child == "rerun":
        sys.path.insert(0, str(args.root.resolve()))                   # its ui and attention_core, not this one's
        print(json.dumps(rerun_rows(args.folder, args.repeats, args.root.resolve())))
        return
    if args.child:
        print(json.dumps(child(args.child, args.folder, args.tokens, args.repeats, args.threads)))
        return
    tables = measure(list(filter(None, args.models.split(","))), args.dir, args.layers, args.tokens, args.repeats, args.threads,
                     not args.no_rerun, args.root.resolve())
    for t in tables:
        print("\n" + t.text())
    if args.write and len(tables) == 2:
        from bench import report
        report.write_section(report.REAL_HEADING, report.real_section(tables))
        print(f"\nwrote the section “{report.REAL_HEADING[3:]}” of {report.OUT}")
    elif args.write and tables and not args.no_rerun:       # the rerun part alone: its table replaced, the rest kept
        write_rerun(tables[-1])


RERUN_TITLE = "A page rerun with a real model loaded"


def write_rerun(table: Table) -> None:
    """Replace the rerun table of docs/performance.md's real section (from its title to the section's end) with
    `table`, the model table above it kept as it was measured."""
    from bench import report
    body = report.OUT.read_text(encoding="utf-8")
    if report.REAL_HEADING not in body:
        raise SystemExit(f"no section “{report.REAL_HEADING[3:]}” in {report.OUT}: run with --models to write it whole")
    head, rest = body.split(report.REAL_HEADING, 1)
    section, *tail = rest.split("\n## ", 1)
    kept = section.split(RERUN_TITLE, 1)[0].rstrip("\n")
    section = kept + "\n\n" + table.markdown() + "\n"
    report.OUT.write_text(head + report.REAL_HEADING + section + ("\n## " + tail[0] if tail else ""), encoding="utf-8")
    print(f"\nwrote the rerun table of the section “{report.REAL_HEADING[3:]}” of {report.OUT}")


if __name__ == "__main__":
    main()
