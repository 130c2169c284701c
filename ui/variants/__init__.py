"""The views of the "Attention variants" pages: Score functions (app_pages/20_score_functions.py), Bahdanau
alignment (21_alignment.py), Cross-attention on a grid (22_grid.py), Multi-head in PyTorch (23_pytorch_mha.py).

    score_panels      the score-functions page's four traces, the temperature applied last
    score_costs       the score functions' costs as a chart and a table
    alignment_view    Bahdanau: one decoder step's walk (section 1), sorting a fresh sequence (section 3)
    alignment_train   Bahdanau, section 2: the training form, the live loss curve, what the model measures
    grid_view         the grid page's computations and pictures, cached once per process
    grid_sections     the grid page's controls, image and features, tabs (a) one query, (b) many, (c) cross
    torch_view        the PyTorch page's torch runs, cached once per process per layer input
    torch_sections    the PyTorch page's controls, the check, the steps in tabs, the dropout pitfall
"""
