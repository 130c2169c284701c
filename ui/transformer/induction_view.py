"""The induction-heads page's views: what an induction head is, why the repeat moves, a run's curves and numbers,
the step slider over the run, every head's pattern at the step shown, the K-composition with live numbers and over
the steps, the ablations, the learner's sentence."""
from __future__ import annotations

import numpy as np
import streamlit as st

from attention_core import ConfigError
from attention_core.math.limits import MAX_CHARS
from attention_core.explanations import explain
from attention_core.lessons import induction as ind
from attention_core.training.lm.model import D_HEAD, D_MODEL, N_CTX, VOCAB, lm_trace, sentence_ids
from attention_core.training.lm.task import MAX_REPEAT, MIN_REPEAT, SEQ_LEN
from attention_core.training.lm.train import PATTERN_LEVELS, pattern_weights

from ..text import md_escape as md_safe

from ..matrix import chart
from ..views import step_boxes
from .induction_charts import (ablation_spec, head_label, kcomp_spec, loss_spec, patterns_spec, phone_patterns_spec,
                               phone_text, scores_spec)

from ..page_state import INDUCTION_ABLATE, INDUCTION_SENTENCE, INDUCTION_TABS as TABS

INTRO = (
    "An **induction head** continues a repeat: having seen … **A B** … and now **A** again, it predicts **B** "
    "(Elhage et al. 2021, *A Mathematical Framework for Transformer Circuits*; Olsson et al. 2022, *In-context "
    "Learning and Induction Heads*). It takes two heads in two layers. In layer 0 a **previous-token head** attends "
    "from each token to the one before it, so it writes into B's row of the residual stream *the token before me "
    "was A*. In layer 1 the **induction head**'s query at the current A looks for exactly that: its key at B is "
    "built from what the previous-token head wrote (**K-composition**), so A's query matches B's key, and the head "
    f"copies B's value forward into the prediction. Below, the small model (2 layers × 4 heads, d_model = {D_MODEL}, "
    "attention only) trained on the copy task: its loss, its heads' jobs as numbers, and the arithmetic.")

WHY_RANDOM = (
    f"Each training sequence is {SEQ_LEN} random tokens of the {VOCAB} (the model reads the first {N_CTX}, each "
    "with the token after it as its target) in which "
    f"one segment of {MIN_REPEAT}–{MAX_REPEAT} tokens is repeated **at a random later offset**. With the repeat always the same number of positions later, position alone tells where "
    "the answer is: a head that attends a fixed distance back (learned from the position embeddings, no content "
    "needed) copies as well as an induction head, and no induction head forms. Only when the distance changes from "
    "sequence to sequence must the model find the earlier occurrence by what the token is.")


def why_random_text(run: dict) -> str:
    """WHY_RANDOM, and the shipped fixed-offset run's numbers beside this run's."""
    from attention_core.training.lm import shipped
    from attention_core.training.lm.task import FIXED_OFFSET
    fixed = shipped.load("fixed_offset").history
    h = run["history"]
    start = ("the same start as the run shown" if run["seed"] == 0 else
             f"the shipped run's start, not this seed-{run['seed']} run's")
    return WHY_RANDOM + (
        f"\n\nThe project ships that run too (seed 0, {start}, {int(fixed['step'][-1]):,} steps, the repeat "
        f"always starting {FIXED_OFFSET} positions after its segment starts): its training loss falls from "
        f"{fixed['loss'][0]:.2f} to {fixed['loss'][-1]:.2f} nats, so it does copy at that distance; yet on repeated "
        f"random tokens (the repeat {ind.HALF} positions later) its copy loss goes only from "
        f"{fixed['copy_loss'][0]:.2f} to {fixed['copy_loss'][-1]:.2f} nats and no layer-1 head's induction score "
        f"ever passes {np.max(fixed['induction'][:, 1]):.2f}. The run shown here ends at "
        f"{h['copy_loss'][-1]:.2f} nats and {h['induction'][-1][1].max():.2f}.")


