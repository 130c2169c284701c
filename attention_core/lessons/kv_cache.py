"""The KV cache page's numbers: the forward pass's own computation decoded token by token, and a cache-size
calculator.

The page decodes the sidebar's forward pass: its X, its W_Q, W_K, W_V, W_O (trained or seeded, as the
sidebar's Weights say; with its biases when Bias is on), its H query heads and H_kv KV heads, RoPE
(base pe_base) or ALiBi when the sidebar's Position says so, its window W, score (dot or scaled dot)
and temperature. Decoding sees only earlier tokens, so what it computes is the forward pass under the
causal mask (or the sidebar's window): `decoding_config` is that Config, and its forward pass is the
live proof's reference (the decoded outputs equal its trace["output"]). Additive and bilinear scores
are not decoded here: the page then decodes the scaled dot product and says so.

`decode` feeds the rows (a prompt of P tokens together, then one at a time) through `kv_cache_decode`
and records each step; `kv_cache_trace` turns the record of step t into Steps: the new query row q_t
per head, the cache K and V (H_kv, tokens kept, d_k or d_v), the score row of q_t against the cache
(ALiBi's bias row with it), its weights, the context and output rows. `cache_bytes` is the calculator:
bytes per token = 2 · layers · H_kv · d_head · bytes per value (a latent cache: layers · latent values).

Notation (docs/notation.md, "Today's attention"): H query heads, H_kv KV heads, g = H / H_kv, query
head h reads KV head ⌊h / g⌋; t the token being decoded; W the window (W keys, the token included).
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace

import numpy as np

from ..math.alibi import alibi_slopes
from ..forward.claims import claim
from ..forward.config import Config
from ..math.limits import ConfigError
from ..explanations import Context, Explanation, register, softmax_fraction
from ..forward.stages import run_forward
from ..math.kv_cache import kv_cache_decode
from ..forward.trace import Trace

KIND = "kv_cache"
DECODED_SCORES = ("scaled_dot", "dot")         # the score functions decoded here
PARAMS = ("w_q", "w_k", "w_v", "w_o", "b_q", "b_k", "b_v", "b_o")


@dataclass(frozen=True)
class KVSettings:
    """What the page's claims are about: the sidebar's heads, window and position, the page's P and t."""
    n_heads: int = 1                 # H, query heads (the sidebar's)
    n_kv_heads: int = 1              # H_kv, key/value heads (a divisor of H)
    window: int | None = None        # W keys (the sidebar's Sliding window), or None: causal
    prefill: int = 2                 # P, the prompt's tokens, processed together
    n: int = 4                       # tokens in the sentence
    t: int = 2                       # the step shown
    positional: str = "sinusoidal"   # the sidebar's Position (rope, alibi, …)

    @property
    def g(self) -> int:
        return self.n_heads // self.n_kv_heads

    @property
    def kept(self) -> int:
        """Tokens in the cache after the last token."""
        return self.n if self.window is None else min(self.n, self.window)

    @property
    def together(self) -> bool:
        """Step t is a row of a prompt of several tokens, computed with the others at once."""
        return self.t < self.prefill and self.prefill > 1


def decoding_config(config: Config) -> Config:
    """The forward pass decoding computes: the sidebar's, with the causal mask where the sidebar's mask is
    none or padding (decoding sees only earlier tokens), the scaled dot product where its score is one not
    decoded here."""
    changes = {}
    if config.mask in ("none", "padding"):
        changes["mask"] = "causal"
    if config.score not in DECODED_SCORES:
        changes["score"] = "scaled_dot"
    return config.replace(**changes) if changes else config


def window_of(config: Config) -> int | None:
    return config.window if config.mask == "sliding_window" else None


def settings_for(config: Config, prefill: int, t: int, n: int) -> KVSettings:
    return KVSettings(config.n_heads, config.kv_heads, window_of(config), prefill, n, t, config.positional)


# ---- decoding -----------------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class Decoded:
    config: Config                   # the decoding Config (decoding_config of the sidebar's)
    forward: Trace                   # its forward pass: X, the parameters, and the reference output
    params: dict                     # "w_q" (d_model, H·d_k), "w_k", "w_v" (d_model, H_kv·d), "w_o", "b_*" when bias
    slopes: np.ndarray | None        # ALiBi's m_h (H,), or None
    outputs: np.ndarray              # (n, d_model), decoded
    cache: dict                      # kv_cache_decode's: final "k", "v", "positions", "k_rows", "v_rows", "steps"
    prefill: int

    @property
    def tokens(self) -> tuple[str, ...]:
        return self.forward.tokens


@functools.lru_cache(maxsize=32)
def forward_pass(config: Config) -> Trace:
    """run_forward, once per Config (the page's reference pass)."""
    return run_forward(config)


def check_prefill(prefill, n: int) -> None:
    if isinstance(prefill, bool) or not isinstance(prefill, (int, np.integer)) or not 0 <= prefill <= n:
        raise ConfigError(f"The prompt (prefill) is {prefill!r} tokens but the sentence has {n}: "
                          f"set it to 0 … {n} (0: every token decoded one at a time).")


def decode(config: Config, prefill: int) -> Decoded:
    """The sidebar's forward pass decoded with a KV cache, the first `prefill` tokens as the prompt."""
    return _decode(decoding_config(config), prefill)


@functools.lru_cache(maxsize=64, typed=True)   # True is not the prompt length 1
def _decode(config: Config, prefill: int) -> Decoded:
    fwd = forward_pass(config)
    check_prefill(prefill, fwd.n)
    params = {k: fwd[k].value for k in PARAMS if k in fwd}
    slopes = alibi_slopes(config.n_heads) if config.positional == "alibi" else None
    outputs, cache = kv_cache_decode(
        fwd["x"].value, params["w_q"], params["w_k"], params["w_v"], params["w_o"], config.n_heads, config.kv_heads,
        window=window_of(config), prefill=prefill, rope_base=config.pe_base if config.positional == "rope" else None,
        biases={k: v for k, v in params.items() if k.startswith("b_")}, alibi_slopes=slopes,
        scaled=config.score == "scaled_dot", temperature=config.temperature)
    return Decoded(config, fwd, params, slopes, outputs, cache, prefill)


def heads_of(trace: Trace, name: str) -> np.ndarray:
    """(heads, n, d): the forward pass's Q or K (rotated under RoPE) or V per head (one head: a leading 1)."""
    key = f"{name}_rot" if f"{name}_rot" in trace else f"{name}_heads" if f"{name}_heads" in trace else name
    value = trace[key].value
    return value[None] if key == name or value.ndim == 2 else value


def check_against_full_pass(config: Config, prefill: int) -> dict:
    return _check(decoding_config(config), prefill)


@functools.lru_cache(maxsize=64, typed=True)   # True is not the prompt length 1
def _check(config: Config, prefill: int) -> dict:
    """The decoded numbers against the forward pass's own (the same Config): {"outputs": max |o − O|
    over every row, "weights": max over every step's weight row against the same entries of A,
    "queries": max |q_t − row t of Q (Q^R)|, "keys" and "values": every cached row against K (K^R)
    and V, "full": the forward pass's O (n, d_model)}."""
    d = _decode(config, prefill)
    fwd = d.forward
    a = fwd["weights"].value
    a = a if a.ndim == 3 else a[None]                                       # (H, n, n)
    rows, queries = 0.0, 0.0
    q = heads_of(fwd, "q")
    for step in d.cache["steps"]:
        t, p = step["t"], step["positions"]
        rows = max(rows, float(np.abs(step["weights"] - a[:, t, p]).max()))
        queries = max(queries, float(np.abs(step["q"] - q[:, t]).max()))
    return {"outputs": float(np.abs(d.outputs - fwd["output"].value).max()), "weights": rows, "queries": queries,
            "keys": float(np.abs(d.cache["k_rows"] - heads_of(fwd, "k")).max()),
            "values": float(np.abs(d.cache["v_rows"] - heads_of(fwd, "v")).max()), "full": fwd["output"].value}


