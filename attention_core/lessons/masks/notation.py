"""How the masks page writes head h's steps: their symbols (Ŝ_h, B_h, S̃_h, A_h, A′_h), the formulas and whys of the
scores, ALiBi's slopes and the sidebar's mask, true under the sidebar's settings (docs/notation.md).
"""
from __future__ import annotations

import math

from ...explanations import SYMBOLS
from ...forward.config import Config
from .compare import rule_formula

SYMBOLS.setdefault("alibi_slopes", ("m", "m"))


def head_symbols(config: Config, h: int) -> dict[str, tuple[str, str]]:
    """Head h's matrices, (LaTeX, text), as the page's headings write them and the forward pass's explainers index
    them: Ŝ_h, B_h, (Ŝ_h + B_h), S̃_h, A_h and the sink's A′_h with several heads; Ŝ, B, (Ŝ + B), S̃, A, A′ with one
    (the forward pages write no head subscript then). A subscripted symbol is braced, so a cell is ({Ŝ_2})_{i,j}."""
    many = config.n_heads > 1
    sub = (lambda x: rf"{{{x}_{{{h}}}}}") if many else (lambda x: x)
    sub_text = (lambda x: f"{x}_{h}") if many else (lambda x: x)
    score = (r"\hat S", "Ŝ") if config.score == "scaled_dot" else ("S", "S")
    plain = {"scores": score, "scaled_scores": score, "alibi": ("B", "B"), "masked_scores": (r"\tilde S", "S̃"),
             "weights": ("A", "A"), "sink_weights": ("A'", "A′")}
    out = {key: (sub(a), sub_text(b)) for key, (a, b) in plain.items()}
    hs = f"_{{{h}}}" if many else ""                                          # a sum: each matrix its own subscript
    out["biased_scores"] = (rf"({score[0]}{hs} + B{hs})", f"({sub_text(score[1])}+{sub_text('B')})")
    return out


def index_range(first: int, last: int, name: str = "") -> str:
    r"""Indices first … last in LaTeX, without a one-element range: 'h = 4', 'm_0, m_1', 'h = 0, \dots, 7'.
    name 'm' lists symbols (m_0, \dots, m_{7}); otherwise 'h = …'.

    >>> index_range(4, 4), index_range(0, 1, "m"), index_range(0, 7), index_range(2, 2, "m")
    ('h = 4', 'm_{0}, m_{1}', 'h = 0, \\dots, 7', 'm_{2}')
    """
    items = [f"m_{{{k}}}" if name == "m" else str(k) for k in range(first, last + 1)]
    listed = ", ".join(items) if len(items) <= 2 else rf"{items[0]}, \dots, {items[-1]}"
    return listed if name == "m" else f"h = {listed}"


def score_formula(config: Config, h: int, kv: int) -> str:
    """Head h's scores as the forward pass computes them (RoPE's rotated rows, KV head ⌊h/g⌋); with one head no
    head subscript, as the forward pages write them."""
    r = "^R" if config.positional == "rope" else ""
    many = config.n_heads > 1
    hs, ks, sup = (f"_{{{h}}}", f"_{{{kv}}}", f"^{{({h})}}") if many else ("", "", "")
    q = f"Q{r}{hs}"
    k = f"{{K{r}{ks}}}^\\top" if r else f"K{ks}^\\top"
    if config.score == "scaled_dot":
        return rf"\hat S{hs} = \frac{{{q}\, {k}}}{{\sqrt{{d_k}}}},\quad d_k = {config.d_k}"
    if config.score == "dot":
        return rf"S{hs} = {q}\, {k}"
    if config.score == "bilinear":
        return rf"S{hs} = {q}\, W{sup}\, {k}"
    lhs = rf"(S{hs})_{{ij}}" if many else r"S_{ij}"
    return (rf"{lhs} = v{sup}{{}}^\top \tanh(W_1{sup}{{}}^\top q{r}_i + W_2{sup}{{}}^\top k{r}_j),\ "
            rf"q{r}_i, k{r}_j \text{{ rows of }} {q}, K{r}{ks}")


