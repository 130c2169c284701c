"""Sentences true only under some settings: each written once, with when it holds and the test that proves it.

A sentence such as "attention cannot tell word order" is true without a positional encoding and without a
mask, and false with a causal mask. Such a sentence is registered here as a Claim: its words, the settings
it holds under (a predicate), those settings in words, and the property test that checks it on them.
Code that shows it asks `say(key, settings)`, which gives the words only where they hold (or the claim's
`otherwise`, which must be true everywhere else). tests/test_claims.py walks every page under a grid of
settings and fails when a claim's words are shown where it does not hold, and checks that every claim
names a property test that exists.

`settings` is the Config for the forward pass's claims (about="forward"); claims about another page's own
controls say so in `about` and are checked by that page's tests.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Claim:
    key: str
    text: str                               # the words (str.format fields allowed: say(..., **fields) fills them)
    holds: Callable[[object], bool]         # the settings under which the words are true
    condition: str                          # those settings, in words
    proof: str                              # the property test: "tests/test_file.py::test_name"
    about: str = "forward"                  # forward: holds(Config) | training: the training pages' settings | …
    otherwise: str = ""                     # shown instead where it does not hold (must be true there)

    @property
    def marker(self) -> str:
        """The longest literal run of the words (no format field): how a test finds the claim on a page."""
        import re
        runs = re.split(r"\{[^{}]*\}", self.text)
        return max(runs, key=len).strip()


CLAIMS: dict[str, Claim] = {}


def claim(key: str, text: str, holds: Callable[[object], bool], condition: str, proof: str,
          about: str = "forward", otherwise: str = "") -> Claim:
    if key in CLAIMS:
        raise ValueError(f"claim {key!r} registered twice")
    CLAIMS[key] = Claim(key, text, holds, condition, proof, about, otherwise)
    return CLAIMS[key]


def holds(key: str, settings) -> bool:
    return bool(CLAIMS[key].holds(settings))


def say(key: str, settings, **fields) -> str:
    """The claim's words if it holds under `settings`, else its `otherwise` ("" if none); fields filled in."""
    c = CLAIMS[key]
    return (c.text if c.holds(settings) else c.otherwise).format(**fields)


def shown_outside(text: str, settings, about: str = "forward") -> list[str]:
    """Keys of the claims whose words appear in `text` although they do not hold under `settings`."""
    return [c.key for c in CLAIMS.values()
            if c.about == about and c.marker and c.marker.lower() in text.lower() and not c.holds(settings)]


# ---- the forward pass (settings: Config) ------------------------------------------------------------

claim("order_blind",
      "attention cannot tell word order: shuffle the words and each row of the output just moves with its word",
      lambda c: c.positional == "none" and c.mask == "none",
      "no positional encoding and no mask (a causal or padding mask looks at positions)",
      "tests/test_claims.py::test_order_blind_is_permutation_equivariance")

claim("similar_meaning",
      "words used in similar contexts get similar rows",
      lambda c: c.embedding == "glove",
      "GloVe vectors (trained); not the toy table, seeded random or uploaded vectors of unknown origin",
      "tests/test_claims.py::test_glove_puts_related_words_closer_than_unrelated_ones")

claim("pe_relative",
      "the similarity depends only on the distance p − p′",
      lambda c: c.positional == "sinusoidal" and _pe_width(c) % 2 == 0,
      "sinusoidal encoding of even width (an odd width leaves a sine without its cosine)",
      "tests/test_claims.py::test_sinusoidal_similarity_depends_on_distance_alone_for_even_width")

claim("rows_sum_to_one",
      "non-negative, summing to 1",
      lambda c: c.mask != "padding" or len(set(c.padding)) < _n_tokens(c),
      "every query sees at least one key (a padding mask can hide them all)",
      "tests/test_claims.py::test_weight_rows_sum_to_one_unless_every_key_is_hidden",
      otherwise="non-negative; a row that sees at least one key sums to 1, a row whose keys are all hidden is all 0")

