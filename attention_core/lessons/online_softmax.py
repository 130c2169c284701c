"""The online-softmax page's computation: FlashAttention-2's recurrence stepped block by block on the sentence.

One head h of the forward pass under the sidebar's settings (head 0 unless the page picks another): its
queries and keys as the scores read them (rotated by RoPE when the position is RoPE; the keys and values of
KV head ⌊h/g⌋ under grouped-query attention), its values, and exactly the scores its softmax reads: the
score function's S or Ŝ, plus ALiBi's B_h, −∞ where the settings' mask hides a key (S̃), divided by the
temperature T. The keys are cut into blocks b = 0, 1, … of B_c keys; the block's scores S_b are made only when
its keys are loaded (each score needs only its query and its key, whatever the score function), and each
query row i carries its running maximum m_i, running sum ℓ_i and unnormalised output o_i from block to block
(docs/notation.md, "Today's attention"). After the last block C_i = o_i / ℓ_i is row i of the forward pass's
C_h. As FlashAttention does, the queries are cut into blocks of B_r rows too (B_r = B_c here), so that a
B_r × B_c tile whose every score is masked is skipped: counted and shown here. (B_c, B_r: FlashAttention's names
for the key and query block sizes; B alone is ALiBi's bias in docs/notation.md.)

    >>> from attention_core import Config
    >>> t = online_softmax_trace(Config(sentence="I love you today", mask="causal"), 2, 1)
    >>> t["s_b"].shape_text, t.facts["keys"], t.facts["n_skipped"], t.facts["n_tiles"]
    ('n_q=4 × k_b=2', (2, 4), 1, 4)
    >>> bool(t.facts["max_diff"] < 1e-12), bool(t.facts["lse_diff"] < 1e-12)
    (True, True)

`online_softmax_trace(config, block_size, block, head)` is cached per process (Config is frozen); the claims
below hold under `Controls(config, block_size, block, head)`; the explainers make every number clickable.
"""
from __future__ import annotations

import functools
import math
import threading
from dataclasses import dataclass

import numpy as np

from ..math import attention as att
from ..forward.claims import claim, say
from ..forward.config import Config
from ..math.limits import ConfigError
from ..explanations import Context, Explanation, fmt, join_terms, register
from ..forward.stages import exact_slope, run_forward
from ..math.online_softmax import online_softmax
from ..forward.trace import Trace

KIND = "online_softmax"


@dataclass(frozen=True)
class Controls:
    """What the page's claims hold under: the sidebar's Config and the page's own controls."""
    config: Config
    block_size: int
    block: int
    head: int = 0


def check_block_size(block_size, n: int) -> int:
    """A whole number of keys, at least 1 (larger than n is allowed: one block); else ConfigError."""
    if isinstance(block_size, bool) or not isinstance(block_size, (int, np.integer)) or block_size < 1:
        raise ConfigError(f"The block size B_c must be a whole number of keys, at least 1 (not {block_size!r}): "
                          f"move the slider to a value from 1 to n = {n}.")
    return int(block_size)


def check_head(head, n_heads: int) -> int:
    if isinstance(head, bool) or not isinstance(head, (int, np.integer)) or not 0 <= head < n_heads:
        raise ConfigError(f"The head h must be one of 0 … {n_heads - 1} (H = {n_heads} heads), not {head!r}.")
    return int(head)


# ---- the forward pass's head h, as the online softmax reads it -------------------------------------------

@dataclass(frozen=True, eq=False)
class Head:
    tokens: tuple
    head: int
    kv_head: int
    q: np.ndarray                 # (n, d_k): Q_h (rotated by RoPE when the position is RoPE)
    k: np.ndarray                 # (n, d_k): K of KV head ⌊h/g⌋ (rotated likewise)
    v: np.ndarray                 # (n, d_v): V of KV head ⌊h/g⌋
    params: dict                  # the score's own parameters of head h: w_1, w_2, v_a (additive) or w_b (bilinear)
    slope: float | None           # ALiBi's m_h, or None without ALiBi
    mask: np.ndarray | None       # (n, n) bool, True = may attend
    reads: np.ndarray             # (n, n): what the forward pass's softmax reads for head h, divided by T
    context: np.ndarray           # (n, d_v): the forward pass's C_h
    weights: np.ndarray           # (n, n): the forward pass's A_h


_HEADS: dict = {}                 # (config, head) -> Head, the last 64 (oldest first)
_HEADS_LOCK = threading.Lock()     # sessions run in threads of one server


def head_of(config: Config, head: int = 0, forward: Trace | None = None) -> Head:
    """Head h of the forward pass under `config`: its Q, K, V as the scores read them, the score's parameters, the
    bias, the mask, and the forward pass's own softmax input (÷ T), weights and context for the checks.

    `forward`: the page's own run_forward(config) trace, to read instead of running the forward pass again."""
    h = check_head(head, config.n_heads)
    hit = _HEADS.get((config, h))
    if hit is None:
        if forward is None or forward.facts.get("config") != config:
            forward = run_forward(config)
        hit = _read_head(forward, config, h)
        with _HEADS_LOCK:
            _HEADS[(config, h)] = hit
            while len(_HEADS) > 64:
                del _HEADS[next(iter(_HEADS))]
    return hit


def _read_head(f: Trace, config: Config, h: int) -> Head:
    H = config.n_heads
    kv = h // (H // config.kv_heads)
    rope = "q_rot" in f
    q_key, k_key = ("q_rot", "k_rot") if rope else ("q_heads", "k_heads") if H > 1 else ("q", "k")
    v_key = "v_heads" if H > 1 else "v"
    pick = (lambda a, i: a[i]) if H > 1 else (lambda a, i: a)
    params = {name: pick(f[key].value, h) for name, key in (("w_1", "w_a_q"), ("w_2", "w_a_k"), ("v_a", "v_a"),
                                                            ("w_b", "w_b")) if key in f}
    slope = float(f.facts["alibi_slopes"][h]) if "alibi_slopes" in f.facts else None
    reads = pick(f[f.facts["softmax_input"]].value, h) / config.temperature
    return Head(tuple(f.tokens), h, kv, pick(f[q_key].value, h), pick(f[k_key].value, kv), pick(f[v_key].value, kv),
                params, slope, f["mask"].value.astype(bool) if "mask" in f else None, reads,
                pick(f["context"].value, h), pick(f["weights"].value, h))


