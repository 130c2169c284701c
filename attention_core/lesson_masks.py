"""The masks-and-biases page: one head of the forward pass, from its scores to its weights, and masks compared.

    Ŝ_h (n, n) ──(+ B_h, ALiBi)──> Ŝ_h + B_h ──(mask M: −∞ where hidden)──> S̃_h ──softmax(· / T)──> A_h
                                                                             └─(+ e^{z_h} in the denominator)──> A_h (sink)

Every step up to A_h is head h of the forward pass's own trace under the sidebar's settings (run_forward):
its scores (after RoPE when the Position is RoPE, the sidebar's score function, query head h reading KV head
⌊h/g⌋), ALiBi's bias exactly when the Position is ALiBi (the sidebar's H heads and their slopes), the
sidebar's mask (causal, a window of W keys, padding) and its temperature T. The page adds only what the
sidebar has no setting for: a sink logit z_h, and masks shown side by side for comparison (the two readings
of a window, W and W + 1 keys; causal and window; causal and padding).

A clicked cell of a forward step is explained by the forward pass's own explainer (the same words and numbers
as the forward pages, head h); its `reads` name cells of that trace (facts["forward"]).
Masks are True = may attend; a shown mask M is 1/0.
"""
from __future__ import annotations

import math
import threading
from dataclasses import dataclass, replace

import numpy as np

from . import attention as att
from .claims import claim
from .config import Config, ConfigError
from .explain import SYMBOLS, Context, Explanation, explain, fmt, join_terms, register, softmax_fraction
from .trace import Trace

MAX_SINK = 30.0                     # |z_h| ≤ 30: e^{±30} is far from overflow
KIND = "masks"
COMPARISONS = ("readings", "causal_window", "causal_padding")


@dataclass(frozen=True)
class MaskSettings:
    """What the page's claims (about="masks") read: the sidebar's settings the page shows, and its own."""
    n: int                          # tokens
    mask: str = "causal"            # the sidebar's mask: causal | sliding_window | padding | none
    window: int = 3                 # the sidebar's W, keys per query counting itself (also the comparisons' W)
    hidden: tuple[int, ...] = ()    # the key positions the sidebar's padding mask hides
    heads: int = 0                  # H when the sidebar's Position is ALiBi; 0: no ALiBi
    sink: float | None = None       # z_h (the page's own); None: no sink
    head: int = 0                   # the head h shown (the page's own)

    def sees_a_key(self) -> bool:
        """Every query sees at least one key (causal and window queries always see themselves)."""
        return self.mask != "padding" or len(set(self.hidden)) < self.n

    def sees_a_later_key(self) -> bool:
        """Some query sees a key after it (j > i): no mask, or a padding mask leaving a key j ≥ 1 visible
        (query 0 comes before it). A causal or window mask hides every such key."""
        if self.mask == "none":
            return self.n >= 2
        return self.mask == "padding" and any(j not in self.hidden for j in range(1, self.n))


def settings_of(config: Config, n: int, head: int = 0, sink: float | None = None) -> MaskSettings:
    """The claims' settings for the sidebar's Config on an n-token sentence and the page's own controls."""
    hidden = tuple(sorted(set(config.padding))) if config.mask == "padding" else ()
    return MaskSettings(n, config.mask, config.window, hidden, config.n_heads if config.positional == "alibi" else 0,
                        sink, head)


def _power_of_two(h: int) -> bool:
    return h >= 1 and h & (h - 1) == 0


# ---- the sentences that hold only under some settings (proved in tests/test_masks.py) ----------------

_T = "tests/test_masks.py::"
claim("masks_rows_sum_to_one", "every row of A sums to 1, over the keys it may see",
      lambda s: s.sink is None and s.sees_a_key(),
      "no sink, and every query sees at least one key (a padding mask can hide them all)",
      _T + "test_rows_sum_to_one_only_without_sink_and_with_a_key", about=KIND,
      otherwise="rows need not sum to 1 here: a sink takes a share of every row, and a row whose "
                "every key is hidden is all 0")
