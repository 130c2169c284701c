"""The masks-and-biases page: one head's scaled scores Ŝ, ALiBi's bias B_h, a mask M, softmax, a sink.

    Ŝ (n, n) ──(+ B_h, ALiBi)──> Ŝ + B_h ──(mask M: −∞ where hidden)──> S̃ ──softmax──> A
                                                                          └─(+ e^{z_h} in the denominator)──> A (sink)

Ŝ is the sentence's head-0 scaled scores Q_0 K_0ᵀ / √d_k, from the forward pass under the sidebar's
settings. The page's ALiBi has its own head count H (1 … 16, powers of two or not): every ALiBi head
reads the same Ŝ, so what differs from head to head is the bias alone (in a trained model each head
has its own Q_h and K_h too). Masks are True = may attend; the shown mask M is 1/0.
Checked against torch's scaled_dot_product_attention (explicit bool mask, float bias) in
tests/test_masks.py; the sink against softmax over [S̃_i, z_h] with the sink's column dropped.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from . import attention as att
from .alibi import alibi_bias, alibi_slopes
from .claims import claim
from .config import MAX_HEADS, Config, ConfigError
from .explain import SYMBOLS, Context, Explanation, fmt, join_terms, register, softmax_fraction
from .trace import Trace

MASKS = ("causal", "sliding_window", "padding", "none")
MAX_SINK = 30.0                     # |z_h| ≤ 30: e^{±30} is far from overflow
KIND = "masks"


@dataclass(frozen=True)
class MaskSettings:
    """The page's own controls, as the claims about them (about="masks") read them."""
    n: int                          # tokens
    mask: str = "causal"            # causal | sliding_window | padding | none
    window: int = 3                 # W, keys per query counting itself (sliding_window)
    hidden: tuple[int, ...] = ()    # key positions a padding mask hides
    heads: int = 0                  # ALiBi's H; 0: no ALiBi
    sink: float | None = None       # z_h; None: no sink

    def sees_a_key(self) -> bool:
        """Every query sees at least one key (causal and window queries always see themselves)."""
        return self.mask != "padding" or len(set(self.hidden)) < self.n


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
claim("masks_sink_below_one", "with a sink every row sums to less than 1: what is missing is the sink's share "
      "e^(z_h) / (e^(z_h) + Σ_j e^(S̃_ij))", lambda s: s.sink is not None, "a sink logit z_h is on",
      _T + "test_sink_rows_sum_to_one_minus_the_sink_share", about=KIND)
claim("masks_window_is_causal", "W ≥ n: every query's window reaches back to token 0, so the sliding window "
      "equals the causal mask", lambda s: s.mask == "sliding_window" and s.window >= s.n,
      "a sliding window at least as long as the sentence", _T + "test_window_equals_causal_exactly_when_w_reaches_n",
      about=KIND)
claim("masks_readings_differ", "the two readings differ: from query W on, the W + 1 reading sees one key more "
      "(key i − W)", lambda s: s.mask == "sliding_window" and s.window < s.n,
      "a sliding window shorter than the sentence", _T + "test_the_two_window_readings_differ_exactly_when_w_below_n",
      about=KIND)
claim("masks_slopes_geometric", "H is a power of two: the slopes are one geometric sequence, each 2^(−8/H) "
      "times the one before", lambda s: _power_of_two(s.heads), "ALiBi with H a power of two",
      _T + "test_slopes_are_geometric_exactly_for_powers_of_two", about=KIND)
claim("masks_slopes_interleaved", "H is not a power of two: after the first c slopes, the other H − c fall "
      "between them (every other slope of the 2c sequence), so the list is not one geometric sequence",
      lambda s: s.heads >= 1 and not _power_of_two(s.heads), "ALiBi with H not a power of two",
      _T + "test_slopes_are_geometric_exactly_for_powers_of_two", about=KIND)
claim("masks_alibi_both_sides", "no causal mask here: keys after the query are visible and lose −m_h·|i − j| "
      "too (the paper's models are causal, so they never see them)",
      lambda s: s.heads >= 1 and s.mask in ("none", "padding"), "ALiBi without a causal or window mask",
      _T + "test_alibi_reaches_keys_after_the_query_only_without_a_causal_mask", about=KIND)
