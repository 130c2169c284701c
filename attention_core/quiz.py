"""Questions made from the learner's own numbers: each configuration gives new ones.

    >>> from attention_core import Config, run_forward
    >>> questions = make_questions(run_forward(Config()), seed=0)
    >>> shape = next(q for q in questions if q.kind == "shape")
    >>> grade(shape, shape.answer)[0], grade(shape, "1 x 1")[0]
    (True, False)

make_questions(trace, seed) -> [Question]; grade(question, answer) -> (correct, feedback).
A Question carries its own expected answer, so grading needs no trace. Answers are typed
strings (or one of `choices`), normalised before comparing: a shape as "4x6", "(4, 6)" or
"4 × 6"; a sign as "positive", "+", "> 0"; a number as "0.5", ".5", "1/2"; a word in any case.

Kinds: shape, choice (a word or a head), sign, number, yesno. The generators work on
run_forward traces and, where the steps they need are present, on others (a classifier trace
with "dL/d…" gradient steps gets its sign questions from those).
"""
from __future__ import annotations

import math
import re
import zlib
from dataclasses import dataclass

import numpy as np

from .trace import Trace

ZERO = 1e-12                     # |value| at or below this counts as zero for a sign question
MAX_ANSWER = 200                 # characters of an answer that are read


@dataclass(frozen=True)
class Question:
    id: str                      # stable within a trace: "shape:q", "attends:weights:1,2"
    kind: str                    # shape | choice | sign | number | yesno
    prompt: str                  # plain text
    answer: str                  # the canonical answer, shown after grading
    expected: object             # normalised: tuple of ints | frozenset of choices | "positive"… | float | bool
    choices: tuple[str, ...] = ()      # options to offer (empty: a typed answer)
    tolerance: float = 0.0             # for numbers
    explanation: str = ""              # why, shown with the verdict
    step_key: str = ""                 # the step to show alongside
    cell: tuple[int, ...] = ()
    hint: str = ""                     # how to type the answer


# ---- normalising answers -------------------------------------------------------------------------------

def _clean(answer) -> str:
    return " ".join(str(answer)[:MAX_ANSWER].replace("−", "-").split()).strip().strip("\"'“”‘’").strip()


def parse_shape(answer) -> tuple[int, ...] | None:
    """'4x6', '(4, 6)', '4 × 6', '[4,6]', 'n=4 × d_k=6' -> (4, 6); None if no number is there."""
    numbers = re.findall(r"\d+", _clean(answer))
    return tuple(int(x) for x in numbers) if numbers else None


_SIGNS = {"positive": ("positive", "pos", "+", ">0", "> 0", "plus", "greater than zero", "above zero"),
          "negative": ("negative", "neg", "-", "<0", "< 0", "minus", "less than zero", "below zero"),
          "zero": ("zero", "0", "=0", "= 0", "0.0", "none", "neither")}


def parse_sign(answer) -> str | None:
    a = _clean(answer).lower()
    return next((sign for sign, words in _SIGNS.items() if a in words), None)


def parse_number(answer) -> float | None:
    """'0.5', '.5', '-1e-3', '1/2', '50%' -> float; None when it is not a number (nothing is evaluated)."""
    a = _clean(answer)
    if re.fullmatch(r"[-+]?\d+,\d+", a):                               # a decimal comma: 0,5
        a = a.replace(",", ".")
    number = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
    if m := re.fullmatch(rf"({number})\s*/\s*({number})", a):
        top, bottom = float(m.group(1)), float(m.group(2))
        return top / bottom if bottom else None
    if m := re.fullmatch(rf"({number})\s*%", a):
        return float(m.group(1)) / 100
    if re.fullmatch(number, a):
        v = float(a)
        return v if math.isfinite(v) else None
    return None


def parse_yesno(answer) -> bool | None:
    a = _clean(answer).lower()
    return True if a in ("yes", "y", "true", "1") else False if a in ("no", "n", "false", "0") else None


def _norm_choice(answer) -> str:
    return _clean(answer).casefold()


# ---- grading -------------------------------------------------------------------------------------------