claim("masks_sink_below_one", "with a sink every row sums to less than 1: what is missing is the sink's share, "
      "e^(z_h) divided by the whole denominator", lambda s: s.sink is not None, "a sink logit z_h is on",
      _T + "test_sink_rows_sum_to_one_minus_the_sink_share", about=KIND)
claim("masks_window_is_causal", "W ≥ n: every query's window reaches back to token 0, so a window of W keys "
      "equals the causal mask", lambda s: s.window >= s.n,
      "a window of W keys at least as long as the sentence", _T + "test_window_equals_causal_exactly_when_w_reaches_n",
      about=KIND)
claim("masks_readings_differ", "the two readings differ: from query W on, the W + 1 reading sees one key more "
      "(key i − W)", lambda s: s.window < s.n,
      "a window shorter than the sentence", _T + "test_the_two_window_readings_differ_exactly_when_w_below_n",
      about=KIND, otherwise="here the two readings give the same mask: W ≥ n, so both windows reach back to "
                            "token 0 for every query")
claim("masks_slopes_geometric", "H is a power of two: the slopes are one geometric sequence, each 2^(−8/H) "
      "times the one before", lambda s: _power_of_two(s.heads), "ALiBi with H a power of two",
      _T + "test_slopes_are_geometric_exactly_for_powers_of_two", about=KIND)
claim("masks_slopes_interleaved", "H is not a power of two: heads 0 … c − 1 take the c-head slopes, and the "
      "other H − c take every other slope of the 2c-head sequence; the first of these, m_c = 2^(−4/c), is larger "
      "than all of the first c, and each later one falls between two of them, so the list is neither one "
      "geometric sequence nor in decreasing order",
      lambda s: s.heads >= 1 and not _power_of_two(s.heads), "ALiBi with H not a power of two",
      _T + "test_slopes_are_geometric_exactly_for_powers_of_two", about=KIND)
claim("masks_alibi_both_sides", "this mask lets some queries see keys after them: the app's bias lowers those "
      "scores by m_h·|i − j| too (the paper's language models are causal and never see such keys)",
      lambda s: s.heads >= 1 and s.sees_a_later_key(),
      "ALiBi, and a mask that leaves some key after its query visible (none, or padding that leaves a key "
      "j ≥ 1 visible)", _T + "test_alibi_reaches_keys_after_the_query_exactly_when_one_is_visible", about=KIND)
claim("masks_alibi_one_side", "the mask hides every key after its query, so only the paper's −m_h·(i − j) on "
      "and below the diagonal reaches softmax", lambda s: s.heads >= 1 and s.sees_a_key() and not s.sees_a_later_key(),
      "ALiBi with a causal or window mask, or padding that hides every key after its query but not every key",
      _T + "test_alibi_reaches_keys_after_the_query_exactly_when_one_is_visible", about=KIND)
claim("masks_all_hidden", "every key is hidden: each row of A is all 0, not NaN (there is nothing to average)",
      lambda s: not s.sees_a_key(), "a padding mask hiding every key", _T + "test_every_key_hidden_gives_zero_rows",
      about=KIND)


# ---- the computation ---------------------------------------------------------------------------------

def check(config: Config, n: int, head: int, sink: float | None) -> None:
    """ConfigError with what to change, for a page control out of range."""
    h = config.n_heads
    if isinstance(head, bool) or not isinstance(head, int) or not 0 <= head < h:
        raise ConfigError(f"Head {head!r} does not exist: the sidebar's {h} head{'s' * (h > 1)} run 0 to {h - 1}.")
    if sink is not None and not (isinstance(sink, (int, float)) and math.isfinite(sink) and abs(sink) <= MAX_SINK):
        raise ConfigError(f"The sink logit z_h = {sink!r}: use a number from −{MAX_SINK:g} to {MAX_SINK:g}.")


def logits_key(config: Config) -> str:
    """The forward pass's scores before any bias: Ŝ for the scaled dot product, else S."""
    return "scaled_scores" if config.score == "scaled_dot" else "scores"


