"""Every number explained: how trace[key].value[cell] was made, with the live values in.

    >>> from attention_core import Config, run_forward
    >>> config = Config(sentence="I love you today")
    >>> trace = run_forward(config)
    >>> e = explain(trace, "scaled_scores", (1, 2), config=config)
    >>> print(e.symbolic)
    \\hat S_{1,2} = \\frac{S_{1,2}}{\\sqrt{d_k}} = \\frac{\\sum_{m=0}^{3} Q_{1,m}\\, K_{2,m}}{\\sqrt{d_k}}
    >>> bool(abs(e.value - trace["scaled_scores"].value[1, 2]) < 1e-12)
    True

An `Explanation` holds the cell's formula (LaTeX, indices filled in), the same formula with
the live numbers substituted, the result, a plain-text version, and `value`: the number
recomputed here FROM THE TERMS (scalar arithmetic, math.fsum), never read back from the
stored cell, so a test can compare the two. Long sums show their first 3 and last 2
terms and say how many are left out ("… 44 more …").

Pass the `config` the trace was made from (or let forward.py store it in
trace.facts["config"]): then leaves are regenerated too (an embedding row looked up
again, a weight drawn again from its seeded generator) and pe_base / temperature are
exact. Without it a leaf can only be read back (`independent=False`) and the temperature
is read from the step's formula (or, if that was rounded, from the weights themselves).

The registry
------------
EXPLAINERS maps (trace kind, step key) to `fn(ctx: Context, cell: tuple[int, ...]) -> Explanation`.
The kind tells traces apart that reuse a key for other math: run_forward's traces are
"forward" (its facts say so); the classifier's (its facts carry "classes", or set facts["kind"])
are "classifier", where "scores" is already scaled and "w_o" maps to 3 classes; any other trace
(Bahdanau's, the grid's, PyTorch's) is "other" until it names its kind, so a forward explainer
never reads a "scores" it does not know. kind="*" serves any trace.
A module that adds steps (e.g. the classifier's "dL/dw_q") registers its own, at import:

    from .registry import Context, Explanation, register

    @register("dL/dw_q", kind="classifier")
    def _dl_dw_q(ctx: Context, cell) -> Explanation:
        m, j = cell                                     # dL/dW_Q[m, j] = Σ_i X[i, m] dL/dQ[i, j]
        x, g = ctx.value("x"), ctx.value("dL/dq")
        return ctx.sum_of_products(
            "dL/dw_q", cell, rf"\\sum_i X_{{i,{m}}}\\, \\partial L/\\partial Q_{{i,{j}}}", f"Σ_i X[i,{m}]·dL/dQ[i,{j}]",
            [(ctx.ref("x", (i, m)), ctx.ref_text("x", (i, m)), x[i, m],
              ctx.ref("dL/dq", (i, j)), ctx.ref_text("dL/dq", (i, j)), g[i, j], ("x", (i, m)), ("dL/dq", (i, j)))
             for i in range(ctx.trace.n)])

and adds its symbols with `SYMBOLS["dL/dw_q"] = (r"\\partial L/\\partial W_Q", "dL/dW_Q")` (otherwise the key
itself, escaped, is the symbol). `ctx.sum_of_products` does the elision, the formatting and the fsum.
A user string never reaches sympify or eval here; token text is escaped (`latex_text`).
"""
from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass, replace
from typing import Callable

import numpy as np

from ..math import notation
from ..forward.config import Config
from ..forward.trace import Trace

HEAD_TERMS, TAIL_TERMS = 3, 2        # a long sum shows its first 3 and last 2 terms

# step key -> (LaTeX symbol, plain-text symbol), in the app's one notation (docs/notation.md, notation.py):
# S raw scores, Ŝ scaled, S̃ masked, A weights, C context (one head's, or the heads concatenated), O output.
# A symbol with a subscript is parenthesised before indexing: (W_Q)_{m,j}.
SYMBOLS: dict[str, tuple[str, str]] = {
    "x_embed": (r"X_{\text{emb}}", "X_emb"), "pe": ("PE", "PE"), "x": ("X", "X"),
    "w_q": ("W_Q", "W_Q"), "w_k": ("W_K", "W_K"), "w_v": ("W_V", "W_V"),
    "b_q": ("b_Q", "b_Q"), "b_k": ("b_K", "b_K"), "b_v": ("b_V", "b_V"),
    "q": ("Q", "Q"), "k": ("K", "K"), "v": ("V", "V"),
    "q_heads": ("Q", "Q"), "k_heads": ("K", "K"), "v_heads": ("V", "V"),
    "scores": (notation.S, "S"), "scaled_scores": (notation.S_SCALED, "Ŝ"),
    "masked_scores": (notation.S_MASKED, "S̃"),
    "w_a_q": ("W_1", "W_1"), "w_a_k": ("W_2", "W_2"), "v_a": ("v", "v"), "w_b": ("W", "W"),
    "mask": (notation.M, "M"), "weights": (notation.A, "A"), "context": (notation.C, "C"),
    "concat": (notation.C, "C"), "w_o": ("W_O", "W_O"), "b_o": ("b_O", "b_O"), "output": (notation.O, "O"),
    "q_rot": ("Q^R", "Q^R"), "k_rot": ("K^R", "K^R"), "alibi": ("B", "B"),
    "biased_scores": (r"(\hat S + B)", "(Ŝ+B)"),
}
# Steps with a head axis whose head is written as the notation's subscript h (Q_h, S_h, Ŝ_h, A_h, C_h);
# the score functions' own parameters per head (W_1, W_2, v, W) carry it as a superscript (h) instead.
HEAD_SUBSCRIPT = ("q_heads", "k_heads", "v_heads", "scores", "scaled_scores", "masked_scores", "weights", "context",
                  "q_rot", "k_rot", "alibi", "biased_scores")

def head_symbol(symbol: str, head, latex: bool = True) -> str:
    r"""A step's symbol for head h, the notation's subscript h on each matrix: S_h, and for a sum of two
    matrices each one's, (Ŝ_h + B_h), never (Ŝ + B)_h.

    >>> head_symbol(r"\hat S", 4), head_symbol(r"(\hat S + B)", 4), head_symbol("(Ŝ+B)", 4, latex=False)
    ('\\hat S_{4}', '(\\hat S_{4} + B_{4})', '(Ŝ_4+B_4)')
    """
    sub = (lambda x: f"{x}_{{{head}}}") if latex else (lambda x: f"{x}_{head}")
    if symbol.startswith("(") and symbol.endswith(")") and "+" in symbol:
        sep = " + " if " + " in symbol else "+"
        return "(" + sep.join(sub(x.strip()) for x in symbol[1:-1].split(sep)) + ")"
    return sub(symbol)


def cell_of(symbol: str, sub: str) -> str:
    r"""A matrix symbol indexed, parenthesised only where the subscript would be ambiguous:
    S_{1,2}, (W_Q)_{m,j}, (\hat S_{4} + B_{4})_{2,1}, never ((\hat S_{4} + B_{4}))_{2,1}.

    >>> cell_of("S", "1,2"), cell_of("W_Q", "m,j"), cell_of(r"(\hat S_{4} + B_{4})", "2,1")
    ('S_{1,2}', '(W_Q)_{m,j}', '(\\hat S_{4} + B_{4})_{2,1}')
    """
    if symbol.startswith("(") and symbol.endswith(")"):
        return rf"{symbol}_{{{sub}}}"
    if "_" in symbol and not symbol.startswith("\\"):
        return rf"({symbol})_{{{sub}}}"
    return rf"{symbol}_{{{sub}}}"


_LATEX_ESCAPES = {"\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "$": r"\$", "&": r"\&", "#": r"\#",
                  "^": r"\textasciicircum{}", "_": r"\_", "%": r"\%", "~": r"\textasciitilde{}",
                  "<": r"\textless{}", ">": r"\textgreater{}"}


def latex_text(s: str) -> str:
    r"""Any string as LaTeX text mode: \text{...} with every special character escaped.

    >>> latex_text("don't")
    "\\text{don't}"
    >>> latex_text("a_b{c}")
    '\\text{a\\_b\\{c\\}}'
    """
    s = "".join(_LATEX_ESCAPES.get(c, c) for c in str(s) if c.isprintable())
    return rf"\text{{{s}}}"


def fmt(v: float, precision: int = 3, latex: bool = True) -> str:
    """A number for display: fixed-point with `precision` decimals, scientific when tiny or huge.

    >>> fmt(0.12345), fmt(-2.0), fmt(float("-inf")), fmt(0.00012), fmt(0.00012, latex=False)
    ('0.123', '-2', '-\\\\infty', '1.20 \\\\times 10^{-4}', '1.20e-04')
    """
    v = float(v)
    if math.isnan(v):
        return r"\mathrm{NaN}" if latex else "nan"
    if math.isinf(v):
        return ("-" if v < 0 else "") + (r"\infty" if latex else "inf")
    if v == 0:
        return "0"
    if v == round(v) and abs(v) < 1e6:
        return str(int(v))
    if 10.0 ** -precision <= abs(v) < 1e6:
        return f"{v:.{precision}f}"
    mantissa, exponent = f"{v:.{max(precision - 1, 0)}e}".split("e")
    return rf"{mantissa} \times 10^{{{int(exponent)}}}" if latex else f"{mantissa}e{exponent}"


