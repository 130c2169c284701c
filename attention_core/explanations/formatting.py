"""How the numbers are written: one number, a long sum with its middle left out, a softmax entry as a
fraction, a row with one entry boxed.

    >>> fmt(0.12345), join_terms([str(t) for t in range(49)], latex=False)
    ('0.123', ('0 + 1 + 2 + … 44 more … + 47 + 48', 44))

Long sums show their first HEAD_TERMS and last TAIL_TERMS terms and say how many are left out.
"""
from __future__ import annotations

import math

HEAD_TERMS, TAIL_TERMS = 3, 2        # a long sum shows its first 3 and last 2 terms


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
