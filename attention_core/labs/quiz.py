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
"""
from __future__ import annotations

import math
import re
import zlib
from dataclasses import dataclass

import numpy as np

from ..math import notation
from ..forward.trace import Trace

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
    value: float | None = None         # a sign question's number: the derivative whose sign is graded


# ---- normalising answers -------------------------------------------------------------------------------

def _clean(answer) -> str:
    return " ".join(str(answer)[:MAX_ANSWER].replace("−", "-").split()).strip().strip("\"'“”‘’").strip()


def parse_shape(answer) -> tuple[int, ...] | None:
    """'4x6', '(4, 6)', '4 × 6', '[4,6]', 'n=4 × d_k=6' -> (4, 6); None if no number is there."""
    numbers = re.findall(r"\d+", _clean(answer))
    return tuple(int(x) for x in numbers) if numbers else None


_SIGNS = {"positive": ("positive", "pos", "+", ">0", "> 0", "plus", "greater than zero", "above zero",
                       "up", "goes up", "up (positive)", "increase", "increases", "rises", "grows"),
          "negative": ("negative", "neg", "-", "<0", "< 0", "minus", "less than zero", "below zero",
                       "down", "goes down", "down (negative)", "decrease", "decreases", "falls", "shrinks"),
          "zero": ("zero", "0", "=0", "= 0", "0.0", "none", "neither",
                   "stay", "stays", "stay (zero)", "unchanged", "no change", "stays the same")}


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

_READERS = {"shape": (parse_shape, "a shape"), "sign": (parse_sign, "a sign"), "number": (parse_number, "a number"),
            "yesno": (parse_yesno, "yes or no"), "choice": (lambda a: _norm_choice(a) or None, "one of the choices")}


def readable(question: Question, answer) -> bool:
    """Whether the answer can be read as the question's kind of answer (a page asks again if not)."""
    if question.kind not in _READERS:
        raise ValueError(f"unknown question kind {question.kind!r}")
    return _READERS[question.kind][0](answer) is not None


def grade(question: Question, answer) -> tuple[bool, str]:
    """(correct, feedback). An answer that cannot be read is wrong, and the feedback says how to type it."""
    q = question
    if not readable(q, answer):
        return False, f"That could not be read as {_READERS[q.kind][1]}. {q.hint}".strip()
    got = _READERS[q.kind][0](answer)
    ok = (got == tuple(q.expected) if q.kind == "shape" else
          abs(got - float(q.expected)) <= q.tolerance if q.kind == "number" else
          got in q.expected if q.kind == "choice" else got == q.expected)
    if ok:
        return True, f"Correct: {q.answer}. {q.explanation}".strip()
    return False, f"Not quite: the answer is {q.answer}. {q.explanation}".strip()


# ---- the notation, in plain text (docs/notation.md: the quiz writes text, not LaTeX) -------------------

PLAIN_SCORES = {notation.S: "S", notation.S_SCALED: "Ŝ", notation.S_MASKED: "S̃",
                rf"{notation.S} + {notation.B}": "S + B", rf"{notation.S_SCALED} + {notation.B}": "Ŝ + B"}
SCORE_STEPS = {"scores": "S", "scaled_scores": "Ŝ", "masked_scores": "S̃"}    # step key -> its symbol
SYMBOLS = {"x_embed": "X_emb", "pe": "PE", "x": "X", "w_q": "W_Q", "w_k": "W_K", "w_v": "W_V", "w_o": "W_O",
           "q": "Q", "k": "K", "v": "V", "q_heads": "Q", "k_heads": "K", "v_heads": "V", **SCORE_STEPS,
           "q_rot": "Q^R", "k_rot": "K^R", "alibi": "B",
           "weights": "A", "context": "C", "concat": "[C_0 | … | C_{H−1}]", "output": "O", "mask": "M",
           "w_b": "W", "w_a_q": "W_1", "w_a_k": "W_2"}
KV_STEPS = ("k_heads", "v_heads", "k_rot")          # one block per KV head: H_kv of them with grouped-query attention


def score_step_symbol(trace: Trace, key: str) -> str:
    """The symbol of a scores step: S, Ŝ, S̃, or ALiBi's S + B / Ŝ + B (the scores it was added to)."""
    if key == "biased_scores":
        return f"{SCORE_STEPS[trace[key].inputs[0]]} + B"
    return SCORE_STEPS[key]
UP_DOWN = ("up (positive)", "down (negative)", "stay (zero)")     # how a sign question about a change is answered


