"""Layer 4, training: attention learning something, with every gradient written out.

    classifier      the sentiment classifier, a folder: model (its forward pass), backprop (its backward pass by
                    hand), sgd, dataset, step_trace (one training step as Steps), gradient_check (against torch),
                    gradient_explainers and cell_arithmetic (the arithmetic of each cell of its trace)
    lm              the small language model: a 2-layer transformer trained on the copy task, in which
                    induction heads form (model, task, torch_model, train, scores, shipped, backprop, step_trace)
    real            real checkpoints (GPT-2, Llama-style): loaded from Hugging Face's layout, run in numpy float32
                    as a Trace, every head explained (imported only when a real model is asked for)
    training_input  what the training pages train on (the learner's sentences or the shipped ones)
    pretrained      the forward pages' trained W_Q, W_K, W_V (handed to the forward pass at import)
    symbolic        the derivations in SymPy (imported inside the functions)

May import: the math, the forward pass, the explanations, and each other.
"""
