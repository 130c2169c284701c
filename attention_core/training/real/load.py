"""A real checkpoint in, in the project's terms: `load_model(name or folder) -> RealModel`.

    RealModel.config      CheckpointConfig: the family, the sizes, RoPE's θ and scaling, tied or not
    RealModel.params      the weights as float32 numpy, named and shaped as forward/transformer.py's (X @ W)
    RealModel.tokenizer   its own tokenizer.json
    RealModel.folder      where the files are (the cache's snapshot, or the folder given)

The memory is checked before a weight is read: the float32 weights (bfloat16 takes twice its file) must fit in
what the machine has free now, else NotEnoughMemory says how much it needs. The model is loaded once per process
(`load_model` keeps it by its folder), so every session of a class shares one copy, read-only.
"""
from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path

from .checkpoint_config import CheckpointConfig, parse_config
from .errors import CorruptFile, NotEnoughMemory, gigabytes
from .hub import checkpoint_folder
from .safetensors_read import read_checkpoint, stored_bytes_as_float32
from .storage import project_params
from .tokenizer import CheckpointTokenizer

_LOADED: dict[str, RealModel] = {}
_LOCK = threading.Lock()


@dataclass(eq=False)
class RealModel:
    name: str
    folder: Path
    config: CheckpointConfig
    params: dict
    tokenizer: CheckpointTokenizer

    @property
    def n_parameters(self) -> int:
        """The parameters held, a tied W_U (E's transpose, a view) counted once."""
        return sum(int(v.size) for k, v in self.params.items() if not (k == "w_u" and self.config.tied))


def available_memory() -> int:
    """Bytes the OS could give now (MemAvailable), or the total if it does not say."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def read_config(folder: Path) -> CheckpointConfig:
    path = folder / "config.json"
    if not path.is_file():
        raise CorruptFile(f"No config.json in {folder}: a checkpoint folder holds config.json, tokenizer.json and "
                          "the .safetensors files.")
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise CorruptFile(f"config.json in {folder} is not valid JSON ({error}). Download the model again.") from None
    return parse_config(raw)


def check_memory(folder: Path, available: int | None = None) -> int:
    """The bytes the float32 weights need; NotEnoughMemory if they do not fit in `available` (now free)."""
    needed = stored_bytes_as_float32(folder)
    available = available_memory() if available is None else available
    if needed > available:
        raise NotEnoughMemory(f"This model needs {gigabytes(needed)} of memory for its float32 weights, and "
                              f"{gigabytes(available)} is free. Close other programs, or pick a smaller model "
                              "(distilgpt2 needs 0.33 GB, gpt2 0.50 GB, SmolLM2-135M 0.54 GB).", needed, available)
    return needed


def load_model(name, available: int | None = None) -> RealModel:
    """The model `name` (a hub name or a local folder), loaded once per process and shared."""
    folder = checkpoint_folder(name)
    key = str(folder.resolve())
    with _LOCK:
        if key not in _LOADED:
            config = read_config(folder)
            tokenizer = CheckpointTokenizer(folder)
            check_memory(folder, available)
            params = project_params(config, read_checkpoint(folder))
            _LOADED[key] = RealModel(str(name), folder, config, params, tokenizer)
        return _LOADED[key]


def forget(name=None) -> None:
    """Drop the loaded model (all of them with no name): the next load_model reads the files again."""
    with _LOCK:
        if name is None:
            _LOADED.clear()
        else:
            _LOADED.pop(str(checkpoint_folder(name).resolve()), None)
