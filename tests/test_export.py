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
from attention_core.labs.export import (QUERY_FIELDS, array_from_csv, config_from_query, config_to_query,
                                        csv_files, csv_zip, load_npz, npz_bytes, python_script, step_csv)

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
    # issue 13: RoPE, ALiBi, grouped KV heads, the sliding window
    "rope-gqa-causal-bias": Config(sentence="the cat sat on the mat", embedding="random", weights="random", d_model=8,
                                   positional="rope", n_heads=4, n_kv_heads=2, mask="causal", bias=True),
    "gqa-trained-causal": Config(n_heads=4, n_kv_heads=2, mask="causal"),            # mean-pooled W_K, W_V literals
    "alibi-3-heads-window": Config(sentence="the cat sat on the mat today", positional="alibi", n_heads=3,
                                   mask="sliding_window", window=2, temperature=0.7),
    "mqa-bilinear": Config(sentence="we like the dog today", embedding="random", weights="random", d_model=8,
                           n_heads=4, n_kv_heads=1, score="bilinear", mask="sliding_window", window=9),
    "rope-additive-padding": Config(sentence="i love you today", positional="rope", score="additive", mask="padding",
                                    padding=(1,), d_k=6, pe_base=500.0),
    "alibi-6-heads-gqa-dot": Config(sentence="i see you now", embedding="random", weights="random", d_model=6,
                                    positional="alibi", n_heads=6, n_kv_heads=3, score="dot", temperature=0.5, bias=True),
    "alibi-1-head-additive": Config(sentence="we like you", positional="alibi", score="additive", mask="causal"),
    "rope-mqa-bilinear-trained": Config(sentence="i love you today", positional="rope", n_heads=2, n_kv_heads=1,
                                        score="bilinear", d_k=2),
}
NEW_SETTINGS = [SCRIPT_CONFIGS[k] for k in SCRIPT_CONFIGS if k.startswith(("rope", "gqa", "alibi", "mqa"))]


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


@pytest.mark.parametrize("config", NEW_SETTINGS, ids=lambda c: f"{c.positional}-H{c.n_heads}/{c.kv_heads}-{c.mask}")
def test_npz_round_trip_with_rope_alibi_gqa_and_windows(config):
    trace = run_forward(config)
    arrays = load_npz(npz_bytes(trace))
    assert_steps_equal(arrays, trace, 0.0)
    for key in ("w_k", "w_v"):                                             # H_kv heads' columns
        width = config.d_v if key == "w_v" else config.d_k
        assert arrays[key].shape[1] == config.kv_heads * width


@pytest.mark.parametrize("config", [Config(), MULTI, Config(mask="padding", padding=(1,), bias=True), *NEW_SETTINGS],
                         ids=["default", "heads", "padding-bias", *(f"{c.positional}-H{c.n_heads}/{c.kv_heads}-{c.mask}"
                                                                     for c in NEW_SETTINGS)])
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


@pytest.mark.parametrize("name", ["additive-heads-padding", "rope-gqa-causal-bias", "alibi-6-heads-gqa-dot"])
def test_generated_script_with_literal_weights(name, tmp_path):
    config = SCRIPT_CONFIGS[name]
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
                                           temperature=0.123456789, pe_base=1234.5678901, seed=2**32 - 1),
                                    Config(n_heads=4, n_kv_heads=1, positional="rope", pe_base=500000.0,
                                           mask="sliding_window", window=128),
                                    Config(n_heads=4, window=7)])                # a window kept while the mask is off
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
    ("n_kv_heads", "-1"), ("n_kv_heads", "two"), ("n_kv_heads", "17"), ("n_kv_heads", "3"), ("n_kv_heads", "1.5"),
    ("window", "0"), ("window", "-2"), ("window", "129"), ("window", "2.5"), ("window", ""), ("positional", "yarn"),
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