def run_text(run: dict, an: dict) -> str:
    """The run in one paragraph, every number from its history and its analysis."""
    h, ph = run["history"], an["phases"]
    who = {"shipped": "**The shipped run**, trained by the project's own code",
           "teacher": "**Your teacher's run**, trained in their session and shown to the class"}.get(
        run["source"], "**Your run** (this session)")
    took = f" in {run['seconds']:.1f} s" if run.get("seconds") else ""
    text = (f"{who}: seed {run['seed']}, {run['steps']:,} steps{took}. The copy loss (the next token's cross-entropy "
            f"on the second copy of repeated random tokens, where copying gives the answer) goes from "
            f"{h['copy_loss'][0]:.2f} to {h['copy_loss'][-1]:.2f} nats (ln 31 = {np.log(31):.2f} is a blind guess). ")
    if ph.found:
        at = lambda key, step, layer: float(np.max(h[key][list(h["step"]).index(step)][layer]))
        a, b = ph.drop
        text += (f"It sits on a **plateau** at about {ph.high:.2f} nats from step {ph.plateau[0]:,} to "
                 f"{ph.plateau[1]:,}, then **drops** between steps {a:,} and {b:,} (to "
                 f"{h['copy_loss'][list(h['step']).index(b)]:.2f}) " +
                 (after_drop(h, b) if ph.ended else
                  f"and is still dropping fast at step {b:,}, the run's last: the run stops before the drop ends "
                  "(more steps show where it levels off)") +
                 f". Over the drop{'' if ph.ended else ' so far'}, layer 0's best previous-token score goes from "
                 f"{at('prev', a, 0):.2f} to {at('prev', b, 0):.2f} and layer 1's best induction score from "
                 f"{at('induction', a, 1):.2f} to {at('induction', b, 1):.2f} (the score curves).")
    else:
        text += "No drop yet: the loss is still on its plateau (more steps, or another seed, get past it)."
    return text


def after_drop(h: dict, b: int) -> str:
    """What the copy loss does after the drop's end (step b): keeps falling, or not."""
    at, end = float(h["copy_loss"][list(h["step"]).index(b)]), float(h["copy_loss"][-1])
    if end < at:
        return f"and keeps falling after it, to the {end:.2f} above at step {int(h['step'][-1]):,}"
    return f"and after it no lower: {end:.2f} at step {int(h['step'][-1]):,}, the run's last"


def built(an: dict, name: str, make) -> dict:
    """A run's chart spec, built once and kept with its analysis (the same for every rerun and session)."""
    specs = an.setdefault("specs", {})
    if name not in specs:
        specs[name] = make()
    return specs[name]


def curves(run: dict, an: dict, at: int | None = None) -> None:
    """The loss (a dashed line at the step shown) and every head's scores over the run."""
    h = run["history"]
    c1, c2 = st.columns([1, 1.15])
    with c1:                               # each drawn twice, one shown (ui/phone.py): a phone's is narrow, not scaled
        wide_or_phone(loss_spec(h, an["phases"], at=at), "loss-curve",
                      phone_text(loss_spec(h, an["phases"], width=230, height=200, at=at, legend_columns=1)))
    with c2:
        wide_or_phone(built(an, "scores", lambda: scores_spec(h)), "score-curves",
                      built(an, "scores-phone", lambda: phone_text(scores_spec(h, width=230, height=170, stacked=True))))


def scores_table(run: dict, an: dict, row: int):
    """One row per head: both scores at step 0, at the step shown and at the end, and the copy loss change when it
    is zeroed (at the end)."""
    h = run["history"]
    step = int(h["step"][row])
    b, a, ab = an["scores_before"], an["scores_after"], an["ablation"]["change"]
    rows = [{"head": head_label(l, k), "previous-token, step 0": b["prev"][l, k],
             f"previous-token, step {step:,}": h["prev"][row][l, k], "previous-token, end": a["prev"][l, k],
             "induction, step 0": b["induction"][l, k], f"induction, step {step:,}": h["induction"][row][l, k],
             "induction, end": a["induction"][l, k], "copy loss change if zeroed (end)": ab[l, k]}
            for l in range(2) for k in range(4)]
    st.dataframe(rows, hide_index=True, width="content",
                 column_config={k: st.column_config.NumberColumn(format="%.3f") for k in rows[0] if k != "head"})


def roles(an: dict) -> tuple[int, int]:
    """(layer 0's previous-token head, layer 1's induction head) by their scores now."""
    return ind.top_head(an["scores_after"]["prev"], 0), ind.top_head(an["scores_after"]["induction"], 1)


