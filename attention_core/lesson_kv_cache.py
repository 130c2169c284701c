"""The KV cache page's numbers: the learner's sentence decoded token by token, and a cache-size calculator.

X is the forward pass's X (the sidebar's sentence, embeddings and positions). Seeded weights (not the
sidebar's): W_Q (d_model, H·d_head), W_K and W_V (d_model, H_kv·d_head), W_O (H·d_head, d_model), each
N(0, 1/fan_in) from `forward.init_weight` with the sidebar's seed. `kv_cache_decode` feeds the rows
(a prompt of P tokens together, then one at a time) and records each step; `kv_cache_trace` turns the
record of step t into Steps: the new query row q_t per head, the cache K and V (H_kv, tokens kept,
d_head), the score row of q_t against the cache, its weights, the context and output rows.

`check_against_full_pass` is the live proof: the decoded outputs against `grouped_query_attention` with
`causal_mask` (or `sliding_window_mask`) over the whole sentence. `cache_bytes` is the calculator:
bytes per token = 2 · layers · H_kv · d_head · bytes per value (a latent cache: layers · latent values).

Notation (docs/notation.md, "Today's attention"): H query heads, H_kv KV heads, g = H / H_kv, query
head h reads KV head ⌊h / g⌋; t the token being decoded; W the window (W keys, the token included).
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace

import numpy as np

from .attention import causal_mask, merge_heads, sliding_window_mask
from .claims import claim
from .config import MAX_DIM, ConfigError, Config
from .explain import SYMBOLS, Context, Explanation, register, softmax_fraction
from .forward import init_weight, param_rng, run_forward
from .gqa import check_groups, grouped_query_attention
from .kv_cache import kv_cache_decode
from .trace import Trace

KIND = "kv_cache"
MAX_PAGE_HEADS = 8
WEIGHT_NAMES = {"w_q": "kv_cache.w_q", "w_k": "kv_cache.w_k", "w_v": "kv_cache.w_v", "w_o": "kv_cache.w_o"}


@dataclass(frozen=True)
class KVSettings:
    """The page's own controls (what its claims are about)."""
    n_heads: int = 4                 # H, query heads
    n_kv_heads: int = 2              # H_kv, key/value heads (a divisor of H)
    window: int | None = None        # W keys, or None: no window
    prefill: int = 2                 # P, the prompt's tokens, processed together
    n: int = 4                       # tokens in the sentence

    @property
    def g(self) -> int:
        return self.n_heads // self.n_kv_heads

    @property
    def kept(self) -> int:
        """Tokens in the cache after the last token."""
        return self.n if self.window is None else min(self.n, self.window)