def test_kv_heads_that_do_not_divide_the_heads_fall_back_with_a_notice():
    """n_kv_heads=3 with n_heads=4: the KV heads cannot be shared evenly; the link keeps the 4 heads, H_kv falls
    back to 0 (one KV head per query head) and the notice says which KV heads would work."""
    query = config_to_query(Config(n_heads=4, positional="rope", mask="sliding_window", window=2))
    config, notices = config_from_query(dict(query, n_kv_heads="3"))
    assert (config.n_heads, config.n_kv_heads, config.kv_heads) == (4, 0, 4)
    assert (config.positional, config.mask, config.window) == ("rope", "sliding_window", 2)
    assert len(notices) == 1 and "“n_kv_heads”" in notices[0] and "1, 2 or 4" in notices[0]
    config, notices = config_from_query(dict(query, n_kv_heads="2"))
    assert config.kv_heads == 2 and notices == []
    config, notices = config_from_query(dict(query, n_kv_heads="4"))             # H_kv = H: plain multi-head, spelled 0
    assert config.n_kv_heads == 0 and config == Config(n_heads=4, positional="rope", mask="sliding_window", window=2)
    assert notices == []
    # the heads tampered: 2 KV heads no longer fit the 1 head that is left
    config, notices = config_from_query(dict(query, n_heads="lots", n_kv_heads="2"))
    assert (config.n_heads, config.n_kv_heads) == (1, 0)
    assert [n.split("”")[0] for n in notices] == ["Link setting “n_heads", "Link setting “n_kv_heads"]


def test_window_zero_and_rope_with_odd_d_k_fall_back_with_a_notice():
    config, notices = config_from_query({"mask": "sliding_window", "window": "0"})
    assert (config.mask, config.window) == ("sliding_window", Config().window)
    assert len(notices) == 1 and "“window”" in notices[0] and "use 1 to 128" in notices[0]
    config, notices = config_from_query({"positional": "rope", "d_k": "5"})
    assert (config.positional, config.d_k) == ("rope", Config().d_k)
    assert len(notices) == 1 and "“d_k”" in notices[0] and "even" in notices[0]


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 16), st.integers(-2, 18), st.sampled_from(["none", "causal", "sliding_window"]),
       st.integers(-1, 130), st.sampled_from(["rope", "alibi", "sinusoidal"]))
def test_heads_kv_heads_and_window_from_a_link(n_heads, n_kv_heads, mask, window, positional):
    """Whatever numbers a link carries: a valid combination comes back exactly, an invalid field falls back to
    its default with a notice naming it, and the forward pass runs."""
    query = {"embedding": "random", "weights": "random", "d_model": "8", "n_heads": str(n_heads),
             "n_kv_heads": str(n_kv_heads), "mask": mask, "window": str(window), "positional": positional}
    config, notices = config_from_query(query)
    run_forward(config)
    named = " ".join(notices)
    assert config.n_heads == n_heads and "“n_heads”" not in named
    kv_ok = 0 <= n_kv_heads <= 16 and (n_kv_heads == 0 or n_heads % n_kv_heads == 0)
    assert config.kv_heads == ((n_kv_heads or n_heads) if kv_ok else n_heads)
    assert ("“n_kv_heads”" in named) == (not kv_ok)
    window_ok = 1 <= window <= 128
    assert config.window == (window if window_ok else Config().window)
    assert ("“window”" in named) == (not window_ok)
    assert (config.mask, config.positional) == (mask, positional)
    assert len(notices) == (not kv_ok) + (not window_ok)
    back, again = config_from_query(config_to_query(config))
    assert back == config and again == []


def test_multi_valued_and_unknown_keys():
    config, notices = config_from_query({"d_k": ["3", "5"], "utm_source": "mail", "vectors": "cat 1 2"})
    assert config.d_k == 5 and config.vectors is None and notices == []


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.sampled_from(QUERY_FIELDS + ("junk",)),
                       st.one_of(st.text(max_size=12), st.sampled_from(["1", "0", "8", "2", "3", "-1", "1e400", "toy",
                                                                        "random", "causal", "padding", "0,1", "4",
                                                                        "rope", "alibi", "sliding_window"])),
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
            if name == "n_kv_heads":                                         # H_kv = H is spelled 0
                assert config.kv_heads == (int(str(raw).strip()) or config.n_heads)
                continue
            assert config_to_query(config)[name].strip().lower() == str(raw).strip().lower() or name in (
                "d_model", "glove_vocab", "d_k", "d_v", "n_heads", "seed", "pe_base", "temperature", "bias",
                "padding", "sentence", "window")                             # number spellings vary ("08")


