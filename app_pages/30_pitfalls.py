import numpy as np
import streamlit as st

import ui
from attention_core import Trace
from attention_core.labs.pitfalls import FROM_TUTORIALS, PITFALLS
from ui.cache import get_pitfall

PAGE = "app_pages/30_pitfalls.py"
config, trace = ui.page(PAGE, "Pitfalls lab")
tutorials = sorted({p.tutorial for p in FROM_TUTORIALS})
st.markdown(f"Each of these {len(PITFALLS)} mistakes appears in published tutorials or in everyday code; "
            f"{len(FROM_TUTORIALS)} of them come from the tutorials this app teaches from (tutorials "
            f"{', '.join(map(str, tutorials[:-1]))} and {tutorials[-1]}), the others are classics. Switch one on to "
            "see it **next to the correct computation**, how far apart they are, and the check that catches it.")
titles = {p.key: f"{p.title}  ({p.source})" for p in PITFALLS}
key = st.radio("Mistake", list(titles), format_func=titles.get, key="pitfall")
pitfall = next(p for p in PITFALLS if p.key == key)
result = get_pitfall(key, config)
st.markdown(f"#### {pitfall.title}")
st.write(pitfall.text(config))

axes = tuple(result.axes)
if result.labels:                            # axes the sentence does not name (temperatures, a vocabulary, gaps)
    trace = Trace(trace.tokens, facts={"axis_labels": result.labels})
both = np.concatenate([np.ravel(result.correct), np.ravel(result.wrong)])
both = both[np.isfinite(both)]
# weights (everything in [0, 1]) on the weights' sequential scale, anything signed on the diverging one
scale = "sequential" if both.size and both.min() >= 0 and both.max() <= 1 else "diverging"
bound = float(np.abs(both).max()) if both.size else 0.0          # one colour scale for both: same colour, same number
domain = (-bound, bound) if scale == "diverging" and bound > 0 else None
correct = trace.view(f"pitfall:{key}:correct", f"Correct: {result.what}", result.correct, axes, scale=scale)
wrong = trace.view(f"pitfall:{key}:wrong", f"With the mistake: {result.what}", result.wrong, axes, scale=scale)
diff = trace.view(f"pitfall:{key}:diff", "Difference (mistake − correct)",
                  lambda: np.subtract(result.wrong, result.correct), axes)
head = None                                  # with several heads, one head's matrices at a time
if axes[:1] == ("head",):
    ui.page_state.fit("pitfall_head", 0, result.correct.shape[0] - 1)
    head = st.radio("Head", range(result.correct.shape[0]), format_func=lambda g: f"head {g}", horizontal=True,
                    key="pitfall_head", help="The difference and the check below cover every head.")
c1, c2 = st.columns(2)
with c1:
    st.markdown(f"**Correct** · {result.what}")
    ui.heatmap(trace, correct, head, key="hm:pit:c", domain=domain, max_w=300)
with c2:
    st.markdown(f"**With the mistake** · {result.what}")
    ui.heatmap(trace, wrong, head, key="hm:pit:w", domain=domain, max_w=300)
st.markdown("**The difference**")
ui.heatmap(trace, diff, head, key="hm:pit:d", max_w=400)
nan_cells = int((~np.isfinite(diff.value)).sum())
st.caption(f"Largest |difference|{' over every head' if head is not None else ''}: {result.difference:.3g}"
           + (f" ({nan_cells} cell(s) are NaN or infinite on one side: grey above)" if nan_cells else ""))

st.markdown(f"**The check:** {result.check_name}")
a, b = st.columns(2)
a.metric("on the correct version", "passes ✓" if result.check_passes_on_correct else "fails ✗")
b.metric("on the mistake", "flags it ✓" if result.check_flags_wrong else "misses it ✗")
st.caption(result.check_detail)
