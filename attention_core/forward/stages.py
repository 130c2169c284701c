"""run_forward(config) -> Trace: every intermediate of the attention forward pass, named.

STAGES run in order on a Pass; each adds its Steps (value, formula, inputs, why) to the Trace. The sentences
of why that depend on the settings or the numbers are in why.py (embedding_why and exact_slope are also
found here, where outside code has always imported them).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..math import attention as att
from ..math.alibi import alibi_bias, alibi_slopes
from ..math.embeddings import vocabulary_for
from ..math.gqa import expand_kv
from ..math.limits import ConfigError
from ..math.notation import softmax_argument
from ..math.rope import rotary_embedding
from ..math.text import resolve, set_aside
from .claims import say
from .config import Config
from .encode import embed_words, position_encoding, with_position
from .trace import Trace
from .weights import init_bias, init_weight, projection_weights
from .why import (MASK_WORDS, agreement_note, embedding_why, exact_slope, groups_text, kv_weights_note, order_note,
                  scaling_why, score_parameter_start)


def _heads(h: int, *axes: str) -> tuple[str, ...]:
    return (("head",) if h > 1 else ()) + axes


# ---- the pass, one stage at a time ---------------------------------------------------------------------
# run_forward runs STAGES in order; each stage reads what the earlier ones left in the Pass and adds its
# Steps to the trace. A new stage (RoPE's rotation, ALiBi's bias) is one function, listed once in STAGES.

@dataclass
class Pass:
    config: Config
    trace: Trace
    vocab: object = None
    x: np.ndarray | None = None            # (n, d_model)
    proj: dict = field(default_factory=dict)   # "q" (H?, n, d_k), "k" (H_kv?, n, d_k), "v" (H_kv?, n, d_v)
    logits: str = ""                       # the key of the scores the next stage reads
    mask: np.ndarray | None = None         # (n, n) bool, True = may attend
    weights: dict | None = None            # given W_Q, W_K, W_V, W_O (a block's layer, a trained LM), else the settings'

    @property
    def h(self) -> int:
        return self.config.n_heads

    @property
    def n(self) -> int:
        return self.trace.n


def embed(p: Pass) -> None:
    """X_emb: one row per token."""
    config, trace = p.config, p.trace
    x_embed = embed_words(trace.tokens, p.vocab, config.d_model, config.seed)       # (n, d_embed)
    trace.add("x_embed", "Embeddings", x_embed, ("n", "d_embed"),
              r"X_{\text{emb}} = \begin{bmatrix} e(w_0) \\ \vdots \\ e(w_{n-1}) \end{bmatrix}",
              why=embedding_why(config, x_embed.shape[1]))


def position(p: Pass) -> None:
    """X: the embeddings with the positional encoding added or concatenated (none, RoPE, ALiBi: X = X_emb)."""
    config, trace = p.config, p.trace
    x_embed = trace["x_embed"].value
    n, d_embed = x_embed.shape
    pe = position_encoding(config, n, d_embed)                                   # (n, d_pe) or None
    if config.positional == "sinusoidal":
        formula = (rf"PE_{{p,2i}} = \sin\!\left(\frac{{p}}{{{config.pe_base:g}^{{2i/{d_embed}}}}}\right),\quad "
                   rf"PE_{{p,2i+1}} = \cos\!\left(\frac{{p}}{{{config.pe_base:g}^{{2i/{d_embed}}}}}\right)")
        why = ("Each dimension pair is a sine/cosine wave of its own frequency, so every position gets a "
               "distinct pattern, and nearby positions get similar ones.")
    elif config.positional == "learned":
        formula = r"PE = P_{[0:n]},\quad P \in \mathbb{R}^{n_{\max} \times d}\ \text{(a trained table)}"
        why = "A table with one trainable vector per position, shown at its seeded random start."
    elif config.positional == "index":
        formula = r"PE_p = p"
        why = "Tutorial 1's choice: the position number itself, appended to each row as one more feature."
    if pe is not None:
        trace.add("pe", "Positional encoding", pe, ("n", "d_pe"), formula, why=why)
    x = with_position(config, x_embed, pe)                                       # (n, d_model)
    if config.positional == "rope":
        how = ("none added to X: RoPE rotates each query and key by its position after the projections "
               "(the Q^R and K^R steps)")
        formula = r"X = X_{\text{emb}}"
    elif config.positional == "alibi":
        how = ("none added to X: ALiBi lowers each score by the distance between query and key "
               "(the bias B, added to the scores)")
        formula = r"X = X_{\text{emb}}"
    elif pe is None:
        how = "none (no positional encoding): a word's row is the same wherever it stands"
        if config.mask != "none":
            how += f"; only the {MASK_WORDS[config.mask]} mask looks at positions, by hiding keys by their index"
        formula = r"X = X_{\text{emb}}"
    elif config.positional == "index" or config.combine == "concat":
        how = f"concatenated: d_model = {d_embed} + {pe.shape[1]} = {x.shape[1]}"
        formula = r"X = \left[\, X_{\text{emb}} \;\middle|\; PE \,\right]"
    else:
        how = f"added element-wise: d_model stays {d_embed}"
        formula = r"X = X_{\text{emb}} + PE"
    trace.add("x", "Input X", x, ("n", "d_model"), formula, ("x_embed", "pe") if pe is not None else ("x_embed",),
              why=f"The matrix attention works on. Position in X: {how}." + order_note(config))
    trace.facts.update(n=n, d_embed=d_embed, d_model=x.shape[1], position=how)
    p.x = x


def project(p: Pass) -> None:
    """Q = X W_Q, K = X W_K, V = X W_V (+ biases), split into H query heads and H_kv key/value heads."""
    config, trace, x = p.config, p.trace, p.x
    h, h_kv, d_k, d_v, n = config.n_heads, config.kv_heads, config.d_k, config.d_v, p.n
    if config.mask == "padding":
        bad = [q for q in config.padding if q >= n]
        if bad:
            raise ConfigError(f"Padding position {bad[0]} is past the last token (positions run 0 to {n - 1}). "
                              "Unhide it (the mask's hidden positions), or type a longer sentence.")
    trace.facts.update(n_heads=h, n_kv_heads=h_kv, d_k=d_k, d_v=d_v)
    d_model = x.shape[1]
    learned = p.weights or projection_weights(config, d_model)                   # w_q, w_k, w_v (and b_*)
    trace.facts.update(weights=config.weights, weights_why=learned["why"])
    for name, heads, width in (("q", h, d_k), ("k", h_kv, d_k), ("v", h_kv, d_v)):
        w = learned[f"w_{name}"]                                                # (d_model, heads·width)
        d_name = "d_v" if name == "v" else "d_k"
        count = "H" if name == "q" or h_kv == h else "H_kv"
        cols = f"{count}·{d_name}" if heads > 1 or (h > 1 and name != "q") else d_name
        trace.add(f"w_{name}", f"W_{name.upper()}", w, ("d_model", cols),
                  rf"W_{name.upper()} \in \mathbb{{R}}^{{{d_model} \times {heads * width}}}",
                  why=f"{learned['why']} Their shape does not depend on the sentence length."
                      + (kv_weights_note(config) if name != "q" and h_kv < h else ""))
        value = x @ w                                                           # (n, heads·width)
        inputs = ("x", f"w_{name}")
        formula = rf"{name.upper()} = X W_{name.upper()}"
        if config.bias:
            b = learned[f"b_{name}"]                                            # (heads·width,)
            trace.add(f"b_{name}", f"b_{name.upper()}", b, (cols,), rf"b_{name.upper()} \in \mathbb{{R}}^{{{heads * width}}}",
                      why="A bias added to every row" + (", trained with the weights." if config.weights == "trained"
                                                          else ", at its seeded random start."))
            value = value + b
            inputs += (f"b_{name}",)
            formula += rf" + b_{name.upper()}"
        role = {"q": "what token i is looking for", "k": "what token i offers to be found by",
                "v": "what token i passes on when it is attended to"}[name]
        trace.add(name, {"q": "Queries Q", "k": "Keys K", "v": "Values V"}[name], value, ("n", cols),
                  formula, inputs, why=f"Row i is {role}.")
        p.proj[name] = value if h == 1 else att.split_heads(value, heads)       # (H?, n, width)
        if h > 1:
            shared = name != "q" and h_kv < h
            trace.add(f"{name}_heads", f"{name.upper()} split into {'KV ' if shared else ''}heads", p.proj[name],
                      ("head", "n", d_name),
                      rf"{name.upper()}_h = {name.upper()}_{{[:,\, h \cdot {d_name} : (h+1) \cdot {d_name}]}}",
                      (name,), why=f"Head h takes its own block of {width} columns."
                      + (f" There are H_kv = {h_kv} of them: query head h reads KV head ⌊h / {h // h_kv}⌋ "
                         f"({groups_text(h, h_kv)})." if shared else ""))


def rotate(p: Pass) -> None:
    """RoPE: rotate every query and key row by its position (pairs of columns, angle p·θ_i)."""
    config, trace = p.config, p.trace
    if config.positional != "rope":
        return
    d_k, base = config.d_k, config.pe_base
    for name in ("q", "k"):
        src = f"{name}_heads" if p.h > 1 else name
        rotated = rotary_embedding(p.proj[name], base=base)                     # same shape: (H?, n, d_k)
        big = name.upper()
        trace.add(f"{name}_rot", f"{big} rotated (RoPE)", rotated, trace[src].axes,
                  rf"{name}^R_p = R_p\, {name}_p:\ \ ({name}^R_p)_{{2i}} = {name}_{{p,2i}} \cos(p\theta_i) - "
                  rf"{name}_{{p,2i+1}} \sin(p\theta_i),\ \ ({name}^R_p)_{{2i+1}} = {name}_{{p,2i}} \sin(p\theta_i) + "
                  rf"{name}_{{p,2i+1}} \cos(p\theta_i),\ \ \theta_i = {base:g}^{{-2i/{d_k}}}",
                  (src,), why=("The row of the token at position p turned by p: pair i of its columns (2i, 2i+1) by "
                               "the angle p·θ_i, pair 0 fastest (1 radian per position), the last pair slowest. Lengths do not "
                               "change. Interleaved pairs, as RoFormer and Meta's Llama code (the RoPE page shows the "
                               "half-split pairing and the permutation between them)."))
        p.proj[name] = rotated
    trace.facts["rope"] = True


def score(p: Pass) -> None:
    """S: the score function; Ŝ = S / √d_k for scaled dot-product."""
    config, trace = p.config, p.trace
    h, h_kv, d_k, seed = config.n_heads, config.kv_heads, config.d_k, config.seed
    q, k = p.proj["q"], p.proj["k"]
    if h > 1 and h_kv < h:
        k = expand_kv(k, h)                                                     # (H, n, d_k): query head h reads K_{⌊h/g⌋}
    rot = "rot" if config.positional == "rope" else None
    qkv = ((f"q_{rot}", f"k_{rot}") if rot else ("q_heads", "k_heads") if h > 1 else ("q", "k"))
    sq = "_h" if h > 1 else ""
    kh = (r"_{\lfloor h/g \rfloor}" if h_kv < h else "_h") if h > 1 else ""
    r = "^R" if rot else ""
    kt = f"{{K{r}{kh}}}" if r else f"K{r}{kh}"                             # {K^R_h}^⊤: one superscript at a time
    if config.score in ("dot", "scaled_dot"):
        scores = att.dot_scores(q, k)
        trace.add("scores", "Scores QKᵀ", scores, _heads(h, "n_q", "n_k"), rf"S{sq} = Q{r}{sq} {kt}^\top", qkv,
                  why="Entry (i, j) is the dot product of query i with key j: large when they point the same way."
                      + (f" With RoPE, of the rotated rows: {say('rope_relative', config)}." if rot else "")
                      + (f" Query head h reads KV head ⌊h/{h // h_kv}⌋." if h > 1 and h_kv < h else ""))
        p.logits = "scores"
        if config.score == "scaled_dot":
            scaled = scores / np.sqrt(d_k)
            trace.add("scaled_scores", "Scaled scores", scaled, _heads(h, "n_q", "n_k"),
                      rf"\hat S{sq} = \frac{{S{sq}}}{{\sqrt{{d_k}}}} = \frac{{Q{r}{sq} {kt}^\top}}{{\sqrt{{{d_k}}}}}",
                      ("scores",), why=scaling_why(d_k, scaled, config.weights))
            p.logits = "scaled_scores"
    elif config.score == "additive":
        w_1 = init_weight(seed, "w_a_q", (h, d_k, d_k)[h == 1:], d_k)
        w_2 = init_weight(seed, "w_a_k", (h, d_k, d_k)[h == 1:], d_k)
        v_a = init_weight(seed, "v_a", (h, d_k)[h == 1:], d_k)
        for key, val, ax, f in (("w_a_q", w_1, ("d_k", "d_a"), r"W_1"), ("w_a_k", w_2, ("d_k", "d_a"), r"W_2"),
                                ("v_a", v_a, ("d_a",), r"v")):
            trace.add(key, f"Additive score parameter {f}", val, _heads(h, *ax), rf"{f} \text{{ (learned)}}",
                      why="The additive score learns its own small network to compare a query with a key "
                          + score_parameter_start(config))
        scores = att.additive_scores(q, k, w_1, w_2, v_a)
        trace.add("scores", "Additive scores", scores, _heads(h, "n_q", "n_k"),
                  (r"(S_h)_{ij} = v^{(h)\top} \tanh(W_1^{(h)\top} q_i + W_2^{(h)\top} k_j),\ q_i, k_j \text{ rows of } Q_h, K_h"
                   if h > 1 else r"S_{ij} = v^\top \tanh(W_1^\top q_i + W_2^\top k_j)"), qkv + ("w_a_q", "w_a_k", "v_a"),
                  why="Bahdanau's score: a one-hidden-layer network scores each (query, key) pair.")
        p.logits = "scores"
    else:
        w_b = init_weight(seed, "w_b", (h, d_k, d_k)[h == 1:], d_k)
        trace.add("w_b", "Bilinear score matrix W", w_b, _heads(h, "d_k", "d_k"), r"W \text{ (learned)}",
                  why="The bilinear score lets every dimension of a query meet every dimension of a key "
                      + score_parameter_start(config))
        scores = att.bilinear_scores(q, k, w_b)
        trace.add("scores", "Bilinear scores", scores, _heads(h, "n_q", "n_k"),
                  rf"S{sq} = Q{r}{sq}\, W{'^{(h)}' if h > 1 else ''}\, {kt}^\top",
                  qkv + ("w_b",), why="Luong's general score: a learned matrix between query and key.")
        p.logits = "scores"


def bias(p: Pass) -> None:
    """ALiBi: add −m_h·|i − j| to the scores of head h (before the mask)."""
    config, trace = p.config, p.trace
    if config.positional != "alibi":
        return
    h, n = config.n_heads, p.n
    b = alibi_bias(n, h)                                                        # (H, n, n)
    slopes = alibi_slopes(h)
    before = trace[p.logits]
    sym = r"\hat S" if p.logits == "scaled_scores" else "S"
    sq = "_h" if h > 1 else ""
    listed = ", ".join(f"m_{i} = {exact_slope(s)}" for i, s in enumerate(slopes[:4])) + (" …" if h > 4 else "")
    trace.add("alibi", "ALiBi bias B", b if h > 1 else b[0], _heads(h, "n_q", "n_k"),
              rf"(B{sq})_{{ij}} = -m{sq if h > 1 else '_0'}\, |i - j|,\quad m_h = 2^{{-8(h+1)/{h}}}"
              if h & (h - 1) == 0 else rf"(B{sq})_{{ij}} = -m_h\, |i - j|",
              why=f"Each key's score is lowered by its distance from the query, by a slope per head ({listed}): "
                  f"all else equal, nearer keys get more weight, and a head with a larger slope looks nearer. "
                  f"Nothing is added to X.")
    trace.add("biased_scores", "Scores with ALiBi", before.value + (b if h > 1 else b[0]), before.axes,
              rf"{sym}{sq} + B{sq}", (p.logits, "alibi"),
              why="The scores plus the bias: the same query–key match counts for less the further back the key is.")
    trace.facts["alibi_slopes"] = tuple(float(s) for s in slopes)
    if sym == "S":                               # the explainers' symbol: (S + B), not (Ŝ + B), for unscaled scores
        trace.facts.setdefault("symbols", {})["biased_scores"] = ("(S + B)", "(S+B)")
    p.logits = "biased_scores"


def mask(p: Pass) -> None:
    """M and S̃: hidden keys' scores become −∞."""
    config, trace, n = p.config, p.trace, p.n
    if config.mask == "none":
        return
    if config.mask == "causal":
        m = att.causal_mask(n)
        why = "Token i may look only at tokens 0..i: the future is hidden (as in a decoder)."
    elif config.mask == "padding":
        m = att.padding_mask(n, n, config.padding)
        hidden = ", ".join(str(q) for q in sorted(set(config.padding))) or "none"
        why = f"Key positions {hidden} are hidden from every query, as padding tokens are."
    else:
        w = config.window
        m = att.sliding_window_mask(n, w)
        why = (f"Token i sees itself and the {w - 1} token{'s' if w != 2 else ''} before it: W = {w} keys at most, "
               f"0 ≤ i − j < {w} (Mistral's paper writes i − W … i, one key more).")
        if w >= n:
            trace.notices.append(f"The window W = {w} is at least the {n} tokens: every query sees all earlier "
                                 "tokens, the same as the causal mask.")
    trace.add("mask", "Mask", m.astype(float), ("n_q", "n_k"),
              r"M_{ij} = \begin{cases} 1 & \text{query } i \text{ may see key } j \\ 0 & \text{hidden} \end{cases}",
              why=why, scale="mask")
    masked = att.apply_mask(trace[p.logits].value, m)
    before = {"scaled_scores": r"\hat S", "biased_scores": r"(\hat S + B)" if config.score == "scaled_dot" else "(S + B)"
              }.get(p.logits, "S")
    trace.add("masked_scores", "Masked scores", masked, trace[p.logits].axes,
              rf"\tilde S_{{ij}} = \begin{{cases}} {before}_{{ij}} & M_{{ij}} = 1 \\ -\infty & M_{{ij}} = 0 \end{{cases}}",
              (p.logits, "mask"), why="A hidden position's score becomes −∞, so its weight will be exactly 0.")
    p.logits, p.mask = "masked_scores", m
    empty = np.flatnonzero(~m.any(axis=1))
    if empty.size:
        trace.notices.append(f"Every key is hidden for query rows {', '.join(map(str, empty[:10]))}: their "
                             "weights are all 0 and their context is 0 (no NaN).")


