"""Inside a transformer: the block's residual add, the next token's temperature and top-k, and the heads that copy.
Each is computed from the settings' forward pass (the block runs on its X; the small language model reads its
sentence, each distinct word one token), the distractors what wrong mental models give.

    residual_add     X₀′[i,j] = X₀[i,j] + O₀[i,j] in a pre-norm block (the block page's defaults: one layer,
                     LayerNorm, the MLP on): not O₀ alone (the attention replacing the row), not N(X₀) + O₀ (the add
                     made to the normalised copy), not N(X₀ + O₀) (post-norm's)
    temperature_prob p(token) = softmax(z / T) at a pinned T, for the token most probable at T = 1: not p itself
                     (dividing the probabilities by T and renormalising gives them back), not p / T, not softmax(z·T)
    top_k_prob       p′ of the most probable token after top-k (at T = 1 or a pinned T, top-p off): p′ = p / (the
                     kept tokens' p summed); not p (not renormalised), not 1/k (the kept tokens equally likely), not k·p
    copy_head        role "previous": the layer-0 head with the largest mean weight on the token just before (Olsson
                     et al.'s previous-token score); role "induction": the layer-1 head that puts the most of the last
                     position's attention on the tokens right after the last word's earlier occurrences

    >>> from attention_core import Config, run_forward
    >>> trace = run_forward(Config(sentence="the cat sat on the mat and the cat sat on the"))
    >>> p = copy_head_poll(trace, np.random.default_rng(0), {"role": "induction"})
    >>> p.choices[p.answer]
    'head 2'
"""
from __future__ import annotations

import functools

import numpy as np

from ...forward.config import Config
from ...forward.stages import run_forward
from ...forward.trace import Trace
from ...forward.transformer import Arch, sidebar_block
from ...math.limits import ConfigError
from ...math.norms import layer_norm_parts
from ...math.sampling import softmax_t
from ..quiz.notation import config_of, num
from .pins import Unfit, pin_int, pin_text
from .poll import Poll, count_choices, make

TEMPERATURES = ("0.25", "0.5", "2", "3")      # T a temperature question may pin (the page's slider reaches 0 … 3)
TOP_KS = range(2, 11)                         # k a top-k question may pin
ROLES = ("previous", "induction")
BLOCK = Arch()                                # the block page's defaults: one pre-norm layer, LayerNorm, the MLP on


@functools.lru_cache(maxsize=16)
def _block(config: Config) -> Trace:
    """The block on the settings' X at the page's defaults (same Config, same numbers: cached per process)."""
    return sidebar_block(config, BLOCK, run_forward(config))


def _lm(trace: Trace):
    """The next-token page's trace of the sentence (T = 1, top-k and top-p off, nothing generated); None when the
    model cannot read it."""
    from ...lessons.next_token import next_token_trace
    config = config_of(trace)
    if config is None:
        return None
    try:
        return next_token_trace(config.sentence, 1.0, 0, 1.0, 0, 0)
    except ConfigError:
        return None


def _quoted(f: dict, j: int) -> str:
    return f"“{f['labels'][j]}”" if j < len(f["words"]) else f"⟨token {j}⟩"


def _signed(x: float) -> str:
    """A term after a plus sign: '0.5', '(−0.5)'."""
    return f"({num(x)})" if x < 0 else num(x)


def _sentence(f: dict) -> str:
    return " ".join(f["labels"][i] for i in f["ids"])


# ---- residual_add ---------------------------------------------------------------------------------------------

def _residual_wrong(b: Trace) -> list[np.ndarray]:
    """O₀ alone, N(X₀) + O₀, N(X₀ + O₀) (γ = 1, β = 0 at the block's start), X₀ alone: each the whole matrix."""
    x, o, n = b["x"].value, b["l0.attn"].value, b["l0.ln1"].value
    return [o, n + o, layer_norm_parts(x + o, BLOCK.eps)[0], x]