def torch_check(config: Config, prefill: int) -> dict:
    """See _torch_check (cached per decoding Config and prompt: the page's box reruns it on every run)."""
    return dict(_torch_check(decoding_config(config), prefill))


@functools.lru_cache(maxsize=32, typed=True)
def _torch_check(config: Config, prefill: int) -> dict:
    """torch's scaled_dot_product_attention (enable_gqa=True) on the forward pass's Q, K, V (rotated under
    RoPE), with the mask as a float matrix (ALiBi's bias, −∞ where hidden) and the scale and temperature
    folded in; with is_causal too where no window and no ALiBi. {"mask": max |torch − decoded|,
    "is_causal": … or None}. Imports torch."""
    import torch
    import torch.nn.functional as F
    d = _decode(config, prefill)
    c, fwd = d.config, d.forward
    n, temperature = fwd.n, c.temperature
    t = lambda a: torch.from_numpy(np.array(a))[None]                          # noqa: E731  (1, heads, n, d)
    q, k, v = t(heads_of(fwd, "q")), t(heads_of(fwd, "k")), t(heads_of(fwd, "v"))
    scale = (1 / math.sqrt(c.d_k) if c.score == "scaled_dot" else 1.0) / temperature
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    allowed = (i >= j) & ((i - j < c.window) if c.mask == "sliding_window" else True)
    bias = np.zeros((c.n_heads, n, n)) if d.slopes is None else -d.slopes[:, None, None] * (i - j)[None]
    mask = np.where(allowed[None], bias / temperature, -np.inf)

    def out(context):                                                         # (1, H, n, d_v) -> (n, d_model)
        o = context[0].numpy().transpose(1, 0, 2).reshape(n, -1) @ d.params["w_o"]
        return o + d.params.get("b_o", 0.0)
    by_mask = out(F.scaled_dot_product_attention(q, k, v, attn_mask=t(mask)[0], scale=scale, enable_gqa=True))
    result = {"mask": float(np.abs(by_mask - d.outputs).max()), "is_causal": None}
    if c.mask == "causal" and d.slopes is None:
        by_flag = out(F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=scale, enable_gqa=True))
        result["is_causal"] = float(np.abs(by_flag - d.outputs).max())
    return result


# ---- one step as Steps --------------------------------------------------------------------------------

def _heads(a: np.ndarray, h: int, d: int) -> np.ndarray:
    """(n, h·d) -> (h, n, d)."""
    return a.reshape(a.shape[0], h, d).transpose(1, 0, 2)


def kv_cache_trace(config: Config, prefill: int = 2, t: int = 0) -> Trace:
    """Step t of decoding the sidebar's forward pass as a Trace (facts["kind"] = "kv_cache").
    Raises ConfigError for a prompt or a step outside the sentence."""
    return _step_trace(decoding_config(config), prefill, t)


@functools.lru_cache(maxsize=256, typed=True)   # True is not the prompt length 1
def _step_trace(config: Config, prefill: int, t: int) -> Trace:
    d = _decode(config, prefill)
    n = len(d.tokens)
    if isinstance(t, bool) or not isinstance(t, (int, np.integer)) or not 0 <= t < n:
        raise ConfigError(f"The step t must be a token of the sentence, 0 … {n - 1}, not {t!r}.")
    step = d.cache["steps"][t]
    h, h_kv, d_k, d_v = config.n_heads, config.kv_heads, config.d_k, config.d_v
    g, window, rope, alibi = h // h_kv, window_of(config), config.positional == "rope", d.slopes is not None
    positions = list(step["positions"])          # the cache while step t is computed (a rolling buffer: t − W + 1 … t)
    k_cache = d.cache["k_rows"][:, positions]                                # (H_kv, kept, d_k)
    v_cache = d.cache["v_rows"][:, positions]                                # (H_kv, kept, d_v)
    scores, bias, weights = step["scores"], step["bias"], step["weights"]     # (H, kept)
    context = np.einsum("hj,hjd->hd", weights, np.repeat(v_cache, g, axis=0))  # (H, d_v)
    output = context.reshape(-1) @ d.params["w_o"] + d.params.get("b_o", 0.0)   # (d_model,)

    trace = Trace(d.tokens)
    words = [d.tokens[p] for p in positions]
    scaled = config.score == "scaled_dot"
    s_sym, s_text = (r"\hat s", "ŝ") if scaled else ("s", "s")
    r = "^R" if rope else ""
    trace.facts.update(
        kind=KIND, config=config, settings=settings_for(config, prefill, t, n), t=t, positions=positions,
        d_k=d_k, d_v=d_v, prefill=t < prefill, g=g, rope=rope, alibi=alibi, scaled=scaled,
        temperature=config.temperature, pe_base=config.pe_base, window=window, n_heads=h, n_kv_heads=h_kv,
        symbols={"q_t": (f"q{r}_{{{t}}}", f"q{r}_{t}"), "k_cache": (r"K^{\text{cache}}", "K_cache"),
                 "v_cache": (r"V^{\text{cache}}", "V_cache"), "kv_cache": ("[K|V]", "[K|V]"),
                 "scores_t": (s_sym, s_text), "alibi_t": ("B", "B"), "logits_t": (rf"({s_sym} + B)", f"({s_text} + B)"),
                 "weights_t": ("a", "a"), "context_t": (f"c_{{{t}}}", f"c_{t}"), "output_t": (f"o_{{{t}}}", f"o_{t}"),
                 "heads_map": ("G", "G")},
        axis_labels={"query head": [str(q) for q in range(h)], "KV head": [str(k) for k in range(h_kv)],
                     "k | v": [f"k{c}" for c in range(d_k)] + [f"v{c}" for c in range(d_v)],
                     "cached": [f"{p} {wd}" for p, wd in zip(positions, words)]})
    trace.add("x", "X (the forward pass's)", d.forward["x"].value, ("n", "d_model"), d.forward["x"].formula,
              why="The sidebar's sentence as the forward pass builds it: one row per token.")
    for key in PARAMS:
        if key in d.params:
            s = d.forward[key]
            trace.add(key, s.title, s.value, s.axes, s.formula, why=s.why)
    bias_q = " + b_Q" if "b_q" in d.params else ""
    trace.add("heads_map", "Which KV head each query head reads", np.equal.outer(np.arange(h) // g,
              np.arange(h_kv)).astype(float), ("query head", "KV head"),
              rf"h \mapsto \lfloor h / g \rfloor,\ g = H / H_{{kv}} = {g}",
              why=f"Query heads in contiguous groups of g = {g}: " + ", ".join(
                  f"{'heads' if g > 1 else 'head'} {u * g}{f'–{u * g + g - 1}' if g > 1 else ''} → KV head {u}"
                  for u in range(h_kv)) + ".",
              scale="mask")
    proj_q = rf"x_{{{t}}}\, (W_Q){_cols('h', 'd_k', ':,')}" + (rf" + (b_Q){_cols('h', 'd_k')}" if bias_q else "")
    trace.add("q_t", f"New query row q{'^R' if rope else ''}_{t}, one per head", step["q"], ("query head", "d_k"),
              (rf"(q^R_{{{t}}})_h = R_{{{t}}}\,({proj_q})" if rope else rf"(q_{{{t}}})_h = {proj_q}"),
              inputs=("x", "w_q"), why=_sentence(say_first("kv_one_query", trace.facts["settings"], prefill=prefill, t=t)))
    k_formula = rf"x_j\, (W_K){_cols('u', 'd_k', ':,')}" + (rf" + (b_K){_cols('u', 'd_k')}" if "b_k" in d.params else "")
    v_formula = rf"x_j\, (W_V){_cols('u', 'd_v', ':,')}" + (rf" + (b_V){_cols('u', 'd_v')}" if "b_v" in d.params else "")
    k_formula = rf"R_j\,({k_formula})" if rope else k_formula
    trace.add("k_cache", "K cache", k_cache, ("KV head", "cached", "d_k"),
              rf"K^{{\text{{cache}}}}_{{u,\,j}} = {k_formula}", inputs=("x", "w_k"))
    trace.add("v_cache", "V cache", v_cache, ("KV head", "cached", "d_v"),
              rf"V^{{\text{{cache}}}}_{{u,\,j}} = {v_formula}", inputs=("x", "w_v"))
    rope_words = say_first("kv_rope_rotated_once", trace.facts["settings"])
    trace.add("kv_cache", "K and V cache", np.concatenate([k_cache, v_cache], axis=2), ("KV head", "cached", "k | v"),
              rf"[K^{{\text{{cache}}}}_{{u,\,j}} \mid V^{{\text{{cache}}}}_{{u,\,j}}] = [{k_formula} \mid {v_formula}]",
              inputs=("x", "w_k", "w_v"),
              why=(f"Per KV head u = 0 … {h_kv - 1}" if h_kv > 1 else "For the one KV head u = 0")
                  + f", a row per cached token j: its key k{r}_j (d_k = {d_k} numbers) beside its value v_j "
                    f"(d_v = {d_v}), written once when token j came in and never changed."
                  + (f" {rope_words[:1].upper()}{rope_words[1:]}." if rope_words else ""))
    div = r"}{\sqrt{d_k}}" if scaled else "}{1}"
    dot = rf"(q{r}_{{{t}}})_h \cdot K^{{\text{{cache}}}}_{{\lfloor h/g \rfloor,\,j}}"
    trace.add("scores_t", f"Scores {s_text} of q{r}_{t}", scores, ("query head", "cached"),
              rf"{s_sym}_{{h,j}} = \frac{{{dot}{div}" if scaled else rf"{s_sym}_{{h,j}} = {dot}",
              inputs=("q_t", "k_cache"),
              why=f"Row {t} of {'Ŝ' if scaled else 'S'} per head over the {count(len(positions), 'cached token')}"
                  + (f", −∞ where token {t} may not look" if not np.isfinite(scores).all() else "") + ": "
                  + _row_claim(trace.facts["settings"]) + ".")
    last = "scores_t"
    if alibi:
        trace.add("alibi_t", f"ALiBi's bias: row {t} of B_h", bias, ("query head", "cached"),
                  rf"(B_h)_{{{t},j}} = -m_h\,({t} - j)",
                  why=_sentence(say_first("kv_alibi_from_distance", trace.facts["settings"], t=t)))
        trace.add("logits_t", f"Scores with ALiBi {s_text} + B", scores + bias, ("query head", "cached"),
                  rf"({s_sym} + B)_{{h,j}} = {s_sym}_{{h,j}} + (B_h)_{{{t},j}}", inputs=("scores_t", "alibi_t"))
        last = "logits_t"
    arg = trace.facts["symbols"][last][0]
    over_t = f" / {config.temperature:g}" if config.temperature != 1 else ""
    arg_text = trace.facts["symbols"][last][1]
    arg_text = arg_text if over_t else arg_text.strip("()")
    trace.add("weights_t", f"Weights a = softmax({arg_text}{over_t})", weights,
              ("query head", "cached"),
              rf"a_{{h,j}} = \frac{{e^{{{arg}_{{h,j}}{over_t}}}}}{{\sum_{{j'}} e^{{{arg}_{{h,j'}}{over_t}}}}}",
              inputs=(last,), scale="sequential")
    trace.add("context_t", f"Context row c_{t}, one part (c_{t})_h per head", context, ("query head", "d_v"),
              rf"(c_{{{t}}})_h = \sum_j a_{{h,j}}\, V^{{\text{{cache}}}}_{{\lfloor h/g \rfloor,\,j}}",
              inputs=("weights_t", "v_cache"))
    last_head = "(c_{%d})_{H-1}" % t if h > 2 else "(c_{%d})_{1}" % t
    parts = (rf"(c_{{{t}}})_0" if h == 1 else rf"(c_{{{t}}})_0, (c_{{{t}}})_1" if h == 2
             else rf"(c_{{{t}}})_0, \dots, {last_head}")
    trace.add("output_t", f"Output row o_{t}", output, ("d_model",),
              rf"o_{{{t}}} = [{parts}]\, W_O" + (" + b_O" if "b_o" in d.params else ""),
              inputs=("context_t", "w_o"), why=f"Row {t} of the forward pass's output O (the check above).")
    return trace


