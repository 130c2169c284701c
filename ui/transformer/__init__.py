"""The views of the "Inside a transformer" pages: the transformer block (app_pages/50_block.py), the next token
(51_next_token.py), induction heads (52_induction_heads.py), gradients through a block (53_block_gradients.py).
The block page reads the sidebar's forward pass; the other three run the small language model the project
trains (attention_core/training/lm), with the learner's sentence as its tokens.

    block_view   the block page: its switches, its cached Trace, pre-norm beside post-norm, a layer's steps as a
                 flow, the residual stream's sizes, the steps by tab (attention, norm, MLP, residual adds), the logits
    gradient_view     gradients through the block: η and the block's choices, the backward flow, a residual add
    next_token_view   the next token: its controls, the probability bars, the sample, generation, the heads
    induction_view     the induction-heads page's texts and panels (run, patterns, K-composition, ablation, sentence)
    induction_steps    its step slider over a run's logged steps: the plateau and the drop marked, two buttons across
    induction_charts   its Vega-Lite charts: loss with plateau and drop, scores over steps, pattern grid, ablation bars
    induction_run      the shipped run and a learner's live one (Train: torch, progress, live charts), analysed
"""