def role_name(an: dict, kind: str) -> str:
    """The head with the best score of its kind ("prev": layer 0, "induction": layer 1), named by its job only when
    the score reaches ind.CLEAR; below it, said to be no such head yet, with the score and what even attention
    gives (a run stopped before the drop has every score near that)."""
    layer = 0 if kind == "prev" else 1
    head = ind.top_head(an["scores_after"][kind], layer)
    score = float(an["scores_after"][kind][layer, head])
    job = "previous-token" if kind == "prev" else "induction"
    if score >= ind.CLEAR:
        return f"layer {layer} head {head} (the {job} head: the highest {job} score, {score:.2f})"
    return (f"layer {layer} head {head} (the highest {job} score, only {score:.2f}, near the "
            f"{ind.chance_scores()[kind]:.2f} of attention spread evenly: no {job} head has formed yet)")


def patterns_panel(run: dict, an: dict, row: int) -> None:
    """Every head's pattern at the step shown, and what the scores say about it then."""
    h, ph = run["history"], an["phases"]
    step = int(h["step"][row])
    prev, induction = ind.top_head(h["prev"][row], 0), ind.top_head(h["induction"][row], 1)
    p, q = float(h["prev"][row][0, prev]), float(h["induction"][row][1, induction])
    p0, q0 = float(h["prev"][0][0, prev]), float(h["induction"][0][1, induction])
    text = (f"The weights A_h (query row i, key column j, only j ≤ i: the mask is causal; white 0 to dark blue 1; hover "
            f"a cell for its value) of every head on one sequence, {ind.HALF} random tokens then the same {ind.HALF} "
            f"again, at **step {step:,}** ({ind.marks(ph, step)}). A **previous-token head** is the line just under "
            f"the diagonal (j = i − 1); an **induction head** is a line {ind.HALF - 1} columns left of the diagonal "
            f"in the second half (j = i − {ind.HALF} + 1: the token after the earlier copy of i's token). At this "
            f"step, on {ind.BATCH} such sequences, layer 0's highest previous-token score is head {prev}'s, "
            f"**{p:.2f}** (step 0: {p0:.2f}), and layer 1's highest induction score head {induction}'s, **{q:.2f}** "
            f"(step 0: {q0:.2f}). ")
    if p < ind.CLEAR:
        text += (f"Below {ind.CLEAR:g}, no layer-0 head is a previous-token head yet: a head spread evenly over the "
                 f"keys it sees would score {ind.chance_scores()['prev']:.2f}.")
    elif ph.found and step < ph.drop[1]:
        text += "Layer 0's line under the diagonal is forming."
    if ph.found:
        text += (f" Move the slider from step {ph.drop[0]:,} (the last before the drop) to {ph.drop[1]:,} "
                 f"({ind.marks(ph, ph.drop[1])}) to see the heads change.")
    st.markdown(text)
    a = pattern_weights(h, row)
    make = lambda: patterns_spec([(f"step {step:,}", a)], an["names"])
    if row == len(h["step"]) - 1:                   # the run's end (what the page opens on): built once
        wide = built(an, "patterns", make)
        wide_or_phone(wide, "patterns", built(an, "patterns-phone", lambda: phone_patterns_spec(wide)))
    else:
        wide = make()
        wide_or_phone(wide, "patterns", phone_patterns_spec(wide))
    st.caption(f"Each pattern as the run kept it: to the nearest 1/{PATTERN_LEVELS} (the scores above are computed "
               "from the full weights).")


