"""The grid page's sections: its own controls, the image and its feature map, and the three tabs in tutorial 4's
order: (a) one query, (b) many queries, (c) learned keys and values, cross-attention."""
from __future__ import annotations

import streamlit as st

from attention_core import grid as g

from ..views import step
from .grid_view import channels, features_table, looks, picture

from ..page_state import GRID_CELLS as GRIDS   # cells per side; each divides the 48-pixel image


def controls() -> tuple[str, str, int, float, list[str]]:
    """(scene, query, cells per side, query length, the queries asked together) in one bordered box."""
    with st.container(border=True):
        c1, c2, c3, c4 = st.columns(4)
        with c1:
            scene_name = st.selectbox("Scene", list(g.SCENES), key="grid.scene")
        with c2:
            query = st.selectbox("Query", list(g.QUERIES), key="grid.query",
                                 help="What the decoder is looking for, written in the features' own terms.")
        with c3:
            cells = st.select_slider("Grid", options=list(GRIDS), format_func=lambda c: f"{c}×{c}",
                                     key="grid.cells")
        with c4:
            sharpness = st.slider("Query length (sharpness)", min_value=1.0, max_value=30.0, step=1.0,
                                  key="grid.sharpness", help="Each query is a unit vector times this number: longer "
                                  "queries give larger scores and more peaked weights.")
        queries = st.multiselect("Queries asked together in (b) and (c)", list(g.QUERIES),
                                 default=["red", "blue", "green", "top-left"], key="grid.queries")
    return scene_name, query, cells, sharpness, queries


def image_and_features(grid: g.Grid, one, scene_name: str, cells: int) -> None:
    """The picture cut into cells, what the stand-in features measure, their maps, and X (lazy)."""
    st.header("The image and its features")
    left, right = st.columns([2, 3])
    with left:
        picture(grid.image, grid.shape, width=384,
                caption=f"“{scene_name}”: 48×48 pixels drawn in numpy, cut into {cells}×{cells} cells of "
                        f"{48 // cells}×{48 // cells} pixels. Cell r0c0 is the top left, r0c1 the one to its right.")
    with right:
        st.warning("**A stand-in for a CNN.** A real captioner's grid comes from a trained convolutional network "
                   "whose features nobody can name. Here each cell's vector comes from a small hand-made filter bank "
                   "instead, so every number can be checked by eye. Attention treats it exactly like a CNN feature "
                   "map: one vector per region.", icon=":material/construction:")
        st.table(features_table())
    st.subheader("The feature map: one channel per feature")
    st.caption("Each small map is one column of X laid back on the grid, as a CNN's output channels are: "
               "where the image is red, round, bright, …")
    channels(scene_name, cells)
    xbox = st.expander("The same numbers as the matrix X attention works on (one row per cell)", key="grid.x",
                       on_change="rerun")
    if xbox.open:                       # lazy: closed, its step does not run
        with xbox:
            step(one, "x", key_prefix="grid.")


def one_query(grid: g.Grid, one, query: str) -> None:
    """(a) One query scored against every cell with a dot product, and where it looks."""
    st.markdown(f"The query **“{query}”** is a vector in the same {g.D_X}-feature space as the cells. Instead of "
                "a learned scoring network (Bahdanau's), tutorial 4's second abstraction scores each "
                "cell with a **dot product**: large where the cell's features point the way the query does.")
    step(one, "q", key_prefix="grid.a.")
    step(one, "scores", key_prefix="grid.a.")
    step(one, "weights", key_prefix="grid.a.")
    st.subheader(f"Where “{query}” looks")
    c1, c2 = st.columns([2, 3])
    with c1:
        looks(grid, one["weights"].value, 384, "The image dimmed where the weight is low; framed: the cells "
                                               "with at least half the largest weight.")
    with c2:
        step(one, "weights_grid", key_prefix="grid.a.")
    step(one, "context", key_prefix="grid.a.")
    top = int(one["weights"].value.argmax())
    st.caption(f"The largest weight, {one['weights'].value[top]:.3f}, is on cell {grid.cells[top]}. The context "
               "c is the feature vector a decoder would receive for this word: what was found, averaged over "
               "the cells with the weights.")