def normalise(p: Pass) -> None:
    """A = softmax(· / T) over the keys, row by row."""
    config, trace = p.config, p.trace
    t = config.temperature
    weights = att.softmax(trace[p.logits].value, temperature=t)
    arg = softmax_argument(config)
    trace.add("weights", "Attention weights", weights, _heads(p.h, "n_q", "n_k"),
              rf"A_{{ij}} = \frac{{\exp({arg})_{{ij}}}}{{\sum_{{j'}} \exp({arg})_{{ij'}}}} = \mathrm{{softmax}}({arg})_{{ij}}",
              (p.logits,), scale="sequential",
              why=f"Each row becomes weights over the keys: {say('rows_sum_to_one', config)}."
                  + (f" Temperature {t:g} {'sharpens' if t < 1 else 'flattens'} it." if t != 1 else "")
                  + agreement_note(config, trace.token_labels(), weights))
    trace.facts["softmax_input"] = p.logits


def mix(p: Pass) -> None:
    """C = A V (per head; query head h mixes KV head ⌊h/g⌋'s values), heads side by side."""
    config, trace = p.config, p.trace
    h, h_kv, d_v = config.n_heads, config.kv_heads, config.d_v
    v = p.proj["v"] if h == 1 or h_kv == h else expand_kv(p.proj["v"], h)       # (H?, n, d_v)
    context = trace["weights"].value @ v                                        # (H?, n, d_v)
    sq = "_h" if h > 1 else ""
    vh = (r"_{\lfloor h/g \rfloor}" if h_kv < h else "_h") if h > 1 else ""
    trace.add("context", "Context vectors", context, _heads(h, "n", "d_v"), rf"C{sq} = A{sq} V{vh}",
              ("weights", "v_heads" if h > 1 else "v"),
              why="Row i is the weighted average of the value rows, with row i of the weights as the mix.")
    if h > 1:
        trace.add("concat", "Heads concatenated", att.merge_heads(context), ("n", "H·d_v"),
                  r"C = \left[\, C_0 \mid C_1 \mid \cdots \mid C_{H-1} \,\right]", ("context",),
                  why=f"The {h} heads' context vectors side by side: {h} × {d_v} = {h * d_v} columns.")