def block_scores(config: Config, hd: Head, start: int, stop: int) -> np.ndarray:
    """The scores of keys start … stop − 1 against every query (before the mask), as the forward pass makes
    them, divided by T: each needs only its query row and its key row. (n, stop − start)."""
    q, k = hd.q, hd.k[start:stop]
    p = hd.params
    if config.score in ("dot", "scaled_dot"):
        s = att.dot_scores(q, k)
        if config.score == "scaled_dot":
            s = s / np.sqrt(q.shape[1])
    elif config.score == "additive":
        s = att.additive_scores(q, k, p["w_1"], p["w_2"], p["v_a"])
    else:
        s = att.bilinear_scores(q, k, p["w_b"])
    if hd.slope is not None:
        i, j = np.arange(q.shape[0])[:, None], np.arange(start, stop)[None, :]
        s = s + (0.0 - hd.slope * np.abs(i - j))                       # ALiBi's (B_h)_ij = −m_h·|i − j|
    return s / config.temperature


@functools.lru_cache(maxsize=32)
def run_blocks(config: Config, block_size: int, head: int = 0):
    """The recurrence over key blocks for every row, and which B_r × B_c tiles (query block × key block, B_r = B_c)
    are skipped.

    Returns (blocks, tiles, context): blocks[b] holds "keys" (start, stop), "scores" S_b (n, size), "rescale",
    "m", "l" (n,), "o" (n, d_v) after block b, "skipped" (n,) bool (the row's tile was skipped); tiles
    (n_qb, n_kb) 1 computed, 0 skipped; context (n, d_v) = o / ℓ.

    One run of the recurrence over all rows gives the same numbers (to the last bits of the matrix product)
    as one run per query block that skips the masked tiles (tests/test_online_softmax.py checks it): a row
    whose scores in a block are all −∞ gets e^(m − m′) = 1 and adds 0, so its m, ℓ, o pass through exactly.
    Only the rescale factor of a row that has seen nothing yet differs (0 here, 1 in a skipped tile,
    multiplying ℓ = 0 either way): the skipped tiles' 1 is shown."""
    hd = head_of(config, head)
    n = len(hd.tokens)
    context, blocks = online_softmax(lambda a, b: block_scores(config, hd, a, b), hd.v, block_size, hd.mask)
    nb = len(blocks)                                                    # as many query blocks as key blocks
    if hd.mask is None:
        tiles = np.ones((nb, nb))
    else:                                                               # (n_qb, n_kb): any visible score in the tile
        pad = nb * block_size - n
        padded = np.pad(hd.mask, ((0, pad), (0, pad)))
        tiles = padded.reshape(nb, block_size, nb, block_size).any(axis=(1, 3)).astype(float)
    rows_skipped = np.repeat(tiles == 0, block_size, axis=0)[:n]                                      # (n, n_kb)
    out = []
    for b, bl in enumerate(blocks):
        skipped = rows_skipped[:, b]
        out.append(dict(bl, rescale=np.where(skipped, 1.0, bl["rescale"]), skipped=skipped))
    return out, tiles, context


def logsumexp_rows(s: np.ndarray) -> np.ndarray:
    """log Σ_j e^{s_ij} per row, with the row maximum taken out; −∞ for a row of −∞. s (n, n_k) -> (n,)."""
    top = s.max(axis=1)
    safe = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        return safe + np.log(np.exp(s - safe[:, None]).sum(axis=1))


# ---- the symbols, built from the settings (docs/notation.md) ----------------------------------------------

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


# ---- the lesson -----------------------------------------------------------------------------------------

def _words(tokens, start: int, stop: int) -> str:
    return " ".join(tokens[start:stop])


def _rows_words(tokens, r0: int, r1: int) -> str:
    return f"{r0}: {_words(tokens, r0, r1)}"


