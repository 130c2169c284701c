"""The online-softmax page's computation: FlashAttention-2's recurrence stepped block by block on the sentence.

One head (head 0 when there are several) of the forward pass: its Q_h, K_h, V_h, the settings' mask (causal
or padding) and the scaled dot product 1/√d_k (FlashAttention's score, whatever the sidebar's score function
and temperature). The keys are cut into blocks b = 0, 1, … of B keys; each query row i carries its running
maximum m_i, running sum ℓ_i and unnormalised output o_i from block to block (docs/notation.md, "Today's
attention"). As FlashAttention does, the queries are cut into blocks of B rows too, so that a B × B tile
whose every score is masked (above the diagonal with a causal mask) is skipped: counted and shown here.

    >>> from attention_core import Config
    >>> t = online_softmax_trace(Config(sentence="I love you today", mask="causal"), 2, 1)
    >>> t["s_b"].shape_text, t.facts["keys"], t.facts["n_skipped"], t.facts["n_tiles"]
    ('n_q=4 × k_b=2', (2, 4), 1, 4)
    >>> bool(t.facts["max_diff"] < 1e-12), bool(t.facts["lse_diff"] < 1e-12)
    (True, True)

`online_softmax_trace(config, block_size, block)` is cached per process (Config is frozen); the claims
below hold under `Controls(config, block_size, block)`; the explainers make every number clickable.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from .attention import scaled_dot_product_attention
from .claims import claim
from .config import Config, ConfigError
from .explain import Context, Explanation, fmt, join_terms, register
from .forward import run_forward
from .online_softmax import online_softmax_attention
from .trace import Trace

KIND = "online_softmax"


@dataclass(frozen=True)
class Controls:
    """What the page's claims hold under: the sidebar's Config and the page's two sliders."""
    config: Config
    block_size: int
    block: int


def check_block_size(block_size, n: int) -> int:
    """A whole number of keys, at least 1 (larger than n is allowed: one block); else ConfigError."""
    if isinstance(block_size, bool) or not isinstance(block_size, (int, np.integer)) or block_size < 1:
        raise ConfigError(f"The block size B must be a whole number of keys, at least 1 (not {block_size!r}): "
                          f"move the slider to a value from 1 to n = {n}.")
    return int(block_size)


@functools.lru_cache(maxsize=32)
def head_zero(config: Config):
    """(tokens, Q_0 (n, d_k), K_0 (n, d_k), V_0 (n, d_v), mask (n, n) bool or None) of the forward pass.

    Keyed on the config without its score function and temperature: Q, K, V and the mask do not depend on them."""
    f = run_forward(config)
    heads = config.n_heads > 1
    q, k, v = (f[f"{name}_heads"].value[0] if heads else f[name].value for name in ("q", "k", "v"))
    mask = f["mask"].value.astype(bool) if "mask" in f else None
    return f.tokens, q, k, v, mask


@functools.lru_cache(maxsize=32)
def run_blocks(config: Config, block_size: int):
    """The recurrence over key blocks for every row, and which B × B tiles (query block × key block) are skipped.

    Returns (blocks, tiles, context): blocks[b] holds "keys" (start, stop), "scores" S_b (n, size), "rescale",
    "m", "l" (n,), "o" (n, d_v) after block b, "skipped" (n,) bool (the row's tile was skipped); tiles
    (n_qb, n_kb) 1 computed, 0 skipped; context (n, d_v) = o / ℓ.

    One call of online_softmax_attention over all rows gives the same numbers (to the last bits of the matrix
    product) as one call per query block that skips the masked tiles (tests/test_online_softmax.py checks it):
    a row whose scores in a block are all −∞ gets e^(m − m′) = 1 and adds 0, so its m, ℓ, o pass through
    exactly. Only the rescale factor of a row that has seen nothing yet differs (0 here, 1 in a skipped tile,
    multiplying ℓ = 0 either way): the skipped tiles' 1 is shown."""
    tokens, q, k, v, mask = head_zero(config)
    n = len(tokens)
    context, blocks = online_softmax_attention(q, k, v, block_size, mask)
    starts = range(0, n, block_size)
    tiles = np.array([[1.0 if mask is None or mask[r:r + block_size, c0:c1].any() else 0.0
                       for c0, c1 in (bl["keys"] for bl in blocks)] for r in starts])       # (n_qb, n_kb)
    rows_skipped = np.repeat(tiles == 0, block_size, axis=0)[:n]                            # (n, n_kb)
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


