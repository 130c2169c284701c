"""Taking the numbers away: .npz and CSV files, a numpy-only script, and the settings as a URL.

    >>> from attention_core import Config, run_forward
    >>> trace = run_forward(Config())
    >>> arrays = load_npz(npz_bytes(trace))
    >>> bool((arrays["weights"] == trace["weights"].value).all())
    True
    >>> config_from_query(config_to_query(Config(d_k=6)))[0] == Config(d_k=6)
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
import math
import re
import zipfile
from dataclasses import fields

import numpy as np

from ..forward.config import COMBINES, EMBEDDINGS, MASKS, POSITIONALS, SCORES, UNKNOWN_POLICIES, WEIGHTS, Config
from ..math.limits import ConfigError
from ..forward.trace import Step, Trace

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


# ---- a numpy-only script of the forward pass -------------------------------------------------------------

def _literal(a: np.ndarray) -> str:
    """An array as an exact Python literal (repr of floats round-trips), one row per line."""
    a = np.asarray(a, dtype=np.float64)
    if a.ndim <= 1:
        return f"np.array({a.tolist()!r})"
    rows = ",\n    ".join(repr(r) for r in a.tolist())
    return f"np.array([\n    {rows},\n])"


def python_script(config: Config, weights: str = "seeded") -> str:
    """A runnable numpy-only script that recomputes this configuration step by step, same numbers.

    The embedding rows are written in as literals (the vocabularies stay behind). Parameters are
    drawn exactly as the explorer draws them (weights="seeded": numpy.random.default_rng seeded
    with (seed, crc32(name)) per parameter) or written in as literals too (weights="literal", for
    a numpy whose generator streams differ). Under config.weights == "trained", W_Q, W_K, W_V
    (and their biases) are the trained matrices, always written in as literals (with grouped KV heads,
    W_K and W_V are the trained columns averaged per group, as the forward pass uses them). RoPE's
    rotation, ALiBi's slopes and bias, the repeat of the KV heads and the sliding-window mask are written
    out in numpy. The sentence and its tokens appear only as repr()'d
    string literals assigned to SENTENCE and TOKENS. Run it: `python script.py [steps.npz]`.
    """
    from ..forward.stages import exact_slope, run_forward
    from ..forward.weights import init_bias, init_weight
    if weights not in ("seeded", "literal"):
        raise ValueError("weights must be 'seeded' or 'literal'")
    trace = run_forward(config)
    f = trace.facts
    n, d_embed, d_model = f["n"], f["d_embed"], f["d_model"]
    h, d_k, d_v, seed = config.n_heads, config.d_k, config.d_v, config.seed
    h_kv = config.kv_heads                                      # H_kv: key/value heads (= H without GQA)
    grouped = h_kv < h                                          # grouped-query attention: g = H / H_kv > 1
    rope, alibi = config.positional == "rope", config.positional == "alibi"
    literal = weights == "literal"
    L: list[str] = []
    add = L.append

    trained = config.weights == "trained"

    def param(name: str, shape: tuple, fan_in: int) -> str:
        if trained and name in ("w_q", "w_k", "w_v"):
            return _literal(trace[name].value)
        if literal:
            return _literal(init_weight(seed, name, shape, fan_in))
        return f"param({name!r}, {shape!r}, {fan_in})"

    def bias(name: str, shape: tuple) -> str:
        if trained and name in ("b_q", "b_k", "b_v"):
            return _literal(trace[name].value)
        return _literal(init_bias(seed, name, shape)) if literal else f"bias({name!r}, {shape!r})"

    settings = {k: v for k, v in config.as_dict().items() if k not in ("sentence", "vectors")}
    add('"""Attention Explorer: one forward pass of attention, step by step, in numpy only.')
    add("")
    add("Generated for these settings (the sentence is SENTENCE below):")
    for k, v in settings.items():
        add(f"    {k} = {v!r}")
    add("")
    add("Run:  python this_file.py            prints every step")
    add("      python this_file.py steps.npz  also saves every step (np.load(...)[key])")
    add("")
    add("Notation (the app's): everything is counted from 0. n tokens are the rows; H heads, h = 0 … H−1 a")
    add("head's index; S raw scores, Ŝ = S / √d_k scaled (scaled dot-product only), S̃ masked, A the weights,")
    add("C = A V the context, O the output. Each variable is named by its step key (the .npz and CSV names);")
    add("its symbol is in the comment beside it.")
    if rope:
        add("RoPE: q^R_p = R_p q_p, k^R_p = R_p k_p, each query and key row rotated by its position p, pair i of")
        add("its columns by the angle p·θ_i, θ_i = base^(−2i/d_k); Q^R, K^R the rotated matrices, S = Q^R (K^R)^T.")
    if alibi:
        add("ALiBi: m_h the slope of head h, (B_h)[i, j] = −m_h |i − j| the bias added to the scores before")
        add("the mask; nothing is added to X.")
    if grouped:
        add(f"Grouped-query attention: H_kv = {h_kv} key/value heads for the H = {h} query heads, g = H / H_kv = "
            f"{h // h_kv};")
        add("query head h reads KV head ⌊h / g⌋: K_{⌊h/g⌋}, V_{⌊h/g⌋}.")
    if config.mask == "sliding_window":
        add(f"Sliding window W = {config.window}: query i sees keys j with 0 ≤ i − j < W (W keys, itself included).")
    add("")
    add("Rows are tokens: X is (n, d_model). Weights multiply from the right, as the Transformer paper writes")
    add("it (Q = X W^Q) and as numpy code does: Q = X @ W_Q with W_Q of shape (d_model, H·d_k).")
    add("PyTorch's nn.Linear stores the transpose: its weight is (out, in) = W_Q^T and it computes x W^T.")
    add('"""')
    add("import sys")
    add("import zlib")
    add("")
    add("import numpy as np")
    add("")
    add(f"SENTENCE = {config.sentence!r}")
    add(f"TOKENS = {list(trace.tokens)!r}  # the rows of X")
    add(f"SEED = {seed!r}")
    add(f"N, D_MODEL, H, D_K, D_V = {n}, {d_model}, {h}, {d_k}, {d_v}  # n tokens, width of X, H heads, "
        f"a head's d_k and d_v")
    if grouped:
        add(f"H_KV, G = {h_kv}, {h // h_kv}  # H_kv key/value heads; g = H / H_kv query heads share each one")
    add("steps = {}  # step name -> array, in order")
    add("")
    if not literal:
        add("")
        add("def param(name, shape, fan_in):")
        add('    """A weight at its seeded start: N(0, 1/fan_in), one generator per parameter."""')
        add("    rng = np.random.default_rng([SEED, zlib.crc32(name.encode())])")
        add("    return rng.standard_normal(shape) / np.sqrt(fan_in)")
        add("")
        add("")
        add("def bias(name, shape):")
        add("    rng = np.random.default_rng([SEED, zlib.crc32(name.encode())])")
        add("    return 0.1 * rng.standard_normal(shape)")
        add("")
        add("")
    add("def softmax(x, temperature):")
    add('    """exp((x - max) / T) / sum, along the last axis; a row of -inf gives zeros, not NaN."""')
    add("    z = np.asarray(x, dtype=np.float64) / temperature")
    add("    m = np.max(z, axis=-1, keepdims=True)")
    add("    m = np.where(np.isfinite(m), m, 0.0)")
    add("    e = np.exp(z - m)")
    add("    total = e.sum(axis=-1, keepdims=True)")
    add("    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)")
    add("")
    add("")
    add(f"# -- embeddings X_emb: one row per token, from {f['source']!r}  (n={n}, d_embed={d_embed})")
    add(f"x_embed = {_literal(trace['x_embed'].value)}")
    add('steps["x_embed"] = x_embed')
    add("")
    d_pe = trace["pe"].shape[1] if "pe" in trace else 0
    if config.positional == "sinusoidal":
        add(f"# -- positional encoding PE: PE[p, 2i] = sin(p / base^(2i/d)), PE[p, 2i+1] = cos(p / base^(2i/d)),")
        add(f"#    p the position, i the pair  (n={n}, d={d_pe})")
        add("positions = np.arange(N, dtype=np.float64)[:, None]  # p = 0 … n−1, (n, 1)")
        add(f"pair = np.arange({d_pe}) // 2  # columns 2i and 2i+1 use pair i")
        add(f"angles = positions / np.power({float(config.pe_base)!r}, 2.0 * pair / {d_pe})  # (n, d)")
        add(f"pe = np.where(np.arange({d_pe}) % 2 == 0, np.sin(angles), np.cos(angles))")
    elif config.positional == "learned":
        add(f"# -- positional encoding PE: a learned table at its seeded start  (n={n}, d={d_pe})")
        pe_code = (_literal(trace["pe"].value) if literal else
                   f"0.1 * np.random.default_rng([SEED, 7919, {d_pe}]).standard_normal((N, {d_pe}))")
        add(f"pe = {pe_code}")
    elif config.positional == "index":
        add("# -- positional feature: PE_p = p, the index itself, one extra column  (n, 1)")
        add("pe = np.arange(N, dtype=np.float64)[:, None]")
    if d_pe:
        add('steps["pe"] = pe')
        add("")
    if not d_pe:
        add("x = x_embed  # X = X_emb: " + {"rope": "nothing added to X (RoPE rotates Q and K below)",
                                             "alibi": "nothing added to X (ALiBi biases the scores below)"}.get(
            config.positional, "no positional information"))
    elif d_model != d_embed:
        add(f"x = np.concatenate([x_embed, pe], axis=1)  # X = [X_emb | PE]: (n, {d_embed} + {d_pe} = {d_model})")
    else:
        add("x = x_embed + pe  # X = X_emb + PE, element-wise")
    add('steps["x"] = x')
    add("")
    if trained:
        add(f"# W_Q, W_K, W_V{' and b_Q, b_K, b_V' if config.bias else ''} below were trained (on the explorer's "
            "data/sentiment.csv), so they are written in;")
        if grouped:
            add(f"# W_K, W_V{' (and b_K, b_V)' if config.bias else ''}: each KV head's columns are the mean of its "
                f"group's g = {h // h_kv} trained heads' columns")
            add("# (the GQA paper's conversion of a multi-head checkpoint), averaged by the explorer and written in.")
        add("# W_O and any score parameters are at their seeded random start.")
    for name, heads in (("q", h), ("k", h_kv), ("v", h_kv)):
        big, d_name = name.upper(), ("d_v" if name == "v" else "d_k")
        width = heads * (d_v if name == "v" else d_k)
        count = "H" if name == "q" or not grouped else "H_kv"
        cols = f"{count}·{d_name}={width}" if h > 1 else f"{d_name}={width}"
        add(f"# -- {big} = X W_{big}{' + b_' + big if config.bias else ''}  (n={n}, {cols})")
        add(f"w_{name} = {param(f'w_{name}', (d_model, width), d_model)}  # W_{big}: (d_model={d_model}, {cols})")
        add(f'steps["w_{name}"] = w_{name}')
        if config.bias:
            add(f"b_{name} = {bias(f'b_{name}', (width,))}  # b_{big}: ({cols})")
            add(f'steps["b_{name}"] = b_{name}')
            add(f"{name} = x @ w_{name} + b_{name}")
        else:
            add(f"{name} = x @ w_{name}")
        add(f'steps["{name}"] = {name}')
        if h > 1:
            width_h = d_v if name == "v" else d_k
            count_code = "H" if count == "H" else "H_KV"
            add(f"{name}_heads = {name}.reshape(N, {count_code}, {width_h}).transpose(1, 0, 2)  "
                f"# {big}_h = {big}[:, h·{d_name} : (h+1)·{d_name}], h = 0 … {count}−1: ({count}, n, {d_name}={width_h})")
            add(f'steps["{name}_heads"] = {name}_heads')
        add("")
    if rope:
        base = float(config.pe_base)
        add(f"# -- RoPE: q^R_p = R_p q_p and k^R_p = R_p k_p, every row of Q{'_h' if h > 1 else ''} and "
            f"K{'_h' if h > 1 else ''} turned by its position p = 0 … n−1.")
        add("#    R_p has one 2×2 rotation block per pair i = 0 … d_k/2−1 of columns (2i, 2i+1) (interleaved pairs, as")
        add("#    RoFormer and Meta's Llama code), by the angle p·θ_i with θ_i = base^(−2i/d_k):")
        add("#      (q^R_p)[2i]   = q_p[2i] cos(p·θ_i) − q_p[2i+1] sin(p·θ_i)")
        add("#      (q^R_p)[2i+1] = q_p[2i] sin(p·θ_i) + q_p[2i+1] cos(p·θ_i)")
        add("#    Lengths do not change, and (R_p q)·(R_p′ k) = q·R_{p′−p} k: a score sees p′ − p, not p and p′.")
        add(f"theta = np.power({base!r}, -2.0 * np.arange(D_K // 2) / D_K)  # θ_i = base^(−2i/d_k), "
            f"base = {base:g}: (d_k/2,)")
        add("rope_angles = np.arange(N, dtype=np.float64)[:, None] * theta[None, :]  # p·θ_i: (n, d_k/2)")
        add("cos, sin = np.cos(rope_angles), np.sin(rope_angles)")
        add("")
        add("")
        add("def rotate(x):")
        add('    """R_p x_p for every row p of x (..., n, d_k): each pair (x[2i], x[2i+1]) turned by p·θ_i."""')
        add("    even, odd = x[..., 0::2], x[..., 1::2]  # x[2i], x[2i+1]: (..., n, d_k/2)")
        add("    out = np.empty_like(x)")
        add("    out[..., 0::2] = even * cos - odd * sin")
        add("    out[..., 1::2] = even * sin + odd * cos")
        add("    return out")
        add("")
        add("")
        for name, count in (("q", "H"), ("k", "H_kv" if grouped else "H")):
            big = name.upper()
            src = f"{name}_heads" if h > 1 else name
            shp = f"({count}, n, d_k)" if h > 1 else "(n, d_k)"
            add(f"{name}_rot = rotate({src})  # {big}^R{'_h' if h > 1 else ''}: row p is {name}^R_p = R_p {name}_p, {shp}")
            add(f'steps["{name}_rot"] = {name}_rot')
        add("")
    sq, sk, sv = ("q_heads", "k_heads", "v_heads") if h > 1 else ("q", "k", "v")
    if rope:
        sq, sk = "q_rot", "k_rot"
    hs = "_h" if h > 1 else ""                                    # per head: S_h = Q_h K_h^T, …
    kv = "_{⌊h/g⌋}" if grouped else hs                            # the KV head query head h reads
    r = "^R" if rope else ""
    q_sym, k_sym = f"Q{r}{hs}", (f"(K{r}{kv})" if rope else f"K{kv}")   # (K^R_h)^T: one superscript at a time
    shape = "(H, n_q, n_k)" if h > 1 else "(n_q, n_k)"
    if grouped:
        add(f"# -- grouped-query attention: query head h reads KV head ⌊h / g⌋, so each of the H_kv = {h_kv} KV heads")
        add(f"#    is repeated for its g = {h // h_kv} query heads (as torch's repeat_interleave / enable_gqa do)")
        add(f"k_for_q = np.repeat({sk}, G, axis=0)  # K{r}_{{⌊h/g⌋}} for h = 0 … H−1: (H, n, d_k)")
        add(f"v_for_q = np.repeat({sv}, G, axis=0)  # V_{{⌊h/g⌋}} for h = 0 … H−1: (H, n, d_v)")
        add("")
        sk, sv = "k_for_q", "v_for_q"
    if config.score in ("dot", "scaled_dot"):
        add(f"# -- raw scores: S{hs} = {q_sym} {k_sym}^T  {shape}")
        add(f"scores = {sq} @ np.swapaxes({sk}, -1, -2)")
        add('steps["scores"] = scores')
        logits = "scores"
        if config.score == "scaled_dot":
            add(f"scaled_scores = scores / np.sqrt(D_K)  # Ŝ{hs} = S{hs} / √d_k")
            add('steps["scaled_scores"] = scaled_scores')
            logits = "scaled_scores"
    elif config.score == "additive":
        shape_w, shape_v = (h, d_k, d_k)[h == 1:], (h, d_k)[h == 1:]
        add(f"# -- raw scores, additive: S{hs}[i, j] = v^T tanh(W_1^T q{r}_i + W_2^T k{r}_j) = v · tanh(q{r}_i W_1 + "
            f"k{r}_j W_2), q{r}_i, k{r}_j rows of {q_sym}, {k_sym}  {shape}")
        per = "one per head, " if h > 1 else ""
        for name, sym, shp in (("w_a_q", "W_1", shape_w), ("w_a_k", "W_2", shape_w), ("v_a", "v", shape_v)):
            add(f"{name} = {param(name, shp, d_k)}  # {sym}: {per}{shp}")
            add(f'steps["{name}"] = {name}')
        add(f"hidden = np.tanh(({sq} @ w_a_q)[..., :, None, :] + ({sk} @ w_a_k)[..., None, :, :])  # (.., n_q, n_k, d_a)")
        add('scores = np.einsum("...ija,...a->...ij", hidden, v_a)')
        add('steps["scores"] = scores')
        logits = "scores"
    else:
        add(f"# -- raw scores, bilinear: S{hs} = {q_sym} W {k_sym}^T  {shape}")
        add(f"w_b = {param('w_b', (h, d_k, d_k)[h == 1:], d_k)}  # W: {'one per head, ' if h > 1 else ''}"
            f"{(h, d_k, d_k)[h == 1:]}")
        add('steps["w_b"] = w_b')
        add(f"scores = {sq} @ w_b @ np.swapaxes({sk}, -1, -2)")
        add('steps["scores"] = scores')
        logits = "scores"
    add("")
    before = "Ŝ" if logits == "scaled_scores" else "S"             # the scores the mask and softmax read
    before_h = f"{before}{hs}"
    if alibi:
        add(f"# -- ALiBi: slopes m_h, h = 0 … H−1 (Press et al.): 2^(−8(h+1)/H) when H is a power of two (the paper")
        add("#    counts heads from 1: 2^(−8h/H)); otherwise the c = 2^⌊log2 H⌋ slopes of c heads, then every other")
        add("#    slope of the 2c-head sequence for the remaining H − c heads. Here: "
            + ", ".join(f"m_{i} = {exact_slope(m)}" for i, m in enumerate(trace.facts["alibi_slopes"])))
        add("")
        add("")
        add("def alibi_slopes(n_heads):")
        add('    """m_0 … m_{H−1}: (H,)."""')
        add("    def powers(c):  # 2^(−8k/c) for k = 1 … c")
        add("        return [2.0 ** (-8.0 * k / c) for k in range(1, c + 1)]")
        add("    c = 1 << (n_heads.bit_length() - 1)  # 2^⌊log2 H⌋")
        add("    return np.array(powers(c) + powers(2 * c)[0::2][: n_heads - c])")
        add("")
        add("")
        add("slopes = alibi_slopes(H)  # m_h: (H,)")
        add("distance = np.abs(np.arange(N)[:, None] - np.arange(N)[None, :]).astype(np.float64)  # |i − j|: (n, n)")
        if h > 1:
            add("alibi = 0.0 - slopes[:, None, None] * distance[None]  # (B_h)[i, j] = −m_h |i − j|: (H, n, n)")
        else:
            add("alibi = 0.0 - slopes[0] * distance  # B[i, j] = −m_0 |i − j|: (n, n)")
        add('steps["alibi"] = alibi')
        add(f"biased_scores = {logits} + alibi  # {before_h} + B{hs}: a key further back scores lower")
        add('steps["biased_scores"] = biased_scores')
        add("")
        logits = "biased_scores"
        before_h = f"({before_h} + B{hs})"
    if config.mask != "none":
        if config.mask == "causal":
            add("# -- causal mask M: query i sees keys j = 0 … i")
            add("mask = np.tril(np.ones((N, N), dtype=bool))")
        elif config.mask == "sliding_window":
            add(f"# -- sliding-window mask M: query i sees keys j with 0 ≤ i − j < W, W = {config.window} keys, "
                "itself included")
            add("offset = np.arange(N)[:, None] - np.arange(N)[None, :]  # i − j: (n_q, n_k)")
            add(f"mask = (offset >= 0) & (offset < {config.window})")
        else:
            add("# -- padding mask M: the listed key positions are hidden from every query")
            add("mask = np.ones((N, N), dtype=bool)")
            add(f"mask[:, {list(config.padding)!r}] = False")
        add('steps["mask"] = mask.astype(float)')
        add(f"masked_scores = np.where(mask, {logits}, -np.inf)  # S̃{hs} = {before_h} with -inf where M[i, j] = 0"
            + (" (the same M for every head)" if h > 1 else ""))
        add('steps["masked_scores"] = masked_scores')
        logits = "masked_scores"
        add("")
    s_in = f"S̃{hs}" if logits == "masked_scores" else before_h.strip("()")
    t = float(config.temperature)
    if t != 1 and " + " in s_in:
        s_in = f"({s_in})"                                        # softmax((Ŝ + B) / T)
    add(f"# -- attention weights: A{hs} = softmax({s_in}{'' if t == 1 else ' / T'}), over each row (the keys j)"
        + ("" if t == 1 else f", temperature T = {t!r}"))
    add(f"weights = softmax({logits}, {t!r})")
    add('steps["weights"] = weights')
    add("")
    add(f"context = weights @ {sv}  # C{hs} = A{hs} V{kv}: {'(H, n, d_v)' if h > 1 else '(n, d_v)'}")
    add('steps["context"] = context')
    c_name = "context"
    if h > 1:
        add("concat = context.transpose(1, 0, 2).reshape(N, H * D_V)  # C = [C_0 | … | C_{H−1}], "
            "the heads side by side: (n, H·d_v)")
        add('steps["concat"] = concat')
        c_name = "concat"
    add("")
    add(f"w_o = {param('w_o', (h * d_v, d_model), h * d_v)}  # W_O: ({'H·d_v' if h > 1 else 'd_v'}={h * d_v}, "
        f"d_model={d_model})")
    add('steps["w_o"] = w_o')
    if config.bias:
        add(f"b_o = {bias('b_o', (d_model,))}  # b_O: (d_model={d_model})")
        add('steps["b_o"] = b_o')
        add(f"output = {c_name} @ w_o + b_o  # O = C W_O + b_O: (n, d_model)")
    else:
        add(f"output = {c_name} @ w_o  # O = C W_O: (n, d_model)")
    add('steps["output"] = output')
    add("")
    add("")
    add('if __name__ == "__main__":')
    add("    np.set_printoptions(precision=4, suppress=True, linewidth=120)")
    add('    print("tokens:", TOKENS)')
    add("    for key, value in steps.items():")
    add('        print(f"\\n{key}  shape={value.shape}")')
    add("        print(value)")
    add("    if len(sys.argv) > 1:")
    add("        np.savez(sys.argv[1], **steps)")
    add('        print(f"\\nsaved {len(steps)} steps to {sys.argv[1]}")')
    return "\n".join(L) + "\n"