@functools.lru_cache(maxsize=64)
def _cached(config: Config, block_size: int, block: int, head: int) -> Trace:
    hd = head_of(config, head)
    tokens, q, k, v, mask = hd.tokens, hd.q, hd.k, hd.v, hd.mask
    n, d_k = q.shape
    heads = config.n_heads > 1
    blocks, tiles, context = run_blocks(config, block_size, head)
    if not (isinstance(block, (int, np.integer)) and not isinstance(block, bool) and 0 <= block < len(blocks)):
        raise ConfigError(f"There are {len(blocks)} key blocks of B_c = {block_size}: the block b must be "
                          f"0 … {len(blocks) - 1}, not {block!r}.")
    here, last = blocks[block], blocks[-1]
    before = blocks[block - 1] if block else dict(m=np.full(n, -np.inf), l=np.zeros(n), o=np.zeros_like(here["o"]))
    start, stop = here["keys"]
    t = Trace(tuple(tokens))
    labels = t.token_labels()
    rope = config.positional == "rope"
    r = "^R" if rope else ""
    hsub, ksub = ("_h", r"_{\lfloor h/g \rfloor}" if config.kv_heads < config.n_heads else "_h") if heads else ("", "")
    t.facts.update(kind=KIND, config=config, block_size=block_size, block=block, n_blocks=len(blocks),
                   keys=(start, stop), blocks=tuple(bl["keys"] for bl in blocks), d_k=d_k, n_heads=config.n_heads,
                   head=hd.head, kv_head=hd.kv_head, mask=config.mask, score=config.score, slope=hd.slope,
                   temperature=config.temperature, rope=rope,
                   reads_text=matrix_symbol(config, heads), entry_text=entry_symbol(config, heads),
                   axis_labels={
                       "k_b": labels[start:stop],
                       "query block": [_rows_words(tokens, r0, min(r0 + block_size, n))
                                       for r0 in range(0, n, block_size)],
                       "key block": [f"b={c}" for c in range(tiles.shape[1])]})
    where = f" (head {hd.head})" if heads else ""
    kv_where = f" (KV head {hd.kv_head})" if heads else ""
    ktxt = ("_⌊h/g⌋" if config.kv_heads < config.n_heads else "_h") if heads else ""
    t.add("q", f"Queries Q{r}{hsub}", q, ("n", "d_k"), rf"Q{r}{hsub}", why="From the forward pass" + where + ".")
    t.add("k", f"Keys K{r}{ktxt}", k, ("n", "d_k"), rf"K{r}{ksub}", why="From the forward pass" + kv_where + ".")
    t.add("v", f"Values V{ktxt}", v, ("n", "d_v"), rf"V{ksub}", why="From the forward pass" + kv_where + ".")
    own, own_tex = (f"^({hd.head})", rf"^{{({hd.head})}}") if heads else ("", "")   # head h's own: W_1^(h) …
    for key, val in hd.params.items():
        name = {"w_1": "W_1", "w_2": "W_2", "v_a": "v", "w_b": "W"}[key]
        t.add(key, name + own, val, ("d_k", "d_a") if val.ndim == 2 else ("d_a",), name + own_tex,
              why="The score's own parameters" + (f" of head h = {hd.head}" if heads else "") + ", from the forward pass.")
    if mask is not None:
        t.add("mask", "Mask M", mask.astype(float), ("n_q", "n_k"), r"M", why=f"The settings' {config.mask} mask.",
              scale="mask")
    reads_tex = matrix_symbol(config, heads, latex=True)
    t.add("reads", f"{matrix_symbol(config, heads)}: whole rows", hd.reads, ("n_q", "n_k"), reads_tex,
          why="What the forward pass's softmax reads, all at once (for the checks).")
    t.add("s_b", f"Scores of block {block}, S_{block}", here["scores"], ("n_q", "k_b"),
          rf"(S_{{{block}}})_{{ij}} = {entry_symbol(config, heads, latex=True)},\quad j = {start} \dots {stop - 1}",
          ("q", "k"), why=f"Only these {n} × {stop - start} scores exist now: keys {start} … {stop - 1} against every query.")
    for key, name, val in (("m_prev", "m_i before", before["m"]), ("l_prev", "ℓ_i before", before["l"]),
                           ("o_prev", "o_i before", before["o"])):
        t.add(key, name, val, ("n_q",) + (("d_v",) if key == "o_prev" else ()), "", why="After block b − 1.")
    t.add("m", "m_i′ after", here["m"], ("n_q",), r"m_i' = \max\big(m_i, \max_{j \in b} (S_b)_{ij}\big)", ("m_prev", "s_b"))
    t.add("rescale", "e^(m_i − m_i′)", here["rescale"], ("n_q",), r"e^{m_i - m_i'}", ("m_prev", "m"))
    t.add("l", "ℓ_i′ after", here["l"], ("n_q",), r"\ell_i' = e^{m_i - m_i'} \ell_i + \sum_{j \in b} e^{(S_b)_{ij} - m_i'}",
          ("rescale", "l_prev", "s_b", "m"))
    t.add("o", "o_i′ after", here["o"], ("n_q", "d_v"),
          r"o_i' = e^{m_i - m_i'} o_i + \sum_{j \in b} e^{(S_b)_{ij} - m_i'} v_j", ("rescale", "o_prev", "s_b", "m", "v"))
    t.add("m_final", "m_i after the last block", last["m"], ("n_q",), "")
    t.add("l_final", "ℓ_i after the last block", last["l"], ("n_q",), "")
    t.add("o_final", "o_i after the last block", last["o"], ("n_q", "d_v"), "")
    t.add("context", "C = o / ℓ", context, ("n_q", "d_v"), r"C_i = o_i / \ell_i", ("o_final", "l_final"))
    with np.errstate(divide="ignore"):
        lse = last["m"] + np.log(last["l"])                          # −∞ for a row that saw no key
    t.add("lse", "m_i + log ℓ_i", lse, ("n_q",), r"m_i + \log \ell_i", ("m_final", "l_final"))
    t.add("logsumexp", f"log Σ_j e^({entry_symbol(config, heads)})", logsumexp_rows(hd.reads), ("n_q",),
          rf"\log \sum_j e^{{{entry_symbol(config, heads, latex=True)}}}", ("reads",))
    t.add("tiles", "Tiles computed (1) or skipped (0)", tiles, ("query block", "key block"), "", scale="mask")
    same = np.isneginf(lse) & np.isneginf(t["logsumexp"].value)          # a row that saw no key: −∞ on both sides
    gap = np.abs(np.where(same, 0.0, lse) - np.where(same, 0.0, t["logsumexp"].value))
    whole = hd.reads[:, start:stop]
    seen = np.isfinite(before["m"])
    t.facts.update(
        max_diff=float(np.abs(context - hd.context).max()),
        s_diff=float(np.abs(np.where(np.isfinite(whole), whole, 0.0)
                            - np.where(np.isfinite(here["scores"]), here["scores"], 0.0)).max()),
        s_same_mask=bool(np.array_equal(np.isfinite(whole), np.isfinite(here["scores"]))),
        lse_diff=float(gap.max()),
        n_tiles=int(tiles.size), n_skipped=int((tiles == 0).sum()),
        skipped_here=tuple(int(i) for i in np.flatnonzero(here["skipped"])),
        rescaled=tuple(int(i) for i in np.flatnonzero(seen & (here["m"] > before["m"]))),
        first_seen=tuple(int(i) for i in np.flatnonzero(~seen & np.isfinite(here["m"]))),
        any_seen=bool(seen.any()),
        seen_computed=bool((seen & ~here["skipped"]).any()),      # a row that had seen a key, its tile computed here
        all_skipped=bool(here["skipped"].all()),                   # S_b is never computed
        empty_rows=tuple(int(i) for i in np.flatnonzero(~mask.any(axis=1))) if mask is not None else (),
        held=n * min(block_size, n), full=n * n, tile=min(block_size, n) ** 2)
    return t


def online_softmax_trace(config: Config, block_size: int, block: int = 0, head: int = 0,
                         forward: Trace | None = None) -> Trace:
    """The lesson at block size B_c, key block b and head h: steps s_b, m_prev, m, rescale, l_prev, l, o_prev, o,
    context, lse, logsumexp, tiles, reads (and q, k, v, the score's parameters, mask). Raises ConfigError for
    B_c < 1, a block outside 0 … n_blocks − 1 or a head outside 0 … H − 1. `forward`: the page's run_forward(config)
    trace, read instead of running the forward pass again."""
    hd = head_of(config, head, forward)
    return _cached(config, check_block_size(block_size, len(hd.tokens)), block, hd.head)


def rows_text(tokens, rows) -> str:
    """'row 0 (“I”)', 'rows 0 (“I”), 2 (“you”) and 3 (“today”)'; '' for none."""
    named = [f"{i} (“{tokens[i]}”)" for i in rows]
    if len(named) < 2:
        return "".join(f"row {r}" for r in named)
    return "rows " + ", ".join(named[:-1]) + " and " + named[-1]


def facts(c: Controls) -> dict:
    return online_softmax_trace(c.config, c.block_size, c.block, c.head).facts


