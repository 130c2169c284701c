"""Questions made from the learner's own numbers: each configuration gives new ones.

    >>> from attention_core import Config, run_forward
    >>> questions = make_questions(run_forward(Config()), seed=0)
    >>> shape = next(q for q in questions if q.kind == "shape")
    >>> grade(shape, shape.answer)[0], grade(shape, "1 x 1")[0]
    (True, False)

make_questions(trace, seed) -> [Question]; grade(question, answer) -> (correct, feedback).
A Question carries its own expected answer, so grading needs no trace. Answers are typed
strings (or one of `choices`), normalised before comparing: a shape as "4x6", "(4, 6)" or
"4 × 6"; a sign as "positive", "+", "> 0", or for a change "up", "down", "stay"; a number as "0.5",
".5", "1/2"; a word in any case.

The text follows docs/notation.md: everything counted from 0, head h of H, the scores softmax reads
named as the settings make them (S, Ŝ, S + B or Ŝ + B with ALiBi's bias B, or S̃), A the weights, C the context,
O the output; with grouped KV heads (H_kv < H) query head h reads V_{⌊h/g⌋}, g = H / H_kv. A sign
question asks about one derivative, names it, and is graded by that derivative, computed in closed
form from the trace; tests/test_quiz.py checks each against finite differences through softmax.

Kinds: shape, choice (a word or a head), sign, number, yesno. The generators work on
run_forward traces and, where the steps they need are present, on others (a classifier trace
with "dL/d…" gradient steps gets its sign questions from those).

The questions live by family:

    grading   Question; reading a typed answer (shape, sign, number, yes/no, choice); grade
    notation  the notation in plain text: symbols, entries such as A_1[3,0], names, shapes, the caption
    shapes    the shape of a step, the numbers a weight matrix holds, a scaled score from its raw score
    weights   the word or head attended to most, a row's and a column's sum, a masked key's weight
    signs     up, down or stay: the sign of one derivative, in closed form or from a gradient step
"""
from __future__ import annotations

import zlib

import numpy as np

from ...forward.trace import Trace
from .grading import Question, grade, parse_number, parse_shape, parse_sign, parse_yesno, readable
from .notation import PLAIN_SCORES, score_step_symbol, softmax_scores, symbols_caption
from .notation import at as _at                      # tests/test_quiz.py reads it under its old name
from .shapes import parameter_count_question, scaled_score_question, shape_question
from .signs import (context_question_at, context_sign_question, gradient_sign_question, output_sign_question,
                         softmax_sign_question)
from .weights import (attends_question, column_sum_question, masked_weight_question, row_sum_question,
                           which_head_question)

GENERATORS = (shape_question, attends_question, gradient_sign_question, row_sum_question, which_head_question,
              masked_weight_question, scaled_score_question, column_sum_question, parameter_count_question)


def fingerprint(trace: Trace) -> int:
    """A number that changes with the configuration: tokens, shapes and a digest of the values."""
    def digest(v: np.ndarray) -> float:
        return round(float(np.sum(np.where(np.isfinite(v), v, 0.0))), 9)
    parts = [" ".join(trace.tokens)] + [f"{s.key}{s.shape}{digest(s.value)}" for s in trace]
    return zlib.crc32("|".join(parts).encode("utf-8"))


def make_questions(trace: Trace, seed: int = 0) -> list[Question]:
    """One question per kind that fits the trace, with cells drawn from (seed, the trace's fingerprint)."""
    questions, print_ = [], fingerprint(trace)
    for i, make in enumerate(GENERATORS):
        rng = np.random.default_rng([int(seed) & 0xFFFFFFFF, print_, i])
        q = make(trace, rng)
        if q is not None:
            questions.append(q)
    return questions


__all__ = ["Question", "make_questions", "grade", "readable", "symbols_caption", "fingerprint", "GENERATORS",
           "parse_shape", "parse_sign", "parse_number", "parse_yesno", "PLAIN_SCORES", "score_step_symbol",
           "softmax_scores", "context_question_at", "context_sign_question", "output_sign_question",
           "softmax_sign_question", "_at"]