# ---- the settings as URL query parameters -------------------------------------------------------------

QUERY_FIELDS = tuple(f.name for f in fields(Config) if f.name != "vectors")
CHOICES = {"embedding": EMBEDDINGS, "unknown": UNKNOWN_POLICIES, "positional": POSITIONALS,
           "combine": COMBINES, "score": SCORES, "mask": MASKS, "weights": WEIGHTS}
INTS = ("d_model", "glove_vocab", "d_k", "d_v", "n_heads", "n_kv_heads", "window", "seed")
FLOATS = ("pe_base", "temperature")
_INT = re.compile(r"[+-]?\d{1,12}")
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


def _number_text(v: float) -> str:
    v = float(v)
    return str(int(v)) if v.is_integer() and abs(v) < 1e15 else repr(v)


def config_to_query(config: Config) -> dict[str, str]:
    """Every setting but the uploaded vectors, as strings for a URL's query (st.query_params)."""
    q = {}
    for name in QUERY_FIELDS:
        v = getattr(config, name)
        if name == "padding":
            q[name] = ",".join(str(p) for p in v)
        elif name == "bias":
            q[name] = "1" if v else "0"
        elif name in FLOATS:
            q[name] = _number_text(v)
        else:
            q[name] = str(v)
    return q


def _parse(name: str, raw: str):
    """One query value -> the field's value; ValueError with a short reason."""
    if name == "sentence":
        return raw
    text = raw.strip()
    if name in CHOICES:
        if text.lower() not in CHOICES[name]:
            raise ValueError(f"is not one of {', '.join(CHOICES[name])}")
        return text.lower()
    if name in INTS:
        if not _INT.fullmatch(text):
            raise ValueError("is not a whole number")
        return int(text)
    if name in FLOATS:
        try:
            v = float(text) if len(text) <= 40 else math.nan
        except ValueError:
            raise ValueError("is not a number") from None
        if not math.isfinite(v):
            raise ValueError("is not a finite number")
        return v
    if name == "bias":
        if text.lower() in _TRUE:
            return True
        if text.lower() in _FALSE:
            return False
        raise ValueError("is not true or false (1 or 0)")
    if name == "padding":
        if not text:
            return ()
        parts = [p.strip() for p in text.split(",")]
        if len(parts) > 128 or not all(_INT.fullmatch(p) for p in parts):
            raise ValueError("is not a list of token positions like 1,3")
        return tuple(int(p) for p in parts)
    raise ValueError("is not a setting")                      # pragma: no cover


