"""Layer 1, the math: attention and its parts as plain numpy functions, one idea per file.

    limits          the bounds every size stays within, and ConfigError (its message says what to change)
    data            where the shipped data files are
    notation        the symbols every page writes the math in (docs/notation.md)
    text            a sentence to tokens, with the unknown-word policy
    embeddings      vocabularies (toy, GloVe 50-d, uploaded, seeded random) and the lookup
    positional      sinusoidal, learned and index encodings
    attention       softmax, masks, scaled dot-product and multi-head attention
    rope, alibi     rotary positions; linear biases
    gqa             grouped-query attention (H_kv key/value heads)
    online_softmax  FlashAttention's running max and sum over key blocks
    kv_cache        decoding one token at a time from a cache
    demos           small experiments that show why a step is the way it is
    norms           LayerNorm and RMSNorm, with their derivatives
    mlp             a block's MLP: two linear maps with GELU between, and its backward pass
    sampling        the next token: temperature before softmax, top-k, top-p, renormalise, a seeded draw

May import: numpy and the standard library, and each other. Nothing above (no Config, no Trace).
"""
