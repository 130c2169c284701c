"""The sentences of why the stages attach to their Steps, where a sentence depends on the settings or on
the numbers: what an embedding row is, why divide by √d_k (with the spread here), whether attention can
tell word order, how trained rows agree, how query heads share KV heads, an ALiBi slope written exactly.

    >>> exact_slope(0.0625), exact_slope(2 ** -0.5), groups_text(4, 2)
    ('1/16', '2^(-0.5)', 'query heads 0–1 → KV head 0, 2–3 → KV head 1')

A sentence true only under some settings comes from claims.py (`say`), and is shown only where it holds.
"""
from __future__ import annotations

import numpy as np

from ..math.embeddings import nearest, vocabulary_for
from .claims import say
from .config import Config

MASK_WORDS = {"causal": "causal", "padding": "padding", "sliding_window": "sliding-window"}


def embedding_why(config, d_embed: int) -> str:
    """What an embedding row is, for this source: only trained vectors put similar words close."""
    if config.embedding == "glove":
        return (f"Each word becomes a row: its {d_embed}-number GloVe vector, trained on word co-occurrences "
                f"in 6 billion tokens of text, so {say('similar_meaning', config)}.")
    if config.embedding == "upload":
        return (f"Each word becomes a row: its {d_embed}-number vector from your file. If your vectors were "
                "trained (GloVe, word2vec, fastText…), words with similar meaning get similar rows; if not, "
                "closeness means nothing.")
    if config.embedding == "toy":
        vocab = vocabulary_for(config)
        (near, cos), = nearest(vocab, "the", 1)
        return (f"Each word becomes a row: its {d_embed} hand-picked numbers from a toy table of {len(vocab.words)} "
                "words (dimensions read loosely as you-ness, presence, warmth). They are not trained, so "
                f"closeness here is not meaning: the nearest neighbour of “the” is “{near}” (cosine {cos:.2f}).")
    return (f"Each word becomes a row: {d_embed} numbers drawn from N(0, 1) by a generator seeded with the word "
            "(the same word always gets the same row). They carry no meaning: how close two words are is chance.")


def order_note(config: Config) -> str:
    """Whether attention can tell word order here: only said where it holds (claims.py: order_blind)."""
    blind = say("order_blind", config)
    return f" So {blind}." if blind else ""


def kv_weights_note(config: Config) -> str:
    """W_K and W_V with fewer KV heads than query heads (and, trained, how they were pooled)."""
    h, h_kv = config.n_heads, config.kv_heads
    if config.weights == "trained":
        return (f" Grouped-query attention: {h_kv} KV head{'s' if h_kv > 1 else ''} for {h} query heads. Each KV "
                f"head's columns are the mean of its group's {h // h_kv} trained heads' columns, as the GQA paper "
                "turns a multi-head checkpoint into a grouped one (before uptraining, which is not done here).")
    return f" Grouped-query attention: {h_kv} KV head{'s' if h_kv > 1 else ''} for {h} query heads."


def groups_text(h: int, h_kv: int) -> str:
    """'query heads 0–1 → KV head 0, 2–3 → KV head 1'."""
    g = h // h_kv
    spans = [f"{a * g}–{a * g + g - 1}" if g > 1 else f"{a * g}" for a in range(h_kv)]
    return "query heads " + ", ".join(f"{s} → KV head {a}" for a, s in enumerate(spans))


def score_parameter_start(config: Config) -> str:
    """The additive and bilinear scores' own parameters are never trained: said after what they do."""
    return ("(shown at its seeded random start, N(0, 1/d_k): "
            + ("only W_Q, W_K, W_V were trained, for scaled dot-product scores)." if config.weights == "trained"
               else "no weight here is trained)."))


def scaling_why(d_k: int, scaled: np.ndarray, weights: str) -> str:
    """Why divide by √d_k, with the spread the scores have here (trained weights can widen it on purpose)."""
    spread = float(np.mean(np.std(scaled, axis=-1)))          # standard deviation within a row, averaged
    why = (f"Dividing by √d_k = {np.sqrt(d_k):.3g} stops the scores' spread growing with d_k, so softmax does not "
           f"saturate just because d_k is large. Their spread here: {spread:.2g} (standard deviation within a row)")
    if weights == "random":
        return why + ", from the seeded random weights."
    return why + ": what the trained weights learned, and what makes softmax peaked or flat."


def exact_slope(s: float) -> str:
    """1/2, 1/256, or 2^(−0.5) when not a power-of-two fraction."""
    e = np.log2(s)
    return f"1/{int(round(2 ** -e))}" if abs(e - round(e)) < 1e-12 else f"2^({e:g})"


def agreement_note(config: Config, labels: list[str], weights: np.ndarray) -> str:
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
    if len(rows) == 1:
        return (f" W_Q and W_K were trained for a sentiment classifier that averages every word's row: here the one "
                f"row puts all its weight on “{labels[j]}”, the only key.")
    return (f" W_Q and W_K were trained for a sentiment classifier that averages every word's row: here "
            f"{int(top[j])} of the {len(rows)} rows{heads} put their largest weight on “{labels[j]}”.")
