"""One layer's attention of a real checkpoint, in float32, as a Trace with the forward pass's own step keys.

The keys, shapes and formulas are the attention pages' (forward/stages.py), so the same explainers read them
(explainers.py registers them for this kind, "real_attention"); H = query heads, H_kv = key/value heads, d_k the
head width (d_v = d_k in every checkpoint here):

    x (n, d_model)                      what the layer reads: the normalised stream N(X_l)
    q (n, H·d_k), k, v (n, H_kv·d_k)    Q = X W_Q (+ b_Q), …
    q_heads (H, n, d_k), k_heads, v_heads (H_kv, n, d_k)   each head's block of columns
    q_rot, k_rot                        Llama-style: rotated by RoPE (half pairing, θ_i' scaled as configured)
    scores (H, n, n)                    S_h = Q_h K_⌊h/g⌋ᵀ (of the rotated rows with RoPE)
    scaled_scores, mask, masked_scores  Ŝ = S / √d_k; the causal mask; −∞ where a key is in the future
    weights (H, n, n)                   A_h = softmax(S̃_h), row by row
    context (H, n, d_k), concat (n, H·d_k), output (n, d_model)   C_h = A_h V_⌊h/g⌋, [C_0 | …] W_O (+ b_O)

The weights themselves are not Steps (a Step keeps a float64 copy: GPT-2's would be hundreds of MB per
sentence): trace.facts["params"] holds the layer's float32 arrays, read by the explainers.
"""
from __future__ import annotations

import numpy as np

from ...forward.trace import Trace
from ...math.attention import causal_mask, merge_heads, split_heads
from ...math.gqa import expand_kv
from ...math.rope import rotate_half
from .checkpoint_config import CheckpointConfig
from .trace32 import RealTrace


def softmax32(z: np.ndarray) -> np.ndarray:
    """Row-wise softmax over the last axis in float32; −∞ entries get weight 0."""
    e = np.exp(z - z.max(axis=-1, keepdims=True))                   # a causal row always has its own key
    return e / e.sum(axis=-1, keepdims=True)


