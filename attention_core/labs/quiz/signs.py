"""Sign questions: does a number go up, down or stay when another grows a little? Each asks about one
derivative, names it, and is graded by that derivative in closed form from the trace: ∂O/∂W_O, ∂C/∂S̃ and
∂A/∂S̃ through the softmax, or an entry of a "dL/d…" gradient step when the trace has one. tests/test_quiz.py
checks each against finite differences through softmax.

    >>> sign_of(0.0), sign_of(-3.0)
    ('zero', 'negative')
"""
from __future__ import annotations

import numpy as np

from ...forward.trace import Trace
from .grading import Question
from .notation import at, by_head, divided_by_t, groups, num, softmax_scores, temperature_of

ZERO = 1e-12                     # |value| at or below this counts as zero for a sign question
UP_DOWN = ("up (positive)", "down (negative)", "stay (zero)")    # how a sign question about a change is answered


def sign_of(v: float) -> str:
    return "zero" if abs(v) <= ZERO else "positive" if v > 0 else "negative"


def sign_question(qid, prompt, value, explanation, step_key, cell, up_down: bool = True) -> Question:
    """A sign question. up_down: it asks whether something goes up, down or stays, and is answered so."""
    sign = sign_of(value)
    choices = UP_DOWN if up_down else ("positive", "negative", "zero")
    answer = choices[("positive", "negative", "zero").index(sign)]
    return Question(qid, "sign", prompt, answer, sign, choices=choices, explanation=explanation,
                    step_key=step_key, cell=tuple(cell), value=float(value),
                    hint="Answer up, down or stay." if up_down else "Answer positive, negative or zero.")


TRIES = 48          # cells a sign question draws before it settles for the clearest one
CLEAR = 1e-4        # |answer| at or above this is a clear sign; far below it the sign is the rounding's