def check_settings(s: KVSettings, d_head: int) -> None:
    """ConfigError (saying what to change) for settings the page cannot decode with."""
    for name, v, hi in (("query heads H", s.n_heads, MAX_PAGE_HEADS), ("KV heads H_kv", s.n_kv_heads, MAX_PAGE_HEADS)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 1 <= v <= hi:
            raise ConfigError(f"The number of {name} must be a whole number from 1 to {hi}, not {v!r}.")
    check_groups(s.n_heads, s.n_kv_heads)
    if s.n_heads * d_head > MAX_DIM:
        raise ConfigError(f"H·d_head = {s.n_heads}·{d_head} = {s.n_heads * d_head} columns is more than {MAX_DIM}: "
                          "lower H here or d_k in the sidebar.")
    if s.window is not None and (isinstance(s.window, bool) or not isinstance(s.window, (int, np.integer))
                                 or s.window < 1):
        raise ConfigError(f"The window W must be at least 1 key (the token itself), not {s.window!r}: "
                          "set W to 1 or more, or clear it for no window.")
    if isinstance(s.prefill, bool) or not isinstance(s.prefill, (int, np.integer)) or not 0 <= s.prefill <= s.n:
        raise ConfigError(f"The prompt (prefill) is {s.prefill!r} tokens but the sentence has {s.n}: "
                          f"set it to 0 … {s.n} (0: every token decoded one at a time).")


# ---- decoding -----------------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class Decoded:
    tokens: tuple[str, ...]
    x: np.ndarray                    # (n, d_model): the forward pass's X
    weights: dict                    # "w_q" (d_model, H·d_head), "w_k", "w_v" (d_model, H_kv·d_head), "w_o"
    outputs: np.ndarray              # (n, d_model), decoded
    cache: dict                      # kv_cache_decode's: final "k", "v", "positions", and "steps"
    settings: KVSettings
    d_head: int
    rows: dict                       # "k", "v" (n, H_kv·d_head): each token's row as the cache got it


def seeded_weights(seed: int, d_model: int, n_heads: int, n_kv_heads: int, d_head: int) -> dict:
    """W_Q (d_model, H·d_head), W_K and W_V (d_model, H_kv·d_head), W_O (H·d_head, d_model): N(0, 1/fan_in)."""
    shapes = {"w_q": ((d_model, n_heads * d_head), d_model), "w_k": ((d_model, n_kv_heads * d_head), d_model),
              "w_v": ((d_model, n_kv_heads * d_head), d_model), "w_o": ((n_heads * d_head, d_model), n_heads * d_head)}
    return {k: init_weight(seed, WEIGHT_NAMES[k], shape, fan_in) for k, (shape, fan_in) in shapes.items()}


def x_config(config: Config) -> Config:
    """The settings this page reads (the sentence, embeddings, positions, d_k, seed), the others at their
    defaults: a sidebar change that does not touch X (temperature, score, mask, heads) reuses the cache."""
    return config.replace(score="scaled_dot", mask="none", padding=(), temperature=1.0, bias=False,
                          weights="random", n_heads=1, d_v=config.d_k)


def decode(config: Config, n_heads: int, n_kv_heads: int, window: int | None, prefill: int) -> Decoded:
    """The sentence decoded with a KV cache under the page's controls (cached per process)."""
    return _decode(x_config(config), n_heads, n_kv_heads, window, prefill)


@functools.lru_cache(maxsize=64)
def _decode(config: Config, n_heads: int, n_kv_heads: int, window: int | None, prefill: int) -> Decoded:
    forward = run_forward(config)
    x = forward["x"].value                                                   # (n, d_model)
    s = KVSettings(n_heads, n_kv_heads, window, prefill, len(forward.tokens))
    check_settings(s, config.d_k)
    w = seeded_weights(config.seed, x.shape[1], n_heads, n_kv_heads, config.d_k)
    outputs, cache = kv_cache_decode(x, w["w_q"], w["w_k"], w["w_v"], w["w_o"], n_heads, n_kv_heads,
                                     window=window, prefill=prefill)
    chunks = ([list(range(prefill))] if prefill else []) + [[t] for t in range(prefill, s.n)]
    rows = {k: np.concatenate([x[c] @ w[f"w_{k}"] for c in chunks]) for k in ("k", "v")}   # as kv_cache_decode
    return Decoded(forward.tokens, x, w, outputs, cache, s, config.d_k, rows)


def full_pass_mask(n: int, window: int | None) -> np.ndarray:
    """(n, n) bool: causal, or the sliding window (which is causal too)."""
    return causal_mask(n) if window is None else sliding_window_mask(n, window)


def check_against_full_pass(config: Config, n_heads: int, n_kv_heads: int, window: int | None,
                            prefill: int) -> dict:
    return _check(x_config(config), n_heads, n_kv_heads, window, prefill)


@functools.lru_cache(maxsize=64)
def _check(config: Config, n_heads: int, n_kv_heads: int, window: int | None, prefill: int) -> dict:
    """{"outputs": max |decoded − full| over every output, "weights": max over every step's weight row
    against the same row of the full pass's A, "full": the full pass's output (n, d_model)}."""
    d = decode(config, n_heads, n_kv_heads, window, prefill)
    w = d.weights
    full, a = grouped_query_attention(d.x, d.x, w["w_q"], w["w_k"], w["w_v"], w["w_o"], n_heads, n_kv_heads,
                                      mask=full_pass_mask(len(d.tokens), window))
    rows = max(float(np.abs(step["weights"] - a[:, step["t"], step["positions"]]).max()) for step in d.cache["steps"])
    return {"outputs": float(np.abs(d.outputs - full).max()), "weights": rows, "full": full}


def torch_check(config: Config, n_heads: int, n_kv_heads: int, window: int | None, prefill: int) -> dict:
    """torch SDPA with enable_gqa=True on the same Q, K, V: with is_causal (no window) and with an explicit
    bool mask; {"is_causal": max |torch − decoded| or None with a window, "mask": …}. Imports torch."""
    import torch
    import torch.nn.functional as F
    d = decode(config, n_heads, n_kv_heads, window, prefill)
    n, w, dh = len(d.tokens), d.weights, d.d_head

    def heads(a, h):                                                          # (n, h·d) -> (1, h, n, d)
        return torch.from_numpy(a.reshape(n, h, dh).transpose(1, 0, 2).copy())[None]
    q, k, v = heads(d.x @ w["w_q"], n_heads), heads(d.x @ w["w_k"], n_kv_heads), heads(d.x @ w["w_v"], n_kv_heads)

    def out(context):                                                         # (1, H, n, d) -> (n, d_model)
        return merge_heads(context[0].numpy()) @ w["w_o"]
    mask = torch.from_numpy(full_pass_mask(n, window))
    by_mask = out(F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True))
    result = {"mask": float(np.abs(by_mask - d.outputs).max()), "is_causal": None}
    if window is None:
        by_flag = out(F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True))
        result["is_causal"] = float(np.abs(by_flag - d.outputs).max())
    return result


