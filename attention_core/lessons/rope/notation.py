"""How the RoPE page writes its steps: the base as a power's base, the symbols of one head's matrices, and the
score step's title, formula and why under the sidebar's score function (docs/notation.md)."""
from __future__ import annotations

from ...explanations import SYMBOLS
from ...forward.config import Config
from .claims import DOT_SCORES
from .reading import score_key

SYMBOLS.setdefault("q_rot", ("Q^R", "Q^R"))
SYMBOLS.setdefault("k_rot", ("K^R", "K^R"))


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


def head_symbols(config: Config, head: int, kv: int) -> dict:
    """With several heads the steps are one head's: Q_h, K_⌊h/g⌋, Q^R_h, K^R_⌊h/g⌋, Ŝ_h (docs/notation.md)."""
    if config.n_heads == 1:
        return {}
    s = "\\hat S" if config.score == "scaled_dot" else "S"
    text = "Ŝ" if config.score == "scaled_dot" else "S"
    return {"q": (f"Q_{{{head}}}", f"Q_{head}"), "k": (f"K_{{{kv}}}", f"K_{kv}"),
            "q_rot": (f"Q^R_{{{head}}}", f"Q^R_{head}"), "k_rot": (f"K^R_{{{kv}}}", f"K^R_{kv}"),
            score_key(config): (f"{{{s}_{{{head}}}}}", f"{text}_{head}")}


def score_title(config: Config) -> str:
    return {"scaled_dot": "Scaled scores Ŝ of the rotated rows", "dot": "Scores S of the rotated rows",
            "additive": "Additive scores S of the rotated rows", "bilinear": "Bilinear scores S of the rotated rows"
            }[config.score]


def score_formula(config: Config, head: int, kv: int) -> str:
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


def score_why(config: Config) -> str:
    if config.score in DOT_SCORES:
        scaled = ", divided by √d_k" if config.score == "scaled_dot" else ""
        return (f"Entry (i, j): the rotated query of token i against the rotated key of token j, a dot product"
                f"{scaled}: the sidebar's score function.")
    name = "additive" if config.score == "additive" else "bilinear"
    return (f"The sidebar's {name} score of the rotated rows, with its own parameters at their seeded start. RoPE "
            "was made for dot-product scores.")

