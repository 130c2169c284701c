"""A real checkpoint's forward pass in numpy float32, every number kept: `run_real(model, text) -> Trace`.

The block as forward/transformer.py runs it, pre-norm, with each family's parts (GPT-2: LayerNorm, learned
positions, GELU-tanh MLP; Llama-style: RMSNorm, RoPE inside attention, SwiGLU MLP), in the checkpoint's float32
(as the model runs on a CPU) rather than the toy pages' float64. A Trace of kind "real", step keys:

    x_embed (n, d)        E[ids]: the token embeddings
    pe (n, d)             GPT-2: E^pos[0:n], the learned positions (Llama-style: none, RoPE turns Q and K instead)
    x (n, d)              X_0 = E[ids] (+ E^pos[0:n])
    l{l}.ln1              N(X_l)                                   (each layer l)
    l{l}.attn             MHA(N(X_l)): the layer's attention Trace is trace.facts["attention"][l] (its every
                          head's Q, K, V, rotated Q^R, K^R, scores, weights, context: attention_layer.py)
    l{l}.mid              X_l' = X_l + MHA(N(X_l))
    l{l}.ln2              N(X_l')
    l{l}.hidden, l{l}.act GPT-2: H = N W_1 + b_1, GELU_tanh(H)
    l{l}.gate, l{l}.up, l{l}.act   Llama: G = N W_gate, U = N W_up, SiLU(G) ⊙ U
    l{l}.mlp, l{l}.out    the MLP's output, X_{l+1} = X_l' + MLP(N(X_l'))
                          (no MLP, the small model: l{l}.out = X_l + MHA(N(X_l)) in place of l{l}.mid … l{l}.mlp)
    ln_f, logits (n, |V|) N_f(X_L), Z = N_f(X_L) W_U

trace.tokens are the tokenizer's pieces ("Ġcat"); facts: ids, pieces, the model's name and config, "truncated"
(tokens cut off past the context, with a notice). Hidden states as transformers lists them are
x, l0.out, …, l{L−2}.out and ln_f (its last one is already normalised).
"""
from __future__ import annotations

import weakref

import numpy as np

from ...forward.trace import Trace
from ...math.mlp import gelu
from ...math.norms import layer_norm, rms_norm
from .activations import gelu_tanh, silu
from .attention_layer import layer_attention
from .load import RealModel
from .rope_scaling import rope_cos_sin
from .trace32 import RealTrace


def norm(model: RealModel, name: str, x: np.ndarray) -> np.ndarray:
    p, c = model.params, model.config
    if c.norm == "layer":
        return layer_norm(x, p[f"{name}.g"], p[f"{name}.b"], c.eps)
    return rms_norm(x, p[f"{name}.g"], c.eps)


def norm_formula(model: RealModel, arg: str, sub: str) -> str:
    if model.config.norm == "layer":
        return rf"\mathrm{{LN}}({arg}) = \gamma_{{{sub}}} \odot \frac{{{arg} - \mu}}{{\sqrt{{\sigma^2 + \epsilon}}}} + \beta_{{{sub}}}"
    return rf"\mathrm{{RMSNorm}}({arg}) = \gamma_{{{sub}}} \odot \frac{{{arg}}}{{\sqrt{{\tfrac{{1}}{{d}}\sum_j {arg}_j^2 + \epsilon}}}}"


MAX_TOKENS = 128      # every head's n × n weights (and scores) are kept as float64 Steps: 128 tokens of GPT-2 small
                      # are about 100 MB of Trace, its full 1,024 would be several GB


def encode(model: RealModel, text: str | None = None, ids=None, max_tokens: int = MAX_TOKENS
           ) -> tuple[list[int], list[str], int]:
    """(ids, pieces, how many tokens were cut off past the model's context or max_tokens)."""
    ids, pieces, cut, _ = encoded(model, text, ids, max_tokens)
    return ids, pieces, cut


def encoded(model: RealModel, text: str | None = None, ids=None, max_tokens: int = MAX_TOKENS):
    """encode's three, and the Encoded (its notices, and what names its ids), or None for ids given."""
    n_ctx = min(model.config.n_ctx, max_tokens)
    if ids is not None:
        ids = [int(i) for i in ids]
        cut = max(0, len(ids) - n_ctx)
        ids = ids[:len(ids) - cut]
        return ids, [model.tokenizer.piece(i) for i in ids], cut, None
    enc = model.tokenizer.encode(text or "", max_tokens=n_ctx)
    return list(enc.ids), list(enc.pieces), enc.truncated, enc


