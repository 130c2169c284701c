import streamlit as st

import ui
from ui.forward.pipeline import pipeline
from ui.room import hide as room_hide

PAGE = "app_pages/overview.py"
config, trace = ui.page(PAGE, "Attention Explorer")
ui.notices(trace)
h, n, f = config.n_heads, trace.n, trace.facts
st.markdown(
    "Type a sentence in the sidebar and follow it through **attention**, one page per step: every "
    "matrix is computed live from your settings, drawn as a heatmap you can hover and click, with its "
    "formula and its shape. The same settings give the same numbers on every page." + ui.settings.sidebar_back())

hk = f"H·d_k={h * config.d_k}" if h > 1 else f"d_k={config.d_k}"
hv = f"H·d_v={h * config.d_v}" if h > 1 else f"d_v={config.d_v}"
boxes = [
    ("sentence", "Sentence", f"“{' '.join(trace.tokens[:6])}{' …' if n > 6 else ''}”", None),
    ("tokens", "Tokens", f"n={n}", "app_pages/1_embeddings.py"),
    ("x", "Embeddings X", f"n={n} × d={f['d_embed']}", "app_pages/1_embeddings.py"),
    ("pe", "+ Position", f"n={n} × d_model={f['d_model']}", "app_pages/2_positional.py"),
    ("qkv", "Q, K, V", f"n={n} × {hk}", "app_pages/3_qkv.py"),
    ("scores", "Scores", (f"H={h} × " if h > 1 else "") + f"n={n} × n={n}", "app_pages/4_scores.py"),
    ("weights", "Weights", "softmax rows, " + (f"H={h} × " if h > 1 else "") + f"n×n", "app_pages/5_softmax.py"),
    ("context", "Context", f"n={n} × {hv}", "app_pages/6_context.py"),
    ("output", "Output", f"n={n} × d_model={f['d_model']}", "app_pages/7_multi_head.py"),
]

url_query = "&".join(f"{k}={v}" for k, v in ui.query(config).items() if k != "sentence")
pipeline(boxes, url_query)

st.subheader("Walk through it")
steps = [b for b in boxes if b[3]]
for i, (key, title, shape, page) in enumerate(steps):
    if i % 4 == 0:                      # a row of four at a time: a phone stacks them in reading order
        cols = st.columns(4)
    with cols[i % 4]:
        with st.container(border=True):
            st.page_link(page, label=title, icon=":material/arrow_forward:", query_params=ui.query(config))
            st.caption(shape)

st.subheader("Then")
then = {"Training": "one step backwards through every gradient, checked against PyTorch autograd; then a whole "
                    "training run with a live loss curve.",
        "Attention variants": "score functions side by side, Bahdanau alignment, cross-attention over an image "
                              "grid, multi-head as PyTorch writes it.",
        "Today's attention": "rotary positions, ALiBi and sliding windows, grouped KV heads and the KV cache, "
                             "FlashAttention's online softmax: on your sentence, with the sidebar's settings.",
        "Inside a transformer": "attention in its block, with LayerNorm, the MLP and the residual stream, down to "
                                "the logits; the next token by temperature, top-k and top-p; induction heads "
                                "forming in a small language model while you train it; and one step backwards "
                                "through the whole block.",
        "A real model": "the project's own small language model, or a published one (GPT-2, SmolLM2, Qwen2.5, "
                        "Llama 3.2), run by the project itself: its tokens, every head of every layer with the same click-a-cell arithmetic, the heads' "
                        "jobs, its next token.",
        "Labs": "known mistakes next to the right computation; predict-then-reveal quizzes; links and downloads "
                "that reproduce every number.",
        "Classroom": "a room where a teacher shows every student the same view and steps through a lesson; "
                     "lessons to prepare and share; a printable handout of any page."}
others = [(section, pages) for section, pages in ui.nav.SECTIONS[1:] if ui.nav.existing(pages)]
for col, (section, pages) in zip([c for _ in range(0, len(others), 2) for c in st.columns(2)], others):
    with col:
        st.markdown(f"**{section}** — {then[section]}")
        for f, label, icon, _ in ui.nav.existing(pages):
            st.page_link(f, label=label, icon=icon, query_params=ui.query(config) or None)
shape = "?" if room_hide.waits("w_q") else "(d_model, H·d_k)"      # a stop asking W_Q's shape: after the reveal
st.caption(f"Conventions: rows are tokens, and Q = X W_Q with W_Q of shape {shape}, as the Transformer "
           "paper writes it (Q = XW^Q) and numpy code computes it; PyTorch's nn.Linear stores the transpose. "
           "Everything is counted from 0.")
ui.views.notation_box()                 # docs/notation.md, in a lazy expander
