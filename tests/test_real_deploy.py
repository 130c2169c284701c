"""A real model in a deployment: the Dockerfile's REAL_MODEL build argument (read here: there is no docker in CI),
deploy/fetch_model.py run as the build runs it, offline, against a Hugging Face cache laid out here, the download's
progress as a page sees it (hub.download), and the runtime dependencies declared where the app installs them."""
from __future__ import annotations

import json
import os
import re
import struct
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from attention_core.training.real import hub
from tests.real_checkpoints import lay_out_cache, train_tokenizer

ROOT = Path(__file__).resolve().parents[1]
DOCKERFILE = (ROOT / "Dockerfile").read_text(encoding="utf-8")


def write_safetensors(path: Path, tensors: dict) -> None:
    """The format as safetensors writes it: the header's length, the JSON header, the float32 bytes in order."""
    header, blobs, at = {}, [], 0
    for name, value in tensors.items():
        raw = np.ascontiguousarray(value, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(value.shape), "data_offsets": [at, at + len(raw)]}
        blobs.append(raw)
        at += len(raw)
    head = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(head)) + head + b"".join(blobs))


def tiny_gpt2(folder: Path, d: int = 8, layers: int = 1, heads: int = 2, vocab: int = 320, n_ctx: int = 16) -> Path:
    """A random GPT-2 in the Hugging Face layout, written with numpy alone (no torch or transformers: cheap)."""
    folder.mkdir(parents=True)
    rng = np.random.default_rng(0)
    t = {"wte.weight": rng.normal(0, 0.1, (vocab, d)), "wpe.weight": rng.normal(0, 0.1, (n_ctx, d)),
         "ln_f.weight": np.ones(d), "ln_f.bias": np.zeros(d)}
    for l in range(layers):
        for name, shape in (("ln_1.weight", (d,)), ("ln_1.bias", (d,)), ("attn.c_attn.weight", (d, 3 * d)),
                            ("attn.c_attn.bias", (3 * d,)), ("attn.c_proj.weight", (d, d)), ("attn.c_proj.bias", (d,)),
                            ("ln_2.weight", (d,)), ("ln_2.bias", (d,)), ("mlp.c_fc.weight", (d, 4 * d)),
                            ("mlp.c_fc.bias", (4 * d,)), ("mlp.c_proj.weight", (4 * d, d)), ("mlp.c_proj.bias", (d,))):
            t[f"h.{l}.{name}"] = rng.normal(0, 0.1, shape)
    write_safetensors(folder / "model.safetensors", t)
    (folder / "config.json").write_text(json.dumps({"model_type": "gpt2", "n_embd": d, "n_layer": layers,
                                                    "n_head": heads, "vocab_size": vocab, "n_positions": n_ctx}))
    train_tokenizer(folder, "gpt2")
    return folder


def test_the_dockerfile_bakes_a_chosen_model_into_the_image():
    """REAL_MODEL (default none) is fetched and run at build, by the non-root user, into the cache the app reads at
    run time; a gated model's token comes as a build secret, never a build argument (those stay in the history)."""
    assert re.search(r'^ARG REAL_MODEL=""$', DOCKERFILE, re.MULTILINE)
    assert "HF_HOME=/home/explorer/.cache/huggingface" in DOCKERFILE and "ATTENTION_EXPLORER_REAL_MODEL=$REAL_MODEL" in DOCKERFILE
    lines = [line.strip() for line in DOCKERFILE.splitlines()]
    assert "ATTENTION_EXPLORER_REAL_MODEL_DIR=/home/explorer/real-model" in DOCKERFILE     # the pages' server model
    run = next(i for i, line in enumerate(lines) if "deploy/fetch_model.py" in line and not line.startswith("#"))
    block = " ".join(lines[i] for i in range(run - 2, run + 2))
    assert block.startswith("RUN --mount=type=secret,id=hf_token,uid=10001,required=false")
    assert 'if [ -n "$REAL_MODEL" ]' in block
    assert ('HF_TOKEN_PATH=/run/secrets/hf_token python deploy/fetch_model.py "$REAL_MODEL" \\ '
            '--link /home/explorer/real-model; fi') in block
    user = lines.index("USER explorer")
    copy = lines.index("COPY --chown=explorer:explorer . .")
    assert copy < user < run - 2 < lines.index(next(l for l in lines if l.startswith("CMD")))
    assert not re.search(r"ARG\s+HF_TOKEN", DOCKERFILE)
    assert lines[0] == "# syntax=docker/dockerfile:1"                    # RUN --mount needs BuildKit's syntax


