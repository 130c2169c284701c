"""What an explainer works with: the Explanation it returns, the Settings the trace was made with, and
the Context that reads the trace (cells, symbols, numbers) and builds the common shapes of explanation.

An `Explanation` holds the cell's formula (LaTeX, indices filled in), the same formula with the live numbers
substituted, the result, a plain-text version, and `value`: the number recomputed FROM THE TERMS (scalar
arithmetic, math.fsum), never read back from the stored cell, so a test can compare the two.

`Context.sum_of_products` does the elision, the formatting and the fsum of a Σ a·b (+ bias) (/ divisor);
`Context.leaf` explains a number nothing in the trace computes (looked up, or drawn from a seeded generator).
"""
from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass

import numpy as np

from ..forward.config import Config
from ..forward.trace import Trace
from .formatting import fmt, join_terms
from .symbols import HEAD_SUBSCRIPT, SYMBOLS, cell_of, head_symbol, latex_text


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
    """(T, exact). T = 1 when the weights' formula has no division (the forward pass omits '/ T' then);
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