_CACHE: dict[tuple, Trace] = {}             # (config, head, sink) -> the page's trace; the last 32
_LOCK = threading.Lock()


def masks_trace(config: Config, head: int = 0, sink: float | None = None, forward: Trace | None = None) -> Trace:
    """The page's steps for head h of the forward pass under `config` (its trace: pass it if you have it),
    with a sink logit z_h (None: no sink). ConfigError for a control out of range."""
    key = (config, head, sink)
    hit = _CACHE.get(key)
    if hit is not None:
        return hit
    if forward is None:
        from .forward import run_forward
        forward = run_forward(config)
    t = _build(config, forward, head, sink)
    with _LOCK:                                                    # sessions run in threads
        while len(_CACHE) >= 32:
            _CACHE.pop(next(iter(_CACHE)), None)
        _CACHE[key] = t
    return t


def _build(config: Config, fwd: Trace, head: int, sink: float | None) -> Trace:
    n, h_count = fwd.n, config.n_heads
    check(config, n, head, sink)
    s = settings_of(config, n, head, sink)
    h, kv = head, head // (h_count // config.kv_heads)

    def of(key):                                                               # head h's (n, n) of a forward step
        v = fwd[key].value
        return v[h] if v.ndim == 3 else v

    t = Trace(fwd.tokens)
    scaled = config.score == "scaled_dot"
    sym, sym_text = (r"\hat S", "Ŝ") if scaled else ("S", "S")
    t.facts.update(kind=KIND, settings=s, head=h, config=config, forward=fwd, t=config.temperature,
                   axis_labels={"H": [f"h={i}" for i in range(h_count)],
                                "part": ["Σ_j A_ij", "sink share"] if sink is not None else ["Σ_j A_ij"]},
                   symbols=_symbols(sym, sym_text, h), rules=_rules(config, n))

    # the scores: the forward pass's, head h
    first = logits_key(config)
    t.add(first, f"{'Scaled scores Ŝ' if scaled else 'Scores S'}_{h} (head {h})", of(first), ("n_q", "n_k"),
          score_formula(config, h, kv), why=_scores_why(config, h, kv))
    logits = first
    if config.positional == "alibi":
        slopes = np.array(fwd.facts["alibi_slopes"])                           # (H,)
        t.add("alibi_slopes", "ALiBi slopes m_h", slopes, ("H",), slopes_formula(h_count),
              why="One slope per head (the columns), fixed, never learned: a larger slope lowers distant keys "
                  "more, so its head looks nearer; a smaller one looks further back.", scale="sequential")
        t.add("alibi", f"ALiBi bias B_{h} (head {h})", of("alibi"), ("n_q", "n_k"),
              rf"(B_{{{h}}})_{{ij}} = -m_{{{h}}} \cdot |i - j|,\quad m_{{{h}}} = {slopes[h]:.6g}",
              ("alibi_slopes",), why="Key j's score is lowered by m_h times its distance from query i: the further "
                                     "away, the lower. Nothing is added to X.")
        t.add("biased_scores", f"Biased scores {sym_text}_{h} + B_{h}", of("biased_scores"), ("n_q", "n_k"),
              rf"{sym}_{{{h}}} + B_{{{h}}}", (first, "alibi"), why="What the mask and softmax now read.")
        logits = "biased_scores"
    if config.mask != "none":
        m = fwd["mask"].value                                                  # (n, n), 1 = may attend
        t.add("mask", "Mask M", m, ("n_q", "n_k"), mask_formula(config), why=MASK_WHY[config.mask](config),
              scale="mask")
        before = rf"({sym}_{{{h}}} + B_{{{h}}})" if logits == "biased_scores" else rf"({sym}_{{{h}}})"
        t.add("masked_scores", f"Masked scores S̃_{h}", of("masked_scores"), ("n_q", "n_k"),
              rf"(\tilde S_{{{h}}})_{{ij}} = \begin{{cases}} {before}_{{ij}} & M_{{ij}} = 1 \\ -\infty & M_{{ij}} = 0 "
              r"\end{cases}", (logits, "mask"), why="Hidden entries become −∞, so exp gives them exactly 0.")
        logits = "masked_scores"
    arg = {first: f"{sym}_{{{h}}}", "biased_scores": rf"({sym}_{{{h}}} + B_{{{h}}})",
           "masked_scores": rf"\tilde S_{{{h}}}"}[logits]
    temp = config.temperature
    over = "" if temp == 1 else r" / T"
    t.add("weights", f"Weights A_{h}", of("weights"), ("n_q", "n_k"),
          rf"(A_{{{h}}})_{{ij}} = \frac{{e^{{({arg})_{{ij}}{over}}}}}{{\sum_{{j'}} e^{{({arg})_{{ij'}}{over}}}}}"
          + ("" if temp == 1 else rf",\quad T = {temp:g}"), (logits,), scale="sequential",
          why="Softmax over each row" + ("." if temp == 1 else f", the scores divided by the sidebar's temperature "
                                              f"T = {temp:g} first."))
    final = "weights"
    if sink is not None:
        x = t[logits].value / temp                                             # (n, n): what softmax reads
        t.add("sink_weights", f"Weights with a sink, z_{h} = {sink:g}", att.softmax_with_sink(x, sink),
              ("n_q", "n_k"), rf"(A_{{{h}}})_{{ij}} = \frac{{e^{{({arg})_{{ij}}{over}}}}}{{e^{{z_{{{h}}}}} + "
              rf"\sum_{{j'}} e^{{({arg})_{{ij'}}{over}}}}},\quad z_{{{h}}} = {sink:g}", (logits,),
              why="One more logit in the denominator only: it takes a share of the row and gives no value back."
                  + ("" if temp == 1 else f" z_{h} is not divided by T: it competes with the scores after "
                                          "the division."), scale="sequential")
        final = "sink_weights"
    sums = t[final].value.sum(axis=1)                                          # (n,)
    parts = [sums] if sink is None else [sums, 1.0 - sums]
    t.add("row_sums", "Row sums" + (" and the sink's share" if sink is not None else ""), np.stack(parts, axis=1),
          ("n_q", "part"), r"\textstyle\sum_j (A_{" + str(h) + r"})_{ij}"
          + (r",\quad 1 - \sum_j (A_{" + str(h) + r"})_{ij}" if sink is not None else ""), (final,), scale="sequential")
    t.facts.update(final=final, logits=logits)

    # masks side by side (the comparisons): the sidebar's W in both readings, causal, padding
    rules = t.facts["rules"]
    for key, (kind, arg_) in rules.items():
        title = COMPARE_TITLES[kind].format(w=config.window, w1=config.window + 1)
        t.add(key, title.replace("(s)", "s" * (config.window != 1)), rule_mask(kind, arg_, n),
              ("n_q", "n_k"), rule_formula(kind, arg_), why=RULE_WHY[kind],
              scale="mask")
    return t


