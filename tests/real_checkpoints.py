"""Tiny randomly initialised checkpoints in the Hugging Face layout, made by transformers in the test, and the
tokenizers trained for them with `tokenizers` (byte-level BPE for GPT-2, "▁" Metaspace BPE for Llama-style, which puts <s> first as Llama's does).

Each family at its smallest that still has what the lesson is about: GPT-2 (fused c_attn, learned positions, tied
W_U), Llama with GQA (4 query heads over 2 KV heads) and llama3 rope_scaling whose bands all occur at d_k = 16,
Qwen2 with Q/K/V biases. dtype="bfloat16" saves the weights as bfloat16; shard="…" splits them into shards.
"""
from __future__ import annotations

import shutil
from pathlib import Path

TEXT = ["the cat sat on the mat and the dog sat on the log",
        "attention weighs every earlier token by how well its key matches the query",
        "a model reads the tokens so far and scores the next one"] * 4
SENTENCE = "the cat sat on the log and the dog weighs the next token"
VOCAB = 320
COMMIT = "0123456789abcdef0123456789abcdef01234567"
LLAMA3 = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
          "original_max_position_embeddings": 64}


def lay_out_cache(cache, repo: str, folder) -> None:
    """A Hugging Face cache as huggingface_hub leaves it: blobs, a snapshot per commit (links to the blobs), and
    refs/main naming the commit."""
    root = cache / f"models--{repo.replace('/', '--')}"
    snapshot = root / "snapshots" / COMMIT
    snapshot.mkdir(parents=True)
    (root / "blobs").mkdir()
    for f in folder.iterdir():
        blob = root / "blobs" / f"blob-{f.name}"
        shutil.copy(f, blob)
        (snapshot / f.name).symlink_to(blob)
    (root / "refs").mkdir()
    (root / "refs" / "main").write_text(COMMIT)


def train_tokenizer(folder: Path, style: str) -> None:
    from tokenizers import (
        Tokenizer,
        decoders,
        models,
        pre_tokenizers,
        processors,
        trainers,
    )

    if style == "gpt2":
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(vocab_size=VOCAB, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                      special_tokens=["<|endoftext|>"])
    else:
        tok = Tokenizer(models.BPE(unk_token="<unk>"))
        tok.pre_tokenizer = pre_tokenizers.Metaspace()
        tok.decoder = decoders.Metaspace()
        trainer = trainers.BpeTrainer(vocab_size=VOCAB, special_tokens=["<unk>", "<s>", "</s>"])
    tok.train_from_iterator(TEXT, trainer)
    if style != "gpt2":                        # as Llama's tokenizer.json: <s> before the text
        tok.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", tok.token_to_id("<s>"))])
    tok.save(str(folder / "tokenizer.json"))


def make_checkpoint(folder: Path, family: str, dtype: str = "float32", shard: str | None = None, seed: int = 0,
                    **overrides) -> Path:
    """A random `family` model (gpt2 | llama | qwen2) saved in `folder` with its tokenizer; returns the folder."""
    import torch
    from transformers import (
        GPT2Config,
        GPT2LMHeadModel,
        LlamaConfig,
        LlamaForCausalLM,
        Qwen2Config,
        Qwen2ForCausalLM,
    )

    torch.manual_seed(seed)
    folder.mkdir(parents=True, exist_ok=True)
    if family == "gpt2":
        config = GPT2Config(vocab_size=VOCAB, n_embd=48, n_layer=2, n_head=3, n_positions=64, bos_token_id=0,
                            eos_token_id=0, **overrides)
        model = GPT2LMHeadModel(config)
    elif family == "llama":
        config = LlamaConfig(vocab_size=VOCAB, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                             num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                             rope_theta=10000.0, rope_scaling=dict(LLAMA3), rms_norm_eps=1e-6, bos_token_id=1,
                             eos_token_id=2, **overrides)
        model = LlamaForCausalLM(config)
    else:
        config = Qwen2Config(vocab_size=VOCAB, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                             num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                             tie_word_embeddings=True, bos_token_id=1, eos_token_id=2, **overrides)
        model = Qwen2ForCausalLM(config)
    with torch.no_grad():                      # biases and norms away from their 0 / 1 start, so they count
        for name, p in model.named_parameters():
            if name.endswith("bias") or "norm" in name or "ln_" in name:
                p.add_(0.1 * torch.randn_like(p))
    if dtype == "bfloat16":
        model = model.to(torch.bfloat16)
    model.save_pretrained(folder, **({"max_shard_size": shard} if shard else {}))
    train_tokenizer(folder, "gpt2" if family == "gpt2" else "sentencepiece")
    return folder


