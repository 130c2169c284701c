"""The score-functions page's four traces, with the temperature applied last.

The scores do not depend on the softmax temperature; only the weights do. So each score function's
trace is computed once at temperature 1 (process-wide, ui.cache.get_trace) and a temperature change
re-runs only the softmax, with the forward pass's own function on the forward pass's own logits:
the same numbers run_forward gives, without re-scoring all n² pairs four times (the additive score
builds an n × n × d_a array per head).
"""
from __future__ import annotations

import functools

from attention_core import Config, Step, Trace
from attention_core.math import attention as att
from attention_core.math import notation

from ..cache import get_trace


@functools.lru_cache(maxsize=256)
def score_panel(config: Config, score: str) -> tuple[Trace, Step]:
    """(the trace of `score` at temperature 1, its weights at the config's temperature)."""
    base = get_trace(config.replace(score=score, temperature=1.0))
    if config.temperature == 1.0:
        return base, base["weights"]
    logits = base[base.facts["softmax_input"]]              # what run_forward's softmax reads
    w = base["weights"]
    weights = Step(w.key, w.title, att.softmax(logits.value, temperature=config.temperature), w.axes, w.formula,
                   w.inputs, w.why, w.scale)
    return base, weights


PLAIN = {notation.S_SCALED: "Ŝ", notation.S_MASKED: "S̃"}     # the LaTeX symbols as plain text (S and B are letters)


def scores_symbol(score: str) -> str:
    """What the score step gives, as docs/notation.md names it: Ŝ for the scaled dot product, else S."""
    return "Ŝ" if score == "scaled_dot" else "S"


def softmax_text(config: Config) -> str:
    """'softmax(S̃ / 0.5)': what run_forward's softmax reads under these settings (notation.softmax_argument)."""
    arg = notation.softmax_input(config)
    for tex, text in PLAIN.items():                    # S, Ŝ, S̃, and with ALiBi "Ŝ + B"
        arg = arg.replace(tex, text)
    if config.temperature != 1:
        arg = f"({arg}) / {config.temperature:g}" if " + " in arg else f"{arg} / {config.temperature:g}"
    return f"softmax({arg})"
