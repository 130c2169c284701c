"""The transformer block page's views (app_pages/50_block.py): the block's switches, its cached Trace, pre-norm and
post-norm side by side, one layer's steps as a flow, the residual stream's sizes, the steps' heatmaps by tab,
the norm, GELU, and the last position's logits."""
from __future__ import annotations

import functools
import math

import numpy as np
import streamlit as st

import ui
from attention_core import Config, Trace
from attention_core.forward.claims import say
from attention_core.forward.transformer import Arch, sidebar_block
from ui import nav, page_state
from ui.cache import get_trace
from ui.colours import SERIES
from ui.phone import fill_width
from ui.views import step_box, step_boxes

NEXT_TOKEN = "app_pages/51_next_token.py"
HI = "#c2410c"                     # the norm's colour in the pre/post formulas (5.2:1 on white): where they differ


@functools.lru_cache(maxsize=32)
def get_block(config: Config, arch: Arch) -> Trace:
    """The block on the sidebar's settings, once per (Config, Arch) per process."""
    return sidebar_block(config, arch, get_trace(config))


def bars_spec(rows: list[dict], x: str, y: str, order: list[str], group: str | None = None, groups=None,
              width: int = 300, height: int = 200, domain=None) -> dict:
    """Bars in the order given (the sentence's, not the alphabet's), side by side per group if any: a Vega-Lite
    spec written out (altair's validation cost more than the rest of the page's rerun)."""
    enc = {"x": {"field": x, "type": "nominal", "sort": list(order), "title": x, "axis": {"labelAngle": 0}},
           "y": {"field": y, "type": "quantitative", "title": y, **({"scale": {"domain": list(domain)}} if domain else {})},
           "tooltip": [{"field": x, "type": "nominal"}] + ([{"field": group, "type": "nominal"}] if group else [])
                      + [{"field": y, "type": "quantitative", "format": ".4f"}]}
    if group:
        enc.update(xOffset={"field": group, "type": "nominal", "sort": list(groups)},
                   color={"field": group, "type": "nominal", "sort": list(groups),
                          "scale": {"domain": list(groups), "range": SERIES}, "title": None,
                          "legend": {"orient": "right"}})
    return {"data": {"values": rows}, "mark": {"type": "bar"}, "encoding": enc, "width": width, "height": height,
            "autosize": {"type": "pad", "contains": "padding"}}


ROW_PX = 860                       # the page's column at a 1366-px laptop with the sidebar open, less a margin
BAR_PX = 22                        # a bar and its gap, in the one-chart layout


def stream_bars_spec(rows: list[dict], order: list[str], groups: list[str], top: float) -> dict:
    """The residual stream's sizes, per token a group of bars (one per part of the stream). When every bar fits the
    page's column at its width, upright bars; else the bars lie down, a token a row, as wide as the column whatever
    the screen (a laptop's or a phone's) and as tall as the tokens need: the words keep their size (one chart of 62
    tokens × 3 parts was scaled down to 5-px words)."""
    domain = (0, top * 1.05)
    width = BAR_PX * len(groups) * len(order)
    if width + 150 <= ROW_PX:                      # the axis and the legend beside it
        return bars_spec(rows, "token", "‖row‖", order, "written by", groups, width=max(300, width), domain=domain)
    bar = 5 if len(groups) > 3 else 6
    return {"data": {"values": rows}, "mark": {"type": "bar"}, "width": "container",
            "height": len(order) * (bar * len(groups) + 8),
            "encoding": {"y": {"field": "token", "type": "nominal", "sort": list(order), "title": None,
                               "axis": {"labelLimit": 110}},
                         "yOffset": {"field": "written by", "type": "nominal", "sort": list(groups)},
                         "x": {"field": "‖row‖", "type": "quantitative", "scale": {"domain": list(domain)},
                               "axis": {"orient": "top"}},
                         "color": {"field": "written by", "type": "nominal", "sort": list(groups), "title": None,
                                   "scale": {"domain": list(groups), "range": SERIES},
                                   "legend": {"orient": "top", "columns": 3}},
                         "tooltip": [{"field": "token", "type": "nominal"}, {"field": "written by", "type": "nominal"},
                                     {"field": "‖row‖", "type": "quantitative", "format": ".4f"}]},
            "autosize": {"type": "fit-x", "contains": "padding"}}


