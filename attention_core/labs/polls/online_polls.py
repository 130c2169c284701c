"""The online softmax: the running maximum m_i of query row i after key block b, read from the online softmax
lesson's own trace (its m_i before and after the block, its S_b, its m_i after the last block). The distractors
are what wrong mental models give: the block's own maximum (the running part forgotten), m_i before the block
(never updated), the whole row's maximum (as if later blocks were already loaded), the block's last score, the
smallest score seen so far (max and min mixed up).

    >>> from attention_core import Config, run_forward
    >>> p = online_max_poll(run_forward(Config(mask="causal")), np.random.default_rng(0))
    >>> p.kind, len(p.choices) in (3, 4)
    ('online_max', True)
"""
from __future__ import annotations

import numpy as np

from ...forward.trace import Trace
from ...lessons.online_softmax import matrix_symbol, online_softmax_trace, run_blocks
from ..quiz.notation import config_of, num
from .pins import Unfit, pin_int
from .poll import MAX_CHOICES, MIN_CHOICES, Poll, count_choices, make

BLOCK_SIZES = (2, 1, 3)              # B_c: keys per block, the first that makes two blocks or more


def _max(values) -> float:
    finite = np.asarray(values, float)
    return float(finite.max()) if finite.size else float("-inf")


def _wrong(blocks, b: int, i: int) -> list[tuple[str, float | None]]:
    """(the mistake, its number): the block's own maximum, m_i before it, the row's maximum after the last block,
    the block's last score, the smallest score seen so far (max and min mixed up)."""
    scores = blocks[b]["scores"][i]
    finite = scores[np.isfinite(scores)]
    seen = np.concatenate([bl["scores"][i] for bl in blocks[:b + 1]])
    return [(f"block {b}'s own maximum forgets the blocks before it", _max(scores)),
            (f"m_{i} before the block is not updated", float(blocks[b - 1]["m"][i])),
            ("the row's maximum over every block needs keys not yet loaded", float(blocks[-1]["m"][i])),
            (f"block {b}'s last score is not its largest", float(finite[-1]) if finite.size else None),
            ("the smallest score seen so far is a minimum, not a maximum", float(seen[np.isfinite(seen)].min()))]


def _wrong_texts(blocks, b: int, i: int) -> list[str | None]:
    return [None if v is None else num(v) for _, v in _wrong(blocks, b, i)]


def _cells(blocks) -> list[tuple[int, int]]:
    """(block b ≥ 1, row i): the row has seen a key before block b and sees one in it, and the choices differ."""
    out = []
    for b in range(1, len(blocks)):
        for i in range(len(blocks[b]["m"])):
            seen, scores = blocks[b - 1]["m"][i], blocks[b]["scores"][i]
            if np.isfinite(seen) and np.isfinite(scores).any() and count_choices(
                    num(blocks[b]["m"][i]), _wrong_texts(blocks, b, i)) >= MIN_CHOICES:
                out.append((b, i))
    return out


def _scores_text(blocks, i: int) -> str:
    """'block 0: 0.41, 1.2; block 1: 0.87, −∞ (hidden); block 2: all hidden'."""
    def block(scores) -> str:
        if not np.isfinite(scores).any():
            return "all hidden"
        return ", ".join(num(v) if np.isfinite(v) else "−∞ (hidden)" for v in scores)
    return "; ".join(f"block {b}: {block(bl['scores'][i])}" for b, bl in enumerate(blocks))


def online_max_poll(trace: Trace, rng: np.random.Generator, at: dict | None = None) -> Poll | None:
    """at: {"block_size": B_c, "block": b, "row": i, "head": h}: m_i after block b, keys read B_c at a time."""
    config = config_of(trace)
    if config is None or trace.n < 2:
        return None
    sizes = [s for s in BLOCK_SIZES if s < trace.n]
    heads = [int(h) for h in rng.permutation(config.n_heads)]
    size, head = pin_int(at, "block_size", 1, trace.n - 1), pin_int(at, "head", 0, config.n_heads - 1)
    block, row = pin_int(at, "block", 1, trace.n), pin_int(at, "row", 0, trace.n - 1)
    sizes, heads = sizes if size is None else [size], heads if head is None else [head]
    for size, head in ((s, h) for s in sizes for h in heads):      # the first block size with a cell, a drawn head
        blocks, _, _ = run_blocks(config, size, head)
        cells = [(b, i) for b, i in _cells(blocks) if (block is None or b == block) and (row is None or i == row)]
        if cells:
            break
    else:
        if at:
            raise Unfit("the pinned block and row leave too few choices")
        return None
    later = [c for c in cells if num(blocks[-1]["m"][c[1]]) != num(blocks[c[0]]["m"][c[1]])]
    b, i = (later or cells)[int(rng.integers(len(later or cells)))]   # one whose later blocks still raise m_i, if any
    t = online_softmax_trace(config, size, b, head, forward=trace)
    before, after, block_max = float(t["m_prev"].value[i]), float(t["m"].value[i]), _max(t["s_b"].value[i])
    labels = trace.token_labels()
    heads_on = config.n_heads > 1
    reads = matrix_symbol(config, heads_on).replace("_h", f"_{head}")
    start, stop = t.facts["keys"]
    where = f"In head {head}, the" if heads_on else "The"
    prompt = (f"{where} online softmax reads row {i} (query “{labels[i]}”) of {reads} in blocks of B_c = {size} key"
              f"{'s' if size > 1 else ''}, keeping the running maximum m_{i}: {_scores_text(blocks, i)}. What is m_{i} "
              f"after block {b} ({f'keys {start} … {stop - 1}' if stop - start > 1 else f'key {start}'})?")
    right = num(after)
    shown = _wrong_texts(blocks, b, i)
    others, kept = [], {right}
    for (why, _), text in zip(_wrong(blocks, b, i), shown):         # each distractor once, as the choices keep it
        if text is not None and text not in kept and len(kept) < MAX_CHOICES:
            kept.add(text)
            others.append(f"{why} ({text})")
    explanation = (f"m_{i} after block {b} = max(m_{i} before it, the largest score of block {b}) = max({num(before)}, "
                   f"{num(block_max)}) = {right}. The wrong choices: " + "; ".join(others) + ".")
    return make("online_max", prompt, right, shown, explanation, rng)
