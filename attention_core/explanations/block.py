"""The transformer block explained (a Trace of kind "block", forward/transformer.py): a norm's cell with its
row's μ, σ² (biased) and ε (RMSNorm: its r), a residual add, the MLP's hidden cell (a sum of products + b_1),
GELU's h Φ(h), the MLP's output, a logit (a row of the final stream · a column of W_U), the attention output
(the layer's own attention Trace, O = C W_O) and the parameters γ, β, W_1, b_1, W_2, b_2, W_U: drawn again
from the seeded start (trace.facts["start"]) or, trained with a model, read back.

Inside a block each layer's attention is an ordinary forward Trace whose X is the stream the block gave it
(N(X_l) with pre-norm, X_l itself with post-norm): its "x" cell, and its given W_Q … W_O, are explained here.

    >>> from attention_core import Config, run_forward
    >>> from attention_core.forward.transformer import Arch, sidebar_block
    >>> config = Config(sentence="I love you today")
    >>> block = sidebar_block(config, Arch(), run_forward(config))
    >>> e = explain(block, "l0.act", (1, 2))
    >>> bool(abs(e.value - block["l0.act"].value[1, 2]) < 1e-12)
    True
"""
from __future__ import annotations

import functools
import math
import re
from dataclasses import replace

from ..forward.config import Config
from ..forward.stages import run_forward
from ..forward.weights import init_weight
from .context import Context, Explanation
from .projections import project
from .registry import EXPLAINERS, explain, register
from .symbols import latex_text

KIND = "block"
LAYERS = range(4)


# ---- the block's symbols: X_l, N(X_l), O_l, H^(l), γ_{l,1}, W_1^(l), Z … -------------------------------------

def block_symbol(trace, key: str) -> tuple[str, str]:
    """(LaTeX, text) of a block Step's symbol."""
    if key == "x":
        return "X_{0}", "X_0"
    if key in ("w_u", "logits"):
        return ("W_U", "W_U") if key == "w_u" else ("Z", "Z")
    if key == "ln_f":
        L = trace.facts["arch"].n_layers
        return rf"N_f(X_{{{L}}})", f"N_f(X_{L})"
    m = re.fullmatch(r"(ln_f|l(\d)\.ln([12]))\.([gb])", key)
    if m:
        sub = "f" if m.group(1) == "ln_f" else f"{m.group(2)},{m.group(3)}"
        return (rf"\gamma_{{{sub}}}", f"γ_{sub}") if m.group(4) == "g" else (rf"\beta_{{{sub}}}", f"β_{sub}")
    l, name = key[1:].split(".", 1)
    mlp = trace.facts["arch"].mlp
    table = {"ln1": (rf"N(X_{{{l}}})", f"N(X_{l})"), "ln2": (rf"N(X_{{{l}}}')", f"N(X_{l}')"),
             "attn": (rf"O_{{{l}}}", f"O_{l}"), "mid": (rf"X_{{{l}}}'", f"X_{l}'"),
             "out": (rf"X_{{{int(l) + 1}}}", f"X_{int(l) + 1}"),
             "sum1": (rf"X_{{{l}}} + O_{{{l}}}", f"X_{l} + O_{l}"),
             "sum2": (rf"X_{{{l}}}' + \mathrm{{MLP}}_{{{l}}}", f"X_{l}' + MLP_{l}"),
             "hidden": (rf"H^{{({l})}}", f"H^({l})"), "act": (rf"\mathrm{{GELU}}(H^{{({l})}})", f"GELU(H^({l}))"),
             "mlp": (rf"\mathrm{{MLP}}_{{{l}}}", f"MLP_{l}"),
             "w_1": (rf"W_1^{{({l})}}", f"W_1^({l})"), "b_1": (rf"b_1^{{({l})}}", f"b_1^({l})"),
             "w_2": (rf"W_2^{{({l})}}", f"W_2^({l})"), "b_2": (rf"b_2^{{({l})}}", f"b_2^({l})")}
    if name == "mid" and not mlp:
        return table["out"]
    return table.get(name, (latex_text(key), key))