claim("masks_all_hidden", "every key is hidden: each row of A is all 0, not NaN (there is nothing to average)",
      lambda s: not s.sees_a_key(), "a padding mask hiding every key", _T + "test_every_key_hidden_gives_zero_rows",
      about=KIND)


# ---- the computation ---------------------------------------------------------------------------------

_SCORES: dict[Config, tuple] = {}          # config -> (tokens, Q_0, K_0); the last 16 configs


def sentence_scores(config: Config, forward: Trace | None = None) -> tuple[tuple[str, ...], np.ndarray, np.ndarray]:
    """(tokens, Q_0 (n, d_k), K_0 (n, d_k)): head 0's queries and keys of the sentence's forward pass.

    Pass the forward trace if you have it (the page does: ui.page computed it), else it is run here."""
    hit = _SCORES.get(config)
    if hit is None:
        if forward is None:
            from .forward import run_forward
            forward = run_forward(config)
        q, k = forward["q"].value, forward["k"].value                  # (n, H·d_k)
        hit = (forward.tokens, q[:, :config.d_k], k[:, :config.d_k])
        while len(_SCORES) >= 16:
            _SCORES.pop(next(iter(_SCORES)), None)
        _SCORES[config] = hit
    return hit


def mask_of(s: MaskSettings) -> np.ndarray:
    """M (n, n) bool, True = may attend."""
    n = s.n
    if s.mask == "causal":
        return att.causal_mask(n)
    if s.mask == "sliding_window":
        return att.sliding_window_mask(n, s.window)
    if s.mask == "padding":
        return att.padding_mask(n, n, s.hidden)
    return np.ones((n, n), dtype=bool)


def check(s: MaskSettings, head: int = 0) -> None:
    """ConfigError with what to change, for any control out of range."""
    if s.mask not in MASKS:
        raise ConfigError(f"mask={s.mask!r} is not one of {', '.join(MASKS)}.")
    if s.mask == "sliding_window" and (isinstance(s.window, bool) or not isinstance(s.window, int) or s.window < 1):
        raise ConfigError(f"A window of {s.window!r} keys hides every key, the query itself too: set W to at "
                          "least 1 (W = 1: each token sees only itself).")
    bad = [p for p in s.hidden if not 0 <= p < s.n]
    if s.mask == "padding" and bad:
        raise ConfigError(f"Key {bad[0]} is past the last token (keys run 0 to {s.n - 1}): unhide it.")
    if isinstance(s.heads, bool) or not isinstance(s.heads, int) or not 0 <= s.heads <= MAX_HEADS:
        raise ConfigError(f"ALiBi heads H = {s.heads!r}: use 1 to {MAX_HEADS}.")
    if s.heads and not 0 <= head < s.heads:
        raise ConfigError(f"Head {head} does not exist: heads run 0 to {s.heads - 1}.")
    if s.sink is not None and not (math.isfinite(s.sink) and abs(s.sink) <= MAX_SINK):
        raise ConfigError(f"The sink logit z_h = {s.sink!r}: use a number from −{MAX_SINK:g} to {MAX_SINK:g}.")


