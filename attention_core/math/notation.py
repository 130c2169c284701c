"""The app's one notation, in code: the symbols, and the formulas built from the settings that computed them.

docs/notation.md is the same table in words (tests/test_notation.py checks they agree). Every formula a
page shows for the attention step comes from here, so that the formula on screen is the computation the
Config asked for: its score function, scale, mask, temperature and heads.

    >>> from attention_core import Config
    >>> print(attention_formula(Config()))
    A = \\mathrm{softmax}\\!\\left(\\hat S\\right),\\quad \\hat S = \\frac{Q K^\\top}{\\sqrt{d_k}}
    >>> print(attention_formula(Config(score="dot", mask="causal", temperature=0.5)))
    A = \\mathrm{softmax}\\!\\left(\\tilde S / 0.5\\right),\\quad S = Q K^\\top,\\quad \\tilde S = S \\text{ with } -\\infty \\text{ where } M_{ij} = 0
"""
from __future__ import annotations

# ---- symbols (LaTeX) -------------------------------------------------------------------------------
# Counts: n tokens, d_model, d_k, d_v, H heads (the paper's h; we keep h for one head's index).
# Indices, every one counted from 0: query i, key j, dimension m, head h, position p.
S = "S"                    # raw scores: what the score function gives (Q Kᵀ, additive, bilinear)
S_SCALED = r"\hat S"       # scaled scores S / √d_k (scaled dot-product only)
S_MASKED = r"\tilde S"     # masked scores: −∞ where the mask hides a key
A = "A"                    # attention weights, softmax over the keys (rows)
C = "C"                    # context vectors C = A V
O = "O"                    # output O = C W_O (heads concatenated first)
M = "M"                    # the mask, 1 = may attend
T = "T"                    # temperature
H = "H"                    # number of heads; one head's index is h = 0 … H−1
HEAD = "h"
H_KV = "H_kv"              # key/value heads (grouped-query attention); query head h reads KV head ⌊h/g⌋, g = H/H_kv
B = "B"                    # ALiBi's bias, (B_h)_ij = −m_h |i − j|
ROTATED = "Q^R, K^R"       # RoPE: queries and keys rotated by their positions

SYMBOLS = {                # symbol -> what it names: the table docs/notation.md writes out
    "X": "input rows, one per token (n, d_model)",
    "Q, K, V": "queries, keys, values: X W_Q, X W_K, X W_V",
    "W_Q, W_K, W_V, W_O": "projection weights, (d_model, H·d_k), (d_model, H·d_k), (d_model, H·d_v), (H·d_v, d_model)",
    "b_Q, b_K, b_V, b_O": "their biases, when the settings have biases",
    S: "raw scores, the score function's output",
    S_SCALED: "scaled scores S/√d_k",
    S_MASKED: "masked scores: hidden entries −∞",
    M: "mask, 1 = query i may see key j",
    T: "temperature",
    A: "attention weights",
    C: "context vectors A V",
    O: "output C W_O",
    H: "number of heads",
    HEAD: "a head's index, 0 … H−1",
    H_KV: "key/value heads; query head h reads KV head ⌊h / g⌋, g = H / H_kv",
    B: "ALiBi's bias, added to the scores",
    ROTATED: "queries and keys rotated by their positions (RoPE)",
    # the transformer block (forward/transformer.py, explanations/block.py)
    "X_l, X_l'": "the residual stream entering layer l, and after its attention sublayer",
    "N": "the norm: LayerNorm (LN) or RMSNorm, row by row",
    "μ, σ², ε": "a row's mean, biased variance and the ε inside the square root",
    "γ, β": "the norm's scale and shift",
    "O_l": "layer l's attention output",
    "W_1, b_1, W_2, b_2": "the MLP's weights and biases",
    "d_ff": "the MLP's hidden width",
    "H^(l)": "layer l's MLP hidden rows (H alone: the number of heads)",
    "GELU, Φ": "GELU(h) = h Φ(h), Φ the standard normal CDF",
    "W_U": "the unembedding",
    "Z": "the logits",
}


def _per_head(sym: str, heads: bool) -> str:
    return f"{sym}_h" if heads else sym


def _kv(sym: str, heads: bool, config=None) -> str:
    """A key/value matrix of head h: K_h, or K_{⌊h/g⌋} when query heads share KV heads."""
    if not heads:
        return sym
    grouped = config is not None and config.kv_heads < config.n_heads
    return sym + (r"_{\lfloor h/g \rfloor}" if grouped else "_h")