def logits_spec(rows: list[dict], vocab: list[str], bound: float) -> dict:
    """One bar per word of the vocabulary, 40 px each while they fit the page's column; when they do not, the bars
    lie down, a word a row, as wide as the column on any screen (never a chart scaled down to unreadable words)."""
    if 40 * len(vocab) + 80 <= ROW_PX:
        return bars_spec(rows, "word", "logit", vocab, width=max(260, 40 * len(vocab)), height=180,
                         domain=(-bound, bound))
    return {"data": {"values": rows}, "mark": {"type": "bar"}, "width": "container", "height": 18 * len(vocab),
            "encoding": {"y": {"field": "word", "type": "nominal", "sort": list(vocab), "title": None,
                               "axis": {"labelLimit": 110, "labelOverlap": False}},
                         "x": {"field": "logit", "type": "quantitative", "scale": {"domain": [-bound, bound]},
                               "axis": {"orient": "top"}},
                         "tooltip": [{"field": "word", "type": "nominal"},
                                     {"field": "logit", "type": "quantitative", "format": ".4f"}]},
            "autosize": {"type": "fit-x", "contains": "padding"}}


def controls() -> tuple[Arch, int]:
    """The block's switches (kept and carried in the link by ui/page_state.py): (Arch, the layer shown)."""
    with st.container(border=True):
        a, b, c, d = st.columns([3, 3, 3, 2], vertical_alignment="center")
        layers = a.slider("Layers L", 1, 4, key="block.layers", help="How many blocks are stacked.")
        placement = b.radio("Norm placement", ("pre", "post"), key="block.placement", horizontal=True,
                            format_func=lambda p: {"pre": "pre-norm", "post": "post-norm"}[p],
                            help="Pre-norm (GPT-2, Llama): each sublayer reads a normalised copy of the stream. "
                                 "Post-norm (Vaswani et al. 2017): the stream itself is normalised after each add.")
        norm = c.radio("Norm", ("layer", "rms"), key="block.norm", horizontal=True,
                       format_func=lambda n: {"layer": "LayerNorm", "rms": "RMSNorm"}[n])
        mlp = d.toggle("MLP", key="block.mlp", help="Off: an attention-only block, Xₗ₊₁ = Xₗ′.")
        page_state.fit("block.layer", 0, int(layers) - 1)
        layer = 0
        if layers > 1:
            layer = st.select_slider("Layer shown below", list(range(int(layers))), key="block.layer",
                                     format_func=lambda l: f"layer {l}")
    return Arch(n_layers=int(layers), placement=placement, norm=norm, mlp=bool(mlp)), int(layer)


def intro(config: Config, trace: Trace) -> str:
    f = trace.facts
    arch = f["arch"]
    kv = f", {config.kv_heads} KV heads" if config.kv_heads != config.n_heads else ""
    start = ("**γ = 1 and β = 0**" if arch.norm == "layer" else "**γ = 1** (RMSNorm has no β)") + (
        ", W_1 and W_2 drawn N(0, 1/fan-in), biases 0" if arch.mlp else "")
    return (
        f"Attention is one sublayer of a **block**. The block's input X₀ is the attention pages' X ({f['n']} "
        f"token{'s' if f['n'] != 1 else ''} × d_model = {f['d_model']}); each layer's attention is their forward pass "
        f"with the sidebar's settings ({config.n_heads} head{'s' if config.n_heads > 1 else ''}{kv}, "
        f"{config.score.replace('_', ' ')} scores"
        + (f", {config.mask.replace('_', ' ')} mask" if config.mask != "none" else "")
        + ({"rope": ", RoPE", "alibi": ", ALiBi"}.get(config.positional, ""))
        + (f", softmax temperature T = {config.temperature:g}" if config.temperature != 1 else "") + "), on the rows the block "
        "gives it. Layer 0 uses the attention pages' own W_Q … W_O; a deeper layer its own seeded ones. Everything "
        f"else is at its seeded start: {start}. "
        "**Nothing here is trained to predict words**: the block shows what each step computes, not what a "
        "trained model would say.")