def _cols(head: str, width: str, rows: str = "") -> str:
    """A head's block of columns as a subscript: '_{:,\\; h d_k:(h+1) d_k}' (rows ':,' for a matrix, '' for a bias):
    the notation's Q[:, h·d_k : (h+1)·d_k]."""
    return rf"_{{{rows}\; {head} {width}:({head}+1) {width}}}"


def _row_claim(s: "KVSettings") -> str:
    """What step t's score row is: one query's row, or a row of the prompt's square (with or without the window
    hiding keys inside it)."""
    return next(w for w in (say_first(k, s, prefill=s.prefill, t=s.t, window=s.window,
                                      w_back=None if s.window is None else count(s.window - 1, "token"))
                            for k in ("kv_one_row", "kv_prompt_square", "kv_prompt_square_window")) if w)


def count(k: int, word: str) -> str:
    """'1 token', '3 tokens'."""
    return f"{k} {word}{'' if k == 1 else 's'}"


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:] + "." if text else ""


def say_first(key: str, settings, **fields) -> str:
    """A claim's words (or its `otherwise`) for these settings, fields filled in."""
    from ..forward.claims import say
    return say(key, settings, **fields)


# ---- the calculator -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Preset:
    name: str
    layers: int
    n_heads: int
    n_kv_heads: int
    d_head: int
    context: int                     # the published configuration's maximum positions (max_position_embeddings)
    window: int | None = None        # sliding window of the windowed layers (W keys)
    local_layers: int = 0            # layers with the window (the others are global)
    latent: int | None = None        # values per token per layer of a latent cache (not ×2)
    mha_values: int | None = None    # values per token per layer with plain multi-head attention
    source: str = ""

    @property
    def values_per_token_layer(self) -> int:
        """Values cached per token and layer: 2 · H_kv · d_head (K and V), or the latent width."""
        return self.latent if self.latent is not None else 2 * self.n_kv_heads * self.d_head

    @property
    def mha_values_per_token_layer(self) -> int:
        return self.mha_values if self.mha_values is not None else 2 * self.n_heads * self.d_head

    @property
    def global_layers(self) -> int:
        return self.layers - (self.local_layers if self.window is not None else 0)


PRESETS = {p.name: p for p in (
    Preset("Llama 3 8B", 32, 32, 8, 128, 8192,
           source="Meta's published configuration: 32 layers, 32 heads, 8 KV heads, head width 4096/32 = 128, "
                  "at most 8,192 positions"),
    Preset("Llama 3 70B", 80, 64, 8, 128, 8192,
           source="Meta's published configuration: 80 layers, 64 heads, 8 KV heads, head width 8192/64 = 128, "
                  "at most 8,192 positions"),
    Preset("Mistral 7B", 32, 32, 8, 128, 32768, window=4096, local_layers=32,
           source="The Mistral 7B paper and v0.1's published configuration: 32 layers, 32 heads, 8 KV heads, head "
                  "width 128, a window of 4,096 on every layer, at most 32,768 positions"),
    Preset("Qwen2.5-7B", 28, 28, 4, 128, 131072,
           source="Qwen's published configuration: 28 layers, 28 heads, 4 KV heads, head width 3584/28 = 128, no "
                  "sliding window, at most 131,072 positions"),
    Preset("Gemma 2 9B", 42, 16, 8, 256, 8192, window=4096, local_layers=21,
           source="Gemma 2's published configuration: 42 layers, 16 heads, 8 KV heads, head width 256, a window of "
                  "4,096, at most 8,192 positions; its report: local (windowed) and global layers alternate, 21 of each"),
    Preset("DeepSeek-V3", 61, 128, 128, 128, 163840, latent=512 + 64, mha_values=128 * (192 + 128),
           source="DeepSeek-V3's published configuration: 61 layers, a latent of 512 and a shared RoPE key of 64 per "
                  "layer, at most 163,840 positions; MHA would keep 128 heads' keys (128 + 64) and values (128)"),
)}
BYTES = {2: "bf16 (2 bytes)", 1: "fp8 (1 byte)"}
CONTEXTS = (1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072)


