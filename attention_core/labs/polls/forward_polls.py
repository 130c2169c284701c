"""The quiz's questions on the forward pass, made multiple choice: the word a row attends to most, the shape of a
step, the head that attends most, a scaled score from its raw score, and the weight of a key the mask hides.

Every answer is read from the teacher's trace (run_forward under the settings); every distractor is what a wrong
mental model gives from the same numbers (a transposed shape, S·√d_k for S/√d_k, softmax without the mask).

    >>> from attention_core import Config, run_forward
    >>> p = shape_poll(run_forward(Config()), np.random.default_rng(0))
    >>> len(p.choices) in (3, 4), p.kind
    (True, 'shape')
"""
from __future__ import annotations

import math

import numpy as np

from ...forward.trace import Trace
from ...math import attention as att
from ..quiz.notation import at as named, by_head, facts_line, heads_letter, name_of, num, shape_text, temperature_of
from ..quiz.shapes import SHAPE_STEPS, _raw_scores
from ..quiz.weights import _hidden_because
from .pins import Unfit, pin_int, pin_text, pinned
from .poll import MIN_CHOICES, Poll, count_choices, make


def _gap(values) -> float:
    top = np.sort(np.asarray(values, float))[::-1]
    return float(top[0] - top[1]) if top.size > 1 else 0.0


# ---- attends: which word row i attends to most ---------------------------------------------------------

def _attends_rows(trace: Trace) -> list[tuple[int, int]]:
    """(head block, row) with one clear winner (ahead of the second by more than 0.001), in a sentence of 3 or
    more words (the words are the choices). A row the mask leaves one key (row 0 under the causal mask) is answered
    by the mask alone, its other choices words it cannot see: such rows are asked only when no other row fits."""
    rows = _clear_rows(trace)
    if "mask" not in trace:
        return rows
    seen = trace["mask"].value.sum(axis=-1)
    return [(h, i) for h, i in rows if seen[i] >= 2] or rows


def _clear_rows(trace: Trace) -> list[tuple[int, int]]:
    """(head block, row) with one clear winner, in a sentence of 3 or more words."""
    if "weights" not in trace or trace.n < MIN_CHOICES:
        return []
    w = by_head(trace["weights"].value)
    return [(h, i) for h in range(w.shape[0]) for i in range(w.shape[1]) if w[h, i].sum() > 0 and _gap(w[h, i]) > 1e-3]


def _pin_head(trace: Trace, at: dict | None, step: str = "weights") -> int | None:
    """The pinned head: None when not pinned; Unfit when the step has no head axis or the head is past H."""
    if not at or "head" not in at:
        return None
    if step not in trace or trace[step].value.ndim != 3:
        raise Unfit("these settings have one head")
    return pin_int(at, "head", 0, trace[step].shape[0] - 1)


def attends_poll(trace: Trace, rng: np.random.Generator, at: dict | None = None) -> Poll | None:
    """at: {"row": i, "head": h} (head only with several heads): that row's largest weight."""
    rows = _attends_rows(trace)
    if at:
        i, h = pin_int(at, "row", 0, trace.n - 1), _pin_head(trace, at)
        rows = pinned(_clear_rows(trace), lambda c: (i is None or c[1] == i) and (h is None or c[0] == h))
    if not rows:
        return None
    h, i = rows[int(rng.integers(len(rows)))]
    row = by_head(trace["weights"].value)[h, i]
    head = h if trace["weights"].value.ndim == 3 else None
    labels = trace.token_labels()
    ranked = sorted(range(len(row)), key=lambda j: (-row[j], j))             # the runners-up are the distractors
    a = "A" if head is None else f"A_{head}"
    where = "Which" if head is None else f"In head {head}, which"
    return make("attends", f"{where} word does “{labels[i]}” attend to most (the largest weight in row {i} of {a})?",
                labels[ranked[0]], [labels[j] for j in ranked[1:]],
                f"Row {i} of {a}: " + ", ".join(f"{labels[j]} {row[j]:.3f}" for j in ranked[:4])
                + (", …" if len(row) > 4 else "") + f". The largest weight, {row[ranked[0]]:.3f}, is on "
                f"“{labels[ranked[0]]}”.", rng, "weights")


