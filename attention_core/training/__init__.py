"""Layer 4, training: attention learning something, with every gradient written out.

    classifier           the sentiment classifier's entry point: every name of the files below, found in one place
    model                its parameters and forward pass, the shape of every line
    backprop             its backward pass by hand, each derivative under the forward line it undoes
    sgd                  the SGD step, the training loop, the loss and accuracy on a dataset
    dataset              the CSV of sentences and labels, and a sentence as the matrix X
    step_trace           the trace of one training step: forward and backward as Steps a page shows
    gradient_check       the same model in torch; the hand gradients against autograd and finite differences
    gradient_explainers  the arithmetic of each cell of the classifier's trace: a table of sums, the softmaxes, the rest
    cell_arithmetic      what those explainers share: naming a cell; a sum of products as a row of data, explained
    training_input       what the training pages train on (the learner's sentences or the shipped ones)
    pretrained           the forward pages' trained W_Q, W_K, W_V (handed to the forward pass at import)
    symbolic             the derivations in SymPy (imported inside the functions)

May import: the math, the forward pass, the explanations, and each other.
"""
