"""The views of the "A real model" pages: the project's own small model (shipped: the first choice, offline) or a
Hugging Face checkpoint (GPT-2, Llama-style), run by the project in numpy (attention_core/training/real): tokens in, the next token out (app_pages/70_real_tokens.py: the pieces and ids the
model reads, and its next token by temperature, top-k and top-p), every head at a glance and one head step by step
(71_real_heads.py), heads by what they do (72_real_roles.py). Nothing here imports the real model's code until a
page asks for a model.

    state        the pages' own controls, as a link carries them (the model, the layer and head, T, top-k, top-p)
    model        the model picker on every page: the small model (or the server's own first, when its host set
                 one), a listed one (from the Hugging Face cache, or
                 downloaded on a click, its size said first), or a folder; loaded once per process; the Trace of
                 the sidebar's sentence, cached per process
    tokens_view  the sentence's pieces, ids and texts as a table, and why a piece starts with "Ġ" or "▁" (the small
                 model: its words and ids, each distinct word one token)
    heads_view   every head's weights in one grid (a click picks a head), the head's Q, K, V, scores, weights and
                 context, each cell explained with the real numbers
    roles_view   every head's previous-token, induction and sink score, and the strongest head of each
    next_view    the next token: temperature, top-k, top-p and a seeded draw on the last row of logits
"""