# ---- issue 12: the notation in the script, the CSV headers and the symbols ---------------------------

import json
import re

from attention_core.math import notation
from attention_core.labs.export import STEP_SYMBOLS, csv_names, csv_readme, step_symbol

SCRIPT_SYMBOL = {"scores": "S", "scaled_scores": "Ŝ", "masked_scores": "S̃"}


def test_script_states_the_weight_orientation_rightly():
    """Q = X W^Q with W_Q (d_model, H·d_k), as the Transformer paper and numpy write it; PyTorch's nn.Linear
    stores the transpose: checked with torch itself, and by the script's own arrays."""
    import torch
    source = python_script(MULTI)
    for words in ("as the Transformer paper writes", "(Q = X W^Q)", "as numpy code does",
                  "Q = X @ W_Q with W_Q of shape (d_model, H·d_k)", "PyTorch's nn.Linear stores the transpose",
                  "its weight is (out, in) = W_Q^T and it computes x W^T"):
        assert words in source, words
    for wrong in ("as in numpy and PyTorch", "Papers often", "papers write the transpose"):
        assert wrong not in source
    assert "q = x @ w_q + b_q" in source
    trace = run_forward(MULTI)
    x, w_q = trace["x"].value, trace["w_q"].value
    d_model, width = w_q.shape
    assert (d_model, width) == (trace.facts["d_model"], MULTI.n_heads * MULTI.d_k)     # (d_model, H·d_k)
    linear = torch.nn.Linear(d_model, width, bias=False, dtype=torch.float64)
    assert tuple(linear.weight.shape) == w_q.T.shape != w_q.shape                     # (out, in): the transpose
    with torch.no_grad():
        linear.weight.copy_(torch.from_numpy(np.array(w_q.T)))
        out = linear(torch.from_numpy(np.array(x))).numpy()
    np.testing.assert_allclose(out, x @ w_q, rtol=0, atol=1e-12)                        # x Wᵀ = X W_Q
    np.testing.assert_allclose(out + trace["b_q"].value, trace["q"].value, rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", SCRIPT_CONFIGS)
def test_script_comments_in_the_notation(name):
    """Every step's comment names its symbol as the notation does (S raw, Ŝ scaled, S̃ masked, A, C, O;
    per head S_h … with h = 0 … H−1 and H the count), and what softmax reads is what the settings feed it."""
    config = SCRIPT_CONFIGS[name]
    source = python_script(config)
    h = config.n_heads
    hs = "_h" if h > 1 else ""
    grouped = config.kv_heads < h
    kv = "_{⌊h/g⌋}" if grouped else hs                           # the KV head query head h reads
    r = "^R" if config.positional == "rope" else ""
    for old in ("N_HEADS", "heads?", "(heads,", "seed 00", "Seed 00", "W_B", "h-1", "h−1}"):
        assert old not in source, old
    assert re.search(rf"^N, D_MODEL, H, D_K, D_V = \d+, \d+, {h}, {config.d_k}, {config.d_v}  #", source, re.M)
    assert "H heads, h = 0 … H−1 a\nhead's index" in source
    k = f"(K^R{kv})" if r else f"K{kv}"                          # (K^R_h)^T: one superscript at a time
    raw = {"dot": f"S{hs} = Q{r}{hs} {k}^T", "scaled_dot": f"S{hs} = Q{r}{hs} {k}^T",
           "additive": f"S{hs}[i, j] = v^T tanh(W_1^T q{r}_i + W_2^T k{r}_j)", "bilinear": f"S{hs} = Q{r}{hs} W {k}^T"}
    assert f"# -- raw scores" in source and raw[config.score] in source
    assert (f"# Ŝ{hs} = S{hs} / √d_k" in source) == (config.score == "scaled_dot")
    before = ("Ŝ" if config.score == "scaled_dot" else "S") + hs
    if config.positional == "alibi":
        assert f"# {before} + B{hs}: a key further back scores lower" in source
        assert ("(B_h)[i, j] = −m_h |i − j|" if h > 1 else "B[i, j] = −m_0 |i − j|") in source
        before = f"({before} + B{hs})"
    else:
        assert "alibi" not in source
    if config.mask != "none":
        assert f"# S̃{hs} = {before} with -inf where M[i, j] = 0" in source
    else:
        assert "S̃" not in source.split('"""', 2)[2]
    plain = {notation.S: "S", notation.S_SCALED: "Ŝ", notation.S_MASKED: "S̃", notation.B: "B"}
    reads = " + ".join(plain[p] + hs for p in notation.softmax_input(config).split(" + "))     # Ŝ_h + B_h
    t = "" if config.temperature == 1 else " / T"
    reads = f"({reads})" if t and " + " in reads else reads
    assert f"# -- attention weights: A{hs} = softmax({reads}{t}), over each row (the keys j)" in source
    assert f"# C{hs} = A{hs} V{kv}:" in source
    if r:
        for words in ("q^R_p = R_p q_p and k^R_p = R_p k_p", "θ_i = base^(−2i/d_k)",
                      "(q^R_p)[2i]   = q_p[2i] cos(p·θ_i) − q_p[2i+1] sin(p·θ_i)", "interleaved pairs"):
            assert words in source, words
    else:
        assert "rotate(" not in source and "q_rot" not in source
    if grouped:
        assert f"H_KV, G = {config.kv_heads}, {h // config.kv_heads}  #" in source
        assert "# K_h = K[:, h·d_k : (h+1)·d_k], h = 0 … H_kv−1: (H_kv, n, d_k" in source
        assert "np.repeat(" in source and "query head h reads KV head ⌊h / g⌋" in source
    else:
        assert "H_KV" not in source and "np.repeat(" not in source
    if config.mask == "sliding_window":
        assert f"0 ≤ i − j < W, W = {config.window} keys" in source
    assert ("# C = [C_0 | … | C_{H−1}], the heads side by side: (n, H·d_v)" in source) == (h > 1)
    assert "# O = C W_O" in source
    if h > 1:
        assert "# Q_h = Q[:, h·d_k : (h+1)·d_k], h = 0 … H−1" in source
        trace = run_forward(config)                                # … and that is what the split does
        for head in range(h):
            np.testing.assert_array_equal(trace["q_heads"].value[head],
                                          trace["q"].value[:, head * config.d_k:(head + 1) * config.d_k])


def test_csv_headers_and_symbols_in_the_notation():
    """3-d files start with a column h (a head's index, 0 … H−1); the zip's README and the .npz manifest give
    each step the notation's symbol (Ŝ_h scaled, S̃_h masked, A_h, C_h per head, C concatenated, O)."""
    trace = run_forward(MULTI)
    files = csv_files(trace)
    for name, key in csv_names(trace).items():
        rows = list(csv.reader(io.StringIO(files[name])))
        assert "head" not in rows[0]
        if trace[key].value.ndim == 3:
            assert rows[0][0] == "h"
            assert sorted({int(r[0]) for r in rows[1:]}) == list(range(MULTI.n_heads))
    want = {"scores": "S_h", "scaled_scores": "Ŝ_h", "mask": "M", "masked_scores": "S̃_h", "weights": "A_h",
            "context": "C_h", "concat": "C", "output": "O", "q_heads": "Q_h", "w_q": "W_Q", "b_q": "b_Q",
            "w_o": "W_O", "b_o": "b_O", "x_embed": "X_emb", "pe": "PE"}
    readme = csv_readme(trace)
    names = csv_names(trace)
    listed = [line.split()[:2] for line in readme.splitlines() if re.match(r"\d\d_\w+\.csv  ", line)]
    assert [name for name, _ in listed] == list(names)
    for name, symbol in listed:
        if names[name] in want:
            assert symbol == want[names[name]], (name, symbol)
    assert "PyTorch's nn.Linear stores the transpose" in readme and "counted from 0" in readme
    with np.load(io.BytesIO(npz_bytes(trace)), allow_pickle=False) as npz:
        manifest = json.loads(str(npz["__manifest__"]))
    symbols = {s["key"]: s["symbol"] for s in manifest["steps"]}
    assert all(symbols[k] == v for k, v in want.items()), symbols
    one = run_forward(Config(mask="causal"))
    assert {k: step_symbol(one[k]) for k in ("scaled_scores", "masked_scores", "weights", "context")} == {
        "scaled_scores": "Ŝ", "masked_scores": "S̃", "weights": "A", "context": "C"}
    assert set(STEP_SYMBOLS) >= set(trace.keys()) | set(run_forward(SCRIPT_CONFIGS["additive-heads-padding"]).keys())


def test_csv_written_before_the_notation_still_reads_back():
    """A file whose head column is still called 'head' (written before issue 12) reads back the same."""
    trace = run_forward(MULTI)
    text = step_csv(trace["weights"], trace)
    old = "head" + text[1:]
    assert text.startswith("h,") and np.array_equal(array_from_csv(old), trace["weights"].value)


# ---- issue 13: RoPE, ALiBi, grouped KV heads and the sliding window in the script and the files -----------

def _script_function(source: str, name: str):
    """A function the generated script defines, compiled alone (its module-level names given)."""
    tree = ast.parse(source)
    node = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name)
    scope = {"np": np}
    exec(compile(ast.Module(body=[node], type_ignores=[]), "<script>", "exec"), scope)
    return scope[name]


