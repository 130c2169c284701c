"""run_forward(config) -> Trace: every intermediate of the attention forward pass, named."""
from __future__ import annotations

import zlib

import numpy as np

from . import attention as att
from .claims import say
from .config import Config, ConfigError
from .embeddings import embedding_why, embed, vocabulary_for
from .positional import index_feature, learned_encoding, sinusoidal_encoding
from .text import resolve
from .notation import softmax_argument
from .trace import Trace


def param_rng(seed: int, name: str) -> np.random.Generator:
    """One generator per parameter: changing d_v does not reshuffle W_q."""
    return np.random.default_rng([seed, zlib.crc32(name.encode())])


def init_weight(seed: int, name: str, shape: tuple[int, ...], fan_in: int) -> np.ndarray:
    """N(0, 1/fan_in): keeps X W at about the scale of X."""
    return param_rng(seed, name).standard_normal(shape) / np.sqrt(fan_in)


def init_bias(seed: int, name: str, shape: tuple[int, ...]) -> np.ndarray:
    return 0.1 * param_rng(seed, name).standard_normal(shape)


def projection_weights(config: Config, d_model: int) -> dict:
    """{"w_q", "w_k", "w_v" (d_model, H·d_k / H·d_v), "b_q", "b_k", "b_v" when config.bias, "why"}:
    trained on the sentiment sentences (pretrained.py), or at their seeded random start."""
    if config.weights == "trained":
        from .pretrained import trained_weights
        t = trained_weights(config)
        return {**t.params, "why": t.why}
    h, d_k, d_v, seed = config.n_heads, config.d_k, config.d_v, config.seed
    out = {"why": "Seeded random weights, N(0, 1/d_model): the start training would begin from; nothing here "
                  "has been trained, so the attention they give means nothing yet."}
    for name, width in (("q", h * d_k), ("k", h * d_k), ("v", h * d_v)):
        out[f"w_{name}"] = init_weight(seed, f"w_{name}", (d_model, width), d_model)
        if config.bias:
            out[f"b_{name}"] = init_bias(seed, f"b_{name}", (width,))
    return out


def _scaling_why(d_k: int, scaled: np.ndarray, weights: str) -> str:
    """Why divide by √d_k, with the spread the scores have here (trained weights can widen it on purpose)."""
    spread = float(np.mean(np.std(scaled, axis=-1)))          # standard deviation within a row, averaged
    why = (f"Dividing by √d_k = {np.sqrt(d_k):.3g} stops the scores' spread growing with d_k, so softmax does not "
           f"saturate just because d_k is large. Their spread here: {spread:.2g} (standard deviation within a row)")
    if weights == "random":
        return why + ", from the seeded random weights."
    return why + ": what the trained weights learned, and what makes softmax peaked or flat."


def _order_note(config: Config) -> str:
    """Whether attention can tell word order here: only said where it holds (claims.py: order_blind)."""
    blind = say("order_blind", config)
    return f" So {blind}." if blind else ""


def _agreement_note(config: Config, labels: list[str], weights: np.ndarray) -> str:
    """With trained W_Q, W_K: how many rows put their largest weight on the same key, counted here."""
    if config.weights != "trained" or config.score not in ("dot", "scaled_dot"):
        return ""
    rows = weights.reshape(-1, weights.shape[-1])                        # (H·n_q, n_k)
    rows = rows[rows.sum(axis=1) > 0]                                    # rows whose keys are all hidden say nothing
    if not len(rows):
        return ""
    top = np.bincount(rows.argmax(axis=1), minlength=weights.shape[-1])  # (n_k,): rows whose largest weight is key j
    j = int(top.argmax())
    heads = f" (all {weights.shape[0]} heads)" if weights.ndim == 3 else ""
    return (f" W_Q and W_K were trained for a sentiment classifier that averages every word's row: here "
            f"{int(top[j])} of the {len(rows)} rows{heads} put their largest weight on “{labels[j]}”.")


def _heads(h: int, *axes: str) -> tuple[str, ...]:
    return (("head",) if h > 1 else ()) + axes


def position_encoding(config: Config, n: int, d_embed: int) -> np.ndarray | None:
    """The positional encoding the settings ask for, (n, d_embed) or (n, 1) for "index"; None for "none"."""
    if config.positional == "sinusoidal":
        return sinusoidal_encoding(n, d_embed, config.pe_base)
    if config.positional == "learned":
        return learned_encoding(n, d_embed, config.seed)
    if config.positional == "index":
        return index_feature(n)
    return None


