"""The PyTorch page's sections: the layer's own controls (and what they cannot show), a torch run under a
spinner when it is new, the check against numpy, the module's forward pass step by step in lazy tabs, and the
dropout pitfall's three modules side by side."""
from __future__ import annotations

import numpy as np
import streamlit as st

from attention_core import torch_mha as tm

from ..settings_state import sidebar_back
from ..views import heatmap, step
from .torch_view import check, computed, pitfall

MODE_LABELS = {"eval": "model.eval()", "train": "model.train()", "pitfall": "tutorial 3's line, model.eval()"}
GROUPS = [("Project", ["x", "q"], ["k", "v"]),
          ("Split into heads", ["q_heads", "k_t"], ["k_heads", "v_heads"]),
          ("Score, mask, softmax, dropout", ["energy", "masked_energy", "alpha", "alpha_dropped"], []),
          ("Back together", ["a_heads", "a", "output"], [])]
TITLES = {"eval": "Correct module, model.eval()", "train": "Correct module, model.train()",
          "pitfall": "Tutorial 3's module, model.eval()"}
NOTES = {"eval": "Inference: dropout is off, the output equals numpy's.",
         "train": "Training: weights dropped on purpose (a regulariser).",
         "pitfall": "Inference, yet weights are dropped: the bug."}


def controls(config, trace, options: list[int]) -> tuple[int, tuple[int, ...], float, int]:
    """(heads H, padded key positions, dropout p, dropout draw) in one bordered row; then what one head or an
    all-padding mask cannot show (one padded key is kept unmasked then)."""
    n, d_model = trace.n, trace.facts["d_model"]
    with st.container(border=True):
        c1, c2, c3, c4 = st.columns([1, 2, 1, 1])
        with c1:
            default = config.n_heads if config.n_heads in options else 1
            heads = st.selectbox("Heads H of this layer", options, index=options.index(default), key="mha.heads",
                                 help=f"Must divide hid_dim = {d_model}. For more choices pick seeded random "
                                      "embeddings with a larger d_model in the sidebar." + sidebar_back())
        with c2:
            labels = trace.token_labels()
            pad = st.multiselect("Padding: key positions with mask == 0", list(range(n)), key="mha.pad",
                                 format_func=lambda j: f"{j}: {labels[j]}",
                                 help="As if these tokens were padding added to fill a batch.")
        with c3:
            p = st.slider("Dropout p", min_value=0.0, max_value=0.9, value=0.1, step=0.05, key="mha.p")
        with c4:
            draw = st.number_input("Dropout draw", min_value=0, max_value=10_000, value=0, step=1, key="mha.draw",
                                   help="Seeds torch's random numbers for dropout: another draw drops other weights.")
    pad = tuple(sorted(int(j) for j in pad if 0 <= int(j) < n))
    if heads == 1:
        more = [h for h in options if h > 1]
        st.info("One head: view + permute only add a head axis of size 1. "
                + (f"Choose {' or '.join(map(str, more[:3]))} heads above to see the split" if more else "")
                + (" (head_dim = 1 with the toy 3-d vectors), or seeded random embeddings with d_model = 8 in the "
                   "sidebar for 2 or 4 heads." + sidebar_back() if d_model == 3 else "."), icon=":material/info:")
    if len(pad) == n:
        st.warning(f"Every key is padding: nothing is left to attend to, so position {pad[-1]} is shown unmasked "
                   "(real batches always keep a token). With every key masked, PyTorch's masked_fill gives them all "
                   "the same −10¹⁰ and softmax spreads the weight evenly, while this app's numpy attention returns "
                   "all-zero weights.", icon=":material/warning:")
        pad = pad[:-1]
    return heads, pad, p, draw


def run(kind: str, spinner: str, config, *args):
    """check(...) or pitfall(...): under a spinner only when the torch run is new (a spinner costs its element)."""
    fn = {"check": check, "pitfall": pitfall}[kind]
    if computed(kind, config, *args):
        return fn(config, *args)
    with st.spinner(spinner):
        return fn(config, *args)