def _words(tokens, start: int, stop: int) -> str:
    return " ".join(tokens[start:stop])


@functools.lru_cache(maxsize=64)
def _cached(config: Config, block_size: int, block: int) -> Trace:
    tokens, q, k, v, mask = head_zero(config)
    n, d_k = q.shape
    blocks, tiles, context = run_blocks(config, block_size)
    if not (isinstance(block, (int, np.integer)) and not isinstance(block, bool) and 0 <= block < len(blocks)):
        raise ConfigError(f"There are {len(blocks)} key blocks of B = {block_size}: the block b must be "
                          f"0 … {len(blocks) - 1}, not {block!r}.")
    here, last = blocks[block], blocks[-1]
    before = blocks[block - 1] if block else dict(m=np.full(n, -np.inf), l=np.zeros(n), o=np.zeros_like(here["o"]))
    start, stop = here["keys"]
    t = Trace(tuple(tokens))
    labels = t.token_labels()
    t.facts.update(kind=KIND, config=config, block_size=block_size, block=block, n_blocks=len(blocks),
                   keys=(start, stop), blocks=tuple(bl["keys"] for bl in blocks), d_k=d_k, n_heads=config.n_heads,
                   mask=config.mask, axis_labels={
                       "k_b": labels[start:stop],
                       "query block": [f"{r}: {_words(tokens, r * block_size, (r + 1) * block_size)}"
                                       for r in range(tiles.shape[0])],
                       "key block": [f"b={c}" for c in range(tiles.shape[1])]})
    hid = "" if config.n_heads == 1 else "_0"
    t.add("q", f"Queries Q{hid}", q, ("n", "d_k"), rf"Q{hid}", why="From the forward pass" + (", head 0." if hid else "."))
    t.add("k", f"Keys K{hid}", k, ("n", "d_k"), rf"K{hid}", why="From the forward pass" + (", head 0." if hid else "."))
    t.add("v", f"Values V{hid}", v, ("n", "d_v"), rf"V{hid}", why="From the forward pass" + (", head 0." if hid else "."))
    if mask is not None:
        t.add("mask", "Mask M", mask.astype(float), ("n_q", "n_k"), r"M", why=f"The settings' {config.mask} mask.",
              scale="mask")
    t.add("s_b", f"Scores of block {block}, S_{block}", here["scores"], ("n_q", "k_b"),
          rf"(S_{{{block}}})_{{ij}} = \frac{{q_i \cdot k_j}}{{\sqrt{{d_k}}}},\quad j = {start} \dots {stop - 1}"
          + (r" \ (-\infty \text{ where } M_{ij} = 0)" if mask is not None else ""),
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
    full = q @ k.T / math.sqrt(d_k)                                  # (n, n): only for the checks
    masked = full if mask is None else np.where(mask, full, -np.inf)
    t.add("logsumexp", "logsumexp_j Ŝ_ij", logsumexp_rows(masked), ("n_q",), r"\log \sum_j e^{\hat S_{ij}}", ("q", "k"))
    t.add("tiles", "Tiles computed (1) or skipped (0)", tiles, ("query block", "key block"), "", scale="mask")
    plain = scaled_dot_product_attention(q, k, v, mask)[0]
    same = np.isneginf(lse) & np.isneginf(t["logsumexp"].value)          # a row that saw no key: −∞ on both sides
    gap = np.abs(np.where(same, 0.0, lse) - np.where(same, 0.0, t["logsumexp"].value))
    seen = np.isfinite(before["m"])
    t.facts.update(
        max_diff=float(np.abs(context - plain).max()),
        s_diff=float(np.abs(np.where(np.isfinite(masked[:, start:stop]), masked[:, start:stop], 0.0)
                            - np.where(np.isfinite(here["scores"]), here["scores"], 0.0)).max()),
        s_same_mask=bool(np.array_equal(np.isfinite(masked[:, start:stop]), np.isfinite(here["scores"]))),
        lse_diff=float(gap.max()),
        n_tiles=int(tiles.size), n_skipped=int((tiles == 0).sum()),
        skipped_here=tuple(int(i) for i in np.flatnonzero(here["skipped"])),
        rescaled=tuple(int(i) for i in np.flatnonzero(seen & (here["m"] > before["m"]))),
        first_seen=tuple(int(i) for i in np.flatnonzero(~seen & np.isfinite(here["m"]))),
        empty_rows=tuple(int(i) for i in np.flatnonzero(~mask.any(axis=1))) if mask is not None else (),
        held=n * min(block_size, n), full=n * n, tile=min(block_size, n) ** 2)
    return t


def online_softmax_trace(config: Config, block_size: int, block: int = 0) -> Trace:
    """The lesson at block size B and key block b: steps s_b, m_prev, m, rescale, l_prev, l, o_prev, o, context,
    lse, logsumexp, tiles (and q, k, v, mask). Raises ConfigError for B < 1 or a block outside 0 … n_blocks − 1."""
    n = len(head_zero(_qkv_config(config))[0])
    return _cached(_qkv_config(config), check_block_size(block_size, n), block)


def _qkv_config(config: Config) -> Config:
    """The config with what Q, K, V and the mask do not depend on set to one value (one cache entry for all)."""
    return config.replace(score="scaled_dot", temperature=1.0)


def rows_text(tokens, rows) -> str:
    """'row 0 (“I”)', 'rows 0 (“I”), 2 (“you”) and 3 (“today”)'; '' for none."""
    named = [f"{i} (“{tokens[i]}”)" for i in rows]
    if len(named) < 2:
        return "".join(f"row {r}" for r in named)
    return "rows " + ", ".join(named[:-1]) + " and " + named[-1]


def facts(c: Controls) -> dict:
    return online_softmax_trace(c.config, c.block_size, c.block).facts


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
      "No row's running maximum rose in this block: every row that had seen a key keeps e^(m_i − m_i′) = 1, "
      "so its ℓ_i and o_i were only added to",
      lambda c: c.block > 0 and not facts(c)["rescaled"], "a block b > 0 in which no finite m_i rises",
      PROOF + "test_rescaled_rows_are_exactly_those_whose_maximum_rose", about=KIND)