def test_script_alibi_slopes_are_the_papers_for_every_head_count():
    """The script's own alibi_slopes: 2^(−8(h+1)/H) for a power of two; for other H the paper's construction
    (the closest power of two's slopes, then every other slope of twice as many heads)."""
    from attention_core.math.alibi import alibi_slopes
    slopes = _script_function(python_script(SCRIPT_CONFIGS["alibi-3-heads-window"]), "alibi_slopes")
    assert slopes(8).tolist() == [2.0 ** -k for k in range(1, 9)]                           # 1/2 … 1/256
    assert slopes(3).tolist() == [2.0 ** -4, 2.0 ** -8, 2.0 ** -2]
    assert slopes(6).tolist() == [2.0 ** -2, 2.0 ** -4, 2.0 ** -6, 2.0 ** -8, 2.0 ** -1, 2.0 ** -3]
    for n_heads in range(1, 17):
        assert np.array_equal(slopes(n_heads), alibi_slopes(n_heads)), n_heads
    assert "m_0 = 1/16, m_1 = 1/256, m_2 = 1/4" in python_script(SCRIPT_CONFIGS["alibi-3-heads-window"])


def test_script_rope_is_the_complex_rotation_and_its_gqa_is_torchs(tmp_path):
    """The script's Q^R, K^R against RoPE's complex-number form (z_i e^{i p θ_i}); its context against torch's
    scaled_dot_product_attention with enable_gqa=True and an explicit causal mask."""
    torch = pytest.importorskip("torch")
    from attention_core.math.rope import rotary_complex
    config = SCRIPT_CONFIGS["rope-gqa-causal-bias"]
    arrays = run_script(python_script(config), tmp_path, "rope_gqa")
    for name in ("q", "k"):
        np.testing.assert_allclose(arrays[f"{name}_rot"], rotary_complex(arrays[f"{name}_heads"]), rtol=0, atol=1e-12)
    assert arrays["k_rot"].shape[0] == config.kv_heads == 2 and arrays["q_rot"].shape[0] == 4
    n = arrays["x"].shape[0]
    q, k, v = (torch.from_numpy(np.array(arrays[key]))[None] for key in ("q_rot", "k_rot", "v_heads"))
    mask = torch.ones(n, n, dtype=torch.bool).tril()
    out = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)[0].numpy()
    np.testing.assert_allclose(arrays["context"], out, rtol=0, atol=1e-12)