@functools.lru_cache(maxsize=64)
def masks_trace(config: Config, mask: str = "causal", window: int = 3, hidden: tuple[int, ...] = (),
                heads: int = 0, head: int = 0, sink: float | None = None) -> Trace:
    """The page's steps for one ALiBi head h (heads = 0: no ALiBi). ConfigError for a bad control."""
    tokens, q, k = sentence_scores(config)
    n = len(tokens)
    s = MaskSettings(n, mask, window, tuple(sorted(set(hidden))), heads, sink)
    check(s, head)
    t = Trace(tokens)
    t.facts.update(kind=KIND, settings=s, head=head, d_k=q.shape[1], config=config,
                   axis_labels={"part": ["Σ_j A_ij", "sink share"] if sink is not None else ["Σ_j A_ij"]})
    t.add("q", "Queries Q₀ (head 0)", q, ("n", "d_k"), r"Q_0 = (X W_Q)_{[:,\,0:d_k]}")
    t.add("k", "Keys K₀ (head 0)", k, ("n", "d_k"), r"K_0 = (X W_K)_{[:,\,0:d_k]}")
    scaled = att.scaled_dot_scores(q, k)                                       # (n, n)
    t.add("scaled_scores", "Scaled scores Ŝ", scaled, ("n_q", "n_k"), r"\hat S = \frac{Q_0 K_0^\top}{\sqrt{d_k}}",
          ("q", "k"), why="The sentence's head-0 scores from the forward pass (the sidebar's settings), before "
                          "any bias or mask." + (" Every ALiBi head here starts from this same Ŝ." if heads else "")
                          + (f" The sidebar's score is {config.score.replace('_', ' ')}; this page always takes the "
                             "scaled dot product of the same Q and K." if config.score != "scaled_dot" else "")
                          + " The sidebar's mask and temperature are not used here: the page has its own mask, "
                            "and softmax runs at T = 1.")
    logits = "scaled_scores"
    if heads:
        slopes = alibi_slopes(heads)                                           # (H,)
        t.add("alibi_slopes", "ALiBi slopes m_h", slopes, ("h",), slopes_formula(heads),
              why="One slope per head h (the columns), fixed, never learned: a steep slope looks near, a gentle "
                  "one far.", scale="sequential")
        bias = alibi_bias(n, heads)[head]                                      # (n, n)
        t.add("alibi_bias", f"ALiBi bias B_{head} (head {head})", bias, ("n_q", "n_k"),
              rf"(B_{{{head}}})_{{ij}} = -m_{{{head}}} \cdot |i - j|,\quad m_{{{head}}} = {fmt(slopes[head], 5)}",
              why="The further back key j is from query i, the more is taken off its score; nothing is added to X. "
                  "On and below the diagonal (j ≤ i) this is the paper's −m_h·(i − j); above it, the keys after "
                  "the query, it matters only without a causal mask.")
        t.add("biased_scores", "Biased scores Ŝ + B_h", scaled + bias, ("n_q", "n_k"),
              rf"\hat S + B_{{{head}}}", ("scaled_scores", "alibi_bias"), why="What the mask and softmax now read.")
        logits = "biased_scores"
    m = mask_of(s)                                                             # (n, n) bool
    t.add("mask", "Mask M", m.astype(float), ("n_q", "n_k"), MASK_FORMULA[mask].replace("{W}", str(window)),
          why=MASK_WHY[mask].replace("{W}", str(window)), scale="mask")
    if mask == "sliding_window":
        t.add("mask_w1", "Mistral's paper's reading: W + 1 keys", att.sliding_window_mask(n, window + 1).astype(float),
              ("n_q", "n_k"), rf"M'_{{ij}} = [\,0 \le i - j \le {window}\,]",
              why=f"The paper writes the window as positions i − W … i: {window + 1} keys counting the query.",
              scale="mask")
    masked = att.apply_mask(t[logits].value, m)
    t.add("masked_scores", "Masked scores S̃", masked, ("n_q", "n_k"),
          r"\tilde S_{ij} = \begin{cases} " + (r"\hat S_{ij} + (B_h)_{ij}" if heads else r"\hat S_{ij}")
          + r" & M_{ij} = 1 \\ -\infty & M_{ij} = 0 \end{cases}", (logits, "mask"),
          why="Hidden entries become −∞, so exp gives them exactly 0.")
    t.add("weights", "Weights A = softmax(S̃)", att.softmax(masked), ("n_q", "n_k"),
          r"A_{ij} = \frac{e^{\tilde S_{ij}}}{\sum_{j'} e^{\tilde S_{ij'}}}", ("masked_scores",),
          why="Plain softmax over each row.", scale="sequential")
    final = "weights"
    if sink is not None:
        t.add("sink_weights", f"Weights with a sink, z_{head} = {sink:g}", att.softmax_with_sink(masked, sink),
              ("n_q", "n_k"), rf"A_{{ij}} = \frac{{e^{{\tilde S_{{ij}}}}}}{{e^{{z_{{{head}}}}} + \sum_{{j'}} "
              rf"e^{{\tilde S_{{ij'}}}}}},\quad z_{{{head}}} = {sink:g}", ("masked_scores",),
              why="One more logit in the denominator only: it takes a share of the row and gives no value back.",
              scale="sequential")
        final = "sink_weights"
    sums = t[final].value.sum(axis=1)                                          # (n,)
    parts = [sums] if sink is None else [sums, 1.0 - sums]
    t.add("row_sums", "Row sums" + (" and the sink's share" if sink is not None else ""), np.stack(parts, axis=1),
          ("n_q", "part"), r"\textstyle\sum_j A_{ij}" + (r",\quad 1 - \sum_j A_{ij}" if sink is not None else ""),
          (final,), scale="sequential")
    t.facts["final"] = final
    return t