def _formula(placement: str) -> str:
    """The block's lines in LaTeX, the norm coloured: where pre-norm and post-norm differ."""
    n = lambda body: r"\textcolor{" + HI + r"}{N}(" + body + ")"
    mha, mlp = r"\mathrm{MHA}", r"\mathrm{MLP}"
    if placement == "pre":
        lines = (rf"X_l' = X_l + {mha}\big(" + n("X_l") + r"\big)",
                 rf"X_{{l+1}} = X_l' + {mlp}\big(" + n("X_l'") + r"\big)",
                 r"Z = \textcolor{" + HI + r"}{N_f}(X_L)\, W_U")
    else:
        lines = ("X_l' = " + n(rf"X_l + {mha}(X_l)"), "X_{l+1} = " + n(rf"X_l' + {mlp}(X_l')"), r"Z = X_L\, W_U")
    return r" \\ ".join(lines)


def pre_and_post(arch: Arch) -> None:
    """The most-asked confusion: the same sublayers, the norm in another place. Both written out, the choice marked."""
    st.markdown("## 1 · Pre-norm or post-norm: where the norm goes")
    words = {"pre": ("Pre-norm (GPT-2, Llama)",
                     "Each sublayer reads a **normalised copy**; its output is added to the stream itself, which is "
                     "never normalised, so one final norm $N_f$ comes before $W_U$."),
             "post": ("Post-norm (Vaswani et al. 2017)",
                      "The sublayer reads the stream as it is; the **sum** is normalised, so the stream is rescaled "
                      "after every add and leaves the last block normalised: no final norm.")}
    for col, p in zip(st.columns(2), ("pre", "post")):
        with col.container(border=True):
            title, text = words[p]
            mark = " &nbsp; :orange-badge[in force below]" if p == arch.placement else ""
            st.markdown(f"**{title}**{mark}\n\n$$\n\\begin{{gathered}}{_formula(p)}\\end{{gathered}}\n$$\n\n"
                        f":small[{text} N is {'LayerNorm' if arch.norm == 'layer' else 'RMSNorm'}"
                        + ("" if arch.mlp else "; the MLP is off, so $X_{l+1} = X_l'$") + ".]")


def flow(trace: Trace, arch: Arch, layer: int) -> None:
    """One layer's steps in order, each with its formula and shape: what flows where."""
    st.markdown(f"## 2 · Layer {layer}, step by step")
    rows = ["| step | formula | shape |", "|---|---|---|"]
    keys = (["x"] if layer == 0 else []) + [k for k in trace.keys() if k.startswith(f"l{layer}.") and trace[k].inputs]
    if layer == arch.n_layers - 1:
        keys += [k for k in ("ln_f", "logits") if k in trace]
    for k in keys:
        s = trace[k]
        formula = s.formula.split(r" = \gamma")[0].split(r" = \frac")[0]
        rows.append(f"| {s.title} | ${formula}$ | {s.shape_text} |")
    st.markdown("\n".join(rows))
    st.caption(say("block_post_layer0", (trace.facts["config"], arch)))


def stream_sizes(trace: Trace, arch: Arch) -> None:
    """The residual stream as what it is: every sublayer adds to it. Per token, the size (‖row‖) of X₀ and of what
    each sublayer writes."""
    st.markdown("## 3 · The residual stream: read it, add to it")
    labels = trace.token_labels()
    size = lambda key: np.linalg.norm(trace[key].value, axis=1)
    parts = [("X₀", "x")] + [(f"attention {l}", f"l{l}.attn") for l in range(arch.n_layers)]
    if arch.mlp:
        parts += [(f"MLP {l}", f"l{l}.mlp") for l in range(arch.n_layers)]
    rows = [{"token": labels[i], "‖row‖": float(size(key)[i]), "written by": name}
            for name, key in parts for i in range(trace.n)]
    top = max(r["‖row‖"] for r in rows)
    if arch.placement == "pre":
        st.markdown("Every sublayer **reads** the stream (a normalised copy of it) and **adds** its output to it: "
                    "$X_l' = X_l + O_l$. Nothing overwrites the stream, so a row still carries its embedding after the "
                    "last layer, plus what each sublayer wrote. The bars are the size ‖row‖ of each part, per token:")
    else:
        st.markdown("Every sublayer **reads** the stream and **adds** its output to it, then the sum is normalised: "
                    "$X_l' = N(X_l + O_l)$. The bars are the size ‖row‖ of what each part wrote, per token:")
    ui.chart(stream_bars_spec(rows, labels, [name for name, _ in parts], top))
    if arch.placement == "post":
        st.caption("With post-norm each add is followed by a norm, so the stream is rescaled after every sublayer: "
                   "what a sublayer wrote is no longer a plain summand of the next layer's input.")