def grade(question: Question, answer) -> tuple[bool, str]:
    """(correct, feedback). An answer that cannot be read is wrong, and the feedback says how to type it."""
    q = question
    if q.kind == "shape":
        got, what = parse_shape(answer), "a shape"
        ok = got is not None and got == tuple(q.expected)
    elif q.kind == "sign":
        got, what = parse_sign(answer), "a sign"
        ok = got == q.expected
    elif q.kind == "number":
        got, what = parse_number(answer), "a number"
        ok = got is not None and abs(got - float(q.expected)) <= q.tolerance
    elif q.kind == "yesno":
        got, what = parse_yesno(answer), "yes or no"
        ok = got is not None and got == q.expected
    elif q.kind == "choice":
        got, what = _norm_choice(answer), "one of the choices"
        ok = got in q.expected
        got = got or None
    else:
        raise ValueError(f"unknown question kind {q.kind!r}")
    if got is None:
        return False, f"That could not be read as {what}. {q.hint}".strip()
    if ok:
        return True, f"Correct: {q.answer}. {q.explanation}".strip()
    return False, f"Not quite: the answer is {q.answer}. {q.explanation}".strip()


# ---- questions ---------------------------------------------------------------------------------------

SHAPE_STEPS = ("q", "k", "v", "w_q", "w_v", "scores", "weights", "context", "w_o", "output", "q_heads",
               "v_heads", "concat", "x", "pe", "w_b", "w_a_q", "masked_scores")


def _facts_line(trace: Trace) -> str:
    f = trace.facts
    parts = [f"the sentence has n = {trace.n} token{'s' if trace.n != 1 else ''}"]
    for name in ("d_model", "d_in", "d_k", "d_v"):
        if name in f:
            parts.append(f"{name} = {f[name]}")
    if "n_heads" in f:
        parts.append(f"{f['n_heads']} head{'s' if f['n_heads'] != 1 else ''}")
    return "Here " + ", ".join(parts) + "."


def shape_question(trace: Trace, rng: np.random.Generator) -> Question | None:
    keys = [k for k in SHAPE_STEPS if k in trace and trace[k].value.ndim >= 2]
    if not keys:
        return None
    step = trace[keys[int(rng.integers(len(keys)))]]
    shape = step.shape
    return Question(
        f"shape:{step.key}", "shape",
        f"{_facts_line(trace)} What is the shape of {step.title} ({step.key})?",
        " × ".join(map(str, shape)), tuple(shape),
        explanation=f"{step.key} is {step.shape_text}" + (f": {step.why}" if step.why else "."),
        step_key=step.key, hint="Type the sizes, e.g. 4x6 or (4, 6).")


def _weights_rows(trace: Trace):
    """[(head index or None, row i)] of the weights that have some weight (not fully masked)."""
    w = trace["weights"].value
    blocks = w if w.ndim == 3 else w[None]
    return [(h if w.ndim == 3 else None, i) for h, block in enumerate(blocks)
            for i in range(block.shape[0]) if block[i].sum() > 0]


def attends_question(trace: Trace, rng: np.random.Generator) -> Question | None:
    if "weights" not in trace or trace["weights"].value.ndim not in (2, 3) or trace.n < 2:
        return None
    w = trace["weights"].value
    rows = _weights_rows(trace)
    clear = [(h, i) for h, i in rows if _gap(w[h, i] if h is not None else w[i]) > 1e-3]
    rows = clear or rows                                        # a row with one clear winner, if there is one
    if not rows:
        return None
    h, i = rows[int(rng.integers(len(rows)))]
    row = w[h, i] if h is not None else w[i]
    labels = trace.token_labels()
    top = float(row.max())
    best = [j for j in range(len(row)) if row[j] >= top - 1e-12]
    accepted = {labels[j].casefold() for j in best}
    for j in best:                              # the bare word, when each of its positions is a best one
        positions = [p for p, t in enumerate(trace.tokens) if t == trace.tokens[j]]
        if all(p in best for p in positions):
            accepted.add(trace.tokens[j].casefold())
    where = f"In head {h}, which" if h is not None else "Which"
    ranked = sorted(range(len(row)), key=lambda j: -row[j])[:4]
    return Question(
        f"attends:{h}:{i}", "choice",
        f"{where} word does “{labels[i]}” (row {i} of the attention weights) attend to most?",
        f"“{labels[best[0]]}”", frozenset(accepted), choices=tuple(labels),
        explanation="Row " + str(i) + " of the weights: " + ", ".join(f"{labels[j]} {row[j]:.3f}" for j in ranked)
                    + (" …" if len(row) > 4 else "") + ". The largest weight is the word it attends to most"
                    + (f" (a tie: {', '.join(labels[j] for j in best)} all count)." if len(best) > 1 else "."),
        step_key="weights", cell=(i,) if h is None else (h, i), hint="Pick one of the words.")


