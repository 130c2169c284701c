"""The small language model: two attention layers that learn to continue a repeated phrase by copying.

    model        its shape (ARCH, the attention settings, the vocabulary of 31 tokens, 40 positions), a
                 sentence to its tokens, and its forward pass as a Trace (forward/transformer.py's blocks)
    task         the copy task's seeded batches (a segment repeated later) and the repeated random tokens
    torch_model  the same forward pass as a torch module over the same parameter dict, for training
    scores       each head's previous-token and induction scores and the copy loss, in numpy and in torch
    train        seeded, reproducible AdamW training with the scores logged, and where the loss drops
    shipped      the shipped runs (seed 0; the fixed-offset pitfall): weights, step-0 weights, histories
    backprop     the block's backward pass by hand, next-token loss to every parameter and the embeddings
    step_trace   one training step as a Trace of kind "block_grad" (every gradient a Step), SGD, the loss after
    block_grad_explainers   every gradient cell of that trace explained, recomputed from its terms

May import: the math, the forward pass, the explanations, and the rest of training.
"""
