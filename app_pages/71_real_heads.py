import streamlit as st

import ui
from ui.real import heads_view as view
from ui.real import model as real

PAGE = "app_pages/71_real_heads.py"
config, _ = ui.page(PAGE, "Every head, one by one", settings="sentence")
st.markdown(
    "Every layer of the model has its heads, and each head computes exactly what the attention pages compute: "
    "queries, keys and values from the layer's input, scores QKᵀ / √d_k, a causal mask, softmax, and the weighted "
    "values. Here they are for the sidebar's sentence, with the model's own trained weights.")
model, trace = real.model_and_trace(config.sentence)
c = model.config
st.subheader(f"All {c.n_layers * c.n_heads} heads at a glance")
picked = view.grid(trace)
if picked is not None:                              # a click on the grid picks the layer and the head below
    st.session_state["real.layer"], st.session_state["real.head"] = picked
for key, top in (("real.layer", c.n_layers - 1), ("real.head", c.n_heads - 1)):
    if st.session_state.get(key, 0) > top:          # a smaller model than the last: inside its own
        st.session_state[key] = top
st.subheader("One head, step by step")
left, right, _ = st.columns([1, 1, 3])
layer = int(left.number_input("Layer l", 0, c.n_layers - 1, step=1, key="real.layer"))
head = int(right.number_input("Head h", 0, c.n_heads - 1, step=1, key="real.head"))
st.markdown(view.shapes_line(trace, layer, head) + " " + view.top_weights(trace, layer, head))
view.one_head(trace, layer, head)
