"""The parameters' explainers under grouped-query attention with trained weights: a K or V parameter is the
mean of its group's trained heads (forward/weights.py pools them), and its explanation says so and gives
the trace's number (it once gave the first query head's unpooled column)."""
import itertools
import re

import numpy as np
import pytest

from attention_core import Config, run_forward
from attention_core.explanations import explain
from attention_core.forward.weights import init_weight, mean_pool_heads


@pytest.mark.parametrize("n_heads, n_kv_heads", [(2, 1), (4, 2)])
def test_a_pooled_trained_parameter_is_the_traces_number_and_says_its_group(n_heads, n_kv_heads):
    config = Config(n_heads=n_heads, n_kv_heads=n_kv_heads, bias=True)
    trace = run_forward(config)
    g, d_model = n_heads // n_kv_heads, trace.facts["d_model"]
    for key in ("w_k", "w_v", "b_k", "b_v"):
        width = config.d_v if key.endswith("v") else config.d_k
        cells = list(itertools.product(*map(range, trace[key].shape)))
        for cell in cells[::7] + [cells[-1]]:
            e = explain(trace, key, cell, config=config)
            assert e.value == trace[key].value[cell] and e.independent, (key, cell)
            a = cell[-1] // width
            assert f"KV head {a} is the mean of its group's {g} trained heads" in e.note
            start = float(re.search(r"It started at (\S+) ", e.note).group(1))
            if key.startswith("b_"):
                assert start == 0
            else:
                init = init_weight(config.seed, key, (d_model, n_heads * width), d_model)
                assert start == pytest.approx(mean_pool_heads(init, n_heads, n_kv_heads, width)[cell], abs=1e-3)


def test_without_grouping_the_trained_note_is_as_before():
    config = Config(n_heads=2)
    trace = run_forward(config)
    e = explain(trace, "w_k", (3, 5), config=config)
    assert e.value == trace["w_k"].value[3, 5] and "Grouped-query" not in e.note
    assert re.search(r"It started at \S+ \(seeded init N\(0, 1/50\)\); \d+ epochs of SGD", e.note)
    assert np.isfinite(e.value)