def skipped_where(config: Config, many: bool = True) -> str:
    """Where the skipped tiles are, in words, for the settings' mask, and what FlashAttention does with them
    (many=False: one skipped tile)."""
    w = config.window
    them = "them" if many else "it"
    return {"causal": " (with the causal mask: entirely above the diagonal, the tiles FlashAttention skips)",
            "sliding_window": f" (with the window of W = {w}: entirely above the diagonal, or entirely more than "
                              f"{w - 1} key{'' if w == 2 else 's'} back; FlashAttention's sliding window skips {them})",
            "padding": f" (every key in {them} is padding; FlashAttention is given the sequences without their "
                       "padding, so it never sees these keys)"}.get(config.mask, "")


def skipped_text(c: Controls) -> str:
    """The os_skipped claim (or its otherwise) with its counts in words: '1 of the 4 tiles has', 'the one tile has'."""
    f = facts(c)
    k, tiles = f["n_skipped"], f["n_tiles"]
    which = ("The one tile has" if tiles == 1 else f"{k} of the {tiles} tiles " + ("has" if k == 1 else "have"))
    every_tile = "the one tile holds" if tiles == 1 else "every B_r × B_c tile holds"
    return say("os_skipped", c, which=which, where=skipped_where(c.config, many=k > 1), them="them" if k > 1 else "it",
               every_tile=every_tile)


# ---- sentences true only under some controls ---------------------------------------------------------

PROOF = "tests/test_online_softmax.py::"
claim("os_first_block",
      "Block 0 is the first: every m_i starts at −∞ and ℓ_i, o_i at 0, so there is nothing to rescale yet",
      lambda c: c.block == 0, "the first key block, b = 0", PROOF + "test_first_block_starts_from_nothing",
      about=KIND)
claim("os_rescaled",
      "the running maximum rose in this block for {rows}, so their ℓ_i and o_i were multiplied by "
      "e^(m_i − m_i′) < 1 (▼ in the table) before the block's terms were added",
      lambda c: bool(facts(c)["rescaled"]), "a block b > 0 in which some row's maximum rises above a finite m_i",
      PROOF + "test_rescaled_rows_are_exactly_those_whose_maximum_rose", about=KIND)
claim("os_not_rescaled",
      "No row that had already seen a key and whose tile is computed here finds a larger score in this block: for "
      "each, e^(m_i − m_i′) = 1, so its ℓ_i and o_i are only added to",
      lambda c: c.block > 0 and not facts(c)["rescaled"] and facts(c)["seen_computed"],
      "a block b > 0 in which no finite m_i rises, some row that had seen a key before it having its tile computed",
      PROOF + "test_rescaled_rows_are_exactly_those_whose_maximum_rose", about=KIND)
claim("os_seen_all_skipped",
      "The rows that had seen a key are all in skipped tiles here",
      lambda c: c.block > 0 and facts(c)["any_seen"] and not facts(c)["seen_computed"],
      "a block b > 0 in which every row that had seen a key before it has its tile skipped",
      PROOF + "test_rescaled_rows_are_exactly_those_whose_maximum_rose", about=KIND)
claim("os_first_seen",
      "first keys in this block for {rows}: m_i rises from −∞ to the block's row maximum, and e^(m_i − m_i′) = 0 "
      "multiplies the ℓ_i = 0 and o_i = 0 from before (● in the table)",
      lambda c: c.block > 0 and bool(facts(c)["first_seen"]),
      "a block b > 0 that holds the first keys some row may see (a window, or padding at the start)",
      PROOF + "test_rows_that_see_their_first_keys_start_from_nothing", about=KIND)
claim("os_skipped",
      "{which} every score masked{where}: nothing in {them} is computed, and m_i, ℓ_i, o_i pass through {them} "
      "unchanged",
      lambda c: facts(c)["n_skipped"] > 0, "a mask that hides a whole B_r × B_c tile (causal: above the diagonal)",
      PROOF + "test_skipped_tiles_are_the_fully_masked_ones", about=KIND,
      otherwise="No tile was skipped: {every_tile} at least one score its queries may use")
claim("os_skipped_here",
      "in this block the tiles of {rows} are skipped: their m_i, ℓ_i and o_i did not change",
      lambda c: bool(facts(c)["skipped_here"]), "a skipped tile in block b",
      PROOF + "test_skipped_tiles_are_the_fully_masked_ones", about=KIND)
claim("os_empty_rows",
      "{rows} may see no key at all: ℓ_i stays 0, so C_i is set to 0 instead of 0/0 = NaN, as the forward pass's "
      "softmax gives a row of zeros there",
      lambda c: bool(facts(c)["empty_rows"]), "a mask that hides every key from some query (padding everything)",
      PROOF + "test_fully_masked_rows_give_zero_not_nan", about=KIND)
claim("os_one_block",
      "B_c = {B} ≥ n = {n}: every key fits in one block, so the loop runs once and is the plain softmax in one go "
      "(still exact)",
      lambda c: c.block_size >= len(head_of(c.config, c.head).tokens), "a block size of at least n",
      PROOF + "test_block_larger_than_n_is_one_block_and_still_right", about=KIND)
claim("os_any_score",
      "FlashAttention's kernels score a query against a key by their dot product q_i · k_j (scaled, with options "
      "such as ALiBi's bias). "
      "The recurrence itself needs only that each score is made from its query and its key alone, which the "
      "{score} score is too: its blocks give the same weights as the forward pass",
      lambda c: c.config.score in ("additive", "bilinear"),
      "an additive or bilinear score (FlashAttention's own is the dot product)",
      PROOF + "test_every_score_function_is_computed_block_by_block", about=KIND)


# ---- the arithmetic behind every number ---------------------------------------------------------------

def _num(v) -> str:
    return fmt(v, 3)


def _txt(v) -> str:
    return fmt(v, 3, latex=False)


def _par(v) -> str:
    s = _num(v)
    return f"({s})" if float(v) < 0 or r"\times" in s else s


def _partxt(v) -> str:
    return f"({_txt(v)})" if float(v) < 0 else _txt(v)


def _subtxt(v) -> str:
    """'- 1.2', '+ 0.5' (for −0.5), '+ inf' (for −inf): a number subtracted, in plain text."""
    v = float(v)
    return ("+ inf" if v < 0 else "- inf") if math.isinf(v) else (f"+ {_txt(-v)}" if v < 0 else f"- {_txt(v)}")


