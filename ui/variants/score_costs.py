"""The score-functions page's costs: FLOPs against the sentence length as a chart, and the costs at the
sidebar's sizes as a table, each built once per sizes per process."""
from __future__ import annotations

import functools

from ..charts import line_spec
from ..phone import fill_width


@functools.lru_cache(maxsize=64)
def cost_chart(d_k: int, d_a: int, names: tuple[tuple[str, str], ...]) -> dict:
    """The score functions' FLOPs against the sentence length, once per (d_k, d_a) per process
    (Altair's validation of the spec costs more than the rest of the page's rerun)."""
    from attention_core.lessons.torch_mha import score_costs
    label = dict(names)
    data = [{"n": m, "FLOPs": c["flops"], "score": label[c["name"]]}
            for m in (2, 4, 8, 16, 32, 64, 128, 256, 512, 1024) for c in score_costs(m, m, d_k, d_a)]
    return fill_width(line_spec(data, "n", "FLOPs", "score", log=True, width=520, x_title="tokens n (= n_q = n_k)",
                                y_title="FLOPs per head",
                                title=f"Score FLOPs against sentence length (d_k = d_a = {d_k})"))


@functools.lru_cache(maxsize=64)
def cost_table(n: int, d_k: int, d_a: int, heads: int, names: tuple[tuple[str, str], ...]):
    """The score functions' costs at these sizes as a pyarrow Table, once per sizes per process
    (st.dataframe sends a Table as it is; a list of dicts goes through pandas on every rerun)."""
    import pyarrow as pa
    from attention_core.lessons.torch_mha import score_costs
    label, rows = dict(names), []
    for c in score_costs(n, n, d_k, d_a):
        row = {"score function": label[c["name"]], "FLOPs": c["flops"], "parameters": c["params"],
               "largest array (entries)": c["memory"]}
        if heads > 1:
            row.update({f"FLOPs, {heads} heads": heads * c["flops"], f"parameters, {heads} heads": heads * c["params"]})
        rows.append(row)
    return pa.Table.from_pylist(rows)
