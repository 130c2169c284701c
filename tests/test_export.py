""".npz and CSV round trips, the generated numpy script run for real, and the settings in a URL."""
import ast
import csv
import io
import subprocess
import sys
import zipfile
from dataclasses import fields

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attention_core import Config, run_forward
from attention_core.export import (QUERY_FIELDS, array_from_csv, config_from_query, config_to_query, csv_files,
                                   csv_zip, load_npz, npz_bytes, python_script, step_csv)

MULTI = Config(sentence="the cat sat on the mat", embedding="random", d_model=8, n_heads=2, d_k=3, d_v=2,
               mask="causal", bias=True, temperature=0.8)
SCRIPT_CONFIGS = {
    "default": Config(),
    "heads-causal-bias": MULTI,
    "additive-heads-padding": Config(sentence="we like the dog today", embedding="random", d_model=6, n_heads=3,
                                     score="additive", mask="padding", padding=(0, 3), bias=True),
    "bilinear-learned-temperature": Config(sentence="i love you today", score="bilinear", positional="learned",
                                           temperature=0.37, n_heads=3, seed=11),
    "dot-index": Config(sentence="i see you", embedding="random", d_model=5, positional="index", score="dot",
                        n_heads=2),
    "concat-odd-base": Config(sentence="i love you today", combine="concat", pe_base=1234.5678, d_k=5),
}


def assert_steps_equal(arrays: dict, trace, tol: float):
    assert list(arrays) == trace.keys()
    for key in trace.keys():
        a, b = np.asarray(arrays[key]), trace[key].value
        assert a.shape == b.shape, key
        assert np.array_equal(np.isinf(a), np.isinf(b)), key
        finite = np.isfinite(b)
        assert np.all(np.abs(a[finite] - b[finite]) <= tol), (key, np.abs(a[finite] - b[finite]).max())


def test_npz_round_trip_every_step():
    trace = run_forward(MULTI)
    trace.add("dL/dw_q", "a stand-in gradient", trace["w_q"].value * 2, trace["w_q"].axes, "")
    data = npz_bytes(trace)
    arrays = load_npz(data)
    assert_steps_equal(arrays, trace, 0.0)
    assert np.isneginf(arrays["masked_scores"]).any()
    with np.load(io.BytesIO(data), allow_pickle=False) as raw:              # plain numpy opens it too
        assert "scores" in raw.files and "dL_dw_q" in raw.files


@pytest.mark.parametrize("config", [Config(), MULTI, Config(mask="padding", padding=(1,), bias=True)],
                         ids=["default", "heads", "padding-bias"])
def test_csv_round_trip_every_step(config):
    trace = run_forward(config)
    files = csv_files(trace)
    assert len(files) == len(trace.keys())
    for (name, text), step in zip(files.items(), trace):
        assert name.endswith(f"_{step.key}.csv")
        back = array_from_csv(text)
        assert back.shape == step.shape, step.key
        assert np.array_equal(back, step.value), step.key            # exact: repr() round-trips


def test_csv_layout_labels_and_heads():
    trace = run_forward(MULTI)
    rows = list(csv.reader(io.StringIO(step_csv(trace["weights"], trace))))
    assert rows[0] == ["h", "n_q\\n_k", "the (0)", "cat", "sat", "on", "the (4)", "mat"]      # h: a head's index
    assert [r[0] for r in rows[1:]] == ["0"] * 6 + ["1"] * 6 and rows[1][1] == "the (0)"
    assert rows[1][3] == "0.0"                                           # the causal mask's exact zero
    rows = list(csv.reader(io.StringIO(step_csv(trace["b_q"], trace))))
    assert rows[0] == ["H·d_k", "value"] and len(rows) == 1 + 6
    masked = list(csv.reader(io.StringIO(step_csv(trace["masked_scores"], trace))))
    assert masked[1][3] == "-inf"
    with zipfile.ZipFile(io.BytesIO(csv_zip(trace))) as z:
        assert sorted(z.namelist()) == sorted([*csv_files(trace), "README.txt"])


