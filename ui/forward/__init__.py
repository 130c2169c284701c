"""The views of the "Forward pass" pages only: overview, 1 · Tokens & embeddings, 2 · Positional encoding,
3 · Queries, keys, values, 4 · Scores & scaling, 5 · Masking & softmax, 6 · Context vectors, 7 · Multi-head.

These pages draw mostly the shared views (ui.views: a Step's box, heatmaps, word tabs); what only they use:

    page_text     sentences that depend on the settings (the positional page's intro, swap hint, similarity note)
    demo_charts   the scores and positional pages' experiments as charts (spread, saturation, PE curves)
    pipeline      the overview's pipeline of boxes, drawn for a wide screen and for a phone
"""