def exact(v: float) -> str:
    """A setting (the temperature) as typed: up to 10 significant digits, no trailing zeros.

    >>> exact(0.5), exact(2.0), exact(0.123456789)
    ('0.5', '2', '0.123456789')
    """
    return f"{float(v):.10g}"


def elide(items: list, head: int = HEAD_TERMS, tail: int = TAIL_TERMS) -> tuple[list, int]:
    """Keep the first `head` and last `tail` items, with None where the rest were: (kept, n_left_out).

    Nothing is left out unless at least two items would be (hiding one term saves nothing).

    >>> elide(list(range(49)))
    ([0, 1, 2, None, 47, 48], 44)
    >>> elide([1, 2, 3, 4, 5, 6])
    ([1, 2, 3, 4, 5, 6], 0)
    """
    if len(items) <= head + tail + 1:
        return list(items), 0
    return list(items[:head]) + [None] + list(items[-tail:]), len(items) - head - tail


def join_terms(terms: list[str], latex: bool = True, sep: str = " + ") -> tuple[str, int]:
    """'a + b + c + ⋯(44 more)⋯ + y + z': the terms joined, long ones elided; (text, n_left_out)."""
    kept, hidden = elide(terms)
    gap = rf"\underbrace{{\cdots}}_{{\text{{{hidden} more}}}}" if latex else f"… {hidden} more …"
    return sep.join(gap if t is None else t for t in kept), hidden


def softmax_fraction(ctx, exps: list[str], exps_text: list[str], e, j: int, total: float,
                     masked: list[bool] | None = None) -> tuple[str, str, int]:
    """One softmax entry as fractions: e^{s_j − m} / Σ e^{…}, then the exponentials' values, then the total.
    (latex, text, number of denominator terms left out).

    masked[k]: term k is a hidden key's e^{−∞} (default: its LaTeX says −∞). A finite term is never left out
    while the row's finite terms fit (at most HEAD_TERMS + TAIL_TERMS + 1 of them): every one is shown, and a
    run of three or more masked terms is written whole but short, "e^{−∞} + ⋯ + e^{−∞}" under "k masked" (all
    equal, nothing left out). A row with more finite terms keeps its first HEAD_TERMS and last TAIL_TERMS finite
    terms (term j is the numerator); a gap says how many terms it hides, and how many of them are finite and how many masked."""
    n = len(exps)
    masked = [r"-\infty" in x for x in exps] if masked is None else list(masked)
    finite = [k for k in range(n) if not masked[k]]
    if n <= HEAD_TERMS + TAIL_TERMS + 1 or len(finite) <= HEAD_TERMS + TAIL_TERMS + 1:
        shown_finite = set(finite)
    else:
        shown_finite = set(finite[:HEAD_TERMS]) | set(finite[-TAIL_TERMS:])
    values, values_text = [ctx.num(v) for v in e], [ctx.num_text(v) for v in e]
    den, hidden = _denominator(exps, masked, shown_finite, latex=True)
    den_text, _ = _denominator(exps_text, masked, shown_finite, latex=False)
    den_values, _ = _denominator(values, masked, shown_finite, latex=True)
    den_values_text, _ = _denominator(values_text, masked, shown_finite, latex=False)
    shown = (rf"\frac{{{exps[j]}}}{{{den}}} = \frac{{{ctx.num(e[j])}}}{{{den_values}}}"
             rf" = \frac{{{ctx.num(e[j])}}}{{{ctx.num(total)}}}")
    text = (f"{exps_text[j]} / ({den_text}) = {ctx.num_text(e[j])} / ({den_values_text})"
            f" = {ctx.num_text(e[j])} / {ctx.num_text(total)}")
    return shown, text, hidden


def _denominator(terms: list[str], masked: list[bool], shown_finite: set[int], latex: bool) -> tuple[str, int]:
    """softmax_fraction's denominator: (the terms joined with +, the number left out). Runs of masked terms
    between shown ones are written short; runs of left-out terms become one gap that counts them."""
    n, parts, k, hidden = len(terms), [], 0, 0
    while k < n:
        if masked[k]:                                              # a run of masked terms
            end = k
            while end < n and masked[end]:
                end += 1
            if parts and parts[-1][0] == "gap" and end < n and end not in shown_finite:                                         # between two left-out finite terms: one gap
                parts[-1] = ("gap", parts[-1][1], parts[-1][2] + end - k)
            elif end - k <= 2:                                     # one or two: as they are
                parts += [("term", terms[q]) for q in range(k, end)]
            else:
                parts.append(("masked", terms[k], end - k))
            k = end
        elif k in shown_finite:
            parts.append(("term", terms[k]))
            k += 1
        else:                                                      # a left-out finite term
            if parts and parts[-1][0] == "gap":
                parts[-1] = ("gap", parts[-1][1] + 1, parts[-1][2])
            else:
                parts.append(("gap", 1, 0))
            k += 1
    out = []
    for part in parts:
        if part[0] == "term":
            out.append(part[1])
        elif part[0] == "masked":
            term, count = part[1], part[2]
            out.append(rf"\underbrace{{{term} + \cdots + {term}}}_{{\text{{{count} masked}}}}" if latex
                       else f"{term} + … + {term} ({count} masked)")
        else:
            count = part[1] + part[2]
            hidden += count
            label = f"{count} more" + (f": {part[1]} finite, {part[2]} masked" if part[2] else "")
            out.append(rf"\underbrace{{\cdots}}_{{\text{{{label}}}}}" if latex else f"… {label} …")
    return " + ".join(out), hidden


def row_excerpt(items: list[str], keep: int, latex: bool = True) -> tuple[str, int]:
    """A row's entries, comma-separated, entry `keep` boxed; the first 3, the last 2 and `keep` are shown,
    runs of left-out entries become '… k more …'. Returns (text, n_left_out)."""
    n = len(items)
    shown = set(range(n)) if n <= HEAD_TERMS + TAIL_TERMS + 2 else (
        set(range(HEAD_TERMS)) | set(range(n - TAIL_TERMS, n)) | {keep})
    parts, gap = [], 0
    for idx in range(n):
        if idx not in shown:
            gap += 1
            continue
        if gap:
            parts.append(rf"\underbrace{{\cdots}}_{{\text{{{gap} more}}}}" if latex else f"… {gap} more …")
            gap = 0
        item = items[idx]
        parts.append((rf"\boxed{{{item}}}" if latex else f"*{item}*") if idx == keep else item)
    return ", ".join(parts), n - len(shown)


@dataclass(frozen=True)
class Explanation:
    key: str
    cell: tuple[int, ...]
    symbolic: str                    # LaTeX: the cell's formula, indices filled in
    substituted: str                 # LaTeX: the same with the live numbers
    result: str                      # LaTeX: "S_{1,2} = 0.123"
    value: float                     # recomputed from the terms (not read from the stored cell)
    text: str                        # plain text: formula, numbers, result, one per line
    note: str = ""                   # a sentence of why
    n_terms: int = 0                 # terms summed (or listed: an embedding row); 0 for a single number
    n_elided: int = 0                # terms left out of `substituted` and `text`
    reads: tuple[tuple[str, tuple[int, ...]], ...] = ()   # the input cells the value was made from
    independent: bool = True         # False: a leaf read back from the trace (no config to regenerate it)

    @property
    def latex(self) -> str:
        """The three lines as one aligned LaTeX block."""
        return (r"\begin{aligned} " + self.symbolic.replace(" = ", r" &= ", 1) + r" \\ &= " + self.substituted
                + r" \\ &= " + fmt(self.value, 6) + r" \end{aligned}")


# ---- settings the trace was made with ----------------------------------------------------------------

@dataclass(frozen=True)
class Settings:
    n_heads: int
    d_k: int
    d_v: int
    score: str                       # dot | scaled_dot | additive | bilinear
    positional: str                  # sinusoidal | learned | index | none
    pe_base: float
    temperature: float
    exact: bool                      # False when pe_base or temperature had to be read from rounded text
    pe_exact: bool = True            # pe_base exact (from the config, the facts, or the standard 10,000)
    t_exact: bool = True             # temperature exact (from the config or the facts)


def settings_of(trace: Trace, config: Config | None = None) -> Settings:
    """What run_forward was told, from the config if given, else from the trace's steps and facts."""
    config = config if config is not None else trace.facts.get("config")
    f = trace.facts
    if config is not None:
        return Settings(f["n_heads"], f["d_k"], f["d_v"], config.score, config.positional,
                        float(config.pe_base), float(config.temperature), True)
    score = ("additive" if "w_a_q" in trace else "bilinear" if "w_b" in trace
             else "scaled_dot" if "scaled_scores" in trace else "dot")
    pe_exact, t_exact, pe_base, positional = True, True, 10_000.0, "none"
    if "pe" in trace:
        formula = trace["pe"].formula
        positional = "sinusoidal" if r"\sin" in formula else "index" if "PE_p = p" in formula else "learned"
        if positional == "sinusoidal":
            pe_base = float(f.get("pe_base") or re.search(r"\\frac\{p\}\{([0-9.e+]+)\^", formula).group(1))
            pe_exact = "pe_base" in f or pe_base == 10_000.0
    temperature = f.get("temperature")
    if temperature is None:
        temperature, t_exact = temperature_from_weights(trace)
    return Settings(f["n_heads"], f["d_k"], f["d_v"], score, positional, pe_base, float(temperature),
                    pe_exact and t_exact, pe_exact, t_exact)