def residual_add_poll(trace: Trace, rng: np.random.Generator, at: dict | None = None) -> Poll | None:
    """at: {"row": i, "col": j}: the stream after layer 0's attention, X₀′[i,j]."""
    config = config_of(trace)
    if config is None:
        return None
    b = _block(config)
    x, o, mid = b["x"].value, b["l0.attn"].value, b["l0.mid"].value
    n, d = x.shape
    wrong = _residual_wrong(b)
    fits = lambda c: count_choices(num(mid[c]), [num(w[c]) for w in wrong]) >= 4
    if at:
        i, j = pin_int(at, "row", 0, n - 1), pin_int(at, "col", 0, d - 1)
        cells = [(r, c) for r in range(n) for c in range(d) if (i is None or r == i) and (j is None or c == j)]
    else:
        cells = [(int(k) // d, int(k) % d) for k in rng.permutation(n * d)]
    cell = next((c for c in cells if fits(c)), None)       # the first whose four choices differ (a drawn order)
    if cell is None:
        if at:
            raise Unfit("the pinned cell leaves too few choices")
        return None
    i, j = cell
    word = b.token_labels()[i]
    wrong = [num(w[i, j]) for w in wrong]
    prompt = (f"In a pre-norm block (one layer, LayerNorm, the MLP on), layer 0's attention reads the normalised copy "
              f"N(X₀) and writes O₀ = MHA(N(X₀)). For token {i} (“{word}”), X₀[{i},{j}] = {num(x[i, j])} and "
              f"O₀[{i},{j}] = {num(o[i, j])}. What is X₀′[{i},{j}], the residual stream after the attention?")
    explanation = (f"X₀′ = X₀ + MHA(N(X₀)): the attention's output is added to the stream itself, so X₀′[{i},{j}] = "
                   f"{num(x[i, j])} + {_signed(o[i, j])} = {num(mid[i, j])}. {wrong[0]} would be the attention replacing "
                   f"the row (it adds to it); {wrong[1]} adds O₀ to the normalised copy N(X₀) (only the sublayer reads "
                   f"that); {wrong[2]} normalises the sum, N(X₀ + O₀), as a post-norm block does.")
    return make("residual_add", prompt, num(mid[i, j]), wrong, explanation, rng, None)


# ---- temperature_prob, top_k_prob ------------------------------------------------------------------------------

def _first_asked(candidates, numbers, at, what: str):
    """(candidate, right, wrong) for the first candidate whose numbers(c) -> (right, [wrong …]) make four choices
    that differ as displayed (numbers gives None to skip one); None, or Unfit when the question is pinned."""
    for c in candidates:
        got = numbers(c)
        if got is not None and count_choices(num(got[0]), [num(w) for w in got[1]]) >= 4:
            return c, *got
    if at:
        raise Unfit(f"the pinned {what} leaves too few choices")
    return None


def temperature_prob_poll(trace: Trace, rng: np.random.Generator, at: dict | None = None) -> Poll | None:
    """at: {"temperature": T}: p of the token most probable at T = 1, at temperature T."""
    lm = _lm(trace)
    if lm is None:
        return None
    temps = [pin_text(at, "temperature", TEMPERATURES)] if at and "temperature" in at else \
        [TEMPERATURES[int(k)] for k in rng.permutation(len(TEMPERATURES))]
    f, z = lm.facts, lm["logits"].value
    p1 = softmax_t(z, 1.0)
    j = int(np.argmax(p1))
    asked = _first_asked(temps, lambda text: (softmax_t(z, float(text))[j], [
        p1[j], p1[j] / float(text), softmax_t(z * float(text), 1.0)[j]]), at, "temperature")
    if asked is None:
        return None
    text, right, wrong = asked
    token = _quoted(f, j)
    prompt = (f"The small language model reads “{_sentence(f)}”. At T = 1 its most probable next token is {token}: "
              f"logit z = {num(z[j])}, the largest, and p = softmax(z) = {num(p1[j])}. At temperature T = {text}, "
              f"what is p({token}) = softmax(z / T)?")
    explanation = (f"The logits are divided by T before softmax: p = softmax(z / {text}) gives {token} {num(right)}. "
                   f"{num(wrong[0])} is p at T = 1: dividing the probabilities by T and renormalising gives them back "
                   f"unchanged; {num(wrong[1])} is p / T (the probabilities would add up to 1 / T, not 1); "
                   f"{num(wrong[2])} multiplies the logits by T instead of dividing them.")
    return make("temperature_prob", prompt, num(right), [num(w) for w in wrong], explanation, rng, None)


def top_k_prob_poll(trace: Trace, rng: np.random.Generator, at: dict | None = None) -> Poll | None:
    """at: {"k": k, "temperature": T}: p′ of the most probable token when top-k keeps k tokens (T = 1 unless
    pinned, top-p off)."""
    lm = _lm(trace)
    if lm is None:
        return None
    temperature = pin_text(at, "temperature", TEMPERATURES) or "1"
    f, p = lm.facts, softmax_t(lm["logits"].value, float(temperature))
    order = sorted(range(p.size), key=lambda j: (-p[j], j))
    ks = [pin_int(at, "k", TOP_KS[0], TOP_KS[-1])] if at and "k" in at else \
        [int(k) for k in rng.permutation(list(TOP_KS))]
    j = order[0]
    kept_of = lambda k: float(sum(p[order[:k]]))
    asked = _first_asked(ks, lambda k: None if p[order[k - 1]] == p[order[k]] else   # a tie at the k-th: top-k
                         (p[j] / kept_of(k), [p[j], 1 / k, k * p[j]]), at, "k")     # keeps both, not k tokens
    if asked is None:
        return None
    k, right, wrong = asked
    kept = kept_of(k)
    listed = ", ".join(f"{_quoted(f, t)} {num(p[t])}" for t in order[:k])
    token = _quoted(f, j)
    prompt = (f"The small language model reads “{_sentence(f)}”. At T = {temperature} its {k} most probable next "
              f"tokens are {listed}. With top-k = {k} (top-p off), what is p′({token}), the probability the next "
              f"token is drawn with?")
    explanation = (f"Top-k keeps the {k} largest and renormalises: p′ = p / (the kept p summed) = {num(p[j])} / "
                   f"{num(kept)} = {num(right)}. {num(wrong[0])} is p before renormalising (the kept p′ must add up "
                   f"to 1); {num(wrong[1])} = 1/{k} makes the kept tokens equally likely (they keep their ratios); "
                   f"{num(wrong[2])} = {k} · p multiplies instead of renormalising.")
    return make("top_k_prob", prompt, num(right), [num(w) for w in wrong], explanation, rng, None)


# ---- copy_head ---------------------------------------------------------------------------------------------------

def copy_head_poll(trace: Trace, rng: np.random.Generator, at: dict | None = None) -> Poll | None:
    """at: {"role": "previous" | "induction"}: which head of the small language model does that job here."""
    lm = _lm(trace)
    if lm is None:
        return None
    f = lm.facts
    roles = [pin_text(at, "role", ROLES)] if at and "role" in at else [ROLES[int(k)] for k in rng.permutation(2)]
    fits = [r for r in roles if (f["n"] > 2 if r == "previous" else bool(f["targets"]))]
    if not fits:
        if at:
            raise Unfit("the sentence is too short, or its last word has no earlier occurrence")
        return None
    role = fits[0]
    if role == "previous":
        scores = list(f["previous"])
        prompt = (f"The small language model (2 layers of {len(scores)} heads, trained only to copy) reads "
                  f"“{_sentence(f)}”. Which head of layer 0 is its previous-token head: the one that puts, on average, "
                  f"the most of each position's attention on the token just before it?")
        said = "mean weight on the token just before, A_h[i,i−1] over i = 1 … n−1"
    else:
        scores = [h["on_targets"] for h in f["heads"]]
        where = ", ".join(f"{j} ({_quoted(f, f['ids'][j])})" for j in f["targets"])
        last = _quoted(f, f["ids"][-1])
        prompt = (f"The small language model (2 layers of {len(scores)} heads, trained only to copy) reads "
                  f"“{_sentence(f)}”. Its last word, {last}, came before; the tokens right after its earlier "
                  f"occurrences are at positions {where}. Which head of layer 1 is an induction head: the one that puts "
                  f"the most of the last position's attention on those positions?")
        said = "attention from the last position on those positions, summed"
    ranked = sorted(range(len(scores)), key=lambda h: (-scores[h], h))
    explanation = (f"Each head's {said}: " + ", ".join(f"head {h} {scores[h]:.2f}" for h in range(len(scores)))
                   + f". The largest is head {ranked[0]}'s.")
    return make("copy_head", prompt, f"head {ranked[0]}", [f"head {h}" for h in ranked[1:]], explanation, rng,
                None)
