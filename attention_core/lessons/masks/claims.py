"""The masks page's claims (about="masks"): the sentences true only under some settings, and the settings they read
(the sidebar's mask, window, padding and ALiBi heads; the page's head and sink). Each is proved by the test it
names in tests/test_masks.py.
"""
from __future__ import annotations

from dataclasses import dataclass

from ...forward.claims import claim
from ...forward.config import Config

KIND = "masks"                      # the page's trace kind, and its claims' `about`


@dataclass(frozen=True)
class MaskSettings:
    """What the page's claims (about="masks") read: the sidebar's settings the page shows, and its own."""
    n: int                          # tokens
    mask: str = "causal"            # the sidebar's mask: causal | sliding_window | padding | none
    window: int = 3                 # the sidebar's W, keys per query counting itself (also the comparisons' W)
    hidden: tuple[int, ...] = ()    # the key positions the sidebar's padding mask hides
    heads: int = 0                  # H when the sidebar's Position is ALiBi; 0: no ALiBi
    sink: float | None = None       # z_h (the page's own); None: no sink
    head: int = 0                   # the head h shown (the page's own)

    def sees_a_key(self) -> bool:
        """Every query sees at least one key (causal and window queries always see themselves)."""
        return self.mask != "padding" or len(set(self.hidden)) < self.n

    def sees_a_later_key(self) -> bool:
        """Some query sees a key after it (j > i): no mask, or a padding mask leaving a key j ≥ 1 visible
        (query 0 comes before it). A causal or window mask hides every such key."""
        if self.mask == "none":
            return self.n >= 2
        return self.mask == "padding" and any(j not in self.hidden for j in range(1, self.n))


def settings_of(config: Config, n: int, head: int = 0, sink: float | None = None) -> MaskSettings:
    """The claims' settings for the sidebar's Config on an n-token sentence and the page's own controls."""
    hidden = tuple(sorted(set(config.padding))) if config.mask == "padding" else ()
    return MaskSettings(n, config.mask, config.window, hidden, config.n_heads if config.positional == "alibi" else 0,
                        sink, head)


def _power_of_two(h: int) -> bool:
    return h >= 1 and h & (h - 1) == 0


# ---- the sentences that hold only under some settings (proved in tests/test_masks.py) ----------------

_T = "tests/test_masks.py::"
claim("masks_rows_sum_to_one", "every row of A sums to 1, over the keys it may see",
      lambda s: s.sees_a_key(),
      "every query sees at least one key (a padding mask can hide them all; a causal or window query always sees "
      "itself). A is the plain softmax, with or without a sink beside it: the sink's weights are A′",
      _T + "test_rows_of_a_sum_to_one_exactly_when_a_key_is_visible", about=KIND,
      otherwise="rows do not sum to 1 here: every key is hidden, so each row of A is all 0")
claim("masks_sink_below_one", "with a sink every row of A′ sums to less than 1 (in exact arithmetic; when e^(z_h) "
      "is under about 10⁻¹⁶ of the denominator, the sum rounds to 1): what is missing is the sink's share, "
      "e^(z_h) divided by the whole denominator", lambda s: s.sink is not None, "a sink logit z_h is on",
      _T + "test_sink_rows_sum_to_one_minus_the_sink_share", about=KIND)
claim("masks_window_is_causal", "W ≥ n: every query's window reaches back to token 0, so a window of W keys "
      "equals the causal mask", lambda s: s.window >= s.n,
      "a window of W keys at least as long as the sentence", _T + "test_window_equals_causal_exactly_when_w_reaches_n",
      about=KIND)
claim("masks_readings_differ", "the two readings differ: from query W on, the W + 1 reading sees one key more "
      "(key i − W)", lambda s: s.window < s.n,
      "a window shorter than the sentence", _T + "test_the_two_window_readings_differ_exactly_when_w_below_n",
      about=KIND, otherwise="here the two readings give the same mask: W ≥ n, so both windows reach back to "
                            "token 0 for every query")
claim("masks_slopes_geometric", "H is a power of two: the slopes are one geometric sequence, each 2^(−8/H) "
      "times the one before", lambda s: _power_of_two(s.heads), "ALiBi with H a power of two",
      _T + "test_slopes_are_geometric_exactly_for_powers_of_two", about=KIND)
claim("masks_slopes_interleaved", "H is not a power of two: heads 0 … c − 1 take the c-head slopes, and the "
      "other H − c take every other slope of the 2c-head sequence; the first of these, m_c = 2^(−4/c), is larger "
      "than all of the first c, and each later one falls between two of them, so the list is neither one "
      "geometric sequence nor in decreasing order",
      lambda s: s.heads >= 1 and not _power_of_two(s.heads), "ALiBi with H not a power of two",
      _T + "test_slopes_are_geometric_exactly_for_powers_of_two", about=KIND)
claim("masks_alibi_both_sides", "some queries see keys after them here: the app's bias lowers those "
      "scores by m_h·|i − j| too (the paper's language models are causal and never see such keys)",
      lambda s: s.heads >= 1 and s.sees_a_later_key(),
      "ALiBi, and a mask that leaves some key after its query visible (none, or padding that leaves a key "
      "j ≥ 1 visible)", _T + "test_alibi_reaches_keys_after_the_query_exactly_when_one_is_visible", about=KIND)
claim("masks_alibi_one_side", "the mask hides every key after its query, so only the paper's −m_h·(i − j) on "
      "and below the diagonal reaches softmax",
      lambda s: s.heads >= 1 and s.mask != "none" and s.sees_a_key() and not s.sees_a_later_key(),
      "ALiBi with a causal or window mask, or padding that hides every key after its query but not every key (with "
      "no mask there is nothing that hides: one token has no key after it, and more tokens do see later keys)",
      _T + "test_alibi_reaches_keys_after_the_query_exactly_when_one_is_visible", about=KIND)
claim("masks_all_hidden", "every key is hidden: each row of A is all 0, not NaN (there is nothing to average)",
      lambda s: not s.sees_a_key(), "a padding mask hiding every key", _T + "test_every_key_hidden_gives_zero_rows",
      about=KIND)