def temperature_from_weights(trace: Trace) -> tuple[float, bool]:
    """(T, exact). T = 1 when the weights' formula has no division (forward.py omits '/ T' then);
    otherwise T from a row's two most different weights: log A_a − log A_b = (s_a − s_b) / T."""
    if " / " not in trace["weights"].formula:
        return 1.0, True
    s = trace[trace.facts["softmax_input"]].value
    a = trace["weights"].value
    s, a = s.reshape(-1, s.shape[-1]), a.reshape(-1, a.shape[-1])
    best_gap, best_t = 0.0, None
    for s_row, a_row in zip(s, a):
        ok = np.isfinite(s_row) & (a_row > 1e-300)
        if ok.sum() < 2:
            continue
        hi, lo = np.argmax(np.where(ok, s_row, -np.inf)), np.argmin(np.where(ok, s_row, np.inf))
        gap = s_row[hi] - s_row[lo]
        if gap > best_gap and a_row[hi] != a_row[lo]:
            best_gap, best_t = gap, gap / (math.log(a_row[hi]) - math.log(a_row[lo]))
    if best_t is None:                           # every row flat: T does not change any weight
        return float(re.search(r"/ ([0-9.e+-]+)\)", trace["weights"].formula).group(1)), True
    return float(best_t), False


# ---- the context an explainer works in ----------------------------------------------------------------

@dataclass(frozen=True)
class Context:
    trace: Trace
    config: Config | None
    precision: int = 3

    @functools.cached_property
    def settings(self) -> Settings:
        """What run_forward was told (forward traces only)."""
        return settings_of(self.trace, self.config)

    def value(self, key: str) -> np.ndarray:
        return self.trace[key].value

    def num(self, v) -> str:
        return fmt(v, self.precision)

    def num_text(self, v) -> str:
        return fmt(v, self.precision, latex=False)

    def factor(self, v) -> str:
        """A number as a factor in a product: negatives and scientific notation in parentheses."""
        s = self.num(v)
        return f"({s})" if (float(v) < 0 or r"\times" in s) else s

    def factor_text(self, v) -> str:
        s = self.num_text(v)
        return f"({s})" if float(v) < 0 else s

    def symbol(self, key: str) -> tuple[str, str]:
        """(LaTeX, text) of a step's symbol: the trace's own (facts["symbols"]) first, then the notation's."""
        own = self.trace.facts.get("symbols", {}).get(key)
        return own or SYMBOLS.get(key, (latex_text(key), key))

    def kv_head(self, h: int) -> int:
        """The KV head query head h reads: ⌊h / g⌋, g = H / H_kv (h itself without grouped-query attention)."""
        f = self.trace.facts
        return h // (f.get("n_heads", 1) // (f.get("n_kv_heads") or f.get("n_heads", 1)))

    def has_heads(self, key: str) -> bool:
        return key in self.trace and self.trace[key].axes[:1] == ("head",)

    def ref(self, key: str, index: tuple) -> str:
        """LaTeX for one cell: ref('scores', (1, 2, 'j')) -> '(S_{1})_{2,j}' when scores has a head axis
        (head 1, counted from 0, as the notation's S_h); a score parameter per head: '(W_1^{(1)})_{:,a}'."""
        symbol = self.symbol(key)[0]
        index = tuple(index)
        if self.has_heads(key) and len(index) == self.trace[key].value.ndim:
            head, index = index[0], index[1:]
            symbol = head_symbol(symbol, head) if key in HEAD_SUBSCRIPT else f"{symbol}^{{({head})}}"
            sub = ",".join(str(i) for i in index)
            return rf"({symbol})_{{{sub}}}" if not symbol.startswith("(") else cell_of(symbol, sub)
        return cell_of(symbol, ",".join(str(i) for i in index))

    def ref_text(self, key: str, index: tuple) -> str:
        """Plain text for one cell: 'S_1[2,3]' (head 1's S_h), 'W_1^(1)[:,a]' (head 1's W_1)."""
        symbol = self.symbol(key)[1]
        index = tuple(index)
        if self.has_heads(key) and len(index) == self.trace[key].value.ndim:
            head, index = index[0], index[1:]
            symbol = head_symbol(symbol, head, latex=False) if key in HEAD_SUBSCRIPT else f"{symbol}^({head})"
        return f"{symbol}[{','.join(str(i) for i in index)}]"

    def word(self, i: int) -> str:
        return self.trace.tokens[i]

    def leaf(self, key, cell, symbolic, symbolic_text, regenerated, how, how_text, note) -> Explanation:
        """A number nothing in the trace computes: looked up or drawn. `regenerated` is the value
        made again from its source (None: no config, so read back from the trace)."""
        independent = regenerated is not None
        value = float(regenerated) if independent else float(self.value(key)[cell])
        lhs, lhs_text = self.ref(key, cell), self.ref_text(key, cell)
        if not independent:
            note += " (No config given: the number is read back from the trace, not regenerated.)"
        return Explanation(key, cell, f"{lhs} = {symbolic}", how, f"{lhs} = {self.num(value)}", value,
                           f"{lhs_text} = {symbolic_text}\n  = {how_text}\n  = {self.num_text(value)}",
                           note=note, independent=independent)

    def sum_of_products(self, key, cell, rhs, rhs_text, terms, bias=None, divisor=None, note="",
                        extra_reads=()) -> Explanation:
        """value = (Σ a·b (+ bias)) (/ divisor), shown with every factor's live number.

        terms: [(a_latex, a_text, a, b_latex, b_text, b, read_a, read_b)], read_* = (key, cell) or None.
        bias: (latex, text, value, read) or None; divisor: (latex, text, value) or None.
        """
        lhs, lhs_text = self.ref(key, cell), self.ref_text(key, cell)
        products = [float(t[2]) * float(t[5]) for t in terms]
        shown, hidden = join_terms([f"{self.factor(t[2])} \\cdot {self.factor(t[5])}" for t in terms])
        shown_text, _ = join_terms([f"{self.factor_text(t[2])}·{self.factor_text(t[5])}" for t in terms],
                                   latex=False)
        parts = list(products)
        reads = [r for t in terms for r in (t[6], t[7]) if r is not None]
        symbolic, symbolic_text = rhs, rhs_text
        if bias is not None:
            parts.append(float(bias[2]))
            shown, shown_text = f"{shown} + {self.factor(bias[2])}", f"{shown_text} + {self.factor_text(bias[2])}"
            symbolic, symbolic_text = f"{rhs} + {bias[0]}", f"{rhs_text} + {bias[1]}"
            reads.append(bias[3])
        value = math.fsum(parts)
        if divisor is not None:
            value = value / float(divisor[2])
            shown = rf"\frac{{{shown}}}{{{divisor[0]}}}"
            shown_text = f"({shown_text}) / {divisor[1]}"
        result = f"{lhs} = {self.num(value)}"
        text = f"{lhs_text} = {symbolic_text}\n  = {shown_text}\n  = {self.num_text(value)}"
        return Explanation(key, cell, f"{lhs} = {symbolic}", shown, result, value, text, note=note,
                           n_terms=len(terms), n_elided=hidden, reads=tuple(reads) + tuple(extra_reads))


# ---- the registry -------------------------------------------------------------------------------------

Explainer = Callable[[Context, tuple], Explanation]
EXPLAINERS: dict[tuple[str, str], Explainer] = {}        # (trace kind, step key) -> explainer
CONDITIONS: dict[tuple[str, str], Callable[[Trace], bool]] = {}   # (kind, key) -> when it applies (absent: always)


def trace_kind(trace: Trace) -> str:
    """facts['kind'] if set ('forward' for run_forward), 'classifier' if its facts name the classes, else 'other'."""
    return trace.facts.get("kind") or ("classifier" if "classes" in trace.facts else "other")


def register(*keys: str, kind: str = "forward", when: Callable[[Trace], bool] | None = None):
    """Decorator: fn(ctx, cell) -> Explanation explains the cells of the steps named `keys` in traces
    of this kind ("*": any trace), and only those where `when(trace)` holds, if given (e.g. the
    facts the explainer reads are there)."""
    def decorate(fn: Explainer) -> Explainer:
        for key in keys:
            EXPLAINERS[(kind, key)] = fn
            if when is None:
                CONDITIONS.pop((kind, key), None)
            else:
                CONDITIONS[(kind, key)] = when
        return fn
    return decorate


def explainer_for(trace: Trace, key: str) -> Explainer | None:
    for kind in (trace_kind(trace), "*"):
        fn = EXPLAINERS.get((kind, key))
        if fn is not None and CONDITIONS.get((kind, key), lambda _: True)(trace):
            return fn
    return None


