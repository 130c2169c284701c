"""A real checkpoint run by the project against transformers' own forward, on tiny random checkpoints made here.

Each family's checkpoint is made by transformers in the test (tests/real_checkpoints.py), saved in the Hugging Face
layout with a tokenizer trained by `tokenizers`, loaded by attention_core.training.real and run in numpy float32;
transformers loads the same files (eager attention, float32) and runs the same ids. Every hidden state, every
head's attention weights and the logits agree to 1e-5 relative (max |ours − theirs| / max |theirs| per tensor).
"""
from __future__ import annotations

import numpy as np
import pytest

from attention_core.explanations import explain
from attention_core.forward.trace import Trace
from attention_core.training.real import load_model, run_real
from attention_core.training.real.rope_scaling import rope_inverse_frequencies
from tests.real_checkpoints import LLAMA3, SENTENCE, make_checkpoint, reference

pytest.importorskip("transformers")

CASES = {
    "gpt2": {"family": "gpt2"},
    "llama_gqa_llama3": {"family": "llama"},
    "qwen2_biases": {"family": "qwen2"},
    "llama_bfloat16": {"family": "llama", "dtype": "bfloat16", "seed": 1},
    "gpt2_sharded": {"family": "gpt2", "shard": "60KB", "seed": 2},
}
TOLERANCE = 1e-5


def relative(ours, theirs) -> float:
    return float(np.abs(np.asarray(ours, np.float64) - theirs).max() / np.abs(theirs).max())


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """{case: (model, trace, transformers' (hidden states, attentions, logits))}."""
    out = {}
    for case, spec in CASES.items():
        folder = make_checkpoint(tmp_path_factory.mktemp(case), **spec)
        model = load_model(folder)
        trace = run_real(model, SENTENCE)
        out[case] = (model, trace, reference(folder, trace.facts["ids"]))
    return out


@pytest.mark.parametrize("case", CASES)
def test_every_hidden_state_every_head_and_the_logits_match_transformers(runs, case):
    model, trace, (hidden, attentions, logits) = runs[case]
    layers = model.config.n_layers
    ours = [trace["x"].value] + [trace[f"l{l}.out"].value for l in range(layers - 1)] + [trace["ln_f"].value]
    assert len(hidden) == len(ours) == layers + 1
    for l, (a, b) in enumerate(zip(ours, hidden)):
        assert relative(a, b) <= TOLERANCE, (case, "hidden state", l, relative(a, b))
    for l in range(layers):
        weights = trace.facts["attention"][l]["weights"].value                 # (H, n, n)
        assert weights.shape == attentions[l].shape == (model.config.n_heads, trace.n, trace.n)
        for h in range(model.config.n_heads):
            assert relative(weights[h], attentions[l][h]) <= TOLERANCE, (case, l, h)
    assert relative(trace["logits"].value, logits) <= TOLERANCE, case
    assert trace["logits"].value.shape == (trace.n, model.config.vocab)


def test_the_checkpoints_have_what_each_family_is_about(runs):
    gpt2, llama, qwen2 = (runs[c][0] for c in ("gpt2", "llama_gqa_llama3", "qwen2_biases"))
    assert gpt2.config.tied and "pos_emb" in gpt2.params and "l0.b_q" in gpt2.params
    assert gpt2.params["w_u"].base is not None                              # W_U = Eᵀ, a view, not a copy
    assert (llama.config.n_heads, llama.config.n_kv_heads) == (4, 2) and llama.config.rope_scaling
    assert llama.params["l0.w_k"].shape == (64, 2 * 16)                     # (d, H_kv·d_k): GQA's smaller W_K
    assert "l0.b_q" in qwen2.params and "l0.b_o" not in qwen2.params and "l0.b_q" not in llama.params
    assert np.abs(qwen2.params["l0.b_k"]).max() > 0.01                      # biases that count
    # llama3 scaling touches every band at d_k = 16 with an original context of 64: kept, blended, divided by 8
    ratio = rope_inverse_frequencies(16, 10000.0, {k: float(v) for k, v in LLAMA3.items() if k != "rope_type"}) \
        / rope_inverse_frequencies(16, 10000.0)
    assert ratio[0] == 1.0 and ratio[-1] == pytest.approx(1 / 8) and any(1 / 8 < r < 1 for r in ratio)
    assert runs["llama_gqa_llama3"][1].tokens[0] == "<s>" and runs["gpt2"][1].tokens[0] != "<|endoftext|>"
    tokens = runs["gpt2"][1].tokens + runs["llama_gqa_llama3"][1].tokens
    assert any(t.startswith("Ġ") for t in tokens) and any(t.startswith("▁") for t in tokens)