# ---- shape: the shape of a step ------------------------------------------------------------------------

def _shape_text(shape) -> str:
    return " × ".join(map(str, shape))


def _wrong_shapes(trace: Trace, shape: tuple[int, ...]) -> list[str]:
    """Shapes a wrong mental model gives: transposed, d_model where d_k (or d_v) stands and the other way round,
    all heads' width H·d_k for one head's d_k, a head axis dropped or kept."""
    f = trace.facts
    sizes = {name: f[name] for name in ("d_model", "d_k", "d_v") if name in f}
    H = f.get("n_heads", 1)
    swaps = [("d_k", "d_model"), ("d_model", "d_k"), ("d_v", "d_model"), ("d_model", "d_v")]
    out = [_shape_text(shape[:-2] + shape[-2:][::-1])] if len(shape) >= 2 else []
    for a, b in swaps:
        if a in sizes and b in sizes and sizes[a] in shape[-2:]:
            k = len(shape) - 2 + list(shape[-2:]).index(sizes[a])
            out.append(_shape_text(shape[:k] + (sizes[b],) + shape[k + 1:]))
    if H > 1:
        if len(shape) == 3:
            out.append(_shape_text((shape[1], shape[0] * shape[2])))            # the heads' columns side by side
            out.append(_shape_text(shape[1:]))                                   # one head's block only
        elif "d_k" in sizes:
            out.append(_shape_text((H,) + shape))                               # a head axis that is not there
    if shape[-2:] == (trace.n, trace.n) and "d_k" in sizes:                    # scores shaped like Q
        out.append(_shape_text(shape[:-1] + (sizes["d_k"],)))
    return out


def _longer(trace: Trace, n: int) -> Trace:
    """The same settings on a sentence of n words (the sentence's own words, repeated): what typing one gives."""
    from ...forward.stages import run_forward
    from ...math.limits import ConfigError
    from ..quiz.notation import config_of
    config = config_of(trace)
    if config is None or not trace.tokens:
        raise Unfit("no settings to change")
    words = [trace.tokens[k % trace.n] for k in range(n)]
    try:
        longer = run_forward(config.replace(sentence=" ".join(words)))
    except (ConfigError, ValueError) as err:
        raise Unfit(str(err)) from None
    if longer.n != n:
        raise Unfit("the sentence does not split into n tokens")
    return longer


def _shape_steps(trace: Trace) -> list[str]:
    return [k for k in SHAPE_STEPS if k in trace and trace[k].value.ndim >= 2
            and count_choices(_shape_text(trace[k].shape), _wrong_shapes(trace, trace[k].shape)) >= MIN_CHOICES]


def shape_poll(trace: Trace, rng: np.random.Generator, at: dict | None = None) -> Poll | None:
    """at: {"step": a step's key, "n": a sentence length}: that step's shape, on a sentence of n words when n is
    pinned (typing one: its shape now is then a distractor, as if n did not enter)."""
    n = pin_int(at, "n", 1, 64)
    asked = trace if n is None or n == trace.n else _longer(trace, n)
    keys = _shape_steps(asked)
    step_key = pin_text(at, "step", keys)
    if step_key is not None:
        keys = [step_key]
    if not keys:
        return None
    step = asked[keys[int(rng.integers(len(keys)))]]
    name = name_of(step, asked)
    now = trace[step.key].shape if asked is not trace and step.key in trace else None
    wrong = ([_shape_text(now)] if now is not None else []) + _wrong_shapes(asked, step.shape)
    typed = "" if asked is trace else (f"Type a sentence of {asked.n} word{'' if asked.n == 1 else 's'} instead of "
                                       + ("this one. " if trace.n == 1 else f"these {trace.n}. "))
    grows = ("" if now is None else
             f" Now, with n = {trace.n}, it is {_shape_text(now)}" + (": the same." if now == step.shape else "."))
    return make("shape", f"{typed}{facts_line(asked)} What is the shape of {name}"
                + (f" ({step.title})?" if name != step.title else "?"),
                _shape_text(step.shape), wrong,
                f"{name} is {shape_text(step, asked)}: {_shape_reason(step, asked)}{grows}", rng, step.key)


