"""The real model's next token (on the tokens page): the last row of its logits through temperature, top-k, top-p and a seeded draw
(attention_core/math/sampling.py, the small model's next-token page's rules), the most probable tokens as bars."""
from __future__ import annotations

import numpy as np
import streamlit as st

from attention_core.math.sampling import next_token, uniforms

from ..cache import beside
from ..chart_words import spec_sentence
from ..colours import SERIES
from ..text import md_escape

SHOWN = 15                                   # bars: the most probable tokens


def piece(tok, j: int) -> str:
    """Token j's piece as the vocabulary stores it; a row of W_U past the tokenizer's tokens is padding."""
    found = tok.piece(int(j))
    return found if found is not None else "(no token: a padding row)"


def controls(vocab: int) -> tuple[float, int, float, int]:
    a, b, c, d = st.columns(4)
    if st.session_state.get("real.k", 0) > vocab:
        st.session_state["real.k"] = vocab
    T = a.slider("Temperature T", 0.0, 3.0, step=0.05, key="real.temperature",
                 help="The logits are divided by T before softmax. T < 1 sharpens, T > 1 flattens, T = 0 is argmax.")
    k = b.number_input("top-k", 0, vocab, step=1, key="real.k",
                       help=f"Keep only the k tokens with the largest logits. 0 or {vocab:,} (the vocabulary): off.")
    p = c.slider("top-p", 0.0, 1.0, step=0.05, key="real.p",
                 help="Keep the fewest most probable tokens whose probabilities add up to at least top-p. 1: off.")
    seed = d.number_input("Seed", 0, 2 ** 31 - 1, step=1, key="real.seed",
                          help="Seeds the uniform draw u: the same seed draws the same token.")
    return float(T), int(k), float(p), int(seed)


def drawn(trace, T: float, k: int, p: float, seed: int) -> tuple[str, dict]:
    """(said, the bars' spec with its text alternative) for the controls, built once per (trace, T, top-k, top-p,
    seed) beside the trace: a rerun with nothing changed neither sorts the vocabulary's logits again nor rebuilds
    the chart. A ConfigError (a control out of its range) is raised as sample raises it, and nothing is kept."""
    def make():
        out = sample(trace, T, k, p, seed)
        spec = bars_spec(trace, out, T)
        alt = spec_sentence(spec)
        return said(trace, out, T, k, p), ({**spec, "description": alt} if alt else spec)
    return beside(trace, "next_token", (T, k, p, seed), make)


def sample(trace, T: float, k: int, p: float, seed: int) -> dict:
    """next_token on the last row of the logits (float64), with u the seed's first uniform draw."""
    z = np.asarray(trace["logits"].value[-1], dtype=np.float64)
    u = float(uniforms(seed, 1)[0])
    return {**next_token(z, T, k, p, u), "u": u, "z": z}


def bars_spec(trace, out: dict, T: float = 1.0) -> dict:
    """The SHOWN most probable tokens (by p), p and p′ side by side (T = 0: the argmax's 1 in place of p)."""
    tok = trace.facts["tokenizer"]
    order = np.argsort(-out["probs"], kind="stable")[:SHOWN]
    rows, names = [], []
    for j in order:
        name = f"{int(j)} {piece(tok, j)}"
        names.append(name)
        rows += [{"token": name, "which": "p = softmax(z / T)" if T else "T = 0: argmax", "probability": float(out["probs"][j])},
                 {"token": name, "which": "p′ (kept, renormalised)", "probability": float(out["renormalised"][j])}]
    return {"data": {"values": rows}, "mark": {"type": "bar"}, "width": "container", "height": 24 * len(names) + 40,
            "encoding": {"y": {"field": "token", "type": "nominal", "sort": names, "title": None,
                               "axis": {"labelLimit": 160}},
                         "yOffset": {"field": "which", "type": "nominal"},
                         "x": {"field": "probability", "type": "quantitative", "axis": {"orient": "top"}},
                         "color": {"field": "which", "type": "nominal", "title": None,
                                   "scale": {"range": SERIES}, "legend": {"orient": "top"}},
                         "tooltip": [{"field": "token"}, {"field": "which"},
                                     {"field": "probability", "type": "quantitative", "format": ".4f"}]}}


def said(trace, out: dict, T: float, k: int, p: float) -> str:
    tok, j = trace.facts["tokenizer"], int(out["token"])
    kept = int(out["kept"].sum())
    text = md_escape(tok.decode(trace.facts["ids"]))
    name = piece(tok, j)
    picked = (f"**token {j}**" if name == f"token {j}" else        # the small model's id no word was given: its name
              f"**token {j}, “{md_escape(name)}”**")
    if T == 0:                                  # greedy: no division by T, top-k and top-p do not act (sampling.py)
        return (f"After “{text}”, the model's {len(out['z']):,} logits z (the last row of Z) are not divided: T = 0 "
                f"takes the argmax, the token with the largest logit, whatever top-k, top-p and the draw u: {picked} "
                "(p′ = 1).")
    k_said = f"top-k = {k}" + (" (off)" if k == 0 or k >= len(out["z"]) else "")
    p_said = f"top-p = {p:g}" + (" (off)" if p >= 1 else "")
    return (f"After “{text}”, the model's {len(out['z']):,} logits z (the last row of Z) become probabilities "
            f"p = softmax(z / T) with T = {T:g}; {k_said} and {p_said} keep **{kept:,}** of them, "
            f"renormalised to p′. The draw u = {out['u']:.4f} picks the first token whose running total of p′ "
            f"passes u: {picked} (p = {out['probs'][j]:.4f}, p′ = {out['renormalised'][j]:.4f}).")