def output(p: Pass) -> None:
    """O = C W_O (+ b_O): back to d_model columns."""
    config, trace = p.config, p.trace
    h, d_v, seed, d_model = config.n_heads, config.d_v, config.seed, p.x.shape[1]
    given = p.weights and "w_o" in p.weights
    w_o = p.weights["w_o"] if given else init_weight(seed, "w_o", (h * d_v, d_model), h * d_v)
    trace.add("w_o", "W_O", w_o, ("H·d_v" if h > 1 else "d_v", "d_model"),
              rf"W_O \in \mathbb{{R}}^{{{h * d_v} \times {d_model}}}",
              why="The output projection mixes the heads back into d_model columns " + (
                  f"({p.weights['why']})." if given else "(shown at its seeded random start, N(0, 1/(H·d_v))"
                  + (": only W_Q, W_K, W_V are trained)." if config.weights == "trained" else ").")))
    out = trace["concat" if h > 1 else "context"].value @ w_o
    formula, inputs = r"O = C\, W_O", ("concat" if h > 1 else "context", "w_o")
    if config.bias:
        b_o = p.weights["b_o"] if given else init_bias(seed, "b_o", (d_model,))
        trace.add("b_o", "b_O", b_o, ("d_model",), rf"b_O \in \mathbb{{R}}^{{{d_model}}}", why="Output bias.")
        out = out + b_o
        formula, inputs = formula + " + b_O", inputs + ("b_o",)
    trace.add("output", "Output", out, ("n", "d_model"), formula, inputs,
              why="One new d_model-wide row per token, ready for the next layer; same shape as X.")