def layer_attention(c: CheckpointConfig, params: dict, l: int, x: np.ndarray, tokens, cos_sin=None) -> Trace:
    """Layer l's attention on x (n, d_model) float32, every step kept; trace["output"] is what it adds to the stream."""
    n = x.shape[0]
    h, h_kv, d_k = c.n_heads, c.n_kv_heads, c.d_head
    g = h // h_kv
    w = {name: params[f"l{l}.{name}"] for name in ("w_q", "w_k", "w_v", "w_o", "b_q", "b_k", "b_v", "b_o")
         if f"l{l}.{name}" in params}
    trace = RealTrace(tuple(tokens))
    trace.facts.update(kind="real_attention", layer=l, n=n, n_heads=h, n_kv_heads=h_kv, d_k=d_k, d_v=d_k,
                       d_model=c.d_model, temperature=1.0, params=w, rope=c.rope, family=c.family)
    trace.add("x", f"Layer {l}: the normalised stream", x, ("n", "d_model"), rf"X = N(X_{{{l}}})",
              why="What this layer's attention reads: each row of the residual stream, normalised.")
    heads = {}
    for name, count in (("q", h), ("k", h_kv), ("v", h_kv)):
        value = x @ w[f"w_{name}"]                                              # (n, count·d_k)
        big = name.upper()
        formula = rf"{big} = X W_{big}"
        cols = "H·d_k" if count == h else "H_kv·d_k"
        if f"b_{name}" in w:
            trace.add(f"b_{name}", f"b_{big}", w[f"b_{name}"], (cols,), rf"b_{big} \in \mathbb{{R}}^{{{count * d_k}}}",
                      why="A bias added to every row, learned with the model.")
            value = value + w[f"b_{name}"]
            formula += rf" + b_{big}"
        cols = "H·d_k" if count == h else "H_kv·d_k"
        trace.add(name, {"q": "Queries Q", "k": "Keys K", "v": "Values V"}[name], value, ("n", cols), formula,
                  ("x",), why={"q": "Row i is what token i is looking for.", "k": "Row j is what token j offers.",
                               "v": "Row j is what token j passes on when it is attended to."}[name])
        heads[name] = split_heads(value, count)                                 # (count, n, d_k)
        trace.add(f"{name}_heads", f"{big} split into {'KV ' if count < h else ''}heads", heads[name],
                  ("head", "n", "d_k"), rf"{big}_h = {big}_{{[:,\, h \cdot d_k : (h+1) \cdot d_k]}}", (name,),
                  why=f"Head h takes its own block of {d_k} columns."
                  + (f" {count} KV heads for {h} query heads: query head h reads KV head ⌊h / {g}⌋." if count < h else ""))
    q_key, k_key = "q_heads", "k_heads"
    if c.rope:
        cos, sin = cos_sin                                                      # (n, d_k) each
        for name in ("q", "k"):
            heads[name] = heads[name] * cos + rotate_half(heads[name]) * sin    # (count, n, d_k)
            big = name.upper()
            prime, half = "'" if c.rope_scaling else "", d_k // 2                  # θ_i': llama3-scaled
            th = rf"\theta_i{prime}"
            trace.add(f"{name}_rot", f"{big} rotated (RoPE)", heads[name], ("head", "n", "d_k"),
                      rf"({big}^R)_{{p,i}} = {big}_{{p,i}} \cos(p{th}) - {big}_{{p,i+{half}}} \sin(p{th}),\ "
                      rf"({big}^R)_{{p,i+{half}}} = {big}_{{p,i+{half}}} \cos(p{th}) + {big}_{{p,i}} \sin(p{th})\ (i < {half}),\ \ "
                      rf"\theta_i = {c.rope_theta:g}^{{-2i/{d_k}}}"
                      + (r",\ \theta_i' \text{ its llama3 scaling}" if c.rope_scaling else ""),
                      (f"{name}_heads",), why="Each row turned by its position p: pair i (columns i and i + d_k/2, "
                      f"the half pairing Hugging Face stores Llama in) by the angle p·θ_i{prime}. "
                      "Lengths do not change.")
        q_key, k_key = "q_rot", "k_rot"
    k_all, v_all = expand_kv(heads["k"], h), expand_kv(heads["v"], h)          # (H, n, d_k): head h reads ⌊h/g⌋
    scores = heads["q"] @ np.swapaxes(k_all, -1, -2)                           # (H, n, n)
    r = "^R" if c.rope else ""
    kh = r"_{\lfloor h/g \rfloor}" if g > 1 else "_h"
    trace.add("scores", "Scores QKᵀ", scores, ("head", "n_q", "n_k"), rf"S_h = Q{r}_h {{K{r}{kh}}}^\top",
              (q_key, k_key), why="Entry (i, j) is the dot product of query i with key j.")
    scaled = scores / np.float32(np.sqrt(d_k))
    trace.add("scaled_scores", "Scaled scores", scaled, ("head", "n_q", "n_k"),
              rf"\hat S_h = \frac{{S_h}}{{\sqrt{{{d_k}}}}}", ("scores",),
              why=f"Divided by √d_k = √{d_k} so the scores' spread does not grow with the head's width.")
    m = causal_mask(n)                                                           # (n, n) bool
    trace.add("mask", "Mask", m.astype(float), ("n_q", "n_k"),
              r"M_{ij} = 1 \text{ if } j \le i \text{ else } 0", why="A language model sees only the tokens so far.",
              scale="mask")
    masked = np.where(m, scaled, np.float32(-np.inf))                           # (H, n, n)
    trace.add("masked_scores", "Masked scores", masked, ("head", "n_q", "n_k"),
              r"\tilde S_{ij} = \begin{cases} \hat S_{ij} & M_{ij} = 1 \\ -\infty & M_{ij} = 0 \end{cases}",
              ("scaled_scores", "mask"), why="A future key's score becomes −∞, so its weight is exactly 0.")
    weights = softmax32(masked)                                                  # (H, n, n)
    trace.add("weights", "Attention weights", weights, ("head", "n_q", "n_k"),
              r"A_{ij} = \frac{\exp(\tilde S_{ij})}{\sum_{j'} \exp(\tilde S_{ij'})}", ("masked_scores",),
              scale="sequential", why="Each row becomes weights over the keys so far, summing to 1.")
    trace.facts["softmax_input"] = "masked_scores"
    context = weights @ v_all                                                    # (H, n, d_k)
    trace.add("context", "Context vectors", context, ("head", "n", "d_v"), rf"C_h = A_h V{kh}",
              ("weights", "v_heads"), why="Row i is the weighted average of the value rows.")
    concat = merge_heads(context)                                                # (n, H·d_k)
    trace.add("concat", "Heads concatenated", concat, ("n", "H·d_v"),
              r"C = \left[\, C_0 \mid C_1 \mid \cdots \mid C_{H-1} \,\right]", ("context",),
              why=f"The {h} heads' context vectors side by side.")
    out = concat @ w["w_o"]                                                      # (n, d_model)
    formula = r"O = C\, W_O"
    if "b_o" in w:
        trace.add("b_o", "b_O", w["b_o"], ("d_model",), rf"b_O \in \mathbb{{R}}^{{{c.d_model}}}",
                  why="Output bias, learned with the model.")
        out = out + w["b_o"]
        formula += " + b_O"
    trace.add("output", "Output", out, ("n", "d_model"), formula, ("concat",),
              why="Back to d_model columns: what this layer's attention adds to the residual stream.")
    trace.facts["float32"] = {"output": out, "weights": weights}               # the float32 values, for the stream
    return trace
