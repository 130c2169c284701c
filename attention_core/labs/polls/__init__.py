"""Class polls: multiple-choice, predict-then-reveal questions for a room, every answer and every distractor
computed from the settings (the forward pass's Trace of the teacher's Config, run_forward), never written in.

    >>> from attention_core import Config, run_forward
    >>> trace = run_forward(Config())
    >>> "kv_head" in available(trace), make_poll("kv_head", trace, seed=1) == make_poll("kv_head", trace, seed=1)
    (True, True)
    >>> make_poll("which_head", trace) is None                    # one head: nothing to compare
    True

POLL_KINDS: kind -> a few words for the teacher's menu; available(trace) -> the kinds that fit these settings;
make_poll(kind, trace, seed=0) -> Poll | None (deterministic in the seed and the trace's numbers; None when the
kind does not fit). A Poll's to_dict() is what a room's poll holds.

    poll             Poll, and the choices: the answer and the distractors as displayed, deduplicated, shuffled
    forward_polls    the quiz's questions made multiple choice: attends, shape, which_head, scaled_score,
                     masked_weight
    rope_polls       rope_shift: a RoPE score after the whole sentence moves by Δ positions
    mask_polls       window_keys: the keys a sliding window of W keeps for query i
    kv_polls         grouped KV heads and the cache: kv_head, kv_cache_size (a published model's configuration)
    online_polls     online_max: the online softmax's running maximum after a block
"""
from __future__ import annotations

import numpy as np

from ...forward.trace import Trace
from ..quiz import fingerprint
from .forward_polls import attends_poll, masked_weight_poll, scaled_score_poll, shape_poll, which_head_poll
from .poll import Poll
from .kv_polls import kv_cache_size_poll, kv_head_poll
from .mask_polls import window_keys_poll
from .online_polls import online_max_poll
from .rope_polls import rope_shift_poll

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
}

MAKERS = {"attends": attends_poll, "shape": shape_poll, "which_head": which_head_poll,
          "scaled_score": scaled_score_poll, "masked_weight": masked_weight_poll,
          "rope_shift": rope_shift_poll, "window_keys": window_keys_poll, "kv_head": kv_head_poll,
          "kv_cache_size": kv_cache_size_poll, "online_max": online_max_poll}


def make_poll(kind: str, trace: Trace, seed: int = 0) -> Poll | None:
    """A poll of this kind on the trace's settings, its cells and its answer's place drawn from (seed, the
    trace's numbers); None when the kind does not fit these settings. KeyError for an unknown kind."""
    make = MAKERS[kind]
    rng = np.random.default_rng([int(seed) & 0xFFFFFFFF, fingerprint(trace), list(MAKERS).index(kind)])
    return make(trace, rng)


def available(trace: Trace) -> list[str]:
    """The kinds that fit these settings, in POLL_KINDS' order (whether a kind fits does not depend on the seed)."""
    return [kind for kind in POLL_KINDS if make_poll(kind, trace) is not None]


__all__ = ["POLL_KINDS", "Poll", "available", "make_poll"]