def _gap(values: np.ndarray) -> float:
    """How far the largest value is ahead of the second (0 for a tie or a single value)."""
    top = np.sort(np.asarray(values, float))[::-1]
    return float(top[0] - top[1]) if top.size > 1 else 0.0


def _sign(v: float) -> str:
    return "zero" if abs(v) <= ZERO else "positive" if v > 0 else "negative"


def _sign_question(qid, prompt, value, explanation, step_key, cell) -> Question:
    return Question(qid, "sign", prompt, _sign(value), _sign(value), choices=("positive", "negative", "zero"),
                    explanation=f"{explanation} (= {value:.4g})", step_key=step_key, cell=tuple(cell),
                    hint="Answer positive, negative or zero.")


def gradient_sign_question(trace: Trace, rng: np.random.Generator) -> Question | None:
    """The sign of an entry of a "dL/d…" gradient Step when the trace has one, else of a derivative
    of the forward pass with a closed form (∂O/∂W_O, ∂C/∂A, ∂A/∂S)."""
    grads = [s for s in trace if s.key.startswith("dL/d") and s.value.size]
    if grads:
        step = grads[int(rng.integers(len(grads)))]
        flat = np.flatnonzero(np.abs(step.value) > 1e-9)
        pick = int(flat[rng.integers(flat.size)]) if flat.size else int(rng.integers(step.value.size))
        cell = np.unravel_index(pick, step.shape)
        index = ", ".join(map(str, cell))
        return _sign_question(f"sign:{step.key}:{index}",
                              f"Is {step.key}[{index}] (how the loss changes when that entry grows) positive, "
                              f"negative or zero?", float(step.value[cell]),
                              f"{step.title}: {step.why}".strip(), step.key, cell)
    closed_forms = ((output_sign_question, ("output", "w_o")), (context_sign_question, ("context", "weights")),
                    (softmax_sign_question, ("weights",)))
    options = [f for f, need in closed_forms if all(k in trace for k in need) and "n_heads" in trace.facts]
    return options[int(rng.integers(len(options)))](trace, rng) if options else None


def output_sign_question(trace: Trace, rng) -> Question:
    """O = C W_O (+ b_O), so ∂O_ij/∂(W_O)_cj = C_ic."""
    c_key = "concat" if "concat" in trace else "context"
    c = trace[c_key].value                                                # (n, H·d_v)
    i, col, j = (int(rng.integers(s)) for s in (c.shape[0], c.shape[1], trace["output"].shape[1]))
    return _sign_question(f"sign:dO/dW_O:{i},{j},{col}",
                          f"If W_O[{col},{j}] grows a little, does output[{i},{j}] (word “{trace.token_labels()[i]}”) "
                          f"go up (positive), down (negative), or stay (zero)? That is the sign of "
                          f"∂O[{i},{j}]/∂W_O[{col},{j}].", float(c[i, col]),
                          f"O = C W_O, so ∂O[{i},{j}]/∂W_O[{col},{j}] = C[{i},{col}], the context entry it multiplies",
                          c_key, (i, col))


