"""The quiz's notation in plain text (docs/notation.md: the quiz writes text, not LaTeX): the symbol of each step,
an entry such as 'A_1[3,0]', a step's name and shape, the scores softmax reads, and the page's line on its symbols.

    >>> at("A", 1, 3, 0), at("Ŝ + B", 1, 3, 0), at("C", None, 2, 1)
    ('A_1[3,0]', '(Ŝ_1 + B_1)[3,0]', 'C[2,1]')
"""
from __future__ import annotations

import numpy as np

from ...forward.trace import Trace
from ...math import notation

PLAIN_SCORES = {notation.S: "S", notation.S_SCALED: "Ŝ", notation.S_MASKED: "S̃",
                rf"{notation.S} + {notation.B}": "S + B", rf"{notation.S_SCALED} + {notation.B}": "Ŝ + B"}
SCORE_STEPS = {"scores": "S", "scaled_scores": "Ŝ", "masked_scores": "S̃"}    # step key -> its symbol
SYMBOLS = {"x_embed": "X_emb", "pe": "PE", "x": "X", "w_q": "W_Q", "w_k": "W_K", "w_v": "W_V", "w_o": "W_O",
           "q": "Q", "k": "K", "v": "V", "q_heads": "Q", "k_heads": "K", "v_heads": "V", **SCORE_STEPS,
           "q_rot": "Q^R", "k_rot": "K^R", "alibi": "B",
           "weights": "A", "context": "C", "concat": "[C_0 | … | C_{H−1}]", "output": "O", "mask": "M",
           "w_b": "W", "w_a_q": "W_1", "w_a_k": "W_2"}
KV_STEPS = ("k_heads", "v_heads", "k_rot")          # one block per KV head: H_kv of them with grouped-query attention


def score_step_symbol(trace: Trace, key: str) -> str:
    """The symbol of a scores step: S, Ŝ, S̃, or ALiBi's S + B / Ŝ + B (the scores it was added to)."""
    if key == "biased_scores":
        return f"{SCORE_STEPS[trace[key].inputs[0]]} + B"
    return SCORE_STEPS[key]


def at(symbol: str, h: int | None, *index: int) -> str:
    """'A[3,0]', or head h's 'A_1[3,0]' (A_h, C_h, S_h are head h's, as docs/notation.md writes them); a sum
    such as ALiBi's 'Ŝ + B' is bracketed, each term with the head: '(Ŝ_1 + B_1)[3,0]'."""
    sub = "" if h is None else f"_{h}"
    where = f"[{','.join(map(str, index))}]"
    if " + " in symbol:
        return "(" + " + ".join(f"{part}{sub}" for part in symbol.split(" + ")) + ")" + where
    return f"{symbol}{sub}{where}"


def config_of(trace: Trace):
    return trace.facts.get("config")


def groups(trace: Trace) -> int:
    """g = H / H_kv: the query heads that share one KV head (1 without grouped-query attention)."""
    config = config_of(trace)
    return config.n_heads // config.kv_heads if config is not None else 1


def heads_letter(step, trace: Trace | None = None) -> str:
    """What counts a step's head axis: H, or H_kv for K's and V's blocks under grouped-query attention."""
    return "H_kv" if trace is not None and step.key in KV_STEPS and groups(trace) > 1 else "H"


def name_of(step, trace: Trace | None = None) -> str:
    """A step as the quiz names it: its symbol ('C'; 'A_h of all H = 2 heads, stacked'; 'K_h of all H_kv = 2 KV
    heads, stacked'), else its title."""
    symbol = SYMBOLS.get(step.key)
    if step.key == "biased_scores" and trace is not None:
        symbol = f"({score_step_symbol(trace, step.key)})"
    if symbol is None:
        return step.title
    if step.axes[:1] != ("head",):
        return symbol
    if heads_letter(step, trace) == "H_kv":
        return f"{symbol}_h of all H_kv = {step.shape[0]} KV heads, stacked"
    if step.key in ("w_b", "w_a_q", "w_a_k"):                  # a head's own score parameters: W^(h), W_1^(h)
        return f"{symbol}^(h) of all H = {step.shape[0]} heads, stacked"
    return f"{symbol}_h of all H = {step.shape[0]} heads, stacked"


