"""The views of the "Training" pages: One training step (app_pages/10_training_step.py) and Train a classifier
(app_pages/11_train.py).

    classifier_view   the classifier's settings, data, saved parameters and results, shared by the two pages
    step_view         the training-step page: the learner's sentence as input, the backward walk, SymPy
"""
