"""The learner's sentence through the small LM, and its next token as Steps: z, z / T, p, the kept set, p′, the
draw; then a few tokens generated one at a time (each appended and the model run again on the longer input).

    >>> t = next_token_trace("the cat sat on the mat and the cat sat on the", 1.0, 0, 1.0, 0, 3)
    >>> t.facts["kind"], t["logits"].shape_text, t["heads"].shape_text
    ('next_token', 'vocab=31', 'h=4 × n_k=12')
    >>> t.facts["labels"][int(t["probs"].value.argmax())]
    'mat'
"""
from __future__ import annotations

import functools

import numpy as np

from ...forward.trace import Trace
from ...math.sampling import next_token, uniforms
from ...training.lm.model import N_CTX, VOCAB, lm_trace, sentence_ids
from .weights import lm_params

KIND = "next_token"
MAX_NEW = 10                       # tokens generated at most
COPY_LAYER = 1                     # the layer whose heads copy (induction heads, after the previous-token head)


def sampling_notes(temperature: float, k: int, p: float) -> list[str]:
    """What the settings do at their edges, in words (the page shows each as a notice). At T = 0 only the argmax
    stays, whatever top-k and top-p say, so their notes are left out (their 'every token stays' would be false)."""
    if temperature == 0:
        return [("T = 0: no division by T (it would be by zero); the limit T → 0 puts all the probability on "
                "the largest logit, so the next token is the argmax (greedy decoding). Top-k, top-p and the "
                "seed change nothing: one token is kept.")]
    notes = []
    if k == 0:
        notes.append(f"top-k = 0 means top-k is off: it drops none of the {VOCAB} tokens.")
    elif k >= VOCAB:
        notes.append(f"top-k = {k} is at least the vocabulary's {VOCAB} tokens: top-k drops none of them (off).")
    if p == 0:
        notes.append("top-p = 0: the smallest set of tokens whose probabilities add up to 0 would be empty, and "
                     "top-p always keeps at least one token: only the most probable token stays (as with argmax).")
    elif p == 1:
        some = 0 < k < VOCAB
        notes.append("top-p = 1 turns top-p off: it drops none of the tokens "
                     + ("top-k kept, although they already add up to 1 once renormalised: p_top = 1 means keep "
                        "them all, as in Hugging Face's generate (top-p is applied only below 1)." if some else
                        "(p_top = 1 means keep them all, as in Hugging Face's generate, even when a few tokens' "
                        "probabilities already add up to 1 in floating point)."))
    return notes


def _induction_targets(ids: list[int]) -> list[int]:
    """Positions j whose previous token is the last token again (j − 1 an earlier occurrence of ids[-1]): where
    an induction head at the last position looks, to copy the token at j."""
    n = len(ids)
    return [j for j in range(1, n) if ids[j - 1] == ids[-1] and j - 1 < n - 1]


def heads_facts(ids: list[int], weights: np.ndarray) -> list[dict]:
    """Per layer-1 head, for the last position: where it looks most, with what weight, and its weight summed over
    the induction targets."""
    targets = _induction_targets(ids)
    return [{"head": h, "top": int(row.argmax()), "weight": float(row.max()),
             "on_targets": float(row[targets].sum()) if targets else 0.0} for h, row in enumerate(weights)]


def previous_token_scores(weights0: np.ndarray) -> list[float]:
    """Per layer-0 head, its mean weight on the previous token, A_{h,i,i−1} over i = 1 … n−1 (Olsson et al.'s
    previous-token score, here on the learner's sentence); 0 for a one-word sentence."""
    n = weights0.shape[-1]
    return [float(np.mean([w[i, i - 1] for i in range(1, n)])) if n > 1 else 0.0 for w in weights0]


def _generate(params, ids: list[int], labels, temperature, k, p, us) -> list[dict]:
    """Each token drawn with its own u, appended, and the model run again (on the last N_CTX tokens)."""
    out, ids = [], list(ids)
    for t, u in enumerate(us):
        run = ids[-N_CTX:]
        z = lm_trace(params, run, labels)["logits"].value[-1]
        stages = next_token(z, temperature, k, p, float(u))
        j = stages["token"]
        out.append({"t": t, "token": j, "word": labels[j], "p": float(stages["renormalised"][j]), "u": float(u),
                    "argmax": labels[int(np.argmax(z))], "argmax_id": int(np.argmax(z)), "n_kept": int(stages["kept"].sum()),
                    "cut": len(ids) >= N_CTX})
        ids.append(j)
    return out


