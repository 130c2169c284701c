"""The question bank's polls inside a transformer (attention_core/labs/polls/transformer_polls.py), each against a
hand computation: the block's layer 0 recomputed with numpy (LayerNorm, one head's attention with the forward
pass's W_Q, W_K, W_V, W_O, the residual add), the small model's logits turned into probabilities by hand, and its
heads' previous-token and induction scores read off its attention weights by hand."""
from __future__ import annotations

import math

import numpy as np
import pytest

from attention_core import Config, run_forward
from attention_core.labs.polls import PINS, available, make_poll
from attention_core.labs.quiz.notation import num

SENTENCE = "the cat sat on the mat and the cat sat on the"


@pytest.fixture(scope="module")
def trace():
    return run_forward(Config(sentence=SENTENCE))


def ln(x: np.ndarray, eps: float = 1e-5) -> np.ndarray:
    """LayerNorm of each row, γ = 1, β = 0, the biased variance (torch's nn.LayerNorm)."""
    mu = x.mean(axis=1, keepdims=True)
    return (x - mu) / np.sqrt(((x - mu) ** 2).mean(axis=1, keepdims=True) + eps)


def softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def block_by_hand(trace) -> tuple[np.ndarray, np.ndarray]:
    """(X₀, O₀ = MHA(N(X₀))): a pre-norm block's layer 0 on the forward pass's X, with its W_Q … W_O (one head)."""
    x = trace["x"].value
    n = ln(x)
    q, k, v = (n @ trace[w].value for w in ("w_q", "w_k", "w_v"))
    assert q.shape[1] == trace.facts["config"].d_k                           # one head
    o = softmax(q @ k.T / math.sqrt(q.shape[1])) @ v
    return x, (o @ trace["w_o"].value if "w_o" in trace else o)


def lm_by_hand(sentence: str = SENTENCE):
    """The small model on the sentence: its last position's logits and every layer's attention weights."""
    from attention_core.training.lm.model import lm_trace, sentence_ids
    from attention_core.lessons.next_token import lm_params
    ids, _, labels, _ = sentence_ids(sentence)
    block = lm_trace(lm_params(), ids, labels)
    return ids, labels, block["logits"].value[-1], [a["weights"].value for a in block.facts["attention"]]


def right(poll) -> str:
    return poll.choices[poll.answer]


def test_residual_add_is_x_plus_the_attentions_output(trace):
    x, o = block_by_hand(trace)                                             # X₀: the attention pages' X
    n = ln(x)
    poll = make_poll("residual_add", trace, 0, at={"row": "5", "col": "0"})
    assert right(poll) == num(x[5, 0] + o[5, 0]) == "−0.7539"
    assert set(poll.choices) == {num(x[5, 0] + o[5, 0]), num(o[5, 0]), num(n[5, 0] + o[5, 0]),
                                 num(ln(x + o)[5, 0])}                       # replaced, the normalised copy, post-norm
    assert "X₀[5,0] = −1.965" in poll.prompt and "O₀[5,0] = 1.211" in poll.prompt
    assert make_poll("residual_add", trace, 0, at={"row": "12", "col": "0"}) is None   # past the sentence


def test_temperature_prob_is_softmax_of_the_logits_over_t(trace):
    _, labels, z, _ = lm_by_hand()
    j = int(np.argmax(z))
    assert labels[j] == "mat"
    for t in ("0.5", "2"):
        poll = make_poll("temperature_prob", trace, 0, at={"temperature": t})
        p, pt = softmax(z)[j], softmax(z / float(t))[j]
        assert right(poll) == num(pt)
        assert set(poll.choices) == {num(pt), num(p), num(p / float(t)), num(softmax(z * float(t))[j])}
        assert f"T = {t}" in poll.prompt and num(p) in poll.prompt
    assert right(make_poll("temperature_prob", trace, 0, at={"temperature": "0.5"})) == "0.1123"
    assert make_poll("temperature_prob", trace, 0, at={"temperature": "0.7"}) is None     # not a T it asks


def test_top_k_prob_renormalises_the_kept(trace):
    _, labels, z, _ = lm_by_hand()
    p = softmax(z)
    top = np.argsort(-p)[:3]
    poll = make_poll("top_k_prob", trace, 0, at={"k": "3"})
    assert [labels[j] for j in top] == ["mat", "cat", "the"]
    assert right(poll) == num(p[top[0]] / p[top].sum()) == "0.405"
    assert set(poll.choices) == {"0.405", num(p[top[0]]), num(1 / 3), num(3 * p[top[0]])}
    assert make_poll("top_k_prob", trace, 0, at={"k": "1"}) is None


def test_copy_head_names_the_previous_token_and_the_induction_head(trace):
    ids, _, _, (a0, a1) = lm_by_hand()
    n = len(ids)
    previous = [np.mean([a0[h, i, i - 1] for i in range(1, n)]) for h in range(a0.shape[0])]
    targets = [j for j in range(1, n - 1) if ids[j - 1] == ids[-1]]          # right after an earlier “the”
    on_targets = [a1[h, -1, targets].sum() for h in range(a1.shape[0])]
    assert targets == [1, 5, 8]
    poll = make_poll("copy_head", trace, 0, at={"role": "previous"})
    assert right(poll) == f"head {int(np.argmax(previous))}" == "head 0"
    assert sorted(poll.choices) == ["head 0", "head 1", "head 2", "head 3"]
    poll = make_poll("copy_head", trace, 0, at={"role": "induction"})
    assert right(poll) == f"head {int(np.argmax(on_targets))}" == "head 2"
    assert "positions 1 (“cat”), 5 (“mat”), 8 (“cat”)" in poll.prompt
    plain = run_forward(Config())                                            # “I love you today”: no repeat
    assert make_poll("copy_head", plain, 0, at={"role": "induction"}) is None
    assert right(make_poll("copy_head", plain, 0, at={"role": "previous"})).startswith("head ")


def test_the_new_kinds_are_in_the_bank_and_draw_by_the_seed(trace):
    kinds = ("residual_add", "temperature_prob", "top_k_prob", "copy_head")
    assert set(kinds) <= set(available(trace)) and all(PINS[k] for k in kinds)
    for kind in kinds:
        a, b = make_poll(kind, trace, 3), make_poll(kind, trace, 3)
        assert a == b and a.kind == kind and len(set(a.choices)) == len(a.choices) >= 3