def composition_panel(run: dict, an: dict, i: int, shown: int) -> None:
    _, head = roles(an)
    lesson = ind.k_composition(an["after"], an["params"], i, head)
    f = lesson.facts
    names, ids = an["names"], an["ids"]
    row = ind.patterns(an["after"])[ind.LAYER, head, i]
    top = int(np.argmax(row))
    nxt = (f"which is indeed token i + 1 = {names[i + 1]}" if i + 1 < len(ids) else
           f"the token that would come next: i = {i} is the sequence's last position")
    where = ("" if top == f["r"] else
             f" Here, though, it puts more on key {top} ({names[top]}, **A = {row[top]:.3f}**): at this i the match "
             "below is not the strongest.")
    st.markdown(
        f"Query **i = {i}** holds **{names[i]}**; {names[i]} occurred earlier at **j = {f['j']}**, so the token to "
        f"copy is at **j + 1 = {f['r']}** ({names[f['r']]}, {nxt}). "
        f"L{role_name(an, 'induction')[1:]} puts weight "
        f"**A = {f['weight']:.3f}** on key {f['r']}.{where} What its "
        f"query reads at that key: layer 1 reads the stream X₁, whose row j + 1 is a sum of pieces, the token embedding, the position "
        f"embedding and each layer-0 head's output. LayerNorm is linear once the row's own scale s = √(σ² + ε) is "
        f"fixed (here s = {f['scale']:.4f}, ε = {f['eps']:g}), and the mean is linear too, so each piece p gets the "
        r"share $n_p = \gamma \odot (x_p - \mu(x_p))/s$, $\beta$ is a piece of its own, and the shares sum to "
        r"$\mathrm{LN}(X_1)$ exactly. The key and the score are linear in them:")
    st.latex(r"k_{j+1} = \sum_p n_p W_K^{(h)}, \qquad S_h[i, j+1] = q_i \cdot k_{j+1} = \sum_p q_i \cdot n_p W_K^{(h)}")
    st.latex(explain(lesson, "scores", (f["r"],)).latex)
    rows = ind.shares(lesson)
    st.markdown(composition_text(lesson, rows, names, ind.patterns(an["after"])[0]))
    st.dataframe(rows, hide_index=True, width="content", column_config={
        k: st.column_config.NumberColumn(format="%.3f") for k in rows[0] if k != "piece"})
    step_boxes(lesson, ["score_parts", "key_parts"], key_prefix="induction.")
    composition_over_steps(run, an, head, shown)


def composition_over_steps(run: dict, an: dict, head: int, row: int) -> None:
    """The table's last column, for every query of the second copy at once, at every logged step of the run."""
    h = run["history"]
    if "kcomp" not in h:
        return
    step, last = int(h["step"][row]), int(h["step"][-1])
    k = np.asarray(h["kcomp"])
    names = ["E[x]", "E^pos"] + [f"layer-0 head {g}" for g in range(k.shape[1] - 3)] + ["β"]
    top = int(np.argmax(k[row, 2:-1, head]))
    st.markdown(
        f"The split above is the run's last step's ({last:,}), for one query. The same last column, averaged over "
        f"every query of the second copy, at every logged step, for layer 1's head {head}: at **step {step:,}** (the "
        f"step shown, {ind.marks(an['phases'], step)}) the layer-0 head whose output singles out j + 1 most is head "
        f"{top}, by **{k[row, 2 + top, head]:+.2f}** (step 0: {k[0, 2 + top, head]:+.2f}, step {last:,}: "
        f"{k[-1, 2 + top, head]:+.2f})." + drop_text(h, an["phases"], k[:, 2:-1, head]))
    chart(kcomp_spec(h, head, names, at=step))


def drop_text(h: dict, ph, by: np.ndarray) -> str:
    """by (rows, layer-0 head): the largest of the layer-0 heads' numbers at the last step before the drop and at
    its end, when the run has one."""
    if not ph.found:
        return ""
    steps = [int(s) for s in h["step"]]
    a, b = steps.index(ph.drop[0]), steps.index(ph.drop[1])
    return (f" Across the drop{'' if ph.ended else ' so far'}, the largest layer-0 head's number goes from "
            f"{by[a].max():+.2f} (step {ph.drop[0]:,}) to {by[b].max():+.2f} (step {ph.drop[1]:,}"
            f"{'' if ph.ended else ', the run stopping mid-drop'}).")