def _sub(v) -> str:
    """A number subtracted: '− 1.2' or '+ 0.5' for a negative, '+ ∞' for −∞."""
    v = float(v)
    if math.isinf(v):
        return r"+ \infty" if v < 0 else r"- \infty"
    return rf"+ {_num(-v)}" if v < 0 else rf"- {_num(v)}"


def _lesson(ctx: Context):
    f = ctx.trace.facts
    return f, f["keys"][0], f["keys"][1], f["block"]


def _block_terms(ctx: Context, i: int, m_new: float):
    """The exponentials e^{(S_b)_ij − m_i′} of row i's visible block scores: [(j, s, e)]."""
    f, start, _, _ = _lesson(ctx)
    row = ctx.value("s_b")[i]
    return [(start + jj, float(s), math.exp(float(s) - m_new)) for jj, s in enumerate(row) if np.isfinite(s)]


def _expl(key, cell, sym, shown, value, text_sym, text_shown, note, reads=(), n_terms=0, hidden=0) -> Explanation:
    lhs = sym.split(" = ")[0]
    return Explanation(key, cell, sym, shown, f"{lhs} = {_num(value)}", value,
                       f"{text_sym}\n  = {text_shown}\n  = {_txt(value)}", note=note, n_terms=n_terms,
                       n_elided=hidden, reads=tuple(reads))


def _leaf(key: str):
    def explain_leaf(ctx: Context, cell):
        f = ctx.trace.facts
        hd = head_of(f["config"], f["head"])
        source = {"q": hd.q, "k": hd.k, "v": hd.v}.get(key)
        value = float((hd.params[key] if source is None else source)[cell])        # (cached) forward pass
        title = ctx.trace[key].title
        sym = ctx.trace[key].formula or title
        idx = ",".join(map(str, cell))
        heads = f["n_heads"] > 1
        which = ("" if not heads else f" of KV head {f['kv_head']}" if key in ("k", "v") else f" of head {f['head']}")
        return _expl(key, cell, rf"({sym})_{{{idx}}}", _num(value), value, f"{title}[{idx}]", _txt(value),
                     f"Read from the forward pass ({title}{which}); the forward pages show how it was made.")
    return explain_leaf


for _key in ("q", "k", "v", "w_1", "w_2", "v_a", "w_b"):
    register(_key, kind=KIND)(_leaf(_key))


@register("reads", kind=KIND)
def _reads(ctx: Context, cell):
    i, j = cell
    f = ctx.trace.facts
    config = f["config"]
    hd = head_of(config, f["head"])
    heads = f["n_heads"] > 1
    t = config.temperature
    raw = float(hd.reads[i, j]) * t if np.isfinite(hd.reads[i, j]) else -math.inf
    value = raw / t
    plain = config.replace(temperature=1.0)
    x_tex, x_txt = entry_symbol(config, heads, i, j, latex=True), entry_symbol(config, heads, i, j)
    raw_tex, raw_txt = entry_symbol(plain, heads, i, j, latex=True), entry_symbol(plain, heads, i, j)
    sym = rf"{x_tex} = {raw_tex} / {t:g}" if t != 1 else rf"{x_tex} = {raw_tex}"
    shown = _num(raw) if t == 1 else rf"{_par(raw)} / {t:g}"
    return _expl("reads", cell, sym, shown, value, x_txt if t == 1 else f"{x_txt} = {raw_txt} / {t:g}",
                 _txt(raw) if t == 1 else f"{_partxt(raw)} / {t:g}",
                 "The forward pass's own entry, from its whole rows at once (for the checks).")


def _score_parts(ctx: Context, i: int, j: int):
    """(value before T, LaTeX symbolic, LaTeX shown, text symbolic, text shown, n_terms, hidden, reads) of the
    score function's entry (i, j) plus ALiBi's bias, recomputed from the query and key rows."""
    f = ctx.trace.facts
    score, rope = f["score"], f["rope"]
    r = "^R" if rope else ""
    q, k = ctx.value("q")[i], ctx.value("k")[j]
    d_k = q.shape[0]
    reads = [("q", (i, m)) for m in range(d_k)] + [("k", (j, m)) for m in range(d_k)]
    qi, kj, qt, kt = rf"q{r}_{{{i}}}", rf"k{r}_{{{j}}}", f"q{r}_{i}", f"k{r}_{j}"
    heads = f["n_heads"] > 1                       # each head its own score parameters: W_1^(h), W_2^(h), v^(h), W^(h)
    own, own_t = (rf"^{{({f['head']})}}", f"^({f['head']})") if heads else ("", "")
    if score in ("dot", "scaled_dot"):
        value = math.fsum(float(q[m]) * float(k[m]) for m in range(d_k))
        shown, hidden = join_terms([f"{_par(q[m])} \\cdot {_par(k[m])}" for m in range(d_k)])
        shown_t, _ = join_terms([f"{_partxt(q[m])}·{_partxt(k[m])}" for m in range(d_k)], latex=False)
        sym, sym_t, n_terms = rf"{qi} \cdot {kj}", f"{qt}·{kt}", d_k
        if score == "scaled_dot":
            value /= math.sqrt(d_k)
            sym, sym_t = rf"\frac{{{sym}}}{{\sqrt{{d_k}}}}", f"{sym_t} / √d_k"
            shown, shown_t = rf"\frac{{{shown}}}{{\sqrt{{{d_k}}}}}", f"({shown_t}) / √{d_k}"
    elif score == "additive":
        w_1, w_2, v_a = ctx.value("w_1"), ctx.value("w_2"), ctx.value("v_a")
        d_a = w_1.shape[1]
        u = [math.fsum(float(q[m]) * float(w_1[m, a]) for m in range(d_k)) for a in range(d_a)]
        w = [math.fsum(float(k[m]) * float(w_2[m, a]) for m in range(d_k)) for a in range(d_a)]
        value = math.fsum(float(v_a[a]) * math.tanh(u[a] + w[a]) for a in range(d_a))
        shown, hidden = join_terms([rf"{_par(v_a[a])} \tanh({_num(u[a])} + {_par(w[a])})" for a in range(d_a)])
        shown_t, _ = join_terms([f"{_partxt(v_a[a])}·tanh({_txt(u[a])} + {_partxt(w[a])})" for a in range(d_a)],
                                latex=False)
        tp = rf"{own}{{}}^\top" if own else r"^\top"                         # v^(h)ᵀ: one superscript at a time
        sym = rf"v{tp} \tanh(W_1{tp} {qi} + W_2{tp} {kj})"
        sym_t, n_terms = f"v{own_t}ᵀ tanh(W_1{own_t}ᵀ {qt} + W_2{own_t}ᵀ {kt})", d_a
        reads += [("v_a", (a,)) for a in range(d_a)]
    else:
        w_b = ctx.value("w_b")
        u = [math.fsum(float(w_b[m, l]) * float(k[l]) for l in range(d_k)) for m in range(d_k)]    # (W k_j)_m
        value = math.fsum(float(q[m]) * float(w_b[m, l]) * float(k[l]) for m in range(d_k) for l in range(d_k))
        shown, hidden = join_terms([f"{_par(q[m])} \\cdot {_par(u[m])}" for m in range(d_k)])
        shown_t, _ = join_terms([f"{_partxt(q[m])}·{_partxt(u[m])}" for m in range(d_k)], latex=False)
        sym, sym_t, n_terms = rf"{qi}^\top W{own}\, {kj}", f"{qt}ᵀ W{own_t} {kt}", d_k
    slope = f["slope"]
    if slope is not None:
        bias = 0.0 - slope * abs(i - j)
        value += bias
        bsym = "(B_h)" if f["n_heads"] > 1 else "B"
        sym, sym_t = rf"{sym} + {bsym}_{{{i},{j}}}", f"{sym_t} + {bsym}[{i},{j}]"
        shown, shown_t = rf"{shown} - {_num(slope)} \cdot |{i} - {j}|", f"{shown_t} - {_txt(slope)}·|{i} - {j}|"
    return value, sym, shown, sym_t, shown_t, n_terms, hidden, reads


