"""Every number explained: how trace[key].value[cell] was made, with the live values in.

    >>> from attention_core import Config, run_forward
    >>> config = Config(sentence="I love you today")
    >>> trace = run_forward(config)
    >>> e = explain(trace, "scaled_scores", (1, 2), config=config)
    >>> print(e.symbolic)
    \\hat S_{1,2} = \\frac{S_{1,2}}{\\sqrt{d_k}} = \\frac{\\sum_{m=0}^{3} Q_{1,m}\\, K_{2,m}}{\\sqrt{d_k}}
    >>> bool(abs(e.value - trace["scaled_scores"].value[1, 2]) < 1e-12)
    True

Pass the `config` the trace was made from (or let run_forward store it in trace.facts["config"]):
then leaves are regenerated too (an embedding row looked up again, a weight drawn again from its seeded
generator) and pe_base / temperature are exact. Without it a leaf can only be read back
(`independent=False`) and the temperature is read from the step's formula (or, if that was rounded,
from the weights themselves).

The registry
------------
EXPLAINERS maps (trace kind, step key) to `fn(ctx: Context, cell: tuple[int, ...]) -> Explanation`.
The kind tells traces apart that reuse a key for other math: run_forward's traces are
"forward" (its facts say so); the classifier's (its facts carry "classes", or set facts["kind"])
are "classifier", where "scores" is already scaled and "w_o" maps to 3 classes; any other trace
(Bahdanau's, the grid's, PyTorch's) is "other" until it names its kind, so a forward explainer
never reads a "scores" it does not know. kind="*" serves any trace.
A module that adds steps (e.g. the classifier's "dL/dw_q") registers its own, at import:

    from attention_core.explanations import Context, Explanation, register

    @register("dL/dw_q", kind="classifier")
    def _dl_dw_q(ctx: Context, cell) -> Explanation:
        m, j = cell                                     # dL/dW_Q[m, j] = Σ_i X[i, m] dL/dQ[i, j]
        x, g = ctx.value("x"), ctx.value("dL/dq")
        return ctx.sum_of_products(
            "dL/dw_q", cell, rf"\\sum_i X_{{i,{m}}}\\, \\partial L/\\partial Q_{{i,{j}}}", f"Σ_i X[i,{m}]·dL/dQ[i,{j}]",
            [(ctx.ref("x", (i, m)), ctx.ref_text("x", (i, m)), x[i, m],
              ctx.ref("dL/dq", (i, j)), ctx.ref_text("dL/dq", (i, j)), g[i, j], ("x", (i, m)), ("dL/dq", (i, j)))
             for i in range(ctx.trace.n)])

and adds its symbols with `SYMBOLS["dL/dw_q"] = (r"\\partial L/\\partial W_Q", "dL/dW_Q")` (otherwise the key
itself, escaped, is the symbol). `ctx.sum_of_products` does the elision, the formatting and the fsum.
Steps that share one shape with other names (Q, K, V; their heads; Q^R, K^R) register one function for
all of them with `register_each`. A user string never reaches sympify or eval here; token text is
escaped (`latex_text`).
"""
from __future__ import annotations

from typing import Callable, Iterable

import numpy as np

from ..forward.config import Config
from ..forward.trace import Trace
from .context import Context, Explanation

Explainer = Callable[[Context, tuple], Explanation]
EXPLAINERS: dict[tuple[str, str], Explainer] = {}        # (trace kind, step key) -> explainer
CONDITIONS: dict[tuple[str, str], Callable[[Trace], bool]] = {}   # (kind, key) -> when it applies (absent: always)


def trace_kind(trace: Trace) -> str:
    """facts['kind'] if set ('forward' for run_forward), 'classifier' if its facts name the classes, else 'other'."""
    return trace.facts.get("kind") or ("classifier" if "classes" in trace.facts else "other")


def register(*keys: str, kind: str = "forward", when: Callable[[Trace], bool] | None = None):
    """Decorator: fn(ctx, cell) -> Explanation explains the cells of the steps named `keys` in traces
    of this kind ("*": any trace), and only those where `when(trace)` holds, if given (e.g. the
    facts the explainer reads are there)."""
    def decorate(fn: Explainer) -> Explainer:
        for key in keys:
            EXPLAINERS[(kind, key)] = fn
            if when is None:
                CONDITIONS.pop((kind, key), None)
            else:
                CONDITIONS[(kind, key)] = when
        return fn
    return decorate


def register_each(keys: Iterable[str], explain_step: Callable[[Context, str, tuple], Explanation],
                  kind: str = "forward") -> None:
    """One function for a family of steps of one shape: explain_step(ctx, key, cell) explains each of `keys`."""
    for key in keys:
        register(key, kind=kind)(lambda ctx, cell, key=key: explain_step(ctx, key, cell))


def explainer_for(trace: Trace, key: str) -> Explainer | None:
    for kind in (trace_kind(trace), "*"):
        fn = EXPLAINERS.get((kind, key))
        if fn is not None and CONDITIONS.get((kind, key), lambda _: True)(trace):
            return fn
    return None


def can_explain(trace: Trace, key: str) -> bool:
    return key in trace and explainer_for(trace, key) is not None


def explain(trace: Trace, key: str, cell, precision: int = 3, config: Config | None = None) -> Explanation:
    """How trace[key].value[cell] was made, with the live values substituted.

    cell: a tuple of indices (an int for a 1-d step). Raises KeyError for a step the trace
    lacks or no explainer covers, IndexError for a cell outside the step.
    """
    if key not in trace:
        raise KeyError(f"the trace has no step {key!r}")
    fn = explainer_for(trace, key)
    if fn is None:
        raise KeyError(f"no explainer is registered for step {key!r} of a {trace_kind(trace)} trace")
    shape = trace[key].shape
    cell = (cell,) if isinstance(cell, (int, np.integer)) else tuple(cell)
    if len(cell) != len(shape) or not all(isinstance(c, (int, np.integer)) and 0 <= c < s
                                          for c, s in zip(cell, shape)):
        raise IndexError(f"cell {cell} is outside step {key!r} of shape {shape}")
    cell = tuple(int(c) for c in cell)
    config = config if config is not None else trace.facts.get("config")
    return fn(Context(trace, config, int(precision)), cell)