def _symbols(sym: str, sym_text: str, h: int) -> dict[str, tuple[str, str]]:
    """Head h's symbols for the page's own explainers (braced, so that a cell is ({Ŝ_2})_{i,j})."""
    head = (rf"{{{sym}_{{{h}}}}}", f"{sym_text}_{h}")
    return {"scaled_scores": head, "scores": head,
            "alibi": (f"B_{{{h}}}", f"B_{h}"),
            "biased_scores": (rf"{{{sym}_{{{h}}} + B_{{{h}}}}}", f"({sym_text}_{h}+B_{h})"),
            "masked_scores": (rf"{{\tilde S_{{{h}}}}}", f"S̃_{h}"), "weights": (rf"{{A_{{{h}}}}}", f"A_{h}")}


def _rules(config: Config, n: int) -> dict[str, tuple[str, object]]:
    """The comparison masks: step key -> (rule, its parameter)."""
    hidden = padding_compared(config, n)
    return {"mask_w": ("window", config.window), "mask_w1": ("window1", config.window),
            "mask_causal": ("causal", None), "mask_padding": ("padding", hidden)}


def padding_compared(config: Config, n: int) -> tuple[int, ...]:
    """The keys the compared padding mask hides: the sidebar's padding positions (those in the sentence),
    or the last token when it names none."""
    return tuple(sorted({p for p in config.padding if p < n})) or (n - 1,)