@register("s_b", kind=KIND)
def _s_b(ctx: Context, cell):
    f, start, stop, b = _lesson(ctx)
    i, jj = cell
    j = start + jj
    config = f["config"]
    heads = f["n_heads"] > 1
    lhs, lhs_text = rf"(S_{{{b}}})_{{{i},{j}}}", f"S_{b}[{i},{j}]"
    if not np.isfinite(ctx.value("s_b")[i, jj]):
        skipped = i in f["skipped_here"]
        note = (f"Query {i} may not see key {j} (M_{i},{j} = 0): −∞, weight 0."
                + (" Every score of this tile is masked, so the tile is skipped and never computed."
                   if skipped else ""))
        return _expl("s_b", cell, rf"{lhs} = -\infty", rf"M_{{{i},{j}}} = 0", -math.inf,
                     f"{lhs_text} = -inf", f"M[{i},{j}] = 0", note, reads=(("mask", (i, j)),) if "mask" in ctx.trace else ())
    value, sym, shown, sym_t, shown_t, n_terms, hidden, reads = _score_parts(ctx, i, j)
    t = f["temperature"]
    if t != 1:
        value /= t
        sym, shown = rf"\big({sym}\big) / {t:g}", rf"\big({shown}\big) / {t:g}"
        sym_t, shown_t = f"({sym_t}) / {t:g}", f"({shown_t}) / {t:g}"
    entry = entry_symbol(config, heads, i, j)
    notes = [f"Column {jj} of S_{b} is key {j} (“{ctx.word(j)}”): block {b} holds keys {start} … {stop - 1}. "
             f"It is entry {entry} of {f['reads_text']}, what the forward pass's softmax reads"
             + (f" in head h = {f['head']}" if heads else "") + ", computed only now that its block is loaded."]
    if f["rope"]:
        notes.append(f"q^R_{i} and k^R_{j} are the query and key rotated by their positions {i} and {j} (RoPE).")
    if f["slope"] is not None:
        notes.append(f"ALiBi lowers the score by the slope m_h = {exact_slope(f['slope'])}"
                     + (f" of head h = {f['head']}" if heads else "") + f" times the distance |{i} − {j}|.")
    return _expl("s_b", cell, rf"{lhs} = {sym}", shown, value, f"{lhs_text} = {sym_t}", shown_t, " ".join(notes),
                 reads=reads, n_terms=n_terms, hidden=hidden)


def _skipped_note(ctx: Context, i: int) -> str | None:
    f = ctx.trace.facts
    if i in f["skipped_here"]:
        return (f"Row {i}'s tile in block {f['block']} is entirely masked, so it was skipped: nothing is computed "
                "and the value passes through from the block before.")
    return None


@register("m", kind=KIND)
def _m(ctx: Context, cell):
    (i,) = cell
    f, start, stop, b = _lesson(ctx)
    m_old = float(ctx.value("m_prev")[i])
    row = [float(s) for s in ctx.value("s_b")[i]]
    lhs = rf"m_{{{i}}}'"
    skip = _skipped_note(ctx, i)
    if skip:
        return _expl("m", cell, f"{lhs} = m_{{{i}}}", _num(m_old), m_old, f"m_{i}' = m_{i}", _txt(m_old), skip,
                     reads=(("m_prev", cell),))
    top = max(row)
    value = max(m_old, top)
    shown_row, hidden = join_terms([_num(s) for s in row], sep=", ")
    if b == 0:
        why = "Block 0: m_i started at −∞, so m_i′ is the block's own row maximum."
    elif value > m_old and np.isfinite(m_old):
        why = f"It rose from {_txt(m_old)} to {_txt(value)}: ℓ_i and o_i get rescaled by e^(m_i − m_i′)."
    elif np.isfinite(m_old):
        why = "It did not rise: e^(m_i − m_i′) = 1."
    else:
        why = "Nothing was seen before (m_i = −∞)."
    note = f"The largest score row {i} has seen so far. " + why
    return _expl("m", cell, rf"{lhs} = \max\big(m_{{{i}}},\ \max_{{j={start}}}^{{{stop - 1}}} (S_{{{b}}})_{{{i},j}}\big)",
                 rf"\max\big({_num(m_old)},\ \max({shown_row})\big) = \max({_num(m_old)}, {_num(top)})", value,
                 f"m_{i}' = max(m_{i}, max_j S_{b}[{i},j])",
                 f"max({_txt(m_old)}, max({', '.join(_txt(s) for s in row)})) = max({_txt(m_old)}, {_txt(top)})",
                 note, reads=[("m_prev", cell)] + [("s_b", (i, jj)) for jj in range(len(row))],
                 n_terms=len(row), hidden=hidden)


