import streamlit as st

import ui

PAGE = "app_pages/7_multi_head.py"
config, trace = ui.page(PAGE, "Multi-head attention")
ui.settings_summary(config, "shape")
ui.notices(trace)
h, d_k, d_v, n, d_model = config.n_heads, config.d_k, config.d_v, trace.n, trace.facts["d_model"]
st.markdown("Several attention **heads** run side by side, each with its own slice of Q, K and V, so one "
            "head can follow syntax while another follows meaning. Their outputs are concatenated and "
            "mixed back to d_model columns by W_O.")
st.latex(r"\text{head}_g = \mathrm{softmax}\!\left(\frac{Q_g K_g^\top}{\sqrt{d_k}}\right) V_g,\quad "
         r"g = 0, \dots, h-1,\qquad O = \left[\text{head}_0 \mid \cdots \mid \text{head}_{h-1}\right] W_O")
st.caption("Heads are counted from 0, as on the heatmaps: the h heads are head 0 … head h−1.")
st.markdown("**Shapes along the way**")
st.code(f"X                  (n={n}, d_model={d_model})\n"
        f"Q = X W_Q          (n={n}, H·d_k={h * d_k})\n"
        f"split into heads   (h={h}, n={n}, d_k={d_k})      head g takes columns g·{d_k} … (g+1)·{d_k}−1\n"
        f"scores, weights    (h={h}, n={n}, n={n})\n"
        f"context per head   (h={h}, n={n}, d_v={d_v})\n"
        f"concatenate        (n={n}, H·d_v={h * d_v})\n"
        f"O = concat W_O     (n={n}, d_model={d_model})", language=None)
if h == 1:
    st.info("One head: nothing to split. Set Heads in the sidebar to 2 or more to see several (each head gets its own d_k columns).",
            icon=":material/info:")
steps = ["q", "weights", "context"] if h == 1 else ["q", "q_heads", "weights", "context", "concat"]
ui.views.step_boxes(trace, steps + ["w_o", "output"])         # one fragment for the boxes (ui.views.step_boxes)
ui.step_nav(PAGE, config)
