import streamlit as st

import ui
from attention_core import ConfigError
from attention_core import lesson_kv_cache as kv
from attention_core.claims import say
from ui import kv_cache_view as view

PAGE = "app_pages/42_kv_cache.py"
config, trace = ui.page(PAGE, "KV cache & decoding")
n = trace.n
st.markdown("A model writes one token at a time. At step t only the newest token's query q_t is new; the keys and "
            "values of tokens 0 … t − 1 were computed at earlier steps and **kept in a cache**, so each step adds "
            "one row to K and V and scores one row. Below, your sentence is decoded that way (X from the forward pass; W_Q, W_K, W_V, W_O drawn with the sidebar's seed, untrained).")
if st.session_state.get("kv_cache.n", n) != n:           # a new sentence: the step and the prompt stay inside it
    st.session_state["kv_cache.t"] = min(st.session_state.get("kv_cache.t", 0), n - 1)
    st.session_state["kv_cache.prefill"] = min(st.session_state.get("kv_cache.prefill", 0) or 0, n)
st.session_state["kv_cache.n"] = n
st.session_state.setdefault("kv_cache.prefill", min(2, n))
st.session_state.setdefault("kv_cache.t", min(2, n - 1))
with st.container(border=True):
    c1, c2, c3, c4 = st.columns(4)
    heads = c1.slider("Query heads H", 1, kv.MAX_PAGE_HEADS, 4, key="kv_cache.heads")
    kv_heads = c2.slider("KV heads H_kv", 1, kv.MAX_PAGE_HEADS, 2, key="kv_cache.kv_heads",
                         help="A divisor of H: H_kv = H is MHA, 1 is MQA, in between GQA.")
    window = c3.number_input("Window W (empty: none)", min_value=0, max_value=1000, value=None, step=1,
                             key="kv_cache.window", placeholder="none", help="Each query sees at most W keys, itself included.")
    prefill = c4.number_input("Prompt (prefill) tokens", min_value=0, max_value=1000, step=1, key="kv_cache.prefill",
                              help="The first P tokens go through together; the rest are decoded one at a time.")
    t = st.slider("Decoding step t (the token being processed)", 0, n - 1, key="kv_cache.t") if n > 1 else 0
window = None if window is None else int(window)
try:
    step = kv.kv_cache_trace(config, int(heads), int(kv_heads), window, int(prefill), min(int(t), n - 1))
    check = kv.check_against_full_pass(config, int(heads), int(kv_heads), window, int(prefill))
except ConfigError as err:
    st.error(str(err), icon=":material/error:")
    st.stop()
s = step.facts["settings"]
if window is not None and window >= n:
    st.info(f"W = {window} ≥ n = {n}: in this sentence the window never drops a token.", icon=":material/info:")
tabs = st.tabs(["Decoding, step by step", "Which heads share K and V", "Cache size calculator"], key="kv_cache.tab",
               on_change="rerun")

with tabs[0]:
    if tabs[0].open is not False:
        view.decode_panels(step, view.status_text(step) + " " + view.sentence(say("kv_stops_growing", s, window=window)),
                           view.proof_text(check, s))
        box = st.expander("Checked against PyTorch too", key="kv_cache.torch", on_change="rerun")
        if box.open:
            with box:
                st.markdown(view.torch_text(kv.torch_check(config, s.n_heads, s.n_kv_heads, window, s.prefill), s))

with tabs[1]:
    if tabs[1].open:
        st.markdown(f"With H = {s.n_heads} query heads and H_kv = {s.n_kv_heads} KV heads, g = H / H_kv = {s.g}: "
                    f"query head h reads KV head ⌊h / {s.g}⌋. {view.sharing_claims(s)}")
        ui.views.step_boxes(step, ["heads_map"], key_prefix="kv_cache.")
        st.markdown(f"**The cache's shape for this sentence** (n = {n} tokens, W = {window or 'none'}, "
                    f"d_head = d_k = {config.d_k}), per layer; K and V have the same shape:")
        st.dataframe(view.shapes_table(s, config.d_k), width="content")
        st.caption("Checked: these shapes are the shapes of kv_cache_decode's final cache (tests), and "
                   "⌊h/g⌋ is torch's enable_gqa (repeat_interleave) grouping.")

with tabs[2]:
    if tabs[2].open:
        st.markdown(r"Bytes per token $= 2 \cdot \text{layers} \cdot H_{kv} \cdot d_{head} \cdot \text{bytes per value}$"
                    " (the 2: a K and a V row). Presets from the published configs; one sequence, no batch.")
        c1, c2, c3 = st.columns(3)
        chosen = c1.selectbox("Model", list(kv.PRESETS), key="kv_cache.preset")
        tokens = c2.select_slider("Context length", kv.CONTEXTS, 8192, format_func="{:,}".format,
                                  key="kv_cache.tokens")
        per_value = c3.radio("Bytes per value", list(kv.BYTES), format_func=kv.BYTES.get, key="kv_cache.bytes",
                             horizontal=True)
        calc = kv.calculator_trace(per_value, tokens)
        p = kv.PRESETS[chosen]
        st.markdown(f"**{chosen}:** {kv.human(kv.bytes_per_token(p, per_value))} per token, "
                    f"**{kv.human(kv.cache_bytes(p, tokens, per_value))}** at {tokens:,} tokens "
                    f"(MHA: {kv.human(kv.cache_bytes(p, tokens, per_value, mha=True))}). "
                    + view.sentence(view.calculator_claims(p))
                    + f"  \n:small[:gray[{p.source}.]]")
        ui.chart(view.memory_chart(per_value, tokens, chosen))
        view.calculator_cells(calc)
        st.caption("Checked: the Llama 3 8B figure by hand in the tests (2 · 32 · 8 · 128 · 2 = 131,072 bytes = "
                   "128 KiB per token), and each row's arithmetic above recomputes the table's number.")
