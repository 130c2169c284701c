"""A runnable numpy-only script of the forward pass, written for one configuration: its docstring (the settings,
the notation), the constants and helpers, then every step (script_inputs, script_attention) and a
main that prints them or saves them to an .npz.

    >>> from attention_core import Config
    >>> script = python_script(Config())
    >>> script.splitlines()[0], "weights = softmax(" in script
    ('\"\"\"Attention Explorer: one forward pass of attention, step by step, in numpy only.', True)
"""
from __future__ import annotations

from ...forward.config import Config
from .script_attention import add_attention
from .script_base import Script
from .script_inputs import add_inputs

RUN_AND_NOTATION = """\
Run:  python this_file.py            prints every step
      python this_file.py steps.npz  also saves every step (np.load(...)[key])

Notation (the app's): everything is counted from 0. n tokens are the rows; H heads, h = 0 … H−1 a
head's index; S raw scores, Ŝ = S / √d_k scaled (scaled dot-product only), S̃ masked, A the weights,
C = A V the context, O the output. Each variable is named by its step key (the .npz and CSV names);
its symbol is in the comment beside it."""

ROWS_ARE_TOKENS = '''\
Rows are tokens: X is (n, d_model). Weights multiply from the right, as the Transformer paper writes
it (Q = X W^Q) and as numpy code does: Q = X @ W_Q with W_Q of shape (d_model, H·d_k).
PyTorch's nn.Linear stores the transpose: its weight is (out, in) = W_Q^T and it computes x W^T.
"""
import sys
import zlib

import numpy as np
'''

DRAW_PARAMETERS = '''
def param(name, shape, fan_in):
    """A weight at its seeded start: N(0, 1/fan_in), one generator per parameter."""
    rng = np.random.default_rng([SEED, zlib.crc32(name.encode())])
    return rng.standard_normal(shape) / np.sqrt(fan_in)


def bias(name, shape):
    rng = np.random.default_rng([SEED, zlib.crc32(name.encode())])
    return 0.1 * rng.standard_normal(shape)

'''

SOFTMAX = '''def softmax(x, temperature):
    """exp((x - max) / T) / sum, along the last axis; a row of -inf gives zeros, not NaN."""
    z = np.asarray(x, dtype=np.float64) / temperature
    m = np.max(z, axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    e = np.exp(z - m)
    total = e.sum(axis=-1, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)

'''

MAIN = '''

if __name__ == "__main__":
    np.set_printoptions(precision=4, suppress=True, linewidth=120)
    print("tokens:", TOKENS)
    for key, value in steps.items():
        print(f"\\n{key}  shape={value.shape}")
        print(value)
    if len(sys.argv) > 1:
        np.savez(sys.argv[1], **steps)
        print(f"\\nsaved {len(steps)} steps to {sys.argv[1]}")'''


def python_script(config: Config, weights: str = "seeded") -> str:
    """A runnable numpy-only script that recomputes this configuration step by step, same numbers.

    The embedding rows are written in as literals (the vocabularies stay behind). Parameters are
    drawn exactly as the explorer draws them (weights="seeded": numpy.random.default_rng seeded
    with (seed, crc32(name)) per parameter) or written in as literals too (weights="literal", for
    a numpy whose generator streams differ). Under config.weights == "trained", W_Q, W_K, W_V
    (and their biases) are the trained matrices, always written in as literals (with grouped KV heads,
    W_K and W_V are the trained columns averaged per group, as the forward pass uses them). RoPE's
    rotation, ALiBi's slopes and bias, the repeat of the KV heads and the sliding-window mask are written
    out in numpy. The sentence and its tokens appear only as repr()'d
    string literals assigned to SENTENCE and TOKENS. Run it: `python script.py [steps.npz]`.
    """
    from ...forward.stages import run_forward
    if weights not in ("seeded", "literal"):
        raise ValueError("weights must be 'seeded' or 'literal'")
    s = Script(config, run_forward(config), literal=weights == "literal")
    add_head(s)
    add_inputs(s)
    add_attention(s)
    s.block(MAIN)
    return s.text()


def add_head(s: Script) -> None:
    """The script's docstring (the settings, the notation, what RoPE, ALiBi, GQA, the window mean), its imports,
    constants, and the helpers param(), bias() (when it draws the parameters) and softmax()."""
    config, h, h_kv, add = s.config, s.h, s.h_kv, s.add
    f = s.trace.facts
    settings = {k: v for k, v in config.as_dict().items() if k not in ("sentence", "vectors")}
    add('"""Attention Explorer: one forward pass of attention, step by step, in numpy only.')
    add("")
    add("Generated for these settings (the sentence is SENTENCE below):")
    for k, v in settings.items():
        add(f"    {k} = {v!r}")
    add("")
    s.block(RUN_AND_NOTATION)
    if s.rope:
        add("RoPE: q^R_p = R_p q_p, k^R_p = R_p k_p, each query and key row rotated by its position p, pair i of")
        add("its columns by the angle p·θ_i, θ_i = base^(−2i/d_k); Q^R, K^R the rotated matrices, S = Q^R (K^R)^T.")
    if s.alibi:
        add("ALiBi: m_h the slope of head h, (B_h)[i, j] = −m_h |i − j| the bias added to the scores before")
        add("the mask; nothing is added to X.")
    if s.grouped:
        add(f"Grouped-query attention: H_kv = {h_kv} key/value heads for the H = {h} query heads, g = H / H_kv = "
            f"{h // h_kv};")
        add("query head h reads KV head ⌊h / g⌋: K_{⌊h/g⌋}, V_{⌊h/g⌋}.")
    if config.mask == "sliding_window":
        add(f"Sliding window W = {config.window}: query i sees keys j with 0 ≤ i − j < W (W keys, itself included).")
    add("")
    s.block(ROWS_ARE_TOKENS)
    add(f"SENTENCE = {config.sentence!r}")
    add(f"TOKENS = {list(s.trace.tokens)!r}  # the rows of X")
    add(f"SEED = {config.seed!r}")
    add(f"N, D_MODEL, H, D_K, D_V = {f['n']}, {f['d_model']}, {h}, {config.d_k}, {config.d_v}  # n tokens, width of X, "
        f"H heads, a head's d_k and d_v")
    if s.grouped:
        add(f"H_KV, G = {h_kv}, {h // h_kv}  # H_kv key/value heads; g = H / H_kv query heads share each one")
    add("steps = {}  # step name -> array, in order")
    add("")
    if not s.literal:
        s.block(DRAW_PARAMETERS)
    s.block(SOFTMAX)