def test_script_alibi_and_window_are_torchs_float_bias_and_bool_mask(tmp_path):
    """ALiBi's B as a float attn_mask plus the window's M, in torch, give the script's weights and context."""
    torch = pytest.importorskip("torch")
    config = SCRIPT_CONFIGS["alibi-3-heads-window"]
    arrays = run_script(python_script(config), tmp_path, "alibi_window")
    n = arrays["x"].shape[0]
    i = np.arange(n)
    window = (i[:, None] - i[None, :] >= 0) & (i[:, None] - i[None, :] < config.window)
    assert np.array_equal(arrays["mask"], window.astype(float))
    bias = np.where(window, arrays["alibi"], -np.inf)                       # (H, n, n): B with −∞ where hidden
    q, k, v = (torch.from_numpy(np.array(arrays[key]))[None] for key in ("q_heads", "k_heads", "v_heads"))
    t = config.temperature
    out = torch.nn.functional.scaled_dot_product_attention(q / t, k, v, attn_mask=torch.from_numpy(bias / t)[None])
    np.testing.assert_allclose(arrays["context"], out[0].numpy(), rtol=0, atol=1e-12)


def test_script_writes_the_trained_mean_pooled_kv_weights_as_literals():
    """Trained weights with grouped KV heads: W_K, W_V are the mean of each group's trained columns, written in."""
    from attention_core.forward.weights import mean_pool_heads
    from attention_core.training.pretrained import trained_weights
    config = SCRIPT_CONFIGS["gqa-trained-causal"]
    source = python_script(config)
    tree = ast.parse(source)
    assigned = {node.targets[0].id: node.value for node in tree.body if isinstance(node, ast.Assign)
                and isinstance(node.targets[0], ast.Name)}
    full = trained_weights(config).params
    for name, width in (("w_k", config.d_k), ("w_v", config.d_v)):
        written = np.array(ast.literal_eval(assigned[name].args[0]))
        assert written.shape == (full[name].shape[0], config.kv_heads * width)
        np.testing.assert_array_equal(written, mean_pool_heads(full[name], 4, 2, width))
    assert "mean of its group's g = 2 trained heads' columns" in source


