"""The explainer of the calculator's cells: one preset's cache in bytes, its arithmetic written out (per token,
at the chosen length, and the same model with MHA), windowed and latent caches included.
"""
from __future__ import annotations

from ...explanations import Context, Explanation, register
from .calculator import BYTES, PRESETS, human
from .settings import KIND


def number(v: float) -> str:
    """131072 -> '131{,}072' (a comma LaTeX does not space)."""
    return f"{v:,.0f}".replace(",", "{,}")


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
