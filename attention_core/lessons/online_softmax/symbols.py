"""The lesson's symbols and sentences, built from the settings (docs/notation.md): what softmax reads (S, Ŝ,
S + B, S̃, ÷ T, per head _h), where the page's numbers come from, and FlashAttention-2's recurrence in this notation.
"""
from __future__ import annotations

from ...forward.config import Config


def reads_symbol(config: Config, heads: bool) -> tuple[str, str]:
    """(LaTeX, text) of the matrix softmax reads before T: S, Ŝ, S + B, Ŝ + B, or S̃ with a mask (per head: _h)."""
    sub = "_h" if heads else ""
    if config.mask != "none":
        return rf"\tilde S{sub}", f"S̃{sub}"
    tex, txt = (r"\hat S", "Ŝ") if config.score == "scaled_dot" else ("S", "S")
    tex, txt = tex + sub, txt + sub
    if config.positional == "alibi":
        tex, txt = f"{tex} + B{sub}", f"{txt} + B{sub}"
    return tex, txt


def matrix_symbol(config: Config, heads: bool, latex: bool = False) -> str:
    """The whole matrix softmax reads: 'S̃', 'Ŝ_h + B_h', '(Ŝ + B) / 2', 'S̃_h / 0.5'."""
    tex, txt = reads_symbol(config, heads)
    sym = tex if latex else txt
    if config.temperature == 1:
        return sym
    return (f"({sym})" if "+" in sym else sym) + f" / {config.temperature:g}"


def entry_symbol(config: Config, heads: bool, i="i", j="j", latex: bool = False) -> str:
    """One entry of it: 'S̃_ij', '(Ŝ_h + B_h)_ij / 2', '(S̃_h)_{2,3}' (LaTeX with latex=True)."""
    tex, txt = reads_symbol(config, heads)
    compound = heads or "+" in txt
    idx = f"{i}{j}" if isinstance(i, str) and isinstance(j, str) and len(i) == len(j) == 1 else f"{i},{j}"
    if latex:
        e = rf"({tex})_{{{idx}}}" if compound else rf"{tex}_{{{idx}}}"
    else:
        e = f"({txt})_{idx}" if compound else f"{txt}_{idx}"
    return e if config.temperature == 1 else f"{e} / {config.temperature:g}"


SCORE_NAMES = {"dot": "the dot product", "scaled_dot": "the scaled dot product", "additive": "the additive score",
               "bilinear": "the bilinear score"}
SCORE_ENTRIES = {"dot": "q_i · k_j", "scaled_dot": "q_i · k_j / √d_k", "additive": "vᵀ tanh(W_1ᵀ q_i + W_2ᵀ k_j)",
                 "bilinear": "q_iᵀ W k_j"}
SCORE_ENTRIES_PER_HEAD = {**SCORE_ENTRIES, "additive": "v^(h)ᵀ tanh(W_1^(h)ᵀ q_i + W_2^(h)ᵀ k_j)",
                          "bilinear": "q_iᵀ W^(h) k_j"}            # several heads: each its own (docs/notation.md)


def mask_words(config: Config) -> str:
    if config.mask == "causal":
        return "the causal mask"
    if config.mask == "sliding_window":
        return f"the sliding window of W = {config.window} key{'' if config.window == 1 else 's'}"
    keys = sorted(set(config.padding))
    hidden = ", ".join(map(str, keys))
    return (f"the padding mask (key{'s' if len(keys) > 1 else ''} {hidden} hidden)" if keys
            else "the padding mask (no key hidden)")


def source_text(config: Config, head: int) -> str:
    """Where the page's numbers come from, in words, built from the settings."""
    H, heads = config.n_heads, config.n_heads > 1
    rope = config.positional == "rope"
    r = "^R" if rope else ""
    who = "the forward pass"
    if heads:
        who = f"head h = {head} of the forward pass's H = {H}"
        if config.kv_heads < H:
            g = H // config.kv_heads
            who += (f" (its keys and values are KV head ⌊h/g⌋ = ⌊{head}/{g}⌋ = {head // g} of "
                    f"H_kv = {config.kv_heads})")
    sub = "_h" if heads else ""
    entry = (SCORE_ENTRIES_PER_HEAD if heads else SCORE_ENTRIES)[config.score]
    if rope:
        entry = entry.replace("q_i", "q^R_i").replace("k_j", "k^R_j")
    parts = [f"{SCORE_NAMES[config.score]} {'Ŝ' if config.score == 'scaled_dot' else 'S'}{sub}, entry (i, j) = {entry}"
             + (" with head h's own parameters" if heads and config.score in ("additive", "bilinear") else "")]
    if config.positional == "alibi":
        parts.append(f"plus ALiBi's bias B{sub}")
    if config.mask != "none":
        parts.append(f"with −∞ where {mask_words(config)} hides a key (S̃{sub})")
    if config.temperature != 1:
        parts.append(f"divided by the temperature T = {config.temperature:g}")
    return (f"Here: {who}, under the sidebar's settings: queries q{r}_i"
            + (" and keys k^R_j rotated by RoPE" if rope else " and keys k_j") + ", values v_j, and exactly the scores "
            f"its softmax reads, {matrix_symbol(config, heads)}: " + ", ".join(parts) + ". So the blocks below "
            f"end in the forward pass's own weights and context vectors{' C_h' if heads else ' C'}.")


def recurrence_parts(config: Config, heads: bool) -> tuple[str, str, str]:
    """FlashAttention-2's recurrence in the notation (LaTeX: the updates, then the start, the end and the row's
    logsumexp written in what softmax reads) and its caption."""
    x = entry_symbol(config, heads, latex=True)
    updates = (r"\begin{aligned} m_i' &= \max\big(m_i,\ \max_{j \in b} (S_b)_{ij}\big) \\ "
               r"\ell_i' &= e^{m_i - m_i'}\, \ell_i + \textstyle\sum_{j \in b} e^{(S_b)_{ij} - m_i'} \\ "
               r"o_i' &= e^{m_i - m_i'}\, o_i + \textstyle\sum_{j \in b} e^{(S_b)_{ij} - m_i'}\, v_j \end{aligned}")
    ends = (r"\begin{aligned} &m_i = -\infty,\ \ell_i = 0,\ o_i = 0 \text{ before block 0} \\ "
            r"&C_i = o_i / \ell_i \text{ after the last block} \\ &m_i + \log \ell_i = \log \textstyle\sum_j "
            f"e^{{{x}}} \\end{{aligned}}")
    caption = (f":small[FlashAttention-2's recurrence (Dao, 2023, Algorithm 1) in this app's notation: (S_b)_ij = "
               f"{entry_symbol(config, heads)} for the keys j of block b"
               + (", −∞ where the mask hides key j from query i" if config.mask != "none" else "")
               + "; a prime is the value after the block. The paper's line 10 writes diag(e^(m − m′))**⁻¹** O: that "
               "⁻¹ is a typo (flash-attention issue #991); the factor multiplies, as here and in the authors' own "
               "kernels.]")
    return updates, ends, caption


def recurrence(config: Config, heads: bool) -> str:
    """The recurrence as one Markdown: both formulas side by side, then the caption."""
    updates, ends, caption = recurrence_parts(config, heads)
    return f"$$\n{updates} \\qquad {ends}\n$$\n\n{caption}"
