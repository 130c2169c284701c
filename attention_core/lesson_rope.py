"""The RoPE page's computations (no Streamlit): Q and K of the learner's sentence rotated by position.

Q = X_emb W_Q and K = X_emb W_K come from the forward pass run without a positional encoding (RoPE adds
nothing to X; with several heads, head 0's d_k columns). Then pair i of row p is turned by p·θ_i,
θ_i = base^(−2i/d_k) (attention_core.rope), in the interleaved or the half pairing, and the scores
Ŝ = Q^R K^{R⊤} / √d_k read the rotated rows. Every step has a click-a-cell explainer (kind "rope").

    >>> from attention_core import Config
    >>> t = rope_trace(Config(sentence="I love you today"), 10_000.0, "interleaved")
    >>> t["angles"].shape, t["q_rot"].shape, t["scaled_scores"].shape
    ((4, 2), (4, 4), (4, 4))
    >>> t.facts["complex_gap"] < 1e-12                   # the rotation equals RoPE's complex-number form
    True
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from .claims import claim
from .config import Config, ConfigError
from .explain import SYMBOLS, Context, Explanation, _project, fmt, register
from .forward import run_forward
from .positional import sinusoidal_encoding
from .rope import half_permutation, rope_angles, rope_frequencies, rotary_complex, rotary_embedding
from .trace import Trace

# base presets: (value, label) — rope_theta in the published configs
BASES = {"1e4": (10_000.0, "10⁴ · RoFormer, Llama 2"), "5e5": (500_000.0, "5·10⁵ · Llama 3"),
         "1e6": (1_000_000.0, "10⁶ · Qwen2.5")}
MAX_BASE = 1e12            # above it every pair but the first turns by less than 10⁻⁶ rad per position at d_k ≥ 4
MAX_OFFSET = 100_000
FAMILIES = {"interleaved": "RoFormer, GPT-J and Meta's Llama code (complex numbers)",
            "half": "GPT-NeoX and Hugging Face's Llama (rotate_half)"}

SYMBOLS.setdefault("q_rot", ("Q^R", "Q^R"))
SYMBOLS.setdefault("k_rot", ("K^R", "K^R"))


@dataclass(frozen=True)
class ShiftSettings:
    """What a shift check compares: how position enters (RoPE on Q, K or a vector added to X) and the score."""
    position: str = "rope"             # rope | added (sinusoidal PE added to X)
    score: str = "scaled_dot"          # dot | scaled_dot | additive | bilinear


claim("rope_shift_invariant",
      "every score stays the same when the whole sentence moves: (R_m q)·(R_n k) = q·R_(n−m) k depends on "
      "m − n alone, exactly in real arithmetic (here to float64 rounding)",
      lambda s: s.position == "rope" and s.score in ("dot", "scaled_dot"),
      "RoPE on Q and K with dot-product scores (a rotation of both rows by the same angle cancels in q·k); "
      "not a position vector added to X, nor an additive or bilinear score of the rotated rows",
      "tests/test_rope.py::test_dot_product_scores_depend_only_on_the_distance",
      about="rope", otherwise="the scores change when the whole sentence moves")

claim("rope_pairings_differ",
      "the two pairings rotate different pairs of columns, so weights made for one give other scores under "
      "the other unless their columns are permuted",
      lambda d_k: d_k >= 4,
      "d_k ≥ 4 (with d_k = 2 there is one pair, (x_0, x_1), in both)",
      "tests/test_rope.py::test_pairings_differ_unless_d_k_is_2",
      about="rope", otherwise="with d_k = 2 there is one pair, (x_0, x_1): both pairings rotate it alike")


def parse_base(text) -> float:
    """A base typed by the learner: a finite number above 1 and at most 10¹²."""
    try:
        base = float(str(text).strip().replace(",", "").replace("_", ""))
    except ValueError:
        raise ConfigError(f"The base must be a number such as 10000 or 5e5, not “{str(text)[:40]}”.") from None
    if not math.isfinite(base) or not base > 1:
        raise ConfigError(f"The RoPE base must be a finite number above 1 (10,000 in RoFormer and Llama 2, "
                          f"500,000 in Llama 3), not {text!s:.40}.")
    if base > MAX_BASE:
        raise ConfigError(f"A base of {base:.3g} is too large to show: above 10¹² every pair but the first "
                          "hardly turns (published models use 10⁴ to 10⁷). Choose a smaller base.")
    return base


def base_tex(base: float, latex: bool = True) -> str:
    r"""The base as a power's base: 10000, 500000, 123.4, (2 \cdot 10^{7}) / '2·10^7' for a plain-text one.

    >>> base_tex(10_000.0), base_tex(2e7), base_tex(2e7, latex=False), base_tex(1e12)
    ('10000', '(2 \\cdot 10^{7})', '2·10^7', '10^{12}')
    """
    if base < 1e7:
        return f"{base:.10g}"
    mantissa, exponent = f"{base:.6e}".split("e")
    mantissa, exponent = mantissa.rstrip("0").rstrip("."), int(exponent)
    if latex:
        return rf"10^{{{exponent}}}" if mantissa == "1" else rf"({mantissa} \cdot 10^{{{exponent}}})"
    return f"10^{exponent}" if mantissa == "1" else f"{mantissa}·10^{exponent}"


def check_even(d_k: int) -> None:
    if d_k % 2:
        raise ConfigError(f"RoPE needs an even d_k: it rotates pairs of columns, and d_k = {d_k} is odd. Set d_k "
                          f"to {d_k - 1 if d_k > 1 else 2} or {d_k + 1} in the sidebar.")


def rotate(x: np.ndarray, positions, base: float, pairing: str) -> np.ndarray:
    """rotary_embedding with the page's pairing; (n, d) -> (n, d)."""
    return rotary_embedding(x, positions, base=base, pairing=pairing)


