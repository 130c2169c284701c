"""Attention inside a transformer: X through L blocks to the logits of the next token, every step named.

One block, two placements of the norm (N is LayerNorm or RMSNorm, MHA is the attention stages of
stages.py on the rows it is given, MLP is math/mlp.py):

    pre-norm  (GPT-2, Llama):            X' = X + MHA(N(X))        X'' = X' + MLP(N(X'))
    post-norm (Vaswani et al. 2017):     X' = N(X + MHA(X))        X'' = N(X' + MLP(X'))

then, pre-norm only, a final norm (post-norm's stream leaves its last block normalised), and the
unembedding: logits = N_f(X_L) W_U, one row of |V| scores per position. With the MLP off the block is
attention-only: X'' = X'. The stream X is the residual stream: every sublayer reads it and adds to it.

Parameters are one flat dict of numpy arrays, named the same here, in the hand-written backward pass
and in the torch model of training/lm:

    tok_emb (|V|, d) and pos_emb (n_ctx, d)          a language model's own embeddings (lm_input)
    l{l}.w_q, l{l}.w_k, l{l}.w_v (d, H·d_k)           layer l's attention (absent: the settings' own draws)
    l{l}.w_o (H·d_v, d)
    l{l}.ln1.g, l{l}.ln1.b, l{l}.ln2.g, l{l}.ln2.b   the norms' γ and β (d,); RMSNorm has no β
    l{l}.w_1 (d, d_ff), l{l}.b_1, l{l}.w_2 (d_ff, d), l{l}.b_2   the MLP
    ln_f.g, ln_f.b (d,)                               the final norm (pre-norm)
    w_u (d, |V|)                                      the unembedding

    >>> arch = Arch(n_layers=1)
    >>> params = init_params(arch, d_model=6, vocab=3, seed=0, n_heads=2)
    >>> sorted(k for k in params if k.startswith("l0.w_"))
    ['l0.w_1', 'l0.w_2', 'l0.w_k', 'l0.w_o', 'l0.w_q', 'l0.w_v']
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..math.limits import ConfigError, _check_choice, _check_int
from ..math.mlp import mlp
from ..math.norms import EPS, layer_norm, rms_norm
from .config import Config
from .stages import attend
from .trace import Trace
from .weights import init_weight

PLACEMENTS = ("pre", "post")
NORMS = ("layer", "rms")
MAX_LAYERS = 4


@dataclass(frozen=True)
class Arch:
    """The block's switches a learner can change."""
    n_layers: int = 1
    placement: str = "pre"            # pre | post: the norm before each sublayer, or after its residual add
    norm: str = "layer"               # layer | rms
    mlp: bool = True                  # off: attention-only
    d_ff_mult: int = 4                # d_ff = 4 d_model, as in GPT-2 and Vaswani et al.
    eps: float = EPS

    def __post_init__(self):
        _check_int("n_layers", self.n_layers, 1, MAX_LAYERS)
        _check_choice("placement", self.placement, PLACEMENTS)
        _check_choice("norm", self.norm, NORMS)
        _check_int("d_ff_mult", self.d_ff_mult, 1, 8)
        if not isinstance(self.mlp, bool):
            raise ConfigError("mlp must be true or false.")
        if not (isinstance(self.eps, float) and 0 < self.eps < 1):
            raise ConfigError(f"eps={self.eps!r} must be a small positive number, e.g. 1e-5.")

    @property
    def final_norm(self) -> bool:
        return self.placement == "pre"