STAGES = (embed, position, project, rotate, score, bias, mask, normalise, mix, output)


def start(config: Config) -> Pass:
    """The words of the sentence (with notices for the words set aside), in an empty Trace."""
    vocab = vocabulary_for(config)
    known = (lambda w: True) if vocab is None else (lambda w: w in vocab)
    tokens = resolve(config.sentence, known, config.unknown)
    trace = Trace(tokens.words)
    trace.facts.update(config=config, kind="forward")
    if tokens.unknown:
        action = "dropped" if config.unknown == "drop" else "given the <unk> vector (the mean of all vectors)"
        trace.notices.append(f"Not in the vocabulary, {action}: {', '.join(tokens.unknown[:12])}"
                             + (" …" if len(tokens.unknown) > 12 else "") + ".")
    if tokens.skipped:
        trace.notices.append(set_aside(tokens.skipped))
    trace.facts.update(unknown=tokens.unknown, skipped=tokens.skipped,
                       source=vocab.name if vocab else f"seeded random ({config.d_model}-d)")
    return Pass(config, trace, vocab)


def attend(config: Config, x: np.ndarray, tokens, weights: dict | None = None, why: str = "") -> Trace:
    """The attention stages (project → … → output) on a given X (n, d_model), one row per token.

    A transformer block's attention sublayer reads the residual stream (normalised, with pre-norm), not the
    embeddings: the same stages, the same Steps and explainers, with `x` as "x". `weights` (w_q, w_k, w_v,
    w_o, their biases with config.bias, and "why": where they come from) replace the settings' draws.
    """
    trace = Trace(tuple(tokens))
    trace.facts.update(config=config, kind="forward", n=len(tokens), d_embed=x.shape[1], d_model=x.shape[1],
                       position="carried in the stream X", unknown=(), skipped=(), source="the residual stream")
    trace.add("x", "Input X", x, ("n", "d_model"), "X", why=why or "What the attention sublayer reads.")
    p = Pass(config, trace, None, x=np.asarray(x, dtype=np.float64), weights=weights)
    for stage in STAGES[2:]:
        stage(p)
    return trace


def run_forward(config: Config) -> Trace:
    """Turn settings into the Trace of the forward pass. Same Config, same numbers, always."""
    p = start(config)
    for stage in STAGES:
        stage(p)
    return p.trace