class BlockContext(Context):
    """A Context whose cells are written in the block's symbols: (N(X_0))_{1,2}, (W_1^{(0)})_{3,4}, Z_{2,1}."""

    def symbol(self, key):
        return block_symbol(self.trace, key)

    def ref(self, key, index):
        sym, sub = self.symbol(key)[0], ",".join(str(i) for i in index)
        plain = re.fullmatch(r"[A-Z]", sym) is not None
        return f"{sym}_{{{sub}}}" if plain else f"({sym})_{{{sub}}}"

    def ref_text(self, key, index):
        sym = self.symbol(key)[1]
        sym = f"({sym})" if " " in sym else sym                               # (X_0 + O_0)[1,2], not X_0 + O_0[1,2]
        return f"{sym}[{','.join(str(i) for i in index)}]"


def block(*keys: str):
    """Register fn(ctx: BlockContext, key, cell) for these keys of a block Trace."""
    def decorate(fn):
        for key in keys:
            register(key, kind=KIND)(lambda ctx, cell, key=key: fn(BlockContext(ctx.trace, ctx.config, ctx.precision),
                                                                     key, cell))
        return fn
    return decorate


def each_layer(*names: str) -> list[str]:
    return [f"l{l}.{name}" for l in LAYERS for name in names]


def _rewrap(ctx: BlockContext, key: str, cell, e: Explanation, note: str) -> Explanation:
    """Another trace's explanation told as this cell's: the left-hand side renamed, the arithmetic kept."""
    lhs, lhs_text = ctx.ref(key, cell), ctx.ref_text(key, cell)
    rest = e.symbolic.split(" = ", 1)[1] if " = " in e.symbolic else e.symbolic
    first, *lines = e.text.split("\n")
    rest_text = first.split(" = ", 1)[1] if " = " in first else first
    return replace(e, key=key, cell=cell, symbolic=f"{lhs} = {rest}", result=f"{lhs} = {ctx.num(e.value)}",
                   text="\n".join([f"{lhs_text} = {rest_text}", *lines]), note=note + " " + e.note, reads=())


# ---- the norms: LayerNorm (μ, σ² biased, ε inside the root) and RMSNorm (r) -----------------------------------

def norm_source(ctx: BlockContext, key: str) -> tuple[str, str]:
    """(the stream it normalises, the norm's parameter name): l0.ln1 -> (x, l0.ln1); post-norm l0.mid -> (l0.sum1, l0.ln1)."""
    src = ctx.trace[key].inputs[0]
    if key == "ln_f":
        return src, "ln_f"
    l = key[1:key.index(".")]
    return src, f"l{l}.ln{'1' if key.endswith('ln1') or src.endswith('sum1') else '2'}"