def pick_clear(rng, draw, value_of, exactly_zero):
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
        return sign_question(f"sign:{step.key}:{index}",
                              f"Is {step.title}[{index}] (how the loss L changes when {of}[{index}] grows a "
                              f"little) positive, negative or zero?", value,
                              f"{step.title}[{index}] = {num(value)}. {step.why}".strip(), step.key, cell,
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
    a = by_head(trace["weights"].value)                                  # (H, n, n)
    n_out = trace["output"].shape[1]
    picked = pick_clear(rng, lambda: tuple(int(rng.integers(s)) for s in (cat.shape[0], cat.shape[1], n_out)),
                   lambda cell: cat[cell[0], cell[1]], lambda cell: not a[:, cell[0]].any())
    if picked is None:
        return None
    (i, r, j), value = picked
    heads = c_key == "concat"
    d_v = trace.facts.get("d_v", cat.shape[1])
    h = r // d_v if heads else None
    entry = at("C", h, i, r - h * d_v) if heads else at("C", None, i, r)
    bias = " + b_O" if "b_o" in trace else ""
    out, w = at("O", None, i, j), at("W_O", None, r, j)
    why = (f"O = [C_0 | … | C_{{H−1}}] W_O{bias}: column {r} of the concatenation is column {r - h * d_v} of "
           f"head {h}'s context, so ∂{out}/∂{w} = {entry} = {num(value)}" if heads else
           f"O = C W_O{bias}, so ∂{out}/∂{w} = {entry}, the context entry that {w} multiplies: {num(value)}")
    if value == 0:
        why += f". Every key is hidden from query {i}, so its context row is all zeros and {out} stays"
    return sign_question(f"sign:dO/dW_O:{i},{j},{r}",
                          f"If {w} grows a little, does {out} (the output row of “{trace.token_labels()[i]}”) go up, "
                          f"down or stay (the sign of ∂{out}/∂{w})?", value, why + ".", c_key, (i, r, j))


def softmax_blocks(trace: Trace):
    """(symbol, S̃ (H, n, n), A (H, n, n), V (H, n, d_v), C (H, n, d_v), T): what a softmax question needs,
    one block per head (one block with one head); S̃ is whichever scores softmax reads (S, Ŝ, S + B, Ŝ + B or S̃).
    V's block h is the one query head h reads: V_{⌊h/g⌋}, each KV head repeated for its g query heads."""
    symbol, s = softmax_scores(trace)
    v = trace["v_heads" if "v_heads" in trace else "v"].value if "context" in trace else None
    if v is not None and v.ndim == 3:
        v = np.repeat(v, groups(trace), axis=0)                         # (H_kv, n, d_v) -> (H, n, d_v)
    return (symbol, by_head(s), by_head(trace["weights"].value), None if v is None else by_head(v),
            by_head(trace["context"].value) if "context" in trace else None, temperature_of(trace))


def context_change(trace: Trace, h: int, i: int, m: int, d: int) -> float:
    """∂C[i,d]/∂S̃[i,m] in head block h (0 with one head): A[i,m] · (V[m,d] − C[i,d]) / T."""
    _, _, a, v, c, t = softmax_blocks(trace)
    return float(a[h, i, m] * (v[h, m, d] - c[h, i, d]) / t)


def context_sign_question(trace: Trace, rng) -> Question | None:
    """Attend a little more to key m: raise the score softmax reads, S̃[i,m] (Ŝ or S without a mask), a
    little. Row i of A = softmax(S̃[i,:] / T) still sums to 1: key m gains weight that the other keys
    lose, so C[i,:] = Σ_j A[i,j] V[j,:] moves toward V[m,:]:

        ∂C[i,d]/∂S̃[i,m] = A[i,m] · (V[m,d] − C[i,d]) / T

    Not V[m,d] alone: that is ∂C[i,d]/∂A[i,m] with the row's other weights held still, which softmax never does."""
    _, s, a, v, c, t = softmax_blocks(trace)
    rows = [(h, i) for h in range(s.shape[0]) for i in range(s.shape[1]) if np.isfinite(s[h, i]).any()]
    if not rows:
        return None

    def draw():
        h, i = rows[int(rng.integers(len(rows)))]
        keys = np.flatnonzero(np.isfinite(s[h, i]))                       # the keys query i may see
        return h, i, int(keys[rng.integers(keys.size)]), int(rng.integers(v.shape[2]))

    picked = pick_clear(rng, draw, lambda cell: a[cell[0], cell[1], cell[2]] * (v[cell[0], cell[2], cell[3]]
                                                                          - c[cell[0], cell[1], cell[3]]) / t,
                   lambda cell: np.isfinite(s[cell[0], cell[1]]).sum() == 1)
    return None if picked is None else context_question_at(trace, *picked[0])


def context_question_at(trace: Trace, h: int, i: int, m: int, d: int) -> Question:
    """The context question about query i, key m (visible to i), dimension d, in head block h (0 with one head)."""
    symbol, s, a, v, c, t = softmax_blocks(trace)
    value = context_change(trace, h, i, m, d)
    head = h if trace["weights"].value.ndim == 3 else None
    g = groups(trace)
    kv = None if head is None else head // g                             # the KV head query head h reads
    labels = trace.token_labels()
    score, a_im, v_md, c_id = at(symbol, head, i, m), at("A", head, i, m), at("V", kv, m, d), at("C", head, i, d)
    big_a, big_c = (x if head is None else f"{x}_{head}" for x in ("A", "C"))
    big_v = "V" if kv is None else f"V_{kv}"
    where = f"In head {head}: " if head is not None else ""
    shared = (f" Query head {head} reads KV head ⌊{head}/{g}⌋ = {kv}, so its values are {big_v}."
              if g > 1 and head is not None else "")
    over_t, over_number = divided_by_t(t)
    if np.isfinite(s[h, i]).sum() == 1:                                   # the row's only visible key
        prompt = (f"{where}query “{labels[i]}” may see key “{labels[m]}” only (the mask hides the others). "
                  f"Raise its score {score} a little and re-run softmax: does {c_id}, dimension {d} of the context "
                  f"of “{labels[i]}”, go up, down or stay (the sign of ∂{c_id}/∂{score})?")
        why = (f"Row {i} has one visible key, so {a_im} = 1 whatever its score, {big_c}[{i},:] = {big_v}[{m},:], "
               f"and {c_id} stays at {num(c[h, i, d])}: ∂{c_id}/∂{score} = {a_im} · ({v_md} − {c_id}){over_t} = 0.")
    else:
        prompt = (f"{where}if “{labels[i]}” attended a little more to “{labels[m]}” (raise the score {score} a "
                  f"little, and softmax gives key {m} more of row {i}'s weight), would {c_id}, dimension {d} of the "
                  f"context of “{labels[i]}”, go up, down or stay (the sign of ∂{c_id}/∂{score})?")
        why = (f"Softmax keeps row {i} of {big_a} summing to 1: the weight key {m} gains, the other keys lose, so "
               f"{big_c}[{i},:] = Σ_j {big_a}[{i},j] {big_v}[j,:] moves toward {big_v}[{m},:]. "
               f"∂{c_id}/∂{score} = {a_im} · ({v_md} − {c_id}){over_t} = {num(a[h, i, m])} × ({num(v[h, m, d])} − "
               f"{num(c[h, i, d])}){over_number} = {num(value)}. What decides is whether {v_md} is above or below "
               f"{c_id}, not the sign of {v_md} alone (that would hold the row's other weights still, and "
               f"softmax never does).")
    why += shared
    prompt = prompt[0].upper() + prompt[1:]
    return sign_question(f"sign:dC/dS:{head},{i},{m},{d}", prompt, value, why, "context",
                          ((head,) if head is not None else ()) + (i, m, d))


def softmax_sign_question(trace: Trace, rng) -> Question | None:
    """Raise one score of row i, S̃[i,k] (the scores softmax reads), a little: how does the weight A[i,j]
    move? A[i,:] = softmax(S̃[i,:] / T), so ∂A[i,j]/∂S̃[i,k] = A[i,j] (δ_jk − A[i,k]) / T."""
    symbol, s, a, _, _, t = softmax_blocks(trace)                        # S̃, A: (H, n, n)
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

    picked = pick_clear(rng, draw, lambda x: a[x[0], x[1], x[2]] * ((x[2] == x[3]) - a[x[0], x[1], x[3]]) / t,
                   exactly_zero)
    if picked is None:
        return None
    (h, i, j, k), value = picked
    head = h if trace["weights"].value.ndim == 3 else None
    labels = trace.token_labels()
    a_ij, a_ik, s_ik = at("A", head, i, j), at("A", head, i, k), at(symbol, head, i, k)
    over_t, over_number = divided_by_t(t)
    where = f"In head {head}, row" if head is not None else "Row"
    whose = "its own weight" if j == k else f"the weight on “{labels[j]}”"
    prompt = (f"{where} {i} of {'A' if head is None else f'A_{head}'} (query “{labels[i]}”): raise the score {s_ik} (key “{labels[k]}”) a little and "
              f"re-run softmax. Does {a_ij}, {whose}, go up, down or stay (the sign of ∂{a_ij}/∂{s_ik})?")
    if not np.isfinite(s[h, i, j]):
        why = (f"Key “{labels[j]}” is hidden from query {i} ({at(symbol, head, i, j)} = −∞): {a_ij} = 0 whatever "
               f"the visible scores do, so it stays 0.")
    elif np.isfinite(s[h, i]).sum() == 1:                               # the lone key: j == k
        why = f"Row {i} has one visible key: {a_ij} = 1 whatever its score, so it stays 1."
    elif j == k:
        why = (f"Softmax: ∂{a_ij}/∂{s_ik} = {a_ij} · (1 − {a_ij}){over_t} = {num(a[h, i, j])} × "
               f"{num(1 - a[h, i, j])}{over_number} = {num(value)}: raising a key's score gives it weight "
               f"taken from the row's other keys.")
    else:
        why = (f"Softmax: ∂{a_ij}/∂{s_ik} = −{a_ij} · {a_ik}{over_t} = −{num(a[h, i, j])} × {num(a[h, i, k])}"
               f"{over_number} = {num(value)}: raising the score of key {k} gives it weight taken from every other "
               f"key of row {i}, “{labels[j]}” included.")
    return sign_question(f"sign:dA/dS:{head},{i},{j},{k}", prompt, value, why, "weights",
                          ((head,) if head is not None else ()) + (i, j, k))