def _forward_error(config: Config) -> str | None:
    """None if the forward pass runs, else why not (a ConfigError: heads, padding past the end, no known
    words; or a missing table)."""
    from ..forward.stages import run_forward
    try:
        run_forward(config)
        return None
    except ConfigError as e:
        return _short(e)
    except Exception as e:                                     # e.g. the GloVe package missing
        return type(e).__name__


def config_from_query(params, check_forward: bool = True) -> tuple[Config, list[str]]:
    """Settings from a URL's query: (Config, notices). Never raises.

    A malformed, out-of-range or tampered value falls back to that field's default, with a notice
    naming the field. Values are applied in field order, each checked with the ones before it
    (so of d_k=256 and n_heads=4, over the size limit together, the later one falls back). With
    check_forward, a combination the forward pass rejects (heads not dividing d_model, a padding
    position past the sentence, only unknown words) is undone one field at a time. Keys that
    are not settings are ignored; `vectors` never comes from a URL.
    """
    notices: list[str] = []
    default = Config()
    try:
        items = dict(params).items()
    except Exception:
        return default, ["The link's settings could not be read; using the defaults."]
    parsed = {}
    for name, raw in items:
        if name not in QUERY_FIELDS:
            continue
        if isinstance(raw, (list, tuple)):
            raw = raw[-1] if raw else ""
        try:
            parsed[name] = _parse(name, str(raw))
        except ValueError as e:
            notices.append(f"Link setting “{name}” {e}; using the default ({_shown(name, getattr(default, name))}).")
    values: dict = {}
    for name in QUERY_FIELDS:
        if name not in parsed:
            continue
        try:
            Config(**values, **{name: parsed[name]})
            values[name] = parsed[name]
        except ConfigError as e:
            notices.append(f"Link setting “{name}” cannot be used ({_short(e)}); using the default "
                           f"({_shown(name, getattr(default, name))}).")
    config = Config(**values)
    error = _forward_error(config) if check_forward else None
    if error is not None:
        changed = [k for k in values if values[k] != getattr(default, k)]
        for name in reversed(changed):                        # the one field whose default makes it run
            try:                                              # without it the others may not combine
                trial = Config(**{k: v for k, v in values.items() if k != name})
            except ConfigError:                               # (n_heads dropped, n_kv_heads kept): next one
                continue
            if _forward_error(trial) is None:
                notices.append(f"Link setting “{name}” does not fit with the others ({error}); using the "
                               f"default ({_shown(name, getattr(default, name))}).")
                return trial, notices
        notices.append(f"The link's settings do not work together ({error}); using the defaults.")
        return default, notices
    return config, notices


def _shown(name: str, value) -> str:
    return repr(value) if name == "sentence" else ",".join(map(str, value)) or "none" if name == "padding" else str(value)


def _short(error: Exception) -> str:
    text = str(error)
    return text if len(text) <= 160 else text[:157] + "…"
