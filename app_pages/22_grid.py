import streamlit as st

import ui
from attention_core import ConfigError
from ui.variants import grid_sections as view
from ui.variants.grid_view import crossed, grid_of, several, single

PAGE = "app_pages/22_grid.py"
ui.page(PAGE, "Cross-attention on a grid", settings=False)


st.markdown(
    "Attention does not need a sentence. An image captioner's encoder is a CNN whose output is a **grid of "
    "feature vectors**, one per region of the image; while writing each word, the decoder attends over that "
    "grid, so the word “frisbee” can draw on the cells where the frisbee is. This page builds that up in the "
    "order of tutorial 4: (a) one query scored against every cell with a plain dot product, (b) many "
    "queries at once, (c) keys and values transformed from the features: cross-attention.")

scene_name, query, cells, sharpness, queries = view.controls()
try:
    grid = grid_of(scene_name, cells)
    one = single(scene_name, cells, query, float(sharpness))
    many = several(scene_name, cells, tuple(queries), float(sharpness)) if queries else None
except ConfigError as err:
    st.error(str(err), icon=":material/error:")
    st.stop()

view.image_and_features(grid, one, scene_name, cells)

tabs = st.tabs(list(ui.page_state.GRID_TABS), key="grid.tab", on_change="rerun")

with tabs[0]:
    if tabs[0].open is not False:
        view.one_query(grid, one, query)

with tabs[1]:
    if tabs[1].open and view.asked(many):
        view.many_queries(grid, many, queries)

with tabs[2]:
    if tabs[2].open and view.asked(many):
        transforms, seed = view.transform_controls()
        try:
            hand = crossed(scene_name, cells, tuple(queries), float(sharpness), "hand", 0)
            rand = crossed(scene_name, cells, tuple(queries), float(sharpness), "random", seed)
        except ConfigError as err:
            st.error(str(err), icon=":material/error:")
            st.stop()
        view.cross_attention(grid, hand, rand, transforms, seed, queries)
