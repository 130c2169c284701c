import streamlit as st

import ui
from ui.room import hide as room_hide
from attention_core.forward.claims import say
from attention_core.lessons.online_softmax import (KIND, Controls, online_softmax_trace, rows_text, skipped_text,
                                                   source_text)
from ui.today.online_softmax_view import (block_note, block_panel, checks, controls, final_table, head_value, memory_text,
                                   recurrence, score_note, v_symbol)
from ui.views import checked_box, claims_shown

PAGE = "app_pages/43_online_softmax.py"
config, trace = ui.page(PAGE, "FlashAttention's online softmax")
n, H = trace.n, config.n_heads
st.markdown(
    "Softmax divides by a sum over a **whole row** of scores, so plain attention builds all n_q × n_k of them. "
    "FlashAttention never does: it reads the keys **B_c at a time** and keeps, for each query row i, a running "
    "maximum of the scores seen, m_i; a running sum of exponentials, ℓ_i; and an unnormalised output o_i (a row "
    "of d_v numbers). When a later block brings a larger score, what was summed so far is rescaled by "
    f"e^(m_i − m_i′). :small[{source_text(config, head_value(H))}]")

B, b, h = controls(n, H)
lesson = online_softmax_trace(config, B, b, h, forward=trace)
f, ctl = lesson.facts, Controls(config, B, b, h)
claims_shown(KIND, ctl)
start, stop = f["keys"]
score_note(ctl)

recurrence(config, H > 1)
KEYS = f"key {start}" if stop - start == 1 else f"keys {start} … {stop - 1}"
st.subheader(f"Block {b}: {KEYS} (“{' '.join(trace.tokens[start:stop])}”)")
# whether a row's maximum rose in this block answers a stop that hides m_i′ and e^(m_i − m_i′): it waits
rose = ([] if not room_hide.waits("m", "rescale") else ["whether a row's running maximum rises in this block: predict "
                                                         "first, revealed by your teacher"])
sentences = [say("os_first_block", ctl)] + rose + ([] if rose else [
             say("os_rescaled", ctl, rows=rows_text(trace.tokens, f["rescaled"])), say("os_not_rescaled", ctl)]) + [
             say("os_seen_all_skipped", ctl),
             say("os_first_seen", ctl, rows=rows_text(trace.tokens, f["first_seen"])),
             say("os_skipped_here", ctl, rows=rows_text(trace.tokens, f["skipped_here"]))]
st.markdown(". ".join(s[0].upper() + s[1:] for s in sentences if s) + f". :small[:gray[{block_note(lesson, KEYS)} "
            f"Click a number in the table or a cell of S_{b} for its arithmetic: the explanation recomputes it from its "
            "terms and checks it against the cell.]]")
block_panel(lesson, f"S_{b}: every query × {KEYS}")

st.subheader("Memory: scores held at once")
st.markdown(memory_text(lesson) + "  \n" + skipped_text(ctl) + ".")

st.subheader("After the last block: one division")
final_table(lesson)
extra = [say("os_empty_rows", ctl, rows=rows_text(trace.tokens, f["empty_rows"])),
         say("os_one_block", ctl, B=B, n=n)]
a = "A_h" if H > 1 else "A"
st.markdown(
    f"The same as the plain softmax over whole rows, {a} = softmax({f['reads_text']}): **max |C − {a} {v_symbol(lesson)}| = "
    f"{f['max_diff']:.1e}**; and m_i + log ℓ_i is each row's log Σ_j e^({f['entry_text']}) computed in one go: "
    f"**max |(m_i + log ℓ_i) − log Σ_j e^({f['entry_text']})| = {f['lse_diff']:.1e}**. "
    + " ".join(s[0].upper() + s[1:] + "." for s in extra if s))
checked_box(lambda: checks(lesson), key="online_softmax.checked")