def slopes_formula(heads: int) -> str:
    """m_h in LaTeX for this H: one geometric sequence for a power of two, else the c and 2c pieces."""
    c = 2 ** int(math.floor(math.log2(heads)))
    if c == heads:
        return rf"m_h = 2^{{-8(h+1)/{heads}}},\quad h = 0, \dots, {heads - 1}"
    return (rf"m_h = \begin{{cases}} 2^{{-8(h+1)/{c}}} & h < c = {c} \\ 2^{{-8(2(h-{c})+1)/{2 * c}}} & "
            rf"h = {c}, \dots, {heads - 1} \end{{cases}}")


MASK_FORMULA = {
    "causal": r"M_{ij} = [\,j \le i\,]",
    "sliding_window": r"M_{ij} = [\,0 \le i - j < W\,],\quad W = {W}",
    "padding": r"M_{ij} = [\,j \notin \text{hidden}\,]",
    "none": r"M_{ij} = 1",
}
MASK_WHY = {
    "causal": "A query sees itself and the keys before it: what a model writing left to right may read.",
    "sliding_window": "A query sees at most W = {W} keys, itself included (Longformer's and torch's reading).",
    "padding": "The hidden keys (padding a batch added) are invisible to every query.",
    "none": "Every query sees every key (an encoder).",
}


# ---- click-a-cell arithmetic (kind "masks") --------------------------------------------------------

SYMBOLS.setdefault("alibi_slopes", ("m", "m"))
SYMBOLS.setdefault("mask_w1", ("M'", "M'"))
SYMBOLS.setdefault("biased_scores", (r"(\hat S + B)", "(Ŝ+B)"))


def _settings(ctx: Context) -> MaskSettings:
    return ctx.trace.facts["settings"]


def _simple(ctx, key, cell, lhs, lhs_text, sym, sym_text, shown, shown_text, value, note, reads=()) -> Explanation:
    return Explanation(key, cell, f"{lhs} = {sym}", shown, f"{lhs} = {ctx.num(value)}", float(value),
                       f"{lhs_text} = {sym_text}\n  = {shown_text}\n  = {ctx.num_text(value)}", note=note,
                       reads=tuple(reads))


def _projection(name: str):
    """Q_0[i, m] = Σ_r X[i, r] (W_Q)[r, m] (+ b_Q[m]) from the forward pass (head 0: the first d_k columns)."""
    def explain_projection(ctx: Context, cell):
        from .forward import run_forward
        i, m = cell
        fwd = run_forward(ctx.trace.facts["config"])
        x, w = fwd["x"].value[i], fwd[f"w_{name}"].value[:, m]                   # (d_model,), (d_model,)
        big = name.upper()
        terms = [(f"X_{{{i},{r}}}", f"X[{i},{r}]", x[r], f"(W_{big})_{{{r},{m}}}", f"W_{big}[{r},{m}]", w[r], None, None)
                 for r in range(x.shape[0])]
        bias = None
        if f"b_{name}" in fwd:
            b = float(fwd[f"b_{name}"].value[m])
            bias = (f"(b_{big})_{{{m}}}", f"b_{big}[{m}]", b, None)
        return ctx.sum_of_products(name, cell, rf"\sum_r X_{{{i},r}} (W_{big})_{{r,{m}}}", f"Σ_r X[{i},r]·W_{big}[r,{m}]",
                                   terms, bias=bias, note=f"Row {i} (“{ctx.word(i)}”) of X times column {m} of "
                                   f"W_{big}, from the forward pass (the QKV page); head 0 uses columns 0 … d_k − 1.")
    return explain_projection


register("q", kind=KIND)(_projection("q"))
register("k", kind=KIND)(_projection("k"))