claim("rope_relative",
      "q^R_i · k^R_j = q_i · R_{{j−i}} k_j, so position enters the score only through j − i",
      lambda c: c.positional == "rope" and c.score in ("dot", "scaled_dot"),
      "RoPE with a dot-product score (scaled or not): a rotation by p then by p′ is one by p′ − p; an additive or "
      "bilinear score mixes the rotated columns first, and the distance alone no longer decides",
      "tests/test_forward_today.py::test_rope_scores_depend_on_the_distance_only")

# ---- explanations of a clicked cell, and the export (explain.py, explain_gradients.py' forward part, export.py) ----

claim("scaling_stops_growth",
      "dividing by √d_k keeps the spread from growing with d_k",
      lambda c: c.score == "scaled_dot",
      "the scaled dot-product score, the one score divided by √d_k (a raw dot product's spread does grow "
      "with d_k: a sum of d_k products)",
      "tests/test_explain.py::test_dividing_by_sqrt_dk_keeps_the_spread_from_growing_with_dk")

claim("scaling_unit_spread",
      "if the entries of q_i and k_j were independent, with mean 0 and variance 1, q_i · k_j would have "
      "variance d_k and q_i · k_j / √d_k variance 1",
      lambda c: c.score == "scaled_dot",
      "the scaled dot-product score; the sentence carries its own condition (independent unit-variance "
      "entries), which the explorer's Q and K need not meet (index positions, 13 tokens, trained weights: "
      "rows of Ŝ spread with a standard deviation above 3), so the explainer also prints the spread it measured",
      "tests/test_explain.py::test_unit_variance_entries_give_scaled_scores_of_variance_one")


# ---- the quiz (quiz.py) ------------------------------------------------------------------------------

claim("quiz_rows_not_columns",
      "Each row of A sums to 1 (one query's distribution over the keys); a column need not: a popular key "
      "collects more than 1, an ignored one less",
      lambda c: holds("rows_sum_to_one", c),
      "every query sees at least one key (a padding mask can hide them all)",
      "tests/test_quiz.py::test_column_sum_explanation_says_rows_sum_to_one_only_where_they_do",
      otherwise="The mask hides every key here, so every weight is 0: each row and each column of A sums to 0")


# ---- the training pages (classifier.py, explain_gradients.py, training_input.py; about="training") ---
# settings: training_input.TrainingSettings (positional index | sinusoidal | none | None, combine, n_heads,
# frozen, embedding, forward: the shared Config the training-step page starts from, or None).

def _classifier_is_the_forward_pass(config) -> bool:
    """The classifier (one head, Ŝ = QKᵀ/√d_k, no mask, T = 1, biases 0, seeded weights) computes what the
    forward pass does under these shared settings: none of them has to be switched."""
    return (config.n_heads == 1 and config.score == "scaled_dot" and config.mask == "none"
            and config.temperature == 1 and not config.bias and config.weights == "random"
            and config.positional != "learned")


claim("train_order_blind",
      "the classifier cannot tell word order: shuffle the words and its prediction stays the same",
      lambda s: s.positional == "none",
      "Position = none on the training pages (an index column or sinusoids put each word's place into X; "
      "then attention's rows no longer just move with their words, and the mean over them changes)",
      "tests/test_classifier.py::test_without_position_the_prediction_ignores_word_order",
      about="training")

claim("train_b_k_zero",
      "It is 0 up to rounding: b_K adds q_i · b_K / √d_k to every score of row i, and softmax ignores a "
      "shift of a whole row, so b_K cannot change the loss.",
      lambda s: s.n_heads == 1,
      "one head (the classifier always scores q_i · k_j / √d_k, each row its own softmax over every key; "
      "with H heads q_i and b_K are H·d_k wide and each head's row shifts by its own q_{h,i} · b_{K,h} / √d_k)",
      "tests/test_classifier.py::test_key_bias_shifts_each_row_by_q_dot_b_k_over_sqrt_d_k",
      about="training")