@dataclass(frozen=True)
class CalcSettings:
    """What the calculator's claims are about: the chosen preset and the context length."""
    preset: Preset
    tokens: int = 8192


def cache_bytes(p: Preset, tokens: int, bytes_per_value: int = 2, mha: bool = False) -> int:
    """Bytes of one sequence's cache after `tokens` tokens: Σ over layers of values per token · tokens kept
    (min(tokens, W) on a windowed layer) · bytes per value. mha: the same model with H_kv = H."""
    per = p.mha_values_per_token_layer if mha else p.values_per_token_layer
    local = p.local_layers if p.window is not None else 0
    kept_local = min(tokens, p.window) if p.window is not None else tokens
    return per * bytes_per_value * ((p.layers - local) * tokens + local * kept_local)


def bytes_per_token(p: Preset, bytes_per_value: int = 2) -> int:
    """Bytes a token adds while no window is full: 2 · layers · H_kv · d_head · bytes (latent: layers · latent · bytes).

    >>> bytes_per_token(PRESETS["Llama 3 8B"]), human(bytes_per_token(PRESETS["Llama 3 8B"]))   # 2·32·8·128·2
    (131072, '128 KiB')
    >>> bytes_per_token(PRESETS["DeepSeek-V3"])                                                 # 61·(512 + 64)·2
    70272
    """
    return cache_bytes(p, 1, bytes_per_value)


def human(b: float) -> str:
    """131072 -> '128 KiB' (binary units, up to 3 significant digits)."""
    for unit, size in (("GiB", 2 ** 30), ("MiB", 2 ** 20), ("KiB", 2 ** 10)):
        if b >= size:
            return f"{b / size:.3g} {unit}"
    return f"{int(b)} B"


@functools.lru_cache(maxsize=32)
def calculator_trace(bytes_per_value: int = 2, tokens: int = 8192) -> Trace:
    """The presets' cache sizes as one Step "cache_bytes" (preset, quantity): bytes per token, bytes at
    `tokens` tokens, and the same model with MHA; facts["kind"] = "kv_cache" (its cells are explained)."""
    if bytes_per_value not in BYTES:
        raise ConfigError(f"Bytes per value must be 2 (bf16) or 1 (fp8), not {bytes_per_value!r}.")
    if isinstance(tokens, bool) or not isinstance(tokens, (int, np.integer)) or not 1 <= tokens <= 10 ** 7:
        raise ConfigError(f"The context length must be 1 … 10,000,000 tokens, not {tokens!r}.")
    names = list(PRESETS)
    value = np.array([[bytes_per_token(p, bytes_per_value), cache_bytes(p, tokens, bytes_per_value),
                       cache_bytes(p, tokens, bytes_per_value, mha=True)] for p in PRESETS.values()], dtype=float)
    trace = Trace(tuple(names))
    trace.facts.update(kind=KIND, bytes_per_value=bytes_per_value, tokens=tokens, symbols={"cache_bytes": (r"\text{bytes}", "bytes")},
                       axis_labels={"preset": names, "quantity": ["bytes per token", f"at {tokens:,} tokens",
                                                                  f"MHA at {tokens:,} tokens"]})
    trace.add("cache_bytes", "KV cache bytes", value, ("preset", "quantity"),
              r"\text{bytes} = 2 \cdot \text{layers} \cdot H_{kv} \cdot d_{head} \cdot \text{bytes per value} \cdot \text{tokens kept}")
    return trace


def memory_curves(bytes_per_value: int, max_tokens: int, points: int = 33) -> list[dict]:
    """Rows {preset, tokens, GiB, kind} for the chart: every preset, and each one with MHA (kind "MHA")."""
    grid = sorted(set(np.linspace(0, max_tokens, points).astype(int).tolist()) | {w for p in PRESETS.values()
                  if p.window and (w := p.window) <= max_tokens})
    return [{"preset": p.name, "cache": kind, "tokens": n, "GiB": cache_bytes(p, n, bytes_per_value, kind == "MHA") / 2 ** 30}
            for p in PRESETS.values() for kind in ("as published", "MHA") for n in grid]


# ---- click-a-cell -------------------------------------------------------------------------------------

def number(v: float) -> str:
    """131072 -> '131{,}072' (a comma LaTeX does not space)."""
    return f"{v:,.0f}".replace(",", "{,}")


class Cells(Context):
    """The page's cells named by token, as its formulas index them: a cached row r is written as its token
    p_r (ŝ_{h,j}, a_{h,j}, K^cache_{u,j,c} with j = p_r, the key's position), and ALiBi's bias row as
    (B_h)_{t,j}. The cells' reads stay the arrays' own indices."""

    def _by_token(self, key: str, index: tuple) -> tuple:
        if key not in self.trace:
            return tuple(index)
        axes, positions = self.trace[key].axes, self.trace.facts.get("positions", ())
        return tuple(positions[i] if a == "cached" and isinstance(i, (int, np.integer)) else i
                     for a, i in zip(axes, index))

    def ref(self, key: str, index: tuple) -> str:
        index = self._by_token(key, index)
        if key == "alibi_t":
            h, j = index
            return rf"(B_{{{h}}})_{{{self.trace.facts['t']},{j}}}"
        return super().ref(key, index)

    def ref_text(self, key: str, index: tuple) -> str:
        index = self._by_token(key, index)
        if key == "alibi_t":
            h, j = index
            return f"B_{h}[{self.trace.facts['t']},{j}]"
        return super().ref_text(key, index)


def explainer(key: str):
    """register(key) for this page's steps, the explainer handed a Cells context."""
    def decorate(fn):
        def run(ctx: Context, cell):
            return fn(ctx if isinstance(ctx, Cells) else Cells(ctx.trace, ctx.config, ctx.precision), cell)
        register(key, kind=KIND)(run)
        return fn
    return decorate


def _minus(ctx: Context, v: float) -> tuple[str, str]:
    """A number subtracted, (LaTeX, text): '- 1.2', or '+ 12.978' for −12.978 (no double minus)."""
    v = float(v)
    return ((rf"+ {ctx.num(-v)}", f"+ {ctx.num_text(-v)}") if v < 0 else
            (rf"- {ctx.num(v)}", f"− {ctx.num_text(v)}"))


def _projection(ctx: Context, w_key: str, i: int, col: int) -> tuple[float, list, tuple]:
    """Row i of X times column col of W (+ b[col]): (value, terms for sum_of_products, bias or None)."""
    x, w = ctx.value("x"), ctx.value(w_key)
    b_key = "b_" + w_key[2:]
    terms = [(ctx.ref("x", (i, m)), ctx.ref_text("x", (i, m)), x[i, m], ctx.ref(w_key, (m, col)),
              ctx.ref_text(w_key, (m, col)), w[m, col], ("x", (i, m)), (w_key, (m, col))) for m in range(x.shape[1])]
    parts = [float(x[i, m]) * float(w[m, col]) for m in range(x.shape[1])]
    bias = None
    if b_key in ctx.trace:
        b = ctx.value(b_key)[col]
        bias = (ctx.ref(b_key, (col,)), ctx.ref_text(b_key, (col,)), b, (b_key, (col,)))
        parts.append(float(b))
    return math.fsum(parts), terms, bias