@register("scaled_scores", kind=KIND)
def _scaled(ctx: Context, cell):
    i, j = cell
    q, k = ctx.value("q")[i], ctx.value("k")[j]                                # (d_k,)
    d_k = q.shape[0]
    terms = [(ctx.ref("q", (i, m)), ctx.ref_text("q", (i, m)), q[m], ctx.ref("k", (j, m)), ctx.ref_text("k", (j, m)),
              k[m], ("q", (i, m)), ("k", (j, m))) for m in range(d_k)]
    return ctx.sum_of_products("scaled_scores", cell, rf"\frac{{\sum_{{m=0}}^{{{d_k - 1}}} Q_{{{i},m}} K_{{{j},m}}}}"
                               r"{\sqrt{d_k}}", f"Σ_m Q[{i},m]·K[{j},m] / √d_k", terms,
                               divisor=(rf"\sqrt{{{d_k}}}", f"√{d_k}", math.sqrt(d_k)),
                               note=f"Query {i} (“{ctx.word(i)}”) against key {j} (“{ctx.word(j)}”), head 0 of "
                                    "the forward pass.")


def slope_parts(h: int, heads: int) -> tuple[int, int, int]:
    """(numerator k, denominator D, c) with m_h = 2^(−8k/D): the first c = 2^⌊log₂ H⌋ heads take the c-head
    sequence (k = h + 1, D = c); the rest take every other slope of the 2c-head one (k = 2(h − c) + 1, D = 2c)."""
    c = 2 ** int(math.floor(math.log2(heads)))
    return (h + 1, c, c) if h < c else (2 * (h - c) + 1, 2 * c, c)


@register("alibi_slopes", kind=KIND)
def _slope(ctx: Context, cell):
    (h,) = cell
    heads = _settings(ctx).heads
    k, d, c = slope_parts(h, heads)
    value = 2.0 ** (-8.0 * k / d)
    if c == heads:
        note = f"H = {heads} is a power of two: m_h = 2^(−8(h+1)/H), heads counted from 0 (the paper's h = {h + 1})."
    elif h < c:
        note = (f"H = {heads} is not a power of two: the first c = 2^⌊log₂ {heads}⌋ = {c} heads take the {c}-head "
                f"slopes 2^(−8(h+1)/{c}).")
    else:
        note = (f"Head {h} is one of the last H − c = {heads - c}: it takes slope {2 * (h - c)} (counted from 0) of "
                f"the {2 * c}-head sequence 2^(−8(k+1)/{2 * c}), i.e. [0::2][{h - c}], which falls between two of "
                "the first c slopes.")
    return _simple(ctx, "alibi_slopes", cell, f"m_{{{h}}}", f"m_{h}", rf"2^{{-8 \cdot {k} / {d}}}", f"2^(−8·{k}/{d})",
                   rf"2^{{{fmt(-8.0 * k / d, 4)}}}", f"2^({fmt(-8.0 * k / d, 4, False)})", value, note)


@register("alibi_bias", kind=KIND)
def _bias(ctx: Context, cell):
    i, j = cell
    h = ctx.trace.facts["head"]
    m = float(ctx.value("alibi_slopes")[h])
    dist = abs(i - j)
    value = 0.0 - m * dist
    after = j > i
    sym = rf"-m_{{{h}}} \cdot |{i} - {j}|" if after else rf"-m_{{{h}}} \cdot ({i} - {j})"
    note = (f"Key {j} is {dist} token{'s' * (dist != 1)} {'after' if after else 'before'} query {i}"
            + (": the query itself, no penalty." if dist == 0 else f", so its score loses {dist}·m_{h}.")
            + (" (After the query: only used without a causal mask.)" if after else ""))
    return _simple(ctx, "alibi_bias", cell, f"(B_{{{h}}})_{{{i},{j}}}", f"B_{h}[{i},{j}]", sym,
                   f"−m_{h}·{'|' if after else '('}{i} − {j}{'|' if after else ')'}",
                   rf"-{ctx.num(m)} \cdot {dist}", f"−{ctx.num_text(m)}·{dist}", value, note,
                   reads=(("alibi_slopes", (h,)),))


