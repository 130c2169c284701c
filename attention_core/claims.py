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
            if c.about == about and c.marker and c.marker in text and not c.holds(settings)]


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
      "tests/test_claims.py::test_weight_rows_sum_to_one_unless_every_key_is_hidden")

# ---- explanations of a clicked cell, and the export (explain.py, explain_gradients.py' forward part, export.py) ----


# ---- the quiz (quiz.py) ------------------------------------------------------------------------------


# ---- the training pages (classifier.py, explain_gradients.py, training_input.py; about="training") ---


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



def _pe_width(config) -> int:
    """The width of the sinusoidal or learned encoding under these settings: the embedding's width."""
    from .embeddings import vocabulary_for
    vocab = vocabulary_for(config)
    return config.d_model if vocab is None else vocab.dim


def _n_tokens(config) -> int:
    """How many tokens the sentence has under these settings (after the unknown-word policy)."""
    from .embeddings import vocabulary_for
    from .text import resolve
    vocab = vocabulary_for(config)
    return len(resolve(config.sentence, (lambda w: True) if vocab is None else (lambda w: w in vocab),
                       config.unknown).words)