def _projected_cell(ctx: Context, key: str, cell, w_key: str, i: int, block: int, width: int, c: int,
                    rotate: bool, what: str) -> Explanation:
    """A cell of a projected row: x_i W[:, block·width + c] (+ b), rotated by position i under RoPE. Head `block`
    (a query head h or a KV head u) owns W's columns block·width … (block + 1)·width − 1."""
    d_model = ctx.value("x").shape[1]
    w_sym, w_text = ctx.symbol(w_key)
    b_key = "b_" + w_key[2:]
    col = block * width + c
    head = "KV head" if key != "q_t" else "head"
    if not rotate:
        value, terms, bias = _projection(ctx, w_key, i, col)
        return ctx.sum_of_products(key, cell, rf"\sum_{{m=0}}^{{{d_model - 1}}} X_{{{i},m}} ({w_sym})_{{m,{col}}}",
                                   f"Σ_m X[{i},m]·{w_text}[m,{col}]", terms, bias=bias,
                                   note=f"{what}: row {i} (“{ctx.word(i)}”) of X times column {col} of {w_text}"
                                        + (f", plus {ctx.symbol(b_key)[1]}[{col}]" if bias else "")
                                        + f". {head.capitalize()} {block} owns {w_text}'s columns {block * width} … "
                                          f"{block * width + width - 1}; column {col} = {block}·{width} + {c} is its "
                                          f"column {c}.")
    pair, odd = divmod(c, 2)
    base, d = float(ctx.trace.facts["pe_base"]), width
    theta = base ** (-2.0 * pair / d)
    angle = i * theta
    cos, sin = math.cos(angle), math.sin(angle)
    (u0, terms0, _), (u1, terms1, _) = (_projection(ctx, w_key, i, block * width + 2 * pair),
                                        _projection(ctx, w_key, i, block * width + 2 * pair + 1))
    value = u0 * sin + u1 * cos if odd else u0 * cos - u1 * sin
    lhs, lhs_text = ctx.ref(key, cell), ctx.ref_text(key, cell)
    row = "q" if key == "q_t" else "k"                     # the row before the turn: q_t, k_j (docs/notation.md)
    plain = [(rf"({row}_{{{i}}})_{{{block},{2 * pair + e}}}", f"({row}_{i})[{block},{2 * pair + e}]") for e in (0, 1)]
    (a, a_text), (b, b_text) = plain
    if odd:
        symbolic = rf"{lhs} = {a} \sin({i}\theta_{{{pair}}}) + {b} \cos({i}\theta_{{{pair}}})"
        shown = rf"{ctx.factor(u0)} \cdot {ctx.factor(sin)} + {ctx.factor(u1)} \cdot {ctx.factor(cos)}"
        text = (f"{a_text}·sin({i}θ_{pair}) + {b_text}·cos({i}θ_{pair})",
                f"{ctx.factor_text(u0)}·{ctx.factor_text(sin)} + {ctx.factor_text(u1)}·{ctx.factor_text(cos)}")
    else:
        symbolic = rf"{lhs} = {a} \cos({i}\theta_{{{pair}}}) - {b} \sin({i}\theta_{{{pair}}})"
        shown = rf"{ctx.factor(u0)} \cdot {ctx.factor(cos)} - {ctx.factor(u1)} \cdot {ctx.factor(sin)}"
        text = (f"{a_text}·cos({i}θ_{pair}) − {b_text}·sin({i}θ_{pair})",
                f"{ctx.factor_text(u0)}·{ctx.factor_text(cos)} − {ctx.factor_text(u1)}·{ctx.factor_text(sin)}")
    plus_b = f" + {ctx.symbol(b_key)[1]}" if b_key in ctx.trace else ""
    note = (f"{what}, turned by RoPE at position {i} (“{ctx.word(i)}”): pair {pair} (columns {2 * pair}, "
            f"{2 * pair + 1} of {head} {block}) by {i}·θ_{pair}, θ_{pair} = {base:g}^(−2·{pair}/{d}) = "
            f"{ctx.num_text(theta)}. Before the turn, {row}_{i} = x_{i}·{w_text}{plus_b} on those columns "
            f"({w_text}'s columns {block * width + 2 * pair}, {block * width + 2 * pair + 1}): {a_text} = "
            f"{ctx.num_text(u0)}, {b_text} = {ctx.num_text(u1)} (sums of {d_model} products).")
    reads = tuple(r for tm in terms0 + terms1 for r in (tm[6], tm[7]))
    return Explanation(key, cell, symbolic, shown, f"{lhs} = {ctx.num(value)}", value,
                       f"{lhs_text} = {text[0]}\n  = {text[1]}\n  = {ctx.num_text(value)}", note=note,
                       n_terms=2, reads=reads)


@explainer("q_t")
def _q_t(ctx: Context, cell):
    h, c = cell
    f = ctx.trace.facts
    return _projected_cell(ctx, "q_t", cell, "w_q", f["t"], h, f["d_k"], c, f["rope"],
                           f"The new token t = {f['t']}'s query, head {h}")


def _cache_row(key: str, w_key: str):
    def explain_cache(ctx: Context, cell):
        u, r, c = cell
        f = ctx.trace.facts
        p = f["positions"][r]
        width = f["d_k"] if key == "k_cache" else f["d_v"]
        e = _projected_cell(ctx, key, cell, w_key, p, u, width, c, f["rope"] and key == "k_cache",
                            f"Token {p}'s cached {'key' if key == 'k_cache' else 'value'}, KV head {u}")
        return replace(e, note=e.note + f" It was computed when token {p} came in and is read again at every later step"
                       + (" that sees it." if f["window"] is not None else "."))
    return explain_cache


explainer("k_cache")(_cache_row("k_cache", "w_k"))
explainer("v_cache")(_cache_row("v_cache", "w_v"))


@explainer("kv_cache")
def _kv_cache(ctx: Context, cell):
    """[K | V] side by side: the left d_k columns are K's, the right d_v ones V's."""
    u, r, c = cell
    d_k = ctx.trace.facts["d_k"]
    key = "k_cache" if c < d_k else "v_cache"
    return _cache_row(key, "w_k" if c < d_k else "w_v")(ctx, (u, r, c if c < d_k else c - d_k))


def _hidden(ctx: Context, key: str, cell) -> Explanation | None:
    """A score the step may not look at: −∞ (a later prompt token, or one outside the window)."""
    h, r = cell
    if np.isfinite(ctx.value(key)[cell]):
        return None
    f = ctx.trace.facts
    t, p = f["t"], f["positions"][r]
    lhs, lhs_text = ctx.ref(key, cell), ctx.ref_text(key, cell)
    why = (f"The prompt's rows were computed together, but row t = {t} may not see token {p}: it comes later "
           "(the causal mask), so its score is −∞ and its weight 0." if p > t else
           f"Token {p} is {t - p} tokens before t = {t}, outside the window of W = {f['window']} keys: its score is "
           "−∞ and its weight 0.")
    rule = rf"\text{{token }} {p} > t = {t}" if p > t else rf"t - {p} = {t - p} \geq W = {f['window']}"
    return Explanation(key, cell, rf"{lhs} = -\infty", rule, rf"{lhs} = -\infty", float("-inf"),
                       f"{lhs_text} = -inf\n  = {'token %d is after t = %d' % (p, t) if p > t else 'outside the window'}"
                       "\n  = -inf", note=why)