def can_explain(trace: Trace, key: str) -> bool:
    return key in trace and explainer_for(trace, key) is not None


def explain(trace: Trace, key: str, cell, precision: int = 3, config: Config | None = None) -> Explanation:
    """How trace[key].value[cell] was made, with the live values substituted.

    cell: a tuple of indices (an int for a 1-d step). Raises KeyError for a step the trace
    lacks or no explainer covers, IndexError for a cell outside the step.
    """
    if key not in trace:
        raise KeyError(f"the trace has no step {key!r}")
    fn = explainer_for(trace, key)
    if fn is None:
        raise KeyError(f"no explainer is registered for step {key!r} of a {trace_kind(trace)} trace")
    shape = trace[key].shape
    cell = (cell,) if isinstance(cell, (int, np.integer)) else tuple(cell)
    if len(cell) != len(shape) or not all(isinstance(c, (int, np.integer)) and 0 <= c < s
                                          for c, s in zip(cell, shape)):
        raise IndexError(f"cell {cell} is outside step {key!r} of shape {shape}")
    cell = tuple(int(c) for c in cell)
    config = config if config is not None else trace.facts.get("config")
    return fn(Context(trace, config, int(precision)), cell)


# ---- leaves: embeddings, positions, parameters -------------------------------------------------------

@functools.lru_cache(maxsize=4)
def _vocabulary(config: Config):
    from ..math.embeddings import vocabulary_for
    return vocabulary_for(config)


@register("x_embed")
def _x_embed(ctx: Context, cell):
    i, m = cell
    word = ctx.word(i)
    row = ctx.value("x_embed")[i]                                         # (d_embed,)
    d = row.shape[0]
    regenerated, source = None, ctx.trace.facts.get("source", "the table")
    if ctx.config is not None:
        from ..math.embeddings import random_vector
        vocab = _vocabulary(ctx.config)
        if vocab is None:
            regenerated = random_vector(word, ctx.config.d_model, ctx.config.seed)[m]
        else:
            regenerated = (vocab.vector(word) if word in vocab else vocab.unk)[m]
    shown, hidden = row_excerpt([ctx.num(x) for x in row], m, latex=True)
    shown_text, _ = row_excerpt([ctx.num_text(x) for x in row], m, latex=False)
    how = rf"\left[{shown}\right]_{{{m}}}"
    table = source if source.startswith("your vectors") else f"the {source} table"
    if word in ctx.trace.facts.get("unknown", ()):
        whose = f"“<unk>”: “{word}” is not in the vocabulary, so it gets the mean of every row of {table}"
    elif source.startswith("seeded random"):
        whose = f"“{word}”: drawn from N(0, 1), seeded by the word, the width and the sidebar's seed"
    else:
        whose = f"“{word}”: its row in {table}"
    note = f"Row {i} of X_emb is the vector of {whose}; column {m} of {d} (boxed)."
    e = ctx.leaf("x_embed", cell, rf"e\left({latex_text(word)}\right)_{{{m}}}", f"e('{word}')[{m}]",
                 regenerated, how, f"[{shown_text}][{m}]", note)
    return replace(e, n_terms=d, n_elided=hidden)


@register("pe")
def _pe(ctx: Context, cell):
    p, j = cell
    d = ctx.trace["pe"].shape[1]
    s = ctx.settings
    if s.positional == "index":
        return Explanation("pe", cell, f"PE_{{{p},{j}}} = p", f"{p}", f"PE_{{{p},{j}}} = {p}", float(p),
                           f"PE[{p},{j}] = p\n  = {p}\n  = {p}", note=f"The position index itself: token {p} gets {p}.")
    if s.positional == "learned":
        regenerated = None
        if ctx.config is not None:
            from ..math.positional import learned_encoding
            regenerated = learned_encoding(ctx.trace.n, d, ctx.config.seed)[p, j]
        return ctx.leaf("pe", cell, rf"P_{{{p},{j}}} \sim \mathcal{{N}}(0, 0.1^2)", f"P[{p},{j}] ~ N(0, 0.1²)",
                        regenerated, ctx.num(ctx.value("pe")[p, j]), ctx.num_text(ctx.value("pe")[p, j]),
                        "A learned position table, shown at its seeded random start.")
    pair = j // 2
    angle = p / np.power(float(s.pe_base), 2.0 * pair / d)
    trig, value = ("sin", math.sin(angle)) if j % 2 == 0 else ("cos", math.cos(angle))
    base = fmt(s.pe_base, 6)
    symbolic = (rf"PE_{{{p},{j}}} = \{trig}\!\left(\frac{{p}}{{b^{{2i/d}}}}\right),\ p={p},"
                rf"\ i=\lfloor {j}/2 \rfloor={pair},\ d={d},\ b={base}")
    substituted = rf"\{trig}\!\left(\frac{{{p}}}{{{base}^{{{2 * pair}/{d}}}}}\right) = \{trig}({ctx.num(angle)})"
    text = (f"PE[{p},{j}] = {trig}(p / b^(2i/d)), p={p}, i={pair}, d={d}, b={fmt(s.pe_base, 6, False)}\n"
            f"  = {trig}({p} / {fmt(s.pe_base, 6, False)}^({2 * pair}/{d})) = {trig}({ctx.num_text(angle)})\n"
            f"  = {ctx.num_text(value)}")
    note = (f"Column {j} is the {'sine' if trig == 'sin' else 'cosine'} of pair {pair}; the angle "
            f"{fmt(angle, ctx.precision, False)} rad is position {p} over the pair's wavelength scale."
            + (f" The width d = {d} is odd: this last sine has no cosine beside it." if d % 2 and j == d - 1 else ""))
    if not s.pe_exact:
        note += " (No config given: the base b was read from the formula, where it is rounded.)"
    return Explanation("pe", cell, symbolic, substituted, f"PE_{{{p},{j}}} = {ctx.num(value)}", value, text,
                       note=note, independent=s.pe_exact)


PARAMETER_FAN_IN = {"w_q": "d_model", "w_k": "d_model", "w_v": "d_model", "w_a_q": "d_k", "w_a_k": "d_k",
                    "v_a": "d_k", "w_b": "d_k", "w_o": "H·d_v"}
BIASES = ("b_q", "b_k", "b_v", "b_o")


def _parameter_explainer(key: str) -> Explainer:
    """A learned parameter at its seeded start: weights z/√fan_in, biases 0.1·z, z ~ N(0, 1) drawn from
    the parameter's own generator (seed, crc32(name))."""
    def explain_parameter(ctx: Context, cell):
        from ..forward.weights import param_rng
        shape = ctx.trace[key].shape
        f = ctx.trace.facts
        if key in BIASES:
            scale, scale_tex, scale_text = 0.1, "0.1", "0.1"
            law, law_text = r"\mathcal{N}(0,\ 0.1^2)", "N(0, 0.1²)"
        else:
            fan_in = {"d_model": f["d_model"], "d_k": f["d_k"], "H·d_v": f["n_heads"] * f["d_v"]}[PARAMETER_FAN_IN[key]]
            scale, scale_tex, scale_text = 1 / math.sqrt(fan_in), rf"\frac{{1}}{{\sqrt{{{fan_in}}}}}", f"1/√{fan_in}"
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
                                + ("0" if key in BIASES else f"its seeded init {law_text}")
                                + "): no formula makes it.")
            return ctx.leaf(key, cell, rf"\text{{learned; init }} {law}", f"learned; init {law_text}", None,
                            ctx.num(ctx.value(key)[cell]), ctx.num_text(ctx.value(key)[cell]), note)
        z = float(param_rng(ctx.config.seed, key).standard_normal(shape)[cell])
        value = z / math.sqrt(fan_in) if key not in BIASES else 0.1 * z
        if ctx.config.weights == "trained" and key in TRAINED:
            return _trained_parameter(ctx, key, cell, 0.0 if key in BIASES else value, law_text)
        where = f"z = draw {int(np.ravel_multi_index(cell, shape))} of generator (seed {ctx.config.seed}, crc32('{key}'))"
        return Explanation(key, cell, symbolic, rf"{ctx.factor(z)} \cdot {scale_tex}", f"{lhs} = {ctx.num(value)}",
                           value, f"{lhs_text} = z·{scale_text}, z ~ N(0, 1)\n  = {ctx.factor_text(z)}·{scale_text}"
                                  f"   ({where})\n  = {ctx.num_text(value)}", note=note + f" {where}.")
    return explain_parameter


TRAINED = ("w_q", "w_k", "w_v", "b_q", "b_k", "b_v")      # under weights="trained" (pretrained.py)


def _trained_parameter(ctx: Context, key: str, cell, start: float, law_text: str) -> Explanation:
    """A trained weight: looked up in the trained matrices, with where training started from."""
    from ..forward.weights import trained_weights
    t = trained_weights(ctx.config)
    value = float(t.params[key][cell])
    begin = f"seeded init {law_text}" if key not in BIASES else "biases start at 0 for training"
    note = (f"Learned parameter, trained: no formula makes it. It started at {ctx.num_text(start)} ({begin}); "
            f"{t.epochs} epochs of SGD on {t.n_sentences} sentiment sentences moved it by {ctx.num_text(value - start)}.")
    return ctx.leaf(key, cell, r"\text{trained}", "trained", value, ctx.num(value), ctx.num_text(value), note)