def run_real(model: RealModel, text: str | None = None, ids=None, max_tokens: int = MAX_TOKENS) -> Trace:
    """The text (or the token ids) through every layer to the logits, in float32; a Trace of kind "real".
    At most min(the model's context, max_tokens) tokens: the rest is cut off, with a notice."""
    c, p = model.config, model.params
    ids, pieces, cut, enc = encoded(model, text, ids, max_tokens)
    if not ids:
        raise ValueError("No tokens: type a sentence.")
    if max(ids) >= c.vocab:
        raise ValueError(f"Token id {max(ids)} is outside the vocabulary of {c.vocab}.")
    n, norm_name = len(ids), "LayerNorm" if c.norm == "layer" else "RMSNorm"
    trace = RealTrace(tuple(pieces))
    trace.facts.update(kind="real", model=model.name, config=None, checkpoint=c, ids=tuple(ids), pieces=tuple(pieces),
                       truncated=cut, attention=[], n=n, d_model=c.d_model, n_heads=c.n_heads,
                       n_kv_heads=c.n_kv_heads, d_k=c.d_head, params=p,
                       tokenizer=enc.names if enc is not None and enc.names is not None else model.tokenizer)
    trace.notices.extend(enc.notices if enc is not None else ())
    if cut:
        limit = min(c.n_ctx, max_tokens)
        why = (f"{model.name} reads at most {c.n_ctx}" if limit == c.n_ctx else
               f"every head's weights are kept for at most {limit} (the model reads {c.n_ctx})")
        trace.notices.append(f"The text is {n + cut} tokens and {why}: the last {cut} were cut off.")
    x = p["tok_emb"][ids]                                                      # (n, d) float32
    trace.add("x_embed", "Token embeddings", x, ("n", "d_model"), r"X_{\mathrm{emb}} = E[\mathrm{ids}]",
              why="Row i is the embedding row of token i's id: the model's table E has one row per token of its "
                  f"vocabulary ({c.vocab}).")
    inputs = ("x_embed",)
    if c.family == "gpt2":
        pe = p["pos_emb"][:n]                                                  # (n, d)
        who = "GPT-2" if c.model_type == "gpt2" else "The model"
        trace.add("pe", "Learned positions", pe, ("n", "d_model"), r"E^{\mathrm{pos}}_{[0:n]}",
                  why=f"{who} learned one row per position (up to {c.n_ctx}) and adds it to the token's row.")
        x = x + pe
        inputs += ("pe",)
    trace.add("x", "The residual stream X₀", x, ("n", "d_model"),
              r"X_0 = E[\mathrm{ids}] + E^{\mathrm{pos}}_{[0:n]}" if c.family == "gpt2" else r"X_0 = E[\mathrm{ids}]", inputs,
              why="What the first block reads." + ("" if c.family == "gpt2" else " No position is added: RoPE turns "
                                                   "each query and key by its position inside attention."))
    cos_sin = rope_cos_sin(n, c.d_head, c.rope_theta, c.rope_scaling) if c.rope else None
    stream, key = x, "x"
    for l in range(c.n_layers):
        s = rf"X_{{{l}}}"
        reader = "the next layer" if l + 1 < c.n_layers else f"the final {norm_name}"     # who reads the layer's output
        normed = norm(model, f"l{l}.ln1", stream)
        trace.add(f"l{l}.ln1", f"Layer {l}: {norm_name} before attention", normed, ("n", "d_model"),
                  norm_formula(model, s, f"{l},1"), (key,), why="Pre-norm: attention reads a normalised copy.")
        sub = layer_attention(c, p, l, normed, pieces, cos_sin)
        sub.facts.update(block=weakref.proxy(trace), reads=f"l{l}.ln1")     # no cycle: freed when dropped
        trace.facts["attention"].append(sub)
        out = sub.facts["float32"]["output"]                                     # (n, d) float32
        trace.add(f"l{l}.attn", f"Layer {l}: attention output", out, ("n", "d_model"),
                  rf"\mathrm{{MHA}}(N({s})) = C\, W_O" + (" + b_O" if f"l{l}.b_o" in p else ""), (f"l{l}.ln1",),
                  why=f"What the {c.n_heads} heads write, mapped back to d_model columns by W_O.")
        stream = stream + out
        if not c.mlp:                                                            # attention only: the layer's output
            trace.add(f"l{l}.out", f"Layer {l}: stream after attention", stream, ("n", "d_model"),
                      rf"X_{{{l + 1}}} = {s} + \mathrm{{MHA}}(N({s}))", (key, f"l{l}.attn"),
                      why=f"The residual add; with no MLP, what {reader} reads.")
            key = f"l{l}.out"
            continue
        trace.add(f"l{l}.mid", f"Layer {l}: stream after attention", stream, ("n", "d_model"),
                  rf"{s}' = {s} + \mathrm{{MHA}}(N({s}))", (key, f"l{l}.attn"), why="The residual add.")
        read = norm(model, f"l{l}.ln2", stream)
        trace.add(f"l{l}.ln2", f"Layer {l}: {norm_name} before the MLP", read, ("n", "d_model"),
                  norm_formula(model, f"{s}'", f"{l},2"), (f"l{l}.mid",), why="The MLP, too, reads a normalised copy.")
        mlp_out = _mlp(model, trace, l, read)
        stream = stream + mlp_out
        trace.add(f"l{l}.out", f"Layer {l}: stream after the MLP", stream, ("n", "d_model"),
                  rf"X_{{{l + 1}}} = {s}' + \mathrm{{MLP}}(N({s}'))", (f"l{l}.mid", f"l{l}.mlp"),
                  why=f"The second residual add: what {reader} reads.")
        key = f"l{l}.out"
    final = norm(model, "ln_f", stream)
    trace.add("ln_f", f"Final {norm_name}", final, ("n", "d_model"), norm_formula(model, f"X_{{{c.n_layers}}}", "f"),
              (key,), why="Pre-norm leaves the stream un-normalised, so one more norm comes before the unembedding.")
    logits = final @ p["w_u"]                                                    # (n, |V|)
    trace.add("logits", "Logits", logits, ("n", "vocab"), rf"Z = N_f(X_{{{c.n_layers}}})\, W_U", ("ln_f",),
              why="Row i scores every token of the vocabulary as the one after token i"
                  + (" (W_U = Eᵀ: the embedding table read backwards)." if c.tied else "."))
    return trace


