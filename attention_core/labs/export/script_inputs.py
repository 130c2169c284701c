"""The numpy script's first steps: the embeddings X_emb, the positional encoding PE, X, the projections
Q = X W_Q, K = X W_K, V = X W_V (split per head), and RoPE's rotation of Q and K.

    >>> from attention_core import Config, run_forward
    >>> s = Script(Config(), run_forward(Config()), literal=False)
    >>> add_x(s)
    >>> s.lines[-3:]
    ['x = x_embed + pe  # X = X_emb + PE, element-wise', 'steps["x"] = x', '']
"""
from __future__ import annotations

from .script_base import Script, literal

NOTHING_ADDED = {"rope": "nothing added to X (RoPE rotates Q and K below)",
                 "alibi": "nothing added to X (ALiBi biases the scores below)"}

ROTATE = '''

def rotate(x):
    """R_p x_p for every row p of x (..., n, d_k): each pair (x[2i], x[2i+1]) turned by p·θ_i."""
    even, odd = x[..., 0::2], x[..., 1::2]  # x[2i], x[2i+1]: (..., n, d_k/2)
    out = np.empty_like(x)
    out[..., 0::2] = even * cos - odd * sin
    out[..., 1::2] = even * sin + odd * cos
    return out

'''


def add_inputs(s: Script) -> None:
    """X, then Q, K, V (per head), then RoPE's Q^R, K^R under RoPE."""
    add_x(s)
    add_projections(s)
    if s.rope:
        add_rope(s)


def add_x(s: Script) -> None:
    """X_emb as literal rows, PE (sinusoidal, learned, the index, or none), and X = X_emb + PE or [X_emb | PE]."""
    config, trace, add = s.config, s.trace, s.add
    f = trace.facts
    n, d_embed, d_model = f["n"], f["d_embed"], f["d_model"]
    add(f"# -- embeddings X_emb: one row per token, from {f['source']!r}  (n={n}, d_embed={d_embed})")
    add(f"x_embed = {literal(trace['x_embed'].value)}")
    add('steps["x_embed"] = x_embed')
    add("")
    d_pe = trace["pe"].shape[1] if "pe" in trace else 0
    if config.positional == "sinusoidal":
        add("# -- positional encoding PE: PE[p, 2i] = sin(p / base^(2i/d)), PE[p, 2i+1] = cos(p / base^(2i/d)),")
        add(f"#    p the position, i the pair  (n={n}, d={d_pe})")
        add("positions = np.arange(N, dtype=np.float64)[:, None]  # p = 0 … n−1, (n, 1)")
        add(f"pair = np.arange({d_pe}) // 2  # columns 2i and 2i+1 use pair i")
        add(f"angles = positions / np.power({float(config.pe_base)!r}, 2.0 * pair / {d_pe})  # (n, d)")
        add(f"pe = np.where(np.arange({d_pe}) % 2 == 0, np.sin(angles), np.cos(angles))")
    elif config.positional == "learned":
        add(f"# -- positional encoding PE: a learned table at its seeded start  (n={n}, d={d_pe})")
        pe_code = (literal(trace["pe"].value) if s.literal else
                   f"0.1 * np.random.default_rng([SEED, 7919, {d_pe}]).standard_normal((N, {d_pe}))")
        add(f"pe = {pe_code}")
    elif config.positional == "index":
        add("# -- positional feature: PE_p = p, the index itself, one extra column  (n, 1)")
        add("pe = np.arange(N, dtype=np.float64)[:, None]")
    if d_pe:
        add('steps["pe"] = pe')
        add("")
    if not d_pe:
        add("x = x_embed  # X = X_emb: " + NOTHING_ADDED.get(config.positional, "no positional information"))
    elif d_model != d_embed:
        add(f"x = np.concatenate([x_embed, pe], axis=1)  # X = [X_emb | PE]: (n, {d_embed} + {d_pe} = {d_model})")
    else:
        add("x = x_embed + pe  # X = X_emb + PE, element-wise")
    add('steps["x"] = x')
    add("")


def add_projections(s: Script) -> None:
    """Q = X W_Q (+ b_Q), K, V likewise, each split into its heads' blocks (H_kv blocks for K, V with GQA)."""
    config, add, h, h_kv, grouped = s.config, s.add, s.h, s.h_kv, s.grouped
    n, d_model, d_k, d_v = s.trace.facts["n"], s.trace.facts["d_model"], config.d_k, config.d_v
    if s.trained:
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
        add(f"w_{name} = {s.param(f'w_{name}', (d_model, width), d_model)}  # W_{big}: (d_model={d_model}, {cols})")
        add(f'steps["w_{name}"] = w_{name}')
        if config.bias:
            add(f"b_{name} = {s.bias(f'b_{name}', (width,))}  # b_{big}: ({cols})")
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


def add_rope(s: Script) -> None:
    """RoPE: the angles p·θ_i, a rotate() that turns each pair of columns (2i, 2i+1), and Q^R, K^R."""
    add, h = s.add, s.h
    base = float(s.config.pe_base)
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
    s.block(ROTATE)
    for name, count in (("q", "H"), ("k", "H_kv" if s.grouped else "H")):
        big = name.upper()
        src = f"{name}_heads" if h > 1 else name
        shp = f"({count}, n, d_k)" if h > 1 else "(n, d_k)"
        add(f"{name}_rot = rotate({src})  # {big}^R{'_h' if h > 1 else ''}: row p is {name}^R_p = R_p {name}_p, {shp}")
        add(f'steps["{name}_rot"] = {name}_rot')
    add("")
