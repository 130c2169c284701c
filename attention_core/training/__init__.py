"""Layer 4, training: attention learning something, with every gradient written out.

    classifier           the sentiment classifier: forward, the hand-written backward pass, SGD, the trace
    gradient_explainers  the arithmetic of each cell of the classifier's trace: a table of sums, the softmaxes, the rest
    cell_arithmetic      what those explainers share: naming a cell, writing a sum of products as an Explanation
    training_input       what the training pages train on (the learner's sentences or the shipped ones)
    pretrained           the forward pages' trained W_Q, W_K, W_V (handed to the forward pass at import)
    symbolic             the derivations in SymPy (imported inside the functions)

May import: the math, the forward pass, the explanations, and each other.
"""
