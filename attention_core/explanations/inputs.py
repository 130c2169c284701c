"""The inputs explained: an embedding row looked up (X_emb), a position encoded (PE), and X, the two
added or side by side.

    >>> from attention_core import Config, run_forward
    >>> from attention_core.explanations import explain
    >>> config = Config(sentence="I love you today")
    >>> print(explain(run_forward(config), "x", (1, 0), config=config).symbolic)
    X_{1,0} = (X_{\\text{emb}})_{1,0} + PE_{1,0}
"""
from __future__ import annotations

import functools
import math
from dataclasses import replace

import numpy as np

from ..forward.config import Config
from ..math.embeddings import random_vector, vocabulary_for
from ..math.positional import learned_encoding
from .context import Context, Explanation
from .formatting import fmt, row_excerpt
from .registry import register
from .symbols import SYMBOLS, latex_text


@functools.lru_cache(maxsize=4)
def _vocabulary(config: Config):
    return vocabulary_for(config)


@register("x_embed")
def _x_embed(ctx: Context, cell):
    i, m = cell
    word = ctx.word(i)
    row = ctx.value("x_embed")[i]                                         # (d_embed,)
    d = row.shape[0]
    regenerated, source = None, ctx.trace.facts.get("source", "the table")
    if ctx.config is not None:
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