@register("biased_scores", kind=KIND)
def _biased(ctx: Context, cell):
    i, j = cell
    h = ctx.trace.facts["head"]
    s, b = float(ctx.value("scaled_scores")[cell]), float(ctx.value("alibi_bias")[cell])
    return _simple(ctx, "biased_scores", cell, rf"(\hat S + B_{{{h}}})_{{{i},{j}}}", f"(Ŝ+B_{h})[{i},{j}]",
                   rf"\hat S_{{{i},{j}}} + (B_{{{h}}})_{{{i},{j}}}", f"Ŝ[{i},{j}] + B_{h}[{i},{j}]",
                   f"{ctx.num(s)} + {ctx.factor(b)}", f"{ctx.num_text(s)} + {ctx.factor_text(b)}", s + b,
                   "ALiBi adds the bias to the scaled score before the mask and softmax.",
                   reads=(("scaled_scores", cell), ("alibi_bias", cell)))


def _rule(s: MaskSettings, i: int, j: int, w1: bool = False) -> tuple[bool, str]:
    """(query i may see key j, the rule with the numbers)."""
    if w1 or s.mask == "sliding_window":
        w = s.window + w1
        ok = 0 <= i - j < w
        return ok, f"0 ≤ i − j = {i - j} {'<' if not w1 else '≤'} {s.window}: {'yes' if ok else 'no'}"
    if s.mask == "causal":
        return j <= i, f"j = {j} ≤ i = {i}: {'yes' if j <= i else 'no'}"
    if s.mask == "padding":
        return j not in s.hidden, f"key {j} {'is' if j in s.hidden else 'is not'} hidden"
    return True, "no mask: every key"


def _mask_explainer(key: str):
    def explain_mask(ctx: Context, cell):
        i, j = cell
        ok, rule = _rule(_settings(ctx), i, j, w1=key == "mask_w1")
        name = "M'" if key == "mask_w1" else "M"
        return _simple(ctx, key, cell, f"{name}_{{{i},{j}}}", f"{name}[{i},{j}]",
                       rf"[\text{{query {i} may see key {j}}}]", f"[query {i} may see key {j}]",
                       rf"\text{{{rule}}}", rule, float(ok),
                       f"1: query {i} (“{ctx.word(i)}”) may attend to key {j} (“{ctx.word(j)}”); 0: hidden.")
    return explain_mask


register("mask", kind=KIND)(_mask_explainer("mask"))
register("mask_w1", kind=KIND)(_mask_explainer("mask_w1"))


@register("masked_scores", kind=KIND)
def _masked(ctx: Context, cell):
    i, j = cell
    src = ctx.trace["masked_scores"].inputs[0]
    ok = ctx.value("mask")[cell] == 1
    s = float(ctx.value(src)[cell])
    src_sym = ctx.ref(src, cell)
    return _simple(ctx, "masked_scores", cell, rf"\tilde S_{{{i},{j}}}", f"S̃[{i},{j}]",
                   rf"{src_sym} \text{{ if }} M_{{{i},{j}}} = 1 \text{{ else }} -\infty",
                   f"{ctx.ref_text(src, cell)} if M[{i},{j}] = 1 else −∞",
                   rf"M_{{{i},{j}}} = {int(ok)} \Rightarrow " + (ctx.num(s) if ok else r"-\infty"),
                   f"M[{i},{j}] = {int(ok)} → " + (ctx.num_text(s) if ok else "−∞"), s if ok else -math.inf,
                   "Visible: the score passes through." if ok else "Hidden: −∞, so e^(−∞) = 0 in the softmax.",
                   reads=(("mask", cell), (src, cell)))