def _at(symbol: str, h: int | None, *index: int) -> str:
    """'A[3,0]', or head h's 'A_1[3,0]' (A_h, C_h, S_h are head h's, as docs/notation.md writes them); a sum
    such as ALiBi's 'Ŝ + B' is bracketed, each term with the head: '(Ŝ_1 + B_1)[3,0]'."""
    sub = "" if h is None else f"_{h}"
    where = f"[{','.join(map(str, index))}]"
    if " + " in symbol:
        return "(" + " + ".join(f"{part}{sub}" for part in symbol.split(" + ")) + ")" + where
    return f"{symbol}{sub}{where}"


def _config(trace: Trace):
    return trace.facts.get("config")


def _groups(trace: Trace) -> int:
    """g = H / H_kv: the query heads that share one KV head (1 without grouped-query attention)."""
    config = _config(trace)
    return config.n_heads // config.kv_heads if config is not None else 1


def _heads_letter(step, trace: Trace | None = None) -> str:
    """What counts a step's head axis: H, or H_kv for K's and V's blocks under grouped-query attention."""
    return "H_kv" if trace is not None and step.key in KV_STEPS and _groups(trace) > 1 else "H"


def _name(step, trace: Trace | None = None) -> str:
    """A step as the quiz names it: its symbol ('C'; 'A_h of all H = 2 heads, stacked'; 'K_h of all H_kv = 2 KV
    heads, stacked'), else its title."""
    symbol = SYMBOLS.get(step.key)
    if step.key == "biased_scores" and trace is not None:
        symbol = f"({score_step_symbol(trace, step.key)})"
    if symbol is None:
        return step.title
    if step.axes[:1] != ("head",):
        return symbol
    if _heads_letter(step, trace) == "H_kv":
        return f"{symbol}_h of all H_kv = {step.shape[0]} KV heads, stacked"
    if step.key in ("w_b", "w_a_q", "w_a_k"):                  # a head's own score parameters: W^(h), W_1^(h)
        return f"{symbol}^(h) of all H = {step.shape[0]} heads, stacked"
    return f"{symbol}_h of all H = {step.shape[0]} heads, stacked"


def _shape_text(step, trace: Trace | None = None) -> str:
    """'n=4 × d_v=4'; a head axis is counted by H (or H_kv): 'H=2 × n=4 × n=4'."""
    return " × ".join(f"{_heads_letter(step, trace) if a == 'head' else a}={s}"
                      for a, s in zip(step.axes, step.shape)) or "scalar"


def softmax_scores(trace: Trace) -> tuple[str, np.ndarray]:
    """(symbol, values (H?, n, n)): the scores softmax reads under the trace's settings: S, Ŝ or S̃
    (notation.softmax_input), before the division by T."""
    key = trace.facts.get("softmax_input") or next(k for k in ("masked_scores", "biased_scores", "scaled_scores",
                                                                 "scores") if k in trace)
    config = trace.facts.get("config")
    return (PLAIN_SCORES[notation.softmax_input(config)] if config is not None else score_step_symbol(trace, key)), \
        trace[key].value


def _temperature(trace: Trace) -> float:
    config = trace.facts.get("config")
    if config is not None:
        return float(config.temperature)
    from ..explanations import settings_of
    return settings_of(trace).temperature


def _by_head(values: np.ndarray) -> np.ndarray:
    """(n, ·) -> (1, n, ·); (H, n, ·) stays: every head's block, one indexing for both."""
    return values if values.ndim == 3 else values[None]


def _num(x: float) -> str:
    """A number as the explanations write it: 4 significant digits, a true minus sign."""
    return f"{float(x):.4g}".replace("-", "−")


def _over_t(t: float) -> tuple[str, str]:
    """(' / T', ' / 0.5') when T ≠ 1, else ('', ''): formulas divide by T only when it is not 1."""
    return (" / T", f" / {t:g}") if t != 1 else ("", "")


def symbols_caption(config) -> str:
    """The quiz page's line on its symbols, built from the settings: which scores softmax reads here, and the
    letters RoPE, ALiBi, grouped KV heads and the sliding window bring in."""
    reads = PLAIN_SCORES[notation.softmax_input(config)]
    text = ("Symbols as everywhere in the app: S raw scores, Ŝ = S/√d_k scaled, S̃ masked; softmax reads the last of "
            f"these your settings make, here {reads}. A = softmax(…) the weights, C = A V the context, O the output; "
            "with H heads, head h = 0 … H−1 has its own A_h and C_h. Tokens, keys and dimensions are counted from 0.")
    if config.positional == "rope":
        text += " RoPE: the scores read Q^R and K^R, the rows of Q and K rotated by their positions."
    if config.positional == "alibi":
        text += " ALiBi: B is the bias (B_h)[i,j] = −m_h |i − j|, added to the scores before the mask."
    if config.kv_heads < config.n_heads:
        g = config.n_heads // config.kv_heads
        text += (f" H_kv = {config.kv_heads} key/value head{'s' if config.kv_heads > 1 else ''}: query head h reads "
                 f"K_⌊h/g⌋ and V_⌊h/g⌋, g = H / H_kv = {g}.")
    if config.mask == "sliding_window":
        text += f" The sliding window W = {config.window} hides key j from query i unless 0 ≤ i − j < W."
    return text


