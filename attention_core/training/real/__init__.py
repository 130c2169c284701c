"""Real language models: a Hugging Face checkpoint (GPT-2, Llama-style) loaded and run by the project in numpy.

    errors              RealModelError and its kinds (no network, gated, not found, not enough memory, unsupported,
                        corrupt file), each message saying what to do
    hub                 a name -> the cache's folder (huggingface_hub, downloaded on first use, HF_HUB_OFFLINE), the
                        size before downloading (plan), the download with progress(done_bytes, total_bytes) called
                        from the caller's thread (download); a local folder as it is
    safetensors_read    .safetensors files -> float32 numpy, memory-mapped, bfloat16 converted exactly, shards
    checkpoint_config   config.json -> CheckpointConfig; what the project does not compute refused by name
    storage             the checkpoint's tensors -> the project's parameters (rows are tokens, X @ W)
    tokenizer           its tokenizer.json (the tokenizers library): ids and the pieces as stored ("Ġcat")
    load                load_model(name or folder) -> RealModel, the memory checked, loaded once per process
    activations         GELU's tanh form (GPT-2) and SiLU (SwiGLU), with their derivatives
    rope_scaling        RoPE's θ_i with Llama 3's "llama3" scaling; cos and sin per position
    trace32             RealTrace: Steps that keep the checkpoint's float32 (no float64 copy), read-only
    attention_layer     one layer's attention as a Trace with the attention pages' step keys, every head
    forward             run_real(model, text) -> Trace of kind "real": every layer, every head, the logits
    explainers          a real head's cells explained through the registry, with its real numbers
    small               the project's own small model (training/lm, the shipped run) as a RealModel: attention-only
                        blocks, its tokens the sentence's distinct words (small_model, is_small; imported when asked)

Nothing here is imported by attention_core or by training: a page imports it when a real model is asked for, and
huggingface_hub, tokenizers (and torch, never) are imported inside the functions that use them.

May import: the math, the forward pass, the explanations, and the rest of training.
"""
from . import explainers  # noqa: F401  (they register)
from .errors import (
    CorruptFile,
    GatedModel,
    ModelNotFound,
    NoNetwork,
    NotEnoughMemory,
    RealModelError,
    Unsupported,
)
from .forward import run_real
from .load import RealModel, load_model

__all__ = ["CorruptFile", "GatedModel", "ModelNotFound", "NoNetwork", "NotEnoughMemory", "RealModel",
           "RealModelError", "Unsupported", "load_model", "run_real"]
