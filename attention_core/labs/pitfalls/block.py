"""Mistakes around the attention, inside the transformer block: temperature applied after softmax, the unbiased
variance in a hand-written LayerNorm, a post-norm formula read as pre-norm code, and the copy task with the repeat
at a fixed offset.

The first three are computed on the block page's block at its defaults (the sidebar's X, one layer, LayerNorm,
the MLP on): its last position's logits, its stream X, its two placements on the same weights; the fourth on the
two shipped runs of the small language model's copy task, measured on repeated random tokens. (The small model's
own next-token logits are nearly flat on a sentence with nothing to copy, so temperature shows little there.)

    >>> from attention_core import Config
    >>> r = unbiased_variance(Config())
    >>> r.check_passes_on_correct, r.check_flags_wrong
    (True, True)
"""
from __future__ import annotations

import functools

import numpy as np

from ...forward.config import Config
from ...forward.trace import Trace
from ...forward.transformer import Arch, sidebar_block
from ...math import attention as att
from ...math.norms import EPS, layer_norm_parts
from ...training.lm import model as lm
from ...training.lm import scores, shipped, task
from .base import PitfallResult, count, difference, pitfall, trace_of

TEMPERATURES = (0.5, 1.0, 2.0)


# ---- the shipped runs -------------------------------------------------------------------------------------

RUNS = {"random": "copy", "fixed": "fixed_offset"}      # the repeat at a random offset, or always FIXED_OFFSET later


def _lm_params(run: str = "random") -> dict[str, np.ndarray]:
    """The small language model's shipped weights, float64: run "random" (the model every page uses) or "fixed"."""
    return shipped.load(RUNS[run]).params


def _fixed_offset() -> int:
    """How far after its segment the fixed-offset run always saw the repeat."""
    return task.FIXED_OFFSET


# ---- the block the learner's settings build ---------------------------------------------------------------

def block_of(trace: Trace, config: Config | None, placement: str = "pre") -> Trace:
    """The block page's block at its defaults (one layer, LayerNorm, the MLP on) on the sidebar's X, pre- or
    post-norm: its attention the settings' own, W_U tied to the embeddings where it can be, the rest the seeded
    start (γ = 1, β = 0). Both placements get the same weights."""
    config = config if config is not None else trace.facts.get("config") or Config()
    return sidebar_block(config, Arch(n_layers=1, placement=placement), trace)


# ---- 14. temperature after softmax -----------------------------------------------------------------------

@pitfall("Temperature after softmax", "common",
         "Sampling temperature divides the logits before softmax: p = softmax(z / T), so T < 1 sharpens the "
         "distribution and T > 1 flattens it. Divided into the probabilities afterwards, softmax(z) / T, it does "
         "nothing: renormalised, (p / T) / Σ(p / T) = p for every T; not renormalised, each row sums to 1 / T and is "
         "no distribution. (Raising p to the power 1 / T and renormalising is the same as dividing the logits.)")
def temperature_after_softmax(source) -> PitfallResult:
    """softmax(z)/T renormalised instead of softmax(z/T), on the block's logits z of the sentence's last token."""
    trace, config = trace_of(source)
    block = block_of(trace, config)
    logits = block["logits"].value[-1]                                                # (|V|,) the next token's z
    vocab = list(block.facts["vocab"])
    t = np.array(TEMPERATURES)[:, None]                                               # (3, 1)
    correct = att.softmax(logits[None] / t)                                           # (3, |V|) softmax(z / T)
    p = att.softmax(logits)[None].repeat(len(TEMPERATURES), axis=0)                   # (3, |V|) softmax(z)
    wrong = (p / t) / (p / t).sum(axis=-1, keepdims=True)                             # renormalised: p again
    entropy = lambda q: 0.0 - (q * np.log(np.where(q > 0, q, 1.0))).sum(axis=-1)      # (3,) nats
    h_c, h_w = entropy(correct), entropy(wrong)
    flat = bool(np.ptp(logits) == 0)                                                  # one word, or equal logits
    rises = lambda h: flat or bool((np.diff(h) > 1e-12).all())
    top = int(np.argmax(logits))
    tied = [vocab[v] for v in np.flatnonzero(logits >= logits[top] - 1e-9 * max(1.0, abs(logits[top])))]
    after = f"after “{trace.tokens[-1]}” (a block never trained to predict words)"
    best = (f"The word the block's logits score highest {after}, “{vocab[top]}”, has " if len(tied) == 1 else
            f"The words the block's logits score highest {after} are " + " and ".join(f"“{w}”" for w in tied)
            + f", equal up to rounding; “{vocab[top]}” has ")
    temps = ", ".join(f"{x:g}" for x in TEMPERATURES)
    numbers = lambda xs: ", ".join(f"{x:.3g}" for x in xs)
    return PitfallResult(correct, wrong, difference(correct, wrong),
                         f"a higher T gives a flatter distribution: the entropy rises over T = {temps} "
                         f"(unless every logit is the same)",
                         rises(h_c), not rises(h_w) and not flat,
                         best + f"p = {numbers(correct[:, top])} at T = {temps} when the logits are divided; "
                         f"{wrong[0, top]:.3g} at every T when the probabilities are. Entropy (nats): {numbers(h_c)} "
                         f"against {numbers(h_w)}. Without renormalising, the rows would sum to "
                         f"{', '.join(f'{1 / x:g}' for x in TEMPERATURES)}."
                         + (" With one word in the vocabulary every distribution is [1]: the two versions coincide (try a sentence "
                            "of two different words or more)."
                            if len(vocab) == 1 else ""),
                         ("temperature", "vocab"),
                         f"next-word probabilities after “{trace.tokens[-1]}”, from the block's logits over the "
                         f"sentence's {count(len(vocab), 'word')}",
                         {"temperature": [f"T = {x:g}" for x in TEMPERATURES], "vocab": vocab})


