"""Sentences of the forward pages that depend on the settings: each is true under the settings it is
shown with (checked in tests/test_in_sight.py)."""
from __future__ import annotations

import numpy as np

from attention_core.math.embeddings import nearest, vocabulary_for

# sentence pairs with the same words in another order, the first whose words the vocabulary has is suggested
SWAPS = (("dog bites man", "man bites dog"), ("the cat sat on a mat", "a mat sat on the cat"),
         ("i love you", "you love i"))


def swap_hint(config) -> str:
    """A pair of sentences with the same words in another order, whose words the vocabulary has."""
    vocab = vocabulary_for(config)
    for a, b in SWAPS:
        if vocab is None or all(w in vocab for w in a.split()):
            return f"Try “{a}” and “{b}”: the same rows of Q, K and V, only reordered."
    return "Type the sentence's words in another order: the same rows of Q, K and V, only reordered."


def similarity_note(d: int, embedding: str, sim: np.ndarray) -> str:
    """What the sinusoidal table's similarity map `sim` (positions × positions) shows, true for width d."""
    if d % 2 == 0:
        shape = ("The similarity depends only on the distance p − p′ (the same along each diagonal): "
                 "each pair of columns (sin, cos) of one frequency turns by the same angle per step.")
    else:
        shape = (f"With an odd width (d = {d}) the last column is a sine without its cosine partner, so the "
                 "similarity depends almost, but not exactly, on the distance p − p′ alone (with an even width "
                 "it would be the same along each diagonal).")
    wider = ("try a wider d_model in the sidebar" if embedding == "random" else
             "pick seeded random embeddings in the sidebar to set a wider d_model (these "
             f"{'toy' if embedding == 'toy' else 'GloVe' if embedding == 'glove' else 'uploaded'} vectors "
             "fix it)")
    p = sim.shape[0]
    near = float(np.diagonal(sim, 1).min()) if p > 1 else 1.0       # the least alike neighbours
    far = float(max(np.diagonal(sim, k).max() for k in range(9, p))) if p > 9 else None
    if far is None:
        return shape
    if far < near:
        return shape + (f" With {d} dimensions it falls off with distance: neighbours have cosine ≥ {near:.2f}, "
                        f"positions 9 or more apart at most {far:.2f}.")
    return shape + (f" With only {d} dimensions the fast sinusoids repeat, and far positions can look alike: two "
                    f"positions 9 or more apart reach cosine {far:.2f}, more than neighbours ({near:.2f}): {wider}.")




MASK_WORDS = {"causal": "causal mask", "padding": "padding mask", "sliding_window": "sliding window"}


def position_intro(config, query: dict[str, str]) -> str:
    """The positional page's first paragraph: where position enters attention under these settings."""
    from .. import nav
    start = "Attention compares every token with every other, but nothing in Q Kᵀ knows **where** a token is"
    if config.positional == "rope":
        return (start + ": here the sidebar's Position is **RoPE**, which adds nothing to X. Position enters "
                "after the projections: each query and key is turned by an angle proportional to its position "
                "(page 3 shows Q^R and K^R; " + nav.md_link("app_pages/40_rope.py", "the RoPE page", query)
                + " shows the rotation). X below is the word vectors alone.")
    if config.positional == "alibi":
        return (start + ": here the sidebar's Position is **ALiBi**, which adds nothing to X, Q, K or V. "
                "Position enters at the scores: each head adds −m_h·|i − j|, less the further key j is from query "
                "i (page 5 shows it; " + nav.md_link("app_pages/41_masks.py", "the Masks & biases page", query)
                + " explains the slopes m_h). X below is the word vectors alone.")
    if config.mask == "none":
        return (start + ": without a positional encoding, shuffle the words and each row of the output just "
                "moves with its word. A positional encoding writes the position into the numbers.")
    return (start + f". The {MASK_WORDS[config.mask]} looks at positions, but all it does is hide keys by their "
            "index; where a token stands otherwise reaches attention only through a positional encoding, which "
            "writes the position into the numbers.")