def _softmax_explainer(key: str):
    def explain_weights(ctx: Context, cell):
        i, j = cell
        sink = _settings(ctx).sink if key == "sink_weights" else None
        h = ctx.trace.facts["head"]
        row = [float(v) for v in ctx.value("masked_scores")[i]]                # (n_k,)
        finite = [v for v in row if math.isfinite(v)] + ([sink] if sink is not None else [])
        mu = max(finite) if finite else 0.0
        e = [math.exp(v - mu) for v in row]
        exps = [r"e^{-\infty}" if math.isinf(v) else rf"e^{{{ctx.num(v)} - {ctx.factor(mu)}}}" for v in row]
        exps_text = ["e^(−∞)" if math.isinf(v) else f"e^({ctx.num_text(v)} − {ctx.factor_text(mu)})" for v in row]
        if sink is not None:                                                   # the sink: one more denominator term
            e.append(math.exp(sink - mu))
            exps.append(rf"\underbrace{{e^{{{fmt(sink, 3)} - {ctx.factor(mu)}}}}}_{{\text{{sink}}}}")
            exps_text.append(f"e^({fmt(sink, 3, False)} − {ctx.factor_text(mu)}) [sink]")
        total = math.fsum(e)
        value = e[j] / total if total > 0 else 0.0
        shown, shown_text, hidden = softmax_fraction(ctx, exps, exps_text, e, j, total)
        lhs = rf"A_{{{i},{j}}}"
        den = (rf"e^{{z_{{{h}}} - \mu}} + " if sink is not None else "") + r"\sum_{j'} e^{\tilde S_{" + str(i) + r",j'} - \mu}"
        sym = (rf"\frac{{e^{{\tilde S_{{{i},{j}}} - \mu}}}}{{{den}}},\ \mu = \max"
               + (rf"(\max_{{j'}} \tilde S_{{{i},j'}},\ z_{{{h}}})" if sink is not None else rf"_{{j'}} \tilde S_{{{i},j'}}"))
        if total == 0:
            note = "Every key is hidden for this query: the row is all 0 (no NaN)."
        elif sink is not None:
            note = (f"The sink z_{h} = {fmt(sink, 3, False)} adds e^(z_{h} − μ) = {ctx.num_text(e[-1])} to the "
                    f"denominator only: this row keeps {ctx.num_text(1 - e[-1] / total)} of its weight for the keys, "
                    f"the sink takes {ctx.num_text(e[-1] / total)}.")
        else:
            note = f"A softmax over row {i}; subtracting μ changes nothing and keeps exp from overflowing."
        text_sym = f"e^(S̃[{i},{j}] − μ) / ({'e^(z − μ) + ' if sink is not None else ''}Σ_j' e^(S̃[{i},j'] − μ))"
        return Explanation(key, cell, f"{lhs} = {sym}", shown, f"{lhs} = {ctx.num(value)}", value,
                           f"A[{i},{j}] = {text_sym}\n  = {shown_text}\n  = {ctx.num_text(value)}", note=note,
                           n_terms=len(e), n_elided=hidden, reads=tuple(("masked_scores", (i, jj)) for jj in range(len(row))))
    return explain_weights


register("weights", kind=KIND)(_softmax_explainer("weights"))
register("sink_weights", kind=KIND)(_softmax_explainer("sink_weights"))


@register("row_sums", kind=KIND)
def _row_sum(ctx: Context, cell):
    i, part = cell
    final = ctx.trace.facts["final"]
    a = [float(v) for v in ctx.value(final)[i]]
    total = math.fsum(a)
    shown, hidden = join_terms([ctx.num(v) for v in a])
    shown_text, _ = join_terms([ctx.num_text(v) for v in a], latex=False)
    if part == 0:
        return replace_terms(_simple(ctx, "row_sums", cell, rf"\textstyle\sum_j A_{{{i},j}}", f"Σ_j A[{i},j]",
                                     rf"\textstyle\sum_j A_{{{i},j}}", f"Σ_j A[{i},j]", shown, shown_text, total,
                                     f"Row {i}'s weights added up.", [(final, (i, j)) for j in range(len(a))]),
                             len(a), hidden)
    return replace_terms(_simple(ctx, "row_sums", cell, rf"\text{{sink share}}_{{{i}}}", f"sink share[{i}]",
                                 rf"1 - \textstyle\sum_j A_{{{i},j}}", f"1 − Σ_j A[{i},j]", rf"1 - ({shown})",
                                 f"1 − ({shown_text})", 1.0 - total,
                                 "What the keys do not get goes to the sink: e^(z_h) / (e^(z_h) + Σ_j e^(S̃_ij)).",
                                 [(final, (i, j)) for j in range(len(a))]), len(a), hidden)


def replace_terms(e: Explanation, n_terms: int, n_elided: int) -> Explanation:
    from dataclasses import replace
    return replace(e, n_terms=n_terms, n_elided=n_elided)
