"""Layer 5, lessons: what one page family teaches beyond the forward pass, with its claims and explainers.

    rope, masks, kv_cache, online_softmax   today's attention: each reads the forward pass's Trace
    grid                                    cross-attention from words to an image grid
    bahdanau                                additive attention trained on a sorting task
    (rope, masks and bahdanau are folders: each one's __init__ is the entry point and lists its files)
    torch_mha                               multi-head attention as PyTorch writes it, checked against it

May import: the math, the forward pass, the explanations, training, and each other. torch only inside functions.
"""