def norm_cell(ctx: BlockContext, key: str, cell) -> Explanation:
    i, j = cell
    src, name = norm_source(ctx, key)
    arch = ctx.trace.facts["arch"]
    x = [float(v) for v in ctx.value(src)[i]]                                  # (d,)
    d, eps = len(x), float(arch.eps)
    eps_text = f"{eps:g}".replace("e-0", "e-")                              # 1e-5
    g = float(ctx.value(f"{name}.g")[j])
    lhs, lhs_text = ctx.ref(key, cell), ctx.ref_text(key, cell)
    xr, xt = ctx.ref(src, (i, j)), ctx.ref_text(src, (i, j))
    gr, gt = ctx.ref(f"{name}.g", (j,)), ctx.ref_text(f"{name}.g", (j,))
    reads = tuple((src, (i, k)) for k in range(d)) + ((f"{name}.g", (j,)),)
    start = " At the start γ = 1 and β = 0, so the norm only centres and rescales." if "start" in ctx.trace.facts else ""
    if arch.norm == "rms":
        r = math.sqrt(math.fsum(v * v for v in x) / d + eps)
        value = g * x[j] / r
        return Explanation(
            key, cell, rf"{lhs} = {gr}\, \frac{{{xr}}}{{r_{{{i}}}}},\ r_{{{i}}} = \sqrt{{\tfrac{{1}}{{{d}}}\sum_k "
                       rf"{ctx.ref(src, (i, 'k'))}^2 + \epsilon}}",
            rf"{ctx.factor(g)} \cdot \frac{{{ctx.num(x[j])}}}{{{ctx.num(r)}}}", f"{lhs} = {ctx.num(value)}", value,
            f"{lhs_text} = {gt}·{xt} / r_{i}, r_{i} = √((1/{d}) Σ_k {ctx.ref_text(src, (i, 'k'))}² + ε)\n"
            f"  = {ctx.factor_text(g)}·{ctx.num_text(x[j])} / {ctx.num_text(r)}\n  = {ctx.num_text(value)}",
            note=f"RMSNorm: row {i} divided by its root mean square r_{i} = {ctx.num_text(r)} (ε = {eps_text} inside the "
                 f"root); no mean is taken away and there is no β.{start}".replace(" and β = 0", "").replace("centres and ", ""),
            reads=reads)
    b = float(ctx.value(f"{name}.b")[j])
    mu = math.fsum(x) / d
    var = math.fsum((v - mu) ** 2 for v in x) / d                             # biased: divide by d
    value = g * (x[j] - mu) / math.sqrt(var + eps) + b
    br, bt = ctx.ref(f"{name}.b", (j,)), ctx.ref_text(f"{name}.b", (j,))
    unbiased = var * d / (d - 1) if d > 1 else float("inf")
    return Explanation(
        key, cell, rf"{lhs} = {gr}\, \frac{{{xr} - \mu_{{{i}}}}}{{\sqrt{{\sigma^2_{{{i}}} + \epsilon}}}} + {br}",
        rf"{ctx.factor(g)} \cdot \frac{{{ctx.num(x[j])} - {ctx.factor(mu)}}}{{\sqrt{{{ctx.num(var)} + {ctx.num(eps)}}}}}"
        rf" + {ctx.factor(b)}", f"{lhs} = {ctx.num(value)}", value,
        f"{lhs_text} = {gt}·({xt} − μ_{i}) / √(σ²_{i} + ε) + {bt}\n"
        f"  = {ctx.factor_text(g)}·({ctx.num_text(x[j])} − {ctx.factor_text(mu)}) / √({ctx.num_text(var)} + {eps_text})"
        f" + {ctx.factor_text(b)}\n  = {ctx.num_text(value)}",
        note=f"LayerNorm of row {i}: its mean μ_{i} = (1/{d}) Σ_k x_k = {ctx.num_text(mu)} and its variance "
             f"σ²_{i} = (1/{d}) Σ_k (x_k − μ_{i})² = {ctx.num_text(var)}, the biased one (divided by d = {d}, as "
             f"torch's nn.LayerNorm does; dividing by {d - 1} would give {ctx.num_text(unbiased)}). ε = {eps_text} goes "
             f"inside the square root.{start}",
        reads=reads + ((f"{name}.b", (j,)),))


# ---- the stream: X₀, residual adds, post-norm's norms -------------------------------------------------------

@block("x")
def _x0(ctx: BlockContext, key, cell) -> Explanation:
    if "start" in ctx.trace.facts and ctx.config is not None:                   # the attention pages' X
        return _rewrap(ctx, key, cell, explain(_forward(ctx.config), "x", cell, ctx.precision, ctx.config),
                       "X₀ is the attention pages' X: the block starts from the same rows.")
    what = ("the model's token embedding plus its position embedding, E[id] + E^pos[i], trained with the model"
            if ctx.trace.facts.get("lm") else "what the block was given")
    return ctx.leaf(key, cell, r"\text{given}", "given", None, ctx.num(ctx.value(key)[cell]),
                    ctx.num_text(ctx.value(key)[cell]), f"X₀ is {what}.")


@functools.lru_cache(maxsize=8)
def _forward(config: Config):
    return run_forward(config)