# ---- one step as Steps --------------------------------------------------------------------------------

def _heads(a: np.ndarray, h: int, d: int) -> np.ndarray:
    """(n, h·d) -> (h, n, d)."""
    return a.reshape(a.shape[0], h, d).transpose(1, 0, 2)


def kv_cache_trace(config: Config, n_heads: int = 4, n_kv_heads: int = 2, window: int | None = None,
                   prefill: int = 2, t: int = 0) -> Trace:
    """Step t of decoding as a Trace (facts["kind"] = "kv_cache"). Raises ConfigError for bad controls."""
    return _step_trace(x_config(config), n_heads, n_kv_heads, window, prefill, t)


@functools.lru_cache(maxsize=256)
def _step_trace(config: Config, n_heads: int, n_kv_heads: int, window: int | None, prefill: int, t: int) -> Trace:
    d = _decode(config, n_heads, n_kv_heads, window, prefill)
    n = len(d.tokens)
    if isinstance(t, bool) or not isinstance(t, (int, np.integer)) or not 0 <= t < n:
        raise ConfigError(f"The step t must be a token of the sentence, 0 … {n - 1}, not {t!r}.")
    step = d.cache["steps"][t]
    positions, dh, g = list(step["positions"]), d.d_head, n_heads // n_kv_heads
    cols = list(range(len(positions)))
    if window is not None and not step["prefill"]:     # a decoded token: the row older than W falls out as it comes in
        cols = [r for r, p in enumerate(positions) if t - p < window]
        positions = [positions[r] for r in cols]
    w = d.weights
    k_cache = _heads(d.rows["k"][positions], n_kv_heads, dh)                 # (H_kv, kept, d_head)
    v_cache = _heads(d.rows["v"][positions], n_kv_heads, dh)                 # (H_kv, kept, d_head)
    weights, scores = step["weights"][:, cols], step["scores"][:, cols]      # (H, kept)
    context = np.einsum("hj,hjd->hd", weights, np.repeat(v_cache, g, axis=0))  # (H, d_head)
    output = context.reshape(-1) @ w["w_o"]                                 # (d_model,)

    trace = Trace(d.tokens)
    words = [d.tokens[p] for p in positions]
    trace.facts.update(kind=KIND, config=config, settings=d.settings, t=t, positions=positions, d_head=dh,
                       prefill=t < prefill, g=g, axis_labels={
                           "query head": [str(h) for h in range(n_heads)],
                           "KV head": [str(k) for k in range(n_kv_heads)],
                           "2·d_head": [f"k{c}" for c in range(dh)] + [f"v{c}" for c in range(dh)],
                           "cached": [f"{p} {wd}" for p, wd in zip(positions, words)]})
    trace.add("x", "X (the forward pass's)", d.x, ("n", "d_model"), r"X = X_{\text{emb}} + PE",
              why="The sidebar's sentence as the forward pass builds it: one row per token.")
    hq, hk = rf"{n_heads} \cdot {dh}", rf"{n_kv_heads} \cdot {dh}"
    trace.add("w_q", "W_Q", w["w_q"], ("d_model", "H·d_head"), rf"W_Q \in \mathbb{{R}}^{{d_{{model}} \times {hq}}}")
    trace.add("w_k", "W_K", w["w_k"], ("d_model", "H_kv·d_head"), rf"W_K \in \mathbb{{R}}^{{d_{{model}} \times {hk}}}")
    trace.add("w_v", "W_V", w["w_v"], ("d_model", "H_kv·d_head"), rf"W_V \in \mathbb{{R}}^{{d_{{model}} \times {hk}}}")
    trace.add("w_o", "W_O", w["w_o"], ("H·d_head", "d_model"), rf"W_O \in \mathbb{{R}}^{{{hq} \times d_{{model}}}}")
    trace.add("heads_map", "Which KV head each query head reads", np.equal.outer(np.arange(n_heads) // g,
              np.arange(n_kv_heads)).astype(float), ("query head", "KV head"), rf"h \mapsto \lfloor h / g \rfloor,\ g = H / H_{{kv}} = {g}",
              why=f"Query heads in contiguous groups of g = {g}, as torch's enable_gqa and repeat_interleave.",
              scale="mask")
    trace.add("q_t", f"New query row q_{t}, one per head", step["q"], ("query head", "d_head"),
              rf"(q_{t})_h = x_{t} (W_Q)_{{:,\,h d_{{head}} : (h+1) d_{{head}}}}", inputs=("x", "w_q"),
              why="Only the newest token asks a question at this step; earlier queries are never needed again.")
    trace.add("k_cache", "K cache", k_cache, ("KV head", "cached", "d_head"),
              r"K^{\text{cache}}_{g,\,j} = x_j (W_K)_{:,\,g d_{head} : (g+1) d_{head}}", inputs=("x", "w_k"),
              why="A row per cached token, written once when that token came in and never changed.")
    trace.add("v_cache", "V cache", v_cache, ("KV head", "cached", "d_head"),
              r"V^{\text{cache}}_{g,\,j} = x_j (W_V)_{:,\,g d_{head} : (g+1) d_{head}}", inputs=("x", "w_v"))
    trace.add("kv_cache", "K and V cache", np.concatenate([k_cache, v_cache], axis=2), ("KV head", "cached", "2·d_head"),
              r"[K^{\text{cache}}_{g,\,j} \mid V^{\text{cache}}_{g,\,j}] = x_j\, [(W_K)_{:,\,g} \mid (W_V)_{:,\,g}]",
              inputs=("x", "w_k", "w_v"),
              why="Per KV head g, a row per cached token: its key k_j (d_head numbers) beside its value v_j, "
                  "written once when token j came in and never changed.")
    trace.add("scores_t", f"Scores ŝ of q_{t}", scores, ("query head", "cached"),
              rf"\hat s_{{h,j}} = \frac{{(q_{t})_h \cdot K^{{\text{{cache}}}}_{{\lfloor h/g \rfloor,\,j}}}}{{\sqrt{{d_{{head}}}}}}",
              inputs=("q_t", "k_cache"),
              why=f"One row per head, {len(positions)} entries: a decoding step scores one query, not a square matrix.")
    trace.add("weights_t", "Weights a = softmax(ŝ)", weights, ("query head", "cached"),
              r"a_{h,j} = \frac{e^{\hat s_{h,j}}}{\sum_{j'} e^{\hat s_{h,j'}}}", inputs=("scores_t",), scale="sequential")
    trace.add("context_t", f"Context row c_{t} per head", context, ("query head", "d_head"),
              r"c_h = \sum_j a_{h,j}\, V^{\text{cache}}_{\lfloor h/g \rfloor,\,j}", inputs=("weights_t", "v_cache"))
    trace.add("output_t", f"Output row o_{t}", output, ("d_model",),
              rf"o_{t} = [c_0, \dots, c_{{H-1}}]\, W_O", inputs=("context_t", "w_o"),
              why="The same row the full causal pass gives for this token (the check at the top of this tab).")
    return trace