@explainer("scores_t")
def _scores_t(ctx: Context, cell):
    hidden = _hidden(ctx, "scores_t", cell)
    if hidden is not None:
        return hidden
    h, r = cell
    f = ctx.trace.facts
    g, d_k, p = f["g"], f["d_k"], f["positions"][r]
    u = h // g
    q, k = ctx.value("q_t"), ctx.value("k_cache")
    q_sym = ctx.symbol("q_t")[0]
    terms = [(ctx.ref("q_t", (h, c)), ctx.ref_text("q_t", (h, c)), q[h, c], ctx.ref("k_cache", (u, r, c)),
              ctx.ref_text("k_cache", (u, r, c)), k[u, r, c], ("q_t", (h, c)), ("k_cache", (u, r, c)))
             for c in range(d_k)]
    divisor = (rf"\sqrt{{{d_k}}}", f"√{d_k}", math.sqrt(d_k)) if f["scaled"] else None
    rotated = " (both turned by RoPE, so position enters the score only through t − j)" if f["rope"] else ""
    return ctx.sum_of_products("scores_t", cell,
                               rf"\sum_c ({q_sym})_{{{h},c}} K^{{\text{{cache}}}}_{{{u},{p},c}}"
                               + (r" / \sqrt{d_k}" if divisor else ""),
                               f"Σ_c {ctx.symbol('q_t')[1]}[{h},c]·K_cache[{u},{p},c]" + (" / √d_k" if divisor else ""),
                               terms, divisor=divisor,
                               note=f"Query head {h} reads KV head ⌊{h}/{g}⌋ = {u}; key j = {p} is token {p} "
                                    f"(“{ctx.word(p)}”), its row of the cache{rotated}.")


@explainer("alibi_t")
def _alibi_t(ctx: Context, cell):
    h, r = cell
    f = ctx.trace.facts
    t, p = f["t"], f["positions"][r]
    lhs, lhs_text = ctx.ref("alibi_t", cell), ctx.ref_text("alibi_t", cell)
    if not np.isfinite(ctx.value("scores_t")[cell]):
        return Explanation("alibi_t", cell, f"{lhs} = 0", r"\text{hidden key}", f"{lhs} = 0", 0.0,
                           f"{lhs_text} = 0\n  = hidden key\n  = 0",
                           note="This key is hidden from t (its score is −∞): no bias is added to it.")
    m = float(alibi_slopes(f["n_heads"])[h])
    value = 0.0 - m * (t - p)
    return Explanation("alibi_t", cell, rf"{lhs} = -m_{{{h}}}\,({t} - {p})", rf"-{ctx.factor(m)} \cdot {t - p}",
                       f"{lhs} = {ctx.num(value)}", value,
                       f"{lhs_text} = −m_{h}·({t} − {p})\n  = −{ctx.factor_text(m)}·{t - p}\n  = {ctx.num_text(value)}",
                       note=f"Head {h}'s ALiBi slope m_{h} = {ctx.num_text(m)} (the forward pass's, heads counted from 0); "
                            f"token {p} is {t - p} token{'s' if t - p != 1 else ''} before t = {t}: only the distance "
                            "enters, so nothing about it needs to be cached.")


@explainer("logits_t")
def _logits_t(ctx: Context, cell):
    hidden = _hidden(ctx, "logits_t", cell)
    if hidden is not None:
        return hidden
    s_, b = float(ctx.value("scores_t")[cell]), float(ctx.value("alibi_t")[cell])
    lhs, lhs_text = ctx.ref("logits_t", cell), ctx.ref_text("logits_t", cell)
    return Explanation("logits_t", cell, rf"{lhs} = {ctx.ref('scores_t', cell)} + {ctx.ref('alibi_t', cell)}",
                       rf"{ctx.num(s_)} + {ctx.factor(b)}", f"{lhs} = {ctx.num(s_ + b)}", s_ + b,
                       f"{lhs_text} = {ctx.ref_text('scores_t', cell)} + {ctx.ref_text('alibi_t', cell)}\n"
                       f"  = {ctx.num_text(s_)} + {ctx.factor_text(b)}\n  = {ctx.num_text(s_ + b)}",
                       note="The score plus ALiBi's distance penalty.", n_terms=2,
                       reads=(("scores_t", cell), ("alibi_t", cell)))


@explainer("weights_t")
def _weights_t(ctx: Context, cell):
    h, r = cell
    src = ctx.trace["weights_t"].inputs[0]
    temperature = float(ctx.trace.facts["temperature"])
    s = ctx.value(src)[h]
    keep = [j for j in range(len(s)) if np.isfinite(s[j])]
    lhs, lhs_text = ctx.ref("weights_t", cell), ctx.ref_text("weights_t", cell)
    if r not in keep:
        return Explanation("weights_t", cell, rf"{lhs} = e^{{-\infty}} / \dots", "0", f"{lhs} = 0", 0.0,
                           f"{lhs_text} = e^-inf / …\n  = 0\n  = 0", note="A hidden score (−∞) gets weight 0.")
    top = max(s[j] for j in keep)
    e = [math.exp((s[j] - top) / temperature) for j in keep]
    total = math.fsum(e)
    over, over_text = (f" / {temperature:g}", f" / {temperature:g}") if temperature != 1 else ("", "")
    minus, minus_text = _minus(ctx, top)
    if temperature != 1:
        exps = [rf"e^{{({ctx.ref(src, (h, j))} {minus}){over}}}" for j in keep]
        exps_text = [f"e^(({ctx.ref_text(src, (h, j))} {minus_text}){over_text})" for j in keep]
    else:
        exps = [rf"e^{{{ctx.ref(src, (h, j))} {minus}}}" for j in keep]
        exps_text = [f"e^({ctx.ref_text(src, (h, j))} {minus_text})" for j in keep]
    shown, text, hidden = softmax_fraction(ctx, exps, exps_text, e, keep.index(r), total)
    value = e[keep.index(r)] / total
    p = ctx.trace.facts["positions"][r]
    x = ctx.symbol(src)[0]
    return Explanation("weights_t", cell,
                       rf"{lhs} = \frac{{e^{{{x}_{{{h},{p}}}{over}}}}}{{\sum_{{j'}} e^{{{x}_{{{h},j'}}{over}}}}}",
                       shown, f"{lhs} = {ctx.num(value)}", value, f"{lhs_text} = {text}\n  = {ctx.num_text(value)}",
                       note=f"Softmax over head {h}'s row of {len(keep)} visible scores"
                            + (f", divided by the temperature T = {temperature:g}" if temperature != 1 else "")
                            + f" (the largest, {ctx.num_text(top)}, subtracted first: the same weights, no overflow).",
                       n_terms=len(keep), n_elided=hidden, reads=tuple((src, (h, j)) for j in keep))


@explainer("context_t")
def _context_t(ctx: Context, cell):
    h, c = cell
    u = h // ctx.trace.facts["g"]
    a, v = ctx.value("weights_t"), ctx.value("v_cache")
    terms = [(ctx.ref("weights_t", (h, j)), ctx.ref_text("weights_t", (h, j)), a[h, j],
              ctx.ref("v_cache", (u, j, c)), ctx.ref_text("v_cache", (u, j, c)), v[u, j, c],
              ("weights_t", (h, j)), ("v_cache", (u, j, c))) for j in range(a.shape[1])]
    return ctx.sum_of_products("context_t", cell, rf"\sum_j a_{{{h},j}} V^{{\text{{cache}}}}_{{{u},j,{c}}}",
                               f"Σ_j a[{h},j]·V_cache[{u},j,{c}]", terms,
                               note=f"Head {h}'s weights average column {c} of KV head {u}'s cached values.")