def _factor(ctx: Context, i: int) -> tuple[float, str, str, str]:
    """(e^(m_i − m_i′) recomputed, LaTeX of its arithmetic, text, note)."""
    m_old, m_new = float(ctx.value("m_prev")[i]), float(ctx.value("m")[i])
    if _skipped_note(ctx, i):
        return 1.0, "1", "1", "Skipped tile: nothing changes, the factor is 1."
    if not np.isfinite(m_old):
        return 0.0, r"e^{-\infty} = 0", "exp(-inf) = 0", ("Nothing was seen before (m_i = −∞, ℓ_i = 0, o_i = 0): "
                                                          "the factor is 0 and multiplies nothing.")
    value = math.exp(m_old - m_new)
    note = (f"The maximum rose from {_txt(m_old)} to {_txt(m_new)}: everything summed so far was exponentiated "
            f"against the old maximum and is brought to the new one." if m_new > m_old else
            "The maximum did not change: the factor is exactly 1.")
    return value, rf"e^{{{_num(m_old)} {_sub(m_new)}}}", f"exp({_txt(m_old)} {_subtxt(m_new)})", note


@register("rescale", kind=KIND)
def _rescale(ctx: Context, cell):
    (i,) = cell
    value, shown, shown_text, note = _factor(ctx, i)
    return _expl("rescale", cell, rf"e^{{m_{{{i}}} - m_{{{i}}}'}} = \exp(m_{{{i}}} - m_{{{i}}}')", shown, value,
                 f"e^(m_{i} - m_{i}') = exp(m_{i} - m_{i}')", shown_text, note, reads=(("m_prev", cell), ("m", cell)))


def _update(ctx: Context, key: str, cell, prev: float, weights_of):
    """ℓ′ or o′: factor · previous + Σ_j e^{(S_b)_ij − m′} · w_j (w_j = 1 for ℓ, V_{j,c} for o)."""
    i = cell[0]
    f, start, stop, b = _lesson(ctx)
    factor, _, _, fnote = _factor(ctx, i)
    sym = r"\ell" if key == "l" else "o"
    idx = f"{i}" if key == "l" else f"{i},{cell[1]}"
    lhs, lhs_text = rf"{sym}_{{{idx}}}'", f"{'ℓ' if key == 'l' else 'o'}_{idx}'"
    skip = _skipped_note(ctx, i)
    if skip:
        return _expl(key, cell, rf"{lhs} = {sym}_{{{idx}}}", _num(prev), prev, f"{lhs_text} = previous",
                     _txt(prev), skip, reads=((f"{key}_prev", cell),))
    m_new = float(ctx.value("m")[i])
    terms = _block_terms(ctx, i, m_new)
    w = [weights_of(j) for j, _, _ in terms]
    value = math.fsum([factor * prev] + [e * wj for (_, _, e), wj in zip(terms, w)])
    exps = [(rf"e^{{{_num(s)} {_sub(m_new)}}}" + ("" if key == "l" else rf"\cdot {_par(wj)}"))
            for (_, s, _), wj in zip(terms, w)]
    exps_text = [f"exp({_txt(s)} {_subtxt(m_new)})" + ("" if key == "l" else f"·{_partxt(wj)}") for (_, s, _), wj in zip(terms, w)]
    shown, hidden = join_terms(exps) if exps else ("0", 0)
    shown_text, _ = join_terms(exps_text, latex=False) if exps else ("0", 0)
    v_part = "" if key == "l" else rf"\, V_{{j,{cell[1]}}}"
    symbolic = (rf"{lhs} = e^{{m_{{{i}}} - m_{{{i}}}'}} {sym}_{{{idx}}} + \sum_{{j={start}}}^{{{stop - 1}}} "
                rf"e^{{(S_{{{b}}})_{{{i},j}} - m_{{{i}}}'}}{v_part}")
    note = (("The running sum of exponentials: " if key == "l" else
             f"The unnormalised output, column {cell[1]}: the values weighted by the same exponentials, ")
            + f"the old one times the factor e^(m_i − m_i′), plus the terms of this block's keys {start} … {stop - 1}"
            + (f" ({stop - start - len(terms)} masked: e^(−∞) = 0). " if len(terms) < stop - start else ". ") + fnote)
    reads = [("rescale", (i,)), (f"{key}_prev", cell), ("m", (i,))] + [("s_b", (i, j - start)) for j, _, _ in terms]
    return _expl(key, cell, symbolic, rf"{_par(factor)} \cdot {_par(prev)} + {shown}", value,
                 f"{lhs_text} = e^(m_{i} - m_{i}')·prev + Σ_j e^(S_{b}[{i},j] - m_{i}'){'' if key == 'l' else '·V[j,c]'}",
                 f"{_txt(factor)}·{_partxt(prev)} + {shown_text}", note, reads=reads, n_terms=len(terms) + 1, hidden=hidden)


@register("l", kind=KIND)
def _l(ctx: Context, cell):
    return _update(ctx, "l", cell, float(ctx.value("l_prev")[cell[0]]), lambda j: 1.0)


@register("o", kind=KIND)
def _o(ctx: Context, cell):
    i, c = cell
    v = ctx.value("v")
    return _update(ctx, "o", cell, float(ctx.value("o_prev")[i, c]), lambda j: float(v[j, c]))


def _state_explainer(key: str):
    base, when = key.split("_")                                    # ("m", "prev") / ("l", "final")
    sym, name = {"m": ("m", "m"), "l": (r"\ell", "ℓ"), "o": ("o", "o")}[base]
    start = {"m": -math.inf, "l": 0.0, "o": 0.0}[base]

    def explain_state(ctx: Context, cell):
        f = ctx.trace.facts
        idx = ",".join(map(str, cell))
        b = f["block"] - 1 if when == "prev" else f["n_blocks"] - 1
        if b < 0:
            return _expl(key, cell, rf"{sym}_{{{idx}}} = {_num(start)}", _num(start), start, f"{name}_{idx} = start",
                         _txt(start), f"Before block 0 nothing is seen: {name}_i starts at {_txt(start)}.")
        value = float(online_softmax_trace(f["config"], f["block_size"], b, f["head"])[base].value[cell])
        return _expl(key, cell, rf"{sym}_{{{idx}}} = {sym}_{{{idx}}}' \text{{ after block }} {b}",
                     _num(value), value, f"{name}_{idx} = {name}_{idx}' after block {b}", _txt(value),
                     f"Carried over from block {b}: move the block slider to {b} to see how it was made.")
    return explain_state


