import streamlit as st

import ui
from attention_core import ConfigError
from attention_core.lessons.masks import KIND, masks_trace
from ui.today.masks_view import checked_text, compare, intro, own_controls, panels, pipeline, sidebar_part
from ui.views import checked_box, claims_shown

PAGE = "app_pages/41_masks.py"
config, trace = ui.page(PAGE, "Masks & biases")
ui.notices(trace)
st.markdown(intro(config))
with st.container(border=True):
    sidebar_part(config)                            # what the sidebar sets here, with one-click changes
    head, sink = own_controls(config, trace)               # the page's own: the head shown, the sink
try:
    t = masks_trace(config, head, sink, trace)     # head h of the forward pass above, and the page's sink
except ConfigError as err:
    st.error(str(err), icon=":material/error:")
    st.stop()
s = t.facts["settings"]
claims_shown(KIND, s)
panels(t, pipeline(t, config))
compare(t, config)
checked_box(lambda: checked_text(t), key="masks.checked")