@functools.lru_cache(maxsize=64)
def next_token_trace(sentence: str, temperature: float, k: int, p: float, seed: int, n_new: int) -> Trace:
    """The Trace of kind "next_token" (cached per process: the page reruns on every click)."""
    ids, words, labels, notices = sentence_ids(sentence)
    params = lm_params()
    block = lm_trace(params, ids, labels)
    us = uniforms(seed, max(1, min(int(n_new), MAX_NEW)))
    z = block["logits"].value[-1]                                       # (|V|,) the last position's logits
    s = next_token(z, temperature, k, p, float(us[0]))
    n, tokens = len(ids), block.tokens
    attn = block.facts["attention"][COPY_LAYER]
    weights = attn["weights"].value[:, -1, :]                           # (H, n_k) the last query's row per head
    scores = attn["masked_scores"].value[:, -1, :] if "masked_scores" in attn else attn["scaled_scores"].value[:, -1, :]
    t = Trace(tokens=tokens, notices=list(notices))
    T = f"{temperature:g}"
    t.add("h", "Last position, after the final norm", block["ln_f"].value[-1], ("d_model",),
          r"N_f(X_2)_{n-1}", why="The residual stream of the last position after the final LayerNorm: the "
          "one row whose logits predict the next token.")
    t.add("w_u", "Unembedding W_U", block["w_u"].value, ("d_model", "vocab"), rf"W_U \in \mathbb{{R}}^{{{block['w_u'].shape[0]} \times {VOCAB}}}",
          why="One column per token of the vocabulary: z_j is the last position's normed row N_f(X_2)_{n−1} "
          "dotted with column j.")
    t.add("logits", "Logits z of the next token", z, ("vocab",), r"z = N_f(X_2)_{n-1}\, W_U", ("h", "w_u"),
          why=f"One score per token of the {VOCAB}; the largest is the model's best guess.")
    t.add("scaled", "(z − max z) / T" if temperature else "z itself (T = 0: no division)", s["scaled"], ("vocab",),
          r"\frac{z - \max z}{T}" if temperature else r"z \;(T = 0:\ \text{argmax})",
          ("logits",), why=f"The logits divided by T = {T} before softmax (T < 1 sharpens, T > 1 flattens), after the "
          "largest is taken away so that the largest becomes 0 and none overflows, however small T; softmax is the "
          "same with or without the shift." if temperature else "T = 0: no division; the largest logit takes all "
          "the probability.")
    t.add("probs", "Probabilities p = softmax(z / T)", s["probs"], ("vocab",),
          r"p_j = \frac{e^{z_j / T}}{\sum_i e^{z_i / T}} = \frac{e^{(z_j - \max z) / T}}{\sum_i e^{(z_i - \max z) / T}}"
          if temperature else r"p_j = [\,j = \arg\max_i z_i\,]",
          ("scaled",), scale="sequential")
    t.add("kept", "Kept by top-k and top-p", s["kept"].astype(float), ("vocab",),
          r"\text{kept}_j = [\,z_j \ge z_{(k)}\,] \cdot [\,j \text{ first, or } \textstyle\sum_{i \prec j} \tilde p_i "
          r"< p_{\text{top}}\,]",
          ("logits", "probs"), why=("T = 0: 1 for the argmax only, 0 for every other token, whatever top-k and "
          "top-p say (greedy decoding keeps one token)." if temperature == 0 else
          "1: the token stays; 0: top-k or top-p dropped it. z_(k) is the k-th largest logit (top-k = 0, or "
          f"k ≥ {VOCAB}, is off: every token passes it); p̃ is p renormalised over what top-k kept; i ≺ j: token i "
          "comes before j when the tokens are ordered by p̃, largest first, equal p̃ by token number, the lower "
          "first. Top-p keeps the fewest tokens from the front of that order whose p̃ add up to p_top: a token stays "
          "while the ones ahead of it hold less than p_top (a sum within 10⁻¹² below p_top counts as reaching it: "
          "rounding), and the first always stays, even at p_top = 0. p_top = 1 keeps every token."),
          scale="sequential")
    t.add("renormalised", "Renormalised p′", s["renormalised"], ("vocab",),
          r"p'_j = \frac{p_j\, \text{kept}_j}{\sum_i p_i\, \text{kept}_i}", ("probs", "kept"), scale="sequential")
    t.add("cdf", "Cumulative F_j = p′_0 + … + p′_j", s["cdf"], ("vocab",), r"F_j = \sum_{i \le j} p'_i",
          ("renormalised",), scale="sequential")
    t.add("sample", "The sampled token", np.array(float(s["token"])), (), r"\text{first } j \text{ with } F_j > u",
          ("cdf",), why=f"u = {us[0]:.4f}, drawn from numpy's generator seeded with {seed}.")
    t.add("heads_scores", f"Layer {COPY_LAYER}: last query's scores", scores, ("h", "n_k"),
          r"\tilde S_{h,\,n-1,\,j}", why="What softmax reads for the last query. No key comes after it (its own position is the last key), "
          "so the causal mask hides none of them: all n scores are finite.")
    t.add("heads", f"Layer {COPY_LAYER} heads: where the last position looks", weights, ("h", "n_k"),
          r"A_{h,\,n-1,\,j} = \mathrm{softmax}_j(\tilde S_{h,\,n-1,\,j})", ("heads_scores",), scale="sequential",
          why="An induction head looks at the token after the earlier occurrence of the current word, and copies it.")
    t.facts.update(kind=KIND, ids=tuple(ids), words=tuple(words), labels=tuple(labels), temperature=float(temperature),
                   k=int(k), p=float(p), seed=int(seed), u=float(us[0]), token=int(s["token"]),
                   kept_k=s["kept_k"], kept_p=s["kept_p"], notes=sampling_notes(temperature, k, p),
                   targets=_induction_targets(ids), heads=heads_facts(ids, weights), n=n, n_ctx=N_CTX,
                   previous=previous_token_scores(block.facts["attention"][0]["weights"].value),
                   generated=_generate(params, ids, labels, temperature, k, p, us[:n_new]) if n_new else [],
                   axis_labels={"vocab": [w if k < len(words) else f"⟨token {k}⟩" for k, w in enumerate(labels)], "h": [f"head {h}" for h in range(len(weights))], "d_model": [str(i) for i in range(block["w_u"].shape[0])]})
    return t