def rule_mask(kind: str, arg, n: int) -> np.ndarray:
    """(n, n) 1/0: window (arg = W keys), window1 (W + 1 keys), causal, padding (arg = hidden keys)."""
    if kind == "window":
        return att.sliding_window_mask(n, arg).astype(float)
    if kind == "window1":
        return att.sliding_window_mask(n, arg + 1).astype(float)
    if kind == "causal":
        return att.causal_mask(n).astype(float)
    return att.padding_mask(n, n, arg).astype(float)


def rule_formula(kind: str, arg) -> str:
    if kind == "window":
        return rf"M_{{ij}} = [\,0 \le i - j < W\,],\quad W = {arg}"
    if kind == "window1":
        return rf"M'_{{ij}} = [\,0 \le i - j \le W\,],\quad W = {arg}"
    if kind == "causal":
        return r"M_{ij} = [\,j \le i\,]"
    return rf"M_{{ij}} = [\,j \notin \{{{', '.join(map(str, arg))}\}}\,]"


COMPARE_TITLES = {"window": "W = {w} key(s)", "window1": "W + 1 = {w1} keys", "causal": "Causal",
                  "padding": "Padding"}
RULE_WHY = {
    "window": "Query i sees keys i − W + 1 … i: W keys, itself included. Hugging Face transformers keeps key j "
              "when j > i − W, and flash-attn's window of W − 1 keys to the left plus the query is the same mask.",
    "window1": "Query i sees keys i − W … i: W + 1 keys, itself included. Mistral's paper writes the window "
               "this way, and PyTorch's own sliding-window example for its flexible attention keeps a key when "
               "i − j ≤ W.",
    "causal": "Query i sees itself and every key before it: what a model writing left to right may read.",
    "padding": "The hidden keys (padding a batch added) are invisible to every query, before or after it.",
}


def score_formula(config: Config, h: int, kv: int) -> str:
    """Head h's scores as the forward pass computes them (RoPE's rotated rows, KV head ⌊h/g⌋)."""
    r = "^R" if config.positional == "rope" else ""
    q, k = f"Q{r}_{{{h}}}", f"{{K{r}_{{{kv}}}}}^\\top" if r else f"K_{{{kv}}}^\\top"
    if config.score == "scaled_dot":
        return rf"\hat S_{{{h}}} = \frac{{{q}\, {k}}}{{\sqrt{{d_k}}}},\quad d_k = {config.d_k}"
    if config.score == "dot":
        return rf"S_{{{h}}} = {q}\, {k}"
    if config.score == "bilinear":
        return rf"S_{{{h}}} = {q}\, W^{{({h})}}\, {k}"
    return (rf"(S_{{{h}}})_{{ij}} = v^{{({h})\top}} \tanh(W_1^{{({h})\top}} q_i + W_2^{{({h})\top}} k_j),\ "
            rf"q_i, k_j \text{{ rows of }} {q}, K{r}_{{{kv}}}")


def _scores_why(config: Config, h: int, kv: int) -> str:
    """What the first box shows, in words true under these settings."""
    scaled = config.score == "scaled_dot"
    name = "scaled scores Ŝ" if scaled else "scores S"
    words = [f"Head {h}'s {name} from the forward pass under the sidebar's settings, before any bias or mask"]
    if config.positional == "rope":
        words.append("RoPE rotated each query and key by its position first (Q^R, K^R)")
    if config.kv_heads < config.n_heads:
        words.append(f"query head {h} reads KV head ⌊{h}/{config.n_heads // config.kv_heads}⌋ = {kv}")
    text = "; ".join(words) + "."
    if config.score == "dot":
        text += " The sidebar's score is the dot product without the division by √d_k: the bias, the mask and " \
                "softmax read S the same way they would read Ŝ."
    elif not scaled:
        text += (f" The sidebar's score is {config.score}, not the scaled dot product: the bias, the mask and "
                 "softmax read these S the same way (ALiBi's paper adds its bias to the scaled dot product).")
    return text