def context_sign_question(trace: Trace, rng) -> Question:
    """C = A V, so ∂C_id/∂A_im = V_md."""
    v = trace["v_heads" if "v_heads" in trace else "v"].value            # (h?, n, d_v)
    h = int(rng.integers(v.shape[0])) if v.ndim == 3 else None
    vv = v[h] if h is not None else v
    i, m, d = int(rng.integers(trace.n)), int(rng.integers(vv.shape[0])), int(rng.integers(vv.shape[1]))
    labels = trace.token_labels()
    head = f" in head {h}" if h is not None else ""
    return _sign_question(f"sign:dC/dA:{h},{i},{m},{d}",
                          f"If “{labels[i]}” attended a little more to “{labels[m]}”{head} (A[{i},{m}] grows), would "
                          f"context[{i},{d}] go up, down or stay? Give the sign of ∂C[{i},{d}]/∂A[{i},{m}].",
                          float(vv[m, d]),
                          f"C = A V, so ∂C[{i},{d}]/∂A[{i},{m}] = V[{m},{d}], the value it mixes in",
                          "v_heads" if h is not None else "v", ((h,) if h is not None else ()) + (m, d))


def softmax_sign_question(trace: Trace, rng) -> Question:
    """A = softmax(S/T) per row: ∂A_ij/∂S_ij' = A_ij (δ_jj' − A_ij') / T."""
    from .explain import settings_of
    t = settings_of(trace, trace.facts.get("config")).temperature
    rows = _weights_rows(trace)
    w = trace["weights"].value
    h, i = rows[int(rng.integers(len(rows)))]
    row = w[h, i] if h is not None else w[i]
    j, j2 = int(rng.integers(len(row))), int(rng.integers(len(row)))
    if rng.random() < 0.4:
        j2 = j
    value = row[j] * ((j == j2) - row[j2]) / t
    labels = trace.token_labels()
    head = f" in head {h}" if h is not None else ""
    src = trace.facts.get("softmax_input", "scores")
    return _sign_question(f"sign:dA/dS:{h},{i},{j},{j2}",
                          f"Row {i} (“{labels[i]}”){head}: if the score for key “{labels[j2]}” grows a little, does "
                          f"the weight on “{labels[j]}” go up, down or stay? Give the sign of "
                          f"∂A[{i},{j}]/∂S[{i},{j2}].", float(value),
                          "Softmax: ∂A_ij/∂S_ij' = A_ij(δ_jj' − A_ij')/T: raising a score takes weight from every "
                          "other key of the row and gives it to its own (a hidden key has weight 0 and stays 0)",
                          src, ((h,) if h is not None else ()) + (i, j2))


def row_sum_question(trace: Trace, rng: np.random.Generator) -> Question | None:
    if "weights" not in trace or trace["weights"].value.ndim not in (2, 3):
        return None
    w = trace["weights"].value
    blocks = w if w.ndim == 3 else w[None]
    empty = [(h, i) for h, b in enumerate(blocks) for i in range(b.shape[0]) if b[i].sum() == 0]
    cells = empty if empty and rng.random() < 0.5 else [(h, i) for h in range(blocks.shape[0])
                                                        for i in range(blocks.shape[1])]
    h, i = cells[int(rng.integers(len(cells)))]
    total = float(blocks[h, i].sum())
    head = f" in head {h}" if w.ndim == 3 else ""
    why = ("Every key is hidden from this query, so the safe softmax leaves the row at zeros." if total == 0 else
           "Softmax makes each row a probability distribution over the keys, whatever the scores.")
    return Question(f"rowsum:{h}:{i}", "number",
                    f"What do the attention weights of row {i} (“{trace.token_labels()[i]}”){head} add up to?",
                    f"{total:.4g}", total, tolerance=1e-3, explanation=why, step_key="weights",
                    cell=(h, i) if w.ndim == 3 else (i,), hint="Type a number, e.g. 0.5.")


def column_sum_question(trace: Trace, rng: np.random.Generator) -> Question | None:
    if "weights" not in trace or trace["weights"].value.ndim not in (2, 3) or trace.n < 2:
        return None
    w = trace["weights"].value
    h = int(rng.integers(w.shape[0])) if w.ndim == 3 else None
    block = w[h] if h is not None else w                                  # (n_q, n_k)
    j = int(rng.integers(block.shape[1]))
    total = float(block[:, j].sum())
    yes = abs(total - 1) < 1e-9
    head = f" in head {h}" if h is not None else ""
    return Question(f"colsum:{h}:{j}", "yesno",
                    f"Does column {j} of the attention weights{head} (how much every word attends to "
                    f"“{trace.token_labels()[j]}”) sum to 1?",
                    "yes" if yes else "no", yes, choices=("yes", "no"),
                    explanation=f"It sums to {total:.4g}. Rows sum to 1 (each query's distribution); columns "
                                f"need not: a popular key collects more than 1, an ignored one less.",
                    step_key="weights", cell=(j,) if h is None else (h, j), hint="Answer yes or no.")


