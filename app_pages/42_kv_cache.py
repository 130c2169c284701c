import streamlit as st

import ui
from attention_core.lessons import kv_cache as kv
from ui.today import kv_cache_view as view
from ui import page_state
from ui.room import hide as room_hide

PAGE = "app_pages/42_kv_cache.py"
config, trace = ui.page(PAGE, "KV cache & decoding")
n = trace.n
st.markdown("A model writes one token at a time. At step t only the newest token's query q_t is new; the keys and "
            "values of the tokens before it were computed at earlier steps and **kept in a cache**, so each step adds "
            "one row to K and V and scores one row. " + view.window_text(config, n) + "Below, the sidebar's forward "
            "pass is decoded that way: its X, W_Q, W_K, W_V, W_O, heads, position and window.")
against = view.differences(config)
page_state.fit("kv_cache.prefill", 0, n)
page_state.fit("kv_cache.t", 0, n - 1)
with st.container(border=True):
    c1, c2 = st.columns([1, 3])
    prefill = c1.number_input("Prompt (prefill) tokens P", min_value=0, max_value=n, step=1, key="kv_cache.prefill",
                              help="The first P tokens go through together; the rest are decoded one at a time.")
    t = c2.slider("Decoding step t (the token being processed)", 0, n - 1, key="kv_cache.t") if n > 1 else 0
    st.caption(view.in_force(config) + ui.settings.sidebar_back())
prefill, t = int(prefill), int(t)
step = kv.kv_cache_trace(config, prefill, t)
s = step.facts["settings"]
ui.views.claims_shown(kv.KIND, s)
tabs = st.tabs(view.TABS, key="kv_cache.tab", on_change="rerun")

with tabs[0]:
    if tabs[0].open is not False:
        check = kv.check_against_full_pass(config, prefill)
        view.decode_panels(step, view.status_text(step), view.proof_text(check, n, against))

with tabs[1]:
    if tabs[1].open:
        st.markdown(view.sharing_text(s) + (ui.settings.sidebar_back() if s.n_heads == 1 else ""))
        ui.views.step_boxes(step, ["heads_map"], key_prefix="kv_cache.")
        st.markdown(f"**The cache's shape for this sentence** (n = {kv.count(n, 'token')}, "
                    f"{'W = ' + str(s.window) if s.window is not None else 'no window'}), per layer:")
        st.dataframe(view.shapes_table(s, step.facts["d_k"], step.facts["d_v"]), width="content")

with tabs[2]:
    if tabs[2].open:
        st.markdown(r"Bytes per token $= 2 \cdot \text{layers} \cdot H_{kv} \cdot d_{head} \cdot \text{bytes per value}$"
                    " (the 2: a K and a V row). Presets from the published configs; one sequence, no batch.")
        c1, c2, c3 = st.columns(3)
        chosen = c1.selectbox("Model", list(kv.PRESETS), key="kv_cache.preset")
        tokens = c2.select_slider("Context length", kv.CONTEXTS, format_func="{:,}".format, key="kv_cache.tokens")
        per_value = c3.radio("Bytes per value", list(kv.BYTES), format_func=kv.BYTES.get, key="kv_cache.bytes",
                             horizontal=True)
        calc = kv.CalcSettings(kv.PRESETS[chosen], tokens)
        ui.views.claims_shown("kv_cache_calc", calc)
        # a lesson stop's hidden byte counts (a student's screen, before the reveal): their model's words and curve wait
        waiting = tuple(name for r, name in enumerate(kv.PRESETS) if room_hide.hidden("cache_bytes", None, r, 1))
        st.markdown(room_hide.WAITS if chosen in waiting else view.calculator_text(calc, per_value))
        ui.chart(view.memory_chart(per_value, tokens, chosen, waiting))
        view.calculator_cells(kv.calculator_trace(per_value, tokens))

ui.views.checked_box(lambda: view.checked_text(config, prefill), key="kv_cache.checked")