claim("os_skipped",
      "{skipped} of the {tiles} tiles have every score masked{where}: FlashAttention skips them, never "
      "computing those scores, and m_i, ℓ_i, o_i pass through unchanged",
      lambda c: facts(c)["n_skipped"] > 0, "a mask that hides a whole B × B tile (causal: above the diagonal)",
      PROOF + "test_skipped_tiles_are_the_fully_masked_ones", about=KIND,
      otherwise="No tile was skipped: every B × B tile holds at least one score its queries may use")
claim("os_skipped_here",
      "in this block the tiles of {rows} are skipped: their m_i, ℓ_i and o_i did not change",
      lambda c: bool(facts(c)["skipped_here"]), "a skipped tile in block b",
      PROOF + "test_skipped_tiles_are_the_fully_masked_ones", about=KIND)
claim("os_empty_rows",
      "{rows} may see no key at all: ℓ_i stays 0, so C_i is set to 0 instead of 0/0 = NaN, as the plain "
      "softmax does in this app",
      lambda c: bool(facts(c)["empty_rows"]), "a mask that hides every key from some query (padding everything)",
      PROOF + "test_fully_masked_rows_give_zero_not_nan", about=KIND)
claim("os_one_block",
      "B = {B} ≥ n = {n}: every key fits in one block, so the loop runs once and is the plain softmax in one go "
      "(still exact)",
      lambda c: c.block_size >= len(head_zero(_qkv_config(c.config))[0]), "a block size of at least n",
      PROOF + "test_block_larger_than_n_is_one_block_and_still_right", about=KIND)


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


def _leaf(name: str):
    def explain_leaf(ctx: Context, cell):
        i, m = cell
        hid = ctx.trace.facts["n_heads"] > 1
        sym = name.upper() + ("_0" if hid else "")
        value = float(head_zero(ctx.trace.facts["config"])[1 + "qkv".index(name)][cell])     # (cached) forward pass
        return _expl(name, cell, rf"{sym}_{{{i},{m}}} = ({sym} \text{{ of the forward pass}})_{{{i},{m}}}",
                     _num(value), value, f"{sym}[{i},{m}] = {sym} of the forward pass [{i},{m}]", _txt(value),
                     f"Read again from the forward pass ({'head 0 of ' if hid else ''}"
                     f"{name.upper()}); its own page shows how it was made.")
    return explain_leaf


for _key in ("q", "k", "v"):
    register(_key, kind=KIND)(_leaf(_key))


