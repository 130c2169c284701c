"""Class polls: multiple-choice, predict-then-reveal questions for a room, every answer and every distractor
computed from the settings (the forward pass's Trace of the teacher's Config, run_forward), never written in.

    >>> from attention_core import Config, run_forward
    >>> trace = run_forward(Config())
    >>> "kv_head" in available(trace), make_poll("kv_head", trace, seed=1) == make_poll("kv_head", trace, seed=1)
    (True, True)
    >>> make_poll("which_head", trace) is None                    # one head: nothing to compare
    True

POLL_KINDS: kind -> a few words for the teacher's menu; available(trace) -> the kinds that fit these settings;
make_poll(kind, trace, seed=0, at=None) -> Poll | None (deterministic in the seed and the trace's numbers; None when
the kind does not fit; `at` pins the question, PINS[kind] its keys). A Poll's to_dict() is what a room's poll holds.

    poll             Poll, and the choices: the answer and the distractors as displayed, deduplicated, shuffled
    forward_polls    the quiz's questions made multiple choice: attends, shape, which_head, scaled_score,
                     masked_weight
    rope_polls       rope_shift: a RoPE score after the whole sentence moves by Δ positions
    mask_polls       window_keys: the keys a sliding window of W keeps for query i
    kv_polls         grouped KV heads and the cache: kv_head, kv_cache_size (a published model's configuration)
    online_polls     online_max: the online softmax's running maximum after a block
    similar_polls    similar: the two words whose embeddings have the largest cosine similarity
    reorder_polls    reorder: a weight after the sentence's words are reordered (with and without positions)
    context_polls    closest_value: the value row a context vector c_i = Σ_j A[i,j] v_j is closest to
    alibi_polls      alibi_bias: what ALiBi adds to the score of query i for key j in head h
    transformer_polls  inside a transformer: residual_add (the block's residual add), temperature_prob and
                     top_k_prob (the next token), copy_head (the small model's previous-token and induction heads)
    pins             what pins a poll to one question (a lesson stop's poll_at); Unfit when it cannot be asked
"""
from __future__ import annotations

import numpy as np

from ...forward.trace import Trace
from ..quiz import fingerprint
from .alibi_polls import alibi_bias_poll
from .context_polls import closest_value_poll
from .forward_polls import attends_poll, masked_weight_poll, scaled_score_poll, shape_poll, which_head_poll
from .pins import Unfit, valid
from .poll import Poll
from .kv_polls import kv_cache_size_poll, kv_head_poll
from .mask_polls import window_keys_poll
from .online_polls import online_max_poll
from .reorder_polls import reorder_poll
from .rope_polls import rope_shift_poll
from .similar_polls import similar_poll
from .transformer_polls import copy_head_poll, residual_add_poll, temperature_prob_poll, top_k_prob_poll

POLL_KINDS: dict[str, str] = {
    "attends": "the word a row attends to most",
    "shape": "the shape of a step",
    "which_head": "the head that attends most",
    "scaled_score": "a scaled score Ŝ = S/√d_k",
    "masked_weight": "the weight of a hidden key",
    "rope_shift": "a RoPE score after a shift",
    "window_keys": "the keys a window of W keeps",
    "kv_head": "the KV head a query head reads",
    "kv_cache_size": "a real model's KV cache size",
    "online_max": "the online softmax's running maximum",
    "similar": "the two words with the most similar embeddings",
    "reorder": "a weight after the words are reordered",
    "closest_value": "the value row a context vector is closest to",
    "alibi_bias": "what ALiBi adds to a score",
    "residual_add": "the residual stream after a block's attention",
    "temperature_prob": "a next-token probability at a temperature T",
    "top_k_prob": "a next-token probability after top-k",
    "copy_head": "the small model's previous-token or induction head",
}

MAKERS = {"attends": attends_poll, "shape": shape_poll, "which_head": which_head_poll,
          "scaled_score": scaled_score_poll, "masked_weight": masked_weight_poll,
          "rope_shift": rope_shift_poll, "window_keys": window_keys_poll, "kv_head": kv_head_poll,
          "kv_cache_size": kv_cache_size_poll, "online_max": online_max_poll, "similar": similar_poll,
          "reorder": reorder_poll, "closest_value": closest_value_poll, "alibi_bias": alibi_bias_poll,
          "residual_add": residual_add_poll, "temperature_prob": temperature_prob_poll, "top_k_prob": top_k_prob_poll,
          "copy_head": copy_head_poll}

# What pins each kind's question (a lesson stop's poll_at): the keys its maker reads.
PINS: dict[str, tuple[str, ...]] = {
    "attends": ("row", "head"), "shape": ("step", "n"), "which_head": ("row", "col"),
    "scaled_score": ("row", "col", "head"), "masked_weight": ("row", "col", "head"),
    "rope_shift": ("row", "col", "head", "shift"), "window_keys": ("row",), "kv_head": ("head", "model"),
    "kv_cache_size": ("model", "tokens", "bytes"), "online_max": ("block_size", "block", "row", "head"),
    "similar": ("step",), "reorder": ("row", "col", "head", "order"), "closest_value": ("row", "head"),
    "alibi_bias": ("head", "row", "col"), "residual_add": ("row", "col"), "temperature_prob": ("temperature",),
    "top_k_prob": ("k", "temperature"), "copy_head": ("role",)}


def make_poll(kind: str, trace: Trace, seed: int = 0, at: dict | None = None) -> Poll | None:
    """A poll of this kind on the trace's settings, its cells and its answer's place drawn from (seed, the
    trace's numbers); None when the kind does not fit these settings. KeyError for an unknown kind.

    at (text -> text, a lesson stop's poll_at) pins the question: the keys PINS[kind] names ({"row": "0", "col":
    "1"} for scaled_score). A pinned question these settings cannot ask (a key the kind does not read, a value out
    of range or not a number, a cell whose choices would not differ) gives None; at=None draws it by the seed."""
    make = MAKERS[kind]
    if at is not None and not valid(at, PINS[kind]):
        return None
    rng = np.random.default_rng([int(seed) & 0xFFFFFFFF, fingerprint(trace), list(MAKERS).index(kind)])
    try:
        return make(trace, rng, at) if at is not None else make(trace, rng)
    except Unfit:
        return None


def available(trace: Trace) -> list[str]:
    """The kinds that fit these settings, in POLL_KINDS' order (whether a kind fits does not depend on the seed)."""
    return [kind for kind in POLL_KINDS if make_poll(kind, trace) is not None]


__all__ = ["PINS", "POLL_KINDS", "Poll", "available", "make_poll"]