for _key in (*PARAMETER_FAN_IN, *BIASES):
    register(_key)(_parameter_explainer(_key))


# ---- X = embeddings + positions ------------------------------------------------------------------------

@register("x")
def _x(ctx: Context, cell):
    i, j = cell
    d_embed = ctx.trace["x_embed"].shape[1]
    e = ctx.value("x_embed")
    lhs, lhs_text = ctx.ref("x", cell), ctx.ref_text("x", cell)
    if "pe" not in ctx.trace:
        value = float(e[i, j])
        return Explanation("x", cell, f"{lhs} = {ctx.ref('x_embed', cell)}", ctx.num(value),
                           f"{lhs} = {ctx.num(value)}", value,
                           f"{lhs_text} = {ctx.ref_text('x_embed', cell)}\n  = {ctx.ref_text('x_embed', cell)} "
                           f"(no positional encoding)\n  = {ctx.num_text(value)}",
                           note="No positional encoding: X is the embeddings.", reads=(("x_embed", cell),))
    pe = ctx.value("pe")
    if ctx.trace["x"].shape[1] == d_embed:                                   # added
        a, b = float(e[i, j]), float(pe[i, j])
        value = a + b
        return Explanation("x", cell, f"{lhs} = {ctx.ref('x_embed', cell)} + {ctx.ref('pe', cell)}",
                           f"{ctx.num(a)} + {ctx.factor(b)}", f"{lhs} = {ctx.num(value)}", value,
                           f"{lhs_text} = {ctx.ref_text('x_embed', cell)} + {ctx.ref_text('pe', cell)}\n"
                           f"  = {ctx.num_text(a)} + {ctx.factor_text(b)}\n  = {ctx.num_text(value)}",
                           note="The position vector is added to the word vector, element by element.",
                           reads=(("x_embed", cell), ("pe", cell)))
    src, c = ("x_embed", j) if j < d_embed else ("pe", j - d_embed)           # concatenated
    value = float(ctx.value(src)[i, c])
    part = ("the word's embedding" if src == "x_embed" else
            "the position feature (the index p itself)" if ctx.settings.positional == "index" else "the position encoding")
    return Explanation("x", cell, f"{lhs} = {ctx.ref(src, (i, c))}", ctx.num(value), f"{lhs} = {ctx.num(value)}",
                       value, f"{lhs_text} = {ctx.ref_text(src, (i, c))}\n  = column {c} of {SYMBOLS[src][1]}, "
                              f"row {i}\n  = {ctx.num_text(value)}",
                       note=f"X = [X_emb | PE]: column {j} is column {c} of {part} (the first {d_embed} columns "
                            f"are the embedding).", reads=((src, (i, c)),))


# ---- projections and heads -----------------------------------------------------------------------------

def _projection_explainer(key: str) -> Explainer:
    """Q, K or V: row i of X times column j of W (+ b_j)."""
    def explain_projection(ctx: Context, cell):
        i, j = cell
        b_key = f"b_{key}" if f"b_{key}" in ctx.trace else None
        return _project(ctx, key, cell, "x", f"w_{key}", b_key,
                        f"Row {i} (“{ctx.word(i)}”) of X times column {j} of W_{key.upper()}"
                        + (f", plus bias b_{key.upper()}[{j}]." if b_key else "."))
    return explain_projection


def _project(ctx: Context, key, cell, x_key, w_key, b_key, note) -> Explanation:
    """out[i, j] = Σ_m x[i, m] w[m, j] (+ b[j])."""
    i, j = cell
    x, w = ctx.value(x_key), ctx.value(w_key)
    terms = [(ctx.ref(x_key, (i, m)), ctx.ref_text(x_key, (i, m)), x[i, m],
              ctx.ref(w_key, (m, j)), ctx.ref_text(w_key, (m, j)), w[m, j], (x_key, (i, m)), (w_key, (m, j)))
             for m in range(x.shape[1])]
    d = x.shape[1] - 1
    rhs = rf"\sum_{{m=0}}^{{{d}}} {ctx.ref(x_key, (i, 'm'))}\, {ctx.ref(w_key, ('m', j))}"
    rhs_text = f"Σ_m {ctx.ref_text(x_key, (i, 'm'))}·{ctx.ref_text(w_key, ('m', j))}"
    bias = None
    if b_key is not None:
        bias = (ctx.ref(b_key, (j,)), ctx.ref_text(b_key, (j,)), ctx.value(b_key)[j], (b_key, (j,)))
    return ctx.sum_of_products(key, cell, rhs, rhs_text, terms, bias=bias, note=note)


def _head_split_explainer(key: str) -> Explainer:
    return lambda ctx, cell: _head_split(ctx, key, cell)


def _head_split(ctx: Context, key: str, cell):
    """Q_h[i, m] = Q[i, h·d_k + m]: head h (counted from 0) takes its own block of d_k columns of Q."""
    h, i, m = cell
    src = key.split("_")[0]
    width = ctx.trace[key].shape[2]
    col = h * width + m
    value = float(ctx.value(src)[i, col])
    lhs, lhs_text = ctx.ref(key, cell), ctx.ref_text(key, cell)
    d_name = "d_v" if src == "v" else "d_k"
    big = src.upper()
    return Explanation(key, cell, rf"{lhs} = {big}_{{{i},\, {h} \cdot {d_name} + {m}}}",
                       rf"{big}_{{{i},\, {h} \cdot {width} + {m}}} = {ctx.ref(src, (i, col))}",
                       f"{lhs} = {ctx.num(value)}", value,
                       f"{lhs_text} = {big}[{i}, {h}·{d_name} + {m}]\n  = {big}[{i}, {h}·{width} + {m}] = "
                       f"{ctx.ref_text(src, (i, col))}\n  = {ctx.num_text(value)}",
                       note=f"Head {h} (heads counted from 0) owns columns {h * width}…{(h + 1) * width - 1} of "
                            f"{big}; its column {m} is column {col} of {big}.", reads=((src, (i, col)),))


# ---- scores --------------------------------------------------------------------------------------------

def _qk(ctx: Context) -> tuple[str, str]:
    """The query and key steps the scores read: rotated by RoPE if the trace has them, per head with heads."""
    if "q_rot" in ctx.trace:
        return "q_rot", "k_rot"
    return ("q_heads", "k_heads") if ctx.settings.n_heads > 1 else ("q", "k")


def _rows(ctx: Context, key: str, cell) -> tuple[tuple, tuple, int, int]:
    """(query index prefix, key index prefix, i, j) for a (head?, i, j) cell of a score-shaped step."""
    if len(cell) == 3:
        h, i, j = cell
        return (h, i), (ctx.kv_head(h), j), i, j          # query head h reads KV head ⌊h/g⌋
    i, j = cell
    return (i,), (j,), i, j


def _dot_terms(ctx: Context, cell):
    q_key, k_key = _qk(ctx)
    qi, kj, i, j = _rows(ctx, "scores", cell)
    q, k = ctx.value(q_key)[qi], ctx.value(k_key)[kj]                      # (d_k,), (d_k,)
    terms = [(ctx.ref(q_key, (*qi, m)), ctx.ref_text(q_key, (*qi, m)), q[m],
              ctx.ref(k_key, (*kj, m)), ctx.ref_text(k_key, (*kj, m)), k[m], (q_key, (*qi, m)), (k_key, (*kj, m)))
             for m in range(q.shape[0])]
    rhs = rf"\sum_{{m=0}}^{{{q.shape[0] - 1}}} {ctx.ref(q_key, (*qi, 'm'))}\, {ctx.ref(k_key, (*kj, 'm'))}"
    rhs_text = f"Σ_m {ctx.ref_text(q_key, (*qi, 'm'))}·{ctx.ref_text(k_key, (*kj, 'm'))}"
    return terms, rhs, rhs_text, i, j


def _pair_note(ctx: Context, i: int, j: int) -> str:
    return f"Query {i} (“{ctx.word(i)}”) against key {j} (“{ctx.word(j)}”)."


DOT_NOTE = (" A dot product: positive when the two point less than 90° apart, negative when more, and the "
            "further from 0 the longer they are.")


@register("scores")
def _scores(ctx: Context, cell):
    score = ctx.settings.score
    if score in ("dot", "scaled_dot"):
        terms, rhs, rhs_text, i, j = _dot_terms(ctx, cell)
        raw = (f" These are the raw scores S; the next step divides them by √d_k (Ŝ)." if score == "scaled_dot"
               else "")
        return ctx.sum_of_products("scores", cell, rhs, rhs_text, terms, note=_pair_note(ctx, i, j) + DOT_NOTE + raw)
    return (_additive if score == "additive" else _bilinear)(ctx, cell)


def spread(values) -> float:
    """Standard deviation of the finite entries (0 for fewer than two)."""
    v = np.asarray(values, dtype=np.float64).ravel()
    v = v[np.isfinite(v)]
    return float(np.std(v)) if v.size > 1 else 0.0