for _key in ("m_prev", "l_prev", "o_prev", "m_final", "l_final", "o_final"):
    register(_key, kind=KIND)(_state_explainer(_key))


@register("context", kind=KIND)
def _context(ctx: Context, cell):
    i, c = cell
    f = ctx.trace.facts
    o, l = float(ctx.value("o_final")[i, c]), float(ctx.value("l_final")[i])
    value = o / l if l > 0 else 0.0
    a = "A_h" if f["n_heads"] > 1 else "A"
    note = ("The one division, after the last block: o_i summed e^((S_b)_ij − m_i) v_j and ℓ_i summed "
            "e^((S_b)_ij − m_i) over every block b, each brought to the same final maximum m_i, so their ratio is "
            f"Σ_j {'(A_h)_ij' if f['n_heads'] > 1 else 'A_ij'} v_j with {a} = softmax({f['reads_text']}), the weights over the whole row." if l > 0 else
            f"Row {i} saw no key: ℓ_i = 0, and C_i is set to 0 instead of 0/0 = NaN.")
    return _expl("context", cell, rf"C_{{{i},{c}}} = \frac{{o_{{{i},{c}}}}}{{\ell_{{{i}}}}}",
                 rf"\frac{{{_num(o)}}}{{{_num(l)}}}" if l > 0 else r"0 \ (\ell_i = 0)", value,
                 f"C[{i},{c}] = o_{i},{c} / ℓ_{i}", f"{_txt(o)} / {_txt(l)}" if l > 0 else "0 (ℓ = 0)", note,
                 reads=(("o_final", cell), ("l_final", (i,))))


@register("lse", kind=KIND)
def _lse(ctx: Context, cell):
    (i,) = cell
    x = ctx.trace.facts["entry_text"]
    m, l = float(ctx.value("m_final")[i]), float(ctx.value("l_final")[i])
    value = m + math.log(l) if l > 0 else -math.inf
    return _expl("lse", cell, rf"\mathrm{{lse}}_{{{i}}} = m_{{{i}}} + \log \ell_{{{i}}}",
                 rf"{_num(m)} + \log {_num(l)}" if l > 0 else r"-\infty \ (\ell_i = 0)", value,
                 f"lse_{i} = m_{i} + log ℓ_{i}", f"{_txt(m)} + log {_txt(l)}" if l > 0 else "-inf (ℓ = 0)",
                 f"ℓ_i = Σ_j e^({x} − m_i), so m_i + log ℓ_i = log Σ_j e^({x}): the row's logsumexp, which "
                 "FlashAttention keeps for the backward pass.", reads=(("m_final", cell), ("l_final", cell)))


@register("logsumexp", kind=KIND)
def _logsumexp(ctx: Context, cell):
    (i,) = cell
    f = ctx.trace.facts
    config, heads = f["config"], f["n_heads"] > 1
    row = [float(x) for x in ctx.value("reads")[i]]
    finite = [x for x in row if math.isfinite(x)]
    top = max(finite) if finite else 0.0
    total = math.fsum(math.exp(x - top) for x in finite)
    value = top + math.log(total) if total > 0 else -math.inf
    shown, hidden = join_terms([rf"e^{{{_num(x)} {_sub(top)}}}" for x in finite] or ["0"])
    x_tex, x_txt = entry_symbol(config, heads, i, "j", latex=True), entry_symbol(config, heads, i, "j")
    return _expl("logsumexp", cell, rf"\log \sum_j e^{{{x_tex}}} = \mu + \log \sum_j e^{{{x_tex} - \mu}}",
                 rf"{_num(top)} + \log\big({shown}\big)", value,
                 f"log Σ_j e^({x_txt}) = μ + log Σ_j exp({x_txt} - μ)",
                 f"{_txt(top)} + log(Σ_j exp({x_txt} {_subtxt(top)}))",
                 f"Computed the plain way: the whole row of {f['reads_text']} at once"
                 + (" (masked keys left out)" if config.mask != "none" else "") + ", μ its maximum.", n_terms=len(finite), hidden=hidden, reads=[("reads", (i, j)) for j in range(len(row))])


@register("tiles", kind=KIND)
def _tiles(ctx: Context, cell):
    r, b = cell
    f = ctx.trace.facts
    B, n = f["block_size"], ctx.trace.n
    r0, r1 = r * B, min((r + 1) * B, n)
    c0, c1 = f["blocks"][b]
    seen = int(ctx.value("mask")[r0:r1, c0:c1].sum()) if "mask" in ctx.trace else (r1 - r0) * (c1 - c0)
    value = 1.0 if seen else 0.0
    rows = f"Query row {r0}" if r1 - r0 == 1 else f"Query rows {r0} … {r1 - 1}"
    keys = f"key {c0}" if c1 - c0 == 1 else f"keys {c0} … {c1 - 1}"
    return _expl("tiles", cell, rf"\text{{tile}}_{{{r},{b}}} = [\,\textstyle\sum M_{{\text{{tile}}}} > 0\,]",
                 rf"[{seen} > 0]", value, f"tile[{r},{b}] = [Σ M over the tile > 0]", f"[{seen} > 0]",
                 f"{rows} against {keys}: {seen} of the {(r1 - r0) * (c1 - c0)} scores may be used, so the tile is "
                 + ("computed." if seen else "skipped: K_b and V_b are never loaded for it."))


def mask_rule(config: Config, i: int, j: int) -> tuple[float, str]:
    """(M_ij by the settings' rule, the rule in words)."""
    if config.mask == "causal":
        return float(j <= i), f"causal: key {j} {'≤' if j <= i else '>'} query {i}"
    if config.mask == "sliding_window":
        w = config.window
        inside = 0 <= i - j < w
        return float(inside), f"window: 0 ≤ i − j = {i - j} < W = {w} is {'true' if inside else 'false'}"
    hidden = j in config.padding
    return float(not hidden), f"padding: key {j} is {'' if hidden else 'not '}a padding position"


@register("mask", kind=KIND)
def _mask(ctx: Context, cell):
    i, j = cell
    value, rule = mask_rule(ctx.trace.facts["config"], i, j)
    return _expl("mask", cell, rf"M_{{{i},{j}}} = [\text{{query }} {i} \text{{ may see key }} {j}]",
                 rf"\text{{{rule}}}", value, f"M[{i},{j}] = [query {i} may see key {j}]", rule,
                 "1: the score is used; 0: it becomes −∞ and its weight is exactly 0.")
