"""The small LM's pieces: the torch module against the numpy forward pass, the copy task's batches, and the
heads' scores on hand-made attention patterns (and numpy against torch)."""
import numpy as np
import pytest

from attention_core.forward.transformer import Arch, init_params, lm_input, run_transformer
from attention_core.training.lm import model, scores, task, torch_model
from attention_core.training.lm.train import EVAL_SEED, init_params as lm_init

torch = pytest.importorskip("torch")

SENTENCE = "the cat sat on the mat and the cat sat on the"


@pytest.fixture(scope="module")
def trained():
    from attention_core.training.lm import shipped
    return shipped.load().params


@pytest.mark.parametrize("which", ["start", "trained"])
def test_torch_module_matches_the_numpy_forward_pass(which, trained):
    params = trained if which == "trained" else model.as_float64(lm_init(0))
    for ids in (model.sentence_ids(SENTENCE)[0], task.repeated_tokens(3, 1)[0]):
        labels = model.token_labels([])
        trace = model.lm_trace(params, ids, labels)
        logits, weights = torch_model.forward(params, ids, with_weights=True)
        np.testing.assert_allclose(logits[0], trace["logits"].value, rtol=0, atol=1e-9)
        fused = torch_model.forward(params, ids)                    # the training path: fused attention
        np.testing.assert_allclose(fused[0], trace["logits"].value, rtol=0, atol=1e-9)
        for l in range(2):
            np.testing.assert_allclose(weights[l][0], trace.facts["attention"][l]["weights"].value, rtol=0, atol=1e-12)


@pytest.mark.parametrize("placement,norm,mlp", [("post", "rms", True), ("pre", "rms", True), ("post", "layer", False),
                                                ("pre", "layer", True)])
def test_torch_module_is_general_over_the_block(placement, norm, mlp):
    arch = Arch(n_layers=2, placement=placement, norm=norm, mlp=mlp)
    params = init_params(arch, d_model=64, vocab=model.VOCAB, seed=3, n_heads=4, d_k=16)
    rng = np.random.default_rng(3)
    params.update(tok_emb=rng.standard_normal((model.VOCAB, 64)), pos_emb=rng.standard_normal((model.N_CTX, 64)))
    for name in [k for k in params if k.endswith((".g", ".b"))]:      # γ ≠ 1, β ≠ 0: the norms' parameters count
        params[name] = params[name] + 0.1 * rng.standard_normal(params[name].shape)
    ids = rng.integers(0, model.VOCAB, 12)
    labels = model.token_labels([])
    tokens = [labels[i] for i in ids]
    trace = run_transformer(model.attention_config(tokens), arch, params, lm_input(params, ids), tokens, labels)
    for with_weights in (False, True):
        logits = torch_model.forward(params, ids, arch=arch, n_heads=4, with_weights=with_weights)
        logits = logits[0] if with_weights else logits
        np.testing.assert_allclose(logits[0], trace["logits"].value, rtol=0, atol=1e-9)


def test_params_round_trip_through_the_module():
    params = lm_init(5)
    back = torch_model.build(params).params()
    assert back.keys() == params.keys() and all(np.array_equal(back[k], params[k]) for k in params)


# ---- the copy task ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("fixed", [False, True])
def test_batches_hold_one_repeat_later_and_the_copy_mask_marks_it(fixed):
    lengths = set()
    for seed in range(20):
        b = task.batch(np.random.default_rng(seed), fixed_offset=fixed)
        assert b.ids.shape == (task.BATCH, task.SEQ_LEN) and b.ids.min() >= 0 and b.ids.max() < model.VOCAB
        for r in range(task.BATCH):
            s, t, L = b.start[r], b.repeat[r], b.length[r]
            assert task.MIN_REPEAT <= L <= task.MAX_REPEAT and s + L <= t and t + L <= task.SEQ_LEN
            assert np.array_equal(b.ids[r, t:t + L], b.ids[r, s:s + L])
            assert np.flatnonzero(b.copy[r]).tolist() == list(range(t + 1, t + L))
            if fixed:
                assert t - s == task.FIXED_OFFSET
            lengths.add(int(L))
        assert np.array_equal(b.copy_targets, b.copy[:, 1:]) and b.inputs.shape == (task.BATCH, model.N_CTX)
    assert lengths == set(range(task.MIN_REPEAT, task.MAX_REPEAT + 1))
    if not fixed:   # the offset varies: that is what makes positions useless
        offsets = {int(t - s) for seed in range(5) for s, t in zip(*[getattr(task.batch(np.random.default_rng(seed)), a)
                                                                      for a in ("start", "repeat")])}
        assert len(offsets) > 15


