"""Step t of decoding as a Trace: the new query row q_t per head, the cache K and V (H_kv, tokens kept, d_k or
d_v), the score row of q_t against the cache (ALiBi's bias row with it), its weights, the context and output rows.

Every number comes from `decode`, which reads the forward pass's Trace; X and the parameters are the forward
pass's own Steps, copied in so that their cells can be clicked here too.
"""
from __future__ import annotations

import functools

import numpy as np

from ...math.limits import ConfigError
from ...math.text import count
from ...forward.claims import say
from ...forward.config import Config
from ...forward.trace import Trace
from .decoding import decoded
from .settings import KIND, PARAMS, KVSettings, decoding_config, settings_for, window_of


def kv_cache_trace(config: Config, prefill: int = 2, t: int = 0) -> Trace:
    """Step t of decoding the sidebar's forward pass as a Trace (facts["kind"] = "kv_cache").
    Raises ConfigError for a prompt or a step outside the sentence."""
    return _step_trace(decoding_config(config), prefill, t)


@functools.lru_cache(maxsize=256, typed=True)   # True is not the prompt length 1
def _step_trace(config: Config, prefill: int, t: int) -> Trace:
    d = decoded(config, prefill)
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
              inputs=("x", "w_q"), why=_sentence(say("kv_one_query", trace.facts["settings"], prefill=prefill, t=t)))
    k_formula = rf"x_j\, (W_K){_cols('u', 'd_k', ':,')}" + (rf" + (b_K){_cols('u', 'd_k')}" if "b_k" in d.params else "")
    v_formula = rf"x_j\, (W_V){_cols('u', 'd_v', ':,')}" + (rf" + (b_V){_cols('u', 'd_v')}" if "b_v" in d.params else "")
    k_formula = rf"R_j\,({k_formula})" if rope else k_formula
    trace.add("k_cache", "K cache", k_cache, ("KV head", "cached", "d_k"),
              rf"K^{{\text{{cache}}}}_{{u,\,j}} = {k_formula}", inputs=("x", "w_k"))
    trace.add("v_cache", "V cache", v_cache, ("KV head", "cached", "d_v"),
              rf"V^{{\text{{cache}}}}_{{u,\,j}} = {v_formula}", inputs=("x", "w_v"))
    rope_words = say("kv_rope_rotated_once", trace.facts["settings"])
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
                  why=_sentence(say("kv_alibi_from_distance", trace.facts["settings"], t=t)))
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
    return next(w for w in (say(k, s, prefill=s.prefill, t=s.t, window=s.window,
                                      w_back=None if s.window is None else count(s.window - 1, "token"))
                            for k in ("kv_one_row", "kv_prompt_square", "kv_prompt_square_window")) if w)


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:] + "." if text else ""