def which_head_question(trace: Trace, rng: np.random.Generator) -> Question | None:
    if "weights" not in trace or trace["weights"].value.ndim != 3 or trace.n < 2:
        return None
    w = trace["weights"].value                                           # (h, n, n)
    pairs = [(i, j) for i in range(trace.n) for j in range(trace.n) if _gap(w[:, i, j]) > 1e-3]
    if not pairs:
        return None
    i, j = pairs[int(rng.integers(len(pairs)))]
    col = w[:, i, j]
    best = [h for h in range(len(col)) if col[h] >= col.max() - 1e-12]
    accepted = frozenset(a for h in best for a in (f"head {h}", str(h), f"h{h}", f"head{h}"))
    labels = trace.token_labels()
    return Question(f"head:{i},{j}", "choice",
                    f"Which head puts the most weight from “{labels[i]}” onto “{labels[j]}”?",
                    f"head {best[0]}", accepted,
                    choices=tuple(f"head {h}" for h in range(len(col))),
                    explanation="Weight from row " + str(i) + " to key " + str(j) + " by head: "
                                + ", ".join(f"head {h} {col[h]:.3f}" for h in range(len(col)))
                                + ". Each head has its own W_Q, W_K, W_V, so each attends in its own way.",
                    step_key="weights", cell=(best[0], i, j), hint="Pick a head, e.g. head 0.")


def masked_weight_question(trace: Trace, rng: np.random.Generator) -> Question | None:
    if "mask" not in trace:
        return None
    hidden = np.argwhere(trace["mask"].value == 0)
    if not hidden.size:
        return None
    i, j = (int(v) for v in hidden[int(rng.integers(len(hidden)))])
    labels = trace.token_labels()
    return Question(f"masked:{i},{j}", "number",
                    f"The mask hides key “{labels[j]}” from query “{labels[i]}”. What attention weight does "
                    f"row {i} give to key {j}?", "0", 0.0, tolerance=1e-9,
                    explanation="The hidden score becomes −∞, and exp(−∞) = 0: exactly zero weight.",
                    step_key="weights", cell=(i, j), hint="Type a number.")


def scaled_score_question(trace: Trace, rng: np.random.Generator) -> Question | None:
    if "scaled_scores" not in trace or "scores" not in trace:
        return None
    s = trace["scores"].value
    cell = tuple(int(rng.integers(n)) for n in s.shape)
    d_k = trace.facts.get("d_k", trace["q_heads" if "q_heads" in trace else "q"].shape[-1])
    value = float(trace["scaled_scores"].value[cell])
    index = ",".join(map(str, cell))
    return Question(f"scaled:{index}", "number",
                    f"The raw score S[{index}] = {s[cell]:.3f} and d_k = {d_k}. What is the scaled score?",
                    f"{value:.3f}", value, tolerance=max(5e-3, 1e-2 * abs(value)),
                    explanation=f"Scaled dot product: S / √d_k = {s[cell]:.3f} / {math.sqrt(d_k):.3f}.",
                    step_key="scaled_scores", cell=cell, hint="Type a number, e.g. 0.25.")


def parameter_count_question(trace: Trace, rng: np.random.Generator) -> Question | None:
    keys = [k for k in ("w_q", "w_k", "w_v", "w_o") if k in trace]
    if not keys:
        return None
    step = trace[keys[int(rng.integers(len(keys)))]]
    count = int(step.value.size)
    return Question(f"params:{step.key}", "number",
                    f"{_facts_line(trace)} How many numbers does {step.title} hold?",
                    str(count), float(count), tolerance=0.5,
                    explanation=f"{step.key} is {step.shape_text} = {count} numbers, whatever the sentence length.",
                    step_key=step.key, hint="Type a whole number.")


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
