"""The RoPE page's lesson (no Streamlit): one head's queries and keys of the forward pass, turned by position.

The page runs the forward pass under the sidebar's settings with Position = RoPE (`with_rope`: the same
settings when the sidebar's Position already is RoPE) and reads its Trace: X = X_emb, Q and K with the
sidebar's weights, biases, heads and KV heads, Q^R and K^R (interleaved pairs, token i at position i,
θ_i = base^(−2i/d_k) with the sidebar's base) and the scores of the rotated rows under the sidebar's score
function. `rope_lesson` puts one query head h and the KV head ⌊h/g⌋ it reads into a Trace of its own
(kind "rope", one click-a-cell explainer per step), with the angles p·θ_i, and two comparisons the forward
pass does not make: the half pairing (x_i, x_{i+d_k/2}) and the whole sentence shifted by an offset.

    >>> from attention_core import Config, run_forward
    >>> forward = run_forward(Config(positional="rope", weights="random"))
    >>> t = rope_lesson(forward)
    >>> t["angles"].shape, t["q_rot"].shape, t["scaled_scores"].shape
    ((4, 2), (4, 4), (4, 4))
    >>> bool((t["q_rot"].value == forward["q_rot"].value).all())          # the forward pass's own Q^R
    True
    >>> t.facts["complex_gap"] < 1e-12                   # the rotation equals RoPE's complex-number form
    True
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from ..math import attention as att
from ..forward.claims import claim, holds
from ..forward.config import Config
from ..math.limits import ConfigError
from ..explanations import SYMBOLS, Context, Explanation, fmt, register
from ..math.positional import sinusoidal_encoding
from ..math.rope import half_permutation, rope_angles, rope_frequencies, rotary_complex, rotary_embedding
from ..forward.trace import Trace

# rope_theta in published configs: the sidebar's base can be set to one of them from the page
BASES = {10_000.0: "RoFormer, Llama 2", 500_000.0: "Llama 3", 1_000_000.0: "Qwen2.5"}
MAX_OFFSET = 100_000
FAMILIES = {"interleaved": "RoFormer, GPT-J and Meta's Llama code (complex numbers)",
            "half": "GPT-NeoX and Hugging Face's Llama (the rotate-half form)"}
DOT_SCORES = ("dot", "scaled_dot")

SYMBOLS.setdefault("q_rot", ("Q^R", "Q^R"))
SYMBOLS.setdefault("k_rot", ("K^R", "K^R"))


@dataclass(frozen=True)
class RopeSettings:
    """What the page's sentences read: the settings it computes with (the sidebar's, Position = RoPE) and its
    own controls (the pairing, the shift)."""
    config: Config
    pairing: str = "interleaved"           # interleaved (the forward pass's) | half (a comparison)
    offset: int = 0                        # the shift of the whole sentence (section 5)
    n: int = 0                             # tokens (0: counted from the config's sentence)

    def __post_init__(self):
        if not self.n:
            from ..forward.claims import _n_tokens
            object.__setattr__(self, "n", _n_tokens(self.config))

    @property
    def d_k(self) -> int:
        return self.config.d_k

    @property
    def dot(self) -> bool:
        """The scores are dot products of the rotated rows (scaled or not)."""
        return self.config.score in DOT_SCORES


claim("rope_distance_only",
      "the score of query i with key j sees their positions only through the distance j − i: "
      "$q^R_i \\cdot k^R_j = q_i^\\top R_i^\\top R_j\\, k_j = q_i \\cdot R_{{j-i}}\\, k_j$",
      lambda s: s.dot,
      "a dot-product score (scaled or not) of the rotated rows: a rotation by i undone by its transpose and one by "
      "j make one by j − i; an additive or bilinear score mixes the rotated columns before comparing them",
      "tests/test_rope.py::test_lesson_scores_are_q_dot_r_of_the_distance_k",
      about="rope", otherwise="an additive or bilinear score is not a dot product of the two rotated rows: it mixes "
                              "their columns first, so it can see where the two tokens stand, not only how far apart")

claim("rope_shift_invariant",
      "every score stays the same when the whole sentence moves (exactly in real arithmetic, here up to float64 "
      "rounding)",
      lambda s: s.dot,
      "a dot-product score (scaled or not) of the rotated rows: moving both positions by the same offset leaves "
      "p′ − p, and so q · R_{p′−p} k, as it was; not an additive or bilinear score",
      "tests/test_rope.py::test_dot_product_scores_depend_only_on_the_distance",
      about="rope", otherwise="an additive or bilinear score of the rotated rows is not their dot product, so "
                              "nothing keeps it the same when the whole sentence moves")

claim("rope_rows_move",
      "the rotated rows move: pair i of every row turns {offset}·θ_i further",
      lambda s: s.offset > 0,
      "an offset above 0 (at 0 every token keeps its position); pair 0 then turns by the offset in radians, "
      "never a whole number of turns",
      "tests/test_rope.py::test_a_shift_above_0_moves_every_rotated_row",
      about="rope", otherwise="offset 0: every token keeps its position, so nothing moves")

claim("rope_pairings_differ",
      "the two pairings rotate different pairs of columns, so weights made for one give other scores under "
      "the other unless their columns are permuted",
      lambda s: s.d_k >= 4 and s.n >= 2,
      "d_k ≥ 4 and at least two tokens (with d_k = 2 there is one pair, (x_0, x_1), in both; with one token at "
      "position 0, R_0 = I turns nothing in either)",
      "tests/test_rope.py::test_pairings_differ_unless_d_k_is_2_or_one_token",
      about="rope")

claim("rope_one_pair",
      "with d_k = 2 there is one pair, (x_0, x_1): both pairings rotate it alike",
      lambda s: s.d_k == 2,
      "d_k = 2: the interleaved pair (x_0, x_1) and the half pair (x_0, x_{0+1}) are the same columns",
      "tests/test_rope.py::test_pairings_differ_unless_d_k_is_2_or_one_token",
      about="rope")

claim("rope_one_token",
      "with one token at position 0 nothing turns, so both pairings give the same numbers here",
      lambda s: s.n == 1,
      "a one-token sentence: its only position is 0, and R_0 is the identity",
      "tests/test_rope.py::test_pairings_differ_unless_d_k_is_2_or_one_token",
      about="rope")

claim("rope_half_not_forward",
      "so these Q^R, K^R and scores are not the forward pass's, which turns interleaved pairs (x_2i, x_2i+1)",
      lambda s: s.pairing == "half" and s.d_k >= 4 and s.n >= 2,
      "the half pairing with d_k ≥ 4 and at least two tokens (with d_k = 2 its one pair is the interleaved one; "
      "with one token nothing turns)",
      "tests/test_rope.py::test_half_pairing_is_the_forward_pass_only_when_d_k_is_2_or_one_token",
      about="rope", otherwise="these Q^R and K^R are the forward pass's own (Position = RoPE)")


def pairings_alike(s: RopeSettings) -> list[str]:
    """Why the two pairings give the same numbers under these settings (the claims that hold), or []."""
    from ..forward.claims import say
    return [say(key, s) for key in ("rope_one_pair", "rope_one_token") if say(key, s)]


def with_rope(config: Config) -> Config:
    """The sidebar's settings with Position = RoPE (the same Config if it already is). ConfigError for an odd d_k."""
    return config if config.positional == "rope" else config.replace(positional="rope")


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


