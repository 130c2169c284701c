"""The RoPE lesson's Trace: query head h's Q, its KV head's K, the angles p·θ_i, Q^R, K^R and the scores, read from
the forward pass run with Position = RoPE (kind "rope"; facts hold the checks the page prints).

In the interleaved pairing at offset 0 the rotated rows and the scores are the forward pass's own steps; the half
pairing and a shifted sentence are comparisons the forward pass does not make, rotated here from its Q and K.
"""
from __future__ import annotations

import functools

import numpy as np

from ...forward.claims import holds
from ...forward.config import Config
from ...forward.trace import Trace
from ...math.limits import ConfigError
from ...math.rope import rope_angles, rope_frequencies
from .claims import RopeSettings
from .notation import base_tex, head_symbols, score_formula, score_title, score_why
from .reading import forward_rows, head_rows, kv_head_of, score_function, score_key
from .rotation import complex_form, pairing_checks, rotate

# rope_theta in published configs: the sidebar's base can be set to one of them from the page
BASES = {10_000.0: "RoFormer, Llama 2", 500_000.0: "Llama 3", 1_000_000.0: "Qwen2.5"}
MAX_OFFSET = 100_000
FAMILIES = {"interleaved": "RoFormer, GPT-J and Meta's Llama code (complex numbers)",
            "half": "GPT-NeoX and Hugging Face's Llama (the rotate-half form)"}


def with_rope(config: Config) -> Config:
    """The sidebar's settings with Position = RoPE (the same Config if it already is). ConfigError for an odd d_k."""
    return config if config.positional == "rope" else config.replace(positional="rope")


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
    return lesson_trace(forward, int(head), pairing, int(offset))


@functools.lru_cache(maxsize=64)
def lesson_trace(forward: Trace, head: int, pairing: str, offset: int) -> Trace:
    """rope_lesson for settings already checked, one Trace per (forward pass, head, pairing, offset)."""
    config = forward.facts["config"]
    d, base, h = config.d_k, float(config.pe_base), config.n_heads
    kv = kv_head_of(config, head)
    n = forward.n
    t = Trace(forward.tokens)
    t.facts.update(kind="rope", config=config, base=base, pairing=pairing, d_k=d, n=n, n_heads=h, head=head,
                   kv_head=kv, n_kv_heads=config.kv_heads, offset=offset, score=config.score,
                   symbols=head_symbols(config, head, kv))
    positions = np.arange(n) + offset                                           # (n,): token i at i + offset
    at = f" at positions p + {offset}" if offset else ""
    q, k = _add_inputs(t, forward, head, kv)                                    # (n, d_k) each
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
    own = pairing == "interleaved" and not offset                               # the forward pass's own steps
    where = _rotated_from(config, pairing, offset, n)
    for name, x in (("q", q), ("k", k)):
        big = name.upper()
        row = "i" if name == "q" else "j"
        p_row = p_of.replace("i", row)
        rotated = forward_rows(forward, f"{name}_rot", head) if own else rotate(x, positions, base, pairing)
        sym = t.facts["symbols"].get(name, (big, big))[1]
        t.add(f"{name}_rot", f"{sym} rotated: {t.facts['symbols'].get(f'{name}_rot', (big, big + '^R'))[1]}" + at,
              rotated, ("n", "d_k"),
              rf"{name}^R_{row} = {p_row}\, {name}_{row}", (name, "angles"),
              why=f"Each row turned by R_p at its token's position p: columns {pairs} of it, pair i, by p·θ_i "
                  f"({where}). Each pair keeps its length.")
    q_rot, k_rot = t["q_rot"].value, t["k_rot"].value
    key = score_key(config)
    scores = forward_rows(forward, key, head) if own else score_function(forward, head)(q_rot, k_rot)
    t.add(key, score_title(config) + (f" (head {head})" if h > 1 else "") + at, scores, ("n_q", "n_k"),
          score_formula(config, head, kv), ("q_rot", "k_rot"), why=score_why(config))
    t.facts["complex_gap"] = max(float(np.abs(complex_form(x, positions, base, pairing) - t[f"{s}_rot"].value).max())
                                 for s, x in (("q", q), ("k", k)))
    # how far this page's Q^R and scores are from the forward pass's (0 in the interleaved pairing at offset 0)
    t.facts["forward_gap"] = {"q_rot": float(np.abs(q_rot - forward_rows(forward, "q_rot", head)).max()),
                              "k_rot": float(np.abs(k_rot - forward_rows(forward, "k_rot", head)).max()),
                              "scores": float(np.abs(scores - forward_rows(forward, key, head)).max())}
    t.facts.update(pairing_checks(q, k, base))
    return t


def _add_inputs(t: Trace, forward: Trace, head: int, kv: int) -> tuple[np.ndarray, np.ndarray]:
    """X, W_Q, W_K (and b_Q, b_K) as the forward pass has them, then query head h's Q and KV head ⌊h/g⌋'s K."""
    config = forward.facts["config"]
    d, h = config.d_k, config.n_heads
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
    return q, k


def _rotated_from(config: Config, pairing: str, offset: int, n: int) -> str:
    """Whose rotated rows these are, in words: the forward pass's own, or a comparison it does not make."""
    if pairing == "interleaved" and not offset:
        return "the forward pass's own"
    if offset:
        return f"the {pairing} pairing, positions moved by {offset}: a comparison the forward pass does not make"
    here = RopeSettings(config, pairing, 0, n)
    if holds("rope_one_pair", here):                                           # the half pairing, yet the same
        return "the half pairing: with d_k = 2 its one pair is the forward pass's (x_0, x_1)"
    if holds("rope_one_token", here):
        return "the half pairing: with one token at position 0 nothing turns, so these are the forward pass's"
    return "the half pairing: a comparison the forward pass does not make"