def score_formula(score: str, heads: bool = False, config=None) -> str:
    """The raw scores S of a score function, as a matrix formula (per head with heads=True)."""
    r = "^R" if config is not None and config.positional == "rope" else ""
    q, k = _per_head(f"Q{r}", heads), _kv(f"K{r}", heads, config)
    k = f"{{{k}}}" if r else k                         # {K^R_h}^⊤: one superscript at a time
    own = r"^{(h)}" if heads else ""                   # a head's own score parameters: W_1^(h), v^(h), W^(h)
    t = rf"{own}{{}}^\top" if heads else r"^\top"     # transposed: v^(h)ᵀ
    return {"dot": rf"{q} {k}^\top", "scaled_dot": rf"{q} {k}^\top",
            "additive": rf"\left[v{t} \tanh(W_1{t} q{r}_i + W_2{t} k{r}_j)\right]_{{ij}}",
            "bilinear": rf"{q}\, W{own}\, {k}^\top"}[score]


def _scores_symbol(config, heads: bool = False) -> str:
    """The scores before the mask: S or Ŝ, plus B with ALiBi."""
    sym = _per_head(S_SCALED if config.score == "scaled_dot" else S, heads)
    return rf"{sym} + {_per_head(B, heads)}" if config.positional == "alibi" else sym


def softmax_input(config) -> str:
    """The symbol softmax is applied to under these settings: S, Ŝ, S + B, Ŝ + B or S̃."""
    if config.mask != "none":
        return S_MASKED
    return _scores_symbol(config)


def softmax_argument(config, heads: bool = False) -> str:
    """What is inside softmax( … ): the scores softmax reads, divided by T when T ≠ 1."""
    sym = _per_head(S_MASKED, heads) if config.mask != "none" else _scores_symbol(config, heads)
    if config.temperature == 1:
        return sym
    return rf"({sym}) / {config.temperature:g}" if config.positional == "alibi" and config.mask == "none" \
        else rf"{sym} / {config.temperature:g}"


def attention_formula(config, heads: bool = False) -> str:
    """The parts of attention_parts joined on one line."""
    return r",\quad ".join(attention_parts(config, heads))


def attention_parts(config, heads: bool = False) -> list[str]:
    """A = softmax(…) with its scores spelled out, built from the settings: score function, √d_k, RoPE,
    ALiBi, mask, T, grouped KV heads.

    heads=True writes it for one head h (its Q_h, K_h or K_{⌊h/g⌋}, and the same mask for every head)."""
    a, sq = _per_head(A, heads), _per_head(S, heads)
    parts = [rf"{a} = \mathrm{{softmax}}\!\left({softmax_argument(config, heads)}\right)"]
    raw = score_formula(config.score, heads, config)
    if config.score == "scaled_dot":
        parts.append(rf"{_per_head(S_SCALED, heads)} = \frac{{{raw}}}{{\sqrt{{d_k}}}}")
    else:
        parts.append(rf"{sq} = {raw}")
    if config.positional == "rope":
        parts.append(r"q^R_p = R_p\, q_p,\ k^R_p = R_p\, k_p")
    if config.positional == "alibi":
        parts.append(rf"({B}_h)_{{ij}} = -m_h\, |i - j|" if heads else rf"{B}_{{ij}} = -m_0\, |i - j|")
    if config.mask != "none":
        before = _scores_symbol(config, heads)
        before = f"({before})" if config.positional == "alibi" else before
        rule = r"\text{ with } -\infty \text{ where } M_{ij} = 0"
        if config.mask == "sliding_window":
            rule = rf"\text{{ with }} -\infty \text{{ unless }} 0 \le i - j < W = {config.window}"
        parts.append(rf"{_per_head(S_MASKED, heads)} = {before} {rule}")
    return parts


def multi_head_formula(config) -> str:
    """head_h = A_h V_h for h = 0 … H−1, then O = [head_0 | … | head_{H−1}] W_O (+ b_O), from the settings."""
    out = r"O = \left[\,C_0 \mid \cdots \mid C_{H-1}\,\right] W_O" if config.n_heads > 1 else r"O = C\, W_O"
    if config.bias:
        out += r" + b_O"
    if config.n_heads == 1:
        return rf"C = A V,\qquad {out}"
    groups = (rf",\quad g = H / H_{{kv}} = {config.n_heads // config.kv_heads}" if config.kv_heads < config.n_heads else "")
    return rf"C_h = A_h {_kv('V', True, config)},\quad h = 0, \dots, H-1 = {config.n_heads - 1}{groups},\qquad {out}"