# ---- the calculator -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Preset:
    name: str
    layers: int
    n_heads: int
    n_kv_heads: int
    d_head: int
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


PRESETS = {p.name: p for p in (
    Preset("Llama 3 8B", 32, 32, 8, 128, source="Meta's config.json: 32 layers, 32 heads, 8 KV heads, 4096/32 = 128"),
    Preset("Llama 3 70B", 80, 64, 8, 128, source="Meta's config.json: 80 layers, 64 heads, 8 KV heads, 8192/64 = 128"),
    Preset("Mistral 7B", 32, 32, 8, 128, window=4096, local_layers=32,
           source="Mistral 7B paper and v0.1 config.json: sliding_window 4096 on every layer"),
    Preset("Qwen2.5-7B", 28, 28, 4, 128, source="Qwen's config.json: 28 layers, 28 heads, 4 KV heads, 3584/28 = 128"),
    Preset("Gemma 2 9B", 42, 16, 8, 256, window=4096, local_layers=21,
           source="Gemma 2 report and config.json: head_dim 256, local (4096) and global layers alternating"),
    Preset("DeepSeek-V3", 61, 128, 128, 128, latent=512 + 64, mha_values=128 * (192 + 128),
           source="DeepSeek-V3 config.json: kv_lora_rank 512, qk_rope_head_dim 64; MHA would keep 128 heads' "
                  "keys (128 + 64) and values (128)"),
)}
BYTES = {2: "bf16 (2 bytes)", 1: "fp8 (1 byte)"}


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


