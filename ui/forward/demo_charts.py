"""The scores and positional pages' experiments as charts, computed once per process (their inputs never
change, or are the chart's whole key)."""
from __future__ import annotations

import functools

from attention_core.math.demos import dot_product_spread, saturation

from ..charts import grouped_bars_spec, line_spec
from ..phone import fill_width
from ..page_state import SCORES_DK as D_VALUES      # the experiment's d_k: a control a view carries


@functools.lru_cache(maxsize=1)
def spread_chart() -> dict:
    spread = dot_product_spread(D_VALUES)
    data = [{"d_k": r["d_k"], "variance": r[name], "scores": name}
            for r in spread for name in ("variance of q·k", "variance of q·k/√d_k")]
    return fill_width(line_spec(data, "d_k", "variance", "scores", width=300, log=True,
                                title="Variance of 2,000 dot products of random unit-variance vectors"))


@functools.lru_cache(maxsize=len(D_VALUES))
def saturation_chart(d_k: int) -> tuple[dict, float, float]:
    """(chart, largest weight unscaled, largest weight scaled) for one query against 6 random keys."""
    sat = saturation(d_k)
    data = [{"key": j, "weight": float(w), "softmax of": name}
            for name, ws in (("softmax(q·k)", sat["weights_unscaled"]), ("softmax(q·k/√d_k)", sat["weights_scaled"]))
            for j, w in enumerate(ws)]
    chart = fill_width(grouped_bars_spec(data, "key", "weight", "softmax of",
                                         title=f"One query, 6 random keys, d_k = {d_k}"))
    return chart, float(sat["weights_unscaled"].max()), float(sat["weights_scaled"].max())


@functools.lru_cache(maxsize=64)
def pe_curves_chart(dims: tuple[int, ...], values_bytes: bytes, shape: tuple[int, int]) -> dict:
    """A few columns of a positional-encoding table as curves along the positions."""
    import numpy as np
    table = np.frombuffer(values_bytes, dtype=np.float64).reshape(shape)
    data = [{"position": p, "value": float(table[p, j]), "dimension": f"dim {j}"}
            for j in dims for p in range(shape[0])]
    return fill_width(line_spec(data, "position", "value", "dimension", title="PE[p, j] along the positions"))
