"""Questions about sizes and the scale: the shape of a step, the numbers a weight matrix holds, and a scaled
score Ŝ = S / √d_k from its raw score.

    >>> from attention_core import Config, run_forward
    >>> parameter_count_question(run_forward(Config()), np.random.default_rng(0)).kind
    'number'
"""
from __future__ import annotations

import math

import numpy as np

from ...forward.trace import Trace
from .grading import Question
from .notation import at, config_of, facts_line, groups, name_of, shape_text

SHAPE_STEPS = ("q", "k", "v", "w_q", "w_v", "scores", "weights", "context", "w_o", "output", "q_heads",
               "v_heads", "concat", "x", "pe", "w_b", "w_a_q", "masked_scores", "w_k", "k_heads", "k_rot", "alibi")


def shape_question(trace: Trace, rng: np.random.Generator) -> Question | None:
    keys = [k for k in SHAPE_STEPS if k in trace and trace[k].value.ndim >= 2]
    if not keys:
        return None
    step = trace[keys[int(rng.integers(len(keys)))]]
    shape, name = step.shape, name_of(step, trace)
    return Question(
        f"shape:{step.key}", "shape",
        f"{facts_line(trace)} What is the shape of {name}" + (f" ({step.title})?" if name != step.title else "?"),
        " × ".join(map(str, shape)), tuple(shape),
        explanation=f"{name} is {shape_text(step, trace)}" + (f": {step.why}" if step.why else "."),
        step_key=step.key, hint="Type the sizes, e.g. 4x6 or (4, 6).")


def scaled_score_question(trace: Trace, rng: np.random.Generator) -> Question | None:
    if "scaled_scores" not in trace or "scores" not in trace:
        return None
    s = trace["scores"].value                                            # (H?, n, n)
    cell = tuple(int(rng.integers(n)) for n in s.shape)
    d_k = trace.facts.get("d_k", trace["q_heads" if "q_heads" in trace else "q"].shape[-1])
    value = float(trace["scaled_scores"].value[cell])
    head, index = (cell[0], cell[1:]) if s.ndim == 3 else (None, cell)
    raw, scaled = at("S", head, *index), at("Ŝ", head, *index)
    return Question(f"scaled:{','.join(map(str, cell))}", "number",
                    f"The raw score {raw} = {s[cell]:.3f} and d_k = {d_k}. What is the scaled score {scaled}?",
                    f"{value:.3f}", value, tolerance=max(5e-3, 1e-2 * abs(value)),
                    explanation=f"Scaled dot product: {scaled} = {raw} / √d_k = {s[cell]:.3f} / {math.sqrt(d_k):.3f}, "
                                f"where {_raw_scores(trace, head)}.",
                    step_key="scaled_scores", cell=cell, hint="Type a number, e.g. 0.25.")


def _raw_scores(trace: Trace, head: int | None) -> str:
    """'S = Q Kᵀ', 'S_1 = Q^R_1 (K^R_0)ᵀ': what the raw dot-product scores of a head multiply, under the settings
    (RoPE's rotated rows; the KV head ⌊h/g⌋ query head h reads)."""
    config = config_of(trace)
    r = "^R" if config is not None and config.positional == "rope" else ""
    sub = "" if head is None else f"_{head}"
    k_sub = "" if head is None else f"_{head // groups(trace)}"
    k = f"(K{r}{k_sub})" if r else f"K{k_sub}"
    text = f"S{sub} = Q{r}{sub} {k}ᵀ"
    if r:
        text += ", the rows of Q and K rotated by their positions (RoPE)"
    if head is not None and groups(trace) > 1:
        text += f"; query head {head} reads KV head ⌊{head}/{groups(trace)}⌋ = {head // groups(trace)}"
    return text


def parameter_count_question(trace: Trace, rng: np.random.Generator) -> Question | None:
    keys = [k for k in ("w_q", "w_k", "w_v", "w_o") if k in trace]
    if not keys:
        return None
    step = trace[keys[int(rng.integers(len(keys)))]]
    count = int(step.value.size)
    return Question(f"params:{step.key}", "number",
                    f"{facts_line(trace)} How many numbers does {name_of(step, trace)} hold?",
                    str(count), float(count), tolerance=0.5,
                    explanation=f"{name_of(step, trace)} is {shape_text(step, trace)} = {count} numbers, whatever the "
                                f"sentence length" + (f": sharing KV heads shrinks W_K and W_V to the columns of "
                                                      f"H_kv = {config_of(trace).kv_heads} head"
                                                      f"{'s' if config_of(trace).kv_heads > 1 else ''}."
                                                      if step.key in ("w_k", "w_v") and groups(trace) > 1 else "."),
                    step_key=step.key, hint="Type a whole number.")