CONTEXTS = (1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072)


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
    trace.facts.update(kind=KIND, bytes_per_value=bytes_per_value, tokens=tokens, axis_labels={
        "preset": names, "quantity": ["bytes per token", f"at {tokens:,} tokens", f"MHA at {tokens:,} tokens"]})
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

SYMBOLS.update({"q_t": ("q_t", "q_t"), "k_cache": (r"K^{\text{cache}}", "K_cache"), "kv_cache": ("[K|V]", "[K|V]"),
                "v_cache": (r"V^{\text{cache}}", "V_cache"), "scores_t": (r"\hat s", "ŝ"), "weights_t": ("a", "a"),
                "context_t": ("c", "c"), "output_t": ("o", "o"), "heads_map": ("G", "G"), "cache_bytes": ("B", "B")})


def _ref(ctx: Context, key: str, cell) -> tuple[str, str]:
    """(LaTeX, text) of one cell: K^{cache}_{1,2,0}, K_cache[1,2,0]."""
    return ctx.ref(key, cell), ctx.ref_text(key, cell)


def number(v: float) -> str:
    """131072 -> '131{,}072' (a comma LaTeX does not space)."""
    return f"{v:,.0f}".replace(",", "{,}")


def _product(ctx: Context, key: str, cell, pairs, rhs: str, rhs_text: str, note: str, divisor=None) -> Explanation:
    """sum_of_products with this page's own cell names: pairs = [(a_key, a_cell, b_key, b_cell)]."""
    terms = []
    for a_key, a_cell, b_key, b_cell in pairs:
        (al, at), (bl, bt) = _ref(ctx, a_key, a_cell), _ref(ctx, b_key, b_cell)
        terms.append((al, at, ctx.value(a_key)[a_cell], bl, bt, ctx.value(b_key)[b_cell], (a_key, a_cell), (b_key, b_cell)))
    return ctx.sum_of_products(key, cell, rhs, rhs_text, terms, divisor=divisor, note=note)


