"""Layer 6, labs: what the learner does with a trace.

    pitfalls  known mistakes beside the right computation
    quiz      predict, then reveal
    export    the share link, .npz, CSV and a runnable numpy script

May import: every layer below.
"""