def slopes_formula(heads: int) -> str:
    """m_h in LaTeX for this H: one geometric sequence for a power of two, else the c and 2c pieces."""
    c = 2 ** int(math.floor(math.log2(heads)))
    if c == heads:
        return rf"m_h = 2^{{-8(h+1)/{heads}}},\quad h = 0, \dots, {heads - 1}"
    return (rf"m_h = \begin{{cases}} 2^{{-8(h+1)/{c}}} & h < c = {c} \\ 2^{{-8(2(h-{c})+1)/{2 * c}}} & "
            rf"h = {c}, \dots, {heads - 1} \end{{cases}}")


def mask_formula(config: Config) -> str:
    if config.mask == "causal":
        return r"M_{ij} = [\,j \le i\,]"
    if config.mask == "sliding_window":
        return rf"M_{{ij}} = [\,0 \le i - j < W\,],\quad W = {config.window}"
    hidden = ", ".join(map(str, sorted(set(config.padding))))
    return rf"M_{{ij}} = [\,j \notin \{{{hidden}\}}\,]"


MASK_WHY = {
    "causal": lambda c: "A query sees itself and the keys before it: what a model writing left to right may read.",
    "sliding_window": lambda c: (f"A query sees at most W = {c.window} key{'s' * (c.window != 1)}, itself included"
                                 + (f": keys i − {c.window - 1} … i." if c.window > 1 else ": only itself.")
                                 + " This is how Hugging Face transformers and flash-attn count a window; Mistral's "
                                   "paper counts one key more (the comparison below)."),
    "padding": lambda c: "The hidden keys (padding a batch added) are invisible to every query.",
}


def slope_parts(h: int, heads: int) -> tuple[int, int, int]:
    """(numerator k, denominator D, c) with m_h = 2^(−8k/D): the first c = 2^⌊log₂ H⌋ heads take the c-head
    sequence (k = h + 1, D = c); the rest take every other slope of the 2c-head one (k = 2(h − c) + 1, D = 2c)."""
    c = 2 ** int(math.floor(math.log2(heads)))
    return (h + 1, c, c) if h < c else (2 * (h - c) + 1, 2 * c, c)


# ---- click-a-cell arithmetic (kind "masks") --------------------------------------------------------
# The forward steps (scores, bias, mask, masked scores, weights) are explained by the forward pass's own
# explainers, at head h's cell; the page's own steps (slopes, sink, row sums, compared masks) here.

SYMBOLS.setdefault("alibi_slopes", ("m", "m"))


def _forward_explainer(key: str):
    def explain_forward(ctx: Context, cell):
        fwd, h = ctx.trace.facts["forward"], ctx.trace.facts["head"]
        full = (h, *cell) if fwd[key].value.ndim == 3 else tuple(cell)
        e = explain(fwd, key, full, precision=ctx.precision, config=ctx.trace.facts["config"])
        return replace(e, key=key, cell=tuple(cell))
    return explain_forward


for _key in ("scores", "scaled_scores", "alibi", "biased_scores", "mask", "masked_scores", "weights"):
    register(_key, kind=KIND)(_forward_explainer(_key))


def _simple(ctx, key, cell, lhs, lhs_text, sym, sym_text, shown, shown_text, value, note, reads=()) -> Explanation:
    return Explanation(key, cell, f"{lhs} = {sym}", shown, f"{lhs} = {ctx.num(value)}", float(value),
                       f"{lhs_text} = {sym_text}\n  = {shown_text}\n  = {ctx.num_text(value)}", note=note,
                       reads=tuple(reads))


