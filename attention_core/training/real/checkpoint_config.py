"""A checkpoint's config.json as the few numbers and choices the project's forward pass needs.

Two families, and what they differ in is the lesson:

    GPT-2 (model_type "gpt2")            learned positions, LayerNorm (with β), MLP with GELU (tanh form,
                                         "gelu_new"), biases everywhere, W_U tied to the token embeddings
    Llama-style ("llama", "qwen2",       RoPE (rope_theta; rope_scaling "llama3" stretches the slow pairs),
    "mistral" without a window)          grouped-query attention, RMSNorm (no β), SwiGLU MLP, no biases but
                                         Qwen2's on Q, K, V; W_U tied or its own lm_head

Anything else the project does not compute is refused by name (Unsupported), never run approximately: a
sliding window, a mixture of experts, another RoPE scaling, another activation.
Both spellings of RoPE's settings are read: rope_theta + rope_scaling (the published checkpoints) and
rope_parameters (transformers 5 writes it).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .errors import Unsupported

LLAMA_TYPES = ("llama", "qwen2", "mistral")
MOE_KEYS = ("num_local_experts", "num_experts", "n_routed_experts", "moe_intermediate_size")
ROPE_TYPES = ("default", "llama3")
GPT2_ACTIVATIONS = {"gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "gelu": "gelu"}


@dataclass(frozen=True)
class CheckpointConfig:
    family: str                   # "gpt2" | "llama"
    model_type: str               # as config.json says: gpt2, llama, qwen2, mistral
    n_layers: int
    d_model: int
    n_heads: int                  # H, query heads
    n_kv_heads: int               # H_kv (= H for GPT-2)
    d_head: int                   # d_k = d_v
    d_ff: int
    vocab: int
    n_ctx: int                    # the longest sequence the model was made for
    eps: float                    # the norms' ε
    activation: str               # gelu_tanh | gelu | silu (SwiGLU's gate)
    tied: bool                    # W_U = E^T
    rope_theta: float = 0.0       # 0: learned positions (GPT-2)
    rope_scaling: dict = field(default_factory=dict)   # {} or llama3's factor, low/high_freq_factor, original context
    mlp: bool = True              # False: attention-only blocks (the project's small model, small.py)

    @property
    def norm(self) -> str:
        return "layer" if self.family == "gpt2" else "rms"

    @property
    def rope(self) -> bool:
        return self.family == "llama"

    def n_parameters(self) -> int:
        """The parameter count the shapes imply (tied W_U counted once)."""
        d, f, v = self.d_model, self.d_ff, self.vocab
        q, kv = self.n_heads * self.d_head, self.n_kv_heads * self.d_head
        if not self.mlp:                          # the small model: LayerNorm, no biases, W_U its own
            return v * d + self.n_ctx * d + self.n_layers * (2 * d + 4 * d * d) + 2 * d + d * v
        if self.family == "gpt2":
            per_layer = 4 * d + d * (3 * d) + 3 * d + d * d + d + d * f + f + f * d + d
            return v * d + self.n_ctx * d + self.n_layers * per_layer + 2 * d
        per_layer = 2 * d + d * (q + 2 * kv) + q * d + 3 * d * f + (q + 2 * kv if self.model_type == "qwen2" else 0)
        return v * d * (1 if self.tied else 2) + self.n_layers * per_layer + d


def _refuse(what: str, model_type: str, hint: str = "") -> Unsupported:
    return Unsupported(f"This {model_type} checkpoint uses {what}, which the project does not implement. "
                       + (hint or "Pick a GPT-2 or a Llama-style model without it (gpt2, distilgpt2, "
                               "HuggingFaceTB/SmolLM2-135M, Qwen/Qwen2.5-0.5B, meta-llama/Llama-3.2-1B)."))


def rope_settings(raw: dict) -> tuple[float, dict]:
    """(rope_theta, scaling parameters or {}), from rope_parameters or rope_theta + rope_scaling."""
    params = dict(raw.get("rope_parameters") or {})
    scaling = dict(raw.get("rope_scaling") or {})
    theta = float(params.get("rope_theta", raw.get("rope_theta", 10000.0)))
    merged = {**scaling, **{k: v for k, v in params.items() if k != "rope_theta"}}
    kind = merged.pop("rope_type", None) or merged.pop("type", None) or "default"
    merged.pop("type", None)
    if kind not in ROPE_TYPES:
        raise _refuse(f"RoPE scaling of type {kind!r} (the project computes the plain rotation and Llama 3's "
                      "\"llama3\" scaling)", raw.get("model_type", "?"))
    if kind == "default":
        return theta, {}
    need = ("factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings")
    missing = [k for k in need if k not in merged]
    if missing:
        raise Unsupported(f"rope_scaling of type llama3 lacks {', '.join(missing)} in config.json: the file is "
                          "incomplete. Download the model again.")
    return theta, {k: float(merged[k]) for k in need}


def parse_config(raw: dict) -> CheckpointConfig:
    """config.json (as a dict) -> CheckpointConfig; Unsupported names what the project does not compute."""
    model_type = raw.get("model_type", "")
    if any(raw.get(k) for k in MOE_KEYS):
        raise _refuse("a mixture of experts (MoE: several MLPs and a router)", model_type)
    if model_type == "gpt2":
        return _gpt2(raw)
    if model_type in LLAMA_TYPES:
        return _llama(raw, model_type)
    names = ", ".join(raw.get("architectures") or []) or "no architecture named"
    raise Unsupported(f"The architecture {model_type or '(none)'} ({names}) is not one the project implements: it "
                      "runs GPT-2 (model_type gpt2) and Llama-style models (llama, qwen2, mistral without a sliding "
                      "window). Pick one of those, e.g. gpt2 or HuggingFaceTB/SmolLM2-135M.")


def _gpt2(raw: dict) -> CheckpointConfig:
    act = raw.get("activation_function", "gelu_new")
    if act not in GPT2_ACTIVATIONS:
        raise _refuse(f"the activation {act!r}", "gpt2")
    if raw.get("scale_attn_by_inverse_layer_idx"):
        raise _refuse("scores scaled by 1/(layer + 1) (scale_attn_by_inverse_layer_idx)", "gpt2")
    if raw.get("scale_attn_weights") is False:
        raise _refuse("unscaled scores (scale_attn_weights false)", "gpt2")
    if raw.get("add_cross_attention"):
        raise _refuse("cross-attention (an encoder-decoder)", "gpt2")
    d, h = int(raw["n_embd"]), int(raw["n_head"])
    return CheckpointConfig("gpt2", "gpt2", int(raw["n_layer"]), d, h, h, d // h, int(raw.get("n_inner") or 4 * d),
                            int(raw["vocab_size"]), int(raw["n_positions"]), float(raw.get("layer_norm_epsilon", 1e-5)),
                            GPT2_ACTIVATIONS[act], bool(raw.get("tie_word_embeddings", True)))


def _llama(raw: dict, model_type: str) -> CheckpointConfig:
    layer_types = raw.get("layer_types") or []
    windowed = (raw.get("use_sliding_window") if model_type == "qwen2" else raw.get("sliding_window")) \
        or any(t != "full_attention" for t in layer_types)
    if windowed:
        raise _refuse(f"sliding-window attention (sliding_window={raw.get('sliding_window')})", model_type)
    if raw.get("mlp_bias"):
        raise _refuse("biases in its MLP (mlp_bias)", model_type)
    if raw.get("hidden_act", "silu") != "silu":
        raise _refuse(f"the activation {raw.get('hidden_act')!r} in its gated MLP (SwiGLU needs silu)", model_type)
    theta, scaling = rope_settings(raw)
    d, h = int(raw["hidden_size"]), int(raw["num_attention_heads"])
    return CheckpointConfig("llama", model_type, int(raw["num_hidden_layers"]), d, h,
                            int(raw.get("num_key_value_heads") or h), int(raw.get("head_dim") or d // h),
                            int(raw["intermediate_size"]), int(raw["vocab_size"]),
                            int(raw.get("max_position_embeddings", 2048)), float(raw.get("rms_norm_eps", 1e-6)),
                            "silu", bool(raw.get("tie_word_embeddings", False)), theta, scaling)