def test_symbols_of_the_new_steps_in_the_notation():
    """Q^R, K^R (RoPE), B and (Ŝ+B) or (S+B) (ALiBi), per head with _h; K_h, V_h with H_kv blocks under GQA."""
    trace = run_forward(SCRIPT_CONFIGS["rope-gqa-causal-bias"])
    symbols = {s.key: step_symbol(s) for s in trace}
    assert {k: symbols[k] for k in ("q_rot", "k_rot", "k_heads", "v_heads", "w_k", "scores")} == {
        "q_rot": "Q^R_h", "k_rot": "K^R_h", "k_heads": "K_h", "v_heads": "V_h", "w_k": "W_K", "scores": "S_h"}
    files = csv_files(trace)
    for name, key in csv_names(trace).items():
        if key in ("k_heads", "v_heads", "k_rot"):
            rows = list(csv.reader(io.StringIO(files[name])))
            assert rows[0][0] == "h" and sorted({int(r[0]) for r in rows[1:]}) == [0, 1]          # H_kv = 2 blocks
    readme = csv_readme(trace)
    assert "H_kv = 2 key/value heads" in readme and "query head h reads KV head ⌊h / g⌋, g = H / H_kv = 2" in readme
    assert "θ_i = base^(−2i/d_k)" in readme
    alibi = run_forward(SCRIPT_CONFIGS["alibi-3-heads-window"])
    assert {k: step_symbol(alibi[k]) for k in ("alibi", "biased_scores", "masked_scores")} == {
        "alibi": "B_h", "biased_scores": "(Ŝ+B)_h", "masked_scores": "S̃_h"}
    assert "0 ≤ i − j < W = 2" in csv_readme(alibi) and "(Ŝ+B) = Ŝ + B" in csv_readme(alibi)
    one = run_forward(SCRIPT_CONFIGS["alibi-1-head-additive"])
    assert {k: step_symbol(one[k]) for k in ("alibi", "biased_scores")} == {"alibi": "B", "biased_scores": "(S+B)"}
    with np.load(io.BytesIO(npz_bytes(alibi)), allow_pickle=False) as npz:
        manifest = json.loads(str(npz["__manifest__"]))
    assert {s["key"]: s["symbol"] for s in manifest["steps"]}["biased_scores"] == "(Ŝ+B)_h"
    every = set().union(*(run_forward(c).keys() for c in NEW_SETTINGS))
    assert set(STEP_SYMBOLS) >= every


def test_a_link_whose_fallback_drops_a_field_the_others_need_never_raises():
    """Only unknown words and shared KV heads: dropping n_heads alone leaves 2 KV heads for 1 query head
    (a ConfigError that escaped and crashed every page); the fallback goes on to the next field."""
    config, notices = config_from_query({"sentence": "zebra", "n_heads": "4", "n_kv_heads": "2"})
    assert notices and config.sentence == Config().sentence        # the sentence was the culprit
    assert (config.n_heads, config.n_kv_heads) == (4, 2)