def run_script(source: str, tmp_path, name: str) -> dict:
    path = tmp_path / f"{name}.py"
    path.write_text(source, encoding="utf-8")
    out = tmp_path / f"{name}.npz"
    done = subprocess.run([sys.executable, str(path), str(out)], capture_output=True, text=True, cwd=tmp_path,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert "weights  shape=" in done.stdout
    with np.load(out, allow_pickle=False) as npz:
        return {k: npz[k] for k in npz.files}


@pytest.mark.parametrize("name", SCRIPT_CONFIGS)
def test_generated_script_recomputes_the_trace(name, tmp_path):
    config = SCRIPT_CONFIGS[name]
    source = python_script(config)
    assert "import torch" not in source and "attention_core" not in source
    assert_steps_equal(run_script(source, tmp_path, name), run_forward(config), 1e-12)


def test_generated_script_with_literal_weights(tmp_path):
    config = SCRIPT_CONFIGS["additive-heads-padding"]
    source = python_script(config, weights="literal")
    assert "default_rng" not in source
    assert_steps_equal(run_script(source, tmp_path, "literal"), run_forward(config), 1e-12)


def test_generated_script_keeps_the_sentence_in_a_literal(tmp_path):
    payload = "i love '''\n\"\"\"\nopen('PWNED', 'w').write('x')  # \\ \r\n{you} today ${x} \u2028 done"
    config = Config(sentence=payload, embedding="random", d_model=4)
    source = python_script(config)
    tree = ast.parse(source)
    # the sentence occurs once, as the value of SENTENCE; nothing of it is code
    assigned = {node.targets[0].id: node.value for node in tree.body if isinstance(node, ast.Assign)
                and isinstance(node.targets[0], ast.Name)}
    assert ast.literal_eval(assigned["SENTENCE"]) == payload
    assert ast.literal_eval(assigned["TOKENS"]) == list(run_forward(config).tokens)
    calls = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    assert "open" not in calls
    assert source.count("PWNED") == 1
    arrays = run_script(source, tmp_path, "payload")
    assert not (tmp_path / "PWNED").exists()
    assert_steps_equal(arrays, run_forward(config), 1e-12)


@pytest.mark.parametrize("config", [Config(), MULTI, *SCRIPT_CONFIGS.values(),
                                    Config(sentence="héllo wörld, I love you", unknown="unk", glove_vocab=5000,
                                           temperature=0.123456789, pe_base=1234.5678901, seed=2**32 - 1)])
def test_url_round_trip(config):
    query = config_to_query(config)
    assert set(query) == set(QUERY_FIELDS) and "vectors" not in query
    assert all(isinstance(v, str) for v in query.values())
    back, notices = config_from_query(query)
    assert back == config and notices == []


def test_url_never_carries_an_upload():
    config = Config(embedding="upload", vectors="cat 0.1 0.2\ndog 0.3 0.4\n", sentence="cat dog")
    back, notices = config_from_query(config_to_query(config))
    assert back.embedding == Config().embedding and back.vectors is None
    assert any("embedding" in n for n in notices)


@pytest.mark.parametrize("field, bad", [
    ("d_k", "abc"), ("d_k", "4.5"), ("d_k", "0"), ("d_k", "100000"), ("d_k", "1e3"),
    ("n_heads", "-1"), ("temperature", "nan"), ("temperature", "inf"), ("temperature", "1000"),
    ("temperature", "0"), ("pe_base", "1"), ("score", "evil"), ("score", "__import__('os')"),
    ("mask", ""), ("padding", "1;2"), ("padding", "-1"), ("padding", "500"), ("bias", "maybe"),
    ("seed", "99999999999999999999"), ("seed", "-3"), ("embedding", "upload"), ("sentence", "   "),
    ("sentence", "x" * 5000), ("sentence", "zzzz qqqq"), ("glove_vocab", "5"), ("d_model", "0"),
])
def test_tampered_value_falls_back_with_a_notice(field, bad):
    query = dict(config_to_query(Config(d_v=6, seed=3)), **{field: bad})
    config, notices = config_from_query(query)
    assert getattr(config, field) == getattr(Config(), field)
    assert (config.d_v, config.seed if field != "seed" else 3) == (6, 3)      # the other fields survive
    assert len(notices) == 1 and f"“{field}”" in notices[0]


def test_fields_that_do_not_fit_together():
    config, notices = config_from_query({"n_heads": "2", "embedding": "toy"})
    assert config.n_heads == 2 and config.embedding == "glove"             # toy vectors cannot train the weights
    assert len(notices) == 1 and "“embedding”" in notices[0] and "set the weights to seeded random" in notices[0]
    config, notices = config_from_query({"n_heads": "2", "embedding": "toy", "weights": "random"})
    assert (config.n_heads, config.embedding, config.weights, notices) == (2, "toy", "random", [])
    config, notices = config_from_query({"mask": "padding", "padding": "9"})
    assert config.padding == () and "“padding”" in notices[0]
    config, notices = config_from_query({"n_heads": "16", "d_k": "64", "embedding": "random", "d_model": "16"})
    assert config.d_k == 64 and config.n_heads == 1 and "“n_heads”" in notices[0]


def test_multi_valued_and_unknown_keys():
    config, notices = config_from_query({"d_k": ["3", "5"], "utm_source": "mail", "vectors": "cat 1 2"})
    assert config.d_k == 5 and config.vectors is None and notices == []


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.sampled_from(QUERY_FIELDS + ("junk",)),
                       st.one_of(st.text(max_size=12), st.sampled_from(["1", "0", "8", "2", "3", "-1", "1e400", "toy",
                                                                        "random", "causal", "padding", "0,1"])),
                       max_size=8))
def test_any_query_gives_a_config_and_never_raises(params):
    config, notices = config_from_query(params)
    assert isinstance(config, Config) and all(isinstance(n, str) for n in notices)
    run_forward(config)                                                      # it works
    named = {f.name for f in fields(Config)}
    assert all(any(f"“{n}”" in note for n in named) or "defaults" in note for note in notices)
    # a field the link set but the config does not carry was named in a notice
    for name, raw in params.items():
        if name in QUERY_FIELDS and not notices:
            assert config_to_query(config)[name].strip().lower() == str(raw).strip().lower() or name in (
                "d_model", "glove_vocab", "d_k", "d_v", "n_heads", "seed", "pe_base", "temperature", "bias",
                "padding", "sentence")                                       # number spellings vary ("08")
