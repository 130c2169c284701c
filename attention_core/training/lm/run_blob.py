"""A trained run of the small model as bytes, and back: what a teacher's session-trained run travels as (a room's
store keeps it beside the room, classroom.room.put_run, and a student's page reads it back).

    bytes = zlib( header line (JSON: format, seed, steps, seconds, and each array's name, dtype, shape) + "\\n"
                  + every array's little-endian bytes in the header's order )

Only the trained weights (float32, as trained) and the history travel, the history with what the run kept of each
logged step when it has it (every head's pattern as train.kept keeps it, uint8 in 1/255, and the K-composition
table: the default run is 292 KB with them, within a room's 400 KB): the step-0 weights are the seed's
(train.init_params(seed), numpy only, the same numbers on every machine), so they are made again on reading.
The same run gives the same bytes (no time stamps, a fixed order), so `digest` names a run. Reading checks
everything (names, dtypes, shapes, finite values, the steps): a damaged or foreign blob is a RunBlobError with
a message, never a pickle or a traceback.

    >>> import numpy as np
    >>> from .train import init_params
    >>> h = {"step": np.array([0, 50]), "loss": np.array([3.5, 3.4]), "copy_loss": np.array([3.4, 3.4]),
    ...      "prev": np.zeros((2, 2, 4)), "induction": np.zeros((2, 2, 4))}
    >>> blob = to_bytes({"params": init_params(7), "history": h, "seed": 7, "steps": 50, "seconds": 1.5})
    >>> run = from_bytes(blob)
    >>> run["seed"], run["steps"], run["seconds"], run["history"]["step"].tolist(), len(digest(blob))
    (7, 50, 1.5, [0, 50], 32)
    >>> bool(np.array_equal(run["start"]["w_u"], init_params(7)["w_u"]))
    True
"""
from __future__ import annotations

import hashlib
import json
import math
import zlib

import numpy as np

from .model import ARCH, N_CTX, N_HEADS
from .train import init_params, kept

FORMAT = "induction-run/2"
HISTORY = {"step": "<i8", "loss": "<f8", "copy_loss": "<f8", "prev": "<f8", "induction": "<f8"}
SNAPSHOT = {"patterns": "|u1", "kcomp": "<f8"}   # optional, both or neither: what a run kept of each logged step
MAX_STEPS = 100_000
MAX_INFLATED = 4_000_000           # bytes after zlib: a run is ~160 KB of weights and ≤ 0.6 MB of snapshots (a bomb stops here)


class RunBlobError(ValueError):
    """The bytes are not a run of this model: the message says what is wrong."""


def digest(blob: bytes) -> str:
    """A run's name: the first 32 hex digits (128 bits) of the SHA-256 of its bytes."""
    return hashlib.sha256(blob).hexdigest()[:32]


def _shapes(seed: int = 0) -> dict[str, tuple[tuple[int, ...], str]]:
    return {k: (v.shape, "<f4") for k, v in init_params(seed).items()}


def to_bytes(run: dict) -> bytes:
    """{"params" (float32 as trained), "history", "seed", "steps", "seconds"} as bytes (deterministic)."""
    arrays = [(f"params.{k}", np.ascontiguousarray(run["params"][k], dtype="<f4")) for k in sorted(run["params"])]
    history = kept(run["history"])
    rows = len(history["step"])
    arrays += [(f"history.{k}", np.ascontiguousarray(np.asarray(history[k]).reshape(
        (rows,) if k in ("step", "loss", "copy_loss") else (rows, ARCH.n_layers, N_HEADS)), dtype=dt))
               for k, dt in HISTORY.items()]
    if all(k in history for k in SNAPSHOT):
        arrays += [(f"history.{k}", np.ascontiguousarray(history[k], dtype=dt)) for k, dt in SNAPSHOT.items()]
    seconds = run.get("seconds")
    header = {"format": FORMAT, "seed": int(run["seed"]), "steps": int(run["steps"]),
              "seconds": None if seconds is None else round(float(seconds), 3),
              "arrays": [[name, a.dtype.str, list(a.shape)] for name, a in arrays]}
    raw = json.dumps(header, separators=(",", ":")).encode() + b"\n" + b"".join(a.tobytes() for _, a in arrays)
    return zlib.compress(raw, 6)