@explainer("output_t")
def _output_t(ctx: Context, cell):
    (c,) = cell
    t = ctx.trace.facts["t"]
    context, w_o = ctx.value("context_t"), ctx.value("w_o")
    n_heads, d_v = context.shape
    terms = [(ctx.ref("context_t", (h, e)), ctx.ref_text("context_t", (h, e)), context[h, e],
              ctx.ref("w_o", (h * d_v + e, c)), ctx.ref_text("w_o", (h * d_v + e, c)), w_o[h * d_v + e, c],
              ("context_t", (h, e)), ("w_o", (h * d_v + e, c))) for h in range(n_heads) for e in range(d_v)]
    bias = None
    if "b_o" in ctx.trace:
        bias = (ctx.ref("b_o", (c,)), ctx.ref_text("b_o", (c,)), ctx.value("b_o")[c], ("b_o", (c,)))
    return ctx.sum_of_products("output_t", cell, rf"\sum_{{h,e}} (c_{{{t}}})_{{h,e}} (W_O)_{{h d_v + e,\,{c}}}",
                               f"Σ_h,e c_{t}[h,e]·W_O[h·d_v + e, {c}]", terms, bias=bias,
                               note=f"Column {c} of token {t}'s output row: the heads' context rows (c_{t})_h side by "
                                    "side, times W_O" + (", plus b_O." if bias else "."))


def _forward_leaf(key: str):
    """X, a weight or a bias: the forward pass's own number, made again by a fresh forward pass."""
    def explain_leaf(ctx: Context, cell):
        regenerated = float(forward_pass(ctx.config)[key].value[cell]) if ctx.config is not None else None
        v = ctx.value(key)[cell]
        sym, text = ctx.symbol(key)
        added = ctx.config is None or ctx.config.positional in ("sinusoidal", "learned", "index")
        where = (f"Row {cell[0]} (“{ctx.word(cell[0])}”) of the forward pass's X, "
                 + ("the sidebar's embedding with its positional encoding" if added else
                    "the sidebar's embedding alone (this Position adds nothing to X)")
                 if key == "x" else f"The forward pass's {text}")
        if key in ("w_q", "w_k", "w_v", "b_q", "b_k", "b_v") and ctx.config is not None:
            where += (", trained with the sentiment classifier (the sidebar's Weights)" if ctx.config.weights == "trained"
                      else ", at its seeded random start (the sidebar's Weights and Seed)")
        elif key in ("w_o", "b_o"):
            where += ", at its seeded random start"
        return ctx.leaf(key, cell, rf"{sym}^{{\text{{forward}}}}_{{{','.join(map(str, cell))}}}",
                        f"{text}_forward[{','.join(map(str, cell))}]", regenerated, ctx.num(v), ctx.num_text(v),
                        where + ": the same number as on the forward pages (made again here by the forward pass).")
    return explain_leaf


for _key in ("x", *PARAMS):
    register(_key, kind=KIND)(_forward_leaf(_key))