def init_params(arch: Arch, d_model: int, vocab: int, seed: int, n_heads: int = 1, d_k: int | None = None,
                d_v: int | None = None, attention: bool = True, prefix: str = "block") -> dict[str, np.ndarray]:
    """The seeded start: γ = 1, β = 0, MLP weights N(0, 1/fan_in) and biases 0, W_U N(0, 1/d_model).

    attention=False leaves W_Q, W_K, W_V, W_O out: the attention stages then draw the settings' own.
    """
    d_k = d_k or max(1, d_model // n_heads)
    d_v = d_v or d_k
    d_ff = arch.d_ff_mult * d_model
    w = lambda name, shape, fan_in: init_weight(seed, f"{prefix}.{name}", shape, fan_in)
    params: dict[str, np.ndarray] = {}
    for l in range(arch.n_layers):
        for norm in ("ln1", "ln2") if arch.mlp else ("ln1",):
            params[f"l{l}.{norm}.g"] = np.ones(d_model)
            if arch.norm == "layer":
                params[f"l{l}.{norm}.b"] = np.zeros(d_model)
        if attention:
            for name, width in (("w_q", d_k), ("w_k", d_k), ("w_v", d_v)):
                params[f"l{l}.{name}"] = w(f"l{l}.{name}", (d_model, n_heads * width), d_model)
            params[f"l{l}.w_o"] = w(f"l{l}.w_o", (n_heads * d_v, d_model), n_heads * d_v)
        if arch.mlp:
            params[f"l{l}.w_1"] = w(f"l{l}.w_1", (d_model, d_ff), d_model)
            params[f"l{l}.b_1"] = np.zeros(d_ff)
            params[f"l{l}.w_2"] = w(f"l{l}.w_2", (d_ff, d_model), d_ff)
            params[f"l{l}.b_2"] = np.zeros(d_model)
    if arch.final_norm:
        params["ln_f.g"] = np.ones(d_model)
        if arch.norm == "layer":
            params["ln_f.b"] = np.zeros(d_model)
    params["w_u"] = w("w_u", (d_model, vocab), d_model)
    return params


def lm_input(params: dict, ids) -> np.ndarray:
    """X = E[ids] + E^pos[0:n]: a language model's token and position embeddings, (n, d_model)."""
    ids = np.asarray(ids, dtype=int)
    return params["tok_emb"][ids] + params["pos_emb"][: len(ids)]


def normalise(arch: Arch, params: dict, name: str, x: np.ndarray) -> np.ndarray:
    """N(x) with the norm `name` ("l0.ln1", "ln_f"): LayerNorm or RMSNorm, row by row."""
    if arch.norm == "layer":
        return layer_norm(x, params[f"{name}.g"], params[f"{name}.b"], arch.eps)
    return rms_norm(x, params[f"{name}.g"], arch.eps)


def norm_formula(arch: Arch, arg: str, name: str) -> str:
    """LaTeX of N(arg) with the norm's own γ (and β)."""
    g, b = rf"\gamma_{{{name}}}", rf"\beta_{{{name}}}"
    if arch.norm == "layer":
        return (rf"\mathrm{{LN}}({arg}) = {g} \odot \frac{{{arg} - \mu}}{{\sqrt{{\sigma^2 + \epsilon}}}} + {b}")
    return rf"\mathrm{{RMSNorm}}({arg}) = {g} \odot \frac{{{arg}}}{{\sqrt{{\tfrac{{1}}{{d}}\sum_j {arg}_j^2 + \epsilon}}}}"


def layer_attention(config: Config, params: dict, l: int, why: str = "trained with the model"
                    ) -> tuple[Config, dict | None]:
    """The settings and weights layer l's attention runs with: the given W_Q … W_O if params hold them; else
    layer 0 draws the settings' own (trained or seeded, as on the attention pages) and a deeper layer seeded
    ones of its own (seed + l)."""
    if f"l{l}.w_q" in params:
        weights = {name: params[f"l{l}.{name}"] for name in ("w_q", "w_k", "w_v", "w_o")}
        weights.update({name: params[f"l{l}.{name}"] for name in ("b_q", "b_k", "b_v", "b_o") if f"l{l}.{name}" in params})
        weights["why"] = why
        return config, weights
    if l == 0:
        return config, None
    return config.replace(seed=(config.seed + l) % 2**32, weights="random"), None


PARAMETER_AXES = {"g": ("d_model",), "b": ("d_model",), "w_1": ("d_model", "d_ff"), "b_1": ("d_ff",),
                  "w_2": ("d_ff", "d_model"), "b_2": ("d_model",)}


def add_parameters(trace: Trace, arch: Arch, params: dict) -> None:
    """The norms' γ, β and the MLP's W_1, b_1, W_2, b_2 as Steps of their own (l0.ln1.g, l0.w_1, …), so a click on
    one says where it came from. The attention's W_Q … W_O are Steps of each layer's attention Trace."""
    for name, value in params.items():
        last = name.rsplit(".", 1)[-1]
        if not (name.startswith("ln_f.") or name[:1] == "l" and name[1:2].isdigit()) or last not in PARAMETER_AXES:
            continue
        if last in ("g", "b"):
            norm = name.rsplit(".", 1)[0]
            sub = "f" if norm == "ln_f" else f"{norm[1:norm.index('.')]},{norm[-1]}"
            sym = rf"\{'gamma' if last == 'g' else 'beta'}_{{{sub}}}"
            title = ("Final norm" if norm == "ln_f" else f"Layer {sub[0]}, norm {sub[-1]}") + (
                ": γ (scale)" if last == "g" else ": β (shift)")
        else:
            layer = name[1:name.index(".")]
            letter = "W" if last[0] == "w" else "b"
            sym, title = rf"{letter}_{last[-1]}^{{({layer})}}", f"Layer {layer}: {letter}_{last[-1]}"
        shape = r" \times ".join(str(k) for k in value.shape)
        trace.add(name, title, value, PARAMETER_AXES[last], rf"{sym} \in \mathbb{{R}}^{{{shape}}}",
                  why="A learned parameter of the block.")


def run_transformer(config: Config, arch: Arch, params: dict, x: np.ndarray, tokens, vocab: list[str],
                    weights_why: str = "trained with the model") -> Trace:
    """X (n, d_model) through arch.n_layers blocks to the logits (n, |V|): a Trace of kind "block".

    Each layer's attention is the forward pass's own stages (stages.attend) with `config`'s settings; its Trace
    is trace.facts["attention"][l], and its output O is the Step f"l{l}.attn". Stream steps: "x", then per layer
    l{l}.ln1 (pre), l{l}.attn, l{l}.sum1 (post), l{l}.mid (the stream after attention, MLP on) or l{l}.out,
    l{l}.ln2 (pre), l{l}.hidden, l{l}.act, l{l}.mlp, l{l}.sum2 (post), l{l}.out; then ln_f (pre), w_u, logits.
    The norms' and the MLP's parameters are Steps too, under their parameter names (l0.ln1.g, l0.w_1, ln_f.b …),
    and each layer's attention Trace knows its block (facts "block", "layer", "reads": the step it read as X,
    "weights_given"), so a click on its X or its W_Q is explained from the block.
    """
    x = np.asarray(x, dtype=np.float64)
    n, d = x.shape
    trace = Trace(tuple(tokens))
    trace.facts.update(config=config, arch=arch, kind="block", n=n, d_model=d, vocab=tuple(vocab),
                       d_ff=arch.d_ff_mult * d if arch.mlp else 0, attention=[],
                       axis_labels={"vocab": list(vocab)})
    trace.add("x", "The residual stream X₀", x, ("n", "d_model"), r"X_0 = X",
              why="One row per token: what the first block reads. Every sublayer reads this stream and adds its "
                  + ("output to it, so a row keeps what the embedding put there and gathers more, layer by layer."
                     if arch.placement == "pre" else
                     "output to it, then post-norm normalises the sum: each row is rescaled"
                     + (" and re-centred" if arch.norm == "layer" else "") + " after every add, so what the "
                     "embedding put there is carried on only through those norms, not as a plain summand."))
    stream, stream_key = x, "x"
    norm_name = "LayerNorm" if arch.norm == "layer" else "RMSNorm"
    for l in range(arch.n_layers):
        s = rf"X_{{{l}}}"
        lay, weights = layer_attention(config, params, l, weights_why)
        # ---- the attention sublayer
        if arch.placement == "pre":
            normed = normalise(arch, params, f"l{l}.ln1", stream)                # (n, d)
            trace.add(f"l{l}.ln1", f"Layer {l}: {norm_name} before attention", normed, ("n", "d_model"),
                      norm_formula(arch, s, f"{l},1"), (stream_key,),
                      why="Pre-norm: attention reads a normalised copy of each row; the stream itself is not changed.")
            read, read_key = normed, f"l{l}.ln1"
        else:
            read, read_key = stream, stream_key
        sub = attend(lay, read, tokens, weights, why=f"Layer {l}'s attention reads "
                     + ("the normalised stream." if arch.placement == "pre" else "the stream itself (post-norm)."))
        sub.facts.update(block=trace, layer=l, reads=read_key, weights_given=weights is not None)   # X is the block's
        trace.facts["attention"].append(sub)
        out = sub["output"].value                                                 # (n, d)
        trace.add(f"l{l}.attn", f"Layer {l}: attention output", out, ("n", "d_model"),
                  rf"\mathrm{{MHA}}({'N(' + s + ')' if arch.placement == 'pre' else s}) = C\, W_O"
                  + (" + b_O" if config.bias else ""), (read_key,),
                  why="What the heads write: for each token, a mix of the value rows it attended to, mapped back "
                      "to d_model columns by W_O.")
        after = f"l{l}.mid" if arch.mlp else f"l{l}.out"
        mid_sym = rf"X_{{{l}}}'" if arch.mlp else rf"X_{{{l + 1}}}"
        if arch.placement == "pre":
            stream = stream + out
            trace.add(after, f"Layer {l}: stream after attention", stream, ("n", "d_model"),
                      rf"{mid_sym} = {s} + \mathrm{{MHA}}(N({s}))", (stream_key, f"l{l}.attn"),
                      why="The residual add: attention's output is added to the stream, which carries on unchanged "
                          "underneath.")
        else:
            summed = stream + out
            trace.add(f"l{l}.sum1", f"Layer {l}: stream + attention", summed, ("n", "d_model"),
                      rf"{s} + \mathrm{{MHA}}({s})", (stream_key, f"l{l}.attn"), why="The residual add, before the norm.")
            stream = normalise(arch, params, f"l{l}.ln1", summed)
            trace.add(after, f"Layer {l}: {norm_name} after attention's add", stream, ("n", "d_model"),
                      rf"{mid_sym} = N({s} + \mathrm{{MHA}}({s}))", (f"l{l}.sum1",),
                      why="Post-norm: the sum is normalised, so the stream itself is rescaled at every sublayer.")
        stream_key = after
        if not arch.mlp:
            continue
        # ---- the MLP sublayer
        m = rf"X_{{{l}}}'"
        if arch.placement == "pre":
            read = normalise(arch, params, f"l{l}.ln2", stream)
            trace.add(f"l{l}.ln2", f"Layer {l}: {norm_name} before the MLP", read, ("n", "d_model"),
                      norm_formula(arch, m, f"{l},2"), (stream_key,), why="The MLP, too, reads a normalised copy.")
            read_key = f"l{l}.ln2"
        else:
            read, read_key = stream, stream_key
        hidden, act, mlp_out = mlp(read, params[f"l{l}.w_1"], params[f"l{l}.b_1"], params[f"l{l}.w_2"],
                                   params[f"l{l}.b_2"])
        arg = f"N({m})" if arch.placement == "pre" else m
        hl = rf"H^{{({l})}}"                                                      # H alone is the number of heads
        trace.add(f"l{l}.hidden", f"Layer {l}: MLP hidden", hidden, ("n", "d_ff"), rf"{hl} = {arg}\, W_1 + b_1",
                  (read_key,), why=f"Each row on its own, widened to d_ff = {hidden.shape[1]} columns.")
        trace.add(f"l{l}.act", f"Layer {l}: GELU", act, ("n", "d_ff"),
                  rf"\mathrm{{GELU}}({hl}) = {hl}\,\Phi({hl})", (f"l{l}.hidden",),
                  why="GELU keeps large positive numbers, nearly zeroes large negative ones and bends smoothly "
                      "between: the MLP's one non-linear step (without it W_1 and W_2 would collapse into one "
                      "linear map).")
        trace.add(f"l{l}.mlp", f"Layer {l}: MLP output", mlp_out, ("n", "d_model"),
                  rf"\mathrm{{MLP}} = \mathrm{{GELU}}({hl})\, W_2 + b_2", (f"l{l}.act",),
                  why="Back to d_model columns. Unlike attention, the MLP looks at each token's row alone.")
        out_sym = rf"X_{{{l + 1}}}"
        if arch.placement == "pre":
            stream = stream + mlp_out
            trace.add(f"l{l}.out", f"Layer {l}: stream after the MLP", stream, ("n", "d_model"),
                      rf"{out_sym} = {m} + \mathrm{{MLP}}(N({m}))", (stream_key, f"l{l}.mlp"),
                      why="The second residual add: the layer's output, what the next layer reads.")
        else:
            summed = stream + mlp_out
            trace.add(f"l{l}.sum2", f"Layer {l}: stream + MLP", summed, ("n", "d_model"),
                      rf"{m} + \mathrm{{MLP}}({m})", (stream_key, f"l{l}.mlp"), why="The residual add, before the norm.")
            stream = normalise(arch, params, f"l{l}.ln2", summed)
            trace.add(f"l{l}.out", f"Layer {l}: {norm_name} after the MLP's add", stream, ("n", "d_model"),
                      rf"{out_sym} = N({m} + \mathrm{{MLP}}({m}))", (f"l{l}.sum2",),
                      why="The layer's output, normalised: what the next layer reads.")
        stream_key = f"l{l}.out"
    last = rf"X_{{{arch.n_layers}}}"
    if arch.final_norm:
        stream = normalise(arch, params, "ln_f", stream)
        trace.add("ln_f", f"Final {norm_name}", stream, ("n", "d_model"), norm_formula(arch, last, "f"), (stream_key,),
                  why="Pre-norm leaves the stream itself un-normalised, so one more norm comes before the unembedding "
                      "(GPT-2's ln_f). Post-norm has none: its stream leaves the last block normalised.")
        stream_key = "ln_f"
    add_parameters(trace, arch, params)
    trace.add("w_u", "Unembedding W_U", params["w_u"], ("d_model", "vocab"),
              rf"W_U \in \mathbb{{R}}^{{{d} \times {len(vocab)}}}", why="One column per token of the vocabulary.")
    logits = stream @ params["w_u"]                                               # (n, |V|)
    final = "N_f(" + last + ")" if arch.final_norm else last
    trace.add("logits", "Logits", logits, ("n", "vocab"), rf"Z = {final}\, W_U", (stream_key, "w_u"),
              why="Row i scores every token of the vocabulary as the one after token i; the last row is the "
                  "prediction of the next token.")
    return trace


def sidebar_block(config: Config, arch: Arch, forward: Trace) -> Trace:
    """The block on the attention pages' settings: X₀ is their X (embeddings and positions), layer 0's attention
    their W_Q … W_O (trained or seeded, as there), a deeper layer's seeded (seed + l), everything else init_params'
    seeded start (γ = 1, β = 0, W_1, W_2 ~ N(0, 1/fan_in), biases 0). The vocabulary is the sentence's distinct
    words; W_U is tied to their embedding rows (column v = e(word v)) when X_emb is d_model wide, else seeded
    N(0, 1/d_model). trace.facts["start"] records this, so a click on a parameter draws it again."""
    x = forward["x"].value                                                        # (n, d_model)
    words = list(dict.fromkeys(forward.tokens))
    params = init_params(arch, x.shape[1], len(words), config.seed, config.n_heads, attention=False)
    emb = forward["x_embed"].value                                                # (n, d_embed)
    tied = emb.shape[1] == x.shape[1]
    if tied:
        params["w_u"] = emb[[forward.tokens.index(w) for w in words]].T          # (d_model, |V|)
    trace = run_transformer(config, arch, params, x, forward.tokens, words)
    trace.facts["start"] = dict(seed=config.seed, prefix="block", w_u="tied" if tied else "seeded")
    w_u = trace["w_u"]
    trace.add("w_u", w_u.title, w_u.value, w_u.axes, w_u.formula,
              why=("Tied to the embeddings: column v is the embedding row of word v, so a logit measures how much "
                   "the final row points along a word's own vector. Nothing here is trained to predict."
                   if tied else "Seeded N(0, 1/d_model): X_emb is not d_model wide here (positions concatenated), "
                   "so W_U cannot be tied to it. Nothing here is trained to predict."))
    z = trace["logits"]
    trace.add("logits", z.title, z.value, z.axes, z.formula, z.inputs,
              why="Row i scores every word of the vocabulary as the one after token i. Nothing in this block was "
                  "trained to predict words: these scores are a property of the vectors, not a prediction.")
    return trace