def from_bytes(blob: bytes) -> dict:
    """The run back: {"start", "params", "history", "seed", "steps", "seconds"} (arrays as stored; start remade
    from the seed). RunBlobError if the bytes are not such a run."""
    try:
        d = zlib.decompressobj()
        raw = d.decompress(bytes(blob), MAX_INFLATED)
        if d.unconsumed_tail or not d.eof:
            raise RunBlobError("The run's bytes are cut short or too large.")
        head, _, body = raw.partition(b"\n")
        header = json.loads(head.decode("utf-8"))
    except (zlib.error, UnicodeDecodeError, json.JSONDecodeError, TypeError) as err:
        raise RunBlobError(f"These bytes are not a run of the small model ({type(err).__name__}).") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise RunBlobError("These bytes are not a run of the small model (another format).")
    seed, steps, seconds = header.get("seed"), header.get("steps"), header.get("seconds")
    if not (isinstance(seed, int) and 0 <= seed < 2 ** 32 and isinstance(steps, int) and 0 <= steps <= MAX_STEPS):
        raise RunBlobError("The run's seed or number of steps is out of range.")
    if seconds is not None and not (isinstance(seconds, (int, float)) and math.isfinite(seconds) and seconds >= 0):
        raise RunBlobError("The run's training time is not a number of seconds.")
    expected = {f"params.{k}": (shape, dt) for k, (shape, dt) in _shapes().items()}
    listed = header.get("arrays")
    if not isinstance(listed, list) or not all(isinstance(e, list) and len(e) == 3 for e in listed):
        raise RunBlobError("The run's list of arrays is damaged.")
    names = [e[0] for e in listed]
    kinds = {**HISTORY, **SNAPSHOT} if any(f"history.{k}" in names for k in SNAPSHOT) else HISTORY
    if sorted(n for n in names if str(n).startswith("params.")) != sorted(expected) or \
            sorted(n for n in names if str(n).startswith("history.")) != sorted(f"history.{k}" for k in kinds) or \
            len(names) != len(set(names)) or len(names) != len(expected) + len(kinds):
        raise RunBlobError("The run's weights are not the small model's (2 layers of 4 heads).")
    arrays, at = {}, 0
    for name, dt, shape in listed:
        key = name.split(".", 1)[1]
        want = expected[name] if name.startswith("params.") else (None, kinds[key])
        if dt != want[1] or not all(isinstance(n, int) and 0 <= n <= MAX_STEPS + 1 for n in shape) or \
                (want[0] is not None and tuple(shape) != tuple(want[0])):
            raise RunBlobError(f"The run's array {name} has the wrong type or shape.")
        size = int(np.prod(shape, dtype=np.int64)) * np.dtype(dt).itemsize
        if at + size > len(body):
            raise RunBlobError("The run's bytes are cut short.")
        arrays[name] = np.frombuffer(body, dtype=dt, count=size // np.dtype(dt).itemsize, offset=at).reshape(shape)
        at += size
    if at != len(body):
        raise RunBlobError("The run's bytes run on past its arrays.")
    history = {k: arrays[f"history.{k}"].copy() for k in kinds}
    rows = len(history["step"])
    if rows < 1 or any(len(v) != rows for v in history.values()) or \
            history["prev"].shape[1:] != (ARCH.n_layers, N_HEADS) or \
            history["induction"].shape[1:] != (ARCH.n_layers, N_HEADS) or \
            ("patterns" in history and history["patterns"].shape[1:] != (ARCH.n_layers, N_HEADS, N_CTX, N_CTX)) or \
            ("kcomp" in history and history["kcomp"].shape[1:] != (N_HEADS + 3, N_HEADS)) or \
            int(history["step"][-1]) != steps or np.any(np.diff(history["step"]) <= 0) or history["step"][0] != 0:
        raise RunBlobError("The run's history does not match its steps.")
    params = {k[len("params."):]: v.copy() for k, v in arrays.items() if k.startswith("params.")}
    if not all(np.all(np.isfinite(v)) for v in (*params.values(), *history.values())):
        raise RunBlobError("The run holds a number that is not finite.")
    return {"start": init_params(seed), "params": params, "history": history, "seed": seed, "steps": steps,
            "seconds": None if seconds is None else float(seconds)}