def complex_form(x: np.ndarray, positions, base: float, pairing: str) -> np.ndarray:
    """The same rotation through RoPE's complex-number form (interleaved pairs z_i = x_2i + i·x_2i+1 times
    e^{ipθ_i}); for the half pairing read in the interleaved column order and put back; (n, d)."""
    if pairing == "interleaved":
        return rotary_complex(x, positions, base)
    perm = half_permutation(x.shape[-1])
    inverse = np.argsort(perm)
    return rotary_complex(x[..., inverse], positions, base)[..., perm]


def scaled_scores(q_rot: np.ndarray, k_rot: np.ndarray) -> np.ndarray:
    """Ŝ = Q^R K^{R⊤} / √d_k; (n, d) × (n, d) -> (n, n)."""
    return q_rot @ k_rot.T / math.sqrt(q_rot.shape[-1])


@functools.lru_cache(maxsize=16)
def projections(config: Config) -> Trace:
    """The forward pass without a positional encoding: X = X_emb, Q = X W_Q, K = X W_K."""
    return run_forward(config.replace(positional="none"))


def sentence_key(config: Config) -> Config:
    """The settings Q and K depend on here: positional encoding, score, mask and temperature set to one value
    (this page adds no position to X and computes its own scores), so moving them recomputes nothing."""
    return config.replace(positional="none", combine="add", pe_base=10_000.0, score="scaled_dot", mask="none",
                          padding=(), temperature=1.0)


def rope_trace(config: Config, base: float = 10_000.0, pairing: str = "interleaved", offset: int = 0) -> Trace:
    """Q, K, the angles, Q^R, K^R and Ŝ of the sentence, token p at position p + offset; the checks against
    the complex form and the other pairing in facts. Raises ConfigError for an odd d_k, a bad base, pairing
    or offset."""
    check_even(config.d_k)
    if isinstance(offset, bool) or not isinstance(offset, (int, np.integer)) or not 0 <= offset <= MAX_OFFSET:
        raise ConfigError(f"The offset must be a whole number from 0 to {MAX_OFFSET:,}, not {offset!r}.")
    return _rope_trace(sentence_key(config), parse_base(base), pairing, int(offset))