@register("s_b", kind=KIND)
def _s_b(ctx: Context, cell):
    f, start, stop, b = _lesson(ctx)
    i, jj = cell
    j = start + jj
    lhs, lhs_text = rf"(S_{{{b}}})_{{{i},{j}}}", f"S_{b}[{i},{j}]"
    q, k = ctx.value("q")[i], ctx.value("k")[j]
    d_k = q.shape[0]
    if not np.isfinite(ctx.value("s_b")[i, jj]):
        skipped = i in f["skipped_here"]
        note = (f"Query {i} may not see key {j} (M_{i},{j} = 0): −∞, weight 0."
                + (f" Every score of this tile is masked, so FlashAttention skips the tile and never computes it."
                   if skipped else ""))
        return _expl("s_b", cell, rf"{lhs} = -\infty", rf"M_{{{i},{j}}} = 0", -math.inf,
                     f"{lhs_text} = -inf", f"M[{i},{j}] = 0", note, reads=(("mask", (i, j)),) if "mask" in ctx.trace else ())
    products = [float(q[m]) * float(k[m]) for m in range(d_k)]
    shown, hidden = join_terms([f"{_par(q[m])} \\cdot {_par(k[m])}" for m in range(d_k)])
    shown_text, _ = join_terms([f"{_partxt(q[m])}·{_partxt(k[m])}" for m in range(d_k)], latex=False)
    value = math.fsum(products) / math.sqrt(d_k)
    return _expl("s_b", cell, rf"{lhs} = \frac{{q_{{{i}}} \cdot k_{{{j}}}}}{{\sqrt{{d_k}}}}",
                 rf"\frac{{{shown}}}{{\sqrt{{{d_k}}}}}", value, f"{lhs_text} = q_{i}·k_{j} / √d_k",
                 f"({shown_text}) / √{d_k}",
                 f"Column {jj} of S_{b} is key {j} (“{ctx.word(j)}”): block {b} holds keys {start} … {stop - 1}. "
                 "The same number as Ŝ on the forward pages (head 0), computed only now that its block is loaded.",
                 reads=[("q", (i, m)) for m in range(d_k)] + [("k", (j, m)) for m in range(d_k)],
                 n_terms=d_k, hidden=hidden)


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
    note = (f"The largest score row {i} has seen so far. " + (
        "Block 0: m_i started at −∞, so m_i′ is the block's own row maximum." if b == 0 else
        f"It rose from {_txt(m_old)} to {_txt(value)}: ℓ_i and o_i get rescaled by e^(m_i − m_i′)." if value > m_old
        and np.isfinite(m_old) else "It did not rise: e^(m_i − m_i′) = 1." if np.isfinite(m_old) else
        "Nothing was seen before (m_i = −∞)."))
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
            + f"the old one times the factor ({fnote}) plus this block's keys {start} … {stop - 1}"
            + (f" ({stop - start - len(terms)} masked: e^(−∞) = 0)." if len(terms) < stop - start else "."))
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
        value = float(online_softmax_trace(f["config"], f["block_size"], b)[base].value[cell])
        return _expl(key, cell, rf"{sym}_{{{idx}}} = {sym}_{{{idx}}}' \text{{ after block }} {b}",
                     _num(value), value, f"{name}_{idx} = {name}_{idx}' after block {b}", _txt(value),
                     f"Carried over from block {b}: move the block slider to {b} to see how it was made.")
    return explain_state


for _key in ("m_prev", "l_prev", "o_prev", "m_final", "l_final", "o_final"):
    register(_key, kind=KIND)(_state_explainer(_key))


@register("context", kind=KIND)
def _context(ctx: Context, cell):
    i, c = cell
    o, l = float(ctx.value("o_final")[i, c]), float(ctx.value("l_final")[i])
    value = o / l if l > 0 else 0.0
    note = ("The one division, after the last block: o_i summed e^(S − m) v and ℓ_i summed e^(S − m) against the "
            "same final maximum, so their ratio is Σ_j softmax(Ŝ)_ij v_j." if l > 0 else
            f"Row {i} saw no key: ℓ_i = 0, and C_i is set to 0 instead of 0/0 = NaN.")
    return _expl("context", cell, rf"C_{{{i},{c}}} = \frac{{o_{{{i},{c}}}}}{{\ell_{{{i}}}}}",
                 rf"\frac{{{_num(o)}}}{{{_num(l)}}}" if l > 0 else r"0 \ (\ell_i = 0)", value,
                 f"C[{i},{c}] = o_{i},{c} / ℓ_{i}", f"{_txt(o)} / {_txt(l)}" if l > 0 else "0 (ℓ = 0)", note,
                 reads=(("o_final", cell), ("l_final", (i,))))