def test_batches_are_seeded():
    a, b = (task.batch(np.random.default_rng(7)) for _ in range(2))
    assert np.array_equal(a.ids, b.ids) and np.array_equal(a.copy, b.copy)
    assert not np.array_equal(a.ids, task.batch(np.random.default_rng(8)).ids)


def test_repeated_tokens_repeat_distinct_tokens():
    r = task.repeated_tokens(seed=4, n_seqs=5)
    assert r.shape == (5, model.N_CTX) and np.array_equal(r, task.repeated_tokens(seed=4, n_seqs=5))
    assert np.array_equal(r[:, :20], r[:, 20:]) and all(len(set(row[:20])) == 20 for row in r)
    assert task.repeat_copy_targets(r)[0].tolist() == [False] * 20 + [True] * 19 + [False]


# ---- the scores, on patterns made by hand ------------------------------------------------------------------

def causal_uniform(n):
    return np.tri(n) / np.arange(1, n + 1)[:, None]


def test_scores_of_hand_made_patterns():
    ids = task.repeated_tokens(seed=0, n_seqs=1)                    # (1, 40), half = 20
    n, half = 40, 20
    prev = np.eye(n, k=-1)
    prev[0, 0] = 1.0                                                 # the first token can only see itself
    induction = causal_uniform(n)
    for i in range(half, n):
        induction[i] = 0.0
        induction[i, i - half + 1] = 1.0
    w = np.stack([prev, induction, causal_uniform(n), np.eye(n)])[None]     # (1, 4 heads, n, n)
    p, ind = scores.previous_token_score(w), scores.induction_score(w, ids)
    uniform_prev = np.mean([1 / (i + 1) for i in range(1, n)])      # A[i, i−1] = 1/(i+1)
    uniform_ind = np.mean([1 / (i + 1) for i in range(half, n)])    # one target per query of the second half
    induction_prev = np.sum([1 / (i + 1) for i in range(1, half)]) / (n - 1)   # first half uniform, then 0
    np.testing.assert_allclose(p, [1.0, induction_prev, uniform_prev, 0.0], atol=1e-12)
    np.testing.assert_allclose(ind, [0.0, 1.0, uniform_ind, 0.0], atol=1e-12)


def test_induction_targets_with_repeats_inside_the_sequence():
    # A B A B A: query 2 (A) → key 1 (B follows A at 0); query 3 (B) → key 2; query 4 (A) → keys 1 and 3
    t = scores.induction_targets(np.array([0, 1, 0, 1, 0]))
    assert {tuple(x) for x in np.argwhere(t)} == {(2, 1), (3, 2), (4, 1), (4, 3)}
    w = np.stack([causal_uniform(5)])[None]
    expected = np.mean([1 / 3, 1 / 4, 2 / 5])                        # queries 2, 3, 4 have targets
    np.testing.assert_allclose(scores.induction_score(w, np.array([[0, 1, 0, 1, 0]])), [expected], atol=1e-12)


def test_copy_loss_of_a_uniform_guess_and_of_a_perfect_copy():
    ids = task.repeated_tokens(seed=1, n_seqs=2)
    assert scores.copy_loss(np.zeros((2, 40, model.VOCAB)), ids) == pytest.approx(np.log(model.VOCAB), abs=1e-12)
    perfect = np.zeros((2, 40, model.VOCAB))
    perfect[np.arange(2)[:, None], np.arange(39)[None], ids[:, 1:]] = 50.0
    assert scores.copy_loss(perfect, ids) == pytest.approx(30 * np.exp(-50), rel=1e-6)


def test_numpy_and_torch_scores_agree(trained):
    ids = task.repeated_tokens(EVAL_SEED, 4)
    np_scores = scores.head_scores(trained, ids)
    t64 = scores.torch_scores(torch_model.build(trained, dtype=torch.float64, trainable=False), ids)
    t32 = scores.torch_scores(torch_model.build(trained, trainable=False), ids)
    for key in ("prev", "induction", "copy_loss"):
        np.testing.assert_allclose(t64[key], np_scores[key], rtol=0, atol=1e-12)
        np.testing.assert_allclose(t32[key], np_scores[key], rtol=0, atol=1e-5)   # float32 during training
