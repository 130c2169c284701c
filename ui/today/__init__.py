"""The views of the "Today's attention" pages: RoPE (app_pages/40_rope.py), Masks & biases (41_masks.py),
KV cache & decoding (42_kv_cache.py), FlashAttention's online softmax (43_online_softmax.py). Each lesson
reads the sidebar's forward pass (its Trace) and says in sight where its own settings differ.

    rope_view             the RoPE page: one pair turning, rotated rows, scores, the shift, the two pairings
    masks_view            the masks page: the sidebar's part, own controls, the steps of one head, masks compared
    kv_cache_view         the KV cache page: decoding panels, head sharing, the cache-size calculator
    online_softmax_view   the online-softmax page: own controls, a block's scores, the running state, the division
"""