def layer_tabs(trace: Trace, arch: Arch, layer: int) -> None:
    """The layer's steps as heatmaps, click a cell for its arithmetic: one lazy tab drawn at a time."""
    st.markdown(f"## 4 · Layer {layer}'s numbers")
    tabs = st.tabs(list(page_state.BLOCK_TABS), key="block.tab", on_change="rerun")
    l, p = f"l{layer}", f"block.{layer}."
    sub = trace.facts["attention"][layer]
    if tabs[0].open is not False:
        with tabs[0]:
            st.markdown("The attention pages' steps on the rows this layer reads (its X here is "
                        + ("N(X_l), the normalised stream)." if arch.placement == "pre" else "X_l, the stream itself)."))
            reads = rf"X = N(X_{{{layer}}})" if arch.placement == "pre" else rf"X = X_{{{layer}}}"
            boxes([(sub, "x", dict(title=f"X, the rows layer {layer}'s attention reads", formula=reads,
                                   key_prefix=p + "att.")),
                   (sub, "weights", dict(key_prefix=p + "att.")), (trace, f"{l}.attn", dict(key_prefix=p))])
    if tabs[1].open:
        with tabs[1]:
            norm_text(trace, arch, layer)
            keys = [f"{l}.ln1"] if arch.placement == "pre" else [f"{l}.mid" if arch.mlp else f"{l}.out"]
            step_boxes(trace, keys, key_prefix=p)
    if tabs[2].open:
        with tabs[2]:
            if not arch.mlp:
                st.info("The MLP is off (an attention-only block): switch it on above.", icon=":material/info:")
            else:
                gelu_chart(trace, layer)
                step_boxes(trace, [f"{l}.hidden", f"{l}.act", f"{l}.mlp"], key_prefix=p)
    if tabs[3].open:
        with tabs[3]:
            adds = [k for k in (f"{l}.sum1", f"{l}.mid", f"{l}.sum2", f"{l}.out") if k in trace
                    and len(trace[k].inputs) == 2]
            step_boxes(trace, adds, key_prefix=p)
    page_state.sync()


@st.fragment
def boxes(items) -> None:
    """Step boxes of one or more Traces, each with its own options, in one fragment (a click reruns these only)."""
    for t, key, options in items:
        step_box(t, key, **options)


def norm_text(trace: Trace, arch: Arch, layer: int) -> None:
    """LayerNorm or RMSNorm: the formula, the biased variance measured on the last token's row, where ε goes."""
    src = trace[f"l{layer}.ln1"].inputs[0] if arch.placement == "pre" else f"l{layer}.sum1"
    x = trace[src].value[-1]
    d, eps = x.shape[0], f"{arch.eps:g}".replace("e-0", "e-")
    word = trace.tokens[-1]
    if arch.norm == "layer":
        st.markdown(
            rf"$$\mathrm{{LN}}(x) = \gamma \odot \frac{{x - \mu}}{{\sqrt{{\sigma^2 + \epsilon}}}} + \beta,\quad "
            rf"\mu = \tfrac{{1}}{{d}}\textstyle\sum_j x_j,\quad \sigma^2 = \tfrac{{1}}{{d}}\textstyle\sum_j (x_j - \mu)^2$$"
            f"\n\nThe variance is the **biased** one, divided by d = {d}, as torch's nn.LayerNorm computes it. On "
            f"the row of “{word}”: μ = {x.mean():.4f}, σ² = {x.var():.4f}; divided by d − 1 = {d - 1} it would be "
            f"{x.var(ddof=1):.4f}. ε = {eps} goes **inside** the square root: it keeps a row whose entries are "
            "all equal (σ² = 0) from a division by zero.")
    else:
        r = math.sqrt(float((x ** 2).mean()) + arch.eps)
        st.markdown(
            rf"$$\mathrm{{RMSNorm}}(x) = \gamma \odot \frac{{x}}{{r}},\quad r = \sqrt{{\tfrac{{1}}{{d}}"
            rf"\textstyle\sum_j x_j^2 + \epsilon}}$$"
            f"\n\nNo mean is taken away and there is no β (Llama's choice: one statistic fewer). On the row of “{word}”: "
            f"r = {r:.4f}; its mean {x.mean():.4f} is not taken away, only divided by r with the rest of the row "
            f"(the output's mean is {x.mean() / r:.4f}). ε = {eps} goes inside the square root.")
    st.caption(("γ = 1 and β = 0" if arch.norm == "layer" else "γ = 1") + " at the start, so here the norm only "
               + ("centres each row and scales it to variance 1 (σ²/(σ² + ε) to be exact: 0 for a row of equal "
                  "entries)." if arch.norm == "layer" else
                  "scales each row to a root mean square of 1 (√(ms/(ms + ε)) to be exact, ms the row's mean square: 0 "
                  "for a row of zeros)."))