def rotate(x: np.ndarray, positions, base: float, pairing: str) -> np.ndarray:
    """rotary_embedding with the page's pairing; (n, d) -> (n, d)."""
    return rotary_embedding(x, positions, base=base, pairing=pairing)


def complex_form(x: np.ndarray, positions, base: float, pairing: str) -> np.ndarray:
    """The same rotation through RoPE's complex-number form (each pair as one complex number times e^{ipθ_i});
    the half pairing's pairs (x_i, x_{i+d/2}) read in the interleaved column order and put back; (n, d)."""
    if pairing == "interleaved":
        return rotary_complex(x, positions, base)
    perm = half_permutation(x.shape[-1])
    inverse = np.argsort(perm)
    return rotary_complex(x[..., inverse], positions, base)[..., perm]


def scaled_scores(q_rot: np.ndarray, k_rot: np.ndarray) -> np.ndarray:
    """Ŝ = Q^R K^{R⊤} / √d_k; (n, d) × (n, d) -> (n, n)."""
    return q_rot @ k_rot.T / math.sqrt(q_rot.shape[-1])


def kv_head_of(config: Config, head: int) -> int:
    """The KV head query head h reads: ⌊h / g⌋, g = H / H_kv."""
    return head // (config.n_heads // config.kv_heads)