def shape_text(step, trace: Trace | None = None) -> str:
    """'n=4 × d_v=4'; a head axis is counted by H (or H_kv): 'H=2 × n=4 × n=4'."""
    return " × ".join(f"{heads_letter(step, trace) if a == 'head' else a}={s}"
                      for a, s in zip(step.axes, step.shape)) or "scalar"


def softmax_scores(trace: Trace) -> tuple[str, np.ndarray]:
    """(symbol, values (H?, n, n)): the scores softmax reads under the trace's settings: S, Ŝ or S̃
    (notation.softmax_input), before the division by T."""
    key = trace.facts.get("softmax_input") or next(k for k in ("masked_scores", "biased_scores", "scaled_scores",
                                                                 "scores") if k in trace)
    config = trace.facts.get("config")
    return (PLAIN_SCORES[notation.softmax_input(config)] if config is not None else score_step_symbol(trace, key)), \
        trace[key].value


def temperature_of(trace: Trace) -> float:
    config = trace.facts.get("config")
    if config is not None:
        return float(config.temperature)
    from ...explanations import settings_of
    return settings_of(trace).temperature


def by_head(values: np.ndarray) -> np.ndarray:
    """(n, ·) -> (1, n, ·); (H, n, ·) stays: every head's block, one indexing for both."""
    return values if values.ndim == 3 else values[None]


def num(x: float) -> str:
    """A number as the explanations write it: 4 significant digits, a true minus sign."""
    return f"{float(x):.4g}".replace("-", "−")


def divided_by_t(t: float) -> tuple[str, str]:
    """(' / T', ' / 0.5') when T ≠ 1, else ('', ''): formulas divide by T only when it is not 1."""
    return (" / T", f" / {t:g}") if t != 1 else ("", "")


def symbols_caption(config) -> str:
    """The quiz page's line on its symbols, built from the settings: which scores softmax reads here, and the
    letters RoPE, ALiBi, grouped KV heads and the sliding window bring in."""
    reads = PLAIN_SCORES[notation.softmax_input(config)]
    text = ("Symbols as everywhere in the app: S raw scores, Ŝ = S/√d_k scaled, S̃ masked; softmax reads the last of "
            f"these your settings make, here {reads}. A = softmax(…) the weights, C = A V the context, O the output; "
            "with H heads, head h = 0 … H−1 has its own A_h and C_h. Tokens, keys and dimensions are counted from 0.")
    if config.positional == "rope":
        text += " RoPE: the scores read Q^R and K^R, the rows of Q and K rotated by their positions."
    if config.positional == "alibi":
        text += " ALiBi: B is the bias (B_h)[i,j] = −m_h |i − j|, added to the scores before the mask."
    if config.kv_heads < config.n_heads:
        g = config.n_heads // config.kv_heads
        text += (f" H_kv = {config.kv_heads} key/value head{'s' if config.kv_heads > 1 else ''}: query head h reads "
                 f"K_⌊h/g⌋ and V_⌊h/g⌋, g = H / H_kv = {g}.")
    if config.mask == "sliding_window":
        text += f" The sliding window W = {config.window} hides key j from query i unless 0 ≤ i − j < W."
    return text


def facts_line(trace: Trace) -> str:
    f = trace.facts
    parts = [f"the sentence has n = {trace.n} token{'s' if trace.n != 1 else ''}"]
    for name in ("d_model", "d_in", "d_k", "d_v"):
        if name in f:
            parts.append(f"{name} = {f[name]}")
    if "n_heads" in f:
        parts.append(f"H = {f['n_heads']} head{'s' if f['n_heads'] != 1 else ''}")
        config = config_of(trace)
        if config is not None and config.kv_heads < config.n_heads:
            parts.append(f"H_kv = {config.kv_heads} key/value head{'s' if config.kv_heads != 1 else ''} "
                         f"({'multi' if config.kv_heads == 1 else 'grouped'}-query attention)")
    return "Here " + ", ".join(parts) + "."