def _shape_reason(step, trace: Trace) -> str:
    """Why a step has its shape, from its axes (the steps' own sentences talk of training, not of shapes)."""
    axes = step.axes
    if "n" not in axes and "n_q" not in axes:
        if len(axes) == 2:
            return f"a weight matrix, {axes[0]} columns in and {axes[1]} out, whatever the sentence's length n."
        return "parameters, whatever the sentence's length n."
    block = "one block per KV head" if heads_letter(step, trace) == "H_kv" else "one block per head"
    parts = [block if axes[0] == "head" else ""]
    parts.append("a row per query, a column per key" if axes[-2:] == ("n_q", "n_k") else "a row per token")
    if axes[-1] not in ("n", "n_k"):
        parts.append(f"{step.shape[-1]} columns ({axes[-1]})")
    return ", ".join(p for p in parts if p) + "."


# ---- which_head: the head that puts the most weight on one cell ---------------------------------------

def _head_cells(trace: Trace) -> list[tuple[int, int]]:
    if "weights" not in trace or trace["weights"].value.ndim != 3 or trace["weights"].shape[0] < MIN_CHOICES:
        return []
    w = trace["weights"].value
    return [(i, j) for i in range(trace.n) for j in range(trace.n) if _gap(w[:, i, j]) > 1e-3]


def which_head_poll(trace: Trace, rng: np.random.Generator, at: dict | None = None) -> Poll | None:
    """at: {"row": i, "col": j}: the head with the largest A_h[i,j]."""
    cells = _head_cells(trace)
    if at:
        i, j = pin_int(at, "row", 0, trace.n - 1), pin_int(at, "col", 0, trace.n - 1)
        cells = pinned(cells, lambda c: (i is None or c[0] == i) and (j is None or c[1] == j))
    if not cells:
        return None
    i, j = cells[int(rng.integers(len(cells)))]
    col = trace["weights"].value[:, i, j]                                       # (H,)
    ranked = sorted(range(len(col)), key=lambda h: (-col[h], h))
    labels = trace.token_labels()
    return make("which_head", f"Which head puts the most weight from “{labels[i]}” onto “{labels[j]}”: for which h "
                f"(0 … {len(col) - 1}) is A_h[{i},{j}] largest?",
                f"head {ranked[0]}", [f"head {h}" for h in ranked[1:]],
                f"A_h[{i},{j}] by head: " + ", ".join(f"head {h} {col[h]:.3f}" for h in range(len(col)))
                + f". The largest is head {ranked[0]}'s.", rng, "weights")


# ---- scaled_score: Ŝ = S / √d_k from S -----------------------------------------------------------------

def _scaled_inputs(trace: Trace):
    """(S, Ŝ, d_k) and the cells whose wrong answers differ from the right one as displayed; None without a
    scaled dot product."""
    if "scaled_scores" not in trace or "scores" not in trace:
        return None
    s, s_hat = trace["scores"].value, trace["scaled_scores"].value
    d_k = int(trace.facts.get("d_k", trace["q_heads" if "q_heads" in trace else "q"].shape[-1]))
    cells = [tuple(int(x) for x in c) for c in np.argwhere(np.isfinite(s))
             if count_choices(num(s_hat[tuple(c)]), _wrong_scaled(float(s[tuple(c)]), d_k)) >= MIN_CHOICES]
    return s, s_hat, d_k, cells


def _wrong_scaled(s: float, d_k: int) -> list[str]:
    """S·√d_k (multiplied, not divided), S / d_k (without the square root), S (not scaled)."""
    return [num(s * math.sqrt(d_k)), num(s / d_k), num(s)]