@register("alibi_slopes", kind=KIND)
def _slope(ctx: Context, cell):
    (h,) = cell
    heads = len(ctx.value("alibi_slopes"))
    k, d, c = slope_parts(h, heads)
    value = 2.0 ** (-8.0 * k / d)
    if c == heads:
        note = f"H = {heads} is a power of two: m_h = 2^(−8(h+1)/H), heads counted from 0 (the paper's h = {h + 1})."
    elif h < c:
        note = (f"H = {heads} is not a power of two: the first c = 2^⌊log₂ {heads}⌋ = {c} heads take the {c}-head "
                f"slopes 2^(−8(h+1)/{c}).")
    else:
        e = h - c
        where = (f"larger than all of the first {c} (m_0 = {2.0 ** (-8.0 / c):.4g})" if e == 0 else
                 f"between m_{e - 1} = {2.0 ** (-8.0 * e / c):.4g} and m_{e} = {2.0 ** (-8.0 * (e + 1) / c):.4g}")
        note = (f"Head {h} is one of the last H − c = {heads - c}: it takes slope {2 * e} (counted from 0) of "
                f"the {2 * c}-head sequence 2^(−8(k+1)/{2 * c}), i.e. [0::2][{e}], which is {where}.")
    return _simple(ctx, "alibi_slopes", cell, f"m_{{{h}}}", f"m_{h}", rf"2^{{-8 \cdot {k} / {d}}}", f"2^(−8·{k}/{d})",
                   rf"2^{{{fmt(-8.0 * k / d, 4)}}}", f"2^({fmt(-8.0 * k / d, 4, False)})", value, note)


def _rule(kind: str, arg, i: int, j: int) -> tuple[bool, str]:
    """(query i may see key j, the rule with the numbers)."""
    if kind in ("window", "window1"):
        ok = 0 <= i - j < arg + (kind == "window1")
        return ok, f"0 ≤ i − j = {i - j} {'<' if kind == 'window' else '≤'} {arg}: {'yes' if ok else 'no'}"
    if kind == "causal":
        return j <= i, f"j = {j} ≤ i = {i}: {'yes' if j <= i else 'no'}"
    return j not in arg, f"key {j} {'is' if j in arg else 'is not'} hidden"


def _compared_mask(key: str):
    def explain_mask(ctx: Context, cell):
        i, j = cell
        kind, arg = ctx.trace.facts["rules"][key]
        ok, rule = _rule(kind, arg, i, j)
        name = "M'" if kind == "window1" else "M"
        return _simple(ctx, key, cell, f"{name}_{{{i},{j}}}", f"{name}[{i},{j}]",
                       rf"[\text{{query {i} may see key {j}}}]", f"[query {i} may see key {j}]",
                       rf"\text{{{rule}}}", rule, float(ok),
                       f"1: query {i} (“{ctx.word(i)}”) may attend to key {j} (“{ctx.word(j)}”); 0: hidden.")
    return explain_mask


for _key in ("mask_w", "mask_w1", "mask_causal", "mask_padding"):
    register(_key, kind=KIND)(_compared_mask(_key))


