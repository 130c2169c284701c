import streamlit as st

import ui
from attention_core.math.notation import attention_parts, multi_head_formula

PAGE = "app_pages/7_multi_head.py"
config, trace = ui.page(PAGE, "Multi-head attention")
ui.settings_summary(config, "shape")
ui.notices(trace)
h, d_k, d_v, n, d_model = config.n_heads, config.d_k, config.d_v, trace.n, trace.facts["d_model"]
st.markdown("Several attention **heads** run side by side, each with its own slice of Q, K and V, so that, "
            "once trained, one head can follow one relation between words and another head another. Their outputs are concatenated and "
            "mixed back to d_model columns by W_O.")
# the formulas built from the settings (score, scale, mask, T, heads) and the head count: one element
heads = (f"\n\n:small[:gray[H = {h} heads, counted from 0 as on the heatmaps: head h is one of head 0 … "
         f"head {h - 1}. Every head uses the same mask and temperature.]]" if h > 1 else "")
parts = attention_parts(config, heads=h > 1)                  # two parts a line: a long one would overflow
lines = [r",\quad ".join(parts[i:i + 2]) for i in range(0, len(parts), 2)] + [multi_head_formula(config)]
st.markdown("\n\n".join(f"$$\n{line}\n$$" for line in lines) + heads)
h_kv = config.kv_heads
st.markdown("**Shapes along the way**")
kv_lines = (f"K = X W_K, V = X W_V (n={n}, H_kv·d_k={h_kv * d_k}), (n={n}, H_kv·d_v={h_kv * d_v})\n"
            f"K, V into KV heads (H_kv={h_kv}, n={n}, d_k={d_k})   query head h reads KV head ⌊h/{h // h_kv}⌋\n"
            if h_kv < h else "")
st.code(f"X                  (n={n}, d_model={d_model})\n"
        f"Q = X W_Q          (n={n}, H·d_k={h * d_k})\n"
        f"split into heads   (H={h}, n={n}, d_k={d_k})      head h takes columns h·{d_k} … (h+1)·{d_k}−1\n"
        + kv_lines +
        f"scores, weights    (H={h}, n={n}, n={n})\n"
        f"context per head   (H={h}, n={n}, d_v={d_v})\n"
        f"concatenate        (n={n}, H·d_v={h * d_v})\n"
        f"O = concat W_O     (n={n}, d_model={d_model})", language=None)
if h == 1:
    st.info("One head: nothing to split. Set Heads in the sidebar to 2 or more to see several (each head gets its own d_k columns)."
            + ui.settings.sidebar_back(),
            icon=":material/info:")
if h_kv < h:
    g = h // h_kv
    st.info(f"Grouped-query attention: {h} query heads share {h_kv} key/value head{'s' if h_kv > 1 else ''}, "
            f"{g} query heads each: " + "; ".join(f"query heads {a * g}–{a * g + g - 1} read KV head {a}"
                                               for a in range(h_kv)) + ". K and V are "
            f"{h // h_kv} times narrower than Q, and so is a decoder's KV cache ("
            + ui.nav.md_link("app_pages/42_kv_cache.py", "the KV cache page", ui.query(config)) + ").",
            icon=":material/call_split:")
steps = (["q", "weights", "context"] if h == 1 else
         ["q", "q_heads"] + (["k_heads"] if h_kv < h else []) + ["weights", "context", "concat"])
ui.views.step_boxes(trace, steps + ["w_o", "output"])         # one fragment for the boxes (ui.views.step_boxes)