def _row_of_projection(ctx: Context, key: str, cell, w_key: str, head: str, i: int, col: int, what: str):
    """out = Σ_m X[i, m] W[m, col]: row i of X times column col of W (column cell[-1] of `head`'s block)."""
    d_model = ctx.value("x").shape[1]
    pairs = [("x", (i, m), w_key, (m, col)) for m in range(d_model)]
    w = SYMBOLS[w_key][0]
    return _product(ctx, key, cell, pairs, rf"\sum_{{m=0}}^{{{d_model - 1}}} X_{{{i},m}} ({w})_{{m,{col}}}",
                    f"Σ_m X[{i},m]·{SYMBOLS[w_key][1]}[m,{col}]",
                    f"{what}: row {i} (“{ctx.word(i)}”) of X times column {col} of {SYMBOLS[w_key][1]}, "
                    f"column {cell[-1]} of {head}'s block of d_head = {ctx.trace.facts['d_head']} columns.")


@register("q_t", kind=KIND)
def _q_t(ctx: Context, cell):
    h, c = cell
    t, dh = ctx.trace.facts["t"], ctx.trace.facts["d_head"]
    return _row_of_projection(ctx, "q_t", cell, "w_q", f"query head {h}", t, h * dh + c, f"The new token t = {t}")


def _cache_row(key: str, w_key: str):
    def explain_cache(ctx: Context, cell):
        g, r, c = cell
        p, dh = ctx.trace.facts["positions"][r], ctx.trace.facts["d_head"]
        e = _row_of_projection(ctx, key, cell, w_key, f"KV head {g}", p, g * dh + c, f"Cached row {r} is token {p}")
        return replace(e, note=e.note + f" It was computed when token {p} came in and is read again at every later step.")
    return explain_cache


register("k_cache", kind=KIND)(_cache_row("k_cache", "w_k"))
register("v_cache", kind=KIND)(_cache_row("v_cache", "w_v"))


@register("kv_cache", kind=KIND)
def _kv_cache(ctx: Context, cell):
    """[K | V] side by side: the left d_head columns are K's, the right ones V's."""
    g, r, c = cell
    dh = ctx.trace.facts["d_head"]
    key = "k_cache" if c < dh else "v_cache"
    return _cache_row(key, "w_k" if c < dh else "w_v")(ctx, (g, r, c % dh))


@register("scores_t", kind=KIND)
def _scores_t(ctx: Context, cell):
    h, r = cell
    f = ctx.trace.facts
    t, g, dh, p = f["t"], f["g"], f["d_head"], f["positions"][r]
    lhs, lhs_text = _ref(ctx, "scores_t", cell)
    if not np.isfinite(ctx.value("scores_t")[cell]):
        return Explanation("scores_t", cell, rf"{lhs} = -\infty", rf"\text{{token }} {p} > t = {t}",
                           rf"{lhs} = -\infty", float("-inf"), f"{lhs_text} = -inf\n  = token {p} is after t = {t}\n  = -inf",
                           note=f"The prompt's rows were computed together, but row t = {t} may not see token {p}: "
                                "it comes later (the causal mask), so its score is −∞ and its weight 0."
                                if p > t else f"Token {p} is outside the window of t = {t}: its weight is 0.")
    kv = h // g
    pairs = [("q_t", (h, c), "k_cache", (kv, r, c)) for c in range(dh)]
    return _product(ctx, "scores_t", cell, pairs,
                    rf"\frac{{1}}{{\sqrt{{d_{{head}}}}}} \sum_c (q_{t})_{{{h},c}} K^{{\text{{cache}}}}_{{{kv},{r},c}}",
                    f"Σ_c q_t[{h},c]·K_cache[{kv},{r},c] / √d_head",
                    f"Query head {h} reads KV head ⌊{h}/{g}⌋ = {kv}; cached row {r} is token {p} "
                    f"(“{ctx.word(p)}”).", divisor=(rf"\sqrt{{{dh}}}", f"√{dh}", math.sqrt(dh)))