def _mlp(model: RealModel, trace: Trace, l: int, read: np.ndarray) -> np.ndarray:
    """The layer's MLP on the normalised rows (n, d), its steps added; returns MLP(N(X_l')) (n, d)."""
    c, p = model.config, model.params
    hl = rf"H^{{({l})}}"
    if c.family == "gpt2":
        hidden = read @ p[f"l{l}.w_1"] + p[f"l{l}.b_1"]                        # (n, d_ff)
        act = gelu_tanh(hidden) if c.activation == "gelu_tanh" else gelu(hidden).astype(np.float32)
        trace.add(f"l{l}.hidden", f"Layer {l}: MLP hidden", hidden, ("n", "d_ff"), rf"{hl} = N W_1 + b_1",
                  (f"l{l}.ln2",), why=f"Each row widened to d_ff = {c.d_ff} columns.")
        trace.add(f"l{l}.act", f"Layer {l}: GELU", act, ("n", "d_ff"),
                  rf"\tfrac12 {hl} (1 + \tanh(\sqrt{{2/\pi}}({hl} + 0.044715 {hl}^3)))", (f"l{l}.hidden",),
                  why="GPT-2's GELU, the tanh form (\"gelu_new\").")
        out = act @ p[f"l{l}.w_2"] + p[f"l{l}.b_2"]                            # (n, d)
        formula = rf"\mathrm{{MLP}} = \mathrm{{GELU}}({hl})\, W_2 + b_2"
    else:
        gate, up = read @ p[f"l{l}.w_gate"], read @ p[f"l{l}.w_up"]              # (n, d_ff) each
        act = silu(gate) * up                                                    # (n, d_ff)
        trace.add(f"l{l}.gate", f"Layer {l}: MLP gate", gate, ("n", "d_ff"), r"G = N W_{\mathrm{gate}}",
                  (f"l{l}.ln2",), why=f"SwiGLU's gate, d_ff = {c.d_ff} columns.")
        trace.add(f"l{l}.up", f"Layer {l}: MLP up", up, ("n", "d_ff"), r"U = N W_{\mathrm{up}}", (f"l{l}.ln2",),
                  why="SwiGLU's second projection, multiplied by the gate.")
        trace.add(f"l{l}.act", f"Layer {l}: SiLU(G) ⊙ U", act, ("n", "d_ff"), r"\mathrm{SiLU}(G) \odot U,\ "
                  r"\mathrm{SiLU}(g) = g\,\sigma(g)", (f"l{l}.gate", f"l{l}.up"),
                  why="The gate decides, column by column, how much of U passes.")
        out = act @ p[f"l{l}.w_down"]                                            # (n, d)
        formula = r"\mathrm{MLP} = (\mathrm{SiLU}(G) \odot U)\, W_{\mathrm{down}}"
    trace.add(f"l{l}.mlp", f"Layer {l}: MLP output", out, ("n", "d_model"), formula, (f"l{l}.act",),
              why="Back to d_model columns. The MLP looks at each token's row alone.")
    return out