@functools.lru_cache(maxsize=64)
def _rope_trace(config: Config, base: float, pairing: str, offset: int) -> Trace:
    d = config.d_k
    if pairing not in FAMILIES:
        raise ConfigError(f"pairing={pairing!r} is not 'interleaved' or 'half'.")
    plain = projections(config)
    n, h = plain.n, config.n_heads
    head = " (head 0's d_k columns)" if h > 1 else ""
    t = Trace(plain.tokens)
    t.facts.update(kind="rope", config=config, base=base, pairing=pairing, d_k=d, n=n, n_heads=h, offset=offset)
    positions = np.arange(n) + offset                                           # (n,)
    at = f" at positions p + {offset}" if offset else ""
    t.add("x_embed", "Embeddings X_emb", plain["x_embed"].value, ("n", "d_embed"), r"X = X_{\text{emb}}",
          why="No positional encoding is added: RoPE puts position into Q and K instead.")
    inputs = {}
    for name in ("q", "k"):
        big = name.upper()
        t.add(f"w_{name}", f"W_{big}{head}", plain[f"w_{name}"].value[:, :d], ("d_embed", "d_k"),
              rf"W_{big} \in \mathbb{{R}}^{{{plain['w_' + name].shape[0]} \times {d}}}", why=plain[f"w_{name}"].why)
        inputs[name] = ("x_embed", f"w_{name}")
        formula = rf"{big} = X_{{\text{{emb}}}} W_{big}"
        if config.bias:
            t.add(f"b_{name}", f"b_{big}", plain[f"b_{name}"].value[:d], ("d_k",), rf"b_{big} \in \mathbb{{R}}^{{{d}}}")
            inputs[name] += (f"b_{name}",)
            formula += rf" + b_{big}"
        t.add(name, {"q": "Queries Q", "k": "Keys K"}[name], plain[name].value[:, :d], ("n", "d_k"), formula,
              inputs[name], why=f"Before rotation{head}: row p is the same wherever its word stands.")
    theta = rope_frequencies(d, base)                                            # (d/2,)
    t.facts["theta"] = theta
    t.facts["axis_labels"] = {"d_k/2": [f"i={i}" for i in range(d // 2)]}
    t.add("angles", "Rotation angles p·θ_i" + at, rope_angles(positions, d, base), ("n", "d_k/2"),
          rf"p\,\theta_i = p \cdot {base_tex(base)}^{{-2i/{d}}}", why=(
              "Row p (the token at position p), column i (pair i): how far pair i of that token's q and k is "
              "turned, in radians. Pair 0 turns 1 radian per position; later pairs ever more slowly."),
          scale="sequential")
    q, k = t["q"].value, t["k"].value
    pairs = (r"(x_{2i},\, x_{2i+1})" if pairing == "interleaved" else rf"(x_i,\, x_{{i+{d // 2}}})")
    for name, x in (("q", q), ("k", k)):
        big = name.upper()
        t.add(f"{name}_rot", f"{big} rotated: {big}^R" + at, rotate(x, positions, base, pairing), ("n", "d_k"),
              rf"{name}^R_p = R_p\, {name}_p,\quad \text{{pair }} {pairs} \text{{ turned by }} p\,\theta_i",
              (name, "angles"), why=f"Each pair of row p's columns turned by its angle ({pairing} pairing, as in "
                                    f"{FAMILIES[pairing]}). Lengths stay; directions turn.")
    q_rot, k_rot = t["q_rot"].value, t["k_rot"].value
    t.add("scaled_scores", "Scaled scores Ŝ of the rotated rows" + at, scaled_scores(q_rot, k_rot), ("n_q", "n_k"),
          rf"\hat S = \frac{{Q^R K^{{R\top}}}}{{\sqrt{{d_k}}}} = \frac{{Q^R K^{{R\top}}}}{{\sqrt{{{d}}}}}",
          ("q_rot", "k_rot"), why="Entry (m, n): the rotated query of position m against the rotated key of "
                                 "position n. The rotations enter only through the angle between them, (n − m)·θ_i.")
    t.facts["complex_gap"] = max(float(np.abs(complex_form(x, positions, base, pairing) - t[f"{s}_rot"].value).max())
                                 for s, x in (("q", q), ("k", k)))
    t.facts.update(pairing_checks(q, k, base))
    return t


def pairing_checks(q: np.ndarray, k: np.ndarray, base: float) -> dict:
    """The permutation between the pairings, checked on this Q, K: half of the permuted columns is the
    permuted interleaved result; permuting W_Q, W_K's columns (so Q, K's) keeps every score; not permuting
    them changes the scores (d_k ≥ 4)."""
    d = q.shape[1]
    perm = half_permutation(d)
    inter_q = rotate(q, None, base, "interleaved")
    inter = scaled_scores(inter_q, rotate(k, None, base, "interleaved"))
    half_permuted = scaled_scores(rotate(q[:, perm], None, base, "half"), rotate(k[:, perm], None, base, "half"))
    half_same = scaled_scores(rotate(q, None, base, "half"), rotate(k, None, base, "half"))
    return {"perm": perm,
            "perm_rotation_gap": float(np.abs(rotate(q[:, perm], None, base, "half") - inter_q[:, perm]).max()),
            "perm_scores_gap": float(np.abs(half_permuted - inter).max()),
            "mismatch_gap": float(np.abs(half_same - inter).max())}


def shift_check(config: Config, base: float, pairing: str, offset: int) -> dict:
    """See _shift_check; cached per (sentence_key, base, pairing, offset)."""
    rope_trace(config, base, pairing, offset)                    # the checks: d_k, base, pairing, offset
    return _shift_check(sentence_key(config), float(base), pairing, int(offset))


@functools.lru_cache(maxsize=256)
def _shift_check(config: Config, base: float, pairing: str, offset: int) -> dict:
    """Positions p + offset instead of p: how much Q^R and Ŝ move with RoPE, and how much Ŝ moves when a
    sinusoidal PE (same base) is added to X instead: {"rot": max|ΔQ^R|, "rope": max|ΔŜ|, "added": max|ΔŜ|,
    "trace": the rope trace at positions p + offset}."""
    t, moved = rope_trace(config, base, pairing), rope_trace(config, base, pairing, offset)
    n = t.n
    x, w_q, w_k = t["x_embed"].value, t["w_q"].value, t["w_k"].value
    pe = sinusoidal_encoding(n + offset, x.shape[1], base)                 # (n + offset, d_embed)
    b_q = t["b_q"].value if "b_q" in t else 0.0
    b_k = t["b_k"].value if "b_k" in t else 0.0
    added = [scaled_scores((x + p) @ w_q + b_q, (x + p) @ w_k + b_k) for p in (pe[:n], pe[offset:])]
    return {"rot": float(np.abs(moved["q_rot"].value - t["q_rot"].value).max()),
            "rope": float(np.abs(moved["scaled_scores"].value - t["scaled_scores"].value).max()),
            "added": float(np.abs(added[1] - added[0]).max()), "trace": moved}


def pair_path(vector: np.ndarray, theta: float, p: int) -> list[dict]:
    """One pair (a, b) turned by 0, θ, 2θ, …, pθ: the rows of the pair's picture, the last one at position p."""
    a, b = float(vector[0]), float(vector[1])
    out = []
    for s in range(p + 1):
        c, si = math.cos(s * theta), math.sin(s * theta)
        out.append({"position": s, "x": a * c - b * si, "y": a * si + b * c, "x0": 0.0, "y0": 0.0, "now": s == p})
    return out


# ---- the same rotation in torch, as the model libraries write it (imported lazily) --------------------

def torch_rope_complex(x: np.ndarray, positions, base: float) -> np.ndarray:
    """Meta's Llama code (precompute_freqs_cis, apply_rotary_emb) in float64: interleaved pairs as complex
    numbers times torch.polar(1, p·θ_i); (n, d) -> (n, d)."""
    import torch
    x_t = torch.tensor(np.array(x, dtype=np.float64))
    n, d = x_t.shape
    freqs = 1.0 / (base ** (torch.arange(0, d, 2, dtype=torch.float64)[: d // 2] / d))      # (d/2,)
    p = torch.as_tensor(np.arange(n) if positions is None else np.asarray(positions), dtype=torch.float64)
    freqs_cis = torch.polar(torch.ones(n, d // 2, dtype=torch.float64), torch.outer(p, freqs))  # (n, d/2) complex
    x_c = torch.view_as_complex(x_t.reshape(n, -1, 2).contiguous())                         # (n, d/2)
    return torch.view_as_real(x_c * freqs_cis).flatten(1).numpy()


def torch_rope_rotate_half(x: np.ndarray, positions, base: float) -> np.ndarray:
    """Hugging Face's Llama (LlamaRotaryEmbedding, apply_rotary_pos_emb) in float64: x·cos + rotate_half(x)·sin
    with cos, sin repeated over both halves; (n, d) -> (n, d)."""
    import torch
    x_t = torch.tensor(np.array(x, dtype=np.float64))
    n, d = x_t.shape
    inv_freq = 1.0 / (base ** (torch.arange(0, d, 2, dtype=torch.float64) / d))             # (d/2,)
    p = torch.as_tensor(np.arange(n) if positions is None else np.asarray(positions), dtype=torch.float64)
    emb = torch.cat((torch.outer(p, inv_freq),) * 2, dim=-1)                               # (n, d)
    x1, x2 = x_t[..., : d // 2], x_t[..., d // 2:]
    return (x_t * emb.cos() + torch.cat((-x2, x1), dim=-1) * emb.sin()).numpy()


def torch_checks(t: Trace) -> dict:
    """This page's Q^R, K^R and Ŝ against both torch forms (each fed the column order it pairs):
    max absolute differences {"complex", "rotate_half", "scores"}."""
    base, pairing, d = float(t.facts["base"]), t.facts["pairing"], t.facts["d_k"]
    at = np.arange(t.n) + t.facts.get("offset", 0)                          # the rows' positions
    perm = half_permutation(d)
    inverse = np.argsort(perm)
    out = {"complex": 0.0, "rotate_half": 0.0}
    rotated = {}
    for name in ("q", "k"):
        x, mine = t[name].value, t[f"{name}_rot"].value
        if pairing == "interleaved":
            via_complex = torch_rope_complex(x, at, base)
            via_half = torch_rope_rotate_half(x[:, perm], at, base)[:, inverse]
        else:
            via_complex = torch_rope_complex(x[:, inverse], at, base)[:, perm]
            via_half = torch_rope_rotate_half(x, at, base)
        out["complex"] = max(out["complex"], float(np.abs(via_complex - mine).max()))
        out["rotate_half"] = max(out["rotate_half"], float(np.abs(via_half - mine).max()))
        rotated[name] = via_complex
    out["scores"] = float(np.abs(scaled_scores(rotated["q"], rotated["k"]) - t["scaled_scores"].value).max())
    return out


# ---- click a cell: the arithmetic (kind "rope") -------------------------------------------------------

def _projection_of(key: str):
    def explain_projection(ctx: Context, cell):
        i, j = cell
        b_key = f"b_{key}" if f"b_{key}" in ctx.trace else None
        note = (f"Row {i} (“{ctx.word(i)}”) of X_emb (no positional encoding) times column {j} of "
                f"W_{key.upper()}" + (f", plus b_{key.upper()}[{j}]." if b_key else "."))
        if ctx.trace.facts.get("n_heads", 1) > 1:
            note += " With several heads this page takes head 0's columns."
        return _project(ctx, key, cell, "x_embed", f"w_{key}", b_key, note)
    return explain_projection


for _key in ("q", "k"):
    register(_key, kind="rope")(_projection_of(_key))


@register("angles", kind="rope")
def _angle(ctx: Context, cell):
    row, i = cell
    f = ctx.trace.facts
    p = row + f.get("offset", 0)
    d, base = f["d_k"], float(f["base"])
    theta = base ** (-2.0 * i / d)
    value = p * theta
    b = base_tex(base)
    symbolic = rf"p\,\theta_{{{i}}} = p \cdot b^{{-2i/d_k}},\ p={p},\ i={i},\ d_k={d},\ b={b}"
    shown = rf"{p} \cdot {b}^{{-{2 * i}/{d}}} = {p} \cdot {ctx.num(theta)}"
    text = (f"p·θ_{i} = p · b^(−2i/d_k), p={p}, i={i}, d_k={d}, b={base_tex(base, False)}\n"
            f"  = {p} · {base_tex(base, False)}^(−{2 * i}/{d}) = {p} · {ctx.num_text(theta)}\n  = {ctx.num_text(value)}")
    turns = value / (2 * math.pi)
    note = (f"Token {row} (“{ctx.word(row)}”) stands at position p = {p}; pair {i} turns θ_{i} = "
            f"{fmt(theta, ctx.precision, False)} rad per position, so {fmt(value, ctx.precision, False)} rad here "
            f"({math.degrees(value) % 360:.1f}° after {int(turns)} whole turn{'s' if int(turns) != 1 else ''}).")
    return Explanation("angles", cell, symbolic, shown, rf"p\,\theta_{{{i}}} = {ctx.num(value)}", value, text,
                       note=note, n_terms=1)


def _rotation_of(key: str):
    def explain_rotation(ctx: Context, cell):
        row, col = cell
        f = ctx.trace.facts
        p = row + f.get("offset", 0)
        d, half = f["d_k"], f["d_k"] // 2
        src = key[0]
        if f["pairing"] == "interleaved":
            i, second = divmod(col, 2)
            c0, c1 = 2 * i, 2 * i + 1
        else:
            i, second = col % half, col >= half
            c0, c1 = i, i + half
        angle = float(ctx.value("angles")[row, i])
        a, b = float(ctx.value(src)[row, c0]), float(ctx.value(src)[row, c1])
        cos, sin = math.cos(angle), math.sin(angle)
        value = math.fsum([a * sin, b * cos]) if second else math.fsum([a * cos, -b * sin])
        lhs, lhs_text = ctx.ref(key, cell), ctx.ref_text(key, cell)
        x0, x1, t0, t1 = (ctx.ref(src, (row, c0)), ctx.ref(src, (row, c1)), ctx.ref_text(src, (row, c0)),
                          ctx.ref_text(src, (row, c1)))
        ang = rf"{p}\theta_{{{i}}}"
        if second:
            symbolic = rf"{lhs} = {x0} \sin {ang} + {x1} \cos {ang}"
            shown = rf"{ctx.factor(a)} \cdot {ctx.factor(sin)} + {ctx.factor(b)} \cdot {ctx.factor(cos)}"
            text = (f"{lhs_text} = {t0}·sin({p}θ_{i}) + {t1}·cos({p}θ_{i})\n  = {ctx.factor_text(a)}·"
                    f"{ctx.factor_text(sin)} + {ctx.factor_text(b)}·{ctx.factor_text(cos)}\n  = {ctx.num_text(value)}")
        else:
            symbolic = rf"{lhs} = {x0} \cos {ang} - {x1} \sin {ang}"
            shown = rf"{ctx.factor(a)} \cdot {ctx.factor(cos)} - {ctx.factor(b)} \cdot {ctx.factor(sin)}"
            text = (f"{lhs_text} = {t0}·cos({p}θ_{i}) − {t1}·sin({p}θ_{i})\n  = {ctx.factor_text(a)}·"
                    f"{ctx.factor_text(cos)} − {ctx.factor_text(b)}·{ctx.factor_text(sin)}\n  = {ctx.num_text(value)}")
        note = (f"Row {row} (“{ctx.word(row)}”) stands at position p = {p}. Its pair {i} is columns ({c0}, {c1}) in the {f['pairing']} pairing; it "
                f"turns by p·θ_{i} = {fmt(angle, ctx.precision, False)} rad (cos = {fmt(cos, ctx.precision, False)}, "
                f"sin = {fmt(sin, ctx.precision, False)}): the 2×2 rotation [[cos, −sin], [sin, cos]] times "
                f"({fmt(a, ctx.precision, False)}, {fmt(b, ctx.precision, False)}); this cell is its "
                f"{'second' if second else 'first'} entry.")
        return Explanation(key, cell, symbolic, shown, f"{lhs} = {ctx.num(value)}", value, text, note=note, n_terms=2,
                           reads=((src, (row, c0)), (src, (row, c1)), ("angles", (row, i))))
    return explain_rotation


for _key in ("q_rot", "k_rot"):
    register(_key, kind="rope")(_rotation_of(_key))


@register("scaled_scores", kind="rope")
def _scores(ctx: Context, cell):
    m, n = cell
    q, k = ctx.value("q_rot")[m], ctx.value("k_rot")[n]
    d = q.shape[0]
    terms = [(ctx.ref("q_rot", (m, c)), ctx.ref_text("q_rot", (m, c)), q[c], ctx.ref("k_rot", (n, c)),
              ctx.ref_text("k_rot", (n, c)), k[c], ("q_rot", (m, c)), ("k_rot", (n, c))) for c in range(d)]
    rhs = rf"\frac{{\sum_{{c=0}}^{{{d - 1}}} {ctx.ref('q_rot', (m, 'c'))}\, {ctx.ref('k_rot', (n, 'c'))}}}{{\sqrt{{d_k}}}}"
    rhs_text = f"Σ_c {ctx.ref_text('q_rot', (m, 'c'))}·{ctx.ref_text('k_rot', (n, 'c'))} / √d_k"
    note = (f"The rotated query of position {m} (“{ctx.word(m)}”) against the rotated key of position {n} "
            f"(“{ctx.word(n)}”): a dot product over the d_k = {d} columns, divided by √{d}. Each pair contributes "
            f"|q_i||k_i| cos(angle between them + ({n} − {m})·θ_i): only the distance {n} − {m} = {n - m} enters.")
    return ctx.sum_of_products("scaled_scores", cell, rhs, rhs_text, terms,
                               divisor=(rf"\sqrt{{{d}}}", f"√{d}", math.sqrt(d)), note=note)
