import streamlit as st

import ui
from attention_core.claims import say
from attention_core.lesson_online_softmax import Controls, online_softmax_trace, rows_text
from ui.online_softmax_view import (RECURRENCE, block_panel, block_size_slider, block_slider, final_table,
                                   torch_check)

PAGE = "app_pages/43_online_softmax.py"
config, trace = ui.page(PAGE, "FlashAttention's online softmax")
n, H = trace.n, config.n_heads
unused = [w for w, on in ((config.score.replace("_", " ") + " score", config.score != "scaled_dot"),
                          (f"T = {config.temperature:g}", config.temperature != 1)) if on]
st.markdown(
    "Softmax divides by a sum over a **whole row** of scores, so plain attention builds all n_q × n_k of them. "
    "FlashAttention never does: it reads the keys **B at a time** and keeps, for each query row i, three running "
    "numbers: the largest score seen, m_i; the sum of exponentials, ℓ_i; and the unnormalised output, o_i. "
    "When a later block brings a larger score, what was summed so far is rescaled by e^(m_i − m_i′). "
    f":small[Here: your sentence's {f'Q_0, K_0, V_0 (head 0 of {H})' if H > 1 else 'Q, K, V'}"
    + (f", the {config.mask} mask" if config.mask != "none" else "") + ", scores q_i · k_j / √d_k at temperature 1"
    + (f" (not the sidebar's {' and '.join(unused)})" if unused else "") + ".]")

left, right = st.columns(2)
B = block_size_slider(left, n)
n_blocks = -(-n // B)
b = block_slider(right, n_blocks)
lesson = online_softmax_trace(config, B, b)
f, ctl = lesson.facts, Controls(config, B, b)
start, stop = f["keys"]

st.markdown(RECURRENCE)
KEYS = f"key {start}" if stop - start == 1 else f"keys {start} … {stop - 1}"
st.subheader(f"Block {b}: {KEYS} (“{' '.join(trace.tokens[start:stop])}”)")
sentences = [say("os_first_block", ctl), say("os_rescaled", ctl, rows=rows_text(trace.tokens, f["rescaled"])),
             say("os_not_rescaled", ctl), say("os_skipped_here", ctl, rows=rows_text(trace.tokens, f["skipped_here"]))]
st.markdown(". ".join(s[0].upper() + s[1:] for s in sentences if s) + f". :small[:gray[S_{b} checked against Ŝ "
            f"computed whole (its {KEYS.replace('key', 'column')}): max |difference| = {f['s_diff']:.1e}, −∞ in "
            f"{'the same' if f['s_same_mask'] else 'DIFFERENT'} places. Click a number in the table or a cell of "
            "S_b for its arithmetic: the explanation recomputes it from its terms and checks it against the cell.]]")
block_panel(lesson, f"S_{b}: every query × {KEYS}")

st.subheader("Memory: scores held at once")
st.markdown(
    f"At most **n_q × B = {n} × {min(B, n)} = {f['held']}** score entries exist at a time (every query row against "
    f"one block of keys); the plain softmax holds all **n_q × n_k = {f['full']}**. FlashAttention also cuts the "
    f"queries into blocks, so one B × B tile ({f['tile']} score{'s' if f['tile'] > 1 else ''} here) sits in the "
    "GPU's fast on-chip memory; the n × n matrix is never written to its main memory, which is what makes it fast "
    "and long contexts fit.  \n"
    + say("os_skipped", ctl, skipped=f["n_skipped"], tiles=f["n_tiles"],
          where=" (with the causal mask: entirely above the diagonal)" if config.mask == "causal" else "") + ".")

st.subheader("After the last block: one division")
final_table(lesson)
extra = [say("os_empty_rows", ctl, rows=rows_text(trace.tokens, f["empty_rows"])),
         say("os_one_block", ctl, B=B, n=n)]
st.markdown(
    f"Checked live against the plain softmax (this app's `scaled_dot_product_attention`: softmax(Ŝ)V over the whole "
    f"row, same Q, K, V and mask): **max |C − softmax(Ŝ)V| = {f['max_diff']:.1e}**; and against the logsumexp of "
    f"each row computed in one go: **max |(m_i + log ℓ_i) − logsumexp_j Ŝ_ij| = {f['lse_diff']:.1e}**. "
    + " ".join(s[0].upper() + s[1:] + "." for s in extra if s))
box = st.expander("Checked against PyTorch (live)", key="online_softmax.torch", on_change="rerun")
if box.open:
    with box:
        torch_check(lesson)
