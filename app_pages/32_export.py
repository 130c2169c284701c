import json

import streamlit as st

import ui
from attention_core.export import csv_files, csv_zip, npz_bytes, python_script
from ui.cache import chart_image
from ui.charts import heatmap_spec, standalone
from ui.share import share_box

PAGE = "app_pages/32_export.py"
config, trace = ui.page(PAGE, "Share and export")

st.subheader("Share these settings")
st.markdown("A link holds your settings: the same page opens with the **same numbers** on any machine. "
            "Only what differs from the defaults is in it.")
share_box(PAGE, ui.query(config))
if config.embedding == "upload":
    st.warning("Uploaded vectors cannot travel in a link: whoever opens it gets the default embeddings.")

st.subheader("Download the numbers")
c1, c2 = st.columns(2)
with c1:
    st.download_button("Every step as .npz", npz_bytes(trace), file_name="attention_trace.npz",
                       mime="application/octet-stream", icon=":material/download:",
                       help="numpy.load(...) gives one array per step, named by its key.")
with c2:
    st.download_button("Every step as CSV (zip)", csv_zip(trace), file_name="attention_trace_csv.zip",
                       mime="application/zip", icon=":material/download:",
                       help="One CSV per matrix, rows and columns labelled; 3-D steps have a head column.")
files = csv_files(trace)
name = st.selectbox("Or one matrix as CSV", list(files), key="export_csv")
st.download_button(f"Download {name}", files[name], file_name=name, mime="text/csv")

st.subheader("A script that recomputes it all")
st.markdown("A plain numpy script (no Streamlit, no torch) that rebuilds this configuration step by step "
            "and prints every matrix: the same numbers as the pages. Run it with `python attention_steps.py`.")
script = python_script(config)
st.download_button("Download the script", script, file_name="attention_steps.py", mime="text/x-python",
                   icon=":material/code:")
with st.expander("Read the script"):
    st.code(script, language="python")

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
