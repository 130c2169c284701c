"""The loader's paths besides the happy one: a model name served from a Hugging Face cache laid out here, offline;
and every error a learner or a host can meet, each a real.RealModelError whose message says what to do."""
from __future__ import annotations

import json
import shutil
import struct
import subprocess
import sys

import numpy as np
import pytest

from attention_core.training import real
from attention_core.training.real.checkpoint_config import parse_config
from attention_core.training.real.hub import plan, translate
from attention_core.training.real.load import forget
from attention_core.training.real.safetensors_read import read_safetensors
from tests.real_checkpoints import COMMIT, SENTENCE, lay_out_cache, make_checkpoint

pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def gpt2_folder(tmp_path_factory):
    return make_checkpoint(tmp_path_factory.mktemp("gpt2"), "gpt2")


@pytest.fixture(scope="module")
def qwen2_config(tmp_path_factory):
    folder = make_checkpoint(tmp_path_factory.mktemp("qwen2"), "qwen2")
    return json.loads((folder / "config.json").read_text())


def copy(folder, tmp_path, name="copy"):
    target = tmp_path / name
    shutil.copytree(folder, target)
    return target


def test_a_model_name_loads_offline_from_the_cache(gpt2_folder, tmp_path, monkeypatch):
    cache = tmp_path / "hub"
    lay_out_cache(cache, "tiny/gpt2", gpt2_folder)
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    forget()
    model = real.load_model("tiny/gpt2")
    assert model.folder == cache / "models--tiny--gpt2" / "snapshots" / COMMIT
    from_folder = real.run_real(real.load_model(gpt2_folder), SENTENCE)
    assert np.array_equal(real.run_real(model, SENTENCE)["logits"].value, from_folder["logits"].value)
    assert real.load_model("tiny/gpt2") is model                               # once per process
    files = plan("tiny/gpt2")
    assert files.to_download == 0 and files.total_bytes == sum(f.stat().st_size for f in gpt2_folder.iterdir()
                                                                if f.name in files.files)
    assert "model.safetensors" in files.files and "is in the cache" in files.say()


def test_offline_without_the_model_says_so(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(real.NoNetwork, match="not in the Hugging Face cache .* HF_HUB_OFFLINE is set"):
        real.load_model("HuggingFaceTB/SmolLM2-135M")
    with pytest.raises(real.NoNetwork, match="or copy the model's folder here and give its path"):
        plan("gpt2")


def test_no_network_says_so(tmp_path, monkeypatch):
    """A hub that does not answer (a closed port stands for it): the cache is empty, so real.NoNetwork, quickly."""
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    with pytest.raises(real.NoNetwork, match="the Hugging Face hub cannot be reached. Connect to the internet once to"):
        real.load_model("gpt2")
    with pytest.raises(real.NoNetwork):
        plan("gpt2")


def test_the_hubs_refusals_become_the_projects_errors():
    import httpx2
    from huggingface_hub.errors import (
        GatedRepoError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
    )

    url = "https://huggingface.co/meta-llama/Llama-3.2-1B/resolve/main/config.json"
    response = httpx2.Response(403, request=httpx2.Request("GET", url))
    gated = translate(GatedRepoError("Access to this model is restricted", response=response), "meta-llama/Llama-3.2-1B")
    assert isinstance(gated, real.GatedModel) and "HF_TOKEN" in str(gated) and "huggingface.co/meta-llama/Llama-3.2-1B" in str(gated)
    missing = translate(RepositoryNotFoundError("404", response=httpx2.Response(404, request=response.request)), "gtp2")
    assert isinstance(missing, real.ModelNotFound) and "'gtp2'" in str(missing)
    assert isinstance(translate(LocalEntryNotFoundError("no connection"), "gpt2"), real.NoNetwork)
    other = ValueError("something else")
    assert translate(other, "gpt2") is other


def test_no_such_folder(tmp_path):
    with pytest.raises(real.ModelNotFound, match="There is no folder"):
        real.load_model(str(tmp_path / "nothing-here"))


def test_not_enough_memory_says_how_much_it_needs(gpt2_folder, tmp_path):
    folder = copy(gpt2_folder, tmp_path)
    with pytest.raises(real.NotEnoughMemory, match=r"needs 0\.\d+ MB|needs \d+ MB") as error:
        real.load_model(folder, available=1000)
    assert error.value.needed == 4 * sum(v.size for v in read_safetensors(folder / "model.safetensors").values())
    assert "1000" not in str(error.value) or "free" in str(error.value)
    assert real.load_model(folder) is not None                                 # nothing was kept from the refused load


def test_a_truncated_file_is_corrupt(gpt2_folder, tmp_path):
    folder = copy(gpt2_folder, tmp_path)
    path = folder / "model.safetensors"
    path.write_bytes(path.read_bytes()[:-1000])
    with pytest.raises(real.CorruptFile, match="truncated or damaged: delete it and download the model again"):
        real.load_model(folder)


def test_a_header_that_is_not_json_is_corrupt(gpt2_folder, tmp_path):
    folder = copy(gpt2_folder, tmp_path)
    path = folder / "model.safetensors"
    data = bytearray(path.read_bytes())
    data[8:12] = b"\xff\xfe{{"
    path.write_bytes(bytes(data))
    with pytest.raises(real.CorruptFile, match="header is not valid JSON"):
        real.load_model(folder)


def test_a_missing_shard_and_a_missing_tensor_are_corrupt(gpt2_folder, tmp_path):
    folder = copy(gpt2_folder, tmp_path)
    (folder / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {"wte.weight": "model-00002.safetensors"}}))
    with pytest.raises(real.CorruptFile, match="names shards that are not in"):
        real.load_model(folder)
    config = json.loads((gpt2_folder / "config.json").read_text())
    other = copy(gpt2_folder, tmp_path, "deeper")
    (other / "config.json").write_text(json.dumps({**config, "n_layer": 3}))
    with pytest.raises(real.CorruptFile, match="no tensor 'h.2.attn.c_attn.weight'"):
        real.load_model(other)