def asked(many) -> bool:
    """Whether (b) and (c) have queries to ask; if none was chosen, say so (in the open tab)."""
    if many is None:
        st.info("Choose at least one query above.", icon=":material/info:")
    return many is not None


def many_queries(grid: g.Grid, many, queries: list[str]) -> None:
    """(b) The queries stacked as the rows of Q, and each row of A back on the image."""
    st.markdown("Stack the queries as the rows of a matrix Q (N_q × D_x) and every question is asked in "
                "one matrix product: the score matrix S = Q Xᵀ has one row per query and one column per "
                "cell, and softmax runs along each row.")
    for key in ("queries", "scores", "weights"):
        step(many, key, key_prefix="grid.b.")
    st.subheader("Each row of A back on the image")
    st.caption("Dimmed where the weight is low; framed: the cells with at least half the row's largest weight.")
    cols = st.columns(min(4, len(queries)))
    for k, name in enumerate(queries):
        with cols[k % len(cols)]:
            looks(grid, many["weights"].value[k], 240, f"“{name}”")
    step(many, "context", key_prefix="grid.b.")


def transform_controls() -> tuple[str, int]:
    """(c)'s question and its two controls: which W_K, W_V (hand-set or random) and the random ones' seed."""
    st.markdown(
        "So far the cell features X did two jobs: they were **matched** against the queries and "
        "**returned** as the output. The last abstraction gives each job its own transform: keys "
        "K = X W_K decide what gets attention, values V = X W_V decide what is handed back, and the "
        "queries come from somewhere else (a decoder, a question), so this is **cross-attention**. "
        "In a real model W_K and W_V are learned; here you can compare two stand-ins.")
    c1, c2 = st.columns([2, 1])
    with c1:
        transforms = st.radio("W_K and W_V", ["hand", "random"], horizontal=True, key="grid.transforms",
                              format_func={"hand": "hand-set (what training might find)",
                                           "random": "random (an untrained model)"}.get)
    with c2:
        seed = st.number_input("Seed of the random transforms", min_value=0, max_value=2**32 - 1,
                               step=1, key="grid.seed", disabled=transforms == "hand")
    return transforms, int(seed)


def cross_attention(grid: g.Grid, hand, rand, transforms: str, seed: int, queries: list[str]) -> None:
    """(c) The chosen transforms' steps, then each query's weights with hand-set and with random W_K."""
    cross = hand if transforms == "hand" else rand
    if transforms == "hand":
        st.caption(f"Hand-set: W_K = √d_k · I (d_k = D_x = {g.D_X}) keeps the features' meaning, so the named "
                   "queries still match, and its √d_k cancels the 1/√d_k of scaled dot-product attention, so "
                   "the weights equal (b)'s. W_V keeps only colour and position ("
                   + ", ".join(g.VALUE_FEATURES) + "): the context says what colour the attended cells are "
                   "and where they are, not how they matched.")
    else:
        st.caption("Random W_K and W_V, N(0, 1/D_x), as a model has them before training: the keys no "
                   "longer speak the queries' language, so nothing makes “red” look at red cells (where "
                   "it does, that is chance). Training is what makes keys match queries.")
    for key in ("queries", "w_k", "w_v", "k", "v", "scores", "weights", "context"):
        step(cross, key, key_prefix=f"grid.c.{transforms}.", why=not (key == "context" and transforms == "random"))
    if transforms == "random":
        d_v = cross["w_v"].shape[1]
        st.caption(f"Each query's blend of the values. A random W_V mixes all {g.D_X} features into each "
                   f"of the {d_v} value columns v0…v{d_v - 1}, so the context has no nameable meaning until "
                   "trained.")
    st.subheader("Hand-set against random transforms")
    for k, name in enumerate(queries):
        c0, c1, c2 = st.columns([1, 2, 2], vertical_alignment="center")
        with c0:
            st.markdown(f"**“{name}”**")
        with c1:
            looks(grid, hand["weights"].value[k], 200, "hand-set W_K")
        with c2:
            looks(grid, rand["weights"].value[k], 200, f"random W_K (seed {int(seed)})")
