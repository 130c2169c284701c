"""The weights of a checkpoint as float32 numpy arrays, read straight from its .safetensors files.

A .safetensors file is 8 bytes (the header's length N, little-endian), N bytes of JSON (each tensor's dtype,
shape and byte range [begin, end) after the header) and the raw bytes. numpy reads that directly: the file is
memory-mapped, so a float32 tensor is a read-only view of the file (nothing copied until a page touches it).

bfloat16, the dtype of the newer checkpoints, has no numpy type. It is float32 with the low 16 bits of the
mantissa cut off, so putting 16 zero bits back is the exact float32 of the same number:

    bits32 = bits16 << 16         (uint16 -> uint32, then viewed as float32)

float16 converts exactly too (astype). A checkpoint in several shards lists them in model.safetensors.index.json
({"weight_map": {tensor: file}}). A header that is not JSON, a byte range past the end of the file or one that
does not hold shape × itemsize bytes is a CorruptFile; a dtype that is not a float (int8, fp8) is Unsupported.
"""
from __future__ import annotations

import json
import math
import struct
from pathlib import Path

import numpy as np

from .errors import CorruptFile, Unsupported

DTYPES = {"F32": np.dtype("<f4"), "F16": np.dtype("<f2"), "BF16": np.dtype("<u2"), "F64": np.dtype("<f8")}
INDEX = "model.safetensors.index.json"
SINGLE = "model.safetensors"
MAX_HEADER = 100_000_000


def bfloat16_to_float32(bits: np.ndarray) -> np.ndarray:
    """uint16 bfloat16 bit patterns (any shape) -> the same numbers as float32, exactly.

    >>> bfloat16_to_float32(np.array([0x3F80, 0xC000, 0x3EAB], dtype=np.uint16)).tolist()   # 1, -2, 0.333984375
    [1.0, -2.0, 0.333984375]
    """
    return (bits.astype(np.uint32) << 16).view(np.float32)


def read_header(path: Path) -> tuple[dict, int]:
    """(the JSON header without __metadata__, the byte offset where the data starts)."""
    size = path.stat().st_size
    with open(path, "rb") as f:
        head = f.read(8)
        if len(head) < 8:
            raise CorruptFile(f"{path.name} is {size} bytes, too short to be a .safetensors file. "
                              "Delete it and download the model again.")
        (n,) = struct.unpack("<Q", head)
        if n > min(size - 8, MAX_HEADER):
            raise CorruptFile(f"{path.name}: its header says {n} bytes but the file has {size}: it is truncated or "
                              "not a .safetensors file. Delete it and download the model again.")
        try:
            header = json.loads(f.read(n))
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            raise CorruptFile(f"{path.name}: its header is not valid JSON ({error}). Delete the file and download "
                              "the model again.") from None
    if not isinstance(header, dict):
        raise CorruptFile(f"{path.name}: its header is not a table of tensors. Delete it and download it again.")
    header.pop("__metadata__", None)
    return header, 8 + n


def read_safetensors(path, names=None) -> dict[str, np.ndarray]:
    """{tensor name: float32 array} for the tensors of one file (`names`: only those)."""
    path = Path(path)
    header, start = read_header(path)
    size = path.stat().st_size
    data = np.memmap(path, dtype=np.uint8, mode="r")
    out = {}
    for name, info in header.items():
        if names is not None and name not in names:
            continue
        try:
            dtype_name, shape, (begin, end) = info["dtype"], [int(s) for s in info["shape"]], info["data_offsets"]
        except (KeyError, TypeError, ValueError):
            raise CorruptFile(f"{path.name}: the entry of {name!r} lacks its dtype, shape or offsets. Delete the file "
                              "and download the model again.") from None
        if dtype_name not in DTYPES:
            raise Unsupported(f"{name} in {path.name} is stored as {dtype_name}: the project reads float32, float16 "
                              "and bfloat16 checkpoints, not quantised ones. Pick the model's unquantised version.")
        dtype = DTYPES[dtype_name]
        if not (0 <= begin <= end and start + end <= size) or end - begin != math.prod(shape) * dtype.itemsize:
            raise CorruptFile(f"{path.name}: {name} claims bytes {begin}..{end} for shape {shape} {dtype_name}, but "
                              f"the file has {size - start} bytes of data. The file is truncated or damaged: delete it "
                              "and download the model again.")
        raw = data[start + begin:start + end].view(dtype).reshape(shape)
        if dtype_name == "BF16":
            raw = bfloat16_to_float32(raw)
        elif dtype_name != "F32":
            raw = raw.astype(np.float32)
        out[name] = raw
    return out


def checkpoint_files(folder: Path) -> list[Path]:
    """The .safetensors files of a checkpoint folder: the shards its index names, or model.safetensors."""
    index = folder / INDEX
    if index.is_file():
        try:
            weight_map = json.loads(index.read_text(encoding="utf-8"))["weight_map"]
        except (json.JSONDecodeError, KeyError, TypeError):
            raise CorruptFile(f"{INDEX} in {folder} is not a valid index (no weight_map). Delete it and download the "
                              "model again.") from None
        files = sorted(set(weight_map.values()))
        missing = [f for f in files if not (folder / f).is_file()]
        if missing:
            raise CorruptFile(f"{INDEX} names shards that are not in {folder}: {', '.join(missing)}. The download "
                              "stopped part-way: download the model again.")
        return [folder / f for f in files]
    if (folder / SINGLE).is_file():
        return [folder / SINGLE]
    found = sorted(folder.glob("*.safetensors"))
    if found:
        return found
    raise Unsupported(f"No .safetensors weights in {folder}: the project reads safetensors only (not "
                      "pytorch_model.bin, which runs code when unpickled). Save the model with safe_serialization, "
                      "or pick a model that publishes model.safetensors.")


def read_checkpoint(folder) -> dict[str, np.ndarray]:
    """Every tensor of the checkpoint in `folder` as float32, shards merged."""
    tensors: dict[str, np.ndarray] = {}
    for path in checkpoint_files(Path(folder)):
        tensors.update(read_safetensors(path))
    return tensors


def stored_bytes_as_float32(folder) -> int:
    """How many bytes the checkpoint's tensors take as float32 (bfloat16 doubles), from the headers alone."""
    total = 0
    for path in checkpoint_files(Path(folder)):
        header, _ = read_header(path)
        total += sum(4 * math.prod(int(s) for s in info.get("shape", ())) for info in header.values())
    return total