def test_a_quantised_tensor_is_unsupported(tmp_path):
    header = json.dumps({"w": {"dtype": "I8", "shape": [2], "data_offsets": [0, 2]}}).encode()
    (tmp_path / "model.safetensors").write_bytes(struct.pack("<Q", len(header)) + header + b"\x01\x02")
    with pytest.raises(real.Unsupported, match="stored as I8: .* not quantised ones"):
        read_safetensors(tmp_path / "model.safetensors")


@pytest.mark.parametrize("change, named", [
    ({"use_sliding_window": True, "sliding_window": 4096}, "sliding-window attention"),
    ({"num_local_experts": 8}, r"a mixture of experts \(MoE"),
    ({"rope_parameters": {"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0}}, "RoPE scaling of type 'yarn'"),
    ({"hidden_act": "gelu"}, "the activation 'gelu'"),
    ({"mlp_bias": True}, r"biases in its MLP \(mlp_bias\)"),
    ({"model_type": "bert", "architectures": ["BertModel"]}, "The architecture bert"),
])
def test_what_the_project_does_not_compute_is_refused_by_name(qwen2_config, change, named):
    with pytest.raises(real.Unsupported, match=named):
        parse_config({**qwen2_config, **change})


# The published config.json of each model the issue names (the keys the loader reads, as the hub serves them).
PUBLISHED = {
    "gpt2": ({"model_type": "gpt2", "activation_function": "gelu_new", "n_embd": 768, "n_head": 12, "n_layer": 12,
              "n_positions": 1024, "layer_norm_epsilon": 1e-05, "vocab_size": 50257, "scale_attn_weights": True},
             124_439_808, (12, 12, 64)),
    "distilgpt2": ({"model_type": "gpt2", "activation_function": "gelu_new", "n_embd": 768, "n_head": 12, "n_layer": 6,
                    "n_positions": 1024, "layer_norm_epsilon": 1e-05, "vocab_size": 50257}, 81_912_576, (12, 12, 64)),
    "HuggingFaceTB/SmolLM2-135M": ({"model_type": "llama", "hidden_size": 576, "intermediate_size": 1536,
                                    "num_hidden_layers": 30, "num_attention_heads": 9, "num_key_value_heads": 3,
                                    "head_dim": 64, "hidden_act": "silu", "max_position_embeddings": 8192,
                                    "mlp_bias": False, "attention_bias": False, "rms_norm_eps": 1e-05,
                                    "rope_interleaved": False, "rope_scaling": None, "rope_theta": 100000,
                                    "tie_word_embeddings": True, "vocab_size": 49152}, 134_515_008, (9, 3, 64)),
    "Qwen/Qwen2.5-0.5B": ({"model_type": "qwen2", "hidden_size": 896, "intermediate_size": 4864, "hidden_act": "silu",
                           "max_position_embeddings": 32768, "max_window_layers": 24, "num_attention_heads": 14,
                           "num_hidden_layers": 24, "num_key_value_heads": 2, "rms_norm_eps": 1e-06,
                           "rope_theta": 1000000.0, "sliding_window": 32768, "tie_word_embeddings": True,
                           "use_mrope": False, "use_sliding_window": False, "vocab_size": 151936}, 494_032_768, (14, 2, 64)),
    "meta-llama/Llama-3.2-1B": ({"model_type": "llama", "hidden_size": 2048, "intermediate_size": 8192,
                                 "num_hidden_layers": 16, "num_attention_heads": 32, "num_key_value_heads": 8,
                                 "head_dim": 64, "hidden_act": "silu", "max_position_embeddings": 131072,
                                 "mlp_bias": False, "rms_norm_eps": 1e-05, "rope_theta": 500000.0,
                                 "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                                                  "original_max_position_embeddings": 8192, "rope_type": "llama3"},
                                 "tie_word_embeddings": True, "vocab_size": 128256}, 1_235_814_400, (32, 8, 64)),
}


@pytest.mark.parametrize("name", PUBLISHED)
def test_the_named_models_published_configs_are_understood(name):
    raw, parameters, heads = PUBLISHED[name]
    config = parse_config(raw)
    assert config.n_parameters() == parameters                             # the count each model card gives
    assert (config.n_heads, config.n_kv_heads, config.d_head) == heads
    assert config.rope == (config.family == "llama")
    if name.startswith("meta-llama"):
        assert config.rope_scaling["factor"] == 32.0 and config.rope_theta == 500000.0


def test_every_error_is_one_class_a_page_can_catch():
    for kind in (real.NoNetwork, real.GatedModel, real.ModelNotFound, real.NotEnoughMemory, real.Unsupported, real.CorruptFile):
        assert issubclass(kind, real.RealModelError)


def test_nothing_of_it_is_imported_until_asked():
    """Nor by the real-model pages' views (app.py imports ui.real.state): only a page asking for a model loads it."""
    code = ("import sys, attention_core, attention_core.training, attention_core.explanations; "
            "import ui.real.state, ui.real.model, ui.real.heads_view, ui.real.roles_view, ui.real.tokens_view, "
            "ui.real.next_view; "
            "print(sorted(m for m in sys.modules if m.startswith(('attention_core.training.real', 'tokenizers', "
            "'huggingface_hub', 'safetensors', 'transformers'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