@register("weights_t", kind=KIND)
def _weights_t(ctx: Context, cell):
    h, r = cell
    s = ctx.value("scores_t")[h]
    keep = [j for j in range(len(s)) if np.isfinite(s[j])]
    lhs, lhs_text = _ref(ctx, "weights_t", cell)
    if r not in keep:
        return Explanation("weights_t", cell, rf"{lhs} = e^{{-\infty}} / \dots", "0", f"{lhs} = 0", 0.0,
                           f"{lhs_text} = e^-inf / …\n  = 0\n  = 0", note="A masked score (−∞) gets weight 0.")
    top = max(s[j] for j in keep)
    e = [math.exp(s[j] - top) for j in keep]
    total = math.fsum(e)
    exps = [rf"e^{{\hat s_{{{h},{j}}} - {ctx.num(top)}}}" for j in keep]
    exps_text = [f"e^(ŝ[{h},{j}] − {ctx.num_text(top)})" for j in keep]
    shown, text, hidden = softmax_fraction(ctx, exps, exps_text, e, keep.index(r), total)
    value = e[keep.index(r)] / total
    return Explanation("weights_t", cell, rf"{lhs} = \frac{{e^{{\hat s_{{{h},{r}}}}}}}{{\sum_{{j'}} e^{{\hat s_{{{h},j'}}}}}}",
                       shown, f"{lhs} = {ctx.num(value)}", value, f"{lhs_text} = {text}\n  = {ctx.num_text(value)}",
                       note=f"Softmax over head {h}'s row of {len(keep)} cached scores (the largest, "
                            f"{ctx.num_text(top)}, subtracted first: the same weights, no overflow).",
                       n_terms=len(keep), n_elided=hidden, reads=tuple(("scores_t", (h, j)) for j in keep))


@register("context_t", kind=KIND)
def _context_t(ctx: Context, cell):
    h, c = cell
    kv = h // ctx.trace.facts["g"]
    n = ctx.value("weights_t").shape[1]
    return _product(ctx, "context_t", cell, [("weights_t", (h, j), "v_cache", (kv, j, c)) for j in range(n)],
                    rf"\sum_j a_{{{h},j}} V^{{\text{{cache}}}}_{{{kv},j,{c}}}", f"Σ_j a[{h},j]·V_cache[{kv},j,{c}]",
                    f"Head {h}'s weights average column {c} of KV head {kv}'s cached values.")


@register("output_t", kind=KIND)
def _output_t(ctx: Context, cell):
    (c,) = cell
    n_heads, dh = ctx.value("context_t").shape
    pairs = [("context_t", (h, e), "w_o", (h * dh + e, c)) for h in range(n_heads) for e in range(dh)]
    return _product(ctx, "output_t", cell, pairs, rf"\sum_{{h,e}} c_{{h,e}} (W_O)_{{h d_{{head}} + e,\,{c}}}",
                    f"Σ_h,e c[h,e]·W_O[h·d_head + e, {c}]", "The heads' context rows side by side, times W_O.")


@register("x", kind=KIND)
def _x(ctx: Context, cell):
    i, m = cell
    value = float(run_forward(ctx.config)["x"].value[cell]) if ctx.config else None
    return ctx.leaf("x", cell, r"X_{\text{forward}}" + f"_{{{i},{m}}}", f"X_forward[{i},{m}]", value,
                    ctx.num(ctx.value("x")[cell]), ctx.num_text(ctx.value("x")[cell]),
                    f"Row {i} (“{ctx.word(i)}”) of the forward pass's X: the sidebar's embedding plus position.")


def _weight(key: str):
    def explain_weight(ctx: Context, cell):
        shape = ctx.trace[key].shape
        fan_in = shape[0]
        regenerated = None
        if ctx.config is not None:
            regenerated = param_rng(ctx.config.seed, WEIGHT_NAMES[key]).standard_normal(shape)[cell] / math.sqrt(fan_in)
        return ctx.leaf(key, cell, rf"z / \sqrt{{{fan_in}}},\ z \sim \mathcal{{N}}(0,1)", f"z/√{fan_in}, z ~ N(0,1)",
                        regenerated, ctx.num(ctx.value(key)[cell]), ctx.num_text(ctx.value(key)[cell]),
                        f"Seeded, untrained: drawn from the generator (seed, crc32('{WEIGHT_NAMES[key]}')).")
    return explain_weight


for _key in WEIGHT_NAMES:
    register(_key, kind=KIND)(_weight(_key))


