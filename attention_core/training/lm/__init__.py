"""The small language model: two attention layers that learn to continue a repeated phrase by copying.

    model        its shape (ARCH, the attention settings, the vocabulary of 31 tokens, 40 positions), a
                 sentence to its tokens, and its forward pass as a Trace (forward/transformer.py's blocks)
    backprop     the block's backward pass by hand, next-token loss to every parameter and the embeddings
    step_trace   one training step as a Trace of kind "block_grad" (every gradient a Step), SGD, the loss after
    block_grad_explainers   every gradient cell of that trace explained, recomputed from its terms

May import: the math, the forward pass, the explanations, and the rest of training.
"""
