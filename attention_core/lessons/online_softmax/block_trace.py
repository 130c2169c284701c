"""Key block b of the lesson as a Trace: the block's scores S_b, m_i, ℓ_i and o_i before and after it, after the
last block, C = o / ℓ, the logsumexp both ways and the tiles computed or skipped, with the facts its claims and
checks read (the largest difference from the forward pass's own C_h, the rows rescaled, skipped, seen first).
"""
from __future__ import annotations

import functools

import numpy as np

from ...math.limits import ConfigError
from ...forward.claims import say
from ...forward.config import Config
from ...forward.trace import Trace
from .blocks import logsumexp_rows, run_blocks
from .head import KIND, Controls, check_block_size, head_of
from .symbols import entry_symbol, matrix_symbol


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