claim("train_same_as_forward",
      "Under these settings the classifier's W_Q, W_K, W_V are the forward pages' (same seed, same shapes), so "
      "Q, K, V, the scaled scores Ŝ and the weights A below start equal to pages 3–5's.",
      lambda s: s.forward is not None and _classifier_is_the_forward_pass(s.forward),
      "the training-step page under shared settings the classifier takes as they are: one head, the scaled dot "
      "product, no mask, temperature 1, no biases, the seeded random weights, no learned position table",
      "tests/test_training_pages.py::test_classifier_starts_equal_to_the_forward_pass_exactly_when_claimed",
      about="training")


# ---- variants and labs (score functions, alignment, grid, PyTorch, pitfalls) ------------------------

# The score functions page (about="forward": it reads the sidebar's Config). Both sentences state their
# condition in their words (random q and k with independent, zero-mean, unit-variance components): they are
# true under every setting, and say nothing about this page's own Q and K, which are learned or seeded.
claim("dot_variance_grows",
      "for q and k with independent, zero-mean, unit-variance components, q · k has variance d_k: "
      "its spread grows like √d_k",
      lambda c: True,
      "every setting: the condition (random q and k with independent, zero-mean, unit-variance components) "
      "is part of the sentence",
      "tests/test_score_functions.py::test_dot_product_variance_is_d_k_for_unit_variance_components")

claim("scaled_variance_one",
      "for q and k with independent, zero-mean, unit-variance components, q · k / √d_k has variance 1 "
      "whatever d_k is",
      lambda c: True,
      "every setting: the condition (random q and k with independent, zero-mean, unit-variance components) "
      "is part of the sentence",
      "tests/test_score_functions.py::test_scaled_dot_product_variance_is_1_for_unit_variance_components")


# ---- the transformer block page (about="block": settings are (Config, Arch), forward/transformer.py) -----------

claim("block_post_layer0",
      "With post-norm, layer 0's attention reads X itself, so its output O_0 is exactly the attention pages' O.",
      lambda s: s[1].placement == "post",
      "post-norm: layer 0 reads the stream X₀ = X unnormalised, with the attention pages' own weights; pre-norm's "
      "layer 0 reads N(X₀), other rows, so another O",
      "tests/test_block.py::test_post_norm_layer_0_is_the_attention_pages_output",
      about="block",
      otherwise="With pre-norm, layer 0's attention reads N(X₀), not X: its output differs from the attention "
                "pages' O, though the weights are the same.")

claim("block_tied",
      "W_U is tied to the embeddings: column v of W_U is the embedding of word v, so the logit of word v at "
      "position i is the final row of token i dotted with word v's own vector.",
      lambda s: not (s[0].positional == "index" or s[0].positional in ("sinusoidal", "learned")
                     and s[0].combine == "concat"),
      "the positions are added to X_emb (or left out), so X_emb is d_model wide and its rows fit W_U's columns",
      "tests/test_block.py::test_tied_unembedding_scores_a_word_by_its_own_embedding",
      about="block",
      otherwise="W_U is seeded N(0, 1/d_model): the positions are concatenated to X_emb here, so an embedding row "
                "is narrower than d_model and cannot be a column of W_U.")


def _pe_width(config) -> int:
    """The width of the sinusoidal or learned encoding under these settings: the embedding's width."""
    from ..math.embeddings import vocabulary_for
    vocab = vocabulary_for(config)
    return config.d_model if vocab is None else vocab.dim


def _n_tokens(config) -> int:
    """How many tokens the sentence has under these settings (after the unknown-word policy)."""
    from ..math.embeddings import vocabulary_for
    from ..math.text import resolve
    vocab = vocabulary_for(config)
    return len(resolve(config.sentence, (lambda w: True) if vocab is None else (lambda w: w in vocab),
                       config.unknown).words)