# ---- 15. the unbiased variance in a hand-written LayerNorm ------------------------------------------------

def unbiased_layer_norm(x: np.ndarray, eps: float = EPS) -> np.ndarray:
    """(x − μ) / √(s² + ε) with s² = Σ_j (x_j − μ)² / (d − 1): torch's x.var(dim=−1)'s default; NaN at d = 1."""
    mu = x.mean(axis=-1, keepdims=True)                                               # (n, 1)
    d = x.shape[-1]
    with np.errstate(invalid="ignore", divide="ignore"):
        s2 = ((x - mu) ** 2).sum(axis=-1, keepdims=True) / (d - 1)                    # (n, 1) unbiased: d − 1
        return (x - mu) / np.sqrt(s2 + eps)


def span(values: np.ndarray) -> str:
    """'0.9899' when the values agree to 4 digits, else '0.97–0.99'."""
    lo, hi = f"{float(np.min(values)):.4g}", f"{float(np.max(values)):.4g}"
    return lo if lo == hi else f"{lo}–{hi}"


def has_torchs_variance(x_hat: np.ndarray, var: np.ndarray, eps: float = EPS) -> tuple[bool, float]:
    """(every row of x̂ has mean 0 and variance σ²/(σ² + ε), as nn.LayerNorm's, the largest miss)."""
    with np.errstate(invalid="ignore"):
        miss = np.abs((x_hat ** 2).mean(axis=-1) - (var / (var + eps))[..., 0])      # (n,)
        miss = np.maximum(miss, np.abs(x_hat.mean(axis=-1)))
    worst = float(np.nanmax(miss)) if not np.isnan(miss).any() else float("inf")
    return worst <= 1e-9, worst


@pitfall("The unbiased variance in a hand-written LayerNorm", "common",
         "LayerNorm divides by the biased variance σ² = Σ_j (x_j − μ)² / d, as torch's nn.LayerNorm does. A "
         "hand-written one with torch's x.var(dim=−1) divides by d − 1 instead (its default: correction=1, before "
         "torch 2.0 unbiased=True; numpy's np.var divides by d), so every row comes out multiplied by √((d − 1)/d), "
         "too small: its variance is no longer 1, and "
         "weights trained with nn.LayerNorm meet other inputs. The gap, about 1/(2d), is large at small d and "
         "hides in wide models.")
