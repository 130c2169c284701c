import streamlit as st

import ui
from ui.transformer import gradient_view as view

PAGE = "app_pages/53_block_gradients.py"
config, _ = ui.page(PAGE, "Gradients through the block")
intro = st.empty()
with st.container(border=True):
    lr, arch = view.controls()
intro.markdown(
    "One training step of the small language model (2 layers of 4 heads, 31 tokens, trained to copy) on the "
    "sidebar's sentence, each distinct word one token. The loss is the **next-token cross-entropy**: every position "
    "but the last is scored on the token after it. Backpropagation runs it backwards, from the logits through "
    + view.backward_path(arch) + ", to the embeddings: every gradient below is written by hand, has the shape of "
    "what it is the gradient of, and each cell can be clicked for its arithmetic. :small[:gray[Of the sidebar, only "
    "the sentence is read here: the model brings its own embeddings, positions and attention.]]")
result = view.lesson(config.sentence, lr, arch)
if result is not None:
    s, fresh, notices = result
    view.notes(fresh, notices, arch)
    view.losses(s)

    st.subheader("The backward flow")
    st.markdown("In the order the chain rule makes them, from the loss back to the embeddings. Read down: each line "
                "uses gradients from the lines above it and numbers from the forward pass.")
    view.flow(s)
    view.one_gradient(s)

    st.subheader("What a residual add does to a gradient")
    view.residual(s)

    st.subheader("One step of gradient descent")
    view.update(s)
    view.check(s)
