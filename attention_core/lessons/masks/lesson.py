"""The masks page's Trace (kind "masks"): head h of the forward pass from its scores to its weights, then what the
sidebar has no setting for: weights with a sink logit z_h, the rows' sums, and masks side by side.

Every step up to A_h is the forward pass's own (head h of its trace); the page computes only A′_h (the sink), the row
sums and the compared masks.
"""
from __future__ import annotations

import math
import threading

import numpy as np

from ...explanations import cell_of
from ...forward.config import Config
from ...forward.stages import run_forward
from ...forward.trace import Trace
from ...math import attention as att
from ...math.limits import ConfigError
from .claims import KIND, settings_of
from .compare import RULES, compared_rules, rule_formula, rule_mask
from .notation import MASK_WHY, head_symbols, mask_formula, score_formula, scores_why, slopes_formula

MAX_SINK = 30.0                     # |z_h| ≤ 30: e^{±30} is far from overflow


def check(config: Config, n: int, head: int, sink: float | None) -> None:
    """ConfigError with what to change, for a page control out of range."""
    h = config.n_heads
    if isinstance(head, bool) or not isinstance(head, int) or not 0 <= head < h:
        raise ConfigError(f"Head {head!r} does not exist: the sidebar's {h} head{'s' * (h > 1)} run 0 to {h - 1}.")
    if sink is not None and not (isinstance(sink, (int, float)) and math.isfinite(sink) and abs(sink) <= MAX_SINK):
        raise ConfigError(f"The sink logit z_h = {sink!r}: use a number from −{MAX_SINK:g} to {MAX_SINK:g}.")


def logits_key(config: Config) -> str:
    """The forward pass's scores before any bias: Ŝ for the scaled dot product, else S."""
    return "scaled_scores" if config.score == "scaled_dot" else "scores"


_CACHE: dict[tuple, Trace] = {}             # (config, head, sink) -> the page's trace; the last 32
_LOCK = threading.Lock()


def masks_trace(config: Config, head: int = 0, sink: float | None = None, forward: Trace | None = None) -> Trace:
    """The page's steps for head h of the forward pass under `config` (its trace: pass it if you have it),
    with a sink logit z_h (None: no sink). ConfigError for a control out of range."""
    key = (config, head, sink)
    hit = _CACHE.get(key)
    if hit is not None:
        return hit
    if forward is None:
        forward = run_forward(config)
    t = _build(config, forward, head, sink)
    with _LOCK:                                                    # sessions run in threads
        while len(_CACHE) >= 32:
            _CACHE.pop(next(iter(_CACHE)), None)
        _CACHE[key] = t
    return t


def _entry(symbol: str) -> str:
    """Entry (i, j) of a matrix: 'A_ij', and of a head's 'A′_1': '(A′_1)_ij', not 'A′_1_ij'."""
    return f"({symbol})_ij" if "_" in symbol else f"{symbol}_ij"


def _build(config: Config, fwd: Trace, head: int, sink: float | None) -> Trace:
    n = fwd.n
    check(config, n, head, sink)
    t = Trace(fwd.tokens)
    sym = head_symbols(config, head)                                            # head h's matrices, as the headings
    txt = (lambda key: sym[key][1])
    t.facts.update(kind=KIND, settings=settings_of(config, n, head, sink), head=head, config=config, forward=fwd,
                   t=config.temperature,
                   axis_labels={"H": [f"h={i}" for i in range(config.n_heads)],
                                "part": [f"Σ_j {_entry(txt('sink_weights'))}", "sink share"] if sink is not None
                                else [f"Σ_j {_entry(txt('weights'))}"]},
                   symbols=sym, rules=compared_rules(config, n))
    logits = _add_forward_steps(t, config, fwd, head)
    final = "weights" if sink is None else _add_sink(t, config, logits, head, sink)
    _add_row_sums(t, final, sink is not None)
    t.facts.update(final=final, logits=logits)
    _add_compared(t, config, n)
    return t


def _softmax_reads(t: Trace, logits: str, temp: float) -> tuple[str, str]:
    """What softmax reads, in LaTeX: the cell (i, j) and (i, j′) of the last scores, divided by T unless T = 1."""
    tex = t.facts["symbols"][logits][0]
    over = "" if temp == 1 else r" / T"
    return cell_of(tex, "ij") + over, cell_of(tex, "ij'") + over