def test_the_fetch_script_runs_the_model_from_a_cache_offline(tmp_path):
    """As `docker build --build-arg REAL_MODEL=…` runs it, with the model already in the cache and no network."""
    cache = tmp_path / "hub"
    lay_out_cache(cache, "tiny/gpt2", tiny_gpt2(tmp_path / "model"))
    env = {**os.environ, "HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    link = tmp_path / "home" / "real-model"
    out = subprocess.run([sys.executable, "deploy/fetch_model.py", "tiny/gpt2", "--link", str(link)], cwd=ROOT,
                         env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    size = sum(f.stat().st_size for f in (tmp_path / "model").iterdir())
    said, ran = out.stdout.strip().splitlines()
    assert said == f"tiny/gpt2 is in the cache ({size / 1e6:.0f} MB)."
    # 320·8 (E) + 16·8 (P) + one block (2·16 norms, 8·24 + 24 W_QKV, 8·8 + 8 W_O, 8·32 + 32 W_1, 32·8 + 8 W_2) + 16
    assert ran.startswith("tiny/gpt2 runs: 3,576 parameters, 1 layer of 2 heads (gpt2), 16 tokens of a sentence")
    snapshot = cache / "models--tiny--gpt2" / "snapshots" / "0123456789abcdef0123456789abcdef01234567"
    assert ran.endswith(f"in {snapshot} (linked from {link}).")
    assert link.is_symlink() and link.resolve() == snapshot.resolve() and (link / "config.json").is_file()
    taken = tmp_path / "taken"                          # --link onto a folder already there: the reason, exit 1
    (taken / "x").mkdir(parents=True)
    out = subprocess.run([sys.executable, "deploy/fetch_model.py", "tiny/gpt2", "--link", str(taken)], cwd=ROOT,
                         env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
    assert out.stderr.startswith(f"tiny/gpt2 runs, but the link {taken} to {snapshot} cannot be made")


def test_the_fetch_script_says_why_it_cannot(tmp_path, monkeypatch, capsys):
    sys.path.insert(0, str(ROOT / "deploy"))
    try:
        import fetch_model
    finally:
        sys.path.remove(str(ROOT / "deploy"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert fetch_model.main(["HuggingFaceTB/SmolLM2-135M"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("HuggingFaceTB/SmolLM2-135M is not in the Hugging Face cache")
    assert "Traceback" not in err
    assert fetch_model.main([]) == 2 and fetch_model.main(["gpt2", "--link"]) == 2


def test_the_download_reports_its_bytes_from_the_callers_thread(monkeypatch):
    """huggingface_hub makes its byte bars with the tqdm_class given (as snapshot_download does, through its own
    _create_progress_bar) and updates them from its worker threads; the page's callback runs in the page's thread."""
    from huggingface_hub.utils.tqdm import _create_progress_bar

    total, chunks, calls = 3_000, (700, 800, 900, 600), []
    started, part_way = threading.Event(), threading.Event()

    def fake_download(name, tqdm_class=None):
        assert name == "tiny/model"

        def write():
            files = tqdm_class(total=4, desc="Fetching 4 files")                # the files' bar: not bytes
            received = _create_progress_bar(cls=tqdm_class, log_level=20, name="transfer", total=0, unit="B")
            written = _create_progress_bar(cls=tqdm_class, log_level=20, name="snapshot", total=0, unit="B")
            started.set()
            for k, n in enumerate(chunks):
                written.total += n
                written.update(n)
                received.update(n // 2)
                files.update(1)
                if k == 0:                               # the rest once the page has seen the first part, not a time
                    part_way.wait(60)

        worker = threading.Thread(target=write)
        worker.start()
        worker.join()
        return Path("/cache/tiny")

    monkeypatch.setattr(hub, "checkpoint_folder", fake_download)
    me = threading.get_ident()
    def progress(done, of):
        calls.append((done, of, threading.get_ident()))
        if 0 < done < of:
            part_way.set()

    folder = hub.download("tiny/model", progress, total, every=0.02)
    assert folder == Path("/cache/tiny") and started.is_set()
    assert {who for *_, who in calls} == {me}
    dones = [done for done, *_ in calls]
    assert dones == sorted(dones) and calls[-1][:2] == (total, total) and all(of == total for _, of, _ in calls)
    assert part_way.is_set() and 700 in dones                                # seen part-way, not only at the end
    assert set(dones) <= {0, 700, 1500, 2400, 3000}                           # the bytes written, never the files


def test_a_failed_download_raises_in_the_callers_thread(monkeypatch):
    def refused(name, tqdm_class=None):
        raise hub.GatedModel("gated")

    monkeypatch.setattr(hub, "checkpoint_folder", refused)
    with pytest.raises(hub.GatedModel, match="gated"):
        hub.download("meta-llama/Llama-3.2-1B", lambda done, of: None, 10)


def test_the_runtime_dependencies_are_the_apps():
    """tokenizers and huggingface_hub are what a real model needs at run time (safetensors are read by numpy,
    transformers is the tests' reference only): in requirements.txt (the Dockerfile installs it) and pyproject's
    `real` extra, pinned alike (test_packaging checks the pins)."""
    import tomllib

    runtime = (ROOT / "requirements.txt").read_text(encoding="utf-8")
    dev = (ROOT / "requirements-dev.txt").read_text(encoding="utf-8")
    for name in ("tokenizers", "huggingface_hub"):
        assert re.search(rf"^{name}==", runtime, re.MULTILINE), name
        assert not re.search(rf"^{name}==", dev, re.MULTILINE), f"{name}: once, in requirements.txt"
    for name in ("transformers", "safetensors"):
        assert not re.search(rf"^{name}", runtime, re.MULTILINE) and re.search(rf"^{name}==", dev, re.MULTILINE), name
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    assert sorted(d.split("==")[0] for d in extras["real"]) == ["huggingface_hub", "tokenizers"]
    assert set(extras["real"]) <= set(extras["all"])
    assert "pip install -r requirements.txt" in DOCKERFILE
