"""The views of the "Inside a transformer" pages: the transformer block (app_pages/50_block.py), the next token
(51_next_token.py), induction heads (52_induction_heads.py), gradients through a block (53_block_gradients.py).
The block page reads the sidebar's forward pass; the other three run the small language model the project
trains (attention_core/training/lm), with the learner's sentence as its tokens.

    block_view   the block page: its switches, its cached Trace, pre-norm beside post-norm, a layer's steps as a
                 flow, the residual stream's sizes, the steps by tab (attention, norm, MLP, residual adds), the logits
"""