def score_function(forward: Trace, head: int):
    """The forward pass's score function for query head h, on one head's rows: (n, d_k), (n, d_k) -> (n, n);
    with its own parameters (W_1, W_2, v or W) for an additive or bilinear score."""
    config = forward.facts["config"]
    h = config.n_heads
    own = (lambda key: forward[key].value[head]) if h > 1 else (lambda key: forward[key].value)
    if config.score == "dot":
        return att.dot_scores
    if config.score == "scaled_dot":
        return scaled_scores
    if config.score == "additive":
        w_1, w_2, v_a = own("w_a_q"), own("w_a_k"), own("v_a")
        return lambda q, k: att.additive_scores(q, k, w_1, w_2, v_a)
    w_b = own("w_b")
    return lambda q, k: att.bilinear_scores(q, k, w_b)


def head_rows(forward: Trace, head: int) -> tuple[np.ndarray, np.ndarray]:
    """(Q_h, K_⌊h/g⌋): query head h's d_k columns of Q and its KV head's of K; (n, d_k) each."""
    config = forward.facts["config"]
    d, kv = config.d_k, kv_head_of(config, head)
    return forward["q"].value[:, head * d:(head + 1) * d], forward["k"].value[:, kv * d:(kv + 1) * d]


def forward_rows(forward: Trace, key: str, head: int) -> np.ndarray:
    """One head's rows of a forward step: q_rot (query head h), k_rot (its KV head), scores (query head h)."""
    config = forward.facts["config"]
    value = forward[key].value
    if config.n_heads == 1:
        return value
    return value[kv_head_of(config, head)] if key == "k_rot" else value[head]


def score_key(config: Config) -> str:
    """The lesson's score step: Ŝ for the scaled dot product, S for any other score."""
    return "scaled_scores" if config.score == "scaled_dot" else "scores"


def check_lesson(forward: Trace, head: int, pairing: str, offset: int) -> None:
    config = forward.facts.get("config")
    if config is None or config.positional != "rope":
        raise ConfigError("The RoPE lesson reads a forward pass run with Position = RoPE.")
    if isinstance(head, bool) or not isinstance(head, (int, np.integer)) or not 0 <= head < config.n_heads:
        raise ConfigError(f"Head {head!r} is not one of the {config.n_heads} heads (0 to {config.n_heads - 1}).")
    if pairing not in FAMILIES:
        raise ConfigError(f"pairing={pairing!r} is not 'interleaved' or 'half'.")
    if isinstance(offset, bool) or not isinstance(offset, (int, np.integer)) or not 0 <= offset <= MAX_OFFSET:
        raise ConfigError(f"The offset must be a whole number from 0 to {MAX_OFFSET:,}, not {offset!r}.")


def rope_lesson(forward: Trace, head: int = 0, pairing: str = "interleaved", offset: int = 0) -> Trace:
    """Query head h's Q, its KV head's K, the angles p·θ_i, Q^R, K^R and the scores, token i at position
    i + offset, in the interleaved (the forward pass's) or the half pairing; checks in facts. `forward` is
    run_forward's Trace under Position = RoPE. Raises ConfigError for anything else."""
    check_lesson(forward, head, pairing, offset)
    return _lesson(forward, int(head), pairing, int(offset))


def _symbols(config: Config, head: int, kv: int) -> dict:
    """With several heads the steps are one head's: Q_h, K_⌊h/g⌋, Q^R_h, K^R_⌊h/g⌋, Ŝ_h (docs/notation.md)."""
    if config.n_heads == 1:
        return {}
    s = "\\hat S" if config.score == "scaled_dot" else "S"
    text = "Ŝ" if config.score == "scaled_dot" else "S"
    return {"q": (f"Q_{{{head}}}", f"Q_{head}"), "k": (f"K_{{{kv}}}", f"K_{kv}"),
            "q_rot": (f"Q^R_{{{head}}}", f"Q^R_{head}"), "k_rot": (f"K^R_{{{kv}}}", f"K^R_{kv}"),
            score_key(config): (f"{{{s}_{{{head}}}}}", f"{text}_{head}")}


