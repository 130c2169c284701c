"""The array files: every step of a trace in one .npz, as CSV files (one per step) and their zip with a README.

    >>> from attention_core import Config, run_forward
    >>> trace = run_forward(Config())
    >>> arrays = load_npz(npz_bytes(trace))
    >>> bool((arrays["weights"] == trace["weights"].value).all())
    True

CSV layout (one file per step; a 3-d step, one block per head, is flattened with a leading column h):

    0-d   value                 1-d   d_v,value            2-d   n_q\\n_k,i,love,you     3-d  h,n_q\\n_k,i,love
          0.25                        0,0.1                      i,0.25,0.5,0.25            0,i,0.25,0.5
                                      1,-0.3                     love,...                   ...

The corner cell names the row and column axes ("n_q\\n_k"), rows and columns of a token axis
are labelled with the words (a repeated word gets its position: "the (4)"), others with
indices, every index counted from 0 as in the app's notation (docs/notation.md): h = 0 … H−1 is
a head's index, H the number of heads. Numbers are written with repr(), so they read back exactly
(−inf as "-inf"). The zip of all the CSV files carries a README.txt naming each file's symbol
(S raw scores, Ŝ scaled, S̃ masked, A weights, C context, O output, Q_h one head's queries; with RoPE
Q^R, K^R the rotated queries and keys; with ALiBi B its bias and (Ŝ+B) the biased scores …); the .npz
manifest carries the same symbols. With grouped KV heads, W_K, W_V, K, V have H_kv heads' columns and
K_h, V_h one block per KV head.
"""
from __future__ import annotations

import csv
import io
import json
import re
import zipfile

import numpy as np

from ...forward.config import Config
from ...forward.trace import Step, Trace

# ---- the notation's symbol for each step (docs/notation.md), as plain text ------------------------------

STEP_SYMBOLS = {
    "x_embed": "X_emb", "pe": "PE", "x": "X", "w_q": "W_Q", "w_k": "W_K", "w_v": "W_V",
    "b_q": "b_Q", "b_k": "b_K", "b_v": "b_V", "q": "Q", "k": "K", "v": "V",
    "q_heads": "Q_h", "k_heads": "K_h", "v_heads": "V_h",
    "w_a_q": "W_1", "w_a_k": "W_2", "v_a": "v", "w_b": "W",
    "q_rot": "Q^R", "k_rot": "K^R", "alibi": "B", "biased_scores": "(Ŝ+B)",        # RoPE's rotated Q, K; ALiBi
    "scores": "S", "scaled_scores": "Ŝ", "mask": "M", "masked_scores": "S̃", "weights": "A", "context": "C",
    "concat": "C", "w_o": "W_O", "b_o": "b_O", "output": "O",
}
PER_HEAD = ("scores", "scaled_scores", "masked_scores", "weights", "context",     # S_h, Ŝ_h, S̃_h, A_h, C_h
            "q_rot", "k_rot", "alibi", "biased_scores")                          # Q^R_h, K^R_h, B_h, (Ŝ+B)_h
HEAD_COLUMN = "h"               # a head's index, 0 … H−1, in the CSV files' first column


def step_symbol(step: Step) -> str:
    """The notation's symbol for a step: 'Ŝ', or 'Ŝ_h' when it has a head axis; '' for a step it does not name."""
    symbol = STEP_SYMBOLS.get(step.key, "")
    if step.key == "biased_scores" and step.inputs[:1] != ("scaled_scores",):
        symbol = "(S+B)"                                       # ALiBi on unscaled scores (dot, additive, bilinear)
    if symbol and step.key in PER_HEAD and step.axes[:1] == ("head",):
        return f"{symbol}_h"
    if symbol and step.key in ("w_a_q", "w_a_k", "v_a", "w_b") and step.axes[:1] == ("head",):
        return f"{symbol}^(h)"
    return symbol


# ---- .npz ----------------------------------------------------------------------------------------------

MANIFEST = "__manifest__"


def _safe_name(key: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", key) or "_"


def npz_bytes(trace: Trace) -> bytes:
    """Every step as an array in one compressed .npz (np.load(..., allow_pickle=False) opens it).

    An array is stored under its step key (a key like "dL/dw_q" becomes "dL_dw_q"); the member
    "__manifest__" is JSON: the tokens and, per step, its key, array name, axes, title and symbol in
    the app's notation ("Ŝ_h" for the scaled scores of every head, axis "head" holding h = 0 … H−1).
    """
    arrays, manifest = {}, {"tokens": list(trace.tokens), "steps": []}
    for step in trace:
        name = _safe_name(step.key)
        while name in arrays or name == MANIFEST:
            name += "_"
        arrays[name] = step.value
        manifest["steps"].append({"key": step.key, "array": name, "axes": list(step.axes), "title": step.title,
                                  "symbol": step_symbol(step)})
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays, **{MANIFEST: np.array(json.dumps(manifest))})
    return buffer.getvalue()


def load_npz(data: bytes) -> dict[str, np.ndarray]:
    """The arrays of npz_bytes(), by step key, in order."""
    with np.load(io.BytesIO(data), allow_pickle=False) as npz:
        manifest = json.loads(str(npz[MANIFEST]))
        return {s["key"]: npz[s["array"]] for s in manifest["steps"]}


# ---- CSV -----------------------------------------------------------------------------------------------

def _cell_text(label: str) -> str:
    """A label as a CSV cell a spreadsheet will not run as a formula."""
    label = "".join(c for c in str(label) if c.isprintable())
    return "'" + label if label[:1] in ("=", "+", "-", "@") else label