@register("heads_map", kind=KIND)
def _heads_map(ctx: Context, cell):
    h, k = cell
    g = ctx.trace.facts["g"]
    value = float(h // g == k)
    lhs, lhs_text = ctx.ref("heads_map", cell), ctx.ref_text("heads_map", cell)
    return Explanation("heads_map", cell, rf"{lhs} = [\lfloor h / g \rfloor = {k}]",
                       rf"[\lfloor {h} / {g} \rfloor = {k}] = [{h // g} = {k}]", f"{lhs} = {int(value)}", value,
                       f"{lhs_text} = [⌊h/g⌋ = {k}]\n  = [⌊{h}/{g}⌋ = {k}] = [{h // g} = {k}]\n  = {int(value)}",
                       note=f"Query head {h} reads KV head {h // g}" + (" (this one)." if value else ", not this one."))


@register("cache_bytes", kind=KIND)
def _cache_bytes(ctx: Context, cell):
    r, q = cell
    p = list(PRESETS.values())[r]
    b, tokens = ctx.trace.facts["bytes_per_value"], ctx.trace.facts["tokens"]
    what = ("per token", f"{tokens:,} tokens", f"MHA, {tokens:,} tokens")[q]
    lhs, lhs_text = rf"\text{{bytes}}(\text{{{p.name}, {what}}})", f"bytes({p.name}, {what})"
    mha = q == 2
    n = 1 if q == 0 else tokens
    if p.latent is not None and not mha:
        per, per_tex, per_text = p.latent, rf"({p.latent - 64} + 64)", f"({p.latent - 64} + 64)"
        why = "one latent vector (512) and one shared RoPE key (64) per token and layer: not ×2, K and V come out of the latent"
    elif p.latent is not None:
        per, per_tex, per_text = p.mha_values_per_token_layer, r"128 \cdot (192 + 128)", "128·(192 + 128)"
        why = "the same 128 heads with plain MHA: each keeps a key of 128 + 64 and a value of 128"
    else:
        h = p.n_heads if mha else p.n_kv_heads
        per, per_tex, per_text = 2 * h * p.d_head, rf"2 \cdot {h} \cdot {p.d_head}", f"2·{h}·{p.d_head}"
        why = (f"K and V (the 2) for all {h} heads, one KV head per query head as MHA has, each d_head = {p.d_head} "
               "wide" if mha else f"K and V (the 2) of its {h} KV head{'s' if h > 1 else ''}, each d_head = "
               f"{p.d_head} wide")
    local = p.local_layers if p.window is not None else 0
    kept = min(n, p.window) if p.window is not None else n
    value = float(per * b * ((p.layers - local) * n + local * kept))
    if local:                                                 # Σ over layers of the tokens each keeps
        parts = ([f"{p.layers - local} \\cdot {n}"] if local < p.layers else []) + [rf"{local} \cdot \min({n}, {p.window})"]
        kept_tex = "(" + " + ".join(parts) + ")"
        kept_text = "(" + " + ".join(x.replace(r" \cdot ", "·").replace(r"\min", "min") for x in parts) + ")"
        symbolic = r"\text{values per token and layer} \cdot \text{bytes per value} \cdot \sum_{\text{layers}} \text{tokens kept}"
        symbolic_text = "values per token and layer · bytes per value · Σ_layers tokens kept"
        shown, shown_text = rf"{per_tex} \cdot {b} \cdot {kept_tex}", f"{per_text}·{b}·{kept_text}"
    elif p.latent is not None and not mha:
        symbolic = r"\text{layers} \cdot (d_c + d_h^R) \cdot \text{bytes per value} \cdot \text{tokens}"
        symbolic_text = "layers · (d_c + d_rope) · bytes per value · tokens"
        shown, shown_text = rf"{p.layers} \cdot {per_tex} \cdot {b} \cdot {n}", f"{p.layers}·{per_text}·{b}·{n}"
    else:
        symbolic = r"\text{layers} \cdot \text{values per token and layer} \cdot \text{bytes per value} \cdot \text{tokens}"
        symbolic_text = "layers · values per token and layer · bytes per value · tokens"
        if p.latent is None:
            symbolic = r"2 \cdot \text{layers} \cdot H_{kv} \cdot d_{head} \cdot \text{bytes per value} \cdot \text{tokens}"
            symbolic_text = "2 · layers · H_kv · d_head · bytes per value · tokens"
            h = p.n_heads if mha else p.n_kv_heads
            per_tex, per_text = rf"{p.layers} \cdot {h} \cdot {p.d_head}", f"{p.layers}·{h}·{p.d_head}"
            shown, shown_text = rf"2 \cdot {per_tex} \cdot {b} \cdot {n}", f"2·{per_text}·{b}·{n}"
        else:
            shown, shown_text = rf"{p.layers} \cdot {per_tex} \cdot {b} \cdot {n}", f"{p.layers}·{per_text}·{b}·{n}"
    beyond = (f"; {n:,} tokens is more than {p.name}'s configured maximum of {p.context:,} positions: the arithmetic "
              "of a cache that long, not a length the model was configured for" if n > p.context else "")
    return Explanation("cache_bytes", cell, f"{lhs} = {symbolic}", shown, f"{lhs} = {number(value)}", value,
                       f"{lhs_text} = {symbolic_text}\n  = {shown_text}\n  = {value:,.0f} bytes = {human(value)}",
                       note=f"= {value:,.0f} bytes = {human(value)}. {p.name}{' as MHA' if mha else ''}, {'one token' if n == 1 else f'{n:,} tokens'}: {why}; {BYTES[b]} per value"
                            + (f"; {local} of {p.layers} layers keep only the last {p.window:,} tokens" if local else "")
                            + beyond + f". {p.source}.")


# ---- words true only under some settings (about: the sidebar's heads, window and position, P and t) -----

claim("kv_mha_own_heads",
      "every query head has its own K and V head: this is multi-head attention (MHA), the largest cache",
      lambda s: s.n_kv_heads == s.n_heads > 1, "H_kv = H > 1",
      "tests/test_kv_cache.py::test_mha_every_query_head_reads_its_own_kv_head", about=KIND)
claim("kv_gqa_smaller",
      "the cache is g = {g} times smaller than MHA's: {kv_heads_words} instead of {n_heads}",
      lambda s: s.n_kv_heads < s.n_heads, "H_kv < H (GQA or MQA)",
      "tests/test_kv_cache.py::test_gqa_cache_is_g_times_smaller_than_mha", about=KIND)
claim("kv_mqa_one_head",
      "all query heads read one and the same K and V head: multi-query attention (MQA)",
      lambda s: s.n_kv_heads == 1 and s.n_heads > 1, "H_kv = 1 < H",
      "tests/test_kv_cache.py::test_mqa_all_query_heads_read_kv_head_0", about=KIND)
claim("kv_grows",
      "without a window the cache grows by one row per decoded token{prompt_rows} and never drops one",
      lambda s: s.window is None, "no sliding window",
      "tests/test_kv_cache.py::test_cache_size_step_by_step", about=KIND)
claim("kv_stops_growing",
      "the cache stops growing at W = {window_tokens}: from then on each new token's row pushes out the oldest",
      lambda s: s.window is not None and s.prefill <= s.window < s.n,
      "a sliding window W shorter than the sentence, and a prompt of at most W tokens (a longer prompt puts "
      "all its rows into the cache at once)",
      "tests/test_kv_cache.py::test_cache_size_step_by_step", about=KIND)
claim("kv_prompt_beyond_window",
      "the prompt's {prefill} rows enter the cache together, more than W = {window}: while the prompt is computed "
      "each of its rows sees at most W of them, and after it the cache keeps only the last {window}, each new "
      "token's row then pushing out the oldest",
      lambda s: s.window is not None and s.prefill > s.window, "a sliding window W and a prompt longer than W",
      "tests/test_kv_cache.py::test_cache_size_step_by_step", about=KIND)
claim("kv_window_covers",
      "W = {window} is at least the sentence's {n_tokens}: here the window never drops a row, and the cache "
      "grows as it would without one",
      lambda s: s.window is not None and s.window >= s.n, "a sliding window W ≥ n",
      "tests/test_kv_cache.py::test_cache_size_step_by_step", about=KIND)
claim("kv_one_query",
      "only the newest token asks a question at this step; earlier queries are never needed again",
      lambda s: not s.together, "step t decoded alone (t ≥ P, or a prompt of one token)",
      "tests/test_kv_cache.py::test_a_decoded_step_has_one_query_and_a_prompt_step_a_square",
      about=KIND, otherwise="in the prompt all {prefill} queries are computed together; this is row {t} of them, "
                            "and no query is needed again after the prompt")
claim("kv_one_row",
      "a decoding step scores one query, not a square matrix",
      lambda s: not s.together, "step t decoded alone (t ≥ P, or a prompt of one token)",
      "tests/test_kv_cache.py::test_a_decoded_step_has_one_query_and_a_prompt_step_a_square",
      about=KIND)
claim("kv_prompt_square",
      "the prompt is scored as one {prefill} × {prefill} square at once, masked after each row's token; this is its "
      "row {t}",
      lambda s: s.together and (s.window is None or s.window >= s.prefill),
      "step t in a prompt of P > 1 tokens, and no window shorter than the prompt (it would hide keys inside it)",
      "tests/test_kv_cache.py::test_a_decoded_step_has_one_query_and_a_prompt_step_a_square", about=KIND)
claim("kv_prompt_square_window",
      "the prompt is scored as one {prefill} × {prefill} square at once, masked after each row's token and more "
      "than W − 1 = {w_back} before it (the window of W = {window}); this is its row {t}",
      lambda s: s.together and s.window is not None and s.window < s.prefill,
      "step t in a prompt of P > 1 tokens and a window W < P",
      "tests/test_kv_cache.py::test_a_decoded_step_has_one_query_and_a_prompt_step_a_square", about=KIND)
claim("kv_rolling_buffer",
      "With the sidebar's window W = {window} the cache is a rolling buffer of W rows for the decoded tokens: as "
      "token t's row comes in, token t − {window}'s, which t may not see, falls out, so step t reads tokens "
      "t − {w_back} … t (a prompt longer than W is computed whole, then keeps its last W)",
      lambda s: s.window is not None and s.window > 1, "a sliding window of W ≥ 2 keys",
      "tests/test_kv_cache.py::test_a_window_is_a_rolling_buffer_of_w_rows", about=KIND)
claim("kv_window_of_one",
      "With the sidebar's window W = 1 each token sees only itself: a decoded token's row replaces the one before, "
      "so the cache holds one row, token t's, and no earlier key or value is read",
      lambda s: s.window == 1, "a sliding window of W = 1 key (the token itself)",
      "tests/test_kv_cache.py::test_a_window_is_a_rolling_buffer_of_w_rows", about=KIND)
claim("kv_rope_rotated_once",
      "the cache keeps the rotated keys k^R_j: token j's rotation by its position is applied once, when it comes in, "
      "and a later query's rotation never changes it",
      lambda s: s.positional == "rope", "Position = RoPE",
      "tests/test_kv_cache.py::test_rope_cache_holds_the_rotated_keys_of_the_forward_pass", about=KIND)
claim("kv_alibi_from_distance",
      "row {t} of ALiBi's bias B_h, −m_h·({t} − j), comes from the distances alone, so nothing of it is cached",
      lambda s: s.positional == "alibi", "Position = ALiBi",
      "tests/test_kv_cache.py::test_alibi_decoding_adds_the_bias_row_and_equals_the_full_pass", about=KIND)

claim("kv_calc_window",
      "every layer's cache stops growing at {window:,} tokens",
      lambda s: s.preset.window is not None and s.preset.local_layers == s.preset.layers,
      "every layer has a sliding window",
      "tests/test_kv_cache.py::test_calculator_window_presets_stop_growing", about="kv_cache_calc")
claim("kv_calc_some_global",
      "only its {n_global} global layers of {layers} keep growing past {window:,} tokens; the {n_local} windowed "
      "ones stop there",
      lambda s: s.preset.window is not None and 0 < s.preset.local_layers < s.preset.layers,
      "some layers windowed, some global (any split)",
      "tests/test_kv_cache.py::test_calculator_window_presets_stop_growing", about="kv_cache_calc")
claim("kv_calc_latent",
      "a latent cache keeps one vector per token and layer, not a K and a V: no factor 2",
      lambda s: s.preset.latent is not None, "a latent (MLA) cache",
      "tests/test_kv_cache.py::test_latent_cache_is_not_doubled", about="kv_cache_calc")
claim("kv_calc_beyond_context",
      "{tokens:,} tokens is more than {name}'s configured maximum of {context:,} positions: this is the arithmetic "
      "of a cache that long, not a length the model was made for",
      lambda s: s.tokens > s.preset.context, "a context length above the preset's configured maximum of positions",
      "tests/test_kv_cache.py::test_calculator_says_when_the_length_is_beyond_the_models_context",
      about="kv_cache_calc")
