"""The RoPE page's lesson (no Streamlit): one head's queries and keys of the forward pass, turned by position.

The page runs the forward pass under the sidebar's settings with Position = RoPE (`with_rope`: the same
settings when the sidebar's Position already is RoPE) and reads its Trace: X = X_emb, Q and K with the
sidebar's weights, biases, heads and KV heads, Q^R and K^R (interleaved pairs, token i at position i,
θ_i = base^(−2i/d_k) with the sidebar's base) and the scores of the rotated rows under the sidebar's score
function. `rope_lesson` puts one query head h and the KV head ⌊h/g⌋ it reads into a Trace of its own
(kind "rope", one click-a-cell explainer per step), with the angles p·θ_i, and two comparisons the forward
pass does not make: the half pairing (x_i, x_{i+d_k/2}) and the whole sentence shifted by an offset.

    >>> from attention_core import Config, run_forward
    >>> forward = run_forward(Config(positional="rope", weights="random"))
    >>> t = rope_lesson(forward)
    >>> t["angles"].shape, t["q_rot"].shape, t["scaled_scores"].shape
    ((4, 2), (4, 4), (4, 4))
    >>> bool((t["q_rot"].value == forward["q_rot"].value).all())          # the forward pass's own Q^R
    True
    >>> t.facts["complex_gap"] < 1e-12                   # the rotation equals RoPE's complex-number form
    True

The lesson in files, one idea each (this package is its entry point: import from here):

    claims        RopeSettings and the sentences true only under some settings (about="rope")
    reading       what the lesson reads from the forward pass's Trace: one head's rows, weights and score function
    rotation      the rotation in either pairing, RoPE's complex form, one pair's path, the pairings' permutation
    notation      the base as a power's base, one head's symbols, the score step's title, formula and why
    lesson        rope_lesson: the page's Trace (kind "rope"), and the checks of its controls
    compare       the whole sentence shifted: RoPE against a sinusoidal encoding added to X
    torch_forms   the same rotation as Meta's and Hugging Face's Llama code write it (torch inside functions)
    explainers    click a cell of kind "rope": the arithmetic behind it
"""
from __future__ import annotations

from . import explainers  # noqa: F401  (registers the click-a-cell explainers of kind "rope")
from .claims import DOT_SCORES, ROPE_CLAIMS, RopeSettings, pairings_alike
from .compare import shift_check
from .lesson import BASES, FAMILIES, MAX_OFFSET, check_lesson, rope_lesson, with_rope
from .notation import base_tex
from .reading import forward_rows, head_rows, head_weights, kv_head_of, score_function, score_key
from .rotation import complex_form, pair_columns, pair_path, pairing_checks, rotate, scaled_scores
from .torch_forms import torch_checks, torch_rope_complex, torch_rope_rotate_half

__all__ = ["BASES", "DOT_SCORES", "FAMILIES", "MAX_OFFSET", "ROPE_CLAIMS", "RopeSettings", "base_tex", "check_lesson",
           "complex_form", "forward_rows", "head_rows", "head_weights", "kv_head_of", "pair_columns", "pair_path",
           "pairing_checks", "pairings_alike", "rope_lesson", "rotate", "scaled_scores", "score_function",
           "score_key", "shift_check", "torch_checks", "torch_rope_complex", "torch_rope_rotate_half", "with_rope"]
