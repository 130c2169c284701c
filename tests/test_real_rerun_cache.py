"""What the real pages keep beside a cached Trace so that a rerun with nothing changed is cheap (ui/cache.py beside):
it is made once per key, bounded, and what it keeps is exactly what the page computed before the cache (the same
sentence, the same bars, the same cells of the grid of every head)."""
from __future__ import annotations

import numpy as np
import pytest

from attention_core import Trace

pytest.importorskip("tokenizers")
pytest.importorskip("safetensors")
SENTENCE = "the cat sat on the mat and the cat sat on the"


def test_beside_makes_once_per_key_keeps_at_most_size_and_keeps_nothing_after_an_error():
    from ui.cache import beside
    trace, made = Trace(tokens=("a",)), []

    def make(key):
        made.append(key)
        return [key]
    first = beside(trace, "t", 1, lambda: make(1), size=2)
    assert beside(trace, "t", 1, lambda: make(1), size=2) is first and made == [1]       # the same object, once
    beside(trace, "t", 2, lambda: make(2), size=2)
    beside(trace, "t", 1, lambda: make(1), size=2)                                       # 1 is the newest now
    beside(trace, "t", 3, lambda: make(3), size=2)                                       # 2, the oldest, goes
    assert list(trace.facts["beside:t"]) == [1, 3] and made == [1, 2, 3]
    assert beside(trace, "other", 1, lambda: "x") == "x"                                # names apart
    with pytest.raises(ValueError):
        beside(trace, "t", 4, lambda: (_ for _ in ()).throw(ValueError("bad")), size=2)
    assert 4 not in trace.facts["beside:t"] and Trace(tokens=()).facts == {}            # and per trace


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    from attention_core.training.real import load_model, run_real
    from tests.real_checkpoints import numpy_checkpoint
    return run_real(load_model(numpy_checkpoint(tmp_path_factory.mktemp("gpt2"), "gpt2")), SENTENCE)


@pytest.mark.parametrize("T, k, p, seed", [(0.7, 50, 0.9, 0), (0.0, 50, 0.9, 0), (1.3, 0, 1.0, 7)])
def test_the_drawn_token_is_the_samplers_sentence_and_bars_and_is_kept(trace, T, k, p, seed):
    from ui.chart_words import spec_sentence
    from ui.real.next_view import bars_spec, drawn, said, sample
    out = sample(trace, T, k, p, seed)
    text, bars = drawn(trace, T, k, p, seed)
    plain = bars_spec(trace, out, T)
    assert text == said(trace, out, T, k, p)
    assert bars == {**plain, "description": spec_sentence(plain)} and bars["description"]
    assert drawn(trace, T, k, p, seed)[1] is bars                       # a rerun: kept, not drawn again


def test_the_grid_sends_the_same_cells_in_fewer_bytes(trace):
    import pyarrow as pa

    from ui.real.heads_view import grid_rows, grid_spec
    spec, table, m = grid_spec(trace)
    rows = table.to_pylist()
    n_layers, n_heads, side = len(trace.facts["attention"]), trace.facts["n_heads"], m + 1
    i, j = np.tril_indices(m)
    assert len(rows) == n_layers * n_heads * len(i)
    labels = [f"{q} {t}" for q, t in enumerate(trace.tokens[:m])]
    for r in rows[:: max(1, len(rows) // 97)]:                          # a spread of cells, each as it was built
        l, h, q, key = r["layer"], r["head"], r["y"] - r["layer"] * side, r["x"] - r["head"] * side
        assert 0 <= key <= q < m and (r["query"], r["key"]) == (labels[q], labels[key])
        assert r["A"] == pytest.approx(trace.facts["attention"][l]["weights"].value[h, q, key], abs=5e-5)
    assert {"calculate": "datum.x + 1", "as": "x2"} in spec["transform"]  # x2, y2: in the chart, not sent
    assert {"calculate": "datum.y + 1", "as": "y2"} in spec["transform"]
    assert spec["encoding"]["x2"] == {"field": "x2"} and spec["encoding"]["y2"] == {"field": "y2"}
    assert table.schema.field("x").type == pa.int16() and pa.types.is_dictionary(table.schema.field("query").type)
    assert grid_spec(trace)[1] is table and sorted(grid_rows(trace, m)) == sorted(table.column_names)
