import streamlit as st

import ui
from attention_core import ConfigError
from attention_core.explain import fmt
from attention_core.lesson_rope import rope_trace
from ui.rope_view import controls, pair_turning, pairing_panel, shift_panel, torch_panel

PAGE = "app_pages/40_rope.py"


@st.fragment
def angles_and_pair(t, intro: str) -> None:
    """Sections 1 and 2: a click on an angle or the pair's sliders rerun this fragment, not the page."""
    st.markdown(intro)
    ui.views.step_box(t, "angles", domain=(0.0, max(float(t["angles"].value.max()), 1e-9)))
    st.markdown("## 2 · One pair, turning")
    pair_turning(t)


@st.fragment
def rotated_and_scores(t, intro: str) -> None:
    """Sections 3 and 4: Q beside Q^R, K beside K^R (one tab each, only the open one drawn), then Ŝ."""
    st.markdown(intro)
    tabs = st.tabs(["Queries: Q → Q^R", "Keys: K → K^R"], key="rope.qk", on_change="rerun")
    for tab, name in zip(tabs, ("q", "k")):
        if tab.open is not False:
            with tab:
                left, right = st.columns(2)
                with left:
                    ui.views.step_box(t, name, max_w=300)
                with right:
                    ui.views.step_box(t, f"{name}_rot", max_w=300)
    torch_panel(t)
    st.markdown("## 4 · Scores of the rotated rows\n\n:small[Checked against: the same Ŝ from torch's rotated rows "
                "(the expander above, live) and, in tests/test_rope.py, torch's Meta and Hugging Face forms.]")
    ui.views.step_box(t, "scaled_scores")


config, _ = ui.page(PAGE, "RoPE: rotary positions")
st.markdown(
    "Llama, Mistral, Qwen and Gemma add **nothing** to X for position. After the projections, **RoPE** turns "
    "each pair of columns of every query and key by an angle proportional to its position p (RoFormer, Su et "
    "al. 2021). A query and a key then meet at an angle that depends on how far apart they are.")
try:
    base, pairing = controls()
    t = rope_trace(config, base, pairing)
except ConfigError as err:
    st.error(str(err), icon=":material/error:")
    st.stop()
d, theta = t.facts["d_k"], t.facts["theta"]
heads = f" With H = {config.n_heads} heads this page shows head 0's d_k columns." if config.n_heads > 1 else ""

angles_and_pair(t,
    "## 1 · The angles p·θ_i\n\n"
    f"$$\n\\theta_i = \\text{{base}}^{{-2i/d_k}},\\quad i = 0 \\dots {d // 2 - 1}:\\quad \\theta = ["
    + ", ".join(fmt(v, 4) for v in theta) + "]\\ \\text{rad per position}\n$$\n\n"
    f":small[Q = X_emb W_Q and K = X_emb W_K of your sentence, with no positional encoding added to X "
    f"(d_k = {d}, so {d // 2} pairs).{heads} Checked against the formula θ_i = base^(−2i/d_k) "
    "(tests/test_rope.py, and the paper's θ_0 = 1).]")

rotated_and_scores(t,
    "## 3 · Q and K, before and after the rotation\n\n"
    f"$$\nq^R_p = R_p\\, q_p,\\quad k^R_p = R_p\\, k_p\n$$\n\n:small[Checked against RoPE's complex-number form "
    f"(pair i as x_2i + i·x_2i+1, times e^(i·p·θ_i)), live: max |Q^R, K^R − complex form| = "
    f"**{t.facts['complex_gap']:.1e}**. The tests also check them against torch (Meta's torch.polar / "
    "view_as_complex, Hugging Face's rotate_half).]")

st.markdown(
    "## 5 · Shift the sentence: only the distance counts\n\n"
    "$$\n(R_m q)\\cdot(R_n k) = q^\\top R_m^\\top R_n\\, k = q \\cdot R_{n-m}\\, k\n$$\n\n"
    ":small[A rotation undone by its transpose: R_m⊤ R_n = R_(n−m). Move every token by the same offset and "
    "every angle changes, but not the angle between a query and a key.]")
shift_panel(t, config, t.facts["base"], pairing)

pairing_panel(t, "## 6 · Interleaved or half: the same rotation, columns reordered")