@register("heads_map", kind=KIND)
def _heads_map(ctx: Context, cell):
    h, k = cell
    g = ctx.trace.facts["g"]
    value = float(h // g == k)
    lhs, lhs_text = _ref(ctx, "heads_map", cell)
    return Explanation("heads_map", cell, rf"{lhs} = [\lfloor h / g \rfloor = {k}]",
                       rf"[\lfloor {h} / {g} \rfloor = {k}] = [{h // g} = {k}]", f"{lhs} = {int(value)}", value,
                       f"{lhs_text} = [⌊h/g⌋ = {k}]\n  = [⌊{h}/{g}⌋ = {k}] = [{h // g} = {k}]\n  = {int(value)}",
                       note=f"Query head {h} reads KV head {h // g}" + (" (this one)." if value else ", not this one."))


@register("cache_bytes", kind=KIND)
def _cache_bytes(ctx: Context, cell):
    r, q = cell
    p = list(PRESETS.values())[r]
    b, tokens = ctx.trace.facts["bytes_per_value"], ctx.trace.facts["tokens"]
    lhs, lhs_text = _ref(ctx, "cache_bytes", cell)
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
        why = f"K and V (the 2), {h} {'query heads, as MHA would' if mha else 'KV heads'} of d_head = {p.d_head}"
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
    return Explanation("cache_bytes", cell, f"{lhs} = {symbolic}", shown, f"{lhs} = {number(value)}", value,
                       f"{lhs_text} = {symbolic_text}\n  = {shown_text}\n  = {value:,.0f} bytes = {human(value)}",
                       note=f"= {value:,.0f} bytes = {human(value)}. {p.name}{' as MHA' if mha else ''}, {'one token' if n == 1 else f'{n:,} tokens'}: {why}; {BYTES[b]} per value"
                            + (f"; {local} of {p.layers} layers keep only the last {p.window:,} tokens" if local else "")
                            + f". {p.source}.")


# ---- words true only under some settings (about: the page's own controls) ------------------------------

claim("kv_mha_own_heads",
      "every query head has its own K and V head: this is multi-head attention (MHA), the largest cache",
      lambda s: s.n_kv_heads == s.n_heads, "H_kv = H",
      "tests/test_kv_cache.py::test_mha_every_query_head_reads_its_own_kv_head", about=KIND)
claim("kv_gqa_smaller",
      "the cache is g = {g} times smaller than MHA's: {n_kv_heads} KV heads instead of {n_heads}",
      lambda s: s.n_kv_heads < s.n_heads, "H_kv < H (GQA or MQA)",
      "tests/test_kv_cache.py::test_gqa_cache_is_g_times_smaller_than_mha", about=KIND)
claim("kv_mqa_one_head",
      "all query heads read one and the same K and V head: multi-query attention (MQA)",
      lambda s: s.n_kv_heads == 1 and s.n_heads > 1, "H_kv = 1 < H",
      "tests/test_kv_cache.py::test_mqa_all_query_heads_read_kv_head_0", about=KIND)
claim("kv_stops_growing",
      "the cache stops growing at W = {window} tokens: from then on each new token's row pushes out the oldest",
      lambda s: s.window is not None, "a sliding window W",
      "tests/test_kv_cache.py::test_cache_stops_growing_at_the_window", about=KIND,
      otherwise="without a window the cache grows by one row per token and never drops one")
claim("kv_calc_window",
      "every layer's cache stops growing at {window:,} tokens",
      lambda p: p.window is not None and p.local_layers == p.layers, "every layer has a sliding window",
      "tests/test_kv_cache.py::test_calculator_window_presets_stop_growing", about="kv_cache_calc")
claim("kv_calc_half_window",
      "only the global half of the layers keeps growing past {window:,} tokens",
      lambda p: p.window is not None and 0 < p.local_layers < p.layers, "some layers windowed, some global",
      "tests/test_kv_cache.py::test_calculator_window_presets_stop_growing", about="kv_cache_calc")
claim("kv_calc_latent",
      "a latent cache keeps one vector per token and layer, not a K and a V: no factor 2",
      lambda p: p.latent is not None, "a latent (MLA) cache",
      "tests/test_kv_cache.py::test_latent_cache_is_not_doubled", about="kv_cache_calc")
