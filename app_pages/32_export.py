import json

import streamlit as st

import ui
from ui.room import hide as room_hide
from attention_core.labs.export import csv_names
from ui.cache import chart_image, export_csv, export_csv_zip, export_npz, export_script
from ui.charts import heatmap_spec, standalone
from ui.labs.share import share_box

PAGE = "app_pages/32_export.py"
config, trace = ui.page(PAGE, "Share and export")

st.subheader("Share these settings")
st.markdown("A link holds your settings: the same page opens with the **same numbers** on any machine. "
            "Only what differs from the defaults is in it.")
share_box(PAGE, ui.query(config))
if config.embedding == "upload":
    st.warning("Uploaded vectors cannot travel in a link: whoever opens it gets the default embeddings.")

st.subheader("Download the numbers")
WAIT = (":material/visibility_off: Your teacher's lesson stop hides some numbers until the reveal: the downloads "
        "(which hold every number) come back then.")
if room_hide.hiding():                       # a student in a room, during a stop to predict
    st.caption(WAIT)
    st.stop()
# Every file is built when its button is clicked (data=callable), once per setting, for every session
c1, c2 = st.columns(2)
with c1:
    st.download_button("Every step as .npz", lambda: export_npz(config), file_name="attention_trace.npz",
                       mime="application/octet-stream", icon=":material/download:",
                       help="numpy.load(...) gives one array per step, named by its key; the member "
                            "__manifest__ (JSON) gives each one's axes and symbol (S, Ŝ, S̃, A, C, O …).")
with c2:
    st.download_button("Every step as CSV (zip)", lambda: export_csv_zip(config), file_name="attention_trace_csv.zip",
                       mime="application/zip", icon=":material/download:",
                       help="One CSV per matrix, rows and columns labelled, counted from 0; a step with heads has a "
                            "first column h (a head's index, 0 … H−1"
                            + (f"; K_h, V_h have one block per KV head, 0 … H_kv−1 = {config.kv_heads - 1}"
                               if config.kv_heads < config.n_heads else "")
                            + "). README.txt names each file's symbol.")
files = csv_names(trace)
name = st.selectbox("Or one matrix as CSV", list(files), key="export_csv")
st.download_button(f"Download {name}", lambda key=files[name]: export_csv(config, key), file_name=name, mime="text/csv")

st.subheader("A script that recomputes it all")
written_out = [what for what, used in (("RoPE's rotation of Q and K", config.positional == "rope"),
                                      ("ALiBi's slopes and bias", config.positional == "alibi"),
                                      ("the grouped KV heads (np.repeat)", config.kv_heads < config.n_heads),
                                      ("the sliding-window mask", config.mask == "sliding_window")) if used]
st.markdown("A plain numpy script (no Streamlit, no torch) that rebuilds this configuration step by step "
            "and prints every matrix: the same numbers as the pages. Run it with `python attention_steps.py`."
            + (" It writes out " + (", ".join(written_out[:-1]) + " and " if len(written_out) > 1 else "")
               + f"{written_out[-1]} in numpy too." if written_out else ""))
st.download_button("Download the script", lambda: export_script(config), file_name="attention_steps.py",
                   mime="text/x-python", icon=":material/code:")
with st.expander("Read the script", key="export_read", on_change="rerun") as reading:
    if reading.open:                         # written only for a learner who opens it
        st.code(export_script(config), language="python")

st.subheader("Charts as pictures")
keys = [s.key for s in trace if s.value.ndim >= 1]
key = st.selectbox("Chart", keys, index=keys.index("weights"), format_func=lambda k: f"{trace[k].title} ({k})",
                   key="export_chart")
step = trace[key]
spec, cells = heatmap_spec(trace, step, head=0 if step.axes[:1] == ("head",) else None)
spec_json = json.dumps(standalone(spec, cells), sort_keys=True)
ui.heatmap(trace, step, head=0 if step.axes[:1] == ("head",) else None, key="hm:export")
b1, b2 = st.columns(2)
with b1:
    st.download_button("PNG", lambda: chart_image(spec_json, "png"), file_name=f"{key}.png", mime="image/png")
with b2:
    st.download_button("SVG", lambda: chart_image(spec_json, "svg"), file_name=f"{key}.svg", mime="image/svg+xml")
