"""docs/notation.md and attention_core/notation.py say the same, and the forward pass writes its formulas in it."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from attention_core import Config, run_forward
from attention_core.math.notation import SYMBOLS, attention_formula, softmax_argument, softmax_input

ROOT = Path(__file__).resolve().parents[1]
DOC = (ROOT / "docs" / "notation.md").read_text(encoding="utf-8")
UNICODE = {r"\hat S": "Ŝ", r"\tilde S": "S̃"}


def test_every_symbol_of_the_module_is_in_the_document():
    for symbol in SYMBOLS:
        for part in symbol.split(", "):
            name = re.escape(UNICODE.get(part, part))
            assert re.search(rf"^\|[^\n]*(?<!\w){name}(?![^\W_])[^\n]*\|", DOC, flags=re.M), part   # in a table row


def test_the_document_counts_from_0_and_keeps_H_for_the_count():
    assert "counted **from 0**" in DOC and "| a head | h | 0 … H−1 |" in DOC
    assert "**H** the number of heads" in DOC


SETTINGS = [Config(), Config(score="dot"), Config(score="additive", mask="causal"), Config(score="bilinear", temperature=2.0),
            Config(n_heads=2, mask="padding", padding=(1,), temperature=0.5), Config(n_heads=4, score="dot", mask="causal"),
            Config(positional="rope", n_heads=4, n_kv_heads=2), Config(positional="alibi", n_heads=2, temperature=2.0),
            Config(positional="alibi", score="dot", mask="sliding_window", window=2),
            Config(positional="rope", score="bilinear", n_heads=2, n_kv_heads=1, mask="causal")]


@pytest.mark.parametrize("config", SETTINGS)
def test_the_forward_formulas_use_the_notation(config):
    trace = run_forward(config)
    assert trace["scores"].formula.startswith("S")                         # raw scores: S (S_h with heads)
    if "scaled_scores" in trace:
        assert trace["scaled_scores"].formula.startswith(r"\hat S")
    if "masked_scores" in trace:
        assert trace["masked_scores"].formula.startswith(r"\tilde S")
    assert softmax_input(config) == {"scores": "S", "scaled_scores": r"\hat S",
                                     "biased_scores": r"\hat S + B" if config.score == "scaled_dot" else "S + B",
                                     "masked_scores": r"\tilde S"}[trace.facts["softmax_input"]]
    if config.positional == "rope":                                    # the scores read the rotated rows
        assert "Q^R" in trace["scores"].formula and "{K^R" in trace["scores"].formula
        assert trace["scores"].inputs[:2] == ("q_rot", "k_rot")
    if config.kv_heads < config.n_heads:                               # query head h reads KV head ⌊h/g⌋
        assert r"\lfloor h/g \rfloor" in trace["scores"].formula + trace.steps.get("scaled_scores", trace["scores"]).formula
        assert trace["k_heads"].shape[0] == config.kv_heads
    assert rf"\mathrm{{softmax}}({softmax_argument(config)})" in trace["weights"].formula
    assert attention_formula(config).startswith(rf"A = \mathrm{{softmax}}\!\left({softmax_argument(config)}\right)")
    if config.n_heads > 1:
        assert "C_{H-1}" in trace["concat"].formula and trace["q_heads"].axes == ("head", "n", "d_k")
        assert trace["q"].axes == ("n", "H·d_k")
