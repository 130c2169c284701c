"""The small language model: two attention layers that learn to continue a repeated phrase by copying.

    model        its shape (ARCH, the attention settings, the vocabulary of 31 tokens, 40 positions), a
                 sentence to its tokens, and its forward pass as a Trace (forward/transformer.py's blocks)

May import: the math, the forward pass, the explanations, and the rest of training.
"""