@register("scaled_scores")
def _scaled_scores(ctx: Context, cell):
    """Ŝ_ij = S_ij / √d_k = (Σ_m q_{i,m} k_{j,m}) / √d_k."""
    from ..forward.claims import say
    terms, rhs, rhs_text, i, j = _dot_terms(ctx, cell)
    d_k = ctx.settings.d_k
    q_key, k_key = _qk(ctx)
    hp = cell[:-2]
    raw, raw_text = ctx.ref("scores", cell), ctx.ref_text("scores", cell)
    sym = SYMBOLS["scaled_scores"][1]
    settings = ctx.config if ctx.config is not None else Config(score="scaled_dot")   # a scaled_scores step: scaled dot
    why = [say("scaling_stops_growth", settings), say("scaling_unit_spread", settings)]
    measured = (f"Here the entries of {SYMBOLS[q_key][1]}{'_' + str(hp[0]) if hp else ''} and "
                f"{SYMBOLS[k_key][1]}{'_' + str(ctx.kv_head(hp[0])) if hp else ''} have standard deviations "
                f"{fmt(spread(ctx.value(q_key)[hp]), 2, False)} and "
                f"{fmt(spread(ctx.value(k_key)[tuple(ctx.kv_head(h) for h in hp)]), 2, False)}, "
                f"and row {i} of {sym}{'_' + str(hp[0]) if hp else ''} has standard deviation "
                f"{fmt(spread(ctx.value('scaled_scores')[(*hp, i)]), 2, False)}.")
    note = (_pair_note(ctx, i, j) + f" The raw score {raw_text} divided by √d_k = √{d_k} = "
            f"{fmt(math.sqrt(d_k), ctx.precision, False)}: {why[0]}. For scale: {why[1]}. {measured}")
    return ctx.sum_of_products(
        "scaled_scores", cell, rf"\frac{{{raw}}}{{\sqrt{{d_k}}}} = \frac{{{rhs}}}{{\sqrt{{d_k}}}}",
        f"{raw_text} / √d_k = ({rhs_text}) / √d_k", terms,
        divisor=(rf"\sqrt{{{d_k}}}", f"√{d_k}", math.sqrt(d_k)), note=note, extra_reads=())


def _additive(ctx: Context, cell):
    """S_ij = vᵀ tanh(W_1ᵀ q_i + W_2ᵀ k_j) = Σ_a v_a tanh((q_i W_1)_a + (k_j W_2)_a), q_i, k_j rows of Q_h, K_h."""
    q_key, k_key = _qk(ctx)
    qi, kj, i, j = _rows(ctx, "scores", cell)
    hp = qi[:-1]                                                           # (h,) or ()
    q, k = ctx.value(q_key)[qi], ctx.value(k_key)[kj]                      # (d_k,)
    w_1, w_2, v_a = ctx.value("w_a_q")[hp], ctx.value("w_a_k")[hp], ctx.value("v_a")[hp]
    d_k, d_a = w_1.shape
    u = [math.fsum(q[m] * w_1[m, a] for m in range(d_k)) for a in range(d_a)]    # (q_i W_1)_a
    r = [math.fsum(k[m] * w_2[m, a] for m in range(d_k)) for a in range(d_a)]    # (k_j W_2)_a
    hidden = [math.tanh(u[a] + r[a]) for a in range(d_a)]
    value = math.fsum(v_a[a] * hidden[a] for a in range(d_a))
    lhs, lhs_text = ctx.ref("scores", cell), ctx.ref_text("scores", cell)
    qa, ka = ctx.ref(q_key, (*qi, ":")), ctx.ref(k_key, (*kj, ":"))
    w1, w2, v = ctx.ref("w_a_q", (*hp, ":", "a")), ctx.ref("w_a_k", (*hp, ":", "a")), ctx.ref("v_a", (*hp, "a"))
    symbolic = (rf"{lhs} = \sum_{{a=0}}^{{{d_a - 1}}} {v} \tanh\!\big({qa} \cdot {w1} + {ka} \cdot {w2}\big)")
    shown, hidden_n = join_terms([rf"{ctx.factor(v_a[a])} \tanh({ctx.num(u[a])} + {ctx.factor(r[a])})"
                                  for a in range(d_a)])
    shown_text, _ = join_terms([f"{ctx.factor_text(v_a[a])}·tanh({ctx.num_text(u[a])} + {ctx.factor_text(r[a])})"
                                for a in range(d_a)], latex=False)
    reads = [("v_a", (*hp, a)) for a in range(d_a)] + [(q_key, (*qi, m)) for m in range(d_k)] + \
            [(k_key, (*kj, m)) for m in range(d_k)]
    text = (f"{lhs_text} = Σ_a {ctx.ref_text('v_a', (*hp, 'a'))}·tanh({ctx.ref_text(q_key, (*qi, ':'))}·"
            f"{ctx.ref_text('w_a_q', (*hp, ':', 'a'))} + {ctx.ref_text(k_key, (*kj, ':'))}·"
            f"{ctx.ref_text('w_a_k', (*hp, ':', 'a'))})\n  = {shown_text}\n"
            f"  = {ctx.num_text(value)}")
    return Explanation("scores", cell, symbolic, shown, f"{lhs} = {ctx.num(value)}", value, text,
                       note=_pair_note(ctx, i, j) + " Additive (Bahdanau): a small network scores the pair; "
                            "inside each tanh, the query's part plus the key's part"
                            + (f" (head {hp[0]}'s own W_1, W_2 and v)." if hp else "."),
                       n_terms=d_a, n_elided=hidden_n, reads=tuple(reads))


def _bilinear(ctx: Context, cell):
    """S_ij = q_i W k_jᵀ = Σ_m q_{i,m} (W k_jᵀ)_m, q_i, k_j rows of Q_h, K_h."""
    q_key, k_key = _qk(ctx)
    qi, kj, i, j = _rows(ctx, "scores", cell)
    hp = qi[:-1]
    q, k, w = ctx.value(q_key)[qi], ctx.value(k_key)[kj], ctx.value("w_b")[hp]    # (d_k,), (d_k,), (d_k, d_k)
    d_k = q.shape[0]
    u = [math.fsum(w[m, l] * k[l] for l in range(d_k)) for m in range(d_k)]       # (W k_jᵀ)_m
    value = math.fsum(q[m] * w[m, l] * k[l] for m in range(d_k) for l in range(d_k))
    lhs, lhs_text = ctx.ref("scores", cell), ctx.ref_text("scores", cell)
    symbolic = (rf"{lhs} = \sum_{{m=0}}^{{{d_k - 1}}} {ctx.ref(q_key, (*qi, 'm'))} \sum_{{l=0}}^{{{d_k - 1}}} "
                rf"{ctx.ref('w_b', (*hp, 'm', 'l'))}\, {ctx.ref(k_key, (*kj, 'l'))}")
    shown, hidden_n = join_terms([f"{ctx.factor(q[m])} \\cdot {ctx.factor(u[m])}" for m in range(d_k)])
    shown_text, _ = join_terms([f"{ctx.factor_text(q[m])}·{ctx.factor_text(u[m])}" for m in range(d_k)],
                               latex=False)
    reads = [(q_key, (*qi, m)) for m in range(d_k)] + [(k_key, (*kj, m)) for m in range(d_k)]
    text = (f"{lhs_text} = Σ_m {ctx.ref_text(q_key, (*qi, 'm'))}·u_m, u_m = Σ_l "
            f"{ctx.ref_text('w_b', (*hp, 'm', 'l'))}·{ctx.ref_text(k_key, (*kj, 'l'))}\n  = {shown_text}\n"
            f"  = {ctx.num_text(value)}")
    return Explanation("scores", cell, symbolic, shown, f"{lhs} = {ctx.num(value)}", value, text,
                       note=_pair_note(ctx, i, j) + f" Bilinear (Luong's general): term m is {ctx.ref_text(q_key, (*qi, 'm'))} "
                            f"times u_m = ({ctx.symbol('w_b')[1]}{f'^({hp[0]})' if hp else ''} k_{j}ᵀ)_m, the key "
                            f"first mixed by the learned matrix {ctx.symbol('w_b')[1]}"
                            + (f"^({hp[0]}) (head {hp[0]}'s own)." if hp else "."),
                       n_terms=d_k, n_elided=hidden_n, reads=tuple(reads))


# ---- mask, softmax -------------------------------------------------------------------------------------

def _mask_rule(ctx: Context, i: int, j: int) -> tuple[float | None, str]:
    """(M_ij from the rule, the rule in words); None when there is no config to say which rule."""
    if ctx.config is None:
        return None, "as given"
    if ctx.config.mask == "causal":
        return float(j <= i), f"causal: key {j} {'≤' if j <= i else '>'} query {i}"
    if ctx.config.mask == "sliding_window":
        w = ctx.config.window
        ok = 0 <= i - j < w
        return float(ok), f"sliding window: 0 ≤ i − j = {i - j} < W = {w}: {'yes' if ok else 'no'}"
    hidden = j in ctx.config.padding
    return float(not hidden), f"padding: key {j} is {'' if hidden else 'not '}a padding position"


