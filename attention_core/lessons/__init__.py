"""Layer 5, lessons: what one page family teaches beyond the forward pass, with its claims and explainers.

    rope, masks, kv_cache, online_softmax   today's attention: each reads the forward pass's Trace
    grid                                    cross-attention from words to an image grid
    bahdanau                                additive attention trained on a sorting task
    torch_mha                               multi-head attention as PyTorch writes it, checked against it
    next_token                              the small LM's next token: logits, temperature, top-k, top-p, a sample
    induction                               the small language model's heads on a repeated sequence: patterns,
                                            scores, K-composition with live numbers, ablation, a run's phases

A lesson of several files is a folder (rope, masks, kv_cache, online_softmax, bahdanau, next_token, induction): its
__init__ is the entry point, lists its files, and keeps every name the pages import.

May import: the math, the forward pass, the explanations, training, and each other. torch only inside functions.
"""