def scores_why(config: Config, h: int, kv: int) -> str:
    """What the first box shows, in words true under these settings."""
    scaled = config.score == "scaled_dot"
    name = "scaled scores Ŝ" if scaled else "scores S"
    whose = f"Head {h}'s {name}" if config.n_heads > 1 else f"The {name}"
    later = [w for w, on in (("bias", config.positional == "alibi"), ("mask", config.mask != "none")) if on]
    words = [f"{whose} from the forward pass under the sidebar's settings"
             + (f", before the {' and the '.join(later)}" if later else "")]
    if config.positional == "rope":
        words.append("RoPE rotated each query and key by its position first (Q^R, K^R)")
    if config.kv_heads < config.n_heads:
        words.append(f"query head {h} reads KV head ⌊{h}/{config.n_heads // config.kv_heads}⌋ = {kv}")
    text = "; ".join(words) + "."
    readers = ["ALiBi's bias"] * (config.positional == "alibi") + ["the mask"] * (config.mask != "none") + ["softmax"]
    readers = readers[0] if len(readers) == 1 else ", ".join(readers[:-1]) + " and " + readers[-1]
    if config.score == "dot":
        text += (f" The sidebar's score is the dot product without the division by √d_k: {readers} read"
                 f"{'s' * (readers == 'softmax')} S the same way {'it' if readers == 'softmax' else 'they'} would "
                 "read Ŝ.")
    elif not scaled:
        text += (f" The sidebar's score is {config.score}, not the scaled dot product: {readers} read"
                 f"{'s' * (readers == 'softmax')} these S the same way"
                 + (" (ALiBi's paper adds its bias to the scaled dot product)." if config.positional == "alibi" else "."))
    return text


def slopes_formula(heads: int) -> str:
    """m_h in LaTeX for this H: one geometric sequence for a power of two, else the c and 2c pieces."""
    c = 2 ** int(math.floor(math.log2(heads)))
    if c == heads:
        return rf"m_h = 2^{{-8(h+1)/{heads}}},\quad {index_range(0, heads - 1)}"
    return (rf"m_h = \begin{{cases}} 2^{{-8(h+1)/{c}}} & h < c = {c} \\ 2^{{-8(2(h-{c})+1)/{2 * c}}} & "
            rf"{index_range(c, heads - 1)} \end{{cases}}")


def mask_formula(config: Config) -> str:
    """The sidebar's mask M in LaTeX: the compared mask of its rule (compare.RULES) with the sidebar's W or padding
    positions."""
    if config.mask == "causal":
        return rule_formula("causal", None)
    if config.mask == "sliding_window":
        return rule_formula("window", config.window)
    if not config.padding:                                     # padding chosen, no position hidden yet
        return r"M_{ij} = 1 \quad \text{(no key hidden)}"
    return rule_formula("padding", sorted(set(config.padding)))


MASK_WHY = {
    "causal": lambda c: "A query sees itself and the keys before it: what a model writing left to right may read.",
    "sliding_window": lambda c: (f"A query sees at most W = {c.window} key{'s' * (c.window != 1)}, itself included"
                                 + (f": keys i − {c.window - 1} … i." if c.window > 1 else ": only itself.")
                                 + " This is how Hugging Face transformers and flash-attn count a window; Mistral's "
                                   "paper counts one key more (the comparison below)."),
    "padding": lambda c: ("The hidden keys (padding a batch added) are invisible to every query." if c.padding else
                          "No key is hidden yet: the sidebar's padding mask has no positions chosen, so every query "
                          "sees every key. Choose the padding positions in the sidebar."),
}


def slope_parts(h: int, heads: int) -> tuple[int, int, int]:
    """(numerator k, denominator D, c) with m_h = 2^(−8k/D): the first c = 2^⌊log₂ H⌋ heads take the c-head
    sequence (k = h + 1, D = c); the rest take every other slope of the 2c-head one (k = 2(h − c) + 1, D = 2c)."""
    c = 2 ** int(math.floor(math.log2(heads)))
    return (h + 1, c, c) if h < c else (2 * (h - c) + 1, 2 * c, c)