# ---- questions ---------------------------------------------------------------------------------------

SHAPE_STEPS = ("q", "k", "v", "w_q", "w_v", "scores", "weights", "context", "w_o", "output", "q_heads",
               "v_heads", "concat", "x", "pe", "w_b", "w_a_q", "masked_scores", "w_k", "k_heads", "k_rot", "alibi")


def _facts_line(trace: Trace) -> str:
    f = trace.facts
    parts = [f"the sentence has n = {trace.n} token{'s' if trace.n != 1 else ''}"]
    for name in ("d_model", "d_in", "d_k", "d_v"):
        if name in f:
            parts.append(f"{name} = {f[name]}")
    if "n_heads" in f:
        parts.append(f"H = {f['n_heads']} head{'s' if f['n_heads'] != 1 else ''}")
        config = _config(trace)
        if config is not None and config.kv_heads < config.n_heads:
            parts.append(f"H_kv = {config.kv_heads} key/value head{'s' if config.kv_heads != 1 else ''} "
                         f"({'multi' if config.kv_heads == 1 else 'grouped'}-query attention)")
    return "Here " + ", ".join(parts) + "."


def shape_question(trace: Trace, rng: np.random.Generator) -> Question | None:
    keys = [k for k in SHAPE_STEPS if k in trace and trace[k].value.ndim >= 2]
    if not keys:
        return None
    step = trace[keys[int(rng.integers(len(keys)))]]
    shape, name = step.shape, _name(step, trace)
    return Question(
        f"shape:{step.key}", "shape",
        f"{_facts_line(trace)} What is the shape of {name}" + (f" ({step.title})?" if name != step.title else "?"),
        " × ".join(map(str, shape)), tuple(shape),
        explanation=f"{name} is {_shape_text(step, trace)}" + (f": {step.why}" if step.why else "."),
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
    a = "A" if h is None else f"A_{h}"
    where = f"In head {h}, which" if h is not None else "Which"
    ranked = sorted(range(len(row)), key=lambda j: -row[j])[:4]
    return Question(
        f"attends:{h}:{i}", "choice",
        f"{where} word does “{labels[i]}” attend to most (the largest weight in row {i} of {a})?",
        f"“{labels[best[0]]}”", frozenset(accepted), choices=tuple(labels),
        explanation=f"Row {i} of {a}: " + ", ".join(f"{labels[j]} {row[j]:.3f}" for j in ranked)
                    + (" …" if len(row) > 4 else "") + ". The largest weight is the word it attends to most"
                    + (f" (a tie: {', '.join(labels[j] for j in best)} all count)." if len(best) > 1 else "."),
        step_key="weights", cell=(i,) if h is None else (h, i), hint="Pick one of the words.")


def _gap(values: np.ndarray) -> float:
    """How far the largest value is ahead of the second (0 for a tie or a single value)."""
    top = np.sort(np.asarray(values, float))[::-1]
    return float(top[0] - top[1]) if top.size > 1 else 0.0


def _sign(v: float) -> str:
    return "zero" if abs(v) <= ZERO else "positive" if v > 0 else "negative"


def _sign_question(qid, prompt, value, explanation, step_key, cell, up_down: bool = True) -> Question:
    """A sign question. up_down: it asks whether something goes up, down or stays, and is answered so."""
    sign = _sign(value)
    choices = UP_DOWN if up_down else ("positive", "negative", "zero")
    answer = choices[("positive", "negative", "zero").index(sign)]
    return Question(qid, "sign", prompt, answer, sign, choices=choices, explanation=explanation,
                    step_key=step_key, cell=tuple(cell), value=float(value),
                    hint="Answer up, down or stay." if up_down else "Answer positive, negative or zero.")


TRIES = 48          # cells a sign question draws before it settles for the clearest one
CLEAR = 1e-4        # |answer| at or above this is a clear sign; far below it the sign is the rounding's


def _pick(rng, draw, value_of, exactly_zero):
    """(cell, value): the first drawn cell whose value is clear, |value| ≥ CLEAR, or exactly 0 for a
    reason the question states (exactly_zero(cell)); else the drawn cell of largest |value|. None when
    even that one is within ZERO of 0 for no stated reason (its sign would be rounding noise)."""
    drawn = []
    for _ in range(TRIES):
        cell = draw()
        value = float(value_of(cell))
        if abs(value) >= CLEAR or (value == 0 and exactly_zero(cell)):
            return cell, value
        drawn.append((abs(value), cell, value))
    _, cell, value = max(drawn, key=lambda c: c[0])
    return (cell, value) if abs(value) > ZERO else None


def gradient_sign_question(trace: Trace, rng: np.random.Generator) -> Question | None:
    """The sign of an entry of a "dL/d…" gradient Step when the trace has one, else of a derivative
    of the forward pass with a closed form (∂O/∂W_O, ∂C/∂S̃ through the softmax, ∂A/∂S̃)."""
    grads = [s for s in trace if s.key.startswith("dL/d") and s.value.size]
    if grads:
        step = grads[int(rng.integers(len(grads)))]
        flat = np.flatnonzero(np.abs(step.value) > 1e-9)
        pick = int(flat[rng.integers(flat.size)]) if flat.size else int(rng.integers(step.value.size))
        cell = np.unravel_index(pick, step.shape)
        index = ",".join(map(str, cell))
        of = step.title.removeprefix("∂L/∂") if step.title.startswith("∂L/∂") else step.key.removeprefix("dL/d")
        value = float(step.value[cell])
        return _sign_question(f"sign:{step.key}:{index}",
                              f"Is {step.title}[{index}] (how the loss L changes when {of}[{index}] grows a "
                              f"little) positive, negative or zero?", value,
                              f"{step.title}[{index}] = {_num(value)}. {step.why}".strip(), step.key, cell,
                              up_down=False)
    closed_forms = ((output_sign_question, ("output", "w_o", "weights")),
                    (context_sign_question, ("context", "weights")), (softmax_sign_question, ("weights",)))
    options = [f for f, need in closed_forms if all(k in trace for k in need) and "n_heads" in trace.facts]
    for k in rng.permutation(len(options)):                  # one at random; the next if it has no clear cell
        if (q := options[k](trace, rng)) is not None:
            return q
    return None


def output_sign_question(trace: Trace, rng) -> Question | None:
    """O = [C_0 | … | C_{H−1}] W_O (+ b_O) is linear in W_O: ∂O[i,j]/∂W_O[r,j] = the concatenation's
    entry [i, r], which is C_h[i, r − h·d_v] with h = r // d_v (C[i, r] with one head)."""
    c_key = "concat" if "concat" in trace else "context"
    cat = trace[c_key].value                                              # (n, H·d_v)
    a = _by_head(trace["weights"].value)                                  # (H, n, n)
    n_out = trace["output"].shape[1]
    picked = _pick(rng, lambda: tuple(int(rng.integers(s)) for s in (cat.shape[0], cat.shape[1], n_out)),
                   lambda cell: cat[cell[0], cell[1]], lambda cell: not a[:, cell[0]].any())
    if picked is None:
        return None
    (i, r, j), value = picked
    heads = c_key == "concat"
    d_v = trace.facts.get("d_v", cat.shape[1])
    h = r // d_v if heads else None
    entry = _at("C", h, i, r - h * d_v) if heads else _at("C", None, i, r)
    bias = " + b_O" if "b_o" in trace else ""
    out, w = _at("O", None, i, j), _at("W_O", None, r, j)
    why = (f"O = [C_0 | … | C_{{H−1}}] W_O{bias}: column {r} of the concatenation is column {r - h * d_v} of "
           f"head {h}'s context, so ∂{out}/∂{w} = {entry} = {_num(value)}" if heads else
           f"O = C W_O{bias}, so ∂{out}/∂{w} = {entry}, the context entry that {w} multiplies: {_num(value)}")
    if value == 0:
        why += f". Every key is hidden from query {i}, so its context row is all zeros and {out} stays"
    return _sign_question(f"sign:dO/dW_O:{i},{j},{r}",
                          f"If {w} grows a little, does {out} (the output row of “{trace.token_labels()[i]}”) go up, "
                          f"down or stay (the sign of ∂{out}/∂{w})?", value, why + ".", c_key, (i, r, j))


def _softmax_blocks(trace: Trace):
    """(symbol, S̃ (H, n, n), A (H, n, n), V (H, n, d_v), C (H, n, d_v), T): what a softmax question needs,
    one block per head (one block with one head); S̃ is whichever scores softmax reads (S, Ŝ, S + B, Ŝ + B or S̃).
    V's block h is the one query head h reads: V_{⌊h/g⌋}, each KV head repeated for its g query heads."""
    symbol, s = softmax_scores(trace)
    v = trace["v_heads" if "v_heads" in trace else "v"].value if "context" in trace else None
    if v is not None and v.ndim == 3:
        v = np.repeat(v, _groups(trace), axis=0)                         # (H_kv, n, d_v) -> (H, n, d_v)
    return (symbol, _by_head(s), _by_head(trace["weights"].value), None if v is None else _by_head(v),
            _by_head(trace["context"].value) if "context" in trace else None, _temperature(trace))


def context_change(trace: Trace, h: int, i: int, m: int, d: int) -> float:
    """∂C[i,d]/∂S̃[i,m] in head block h (0 with one head): A[i,m] · (V[m,d] − C[i,d]) / T."""
    _, _, a, v, c, t = _softmax_blocks(trace)
    return float(a[h, i, m] * (v[h, m, d] - c[h, i, d]) / t)


def context_sign_question(trace: Trace, rng) -> Question | None:
    """Attend a little more to key m: raise the score softmax reads, S̃[i,m] (Ŝ or S without a mask), a
    little. Row i of A = softmax(S̃[i,:] / T) still sums to 1: key m gains weight that the other keys
    lose, so C[i,:] = Σ_j A[i,j] V[j,:] moves toward V[m,:]:

        ∂C[i,d]/∂S̃[i,m] = A[i,m] · (V[m,d] − C[i,d]) / T

    Not V[m,d] alone: that is ∂C[i,d]/∂A[i,m] with the row's other weights held still, which softmax never does."""
    _, s, a, v, c, t = _softmax_blocks(trace)
    rows = [(h, i) for h in range(s.shape[0]) for i in range(s.shape[1]) if np.isfinite(s[h, i]).any()]
    if not rows:
        return None

    def draw():
        h, i = rows[int(rng.integers(len(rows)))]
        keys = np.flatnonzero(np.isfinite(s[h, i]))                       # the keys query i may see
        return h, i, int(keys[rng.integers(keys.size)]), int(rng.integers(v.shape[2]))

    picked = _pick(rng, draw, lambda cell: a[cell[0], cell[1], cell[2]] * (v[cell[0], cell[2], cell[3]]
                                                                          - c[cell[0], cell[1], cell[3]]) / t,
                   lambda cell: np.isfinite(s[cell[0], cell[1]]).sum() == 1)
    return None if picked is None else context_question_at(trace, *picked[0])


def context_question_at(trace: Trace, h: int, i: int, m: int, d: int) -> Question:
    """The context question about query i, key m (visible to i), dimension d, in head block h (0 with one head)."""
    symbol, s, a, v, c, t = _softmax_blocks(trace)
    value = context_change(trace, h, i, m, d)
    head = h if trace["weights"].value.ndim == 3 else None
    g = _groups(trace)
    kv = None if head is None else head // g                             # the KV head query head h reads
    labels = trace.token_labels()
    score, a_im, v_md, c_id = _at(symbol, head, i, m), _at("A", head, i, m), _at("V", kv, m, d), _at("C", head, i, d)
    big_a, big_c = (x if head is None else f"{x}_{head}" for x in ("A", "C"))
    big_v = "V" if kv is None else f"V_{kv}"
    where = f"In head {head}: " if head is not None else ""
    shared = (f" Query head {head} reads KV head ⌊{head}/{g}⌋ = {kv}, so its values are {big_v}."
              if g > 1 and head is not None else "")
    over_t, over_number = _over_t(t)
    if np.isfinite(s[h, i]).sum() == 1:                                   # the row's only visible key
        prompt = (f"{where}query “{labels[i]}” may see key “{labels[m]}” only (the mask hides the others). "
                  f"Raise its score {score} a little and re-run softmax: does {c_id}, dimension {d} of the context "
                  f"of “{labels[i]}”, go up, down or stay (the sign of ∂{c_id}/∂{score})?")
        why = (f"Row {i} has one visible key, so {a_im} = 1 whatever its score, {big_c}[{i},:] = {big_v}[{m},:], "
               f"and {c_id} stays at {_num(c[h, i, d])}: ∂{c_id}/∂{score} = {a_im} · ({v_md} − {c_id}){over_t} = 0.")
    else:
        prompt = (f"{where}if “{labels[i]}” attended a little more to “{labels[m]}” (raise the score {score} a "
                  f"little, and softmax gives key {m} more of row {i}'s weight), would {c_id}, dimension {d} of the "
                  f"context of “{labels[i]}”, go up, down or stay (the sign of ∂{c_id}/∂{score})?")
        why = (f"Softmax keeps row {i} of {big_a} summing to 1: the weight key {m} gains, the other keys lose, so "
               f"{big_c}[{i},:] = Σ_j {big_a}[{i},j] {big_v}[j,:] moves toward {big_v}[{m},:]. "
               f"∂{c_id}/∂{score} = {a_im} · ({v_md} − {c_id}){over_t} = {_num(a[h, i, m])} × ({_num(v[h, m, d])} − "
               f"{_num(c[h, i, d])}){over_number} = {_num(value)}. What decides is whether {v_md} is above or below "
               f"{c_id}, not the sign of {v_md} alone (that would hold the row's other weights still, and "
               f"softmax never does).")
    why += shared
    prompt = prompt[0].upper() + prompt[1:]
    return _sign_question(f"sign:dC/dS:{head},{i},{m},{d}", prompt, value, why, "context",
                          ((head,) if head is not None else ()) + (i, m, d))


def softmax_sign_question(trace: Trace, rng) -> Question | None:
    """Raise one score of row i, S̃[i,k] (the scores softmax reads), a little: how does the weight A[i,j]
    move? A[i,:] = softmax(S̃[i,:] / T), so ∂A[i,j]/∂S̃[i,k] = A[i,j] (δ_jk − A[i,k]) / T."""
    symbol, s, a, _, _, t = _softmax_blocks(trace)                        # S̃, A: (H, n, n)
    rows = [(h, i) for h in range(s.shape[0]) for i in range(s.shape[1]) if np.isfinite(s[h, i]).any()]
    if not rows:
        return None

    def draw():
        h, i = rows[int(rng.integers(len(rows)))]
        keys = np.flatnonzero(np.isfinite(s[h, i]))                       # a visible key's score is raised
        k = int(keys[rng.integers(keys.size)])
        return h, i, k if rng.random() < 0.4 else int(rng.integers(s.shape[2])), k

    def exactly_zero(x):
        h, i, j, k = x
        return not np.isfinite(s[h, i, j]) or np.isfinite(s[h, i]).sum() == 1    # a hidden j, or a lone key

    picked = _pick(rng, draw, lambda x: a[x[0], x[1], x[2]] * ((x[2] == x[3]) - a[x[0], x[1], x[3]]) / t,
                   exactly_zero)
    if picked is None:
        return None
    (h, i, j, k), value = picked
    head = h if trace["weights"].value.ndim == 3 else None
    labels = trace.token_labels()
    a_ij, a_ik, s_ik = _at("A", head, i, j), _at("A", head, i, k), _at(symbol, head, i, k)
    over_t, over_number = _over_t(t)
    where = f"In head {head}, row" if head is not None else "Row"
    whose = "its own weight" if j == k else f"the weight on “{labels[j]}”"
    prompt = (f"{where} {i} of {'A' if head is None else f'A_{head}'} (query “{labels[i]}”): raise the score {s_ik} (key “{labels[k]}”) a little and "
              f"re-run softmax. Does {a_ij}, {whose}, go up, down or stay (the sign of ∂{a_ij}/∂{s_ik})?")
    if not np.isfinite(s[h, i, j]):
        why = (f"Key “{labels[j]}” is hidden from query {i} ({_at(symbol, head, i, j)} = −∞): {a_ij} = 0 whatever "
               f"the visible scores do, so it stays 0.")
    elif np.isfinite(s[h, i]).sum() == 1:                               # the lone key: j == k
        why = f"Row {i} has one visible key: {a_ij} = 1 whatever its score, so it stays 1."
    elif j == k:
        why = (f"Softmax: ∂{a_ij}/∂{s_ik} = {a_ij} · (1 − {a_ij}){over_t} = {_num(a[h, i, j])} × "
               f"{_num(1 - a[h, i, j])}{over_number} = {_num(value)}: raising a key's score gives it weight "
               f"taken from the row's other keys.")
    else:
        why = (f"Softmax: ∂{a_ij}/∂{s_ik} = −{a_ij} · {a_ik}{over_t} = −{_num(a[h, i, j])} × {_num(a[h, i, k])}"
               f"{over_number} = {_num(value)}: raising the score of key {k} gives it weight taken from every other "
               f"key of row {i}, “{labels[j]}” included.")
    return _sign_question(f"sign:dA/dS:{head},{i},{j},{k}", prompt, value, why, "weights",
                          ((head,) if head is not None else ()) + (i, j, k))


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
    a = f"A_{h}" if w.ndim == 3 else "A"
    where = f" in head {h}" if w.ndim == 3 else ""
    why = ("Every key is hidden from this query, so the safe softmax leaves the row at zeros." if total == 0 else
           "Softmax makes this row a probability distribution over the keys it may see, whatever the scores.")
    return Question(f"rowsum:{h}:{i}", "number",
                    f"What do the attention weights of row {i} of {a} (query “{trace.token_labels()[i]}”){where} "
                    f"add up to?",
                    f"{total:.4g}", total, tolerance=1e-3, explanation=why, step_key="weights",
                    cell=(h, i) if w.ndim == 3 else (i,), hint="Type a number, e.g. 0.5.")


ROWS_NOT_COLUMNS = "quiz_rows_not_columns"      # its words: claims.py, the quiz's section


def column_sum_question(trace: Trace, rng: np.random.Generator) -> Question | None:
    if "weights" not in trace or trace["weights"].value.ndim not in (2, 3) or trace.n < 2:
        return None
    from ..forward.claims import CLAIMS, say
    w = trace["weights"].value
    h = int(rng.integers(w.shape[0])) if w.ndim == 3 else None
    block = w[h] if h is not None else w                                  # (n_q, n_k)
    j = int(rng.integers(block.shape[1]))
    total = float(block[:, j].sum())
    yes = abs(total - 1) < 1e-9
    a = f"A_{h}" if h is not None else "A"
    config = trace.facts.get("config")
    rows = (say(ROWS_NOT_COLUMNS, config) if config is not None else
            CLAIMS[ROWS_NOT_COLUMNS].text if w.any() else CLAIMS[ROWS_NOT_COLUMNS].otherwise)
    return Question(f"colsum:{h}:{j}", "yesno",
                    f"Does column {j} of {a} (how much every query attends to key “{trace.token_labels()[j]}”) "
                    f"sum to 1?",
                    "yes" if yes else "no", yes, choices=("yes", "no"),
                    explanation=f"It sums to {total:.4g}. {rows}.",
                    step_key="weights", cell=(j,) if h is None else (h, j), hint="Answer yes or no.")


def which_head_question(trace: Trace, rng: np.random.Generator) -> Question | None:
    if "weights" not in trace or trace["weights"].value.ndim != 3 or trace.n < 2:
        return None
    w = trace["weights"].value                                           # (H, n, n)
    pairs = [(i, j) for i in range(trace.n) for j in range(trace.n) if _gap(w[:, i, j]) > 1e-3]
    if not pairs:
        return None
    i, j = pairs[int(rng.integers(len(pairs)))]
    col = w[:, i, j]                                                     # (H,)
    best = [h for h in range(len(col)) if col[h] >= col.max() - 1e-12]
    accepted = frozenset(a for h in best for a in (f"head {h}", str(h), f"h{h}", f"head{h}"))
    labels = trace.token_labels()
    return Question(f"head:{i},{j}", "choice",
                    f"Which head puts the most weight from “{labels[i]}” onto “{labels[j]}”: for which h "
                    f"(0 … {len(col) - 1}) is A_h[{i},{j}] largest?",
                    f"head {best[0]}", accepted,
                    choices=tuple(f"head {h}" for h in range(len(col))),
                    explanation=f"A_h[{i},{j}] by head: " + ", ".join(f"head {h} {col[h]:.3f}" for h in range(len(col)))
                                + ". " + _heads_differ(trace),
                    step_key="weights", cell=(best[0], i, j), hint="Pick a head, e.g. head 0.")


def _heads_differ(trace: Trace) -> str:
    """Why the heads attend differently, under the trace's settings (grouped KV heads, ALiBi's slopes)."""
    config, g = _config(trace), _groups(trace)
    if g > 1:
        why = (f"Each head has its own columns of W_Q; the g = {g} query heads of a group share one KV head's columns "
               f"of W_K, W_V (query head h reads KV head ⌊h/{g}⌋), so heads of a group differ through their queries "
               f"alone.")
    else:
        why = "Each head has its own columns of W_Q, W_K, W_V, so each attends in its own way."
    if config is not None and config.positional == "alibi":
        why += " With ALiBi each head also has its own slope m_h: a larger slope lowers distant keys' scores more."
    return why


def _hidden_because(trace: Trace, i: int, j: int) -> str:
    """Why the mask hides key j from query i: '(M[3,0] = 0)', with the window's rule when it is a sliding window."""
    config = _config(trace)
    if config is not None and config.mask == "sliding_window":
        w = config.window
        rule = (f"i − j = {i - j} ≥ W = {w}" if i - j >= w else f"j = {j} comes after i = {i}")
        return f"the sliding window (0 ≤ i − j < W) hides it: {rule}, so M[{i},{j}] = 0"
    return f"M[{i},{j}] = 0"


def masked_weight_question(trace: Trace, rng: np.random.Generator) -> Question | None:
    if "mask" not in trace:
        return None
    hidden = np.argwhere(trace["mask"].value == 0)
    if not hidden.size:
        return None
    i, j = (int(v) for v in hidden[int(rng.integers(len(hidden)))])
    labels = trace.token_labels()
    heads = trace["weights"].value.ndim == 3
    a = "A_h" if heads else "A"
    return Question(f"masked:{i},{j}", "number",
                    f"The mask hides key “{labels[j]}” from query “{labels[i]}” ({_hidden_because(trace, i, j)}). What weight "
                    f"{a}[{i},{j}] does row {i} give to key {j}" + (" in each head h?" if heads else "?"),
                    "0", 0.0, tolerance=1e-9,
                    explanation=f"The masked score S̃{'_h' if heads else ''}[{i},{j}] is −∞, and exp(−∞) = 0: exactly zero weight"
                                + (", in every head (they share the mask)." if heads else "."),
                    step_key="weights", cell=(i, j), hint="Type a number.")


def scaled_score_question(trace: Trace, rng: np.random.Generator) -> Question | None:
    if "scaled_scores" not in trace or "scores" not in trace:
        return None
    s = trace["scores"].value                                            # (H?, n, n)
    cell = tuple(int(rng.integers(n)) for n in s.shape)
    d_k = trace.facts.get("d_k", trace["q_heads" if "q_heads" in trace else "q"].shape[-1])
    value = float(trace["scaled_scores"].value[cell])
    head, index = (cell[0], cell[1:]) if s.ndim == 3 else (None, cell)
    raw, scaled = _at("S", head, *index), _at("Ŝ", head, *index)
    return Question(f"scaled:{','.join(map(str, cell))}", "number",
                    f"The raw score {raw} = {s[cell]:.3f} and d_k = {d_k}. What is the scaled score {scaled}?",
                    f"{value:.3f}", value, tolerance=max(5e-3, 1e-2 * abs(value)),
                    explanation=f"Scaled dot product: {scaled} = {raw} / √d_k = {s[cell]:.3f} / {math.sqrt(d_k):.3f}, "
                                f"where {_raw_scores(trace, head)}.",
                    step_key="scaled_scores", cell=cell, hint="Type a number, e.g. 0.25.")


def _raw_scores(trace: Trace, head: int | None) -> str:
    """'S = Q Kᵀ', 'S_1 = Q^R_1 (K^R_0)ᵀ': what the raw dot-product scores of a head multiply, under the settings
    (RoPE's rotated rows; the KV head ⌊h/g⌋ query head h reads)."""
    config = _config(trace)
    r = "^R" if config is not None and config.positional == "rope" else ""
    sub = "" if head is None else f"_{head}"
    k_sub = "" if head is None else f"_{head // _groups(trace)}"
    k = f"(K{r}{k_sub})" if r else f"K{k_sub}"
    text = f"S{sub} = Q{r}{sub} {k}ᵀ"
    if r:
        text += ", the rows of Q and K rotated by their positions (RoPE)"
    if head is not None and _groups(trace) > 1:
        text += f"; query head {head} reads KV head ⌊{head}/{_groups(trace)}⌋ = {head // _groups(trace)}"
    return text


def parameter_count_question(trace: Trace, rng: np.random.Generator) -> Question | None:
    keys = [k for k in ("w_q", "w_k", "w_v", "w_o") if k in trace]
    if not keys:
        return None
    step = trace[keys[int(rng.integers(len(keys)))]]
    count = int(step.value.size)
    return Question(f"params:{step.key}", "number",
                    f"{_facts_line(trace)} How many numbers does {_name(step, trace)} hold?",
                    str(count), float(count), tolerance=0.5,
                    explanation=f"{_name(step, trace)} is {_shape_text(step, trace)} = {count} numbers, whatever the "
                                f"sentence length" + (f": sharing KV heads shrinks W_K and W_V to the columns of "
                                                      f"H_kv = {_config(trace).kv_heads} head"
                                                      f"{'s' if _config(trace).kv_heads > 1 else ''}."
                                                      if step.key in ("w_k", "w_v") and _groups(trace) > 1 else "."),
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