def unbiased_variance(source) -> PitfallResult:
    """x.var(dim=−1) (divide by d − 1) in LayerNorm instead of the biased variance, on the block's stream X."""
    trace, _ = trace_of(source)
    x = trace["x"].value                                                              # (n, d) the block's stream X
    d = x.shape[-1]
    correct, _, var = layer_norm_parts(x)                                             # x̂: what LN(X) is with γ=1, β=0
    wrong = unbiased_layer_norm(x)
    ok, miss_c = has_torchs_variance(correct, var)
    bad, miss_w = has_torchs_variance(wrong, var)
    if d == 1:
        how = ("With d = 1, d − 1 = 0: the unbiased variance is 0/0, NaN in every row (the biased one is 0 and x̂ = 0).")
    else:
        with np.errstate(invalid="ignore"):
            ratio = np.sqrt((var + EPS) / (var * d / (d - 1) + EPS))[:, 0]           # (n,) wrong / correct, per row
        shrink = lambda k: 1 - np.sqrt((k - 1) / k)
        how = (f"Each row is multiplied by √((σ² + ε)/(σ²·d/(d − 1) + ε)) = {span(ratio)} here "
               f"(√((d − 1)/d) = {np.sqrt((d - 1) / d):.4g} at d = {d}), so its variance is "
               f"{span((wrong ** 2).mean(axis=-1))}, not 1. "
               f"Too small by {100 * shrink(d):.2g}% at d = {d}; "
               + ", ".join(f"{100 * shrink(k):.2g}% at d = {k}" for k in (4, 64, 768) if k != d)
               + ": a test against torch at 1e-9 catches it at any width.")
    return PitfallResult(correct, wrong, difference(correct, wrong),
                         "each normalised row has mean 0 and variance σ²/(σ² + ε), as nn.LayerNorm's",
                         ok, not bad,
                         f"Largest miss: biased variance {miss_c:.1e}, unbiased {miss_w:.3g}. " + how,
                         ("n", "d_model"), "LayerNorm(X) with γ = 1, β = 0: x̂ = (X − μ) / √(var + ε)")


# ---- 16. a post-norm formula, pre-norm code --------------------------------------------------------------



def row_moments(x: np.ndarray) -> tuple[float, float]:
    """(largest |row mean|, largest |row variance − 1|)."""
    return float(np.abs(x.mean(axis=-1)).max()), float(np.abs(x.var(axis=-1) - 1).max())


@pitfall("A post-norm formula with pre-norm code", "common",
         "Vaswani et al.'s block is post-norm: Xₗ′ = LN(Xₗ + MHA(Xₗ)), Xₗ₊₁ = LN(Xₗ′ + MLP(Xₗ′)); the norm "
         "comes after each residual add, so the stream itself is normalised. Code written x = x + attn(ln(x)); "
         "x = x + mlp(ln(x)) (GPT-2's, nanoGPT's) is pre-norm: attention reads LN(X), the stream is never "
         "normalised, and a final LN comes before the unembedding. On the same weights they are different "
         "functions: implementing the formula with the other code, or loading one's weights into the other, "
         "gives other numbers from the first sublayer on.")
def post_formula_pre_code(source) -> PitfallResult:
    """The block the post-norm formula describes against what pre-norm code computes, on the same weights."""
    trace, config = trace_of(source)
    right = block_of(trace, config, "post")                                          # the formula
    code = block_of(trace, config, "pre")                                            # the code
    correct, wrong = right["l0.out"].value, code["l0.out"].value                      # (n, d) X'' of layer 0
    mean_c, var_c = row_moments(correct)
    mean_w, var_w = row_moments(wrong)
    normal = lambda m, v: m <= 1e-9 and v <= 1e-2
    gap = lambda key_c, key_w: difference(right[key_c].value, code[key_w].value)
    return PitfallResult(correct, wrong, difference(correct, wrong),
                         "the block's output rows have mean 0 and variance 1 (up to ε), as the formula's last LN "
                         "(γ = 1, β = 0) makes them",
                         normal(mean_c, var_c), not normal(mean_w, var_w),
                         f"Rows of the formula's X₁: largest |mean| {mean_c:.1e}, largest |variance − 1| {var_c:.1e}. "
                         f"The code's: {mean_w:.3g} and {var_w:.3g}. Where they part: attention already reads "
                         f"different rows (X against LN(X)), its outputs differ by up to "
                         f"{gap('l0.attn', 'l0.attn'):.3g}; the stream after attention by {gap('l0.mid', 'l0.mid'):.3g}; "
                         f"the layer's output by {difference(correct, wrong):.3g}; the logits, which the code takes "
                         f"after a final LN the formula has no need of, by {gap('logits', 'logits'):.3g}.",
                         ("n", "d_model"), "layer 0's output X₁ (one block, the MLP on), on the same weights")


# ---- 17. the copy task with a fixed offset ---------------------------------------------------------------

SEGMENT, PER_GAP, GAPS = 8, 8, tuple(range(8, 33, 4))      # 8 tokens repeated g later, 8 sequences per gap g


def repeated_segments(gap: int, k: int = PER_GAP, length: int = SEGMENT) -> list[tuple[np.ndarray, int]]:
    """k sequences of N_CTX random tokens (seeded by the gap) whose `length` tokens from a random start s come
    again at s + gap: [(ids (N_CTX,), s)]."""
    rng = np.random.default_rng(1000 + gap)
    out = []
    for _ in range(k):
        ids = rng.integers(0, lm.VOCAB, lm.N_CTX)
        s = int(rng.integers(0, lm.N_CTX - gap - length + 1))
        ids[s + gap: s + gap + length] = ids[s: s + length]
        out.append((ids, s))
    return out