def test_bfloat16_is_converted_exactly(runs, tmp_path):
    import torch
    from safetensors.torch import load_file

    model = runs["llama_bfloat16"][0]
    stored = load_file(str(model.folder / "model.safetensors"))
    q_proj = stored["model.layers.0.self_attn.q_proj.weight"]
    assert q_proj.dtype == torch.bfloat16
    assert np.array_equal(model.params["l0.w_q"], q_proj.float().numpy().T)  # (out, in) stored, X @ W used


def test_the_sharded_checkpoint_is_read_from_every_shard(runs):
    model = runs["gpt2_sharded"][0]
    assert len(list(model.folder.glob("model-*-of-*.safetensors"))) > 2
    assert model.n_parameters == model.config.n_parameters()


@pytest.mark.parametrize("case", ["gpt2", "llama_gqa_llama3", "qwen2_biases"])
def test_a_real_heads_cells_explain_themselves_with_their_numbers(runs, case):
    """Through the registry, like the toy pages: every step of a layer's attention, and the block's steps; the
    value recomputed from the shown terms is the stored one."""
    _, trace, _ = runs[case]
    for sub in trace.facts["attention"]:
        for key in list(sub.steps):
            value = sub[key].value
            for cell in {tuple(0 for _ in value.shape), tuple(s - 1 for s in value.shape),
                         tuple(s // 2 for s in value.shape)}:
                e = explain(sub, key, cell)
                stored = value[cell]
                assert e.value == pytest.approx(stored, rel=1e-5, abs=1e-6), (case, key, cell)
    weights = trace.facts["attention"][1]
    e = explain(weights, "weights", (1, trace.n - 1, 2))
    assert "exp(" in e.text and e.note.startswith(f"Row {trace.n - 1} of head 1's weights is a softmax")
    for key in ("x", "x_embed", "l0.ln1", "l0.attn", "l0.mid", "l0.ln2", "l1.out", "ln_f", "logits"):
        cell = (trace.n - 1, 3)
        assert explain(trace, key, cell).value == pytest.approx(trace[key].value[cell], rel=1e-5, abs=1e-6), key


def test_a_rotated_query_explains_its_scaled_frequency(runs):
    _, trace, _ = runs["llama_gqa_llama3"]
    e = explain(trace.facts["attention"][0], "q_rot", (2, 7, 6))
    assert "Llama 3's scaling" in e.note and "half pairing" in e.note
    assert e.value == pytest.approx(trace.facts["attention"][0]["q_rot"].value[2, 7, 6], rel=1e-5, abs=1e-6)


def test_a_text_past_the_context_is_cut_with_a_notice(runs):
    model, _, _ = runs["gpt2"]
    trace = run_real(model, " ".join([SENTENCE] * 12))
    assert trace.n == model.config.n_ctx == 64 and trace.facts["truncated"] > 0
    assert "reads at most 64: the last" in trace.notices[0]
    short = run_real(model, SENTENCE, max_tokens=5)
    assert short.n == 5 and "every head's weights are kept for at most 5" in short.notices[0]
    assert np.array_equal(short["logits"].value, run_real(model, ids=short.facts["ids"])["logits"].value)


@pytest.mark.parametrize("case", ["gpt2", "llama_gqa_llama3"])
def test_the_tokens_are_the_ones_transformers_tokenizer_gives(runs, case):
    """The same ids and pieces as transformers' tokenizer(text) on the same tokenizer.json, special tokens too."""
    from transformers import PreTrainedTokenizerFast

    model, trace, _ = runs[case]
    theirs = PreTrainedTokenizerFast(tokenizer_file=str(model.folder / "tokenizer.json"))
    ids = theirs(SENTENCE)["input_ids"]
    assert list(trace.facts["ids"]) == ids
    assert list(trace.tokens) == theirs.convert_ids_to_tokens(ids)


def test_a_real_trace_keeps_float32_read_only_and_is_freed_when_dropped(runs):
    """The checkpoint's float32 kept as it is (no float64 copy of every step: bench/real.py's memory and forward
    ratios), read-only; and no reference cycle between the block and its layers, so a dropped Trace is freed at once
    (two Traces alive at a time was 1.7–2.1x the weights' memory in the bench), not at the next garbage collection."""
    import gc
    import weakref

    model = runs["llama_gqa_llama3"][0]
    trace = run_real(model, SENTENCE)
    layer = trace.facts["attention"][0]
    for step in (trace["logits"], trace["l0.act"], layer["weights"], layer["q_rot"]):
        assert step.value.dtype == np.float32 and not step.value.flags.writeable, step.key
    assert explain(layer, "x", (1, 2)).value == pytest.approx(float(trace["l0.ln1"].value[1, 2]), rel=1e-6)
    plain = Trace(trace.tokens)                                 # the labels made once, as the toy Trace makes them
    assert layer.token_labels() == trace.token_labels() == plain.token_labels() and "▁the (1)" in plain.token_labels()
    gone = weakref.ref(trace)
    gc.disable()
    try:
        del trace, layer
        assert gone() is None
    finally:
        gc.enable()