def reference(folder: Path, ids):
    """transformers' own forward on the saved files (eager attention, float32): hidden states, attentions, logits."""
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32, attn_implementation="eager")
    model.eval()
    with torch.no_grad():
        out = model(torch.tensor([list(ids)]), output_hidden_states=True, output_attentions=True)
    return ([h[0].numpy() for h in out.hidden_states], [a[0].numpy() for a in out.attentions], out.logits[0].numpy())


def numpy_checkpoint(folder: Path, family: str = "llama", seed: int = 0) -> Path:
    """The same tiny shapes as make_checkpoint's, random numbers written with numpy and safetensors alone (no torch,
    no transformers: a second to make): for the pages' tests and the browser's servers, which show a checkpoint
    rather than check one (the parity tests check the loader on make_checkpoint's)."""
    import json

    import numpy as np
    from safetensors.numpy import save_file

    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    r = lambda *shape: (0.2 * rng.standard_normal(shape)).astype(np.float32)
    one = lambda n: (1 + 0.1 * rng.standard_normal(n)).astype(np.float32)
    t = {}
    if family == "gpt2":
        d, f, L = 48, 192, 2
        config = {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "vocab_size": VOCAB, "n_embd": d,
                  "n_layer": L, "n_head": 3, "n_positions": 64, "bos_token_id": 0, "eos_token_id": 0}
        t.update({"wte.weight": r(VOCAB, d), "wpe.weight": r(64, d), "ln_f.weight": one(d), "ln_f.bias": r(d)})
        for l in range(L):
            h = f"h.{l}."
            t.update({h + "attn.c_attn.weight": r(d, 3 * d), h + "attn.c_attn.bias": r(3 * d),
                      h + "attn.c_proj.weight": r(d, d), h + "attn.c_proj.bias": r(d), h + "ln_1.weight": one(d),
                      h + "ln_1.bias": r(d), h + "ln_2.weight": one(d), h + "ln_2.bias": r(d),
                      h + "mlp.c_fc.weight": r(d, f), h + "mlp.c_fc.bias": r(f), h + "mlp.c_proj.weight": r(f, d),
                      h + "mlp.c_proj.bias": r(d)})
    else:
        d, f, L, H, H_kv = 64, 96, 2, 4, 2
        k = H_kv * d // H
        config = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "vocab_size": VOCAB,
                  "hidden_size": d, "intermediate_size": f, "num_hidden_layers": L, "num_attention_heads": H,
                  "num_key_value_heads": H_kv, "max_position_embeddings": 256, "rope_theta": 10000.0,
                  "rope_scaling": dict(LLAMA3), "rms_norm_eps": 1e-6, "hidden_act": "silu",
                  "tie_word_embeddings": False, "bos_token_id": 1, "eos_token_id": 2}
        t.update({"model.embed_tokens.weight": r(VOCAB, d), "model.norm.weight": one(d), "lm_head.weight": r(VOCAB, d)})
        for l in range(L):
            a, m = f"model.layers.{l}.self_attn.", f"model.layers.{l}.mlp."
            t.update({a + "q_proj.weight": r(d, d), a + "k_proj.weight": r(k, d), a + "v_proj.weight": r(k, d),
                      a + "o_proj.weight": r(d, d), m + "gate_proj.weight": r(f, d), m + "up_proj.weight": r(f, d),
                      m + "down_proj.weight": r(d, f), f"model.layers.{l}.input_layernorm.weight": one(d),
                      f"model.layers.{l}.post_attention_layernorm.weight": one(d)})
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    save_file(t, str(folder / "model.safetensors"), metadata={"format": "pt"})
    train_tokenizer(folder, "gpt2" if family == "gpt2" else "sentencepiece")
    return folder