def gelu_chart(trace: Trace, layer: int) -> None:
    """GELU(h) = h Φ(h) beside ReLU, over the range of this layer's hidden values."""
    h = trace[f"l{layer}.hidden"].value
    lo, hi = min(-3.0, float(h.min())), max(3.0, float(h.max()))
    xs = np.linspace(lo, hi, 41)
    phi = 0.5 * (1 + np.vectorize(math.erf)(xs / math.sqrt(2)))
    rows = [{"h": float(v), "value": float(v * p), "curve": "GELU(h) = h Φ(h)"} for v, p in zip(xs, phi)]
    rows += [{"h": float(v), "value": float(max(v, 0.0)), "curve": "ReLU(h) = max(h, 0)"} for v in xs]
    st.markdown(f"GELU keeps the share Φ(h) of h, Φ the standard normal CDF: almost all of a large positive h, almost "
                f"none of a large negative one, smoothly between. This layer's {h.size} hidden values run from "
                f"{h.min():.2f} to {h.max():.2f}; {100 * float((h < 0).mean()):.0f}% are negative.")
    ui.chart(fill_width(ui.line_spec(rows, "h", "value", color="curve", width=420, height=200)))


def logits(trace: Trace) -> None:
    """The last position's logits over the vocabulary (the sentence's distinct words), honestly labelled."""
    st.markdown("## 5 · Logits of the last position")
    f = trace.facts
    vocab = f["vocab"]
    config, arch = f["config"], f["arch"]
    z = trace["logits"].value[-1]
    top = int(np.argmax(z))
    tied = [vocab[v] for v in np.flatnonzero(z >= z[top] - 1e-9 * max(1.0, abs(z[top])))]   # equal up to rounding
    best = (f"gives its only word, “{vocab[top]}”, {z[top]:.3f}" if len(vocab) == 1 else
            f"scores “{vocab[top]}” highest, {z[top]:.3f}" if len(tied) == 1 else
            "scores " + " and ".join(f"“{w}”" for w in tied) + f" highest, equal at {z[top]:.3f}")
    st.markdown(
        f"The vocabulary here is the sentence's **{len(vocab)} distinct word{'s' if len(vocab) != 1 else ''}**, so "
        f"|V| = {len(vocab)}. " + say("block_tied", (config, arch))
        + f" Row {trace.n - 1} (“{trace.tokens[-1]}”) {best}: with weights never trained to predict words, that is "
        "a property of these vectors, not a prediction.")
    rows = [{"word": w, "logit": float(v)} for w, v in zip(vocab, z)]
    bound = 1.08 * float(np.abs(z).max()) or 1.0
    ui.chart(logits_spec(rows, list(vocab), bound))
    step_boxes(trace, ["logits"], key_prefix="block.")
    if (nav.ROOT / NEXT_TOKEN).exists():
        st.markdown("What a **trained** model does with its logits (temperature, top-k, top-p, sampling): "
                    + nav.md_link(NEXT_TOKEN, "the next token", st.session_state.get("s.query")) + ".")


def checked_text() -> str:
    return ("- **LayerNorm, RMSNorm, GELU and the MLP** equal torch's `nn.LayerNorm`, `nn.RMSNorm` (ε given), "
            "`F.gelu` and two `nn.Linear` layers to 1e-9 in float64, and their hand-written derivatives equal "
            "autograd's.\n"
            "- **The whole block** (1–4 layers, every depth the slider offers, pre- and post-norm, LayerNorm and "
            "RMSNorm, MLP on and off) equals a "
            "torch block written by hand (its attention from `F.scaled_dot_product_attention`, with RoPE as Meta's "
            "Llama code, ALiBi's published slopes, a causal mask and grouped-query heads) to 1e-9 under several "
            "sidebar settings, and (one layer, on random 8-d embeddings with a causal mask, where d_k = d_model / H) "
            "one built from `nn.MultiheadAttention`.\n"
            "- **Every clicked cell** is recomputed from its terms (a row's μ and σ², h Φ(h), a sum of products) and "
            "compared with the stored number.")