def agreement(diffs: dict, pad: tuple[int, ...]) -> None:
    """The check as one message (its numbers, the verdict and what was compared), not three metrics in columns."""
    ok = max(diffs.values()) < 1e-10
    (st.success if ok else st.error)(
        f"**Agree to 1e-10: {'yes' if ok else 'no'}.** max |torch − numpy|: output **{diffs['output']:.1e}**, "
        f"weights **{diffs['weights']:.1e}**.  \n:small[The module in eval mode against attention_core's numpy "
        f"multi_head_attention with the same four (hid_dim × hid_dim) matrices{', the same padding' if pad else ''}, "
        "both in float64, computed now.]" + ("" if ok else "  \ntorch and numpy disagree by more than 1e-10: this is "
                                             "a bug, please report it."),
        icon=":material/check_circle:" if ok else ":material/error:")


def mode_control() -> str:
    mode = st.segmented_control("Run the module as", list(tm.MODES), default="eval", key="mha.mode",
                                format_func=MODE_LABELS.get, required=True)
    return mode if mode in tm.MODES else "eval"


def steps_tabs(shown) -> None:
    """The walk's steps in four lazy tabs: only the open group's steps run on a rerun (the closed ones cost
    nothing), as do the "Also" expanders. tab.open is None on a run before the browser reported a tab: the
    first is open then."""
    tabs = st.tabs([f"{k + 1} · {title}" for k, (title, _, _) in enumerate(GROUPS)], key="mha.group",
                   on_change="rerun")
    for k, (tab, (title, main, more)) in enumerate(zip(tabs, GROUPS)):
        if not (tab.open if k else tab.open is not False):
            continue
        with tab:
            for key in main:
                if key == "masked_energy" and key in shown:
                    st.caption("The tensor holds −10¹⁰ at the padding keys; the pictures draw those cells as −∞ "
                               "(grey) so that the colour scale still shows the other scores.")
                if key in shown:
                    step(shown, key, key_prefix="mha.")
            if more:
                also = st.expander(f"Also: {', '.join(shown[k].title for k in more)}", key=f"mha.also.{k}",
                                   on_change="rerun")
                if also.open:
                    with also:
                        for key in more:
                            step(shown, key, key_prefix="mha.")


def pitfall_panels(shown, runs: dict, again: dict, heads: int, p: float, draw: int) -> None:
    """The three modules side by side (one colour scale): the weights A′ of one head, the output against numpy's,
    their largest difference; then what running tutorial 3's module twice at inference gives."""
    head = st.selectbox("Head h to draw", list(range(heads)), key="mha.pit_head",
                        help=f"Heads are counted from 0: h = 0 … {heads - 1}.") if heads > 1 else 0
    top = max(1.0, *(float(runs[f"alpha_{m}"].max()) for m in tm.MODES))      # one colour scale for the three
    off = max(1e-12, *(runs[f"diff_{m}"] for m in tm.MODES))
    cols = st.columns(3, border=True)
    for col, m in zip(cols, tm.MODES):
        sums = runs[f"alpha_{m}"].sum(axis=-1)
        with col:
            # title, note and the row sums of α as one Markdown element (a rerun's cost is per element)
            st.markdown(f"**{TITLES[m]}**  \n:small[:gray[{NOTES[m]} Row sums of A′ from {sums.min():.3f} to "
                        f"{sums.max():.3f}.]]")
            alpha = shown.view(f"alpha_{m}:{p}:{draw}", f"A′ after dropout ({m})", runs[f"alpha_{m}"],
                               ("head", "n_q", "n_k"), scale="sequential")
            heatmap(shown, alpha, head=head, title=f"weights A′, head {head}", key=f"mha.pit.a.{m}", max_w=130,
                    domain=(0.0, top))
            diff = shown.view(f"diff_{m}:{p}:{draw}", f"output − numpy ({m})", runs[m] - runs["reference"],
                              ("n", "hid_dim"))
            heatmap(shown, diff, title="output − numpy reference", key=f"mha.pit.d.{m}", max_w=130,
                    domain=(-off, off))
            st.metric("max |output − numpy|", f"{runs[f'diff_{m}']:.2e}")
    repeat = float(np.max(np.abs(runs["pitfall"] - again["pitfall"])))
    st.caption(f"Run tutorial 3's module twice at inference (dropout draws {int(draw)} and {int(draw) + 1}) and the "
               f"same input gives outputs that differ by up to {repeat:.3g}; the correct module in eval mode gives "
               f"the same output every time (difference "
               f"{float(np.max(np.abs(runs['eval'] - again['eval']))):.1e}). With the same draw, tutorial 3's module "
               "at inference drops exactly what training mode drops: it behaves as if it were still training. "
               "No padding in this comparison; the three heatmaps of each row share one colour scale.")
