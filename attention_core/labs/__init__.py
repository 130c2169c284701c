"""Layer 6, labs: what the learner does with a trace.

    pitfalls                 known mistakes beside the right computation (the cards, in order)
    pitfalls_base            PitfallResult, Pitfall, the @pitfall mark, the scores' symbols, the checks' helpers
    pitfalls_softmax         softmax over the wrong axis, a fully masked row's NaN, dropout at inference, scores @ V
    pitfalls_scaling         no √d_k at a large d_k, / √(n·d_k)
    pitfalls_gradient        one softmax Jacobian for every row (a small layer with its backward pass)
    pitfalls_positions       the odd width's last encoding column, ALiBi without [0::2], RoPE's pairing
    pitfalls_decoding        is_causal=True against a KV cache, a window of W + 1 keys, a latent cache × 2
    quiz                     predict, then reveal: make_questions, grade
    quiz_grading             Question, reading a typed answer, grading it
    quiz_notation            the quiz's notation in plain text
    quiz_shapes              questions on shapes, parameter counts, a scaled score
    quiz_weights             questions that read the weights A
    quiz_signs               up, down or stay: the sign of one derivative
    export                   the share link, .npz, CSV and a runnable numpy script
    export_link              the settings as a URL's query and back
    export_arrays            the step symbols, .npz and CSV files
    export_script            the runnable numpy script: python_script, its docstring and helpers
    export_script_base       the script being written: settings, parameters drawn or written in
    export_script_inputs     the script's X, Q, K, V and RoPE steps
    export_script_attention  the script's scores, ALiBi, mask, weights, context and output

May import: every layer below.
"""
