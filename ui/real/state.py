"""The real-model pages' own controls, as a link carries them: declared into ui/page_state.py when this module is
imported (app.py imports it, so a link's or a pushed view's values are read on any page a session starts on).

`real.model` names the model: "" is this server's own (ATTENTION_EXPLORER_REAL_MODEL_DIR), "small" the project's
shipped small model (training/real/small.py: every server has it), one of MODELS, or "folder" with `real.folder` a
folder on the server. The default stays "" (a link without the model means this server's own); on a server whose
host set none, the picker shows the small model in its place and writes "small" (model.py: the link and a pushed
view then name it). A pushed view carries the name, never the weights: a student's server loads it from its own
disk or says plainly that it does not have it (model.py).
"""
from __future__ import annotations

from .. import page_state, settings_state
from ..own import Own, choice, integer, number

SERVER, SMALL, FOLDER = "", "small", "folder"
MODELS = {"gpt2": "GPT-2 small (124M parameters)", "distilgpt2": "DistilGPT-2 (82M)",
          "HuggingFaceTB/SmolLM2-135M": "SmolLM2-135M (Llama-style, 9 query heads over 3 KV heads)",
          "Qwen/Qwen2.5-0.5B": "Qwen2.5-0.5B (Llama-style, Q/K/V biases)",
          "meta-llama/Llama-3.2-1B": "Llama-3.2-1B (gated: needs a Hugging Face token)"}
CHOICES = (SERVER, SMALL, *MODELS, FOLDER)
PAGES = ("app_pages/70_real_tokens.py", "app_pages/71_real_heads.py", "app_pages/72_real_roles.py")
MAX_LAYERS, MAX_HEADS, MAX_VOCAB = 128, 128, 1_000_000


def _folder(raw: str) -> str:
    if len(raw) > 400:
        raise ValueError("must be a folder's path of at most 400 characters")
    return raw.strip()


def model_controls() -> tuple[Own, ...]:
    return (choice("real.model", SERVER, CHOICES, "the model"),
            Own("real.folder", "", _folder, str, "the model's folder", show=lambda v: v or "none"))


def declare_all(declare) -> None:
    tokens, heads, roles = PAGES
    declare(tokens, *model_controls(), number("real.temperature", 0.7, 0.0, 3.0, "the temperature T"),
            integer("real.k", 50, 0, MAX_VOCAB, "top-k"), number("real.p", 0.9, 0.0, 1.0, "top-p"),
            integer("real.seed", 0, 0, 2 ** 31 - 1, "the sampling seed"))
    declare(heads, *model_controls(), integer("real.layer", 0, 0, MAX_LAYERS - 1, "the layer l"),
            integer("real.head", 0, 0, MAX_HEADS - 1, "the head h"))
    declare(roles, *model_controls())


settings_state.SENTENCE_ONLY.update(PAGES)   # a pushed view's sentence kept as typed (no toy forward pass to pass)
declare_all(page_state.declare)      # at import: app.py imports this module, so every session's link reads them
