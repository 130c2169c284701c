"""Layer 2, the forward pass: a Config in, a Trace of every named intermediate out.

    config    Config: the learner's settings, validated
    trace     Step, Trace: every matrix with its symbol, shape, formula, inputs and why
    claims    sentences true only under some settings, each with its condition and its property test
    weights   W_Q, W_K, W_V: seeded random, or trained (handed down by the training layer)
    encode    a sentence to X: embeddings and positional encoding
    stages    run_forward: the stages embed → position → project → rotate → score → bias → mask →
              normalise → mix → output, each adding its Steps to the Trace
    transformer  the stages inside blocks: the residual stream, the norms (pre or post), the MLP, the logits
    why       the stages' sentences of why that depend on the settings or the numbers (embedding, √d_k, GQA…)

May import: the math (layer 1) and each other.
"""
