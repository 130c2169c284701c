import streamlit as st

import ui
from attention_core import ConfigError
from ui.transformer.block_view import (checked_text, controls, flow, get_block, intro, layer_tabs, logits, pre_and_post,
                                       stream_sizes)
from ui.views import checked_box, claims_shown

PAGE = "app_pages/50_block.py"
config, trace = ui.page(PAGE, "The transformer block")
ui.notices(trace)
arch, layer = controls()
try:
    block = get_block(config, arch)
except ConfigError as err:
    st.error(str(err), icon=":material/error:")
    st.stop()
claims_shown("block", (config, arch))
st.markdown(intro(config, block))
pre_and_post(arch)
flow(block, arch, layer)
stream_sizes(block, arch)
layer_tabs(block, arch, layer)
logits(block)
checked_box(checked_text, key="block.checked")