def scaled_score_poll(trace: Trace, rng: np.random.Generator, at: dict | None = None) -> Poll | None:
    """at: {"row": i, "col": j, "head": h} (head only with several heads): Ŝ[i,j] from S[i,j]."""
    got = _scaled_inputs(trace)
    if got is None or not got[3]:
        return None
    s, s_hat, d_k, cells = got
    if at:
        i, j, h = pin_int(at, "row", 0, trace.n - 1), pin_int(at, "col", 0, trace.n - 1), _pin_head(trace, at, "scores")
        cells = pinned(cells, lambda c: (i is None or c[-2] == i) and (j is None or c[-1] == j)
                       and (h is None or c[0] == h))
    cell = cells[int(rng.integers(len(cells)))]
    head, index = (cell[0], cell[1:]) if s.ndim == 3 else (None, cell)
    raw, scaled = named("S", head, *index), named("Ŝ", head, *index)
    value = float(s[cell])
    return make("scaled_score", f"The raw score {raw} = {num(value)} and d_k = {d_k}. What is the scaled score {scaled}?",
                num(s_hat[cell]), _wrong_scaled(value, d_k),
                f"{scaled} = {raw} / √d_k = {num(value)} / √{d_k} = {num(value)} / {num(math.sqrt(d_k))} = "
                f"{num(s_hat[cell])}, where {_raw_scores(trace, head)}. Multiplying by √{d_k} gives "
                f"{num(value * math.sqrt(d_k))}, dividing by d_k = {d_k} gives {num(value / d_k)}.", rng, "scaled_scores")


# ---- masked_weight: the weight of a hidden key ---------------------------------------------------------

def _unmasked_weights(trace: Trace) -> np.ndarray:
    """softmax of the scores before the mask (÷ T): what the row would give a hidden key with no mask; (H, n, n)."""
    before = trace[trace["masked_scores"].inputs[0]].value
    return by_head(att.softmax(before / temperature_of(trace), axis=-1))


def _hidden_cells(trace: Trace) -> list[tuple[int, int]]:
    if "mask" not in trace or "masked_scores" not in trace:
        return []
    return [(int(i), int(j)) for i, j in np.argwhere(trace["mask"].value == 0)]


def masked_weight_poll(trace: Trace, rng: np.random.Generator, at: dict | None = None) -> Poll | None:
    """at: {"row": i, "col": j, "head": h} (head only with several heads): the weight of a key the mask hides."""
    cells = _hidden_cells(trace)
    if not cells:
        return None
    pin_h = None
    if at:
        i, j, pin_h = pin_int(at, "row", 0, trace.n - 1), pin_int(at, "col", 0, trace.n - 1), _pin_head(trace, at)
        cells = pinned(cells, lambda c: (i is None or c[0] == i) and (j is None or c[1] == j))
    i, j = cells[int(rng.integers(len(cells)))]
    heads = trace["weights"].value.ndim == 3
    h = pin_h if pin_h is not None else int(rng.integers(trace["weights"].shape[0])) if heads else None
    unmasked = float(_unmasked_weights(trace)[h or 0, i, j])
    labels, n = trace.token_labels(), trace.n
    a, s_tilde = named("A", h, i, j), named("S̃", h, i, j)
    rule = _hidden_because(trace, i, j)
    return make("masked_weight", f"The mask hides key “{labels[j]}” from query “{labels[i]}” ({rule}). What weight "
                f"{a} does row {i} give to key {j}" + (f" in head {h}?" if heads else "?"),
                "0", [num(unmasked), "−∞", num(1 / n)],
                f"The masked score {s_tilde} = −∞ and e^(−∞) = 0: the weight is exactly 0. Without the mask, softmax "
                f"would give key {j} {num(unmasked)}; 1/n = 1/{n} = {num(1 / n)} would be an even share; −∞ is the "
                f"masked score, not its weight.", rng, "weights")