@functools.lru_cache(maxsize=64)
def _lesson(forward: Trace, head: int, pairing: str, offset: int) -> Trace:
    config = forward.facts["config"]
    d, base, h = config.d_k, float(config.pe_base), config.n_heads
    kv = kv_head_of(config, head)
    n = forward.n
    t = Trace(forward.tokens)
    t.facts.update(kind="rope", config=config, base=base, pairing=pairing, d_k=d, n=n, n_heads=h, head=head,
                   kv_head=kv, n_kv_heads=config.kv_heads, offset=offset, score=config.score,
                   symbols=_symbols(config, head, kv))
    positions = np.arange(n) + offset                                           # (n,): token i at i + offset
    at = f" at positions p + {offset}" if offset else ""
    t.add("x", "Input X = X_emb", forward["x"].value, ("n", "d_model"), r"X = X_{\text{emb}}",
          why="Nothing is added to X for position: RoPE puts position into Q and K instead.")
    for name in ("q", "k"):
        big = name.upper()
        t.add(f"w_{name}", f"W_{big}", forward[f"w_{name}"].value, forward[f"w_{name}"].axes,
              forward[f"w_{name}"].formula, why=forward[f"w_{name}"].why)
        if config.bias:
            t.add(f"b_{name}", f"b_{big}", forward[f"b_{name}"].value, forward[f"b_{name}"].axes,
                  forward[f"b_{name}"].formula)
    q, k = head_rows(forward, head)                                             # (n, d_k) each
    bias = {name: rf" + b_{name.upper()}" if config.bias else "" for name in ("q", "k")}
    if h > 1:
        g = h // config.kv_heads
        t.add("q", f"Queries Q_{head} (head {head})", q, ("n", "d_k"),
              rf"Q_{{{head}}} = (X W_Q{bias['q']})_{{[:,\ {head * d} : {(head + 1) * d}]}}",
              ("x", "w_q") + (("b_q",) if config.bias else ()),
              why=f"Head {head}'s {d} columns of Q, before the rotation: row i is the same wherever its word stands.")
        t.add("k", f"Keys K_{kv} (KV head {kv})", k, ("n", "d_k"),
              rf"K_{{{kv}}} = (X W_K{bias['k']})_{{[:,\ {kv * d} : {(kv + 1) * d}]}}",
              ("x", "w_k") + (("b_k",) if config.bias else ()),
              why=(f"Query head {head} reads KV head ⌊{head}/{g}⌋ = {kv}: its {d} columns of K"
                   if g > 1 else f"Head {head}'s {d} columns of K") + ", before the rotation.")
    else:
        t.add("q", "Queries Q", q, ("n", "d_k"), rf"Q = X W_Q{bias['q']}", ("x", "w_q") + (("b_q",) if config.bias else ()),
              why="Before the rotation: row i is the same wherever its word stands.")
        t.add("k", "Keys K", k, ("n", "d_k"), rf"K = X W_K{bias['k']}", ("x", "w_k") + (("b_k",) if config.bias else ()),
              why="Before the rotation: row j is the same wherever its word stands.")
    theta = rope_frequencies(d, base)                                            # (d/2,)
    t.facts["theta"] = theta
    t.facts["axis_labels"] = {"d_k/2": [f"i={i}" for i in range(d // 2)]}
    later = (" Pair 0 turns 1 radian per position, each later pair more slowly." if d > 2 else
             " With d_k = 2 there is one pair, i = 0: it turns 1 radian per position.")
    t.add("angles", "Rotation angles p·θ_i" + at, rope_angles(positions, d, base), ("n", "d_k/2"),
          rf"p\,\theta_i = p \cdot {base_tex(base)}^{{-2i/{d}}}", why=(
              f"A row per token at its position p (the first token at p = {offset}); a column per pair i: how far "
              "that pair of the token's query and key turns, in radians." + later), scale="sequential")
    pairs = "(2i, 2i + 1)" if pairing == "interleaved" else f"(i, i + {d // 2})"
    p_of = rf"R_{{i+{offset}}}" if offset else "R_i"
    for name, x in (("q", q), ("k", k)):
        big = name.upper()
        row = "i" if name == "q" else "j"
        p_row = p_of.replace("i", row)
        if pairing == "interleaved" and not offset:
            rotated = forward_rows(forward, f"{name}_rot", head)                # the forward pass's own
        else:
            rotated = rotate(x, positions, base, pairing)
        here = RopeSettings(config, pairing, 0, n)
        if pairing == "interleaved" and not offset:
            where = "the forward pass's own"
        elif offset:
            where = f"the {pairing} pairing, positions moved by {offset}: a comparison the forward pass does not make"
        elif holds("rope_one_pair", here):                                     # the half pairing, yet the same
            where = "the half pairing: with d_k = 2 its one pair is the forward pass's (x_0, x_1)"
        elif holds("rope_one_token", here):
            where = "the half pairing: with one token at position 0 nothing turns, so these are the forward pass's"
        else:
            where = "the half pairing: a comparison the forward pass does not make"
        sym = t.facts["symbols"].get(name, (big, big))[1]
        t.add(f"{name}_rot", f"{sym} rotated: {t.facts['symbols'].get(f'{name}_rot', (big, big + '^R'))[1]}" + at,
              rotated, ("n", "d_k"),
              rf"{name}^R_{row} = {p_row}\, {name}_{row}", (name, "angles"),
              why=f"Each row turned by R_p at its token's position p: columns {pairs} of it, pair i, by p·θ_i "
                  f"({where}). Each pair keeps its length.")
    q_rot, k_rot = t["q_rot"].value, t["k_rot"].value
    key = score_key(config)
    if pairing == "interleaved" and not offset:
        scores = forward_rows(forward, key, head)                                # the forward pass's own
    else:
        scores = score_function(forward, head)(q_rot, k_rot)
    t.add(key, _score_title(config) + (f" (head {head})" if h > 1 else "") + at, scores, ("n_q", "n_k"),
          _score_formula(config, head, kv), ("q_rot", "k_rot"), why=_score_why(config))
    t.facts["complex_gap"] = max(float(np.abs(complex_form(x, positions, base, pairing) - t[f"{s}_rot"].value).max())
                                 for s, x in (("q", q), ("k", k)))
    # how far this page's Q^R and scores are from the forward pass's (0 in the interleaved pairing at offset 0)
    t.facts["forward_gap"] = {"q_rot": float(np.abs(q_rot - forward_rows(forward, "q_rot", head)).max()),
                              "k_rot": float(np.abs(k_rot - forward_rows(forward, "k_rot", head)).max()),
                              "scores": float(np.abs(scores - forward_rows(forward, key, head)).max())}
    t.facts.update(pairing_checks(q, k, base))
    return t


def _score_title(config: Config) -> str:
    return {"scaled_dot": "Scaled scores Ŝ of the rotated rows", "dot": "Scores S of the rotated rows",
            "additive": "Additive scores S of the rotated rows", "bilinear": "Bilinear scores S of the rotated rows"
            }[config.score]


def _score_formula(config: Config, head: int, kv: int) -> str:
    hq = f"_{{{head}}}" if config.n_heads > 1 else ""
    hk = f"_{{{kv}}}" if config.n_heads > 1 else ""
    sup = f"^{{({head})}}" if config.n_heads > 1 else ""
    d = config.d_k
    if config.score == "scaled_dot":
        return (rf"\hat S{hq} = \frac{{Q^R{hq} {{K^R{hk}}}^\top}}{{\sqrt{{d_k}}}} = "
                rf"\frac{{Q^R{hq} {{K^R{hk}}}^\top}}{{\sqrt{{{d}}}}}")
    if config.score == "dot":
        return rf"S{hq} = Q^R{hq} {{K^R{hk}}}^\top"
    if config.score == "additive":
        return (rf"(S{hq})_{{ij}} = v{sup}{{}}^\top \tanh(W_1{sup}{{}}^\top q^R_i + W_2{sup}{{}}^\top k^R_j),"
                rf"\ q^R_i, k^R_j \text{{ rows of }} Q^R{hq}, K^R{hk}")
    return rf"S{hq} = Q^R{hq}\, W{sup}\, {{K^R{hk}}}^\top"


def _score_why(config: Config) -> str:
    if config.score in DOT_SCORES:
        scaled = ", divided by √d_k" if config.score == "scaled_dot" else ""
        return (f"Entry (i, j): the rotated query of token i against the rotated key of token j, a dot product"
                f"{scaled}: the sidebar's score function.")
    name = "additive" if config.score == "additive" else "bilinear"
    return (f"The sidebar's {name} score of the rotated rows, with its own parameters at their seeded start. RoPE "
            "was made for dot-product scores.")


def pairing_checks(q: np.ndarray, k: np.ndarray, base: float) -> dict:
    """The permutation between the pairings, checked on this Q, K: half of the permuted columns is the
    permuted interleaved result; permuting W_Q, W_K's columns (so Q, K's) keeps every dot product of the rotated
    rows; not permuting them changes them (d_k ≥ 4)."""
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


def shift_check(forward: Trace, head: int, pairing: str, offset: int) -> dict:
    """Positions p + offset instead of p: how much Q^R and the scores move with RoPE, and how much the scores move
    when a sinusoidal encoding (the same base) is added to X instead, with the same weights, biases and score
    function: {"rot": max|ΔQ^R|, "rope": max|ΔS|, "added": max|ΔS|, "trace": the lesson at positions p + offset}."""
    check_lesson(forward, head, pairing, offset)
    return _shift_check(forward, int(head), pairing, int(offset))


@functools.lru_cache(maxsize=128)
def _shift_check(forward: Trace, head: int, pairing: str, offset: int) -> dict:
    t, moved = _lesson(forward, head, pairing, 0), _lesson(forward, head, pairing, offset)
    config = forward.facts["config"]
    key, n, d = score_key(config), t.n, config.d_k
    x = forward["x"].value                                                       # (n, d_model) = X_emb
    kv = kv_head_of(config, head)
    w_q = forward["w_q"].value[:, head * d:(head + 1) * d]
    w_k = forward["w_k"].value[:, kv * d:(kv + 1) * d]
    b_q = forward["b_q"].value[head * d:(head + 1) * d] if config.bias else 0.0
    b_k = forward["b_k"].value[kv * d:(kv + 1) * d] if config.bias else 0.0
    pe = sinusoidal_encoding(n + offset, x.shape[1], config.pe_base)             # (n + offset, d_model)
    score = score_function(forward, head)
    added = [score((x + p) @ w_q + b_q, (x + p) @ w_k + b_k) for p in (pe[:n], pe[offset:])]
    return {"rot": float(np.abs(moved["q_rot"].value - t["q_rot"].value).max()),
            "rope": float(np.abs(moved[key].value - t[key].value).max()),
            "added": float(np.abs(added[1] - added[0]).max()), "trace": moved}


def pair_path(vector: np.ndarray, theta: float, p: int) -> list[dict]:
    """One pair (a, b) turned by 0, θ, 2θ, …, pθ: the rows of the pair's picture, the last one at position p."""
    a, b = float(vector[0]), float(vector[1])
    out = []
    for s in range(p + 1):
        c, si = math.cos(s * theta), math.sin(s * theta)
        out.append({"position": s, "x": a * c - b * si, "y": a * si + b * c, "x0": 0.0, "y0": 0.0, "now": s == p})
    return out


def pair_columns(d: int, i: int, pairing: str) -> tuple[int, int]:
    """The two columns of pair i: (2i, 2i + 1) interleaved, (i, i + d/2) half."""
    return (2 * i, 2 * i + 1) if pairing == "interleaved" else (i, i + d // 2)


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
    """This page's Q^R, K^R and scores against both torch forms (each fed the column order it pairs): max absolute
    differences {"complex", "rotate_half", "scores"} (scores: only for a dot-product score, else None)."""
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
    score = t.facts["score"]
    out["scores"] = None
    if score in DOT_SCORES:
        s = rotated["q"] @ rotated["k"].T / (math.sqrt(d) if score == "scaled_dot" else 1.0)
        out["scores"] = float(np.abs(s - t[score_key(t.facts["config"])].value).max())
    return out


# ---- click a cell: the arithmetic (kind "rope") -------------------------------------------------------

def _projection_of(key: str):
    """Q_h[i, j] = Σ_m X[i, m] W_Q[m, h·d_k + j] (+ b_Q[h·d_k + j]); K with its KV head's columns."""
    def explain_projection(ctx: Context, cell):
        i, j = cell
        f = ctx.trace.facts
        block = f["head"] if key == "q" else f["kv_head"]
        col = block * f["d_k"] + j
        x, w = ctx.value("x"), ctx.value(f"w_{key}")
        terms = [(ctx.ref("x", (i, m)), ctx.ref_text("x", (i, m)), x[i, m], ctx.ref(f"w_{key}", (m, col)),
                  ctx.ref_text(f"w_{key}", (m, col)), w[m, col], ("x", (i, m)), (f"w_{key}", (m, col)))
                 for m in range(x.shape[1])]
        rhs = rf"\sum_{{m=0}}^{{{x.shape[1] - 1}}} {ctx.ref('x', (i, 'm'))}\, {ctx.ref(f'w_{key}', ('m', col))}"
        rhs_text = f"Σ_m {ctx.ref_text('x', (i, 'm'))}·{ctx.ref_text(f'w_{key}', ('m', col))}"
        bias = None
        big = key.upper()
        if f"b_{key}" in ctx.trace:
            bias = (ctx.ref(f"b_{key}", (col,)), ctx.ref_text(f"b_{key}", (col,)), ctx.value(f"b_{key}")[col],
                    (f"b_{key}", (col,)))
        note = f"Row {i} (“{ctx.word(i)}”) of X (= X_emb: RoPE adds nothing to X) times column {col} of W_{big}"
        note += f", plus b_{big}[{col}]." if bias else "."
        if f["n_heads"] > 1:
            note += (f" Column {j} of {'head' if key == 'q' else 'KV head'} {block}'s block is column "
                     f"{block}·{f['d_k']} + {j} = {col} of W_{big}.")
        return ctx.sum_of_products(key, cell, rhs, rhs_text, terms, bias=bias, note=note)
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
            f"({math.degrees(value) % 360:.1f}° after {int(turns)} whole turn{'s' if int(turns) != 1 else ''}). "
            f"b is the base, {base_tex(base, False)}.")
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
        else:
            i, second = col % half, col >= half
        c0, c1 = pair_columns(d, i, f["pairing"])
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
        note = (f"Row {row} (“{ctx.word(row)}”) stands at position p = {p}. Its pair {i} is columns ({c0}, {c1}) in "
                f"the {f['pairing']} pairing; it turns by p·θ_{i} = {fmt(angle, ctx.precision, False)} rad (cos = "
                f"{fmt(cos, ctx.precision, False)}, sin = {fmt(sin, ctx.precision, False)}): the 2×2 rotation "
                f"[[cos, −sin], [sin, cos]] times ({fmt(a, ctx.precision, False)}, {fmt(b, ctx.precision, False)}); "
                f"this cell is its {'second' if second else 'first'} entry.")
        return Explanation(key, cell, symbolic, shown, f"{lhs} = {ctx.num(value)}", value, text, note=note, n_terms=2,
                           reads=((src, (row, c0)), (src, (row, c1)), ("angles", (row, i))))
    return explain_rotation


for _key in ("q_rot", "k_rot"):
    register(_key, kind="rope")(_rotation_of(_key))


def _dot_explainer(key: str):
    def explain_scores(ctx: Context, cell):
        i, j = cell
        f = ctx.trace.facts
        q, k = ctx.value("q_rot")[i], ctx.value("k_rot")[j]
        d = q.shape[0]
        p, p2 = i + f.get("offset", 0), j + f.get("offset", 0)
        terms = [(ctx.ref("q_rot", (i, c)), ctx.ref_text("q_rot", (i, c)), q[c], ctx.ref("k_rot", (j, c)),
                  ctx.ref_text("k_rot", (j, c)), k[c], ("q_rot", (i, c)), ("k_rot", (j, c))) for c in range(d)]
        total = rf"\sum_{{m=0}}^{{{d - 1}}} {ctx.ref('q_rot', (i, 'm'))}\, {ctx.ref('k_rot', (j, 'm'))}"
        total_text = f"Σ_m {ctx.ref_text('q_rot', (i, 'm'))}·{ctx.ref_text('k_rot', (j, 'm'))}"
        scaled = key == "scaled_scores"
        rhs = rf"\frac{{{total}}}{{\sqrt{{d_k}}}}" if scaled else total
        rhs_text = f"{total_text} / √d_k" if scaled else total_text
        note = (f"The rotated query of token {i} (“{ctx.word(i)}”, at position p = {p}) against the rotated key of "
                f"token {j} (“{ctx.word(j)}”, at p′ = {p2}): a dot product over the d_k = {d} columns"
                + (f", divided by √{d}" if scaled else "") + ". Pair i adds |q pair|·|k pair|·cos(φ_i + (p′ − p)·θ_i), "
                "φ_i the angle from the query's pair to the key's pair before the rotation: the positions enter "
                f"only as p′ − p = {p2} − {p} = {j - i}.")
        return ctx.sum_of_products(key, cell, rhs, rhs_text, terms,
                                   divisor=(rf"\sqrt{{{d}}}", f"√{d}", math.sqrt(d)) if scaled else None, note=note)
    return explain_scores


register("scaled_scores", kind="rope")(_dot_explainer("scaled_scores"))
register("scores", kind="rope", when=lambda t: t.facts.get("score") == "dot")(_dot_explainer("scores"))