def composition_text(lesson, rows: list[dict], names: list[str], a0=None) -> str:
    """What singles out key j + 1, in words with the live numbers: the pieces ranked, the previous-token head's
    part, and any layer-0 head that looks further back (a longer prefix)."""
    f = lesson.facts
    score = lesson["scores"].value
    others = np.delete(score, f["r"])
    ranked = sorted(range(len(rows)), key=lambda p: -rows[p]["singles out j+1 by"])
    text = (f"At key j + 1 the pieces add up to S = **{score[f['r']]:.2f}**; the other keys' scores average "
            f"{others.mean():.2f}. What singles out j + 1 is each piece's share there minus its mean share at the "
            "other keys: " + ", ".join(f"{rows[p]['piece']} **{rows[p]['singles out j+1 by']:+.1f}**"
                                       for p in ranked[:3]) + ". ")
    prev = f["prev_head"]
    if f["back"][prev] == 1 and f["back_weight"][prev] >= ind.CLEAR:
        diff = rows[2 + prev]["singles out j+1 by"]
        text += (f"The previous-token head (layer-0 head {prev}, {f['back_weight'][prev]:.2f} of its weight one "
                 f"token back) wrote token j's identity into row j + 1: **{names[f['j']]}**, the same token as query "
                 f"i's, from whose row the query is made. Its part alone singles out j + 1 by {diff:+.1f}. ")
    r = f["r"]
    for p in ranked[:3]:            # a head named for another habit that, at this row, looks one token back too
        h = p - 2
        named_prev = 0 <= h < len(f["back"]) and f["back"][h] == 1 and f["back_weight"][h] >= ind.CLEAR
        if a0 is not None and 0 <= h < len(f["back"]) and not named_prev and r >= 1 and a0[h, r, r - 1] >= ind.CLEAR:
            text += (f"At row j + 1 = {r}, layer-0 head {h} puts {a0[h, r, r - 1]:.2f} of its weight on key j = {r - 1}"
                     + (", the sequence's first token" if r == 1 else "") + ": here it too carries token j's "
                     "identity, whatever it does at other rows. ")
    for p in ranked[:3]:
        h = p - 2
        if 0 <= h < len(f["back"]) and f["back"][h] >= 2 and f["back_weight"][h] >= ind.CLEAR:
            d = f["back"][h]
            if f["r"] - d < 0:
                text += (f"Layer-0 head {h} looks {d} tokens back ({f['back_weight'][h]:.2f} of its weight, on average), "
                         f"but at j + 1 = {f['r']} there is no token {d} back, so it says nothing there about a longer "
                         "prefix. ")
                continue
            text += (f"Layer-0 head {h} looks {d} tokens back ({f['back_weight'][h]:.2f} of its weight, on average): at "
                     f"j + 1 it carries token "
                     f"j + 1 − {d}, which in a repeat is also token i − {d - 1}, so the key says more of "
                     "the prefix the query is matching. ")
    return text + (f"(The softmax reads S / √d_k.) Checked: the pieces sum to the forward pass's own key and score to "
                   f"within {max(f['check'].values()):.1e}.")


def ablation_panel(an: dict, chosen: str) -> None:
    ab = an["ablation"]
    pick = None if chosen == "all" else tuple(int(c) for c in chosen.split(","))
    prev, induction = roles(an)
    worst = np.unravel_index(np.argmax(ab["change"]), ab["change"].shape)
    text = (f"Zero one head's output (its {D_HEAD}-row block of W_O set to 0, so it writes nothing into the "
            f"stream) and run the model again on {ind.BATCH} repeated sequences. Intact, the copy loss is **{ab['intact']:.3f}** "
            f"nats. Zeroing {role_name(an, 'induction')} changes it by "
            f"**{ab['change'][1, induction]:+.3f}**; {role_name(an, 'prev')} by "
            f"**{ab['change'][0, prev]:+.3f}**. The largest change is {head_label(*map(int, worst))}'s.")
    sharing = [h for h in range(ab["change"].shape[1]) if an["scores_after"]["induction"][1, h] > 0.5]
    if len(sharing) > 1:
        cost = [ab["change"][1, h] for h in sharing]
        text += (f" Layer 1 has {len(sharing)} heads with an induction score above 0.5 (heads "
                 f"{', '.join(map(str, sharing))}): they share the job, and zeroing any one of them changes the copy "
                 f"loss by {min(cost):+.3f} to {max(cost):+.3f}.")
    if pick is not None:
        text += (f" Picked: {head_label(*pick)}, {ab['ablated'][pick]:.3f} nats with it zeroed "
                 f"({ab['change'][pick]:+.3f}).")
    st.markdown(text)
    chart(ablation_spec(ab["change"], pick, ab["intact"]))


EXAMPLE = INDUCTION_SENTENCE
SENTENCE_GOOD = "induction.sentence_good"     # session: the box's last sentence the model could read


def _use_example() -> None:
    st.session_state["induction.sentence"] = EXAMPLE