@functools.lru_cache(maxsize=4)
def copy_measures(run: str, gaps: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(copy loss (G,), induction scores (G, layers, H), previous-token scores (G, layers, H)) of a shipped run.

    Copy loss: the mean −log p of the repeated tokens, predicted from inside the second copy (positions s + g …
    s + g + length − 2, each predicting the next). Induction (prefix-matching) score, as Olsson et al. (2022)
    define it, on the repeated tokens: the attention a token of the second copy pays to the token after its
    earlier occurrence, A[s + g + i, s + i + 1]; previous-token score: A[i, i − 1] over every i ≥ 1.
    """
    params, labels = _lm_params(run), lm.token_labels([])
    loss = np.zeros(len(gaps))
    induction = np.zeros((len(gaps), lm.ARCH.n_layers, lm.N_HEADS))
    previous = np.zeros_like(induction)
    for g_i, gap in enumerate(gaps):
        batch = repeated_segments(gap)
        ids = np.stack([row for row, _ in batch])                                     # (b, n)
        traces = [lm.lm_trace(params, row, labels) for row in ids]
        copyable = np.zeros(ids.shape, bool)                                          # (b, n) the next token repeats
        for r, (_, s) in enumerate(batch):
            copyable[r, s + gap: s + gap + SEGMENT - 1] = True
        loss[g_i] = scores.copy_loss(np.stack([t["logits"].value for t in traces]), ids, copyable)
        for l in range(lm.ARCH.n_layers):
            a = np.stack([t.facts["attention"][l]["weights"].value for t in traces])  # (b, H, n, n)
            previous[g_i, l] = scores.previous_token_score(a)
            queries = [(r, i) for r in range(len(ids)) for i in np.flatnonzero(copyable[r])]
            induction[g_i, l] = np.mean([a[r, :, i, i - gap + 1] for r, i in queries], axis=0)
    return loss, induction, previous


@pitfall("The copy task with a fixed offset", "common",
         "To make a model copy a repeated phrase by finding its earlier occurrence (an induction head: a layer-0 "
         "head attends to the previous token, a layer-1 head to the token after the current token's earlier "
         "occurrence), the repeat must come at a random offset. With the repeat always the same distance back, "
         "“copy the token that many positions back” solves the task from the positions alone: the model learns "
         "that, no induction head forms, and it fails wherever the repeat is at another distance.")
def fixed_offset(source) -> PitfallResult:
    """The shipped run trained with the repeat at random offsets against the one trained at a fixed offset, on
    repeats at several gaps: the copy loss, and the heads' previous-token and induction scores."""
    trace, _ = trace_of(source)                                                      # the sidebar plays no part
    f = _fixed_offset()
    gaps = tuple(sorted(set(GAPS) | {f}))
    correct, ind_c, prev_c = copy_measures("random", gaps)
    wrong, ind_w, prev_w = copy_measures("fixed", gaps)
    chance = float(np.log(lm.VOCAB))
    others = np.array([g != f for g in gaps])
    beats = lambda loss: bool(loss[others].mean() <= chance - 1)
    best = lambda scores, l: f"{scores[:, l].mean(axis=0).max():.2f}"                # the best head, over the gaps
    at_f = gaps.index(f)
    return PitfallResult(correct, wrong, difference(correct, wrong),
                         f"at the gaps other than {f}, the copy loss is on average at least 1 nat below chance "
                         f"(ln {lm.VOCAB} = {chance:.2f})",
                         beats(correct), not beats(wrong),
                         f"Copy loss at the other gaps, on average: random offset {correct[others].mean():.2f} nats, "
                         f"fixed offset {wrong[others].mean():.2f}; at gap {f}, the fixed run's own: "
                         f"{correct[at_f]:.2f} and {wrong[at_f]:.2f}. Best layer-0 previous-token score: "
                         f"{best(prev_c, 0)} against {best(prev_w, 0)}; best layer-1 induction score "
                         f"{best(ind_c, 1)} against {best(ind_w, 1)} (averaged over the gaps). The fixed run's "
                         f"copying is done by a layer-0 head looking {f - 1} positions back (its score at gap {f}: "
                         f"{ind_w[at_f, 0].max():.2f}, elsewhere at most {ind_w[others, 0].max():.2f}).",
                         ("gap",),
                         f"copy loss (nats) on {count(SEGMENT, 'token')} repeated g positions later, by gap g "
                         f"(* the fixed run's offset)",
                         {"gap": [f"{g}*" if g == f else str(g) for g in gaps]})
