"""The RoPE page's claims: the sentences true only under some settings (about="rope"), and the settings they read.

Each claim is a row of ROPE_CLAIMS (key, words, when it holds, that condition in words, the test in
tests/test_rope.py that proves it, what the page says otherwise), registered in forward.claims.
"""
from __future__ import annotations

from dataclasses import dataclass

from ...forward.claims import _n_tokens, claim, say
from ...forward.config import Config

DOT_SCORES = ("dot", "scaled_dot")


@dataclass(frozen=True)
class RopeSettings:
    """What the page's sentences read: the settings it computes with (the sidebar's, Position = RoPE) and its
    own controls (the pairing, the shift)."""
    config: Config
    pairing: str = "interleaved"           # interleaved (the forward pass's) | half (a comparison)
    offset: int = 0                        # the shift of the whole sentence (section 5)
    n: int = 0                             # tokens (0: counted from the config's sentence)

    def __post_init__(self):
        if not self.n:
            object.__setattr__(self, "n", _n_tokens(self.config))

    @property
    def d_k(self) -> int:
        return self.config.d_k

    @property
    def dot(self) -> bool:
        """The scores are dot products of the rotated rows (scaled or not)."""
        return self.config.score in DOT_SCORES


_NOT_DOT = ("an additive or bilinear score is not a dot product of the two rotated rows: it mixes their columns "
            "first, so it can see where the two tokens stand, not only how far apart")
_PAIRINGS_TEST = "test_pairings_differ_unless_d_k_is_2_or_one_token"

# (key, the words, holds(settings), the condition in words, the test in tests/test_rope.py, the words otherwise)
ROPE_CLAIMS = (
    ("rope_distance_only",
     "the score of query i with key j sees their positions only through the distance j − i: "
     "$q^R_i \\cdot k^R_j = q_i^\\top R_i^\\top R_j\\, k_j = q_i \\cdot R_{{j-i}}\\, k_j$",
     lambda s: s.dot,
     "a dot-product score (scaled or not) of the rotated rows: a rotation by i undone by its transpose and one by "
     "j make one by j − i; an additive or bilinear score mixes the rotated columns before comparing them",
     "test_lesson_scores_are_q_dot_r_of_the_distance_k", _NOT_DOT),
    ("rope_shift_invariant",
     "every score stays the same when the whole sentence moves (exactly in real arithmetic, here up to float64 "
     "rounding)",
     lambda s: s.dot,
     "a dot-product score (scaled or not) of the rotated rows: moving both positions by the same offset leaves "
     "p′ − p, and so q · R_{p′−p} k, as it was; not an additive or bilinear score",
     "test_dot_product_scores_depend_only_on_the_distance",
     "an additive or bilinear score of the rotated rows is not their dot product, so nothing keeps it the same "
     "when the whole sentence moves"),
    ("rope_rows_move",
     "the rotated rows move: pair i of every row turns {offset}·θ_i further",
     lambda s: s.offset > 0,
     "an offset above 0 (at 0 every token keeps its position); pair 0 then turns by the offset in radians, "
     "never a whole number of turns",
     "test_a_shift_above_0_moves_every_rotated_row", "offset 0: every token keeps its position, so nothing moves"),
    ("rope_pairings_differ",
     "the two pairings rotate different pairs of columns, so weights made for one give other scores under "
     "the other unless their columns are permuted",
     lambda s: s.d_k >= 4 and s.n >= 2,
     "d_k ≥ 4 and at least two tokens (with d_k = 2 there is one pair, (x_0, x_1), in both; with one token at "
     "position 0, R_0 = I turns nothing in either)",
     _PAIRINGS_TEST, ""),
    ("rope_one_pair",
     "with d_k = 2 there is one pair, (x_0, x_1): both pairings rotate it alike",
     lambda s: s.d_k == 2,
     "d_k = 2: the interleaved pair (x_0, x_1) and the half pair (x_0, x_{0+1}) are the same columns",
     _PAIRINGS_TEST, ""),
    ("rope_one_token",
     "with one token at position 0 nothing turns, so both pairings give the same numbers here",
     lambda s: s.n == 1,
     "a one-token sentence: its only position is 0, and R_0 is the identity",
     _PAIRINGS_TEST, ""),
    ("rope_half_not_forward",
     "so these Q^R, K^R and scores are not the forward pass's, which turns interleaved pairs (x_2i, x_2i+1)",
     lambda s: s.pairing == "half" and s.d_k >= 4 and s.n >= 2,
     "the half pairing with d_k ≥ 4 and at least two tokens (with d_k = 2 its one pair is the interleaved one; "
     "with one token nothing turns)",
     "test_half_pairing_is_the_forward_pass_only_when_d_k_is_2_or_one_token",
     "these Q^R and K^R are the forward pass's own (Position = RoPE)"),
)

for _key, _text, _holds, _condition, _test, _otherwise in ROPE_CLAIMS:
    claim(_key, _text, _holds, _condition, "tests/test_rope.py::" + _test, about="rope", otherwise=_otherwise)


def pairings_alike(s: RopeSettings) -> list[str]:
    """Why the two pairings give the same numbers under these settings (the claims that hold), or []."""
    return [say(key, s) for key in ("rope_one_pair", "rope_one_token") if say(key, s)]