@register("lse", kind=KIND)
def _lse(ctx: Context, cell):
    (i,) = cell
    m, l = float(ctx.value("m_final")[i]), float(ctx.value("l_final")[i])
    value = m + math.log(l) if l > 0 else -math.inf
    return _expl("lse", cell, rf"\mathrm{{lse}}_{{{i}}} = m_{{{i}}} + \log \ell_{{{i}}}",
                 rf"{_num(m)} + \log {_num(l)}" if l > 0 else r"-\infty \ (\ell_i = 0)", value,
                 f"lse_{i} = m_{i} + log ℓ_{i}", f"{_txt(m)} + log {_txt(l)}" if l > 0 else "-inf (ℓ = 0)",
                 "ℓ_i = Σ_j e^(Ŝ_ij − m_i), so log ℓ_i + m_i = log Σ_j e^(Ŝ_ij): the row's logsumexp, which "
                 "FlashAttention keeps for the backward pass.", reads=(("m_final", cell), ("l_final", cell)))


@register("logsumexp", kind=KIND)
def _logsumexp(ctx: Context, cell):
    (i,) = cell
    q, k = ctx.value("q"), ctx.value("k")
    d_k = q.shape[1]
    mask = ctx.value("mask")[i] if "mask" in ctx.trace else np.ones(k.shape[0])
    s = [math.fsum(float(q[i, m]) * float(k[j, m]) for m in range(d_k)) / math.sqrt(d_k) if mask[j] else -math.inf
         for j in range(k.shape[0])]
    finite = [x for x in s if math.isfinite(x)]
    top = max(finite) if finite else 0.0
    total = math.fsum(math.exp(x - top) for x in finite)
    value = top + math.log(total) if total > 0 else -math.inf
    shown, hidden = join_terms([rf"e^{{{_num(x)} {_sub(top)}}}" for x in finite] or ["0"])
    return _expl("logsumexp", cell, rf"\log \sum_j e^{{\hat S_{{{i},j}}}} = \mu + \log \sum_j e^{{\hat S_{{{i},j}} - \mu}}",
                 rf"{_num(top)} + \log\big({shown}\big)", value,
                 f"logsumexp_j Ŝ[{i},j] = μ + log Σ_j exp(Ŝ[{i},j] - μ)",
                 f"{_txt(top)} + log(Σ_j exp(Ŝ[{i},j] {_subtxt(top)}))",
                 "The check, computed the plain way: the whole row of Ŝ = q_i·k_j/√d_k at once (masked keys "
                 "left out), μ its maximum.", n_terms=len(finite), hidden=hidden)


@register("tiles", kind=KIND)
def _tiles(ctx: Context, cell):
    r, b = cell
    f = ctx.trace.facts
    B, n = f["block_size"], ctx.trace.n
    r0, r1 = r * B, min((r + 1) * B, n)
    c0, c1 = f["blocks"][b]
    seen = int(ctx.value("mask")[r0:r1, c0:c1].sum()) if "mask" in ctx.trace else (r1 - r0) * (c1 - c0)
    value = 1.0 if seen else 0.0
    return _expl("tiles", cell, rf"\text{{tile}}_{{{r},{b}}} = [\,\textstyle\sum M_{{\text{{tile}}}} > 0\,]",
                 rf"[{seen} > 0]", value, f"tile[{r},{b}] = [Σ M over the tile > 0]", f"[{seen} > 0]",
                 f"Query rows {r0} … {r1 - 1} against keys {c0} … {c1 - 1}: {seen} of the "
                 f"{(r1 - r0) * (c1 - c0)} scores may be used, so the tile is "
                 + ("computed." if seen else "skipped (FlashAttention never loads K_b, V_b for it)."))


@register("mask", kind=KIND)
def _mask(ctx: Context, cell):
    i, j = cell
    config = ctx.trace.facts["config"]
    if config.mask == "causal":
        value, rule = float(j <= i), f"causal: key {j} {'≤' if j <= i else '>'} query {i}"
    else:
        value, rule = float(j not in config.padding), f"padding: key {j} is {'' if j in config.padding else 'not '}padding"
    return _expl("mask", cell, rf"M_{{{i},{j}}} = [\text{{query }} {i} \text{{ may see key }} {j}]",
                 rf"\text{{{rule}}}", value, f"M[{i},{j}] = [query {i} may see key {j}]", rule,
                 "1: the score is used; 0: it becomes −∞ and its weight is exactly 0.")
