"""Each head's role as a number (training/real/head_roles.py), against hand computations: a 4-token pattern worked
out on paper, and the real heads of a tiny checkpoint summed cell by cell with plain loops."""
from __future__ import annotations

import numpy as np
import pytest

from attention_core.training.real import load_model, run_real
from attention_core.training.real.head_roles import (
    head_roles,
    induction,
    previous_token,
    repeated_random_ids,
    role_scores,
    sink,
    special_ids,
    targets,
)
from tests.real_checkpoints import SENTENCE, numpy_checkpoint

pytest.importorskip("tokenizers")
pytest.importorskip("safetensors")

# one head, 4 tokens "a b a b" (ids 5 6 5 6): rows sum to 1, causal
A = np.array([[1.0, 0.0, 0.0, 0.0],
              [0.3, 0.7, 0.0, 0.0],
              [0.5, 0.2, 0.3, 0.0],
              [0.1, 0.6, 0.2, 0.1]])[None, None]
IDS = [5, 6, 5, 6]


def test_the_scores_of_a_pattern_worked_out_by_hand():
    # previous token: A[1,0], A[2,1], A[3,2] = 0.3, 0.2, 0.2 -> 0.7 / 3
    assert previous_token(A)[0, 0] == pytest.approx(0.7 / 3)
    # sink: A[1,0], A[2,0], A[3,0] = 0.3, 0.5, 0.1 -> 0.3
    assert sink(A)[0, 0] == pytest.approx(0.3)
    # induction: query 2 ("a") has target j = 1 (x_0 = "a"), weight 0.2; query 3 ("b") has j = 2 (x_1 = "b"),
    # weight 0.2; queries 0 and 1 have none -> (0.2 + 0.2) / 2
    assert [tuple(map(int, ij)) for ij in zip(*targets(IDS).nonzero())] == [(2, 1), (3, 2)]
    assert induction(A, IDS)[0, 0] == pytest.approx(0.2)
    assert induction(A, [1, 2, 3, 4])[0, 0] == 0.0            # nothing repeats: no target, no score
    assert previous_token(A[..., :1, :1])[0, 0] == sink(A[..., :1, :1])[0, 0] == 0.0


@pytest.fixture(scope="module", params=["llama", "gpt2"])
def model(request, tmp_path_factory):
    return load_model(numpy_checkpoint(tmp_path_factory.mktemp(request.param), request.param))


def test_a_real_models_heads_against_loops_over_their_weights(model):
    trace = run_real(model, SENTENCE + " and the cat sat on the log")
    ids, got = trace.facts["ids"], role_scores(trace)
    for l, att in enumerate(trace.facts["attention"]):
        for h in range(model.config.n_heads):
            a = att["weights"].value[h]
            n = len(ids)
            assert got["prev_token"][l, h] == pytest.approx(sum(a[i, i - 1] for i in range(1, n)) / (n - 1))
            assert got["sink"][l, h] == pytest.approx(sum(a[i, 0] for i in range(1, n)) / (n - 1))
            on = [sum(a[i, j] for j in range(1, i + 1) if ids[j - 1] == ids[i]) for i in range(n)
                  if any(ids[j - 1] == ids[i] for j in range(1, i + 1))]
            assert on and got["induction"][l, h] == pytest.approx(sum(on) / len(on))


def test_the_repeated_random_tokens_and_the_roles_trace(model):
    ids = repeated_random_ids(model)
    prefix = special_ids(model)
    half = (len(ids) - len(prefix)) // 2
    body = ids[len(prefix):]
    assert ids[:len(prefix)] == prefix and body[:half] == body[half:] and len(set(body[:half])) == half
    assert len(ids) <= model.config.n_ctx and not set(body) & set(prefix)
    assert all(model.tokenizer.piece(i) is not None for i in body), "every random token is one the tokenizer has"
    roles = head_roles(model)
    assert roles.facts["ids"] == tuple(ids) and roles.facts["half"] == half
    scores = role_scores(roles.facts["run"])
    for key in ("prev_token", "induction", "sink"):
        assert roles[key].value.shape == (model.config.n_layers, model.config.n_heads)
        np.testing.assert_array_equal(roles[key].value, scores[key])
        assert ((roles[key].value >= 0) & (roles[key].value <= 1 + 1e-6)).all()