def _add_forward_steps(t: Trace, config: Config, fwd: Trace, h: int) -> str:
    """Head h's steps of the forward pass, as they are there: Ŝ_h, (B_h, Ŝ_h + B_h with ALiBi), (M, S̃_h with a
    mask), A_h. Returns the key of the scores softmax reads."""
    h_count = config.n_heads
    kv = h // (h_count // config.kv_heads)
    sym = t.facts["symbols"]
    tex, txt = (lambda key: sym[key][0]), (lambda key: sym[key][1])

    def of(key):                                                               # head h's (n, n) of a forward step
        v = fwd[key].value
        return v[h] if v.ndim == 3 else v

    scaled = config.score == "scaled_dot"
    whose = f" (head {h})" if h_count > 1 else ""
    # the scores: the forward pass's, head h
    first = logits_key(config)
    t.add(first, f"{'Scaled scores' if scaled else 'Scores'} {txt(first)}{whose}", of(first), ("n_q", "n_k"),
          score_formula(config, h, kv), why=scores_why(config, h, kv))
    logits = first
    if config.positional == "alibi":
        slopes = np.array(fwd.facts["alibi_slopes"])                           # (H,)
        t.add("alibi_slopes", "ALiBi slopes m_h", slopes, ("H",), slopes_formula(h_count),
              why="One slope per head (the columns), fixed, never learned: a larger slope lowers distant keys "
                  "more, so its head looks nearer; a smaller one looks further back.", scale="sequential")
        t.add("alibi", f"ALiBi bias {txt('alibi')}{whose}", of("alibi"), ("n_q", "n_k"),
              rf"{cell_of(tex('alibi'), 'ij')} = -m_{{{h}}} \cdot |i - j|,\quad m_{{{h}}} = {slopes[h]:.6g}",
              ("alibi_slopes",), why="Key j's score is lowered by m_h times its distance from query i: the further "
                                     "away, the lower. Nothing is added to X.")
        t.add("biased_scores", f"Biased scores {txt('biased_scores')[1:-1].replace('+', ' + ')}", of("biased_scores"),
              ("n_q", "n_k"), tex("biased_scores")[1:-1], (first, "alibi"),
              why="What the mask and softmax now read." if config.mask != "none" else "What softmax now reads.")
        logits = "biased_scores"
    if config.mask != "none":
        m = fwd["mask"].value                                                  # (n, n), 1 = may attend
        t.add("mask", "Mask M", m, ("n_q", "n_k"), mask_formula(config), why=MASK_WHY[config.mask](config),
              scale="mask")
        t.add("masked_scores", f"Masked scores {txt('masked_scores')}", of("masked_scores"), ("n_q", "n_k"),
              rf"{cell_of(tex('masked_scores'), 'ij')} = \begin{{cases}} {cell_of(tex(logits), 'ij')} & M_{{ij}} = 1 "
              r"\\ -\infty & M_{ij} = 0 \end{cases}", (logits, "mask"),
              why="Hidden entries become −∞, so exp gives them exactly 0.")
        logits = "masked_scores"
    temp = config.temperature
    x_ij, x_ij2 = _softmax_reads(t, logits, temp)
    t.add("weights", f"Weights {txt('weights')}", of("weights"), ("n_q", "n_k"),
          rf"{cell_of(tex('weights'), 'ij')} = \frac{{e^{{{x_ij}}}}}{{\sum_{{j'}} e^{{{x_ij2}}}}}"
          + ("" if temp == 1 else rf",\quad T = {temp:g}"), (logits,), scale="sequential",
          why="Softmax over each row" + ("." if temp == 1 else f", the scores divided by the sidebar's temperature "
                                              f"T = {temp:g} first."))
    return logits


def _add_sink(t: Trace, config: Config, logits: str, h: int, sink: float) -> str:
    """A′_h: the softmax with one more logit z_h in its denominator (the forward pass has no sink)."""
    sym = t.facts["symbols"]
    tex, txt = (lambda key: sym[key][0]), (lambda key: sym[key][1])
    temp = config.temperature
    x_ij, x_ij2 = _softmax_reads(t, logits, temp)
    x = t[logits].value / temp                                                 # (n, n): what softmax reads
    t.add("sink_weights", f"Weights with a sink {txt('sink_weights')}, z_{h} = {sink:g}",
          att.softmax_with_sink(x, sink), ("n_q", "n_k"),
          rf"{cell_of(tex('sink_weights'), 'ij')} = \frac{{e^{{{x_ij}}}}}{{e^{{z_{{{h}}}}} + "
          rf"\sum_{{j'}} e^{{{x_ij2}}}}},\quad z_{{{h}}} = {sink:g}", (logits,),
          why=f"The weights with one more logit, z_{h}, in the denominator only: it takes a share of the row and "
              f"gives no value back. {txt('sink_weights')} is not {txt('weights')}: the forward pass has no sink."
              + ("" if temp == 1 else f" z_{h} is not divided by T: it competes with the scores after "
                                      "the division."), scale="sequential")
    return "sink_weights"


def _add_row_sums(t: Trace, final: str, with_sink: bool) -> None:
    """Each row's sum of the final weights (A_h or A′_h), and with a sink what the sink takes."""
    tex, txt = t.facts["symbols"][final]
    sums = t[final].value.sum(axis=1)                                          # (n,)
    parts = [sums, 1.0 - sums] if with_sink else [sums]
    row_sum = r"\sum_j " + cell_of(tex, "ij")
    t.add("row_sums", "Row sums" + (f" of {txt} and the sink's share" if with_sink else ""),
          np.stack(parts, axis=1), ("n_q", "part"),
          r"\textstyle" + row_sum + (rf",\quad 1 - {row_sum}" if with_sink else ""), (final,), scale="sequential")


def _add_compared(t: Trace, config: Config, n: int) -> None:
    """Masks side by side (the comparisons): the sidebar's W in both readings, causal, padding."""
    for key, (kind, arg) in t.facts["rules"].items():
        title = RULES[kind].title.format(w=config.window, w1=config.window + 1)
        t.add(key, title.replace("(s)", "s" * (config.window != 1)), rule_mask(kind, arg, n),
              ("n_q", "n_k"), rule_formula(kind, arg), why=RULES[kind].why, scale="mask")