@register("mask")
def _mask(ctx: Context, cell):
    i, j = cell
    regenerated, rule = _mask_rule(ctx, i, j)
    stored = ctx.value("mask")[cell]
    return ctx.leaf("mask", cell, rf"[\text{{query }} {i} \text{{ may see key }} {j}]",
                    f"1 if query {i} may see key {j} else 0",
                    regenerated, latex_text(rule), rule,
                    f"M = 1: query {i} (“{ctx.word(i)}”) may attend to key {j} (“{ctx.word(j)}”); M = 0: "
                    f"hidden. Here {'visible' if stored else 'hidden'}.")


@register("masked_scores")
def _masked_scores(ctx: Context, cell):
    src = ctx.trace["masked_scores"].inputs[0]
    i, j = cell[-2:]
    m = float(ctx.value("mask")[i, j])
    s = float(ctx.value(src)[cell])
    value = s if m == 1 else -math.inf
    lhs, lhs_text = ctx.ref("masked_scores", cell), ctx.ref_text("masked_scores", cell)
    sym = (rf"{lhs} = \begin{{cases}} {ctx.ref(src, cell)} & M_{{{i},{j}}} = 1 \\ -\infty & M_{{{i},{j}}} = 0 "
           rf"\end{{cases}}")
    shown = rf"M_{{{i},{j}}} = {int(m)} \Rightarrow " + (ctx.num(s) if m == 1 else r"-\infty")
    text = (f"{lhs_text} = {ctx.ref_text(src, cell)} if M[{i},{j}] = 1 else -inf\n"
            f"  = M[{i},{j}] = {int(m)} → {ctx.num_text(value)}\n  = {ctx.num_text(value)}")
    note = ("Visible: the score passes through." if m == 1 else
            "Hidden: −∞, so exp(−∞) = 0 and the softmax gives this key weight exactly 0.")
    if len(cell) == 3:
        note += f" Every head uses the same mask M; this is head {cell[0]}."
    return Explanation("masked_scores", cell, sym, shown, f"{lhs} = {ctx.num(value)}", value, text, note=note,
                       reads=(("mask", (i, j)), (src, cell)))


@register("weights")
def _weights(ctx: Context, cell):
    """A_ij = exp(z_j − μ) / Σ_j' exp(z_j' − μ), z = (row i of the scores softmax reads) / T, μ = max_j' z_j'."""
    src = ctx.trace.facts.get("softmax_input") or ctx.trace["weights"].inputs[0]
    row_index, j = cell[:-1], cell[-1]
    s = [float(v) for v in ctx.value(src)[row_index]]                     # (n_k,)
    t = ctx.settings.temperature
    z = [v / t for v in s]
    finite = [v for v in z if math.isfinite(v)]
    top = max(finite) if finite else 0.0                                  # softmax() uses 0 for a row of −∞
    e = [math.exp(v - top) for v in z]
    total = math.fsum(e)
    value = e[j] / total if total > 0 else 0.0
    lhs, lhs_text = ctx.ref("weights", cell), ctx.ref_text("weights", cell)
    srow = ctx.ref(src, (*row_index, "j'"))
    z_sym = srow if t == 1 else f"{srow}/T"
    n_k = len(s)
    symbolic = (rf"{lhs} = \frac{{\exp({ctx.ref(src, cell)}{'' if t == 1 else '/T'} - \mu)}}"
                rf"{{\sum_{{j'=0}}^{{{n_k - 1}}} \exp({z_sym} - \mu)}},\quad \mu = \max_{{j'}} {z_sym}"
                + ("" if t == 1 else rf",\ T = {exact(t)}"))
    tt = "" if t == 1 else f"/{exact(t)}"
    exps = [(r"e^{-\infty}" if math.isinf(v) else rf"e^{{{ctx.num(v)}{tt} - {ctx.factor(top)}}}") for v in s]
    exps_text = [("exp(-inf)" if math.isinf(v) else f"exp({ctx.num_text(v)}{tt} - {ctx.factor_text(top)})") for v in s]
    if total > 0:
        shown, shown_text, hidden = softmax_fraction(ctx, exps, exps_text, e, j, total)
    else:                                                                 # 0/0 is undefined: no fraction to show
        shown, shown_text, hidden = r"\text{no visible key: the row is set to } 0", "no visible key: the row is set to 0", 0
    row_text = ctx.ref_text(src, (*row_index, "j'"))
    text = (f"{lhs_text} = exp({ctx.ref_text(src, cell)}{'' if t == 1 else '/T'} - μ) / Σ_j' exp({row_text}"
            f"{'' if t == 1 else '/T'} - μ), μ = max_j' {row_text}{'' if t == 1 else '/T'}"
            f"{'' if t == 1 else f', T = {exact(t)}'}\n"
            f"  = {shown_text}\n  = {ctx.num_text(value)}")
    if total == 0:
        note = (f"Every key is hidden for query {cell[-2]}: softmax would divide 0 by 0, which is undefined, so the app "
                "sets such a row to all zeros (no NaN).")
    else:
        hidden_keys = sum(math.isinf(v) for v in s)
        whose = f"head {cell[0]}'s weights" if len(cell) == 3 else "the weights"
        note = (f"Row {cell[-2]} of {whose} is a softmax over the {n_k} keys"
                + (f" ({hidden_keys} of them hidden: weight 0)" if hidden_keys else "")
                + f"; subtracting the row maximum μ = {fmt(top, ctx.precision, False)} keeps exp from overflowing "
                  "and changes nothing."
                + (f" Temperature T = {exact(t)} divides every score first." if t != 1 else ""))
    if not ctx.settings.t_exact:
        note += " (No config given: T was estimated from the scores and the weights themselves.)"
    return Explanation("weights", cell, symbolic, shown, f"{lhs} = {ctx.num(value)}", value, text, note=note,
                       n_terms=n_k, n_elided=hidden, reads=tuple((src, (*row_index, jj)) for jj in range(n_k)),
                       independent=ctx.settings.t_exact)


# ---- context, heads merged, output ---------------------------------------------------------------------

def _ties(values, top: int) -> list[int]:
    """The indices whose value equals values[top] (to 1e-12, relative)."""
    return [j for j, v in enumerate(values) if abs(v - values[top]) <= 1e-12 * max(1.0, abs(values[top]))]


@register("context")
def _context(ctx: Context, cell):
    """C_{i,m} = Σ_j A_{i,j} V_{j,m}: key j, dimension m (per head h: C_h = A_h V_h)."""
    v_key = "v_heads" if ctx.settings.n_heads > 1 else "v"
    *hp, i, m = cell
    hp = tuple(hp)
    vp = tuple(ctx.kv_head(h) for h in hp)                                 # KV head ⌊h/g⌋ with grouped-query attention
    a, v = ctx.value("weights")[(*hp, i)], ctx.value(v_key)[vp]             # (n_k,), (n_k, d_v)
    terms = [(ctx.ref("weights", (*hp, i, j)), ctx.ref_text("weights", (*hp, i, j)), a[j],
              ctx.ref(v_key, (*vp, j, m)), ctx.ref_text(v_key, (*vp, j, m)), v[j, m],
              ("weights", (*hp, i, j)), (v_key, (*vp, j, m))) for j in range(a.shape[0])]
    rhs = (rf"\sum_{{j=0}}^{{{a.shape[0] - 1}}} {ctx.ref('weights', (*hp, i, 'j'))}\, "
           rf"{ctx.ref(v_key, (*vp, 'j', m))}")
    rhs_text = f"Σ_j {ctx.ref_text('weights', (*hp, i, 'j'))}·{ctx.ref_text(v_key, (*vp, 'j', m))}"
    v_name = f"V_{vp[0]}" if vp else "V"
    total = math.fsum(float(x) for x in a)
    if total == 0:
        note = (f"Every key is hidden for query {i}: row {i} of the weights is all 0, so this context entry is 0 "
                f"(no average is taken).")
    else:
        top = int(np.argmax(a))
        tied = _ties([float(x) for x in a], top)
        if len(tied) == len(a):
            most = f"every key weighs the same, {fmt(a[top], ctx.precision, False)}"
        elif len(tied) > 1:
            most = (f"keys {say_keys(ctx, tied)} count most, with {fmt(a[top], ctx.precision, False)} each")
        else:
            most = f"“{ctx.word(top)}” (key {top}) counts most, with {fmt(a[top], ctx.precision, False)}"
        note = (f"A weighted average of column {m} of {v_name} over the keys, mixed by row {i} of the weights "
                f"(they sum to 1): {most}.")
    return ctx.sum_of_products("context", cell, rhs, rhs_text, terms, note=note)


def heads_side_by_side(n_heads: int) -> str:
    """'[C_0 | C_1]' for H = 2, '[C_0 | C_1 | C_2]' for 3, '[C_0 | … | C_7]' for 8: heads counted from 0, the last H − 1."""
    if n_heads <= 3:
        return "[" + " | ".join(f"C_{h}" for h in range(n_heads)) + "]"
    return f"[C_0 | … | C_{n_heads - 1}]"


def say_keys(ctx: Context, keys: list[int]) -> str:
    """'0 (“i”), 2 (“you”) and 3 (“today”)'."""
    named = [f"{j} (“{ctx.word(j)}”)" for j in keys]
    return named[0] if len(named) == 1 else ", ".join(named[:-1]) + " and " + named[-1]