def _labels(trace: Trace | None, axis: str, size: int) -> list[str]:
    if trace is None:
        return [str(i) for i in range(size)]
    return [_cell_text(s) for s in trace.labels(axis, size)]


def step_csv(step: Step, trace: Trace | None = None) -> str:
    """One step as CSV text (layout in the module docstring); pass the trace for word labels."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    v, axes = step.value, step.axes
    if v.ndim == 0:
        w.writerows([["value"], [repr(float(v))]])
    elif v.ndim == 1:
        w.writerow([axes[0], "value"])
        w.writerows([lab, repr(float(x))] for lab, x in zip(_labels(trace, axes[0], v.shape[0]), v))
    elif v.ndim in (2, 3):
        head = [HEAD_COLUMN] if v.ndim == 3 else []
        rows, cols = v.shape[-2:]
        w.writerow(head + [f"{axes[-2]}\\{axes[-1]}"] + _labels(trace, axes[-1], cols))
        row_labels = _labels(trace, axes[-2], rows)
        for h, block in enumerate(v.reshape(-1, rows, cols)):
            for lab, row in zip(row_labels, block):
                w.writerow(([str(h)] if head else []) + [lab] + [repr(float(x)) for x in row])
    else:
        raise ValueError(f"step {step.key}: {v.ndim}-d values have no CSV layout")
    return out.getvalue()


def array_from_csv(text: str) -> np.ndarray:
    """Read step_csv() text back into an array of the same shape and values."""
    rows = list(csv.reader(io.StringIO(text)))
    header, body = rows[0], rows[1:]
    if header == ["value"]:
        return np.array(float(body[0][0]))
    if header[0] in (HEAD_COLUMN, "head"):                     # "head": files written before the notation
        heads = [int(r[0]) for r in body]
        n_heads = max(heads) + 1
        values = np.array([[float(x) for x in r[2:]] for r in body])
        return values.reshape(n_heads, len(body) // n_heads, values.shape[1])
    if "\\" in header[0]:
        return np.array([[float(x) for x in r[1:]] for r in body]).reshape(len(body), len(header) - 1)
    return np.array([float(r[1]) for r in body])


def csv_names(trace: Trace) -> dict[str, str]:
    """{file name: step key} for every step, numbered in trace order: '05_scores.csv' -> 'scores'."""
    return {f"{i:02d}_{_safe_name(step.key)}.csv": step.key for i, step in enumerate(trace)}


def csv_files(trace: Trace) -> dict[str, str]:
    """{file name: CSV text} for every step, named as csv_names() names them."""
    return {name: step_csv(trace[key], trace) for name, key in csv_names(trace).items()}


def csv_readme(trace: Trace) -> str:
    """README.txt for the zip: the notation, then each file with its step's symbol, title and shape."""
    lines = ["One CSV file per step of the forward pass, in order. The app's notation (docs/notation.md):",
             "everything is counted from 0; n tokens (rows), H heads and h = 0 … H−1 a head's index;",
             "S raw scores, Ŝ = S / √d_k scaled (scaled dot-product only), S̃ masked (−inf where the mask M",
             "hides a key), A = softmax(…) the weights, C = A V the context, O = C W_O the output.",
             "Weights multiply from the right, as the Transformer paper writes it (Q = X W^Q) and as numpy",
             "code does: W_Q is (d_model, H·d_k). PyTorch's nn.Linear stores the transpose (its weight is",
             "(out, in) and it computes x Wᵀ).",
             "A file with a first column h holds one block of rows per head."]
    config = trace.facts.get("config")
    if config is not None and trace.facts.get("kind") == "forward":
        lines += _readme_settings(config)
    lines.append("")
    for name, key in csv_names(trace).items():
        step = trace[key]
        symbol = step_symbol(step)
        lines.append(f"{name}  {symbol + '  ' if symbol else ''}{step.title}  ({step.shape_text})")
    return "\n".join(lines) + "\n"


def _readme_settings(config: Config) -> list[str]:
    """The README's words for RoPE, ALiBi, grouped KV heads and the sliding window, when the settings use them."""
    lines = []
    if config.positional == "rope":
        lines += ["RoPE: Q^R, K^R are Q and K with row p rotated by R_p, pair i of its columns (2i, 2i+1) by the",
                  f"angle p·θ_i, θ_i = base^(−2i/d_k), base = {config.pe_base:g}; the scores read Q^R and K^R."]
    if config.positional == "alibi":
        summed = "(Ŝ+B) = Ŝ + B" if config.score == "scaled_dot" else "(S+B) = S + B"
        lines += ["ALiBi: B is the bias (B_h)[i, j] = −m_h |i − j| (m_h the slope of head h), added to the scores",
                  f"before the mask: {summed}; nothing is added to X."]
    if config.kv_heads < config.n_heads:
        h, h_kv = config.n_heads, config.kv_heads
        lines += [f"Grouped-query attention: W_K, W_V, K, V have the columns of H_kv = {h_kv} key/value heads, and the",
                  f"files of K_h, V_h{', K^R_h' if config.positional == 'rope' else ''} one block per KV head, "
                  f"h = 0 … {h_kv - 1}; query head h reads KV head ⌊h / g⌋, g = H / H_kv = {h // h_kv}."]
    if config.mask == "sliding_window":
        lines += [f"Sliding window: M[i, j] = 1 when 0 ≤ i − j < W = {config.window} (W keys, the query included)."]
    return lines


def csv_zip(trace: Trace) -> bytes:
    """All the CSV files of a trace in one .zip, with README.txt naming each file's symbol."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as z:
        for name, text in csv_files(trace).items():
            z.writestr(name, text)
        z.writestr("README.txt", csv_readme(trace))
    return buffer.getvalue()