@block(*each_layer("mid", "out", "sum1", "sum2", "ln1", "ln2"), "ln_f")
def _stream(ctx: BlockContext, key, cell) -> Explanation:
    inputs = ctx.trace[key].inputs
    if len(inputs) == 1:                                                       # a norm (pre: before; post: after the add)
        return norm_cell(ctx, key, cell)
    a_key, b_key = inputs                                                      # a residual add: stream + sublayer
    a, b = float(ctx.value(a_key)[cell]), float(ctx.value(b_key)[cell])
    lhs, lhs_text = ctx.ref(key, cell), ctx.ref_text(key, cell)
    sub = "attention's" if b_key.endswith("attn") else "the MLP's"
    return Explanation(key, cell, f"{lhs} = {ctx.ref(a_key, cell)} + {ctx.ref(b_key, cell)}",
                       f"{ctx.num(a)} + {ctx.factor(b)}", f"{lhs} = {ctx.num(a + b)}", a + b,
                       f"{lhs_text} = {ctx.ref_text(a_key, cell)} + {ctx.ref_text(b_key, cell)}\n"
                       f"  = {ctx.num_text(a)} + {ctx.factor_text(b)}\n  = {ctx.num_text(a + b)}",
                       note=f"The residual add: {sub} output is added to the stream, entry by entry; what the stream "
                            f"held ({ctx.num_text(a)}) stays in the sum.", reads=((a_key, cell), (b_key, cell)))


@block(*each_layer("attn"))
def _attn(ctx: BlockContext, key, cell) -> Explanation:
    l = int(key[1:key.index(".")])
    sub = ctx.trace.facts["attention"][l]
    return _rewrap(ctx, key, cell, explain(sub, "output", cell, ctx.precision),
                   f"Layer {l}'s attention, the attention pages' stages on the rows it reads: O = C W_O.")


# ---- the MLP: H = N(X) W_1 + b_1, GELU(h) = h Φ(h), MLP = GELU(H) W_2 + b_2 ---------------------------------

@block(*each_layer("hidden"))
def _hidden(ctx: BlockContext, key, cell) -> Explanation:
    l = key[:key.index(".")]
    i, j = cell
    return project(ctx, key, cell, ctx.trace[key].inputs[0], f"{l}.w_1", f"{l}.b_1",
                   f"Row {i} (“{ctx.word(i)}”) of the stream the MLP reads times column {j} of W_1, plus b_1[{j}]: "
                   "the MLP looks at this token's row alone.")


@block(*each_layer("act"))
def _act(ctx: BlockContext, key, cell) -> Explanation:
    h_key = ctx.trace[key].inputs[0]
    h = float(ctx.value(h_key)[cell])
    phi = 0.5 * (1.0 + math.erf(h / math.sqrt(2.0)))
    value = h * phi
    lhs, lhs_text, hr, ht = ctx.ref(key, cell), ctx.ref_text(key, cell), ctx.ref(h_key, cell), ctx.ref_text(h_key, cell)
    return Explanation(key, cell, rf"{lhs} = {hr}\, \Phi({hr})", rf"{ctx.factor(h)} \cdot \Phi({ctx.num(h)}) = "
                       rf"{ctx.factor(h)} \cdot {ctx.num(phi)}", f"{lhs} = {ctx.num(value)}", value,
                       f"{lhs_text} = {ht}·Φ({ht})\n  = {ctx.factor_text(h)}·Φ({ctx.num_text(h)}) = "
                       f"{ctx.factor_text(h)}·{ctx.num_text(phi)}\n  = {ctx.num_text(value)}",
                       note=f"h = {ht}. Φ is the standard normal CDF, Φ(h) = ½(1 + erf(h/√2)): the chance a N(0, 1) draw is "
                            f"below h. GELU keeps that share of h: {ctx.num_text(phi)} of it here "
                            f"({'most' if phi > 0.5 else 'little'}, since h is {'positive' if h > 0 else 'negative'}).",
                       reads=((h_key, cell),))


@block(*each_layer("mlp"))
def _mlp(ctx: BlockContext, key, cell) -> Explanation:
    l = key[:key.index(".")]
    i, j = cell
    return project(ctx, key, cell, f"{l}.act", f"{l}.w_2", f"{l}.b_2",
                   f"Row {i} of GELU(H^({l[1:]})), d_ff = {ctx.trace[f'{l}.act'].shape[1]} wide, back to column {j} of "
                   "d_model by W_2, plus b_2.")


@block("logits")
def _logits(ctx: BlockContext, key, cell) -> Explanation:
    i, v = cell
    word = ctx.trace.facts["vocab"][v]
    return project(ctx, key, cell, ctx.trace[key].inputs[0], "w_u", None,
                   f"Row {i} (“{ctx.word(i)}”) of the final stream dotted with column {v} of W_U, the column of "
                   f"“{word}”: how strongly this row scores “{word}” as the next token.")