def with_position(config: Config, x_embed: np.ndarray, pe: np.ndarray | None) -> np.ndarray:   # (n, d_model)
    """X from the embeddings and the positional encoding: added, concatenated, or X_emb alone."""
    if pe is None:
        return x_embed
    if config.positional == "index" or config.combine == "concat":
        return np.concatenate([x_embed, pe], axis=1)
    return x_embed + pe


def encode(config: Config, sentence: str, vocab) -> tuple[tuple[str, ...], np.ndarray]:
    """(words, X (n, d_model)): a sentence as the forward pass encodes it under these settings
    (the unknown-word policy, the embedding source, the positional encoding and how it is combined).
    Training the weights (pretrained.py) encodes its sentences with this same function."""
    known = (lambda w: True) if vocab is None else (lambda w: w in vocab)
    words = resolve(sentence, known, config.unknown).words
    x_embed = embed(words, vocab, config.d_model, config.seed)                 # (n, d_embed)
    return words, with_position(config, x_embed, position_encoding(config, *x_embed.shape))


def run_forward(config: Config) -> Trace:
    """Turn settings into the Trace of the forward pass. Same Config, same numbers, always."""
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
        trace.notices.append(f"Not words, set aside: {' '.join(tokens.skipped[:20])}")
    trace.facts.update(unknown=tokens.unknown, skipped=tokens.skipped,
                       source=vocab.name if vocab else f"seeded random ({config.d_model}-d)")

    # -- embedding: one row per token ------------------------------------------------------
    x_embed = embed(tokens.words, vocab, config.d_model, config.seed)          # (n, d_embed)
    n, d_embed = x_embed.shape
    trace.add("x_embed", "Embeddings", x_embed, ("n", "d_embed"),
              r"X_{\text{emb}} = \begin{bmatrix} e(w_0) \\ \vdots \\ e(w_{n-1}) \end{bmatrix}",
              why=embedding_why(config, d_embed))

    # -- positional encoding ---------------------------------------------------------------
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
    if pe is None:
        how = "none (no positional encoding): a word's row is the same wherever it stands"
        if config.mask != "none":
            how += f"; only the {config.mask} mask looks at positions, by hiding keys by their index"
        formula = r"X = X_{\text{emb}}"
    elif config.positional == "index" or config.combine == "concat":
        how = f"concatenated: d_model = {d_embed} + {pe.shape[1]} = {x.shape[1]}"
        formula = r"X = \left[\, X_{\text{emb}} \;\middle|\; PE \,\right]"
    else:
        how = f"added element-wise: d_model stays {d_embed}"
        formula = r"X = X_{\text{emb}} + PE"
    d_model = x.shape[1]
    trace.add("x", "Input X", x, ("n", "d_model"), formula, ("x_embed", "pe") if pe is not None else ("x_embed",),
              why=f"The matrix attention works on. Position in X: {how}." + _order_note(config))
    trace.facts.update(n=n, d_embed=d_embed, d_model=d_model, position=how)

    h, d_k, d_v, seed = config.n_heads, config.d_k, config.d_v, config.seed
    # No d_model % h check: W_q is (d_model, H·d_k) with d_k its own setting, so H·d_k need not be d_model.
    if config.mask == "padding":
        bad = [p for p in config.padding if p >= n]
        if bad:
            raise ConfigError(f"Padding position {bad[0]} is past the last token (positions run 0 to {n - 1}). "
                              "Unhide it (the mask's hidden positions), or type a longer sentence.")
    trace.facts.update(n_heads=h, d_k=d_k, d_v=d_v)
    learned = projection_weights(config, d_model)                                         # w_q, w_k, w_v (and b_*)
    trace.facts.update(weights=config.weights, weights_why=learned["why"])

    # -- projections -----------------------------------------------------------------------
    proj = {}
    for name, width in (("q", h * d_k), ("k", h * d_k), ("v", h * d_v)):
        w = learned[f"w_{name}"]                                                # (d_model, width)
        d_name = "d_v" if name == "v" else "d_k"
        cols = f"H·{d_name}" if h > 1 else d_name
        trace.add(f"w_{name}", f"W_{name.upper()}", w, ("d_model", cols),
                  rf"W_{name.upper()} \in \mathbb{{R}}^{{{d_model} \times {width}}}",
                  why=f"{learned['why']} Their shape does not depend on the sentence length.")
        value = x @ w                                                           # (n, width)
        inputs = ("x", f"w_{name}")
        formula = rf"{name.upper()} = X W_{name.upper()}"
        if config.bias:
            b = learned[f"b_{name}"]                                            # (width,)
            trace.add(f"b_{name}", f"b_{name.upper()}", b, (cols,), rf"b_{name.upper()} \in \mathbb{{R}}^{{{width}}}",
                      why="A bias added to every row" + (", trained with the weights." if config.weights == "trained"
                                                          else ", at its seeded random start."))
            value = value + b
            inputs += (f"b_{name}",)
            formula += rf" + b_{name.upper()}"
        role = {"q": "what token i is looking for", "k": "what token i offers to be found by",
                "v": "what token i passes on when it is attended to"}[name]
        trace.add(name, {"q": "Queries Q", "k": "Keys K", "v": "Values V"}[name], value, ("n", cols),
                  formula, inputs, why=f"Row i is {role}.")
        proj[name] = value if h == 1 else att.split_heads(value, h)            # (h?, n, d)
        if h > 1:
            trace.add(f"{name}_heads", f"{name.upper()} split into heads", proj[name], ("head", "n", d_name),
                      rf"{name.upper()}_h = {name.upper()}_{{[:,\, h \cdot {d_name} : (h+1) \cdot {d_name}]}}",
                      (name,), why=f"Head h takes its own block of {d_k if name != 'v' else d_v} columns.")
    q, k, v = proj["q"], proj["k"], proj["v"]
    qkv = ("q_heads", "k_heads") if h > 1 else ("q", "k")
    sq = "_h" if h > 1 else ""

    # -- scores ----------------------------------------------------------------------------
    if config.score in ("dot", "scaled_dot"):
        scores = att.dot_scores(q, k)
        trace.add("scores", "Scores QKᵀ", scores, _heads(h, "n_q", "n_k"), rf"S{sq} = Q{sq} K{sq}^\top", qkv,
                  why="Entry (i, j) is the dot product of query i with key j: large when they point the same way.")
        logits_key = "scores"
        if config.score == "scaled_dot":
            scaled = scores / np.sqrt(d_k)
            trace.add("scaled_scores", "Scaled scores", scaled, _heads(h, "n_q", "n_k"),
                      rf"\hat S{sq} = \frac{{S{sq}}}{{\sqrt{{d_k}}}} = \frac{{Q{sq} K{sq}^\top}}{{\sqrt{{{d_k}}}}}",
                      ("scores",), why=_scaling_why(d_k, scaled, config.weights))
            logits_key = "scaled_scores"
    elif config.score == "additive":
        w_1 = init_weight(seed, "w_a_q", (h, d_k, d_k)[h == 1:], d_k)
        w_2 = init_weight(seed, "w_a_k", (h, d_k, d_k)[h == 1:], d_k)
        v_a = init_weight(seed, "v_a", (h, d_k)[h == 1:], d_k)
        for key, val, ax, f in (("w_a_q", w_1, ("d_k", "d_a"), r"W_1"), ("w_a_k", w_2, ("d_k", "d_a"), r"W_2"),
                                ("v_a", v_a, ("d_a",), r"v")):
            trace.add(key, f"Additive score parameter {f}", val, _heads(h, *ax), rf"{f} \text{{ (learned)}}",
                      why="The additive score learns its own small network to compare a query with a key "
                          "(shown at its seeded random start, N(0, 1/d_k): "
                          + ("only W_Q, W_K, W_V were trained, for scaled dot-product scores)." if config.weights == "trained"
                             else "no weight here is trained)."))
        scores = att.additive_scores(q, k, w_1, w_2, v_a)
        trace.add("scores", "Additive scores", scores, _heads(h, "n_q", "n_k"),
                  (r"(S_h)_{ij} = v^{(h)\top} \tanh(W_1^{(h)\top} q_i + W_2^{(h)\top} k_j),\ q_i, k_j \text{ rows of } Q_h, K_h"
                   if h > 1 else r"S_{ij} = v^\top \tanh(W_1^\top q_i + W_2^\top k_j)"), qkv + ("w_a_q", "w_a_k", "v_a"),
                  why="Bahdanau's score: a one-hidden-layer network scores each (query, key) pair.")
        logits_key = "scores"
    else:
        w_b = init_weight(seed, "w_b", (h, d_k, d_k)[h == 1:], d_k)
        trace.add("w_b", "Bilinear score matrix W", w_b, _heads(h, "d_k", "d_k"), r"W \text{ (learned)}",
                  why="The bilinear score lets every dimension of a query meet every dimension of a key "
                      "(shown at its seeded random start, N(0, 1/d_k): "
                      + ("only W_Q, W_K, W_V were trained, for scaled dot-product scores)." if config.weights == "trained"
                         else "no weight here is trained)."))
        scores = att.bilinear_scores(q, k, w_b)
        trace.add("scores", "Bilinear scores", scores, _heads(h, "n_q", "n_k"),
                  rf"S{sq} = Q{sq}\, W{'^{(h)}' if h > 1 else ''}\, K{sq}^\top",
                  qkv + ("w_b",), why="Luong's general score: a learned matrix between query and key.")
        logits_key = "scores"

    # -- mask ------------------------------------------------------------------------------
    mask = None
    if config.mask == "causal":
        mask = att.causal_mask(n)
        why = "Token i may look only at tokens 0..i: the future is hidden (as in a decoder)."
    elif config.mask == "padding":
        mask = att.padding_mask(n, n, config.padding)
        hidden = ", ".join(str(p) for p in sorted(set(config.padding))) or "none"
        why = f"Key positions {hidden} are hidden from every query, as padding tokens are."
    if mask is not None:
        trace.add("mask", "Mask", mask.astype(float), ("n_q", "n_k"),
                  r"M_{ij} = \begin{cases} 1 & \text{query } i \text{ may see key } j \\ 0 & \text{hidden} \end{cases}",
                  why=why, scale="mask")
        masked = att.apply_mask(trace[logits_key].value, mask)
        before = r"\hat S" if logits_key == "scaled_scores" else "S"
        trace.add("masked_scores", "Masked scores", masked, _heads(h, "n_q", "n_k"),
                  rf"\tilde S_{{ij}} = \begin{{cases}} {before}_{{ij}} & M_{{ij}} = 1 \\ -\infty & M_{{ij}} = 0 \end{{cases}}",
                  (logits_key, "mask"), why="A hidden position's score becomes −∞, so its weight will be exactly 0.")
        logits_key = "masked_scores"
        empty = np.flatnonzero(~mask.any(axis=1))
        if empty.size:
            trace.notices.append(f"Every key is hidden for query rows {', '.join(map(str, empty[:10]))}: their "
                                 "weights are all 0 and their context is 0 (no NaN).")

    # -- softmax ---------------------------------------------------------------------------
    t = config.temperature
    weights = att.softmax(trace[logits_key].value, temperature=t)
    arg = softmax_argument(config)
    trace.add("weights", "Attention weights", weights, _heads(h, "n_q", "n_k"),
              rf"A_{{ij}} = \frac{{\exp({arg})_{{ij}}}}{{\sum_{{j'}} \exp({arg})_{{ij'}}}} = \mathrm{{softmax}}({arg})_{{ij}}",
              (logits_key,), scale="sequential",
              why=f"Each row becomes weights over the keys: {say('rows_sum_to_one', config)}."
                  + (f" Temperature {t:g} {'sharpens' if t < 1 else 'flattens'} it." if t != 1 else "")
                  + _agreement_note(config, trace.token_labels(), weights))

    # -- context ---------------------------------------------------------------------------
    context = weights @ v                                                     # (h?, n, d_v)
    trace.add("context", "Context vectors", context, _heads(h, "n", "d_v"), rf"C{sq} = A{sq} V{sq}",
              ("weights", "v_heads" if h > 1 else "v"),
              why="Row i is the weighted average of the value rows, with row i of the weights as the mix.")
    if h > 1:
        concat = att.merge_heads(context)
        trace.add("concat", "Heads concatenated", concat, ("n", "H·d_v"),
                  r"C = \left[\, C_0 \mid C_1 \mid \cdots \mid C_{H-1} \,\right]", ("context",),
                  why=f"The {h} heads' context vectors side by side: {h} × {d_v} = {h * d_v} columns.")
    w_o = init_weight(seed, "w_o", (h * d_v, d_model), h * d_v)
    trace.add("w_o", "W_O", w_o, ("H·d_v" if h > 1 else "d_v", "d_model"),
              rf"W_O \in \mathbb{{R}}^{{{h * d_v} \times {d_model}}}",
              why="The output projection mixes the heads back into d_model columns (shown at its seeded random "
                  "start, N(0, 1/(H·d_v))" + (": only W_Q, W_K, W_V are trained)." if config.weights == "trained" else ")."))
    output = (att.merge_heads(context) if h > 1 else context) @ w_o
    formula, inputs = r"O = C\, W_O", ("concat" if h > 1 else "context", "w_o")
    if config.bias:
        b_o = init_bias(seed, "b_o", (d_model,))
        trace.add("b_o", "b_O", b_o, ("d_model",), rf"b_O \in \mathbb{{R}}^{{{d_model}}}", why="Output bias.")
        output = output + b_o
        formula, inputs = formula + " + b_O", inputs + ("b_o",)
    trace.add("output", "Output", output, ("n", "d_model"), formula, inputs,
              why="One new d_model-wide row per token, ready for the next layer; same shape as X.")
    trace.facts["softmax_input"] = logits_key
    return trace