@register("concat")
def _concat(ctx: Context, cell):
    """C = [C_0 | … | C_{H−1}]: column c of C is column c mod d_v of head ⌊c / d_v⌋'s context."""
    i, c = cell
    d_v = ctx.settings.d_v
    h, m = divmod(c, d_v)
    value = float(ctx.value("context")[h, i, m])
    lhs, lhs_text = ctx.ref("concat", cell), ctx.ref_text("concat", cell)
    return Explanation("concat", cell,
                       rf"{lhs} = (C_h)_{{{i},m}},\ h = \lfloor {c} / d_v \rfloor,\ m = {c} \bmod d_v",
                       rf"h = \lfloor {c}/{d_v} \rfloor = {h},\ m = {c} \bmod {d_v} = {m}:\ "
                       rf"{ctx.ref('context', (h, i, m))} = {ctx.num(value)}",
                       f"{lhs} = {ctx.num(value)}", value,
                       f"{lhs_text} = C_h[{i},m], h = {c} // d_v, m = {c} % d_v\n"
                       f"  = h = {h}, m = {m}: {ctx.ref_text('context', (h, i, m))}\n  = {ctx.num_text(value)}",
                       note=f"C = {heads_side_by_side(ctx.settings.n_heads)}: the {ctx.settings.n_heads} heads' "
                            f"contexts side by side, heads counted from 0. Columns {h * d_v}…{(h + 1) * d_v - 1} are "
                            f"head {h}'s C_{h}.", reads=(("context", (h, i, m)),))


@register("output")
def _output(ctx: Context, cell):
    """O_{i,j} = Σ_m C_{i,m} (W_O)_{m,j} (+ (b_O)_j), C the heads concatenated when H > 1."""
    i, j = cell
    c_key = "concat" if ctx.settings.n_heads > 1 else "context"
    b_key = "b_o" if "b_o" in ctx.trace else None
    whose = (f"the {ctx.settings.n_heads} heads' contexts side by side (C = "
             f"{heads_side_by_side(ctx.settings.n_heads)})" if c_key == "concat" else "the context C")
    return _project(ctx, "output", cell, c_key, "w_o", b_key,
                    f"Row {i} (“{ctx.word(i)}”) of {whose}, mixed back to d_model columns by column {j} of W_O"
                    + (f", plus the bias b_O[{j}]." if b_key else "."))


for _key in ("q", "k", "v"):
    register(_key)(_projection_explainer(_key))
    register(f"{_key}_heads")(_head_split_explainer(f"{_key}_heads"))


# ---- today's attention in the forward pass: RoPE's rotation, ALiBi's bias --------------------------------

def _rotation_explainer(key: str) -> Explainer:
    return lambda ctx, cell: _rotation(ctx, key, cell)


def _rotation(ctx: Context, key: str, cell):
    """(q^R_p)_{2i} = q_{p,2i} cos(pθ_i) − q_{p,2i+1} sin(pθ_i); (q^R_p)_{2i+1} = q_{p,2i} sin(pθ_i) + q_{p,2i+1} cos(pθ_i)."""
    src = ctx.trace[key].inputs[0]
    *hp, p, col = cell
    row = ctx.value(src)[(*hp, p)]                                        # (d_k,)
    d = row.shape[0]
    i, odd = divmod(col, 2)
    base = ctx.config.pe_base if ctx.config is not None else float(ctx.trace.facts.get("pe_base", 10_000.0))
    theta = base ** (-2.0 * i / d)
    angle = p * theta
    a, b = float(row[2 * i]), float(row[2 * i + 1])
    c, s_ = math.cos(angle), math.sin(angle)
    value = a * s_ + b * c if odd else a * c - b * s_
    lhs, lhs_text = ctx.ref(key, cell), ctx.ref_text(key, cell)
    x0, x1 = ctx.ref(src, (*hp, p, 2 * i)), ctx.ref(src, (*hp, p, 2 * i + 1))
    t0, t1 = ctx.ref_text(src, (*hp, p, 2 * i)), ctx.ref_text(src, (*hp, p, 2 * i + 1))
    if odd:
        symbolic = rf"{lhs} = {x0} \sin(p\theta_{{{i}}}) + {x1} \cos(p\theta_{{{i}}})"
        shown = rf"{ctx.factor(a)} \cdot {ctx.factor(s_)} + {ctx.factor(b)} \cdot {ctx.factor(c)}"
        text_sym, text_shown = (f"{t0}·sin(pθ_{i}) + {t1}·cos(pθ_{i})",
                                f"{ctx.factor_text(a)}·{ctx.factor_text(s_)} + {ctx.factor_text(b)}·{ctx.factor_text(c)}")
    else:
        symbolic = rf"{lhs} = {x0} \cos(p\theta_{{{i}}}) - {x1} \sin(p\theta_{{{i}}})"
        shown = rf"{ctx.factor(a)} \cdot {ctx.factor(c)} - {ctx.factor(b)} \cdot {ctx.factor(s_)}"
        text_sym, text_shown = (f"{t0}·cos(pθ_{i}) − {t1}·sin(pθ_{i})",
                                f"{ctx.factor_text(a)}·{ctx.factor_text(c)} − {ctx.factor_text(b)}·{ctx.factor_text(s_)}")
    note = (f"Token {p} (“{ctx.word(p)}”) sits at position p = {p}. Pair i = {i} (columns {2 * i}, {2 * i + 1}) turns "
            f"at θ_{i} = {fmt(base, 6, False)}^(−2·{i}/{d}) = {fmt(theta, ctx.precision, False)} radians per position, "
            f"so by p·θ_{i} = {fmt(angle, ctx.precision, False)} radians here: cos = {fmt(c, ctx.precision, False)}, "
            f"sin = {fmt(s_, ctx.precision, False)}.")
    return Explanation(key, cell, symbolic, shown, f"{lhs} = {ctx.num(value)}", value,
                       f"{lhs_text} = {text_sym}\n  = {text_shown}\n  = {ctx.num_text(value)}", note=note,
                       n_terms=2, reads=((src, (*hp, p, 2 * i)), (src, (*hp, p, 2 * i + 1))))


@register("alibi")
def _alibi(ctx: Context, cell):
    """B_ij = −m_h·|i − j|, m_h the paper's slope of head h."""
    from ..math.alibi import alibi_slopes
    *hp, i, j = cell
    h = hp[0] if hp else 0
    n_heads = ctx.settings.n_heads
    m = float(alibi_slopes(n_heads)[h])
    value = 0.0 - m * abs(i - j)
    lhs, lhs_text = ctx.ref("alibi", cell), ctx.ref_text("alibi", cell)
    c = 2 ** int(math.floor(math.log2(n_heads)))
    if h < c:
        rule = f"m_{h} = 2^(−8·{h + 1}/{c}) = {fmt(m, ctx.precision, False)}"
    else:
        k = 2 * (h - c) + 1
        rule = (f"{n_heads} is not a power of two: head {h} takes every other slope of the {2 * c}-head sequence, "
                f"m_{h} = 2^(−8·{k}/{2 * c}) = {fmt(m, ctx.precision, False)}")
    return Explanation("alibi", cell, rf"{lhs} = -m_{{{h}}}\, |{i} - {j}|",
                       rf"-{ctx.factor(m)} \cdot {abs(i - j)}", f"{lhs} = {ctx.num(value)}", value,
                       f"{lhs_text} = −m_{h}·|{i} − {j}|\n  = −{ctx.factor_text(m)}·{abs(i - j)}\n  = {ctx.num_text(value)}",
                       note=f"Head {h}'s slope (heads counted from 0; the ALiBi paper counts from 1): {rule}. Key {j} is "
                            f"{abs(i - j)} token{'s' if abs(i - j) != 1 else ''} from query {i}, so its score is lowered "
                            f"by {abs(i - j)} × m_{h}.", independent=True)


@register("biased_scores")
def _biased(ctx: Context, cell):
    src = ctx.trace["biased_scores"].inputs[0]
    s_, b = float(ctx.value(src)[cell]), float(ctx.value("alibi")[cell])
    value = s_ + b
    lhs, lhs_text = ctx.ref("biased_scores", cell), ctx.ref_text("biased_scores", cell)
    i, j = cell[-2:]
    return Explanation("biased_scores", cell, rf"{lhs} = {ctx.ref(src, cell)} + {ctx.ref('alibi', cell)}",
                       rf"{ctx.num(s_)} + {ctx.factor(b)}", f"{lhs} = {ctx.num(value)}", value,
                       f"{lhs_text} = {ctx.ref_text(src, cell)} + {ctx.ref_text('alibi', cell)}\n"
                       f"  = {ctx.num_text(s_)} + {ctx.factor_text(b)}\n  = {ctx.num_text(value)}",
                       note=_pair_note(ctx, i, j) + " The score plus ALiBi's distance penalty.",
                       n_terms=2, reads=((src, cell), ("alibi", cell)))


for _key in ("q_rot", "k_rot"):
    register(_key)(_rotation_explainer(_key))