# ---- the parameters: the seeded start drawn again, or trained (read back) --------------------------------------

@block(*each_layer("ln1.g", "ln1.b", "ln2.g", "ln2.b", "w_1", "b_1", "w_2", "b_2"), "ln_f.g", "ln_f.b", "w_u")
def _parameter(ctx: BlockContext, key, cell) -> Explanation:
    start = ctx.trace.facts.get("start")
    value = float(ctx.value(key)[cell])
    if start is None:
        return ctx.leaf(key, cell, r"\text{trained}", "trained", None, ctx.num(value), ctx.num_text(value),
                        "A learned parameter, trained with the model: no formula makes it.")
    last = key.rsplit(".", 1)[-1]
    if key == "w_u" and start["w_u"] == "tied":
        m, v = cell
        word = ctx.trace.facts["vocab"][v]
        i = ctx.trace.tokens.index(word)
        e = explain(_forward(ctx.config), "x_embed", (i, m), ctx.precision, ctx.config)
        return _rewrap(ctx, key, cell, e, f"W_U is tied to the embeddings: its column {v} is the embedding of "
                                          f"“{word}” (row {i} of X_emb), entry {m}.")
    if last in ("g", "b", "b_1", "b_2"):
        start_value = "1" if last == "g" else "0"                              # γ starts at 1, β and biases at 0
        what = {"g": "γ = 1", "b": "β = 0"}.get(last, "a bias 0")
        return ctx.leaf(key, cell, start_value, start_value, float(start_value), start_value, start_value,
                        f"A learned parameter at its start: {what} (training would move it).")
    shape = ctx.trace[key].shape
    fan_in = shape[0]
    z = float(init_weight(start["seed"], f"{start['prefix']}.{key}", shape, fan_in)[cell]) * math.sqrt(fan_in)
    drawn = z / math.sqrt(fan_in)
    return ctx.leaf(key, cell, rf"z / \sqrt{{{fan_in}}},\ z \sim \mathcal{{N}}(0, 1)", f"z / √{fan_in}, z ~ N(0, 1)",
                    drawn, rf"{ctx.factor(z)} / \sqrt{{{fan_in}}}", f"{ctx.factor_text(z)} / √{fan_in}",
                    f"A learned parameter at its seeded start N(0, 1/{fan_in}) (seed {start['seed']}); training would "
                    "move it.")


# ---- a layer's attention Trace inside a block: its X is the stream it reads; its W_Q … W_O may be given ----------

_forward_x = EXPLAINERS[("forward", "x")]
_PARAMETER_KEYS = ("w_q", "w_k", "w_v", "w_o", "b_q", "b_k", "b_v", "b_o")
_forward_parameters = {k: EXPLAINERS[("forward", k)] for k in _PARAMETER_KEYS}


@register("x")
def _x(ctx: Context, cell) -> Explanation:
    """The forward pass's X, or in a block's attention the stream it reads: N(X_l) (pre-norm) or X_l (post-norm)."""
    parent = ctx.trace.facts.get("block")
    if parent is None:
        return _forward_x(ctx, cell)
    reads = ctx.trace.facts["reads"]
    e = explain(parent, reads, cell, ctx.precision)
    lhs, lhs_text = ctx.ref("x", cell), ctx.ref_text("x", cell)
    sym, sym_text = block_symbol(parent, reads)
    first, *lines = e.text.split("\n")
    return replace(e, key="x", symbolic=f"{lhs} = {e.symbolic}", result=f"{lhs} = {ctx.num(e.value)}",
                   text="\n".join([f"{lhs_text} = {first}", *lines]), reads=(),
                   note=f"Inside the block, X here is the stream this layer's attention reads, {sym_text}. " + e.note)


def _given_or_drawn(key: str):
    def fn(ctx: Context, cell) -> Explanation:
        if not ctx.trace.facts.get("weights_given"):
            return _forward_parameters[key](ctx, cell)
        value = float(ctx.value(key)[cell])
        return ctx.leaf(key, cell, r"\text{trained}", "trained", None, ctx.num(value), ctx.num_text(value),
                        "A learned parameter of this layer's attention, trained with the model: no formula makes it.")
    return fn


for _key in _PARAMETER_KEYS:
    register(_key)(_given_or_drawn(_key))