def word_axes(spec: dict, n: int) -> dict:
    """A patterns chart's axes labelled by the words (“cat (1)”: the word at position 1), in position order,
    instead of by the positions alone: the learner's sentence, where every token stands for a word. Every label is
    drawn up to 16 words (a row of the 170-pixel chart is then at least 10 pixels high); beyond, some are left out
    where they would overlap (the tooltip names every cell)."""
    enc = spec["spec"]["encoding"]
    for axis, field, pos in (("x", "k", "j"), ("y", "q", "i")):
        enc[axis] = {**enc[axis], "field": field, "sort": {"field": pos, "op": "min"},
                     "title": enc[axis]["title"].replace("position", "word at position"),
                     "axis": {"labelFontSize": 10, "titleFontSize": 11, "labelLimit": 90,
                              "labelOverlap": False if n <= 16 else "greedy",
                              **({"labelAngle": -90} if axis == "x" else {})}}
    return spec


def sentence_panel(run: dict, an: dict, sentence: str) -> None:
    """The box's sentence through the model (each distinct word one token), its heads labelled by the words; a
    sentence the model cannot read is said, and the last one that worked stays; one whose last word has no earlier
    occurrence is shown too, with what that means (nothing to copy) and a button to the example."""
    try:
        ids, words, labels, notices = sentence_ids(sentence)
    except ConfigError as err:
        sentence = st.session_state.get(SENTENCE_GOOD, EXAMPLE)
        st.error(f"{err} Showing the last sentence that worked.", icon=":material/error:")
        ids, words, labels, notices = sentence_ids(sentence)
    else:
        st.session_state[SENTENCE_GOOD] = sentence
    for n in notices:
        st.info(n, icon=":material/info:")
    tokens = [labels[i] for i in ids]
    trace = lm_trace(an["params"], ids, labels)
    logits = trace["logits"].value[-1]
    p = np.exp(logits - logits.max())
    p /= p.sum()
    best = int(np.argmax(p))
    guess = (f"**{md_safe(labels[best])}**" if best < len(words) else
             f"**⟨token {best}⟩**, a token no word of the sentence was given (so no word the model could name)")
    repeat = ids[-1] in ids[:-1]
    st.markdown(f"“{md_safe(' '.join(tokens))}”: {len(ids)} word{'s' if len(ids) != 1 else ''}, {len(words)} distinct, each distinct word one "
                f"of the model's {VOCAB} tokens (what it learned does not depend on which token is which). After the "
                f"last word, “{md_safe(tokens[-1])}”, the most likely next token is {guess} (p = {p[best]:.2f}).")
    if not repeat:
        st.info(f"“{md_safe(tokens[-1])}”, the last word, has no earlier occurrence in the words the model reads: "
                "there is nothing to copy, and the model, trained only to copy, can only guess. An induction head "
                "needs a repeat: the word's earlier occurrence and the word after it.", icon=":material/info:")
        if " ".join(tokens) != EXAMPLE:
            st.button(f"Use a sentence with a repeat: “{EXAMPLE}”", key="induction.example", on_click=_use_example,
                      icon=":material/edit:")
    else:
        after = [j + 1 for j in range(len(ids) - 1) if ids[j] == ids[-1]]
        st.markdown("Every head on it (axes: the words, with their positions). An induction head's last row looks "
                    f"at the word after {'each of ' if len(after) > 1 else ''}the last word's earlier "
                    f"occurrence{'s' if len(after) > 1 else ''}: " +
                    ", ".join(f"“{md_safe(tokens[j])}” ({j})" for j in after) + ".")
    wide = word_axes(patterns_spec([(f"after {run['steps']:,} steps", ind.patterns(trace))], tokens, size=170),
                     len(ids))
    wide_or_phone(wide, "sentence-patterns", phone_patterns_spec(wide, size=190, columns=1))


def wide_or_phone(wide: dict, key: str, phone: dict) -> None:
    """A chart twice, one shown (ui/phone.py): as drawn for a wide screen, and below 640 px as drawn for a phone, at
    its natural size (labels never scaled below 11 px): the heads' pattern grid as facets that wrap, the curves
    narrow and stacked."""
    with st.container(key=f"wide-{key}"):
        chart(wide)
    with st.container(key=f"tall-{key}"):
        chart(phone)
