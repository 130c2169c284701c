"""Layer 6, labs: what the learner does with a trace.

    pitfalls   known mistakes beside the right computation, a file per family of mistake:
               base (PitfallResult, the @pitfall mark, the checks' helpers), softmax, scaling, gradient,
               positions, decoding
    quiz       predict, then reveal: grading, notation (in plain text), and the questions by what they ask:
               shapes, weights, signs
    polls      class polls: multiple choice, predict then reveal, every answer and distractor computed from the
               settings: poll (Poll, the choices), forward_polls (the quiz's questions), kv_polls (KV heads, the
               cache), rope_polls, mask_polls, online_polls (today's attention)
    export     the share link (link), .npz and CSV (arrays), and the runnable numpy script (script, written
               by script_base, script_inputs, script_attention)
    handout    a page's view as a printable document: document (sections, tables), pages (each page's Steps),
               build (make_handout)

Each lab is a folder; its __init__ is the entry point, lists its files and keeps every name the pages import.

May import: every layer below.
"""
