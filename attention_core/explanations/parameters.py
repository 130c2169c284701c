"""The learned parameters explained: no formula makes them, so each is shown drawn at its seeded start
(weights z/√fan_in, biases 0.1·z, z ~ N(0, 1) from the parameter's own generator (seed, crc32(name))),
or, under weights="trained", looked up in the trained matrices with where training started from.

One function serves every parameter; what differs between them is data: PARAMETERS (the fan-in of each
weight, None for a bias), TRAINED (what training changes) and POOLED (what grouped-query attention averages).

    >>> from attention_core import Config, run_forward
    >>> from attention_core.explanations import explain
    >>> config = Config(weights="random")
    >>> print(explain(run_forward(config), "w_q", (0, 1), config=config).symbolic)
    (W_Q)_{0,1} = z \\cdot \\frac{1}{\\sqrt{50}},\\ z \\sim \\mathcal{N}(0, 1)
"""
from __future__ import annotations

import math

import numpy as np

from ..forward.weights import init_weight, mean_pool_heads, param_rng, trained_weights
from .context import Context, Explanation
from .registry import register_each

# step key -> its fan-in, the width of what it multiplies (a weight starts at N(0, 1/fan_in)); None: a bias
PARAMETERS = {"w_q": "d_model", "w_k": "d_model", "w_v": "d_model", "w_a_q": "d_k", "w_a_k": "d_k",
              "v_a": "d_k", "w_b": "d_k", "w_o": "H·d_v", "b_q": None, "b_k": None, "b_v": None, "b_o": None}
TRAINED = ("w_q", "w_k", "w_v", "b_q", "b_k", "b_v")      # under weights="trained" (training/pretrained.py)
POOLED = ("w_k", "w_v", "b_k", "b_v")                      # with H_kv < H: each KV head its group's mean


def _parameter(ctx: Context, key: str, cell) -> Explanation:
    """A learned parameter at its seeded start (or trained): weights z/√fan_in, biases 0.1·z, z ~ N(0, 1)."""
    shape = ctx.trace[key].shape
    f = ctx.trace.facts
    bias = PARAMETERS[key] is None
    if bias:
        scale_tex, scale_text = "0.1", "0.1"
        law, law_text = r"\mathcal{N}(0,\ 0.1^2)", "N(0, 0.1²)"
    else:
        fan_in = {"d_model": f["d_model"], "d_k": f["d_k"], "H·d_v": f["n_heads"] * f["d_v"]}[PARAMETERS[key]]
        scale_tex, scale_text = rf"\frac{{1}}{{\sqrt{{{fan_in}}}}}", f"1/√{fan_in}"
        law, law_text = rf"\mathcal{{N}}(0,\ 1/{fan_in})", f"N(0, 1/{fan_in})"
    note = (f"Learned parameter, seeded init {law_text}: no formula makes it (training would change it); "
            f"here it is at its start.")
    lhs, lhs_text = ctx.ref(key, cell), ctx.ref_text(key, cell)
    symbolic = rf"{lhs} = z \cdot {scale_tex},\ z \sim \mathcal{{N}}(0, 1)"
    if ctx.config is None:
        if f.get("weights") == "trained" and key in TRAINED:
            return ctx.leaf(key, cell, r"\text{trained}", "trained", None, ctx.num(ctx.value(key)[cell]),
                            ctx.num_text(ctx.value(key)[cell]),
                            "Learned parameter, trained (from "
                            + ("0" if bias else f"its seeded init {law_text}")
                            + "): no formula makes it.")
        return ctx.leaf(key, cell, rf"\text{{learned; init }} {law}", f"learned; init {law_text}", None,
                        ctx.num(ctx.value(key)[cell]), ctx.num_text(ctx.value(key)[cell]), note)
    if ctx.config.weights == "trained" and key in TRAINED:
        return _trained(ctx, key, cell, law_text)
    z = float(param_rng(ctx.config.seed, key).standard_normal(shape)[cell])
    value = 0.1 * z if bias else z / math.sqrt(fan_in)
    where = f"z = draw {int(np.ravel_multi_index(cell, shape))} of generator (seed {ctx.config.seed}, crc32('{key}'))"
    return Explanation(key, cell, symbolic, rf"{ctx.factor(z)} \cdot {scale_tex}", f"{lhs} = {ctx.num(value)}",
                       value, f"{lhs_text} = z·{scale_text}, z ~ N(0, 1)\n  = {ctx.factor_text(z)}·{scale_text}"
                              f"   ({where})\n  = {ctx.num_text(value)}", note=note + f" {where}.")


def _trained(ctx: Context, key: str, cell, law_text: str) -> Explanation:
    """A trained parameter: looked up in the trained matrices, with where training started from (weights: the
    seeded init, drawn at the width training used; biases: 0). With grouped-query attention (H_kv < H), a K or
    V parameter is the mean of its group's g = H/H_kv trained heads, as the forward pass pools them."""
    config, f = ctx.config, ctx.trace.facts
    t = trained_weights(config)
    bias = PARAMETERS[key] is None
    h, h_kv = config.n_heads, config.kv_heads
    width = f["d_v"] if key.endswith("v") else f["d_k"]
    trained = t.params[key] if not bias else t.params[key][None, :]          # (rows, H·width)
    start = 0.0 if bias else init_weight(config.seed, key, (f["d_model"], h * width), f["d_model"])
    where = cell if not bias else (0, *cell)
    group = ""
    if key in POOLED and h_kv < h:                                           # (rows, H_kv·width)
        g, a = h // h_kv, cell[-1] // width
        trained = mean_pool_heads(trained, h, h_kv, width)
        start = start if bias else mean_pool_heads(start, h, h_kv, width)
        group = (f" Grouped-query attention: KV head {a} is the mean of its group's {g} trained heads (query heads "
                 f"{a * g}–{a * g + g - 1}), as the GQA paper turns a multi-head checkpoint into a grouped one.")
    value = float(trained[where])
    start = start if bias else float(start[where])
    begin = ("biases start at 0 for training" if bias else
             f"the mean of their seeded init {law_text}" if group else f"seeded init {law_text}")
    note = (f"Learned parameter, trained: no formula makes it.{group} It started at {ctx.num_text(start)} ({begin}); "
            f"{t.epochs} epochs of SGD on {t.n_sentences} sentiment sentences moved it by {ctx.num_text(value - start)}.")
    return ctx.leaf(key, cell, r"\text{trained}", "trained", value, ctx.num(value), ctx.num_text(value), note)


register_each(PARAMETERS, _parameter)
