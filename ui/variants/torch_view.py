"""The PyTorch page's torch runs, cached once per process per (Config, layer settings).

A page script is executed anew on every rerun, so a cache defined there starts empty each time:
these live in a module. Keyed by the frozen, hashable Config (no Streamlit cache hashing per
call); the results are shared by every session, read-only.
"""
from __future__ import annotations

import functools
import inspect
import textwrap
import threading
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
import pandas as pd

from attention_core import Config, Trace
from attention_core import torch_mha as tm

from ..cache import get_trace


class _Memo:
    """functools.lru_cache that can also say whether a call is already computed (a spinner is
    only worth its element when the torch run is new)."""

    def __init__(self, fn, maxsize: int = 128):
        self.fn, self.maxsize, self.items, self.lock = fn, maxsize, OrderedDict(), threading.Lock()
        functools.update_wrapper(self, fn)

    def __contains__(self, args) -> bool:
        with self.lock:
            return args in self.items

    def __call__(self, *args):
        with self.lock:
            if args in self.items:
                self.items.move_to_end(args)
                return self.items[args]
        value = self.fn(*args)
        with self.lock:
            self.items[args] = value
            while len(self.items) > self.maxsize:
                self.items.popitem(last=False)
        return value


def memo(fn):
    return _Memo(fn)


def _read_only(values: dict) -> dict:
    for v in values.values():
        if isinstance(v, np.ndarray):
            v.flags.writeable = False
    return values


@functools.lru_cache(maxsize=1)
def code_excerpt() -> str:
    """The class this page runs, as written in attention_core/torch_mha.py (read, not retyped)."""
    lines = textwrap.dedent(inspect.getsource(tm._module_class)).splitlines()
    start = next(i for i, line in enumerate(lines) if line.lstrip().startswith("class "))
    end = next(i for i, line in enumerate(lines) if line.lstrip().startswith("def forward"))
    return textwrap.dedent("\n".join(lines[start:end])).rstrip()


def squeeze_batch(torch_trace: Trace) -> Trace:
    """The same steps without the batch axis (batch = 1), for drawing; −10¹⁰ (masked) drawn as empty cells."""
    shown = Trace(torch_trace.tokens)
    for s in torch_trace:
        value = s.value[0]
        if s.key == "masked_energy":
            value = np.where(value <= -1e9, -np.inf, value)
        shown.add(s.key, s.title, value, s.axes[1:], s.formula, s.inputs, s.why, s.scale)
    shown.facts.update({k: v for k, v in torch_trace.facts.items() if k != "_specs"})
    shown.facts["kind"] = "pytorch"         # not the forward pass: no forward-pass explainer applies
    shown.facts["torch_shapes"] = {s.key: (s.shape, s.axes) for s in torch_trace}
    return shown


@dataclass(frozen=True)
class LayerInput:
    """What the layer runs on: the sentence's X, its tokens and the seed. The cache key, so a sidebar
    setting the layer ignores (d_k, score, mask, temperature, ...) reuses the torch runs."""
    x_bytes: bytes
    shape: tuple[int, int]
    tokens: tuple[str, ...]
    seed: int

    @property
    def x(self) -> np.ndarray:
        """A writable copy: torch.as_tensor warns on read-only arrays."""
        return np.frombuffer(self.x_bytes, dtype=np.float64).reshape(self.shape).copy()


def layer_input(cfg: Config) -> LayerInput:
    trace = get_trace(cfg)
    x = np.ascontiguousarray(trace["x"].value, dtype=np.float64)
    return LayerInput(x.tobytes(), x.shape, tuple(trace.tokens), cfg.seed)


def walk(cfg: Config, heads: int, pad: tuple[int, ...], p: float, mode: str, draw: int) -> Trace:
    """The module's forward pass, step by step, without the batch axis."""
    return _walk(layer_input(cfg), heads, pad, p, mode, draw)


def check(cfg: Config, heads: int, pad: tuple[int, ...]) -> dict:
    """max |torch − numpy| of the output and of the weights."""
    return _check(layer_input(cfg), heads, pad)


def computed(kind: str, cfg: Config, *args) -> bool:
    """Whether check / pitfall / walk with these arguments is already in the process's cache."""
    return args_key(cfg, *args) in {"check": _check, "pitfall": _pitfall, "walk": _walk}[kind]


def args_key(cfg: Config, *args) -> tuple:
    return (layer_input(cfg), *args)


def pitfall(cfg: Config, heads: int, p: float, draw: int) -> tuple[dict, dict]:
    """The three modules (eval, train, seed 002's line) at dropout draws `draw` and `draw + 1`."""
    return _pitfall(layer_input(cfg), heads, p, draw)


@memo
def _walk(inp: LayerInput, heads: int, pad: tuple[int, ...], p: float, mode: str, draw: int) -> Trace:
    return squeeze_batch(tm.pytorch_trace(inp.x, heads, inp.seed, pad, p, mode, draw, labels=list(inp.tokens)))


@memo
def _check(inp: LayerInput, heads: int, pad: tuple[int, ...]) -> dict:
    x = inp.x
    return tm.compare_with_numpy(x, *tm.seeded_weights(x.shape[1], inp.seed), heads, pad)


@memo
def _pitfall(inp: LayerInput, heads: int, p: float, draw: int) -> tuple[dict, dict]:
    return tuple(_read_only(tm.dropout_at_inference(inp.x, heads, p, inp.seed, d)) for d in (draw, draw + 1))


@functools.lru_cache(maxsize=128)
def shapes_table(shown: Trace) -> pd.DataFrame:
    """Every step's PyTorch shape and named axes, once per walk (a cached Trace, shared read-only)."""
    shapes = shown.facts["torch_shapes"]
    return pd.DataFrame({"PyTorch shape": ["[" + ", ".join(map(str, shape)) + "]" for shape, _ in shapes.values()],
                         "named axes": [" × ".join(f"{a}={s}" for a, s in zip(axes, shape))
                                        for shape, axes in shapes.values()]},
                        index=[shown[k].title for k in shapes])