@register("sink_weights", kind=KIND)
def _sink(ctx: Context, cell):
    """A_ij = e^{x_ij − μ} / (e^{z_h − μ} + Σ_j' e^{x_ij' − μ}), x = (the scores softmax reads) / T."""
    i, j = cell
    f = ctx.trace.facts
    sink, h, temp, src = f["settings"].sink, f["head"], f["t"], f["logits"]
    row = [float(v) / temp for v in ctx.value(src)[i]]                         # (n_k,)
    finite = [v for v in row if math.isfinite(v)] + [sink]
    mu = max(finite)
    e = [math.exp(v - mu) for v in row] + [math.exp(sink - mu)]
    over, over_text = ("" if temp == 1 else "/T"), ("" if temp == 1 else f"/{temp:g}")
    exps = [r"e^{-\infty}" if math.isinf(v) else rf"e^{{{ctx.num(v)} - {ctx.factor(mu)}}}" for v in row]
    exps_text = ["e^(−∞)" if math.isinf(v) else f"e^({ctx.num_text(v)} − {ctx.factor_text(mu)})" for v in row]
    exps.append(rf"\underbrace{{e^{{{fmt(sink, 3)} - {ctx.factor(mu)}}}}}_{{\text{{sink}}}}")
    exps_text.append(f"e^({fmt(sink, 3, False)} − {ctx.factor_text(mu)}) [sink]")
    total = math.fsum(e)
    value = e[j] / total
    shown, shown_text, hidden = softmax_fraction(ctx, exps, exps_text, e, j, total,
                                                 masked=[math.isinf(v) for v in row] + [False])
    x, x_text = ctx.ref(src, (i, j)), ctx.ref_text(src, (i, j))
    sym = (rf"\frac{{e^{{{x}{over} - \mu}}}}{{e^{{z_{{{h}}} - \mu}} + \sum_{{j'}} e^{{{ctx.ref(src, (i, 'j'))}{over} - \mu}}}},"
           rf"\ \mu = \max(\max_{{j'}} {ctx.ref(src, (i, 'j'))}{over},\ z_{{{h}}})")
    text_sym = (f"e^({x_text}{over_text} − μ) / (e^(z_{h} − μ) + Σ_j' e^({ctx.ref_text(src, (i, 'j'))}{over_text} − μ))")
    keys = 1 - e[-1] / total
    note = (f"The sink z_{h} = {fmt(sink, 3, False)} adds e^(z_{h} − μ) = {ctx.num_text(e[-1])} to the denominator "
            f"only: row {i} keeps {ctx.num_text(keys)} of its weight for the keys, the sink takes "
            f"{ctx.num_text(e[-1] / total)}." + ("" if temp == 1 else f" The scores are divided by T = {temp:g} "
                                                 "first; z_h is not."))
    if all(math.isinf(v) for v in row):
        note = f"Every key is hidden for query {i}: the sink takes the whole row, and every key gets 0 (no NaN)."
    return Explanation("sink_weights", cell, rf"(A_{{{h}}})_{{{i},{j}}} = {sym}", shown,
                       rf"(A_{{{h}}})_{{{i},{j}}} = {ctx.num(value)}", value,
                       f"A_{h}[{i},{j}] = {text_sym}\n  = {shown_text}\n  = {ctx.num_text(value)}", note=note,
                       n_terms=len(e), n_elided=hidden, reads=tuple((src, (i, jj)) for jj in range(len(row))))


@register("row_sums", kind=KIND)
def _row_sum(ctx: Context, cell):
    i, part = cell
    final, h = ctx.trace.facts["final"], ctx.trace.facts["head"]
    a = [float(v) for v in ctx.value(final)[i]]
    total = math.fsum(a)
    shown, hidden = join_terms([ctx.num(v) for v in a])
    shown_text, _ = join_terms([ctx.num_text(v) for v in a], latex=False)
    reads = [(final, (i, j)) for j in range(len(a))]
    if part == 0:
        e = _simple(ctx, "row_sums", cell, rf"\textstyle\sum_j (A_{{{h}}})_{{{i},j}}", f"Σ_j A_{h}[{i},j]",
                    rf"\textstyle\sum_j (A_{{{h}}})_{{{i},j}}", f"Σ_j A_{h}[{i},j]", shown, shown_text, total,
                    f"Row {i}'s weights added up.", reads)
    else:
        e = _simple(ctx, "row_sums", cell, rf"\text{{sink share}}_{{{i}}}", f"sink share[{i}]",
                    rf"1 - \textstyle\sum_j (A_{{{h}}})_{{{i},j}}", f"1 − Σ_j A_{h}[{i},j]", rf"1 - ({shown})",
                    f"1 − ({shown_text})", 1.0 - total,
                    "What the keys do not get goes to the sink: e^(z_h) divided by the whole denominator.", reads)
    return replace(e, n_terms=len(a), n_elided=hidden)
