"""K-composition with live numbers: which part of layer 1's key makes the current token's query match it.

On a repeated sequence take a position i whose token occurred before, last at j < i. An induction head of layer
1 attends from i to j + 1, the token that followed the earlier occurrence. Its key k_{j+1} is made from the
stream X_1 at row j + 1, which is a sum of pieces (attention-only, pre-norm, so nothing else writes to it):

    X_1[j+1] = E[x_{j+1}] + E^pos[j+1] + Σ_h o_h[j+1],      o_h = C_h W_O^{(h)}  (layer 0's head h's output)

Layer 1's LayerNorm is linear in the row once the row's own scale s = √(σ² + ε) is fixed (σ² of the whole row):

    LN(x) = γ ⊙ (x − μ(x)) / s + β,     μ(x) = mean of the row,  and μ is linear too: μ(Σ_p x_p) = Σ_p μ(x_p)
          = Σ_p γ ⊙ (x_p − μ(x_p)) / s  +  β

so each piece p gets the share n_p = γ ⊙ (x_p − μ(x_p)) / s, with the WHOLE row's s (not its own), and β is a
piece of its own; the shares sum to LN(x) exactly. Layer 1's key is linear in LN(x): k = LN(x) W_K^{(h)}, so

    k_{j+1} = Σ_p n_p W_K^{(h)},      S_h[i, j+1] = q_i · k_{j+1} = Σ_p q_i · (n_p W_K^{(h)})

(S_h unscaled, as the forward pass's scores step; the softmax reads S / √d_k). The previous-token head's
output at j + 1 is (mostly) a copy of token j's value, and token j is the same token as x_i: that share of the
key is what the query q_i (made from x_i) matches. The same split at every key j' ≤ i shows that piece
lighting up at j + 1 only. Every number is read from the model's forward Trace or made from its pieces, and the
pieces are checked to sum to the Trace's own key and score (facts["check"]).
"""
from __future__ import annotations

import numpy as np

from ...forward.trace import Trace
from ...math.limits import ConfigError
from ...math.norms import layer_norm_parts
from ...training.lm.model import D_HEAD
from .head_scores import patterns, prev_token_scores, top_head

KIND = "induction"
LAYER = 1
CLEAR = 0.3                # a layer-0 head is named by the distance it looks back only when its mean weight there
                           # is at least this; below it the head's attention is spread (no fixed offset)


def earlier(ids, i: int) -> int:
    """j: the last position before i holding the same token as i."""
    same = [j for j in range(i) if ids[j] == ids[i]]
    if not same:
        raise ConfigError(f"Token {i} has not occurred before it: pick a position in the second copy.")
    return same[-1]


def offsets(a: np.ndarray, longest: int = 8) -> tuple[np.ndarray, np.ndarray]:
    """Per head of one layer's patterns (head, n, n): the distance d = 0 … longest it looks back most, and the mean
    weight A[i, i − d] there (over i ≥ d)."""
    n = a.shape[-1]
    mean = np.array([[a[h, np.arange(d, n), np.arange(n - d)].mean() for d in range(min(longest, n - 1) + 1)]
                     for h in range(a.shape[0])])                             # (head, d)
    best = mean.argmax(axis=1)
    return best, mean[np.arange(a.shape[0]), best]


def piece_names(back: np.ndarray, short: bool = False, weight=None) -> list[str]:
    """The pieces of the stream at a row, in order: embedding, position, layer 0's heads (named by how far back
    each looks most: 1 = a previous-token head; "spread" when its mean weight there, `weight`, is below CLEAR),
    then β. short: for a chart's axis."""
    weight = np.ones(len(back)) if weight is None else np.asarray(weight)
    clear = [float(w) >= CLEAR for w in weight]
    what = lambda d: "itself" if d == 0 else "previous-token" if d == 1 else f"{d} tokens back"
    tag = lambda d: "itself" if d == 0 else "prev" if d == 1 else f"{d} back"
    if short:
        return (["E[x]", "E^pos"] + [f"L0 head {h}: {tag(int(d)) if c else 'spread'}"
                                 for h, (d, c) in enumerate(zip(back, clear))] + ["β"])
    return (["token embedding E[x]", "position embedding E^pos"]
            + [f"layer-0 head {h} ({what(int(d)) if c else 'spread out, no fixed offset'})"
               for h, (d, c) in enumerate(zip(back, clear))] + ["LayerNorm shift β"])


def stream_pieces(trace: Trace, params: dict) -> np.ndarray:
    """(piece, n, d_model): E[x], E^pos, and each layer-0 head's output C_h W_O^{(h)}: they sum to X_1 (the stream
    layer 1 reads). C_h and W_O are read from layer 0's attention Trace."""
    att = trace.facts["attention"][0]
    ids = np.asarray(trace.facts["ids"])
    n = len(ids)
    context, w_o = att["context"].value, att["w_o"].value                     # (H, n, d_v), (H·d_v, d_model)
    d_v = context.shape[-1]
    heads = [context[h] @ w_o[h * d_v:(h + 1) * d_v] for h in range(context.shape[0])]   # each (n, d_model)
    return np.stack([params["tok_emb"][ids], params["pos_emb"][:n], *heads])


def k_composition(trace: Trace, params: dict, i: int, head: int | None = None) -> Trace:
    """The split of layer 1's key k_{j+1} and score S_h[i, ·] into the stream's pieces, as a Trace of kind
    "induction". head: a layer-1 head (default: the one that puts the most weight on j + 1 from i)."""
    ids = list(trace.facts["ids"])
    n = len(ids)
    if not 0 < i < n:
        raise ConfigError(f"The query position i must be between 1 and {n - 1}.")
    j = earlier(ids, i)
    r = j + 1
    att0, att1 = trace.facts["attention"][0], trace.facts["attention"][LAYER]
    a = patterns(trace)                                                         # (layer, head, n, n)
    if head is None:
        head = int(np.argmax(a[LAYER, :, i, r]))
    prev_head = top_head(prev_token_scores(a), 0)
    back, back_weight = offsets(a[0])
    eps = trace.facts["arch"].eps
    pieces = stream_pieces(trace, params)                                      # (P, n, d)
    stream = trace["l0.out"].value                                              # (n, d)   X_1
    _, _, var = layer_norm_parts(stream, eps)
    scale = np.sqrt(var + eps)                                                  # (n, 1)   the row's own s
    gamma, beta = params[f"l{LAYER}.ln1.g"], params[f"l{LAYER}.ln1.b"]
    normed = gamma * (pieces - pieces.mean(axis=-1, keepdims=True)) / scale     # (P, n, d)   n_p
    normed = np.concatenate([normed, np.broadcast_to(beta, (1, n, len(beta)))])   # (P+1, n, d)   β its own piece
    cols = slice(head * D_HEAD, (head + 1) * D_HEAD)
    w_k = att1["w_k"].value[:, cols]                                            # (d, d_k)
    key_parts = normed @ w_k                                                    # (P+1, n, d_k)
    q = att1["q_heads"].value[head, i]                                          # (d_k,)
    score_parts = key_parts[:, : i + 1] @ q                                     # (P+1, i+1)
    names = piece_names(back, weight=back_weight)
    tokens = trace.tokens
    keys = [f"{tokens[c]} ({c})" for c in range(i + 1)]
    lesson = Trace(tokens)
    lesson.facts.update(kind=KIND, i=i, j=j, r=r, head=head, layer=LAYER, prev_head=prev_head, eps=eps,
                        scale=float(scale[r, 0]), mean=float(stream[r].mean()), d_k=D_HEAD, names=names,
                        weight=float(a[LAYER, head, i, r]), ids=tuple(ids),
                        back=tuple(int(d) for d in back), back_weight=tuple(float(w) for w in back_weight),
                        axis_labels={"part": piece_names(back, short=True, weight=back_weight), "n_k": keys},
                        check={"stream": float(np.abs(pieces.sum(0) - stream).max()),
                               "norm": float(np.abs(normed.sum(0) - trace[f"l{LAYER}.ln1"].value).max()),
                               "key": float(np.abs(key_parts.sum(0) - att1["k_heads"].value[head]).max()),
                               "score": float(np.abs(score_parts.sum(0) - att1["scores"].value[head, i, : i + 1]).max())})
    lesson.add("parts", f"The pieces of the stream X₁ at row j + 1 = {r}", pieces[:, r], ("part", "d_model"),
               r"X_1[j+1] = E[x_{j+1}] + E^{\mathrm{pos}}[j+1] + \sum_h o_h[j+1]", why="Attention-only and pre-norm: the stream "
               "layer 1 reads is the embedding, the position and what each head of layer 0 added, nothing else.")
    lesson.add("gamma", "LayerNorm's γ (layer 1)", gamma, ("d_model",), r"\gamma")
    lesson.add("normed_parts", "Each piece's share of LN(X₁) at row j + 1", normed[:, r], ("part", "d_model"),
               r"n_p = \gamma \odot \frac{x_p - \mu(x_p)}{s},\quad s = \sqrt{\sigma^2 + \epsilon}",
               ("parts",), why=f"s = {scale[r, 0]:.4f} is the whole row's scale, the same for every piece, so the "
               "shares add up to the normalised row exactly; β is a share of its own.")
    lesson.add("w_k", f"Layer 1's W_K, head {head}'s columns", w_k, ("d_model", "d_k"), rf"W_K^{{({head})}}")
    lesson.add("key_parts", f"Each piece's share of the key at j + 1 = {r} (layer 1, head {head})", key_parts[:, r],
               ("part", "d_k"), rf"k^{{(p)}} = n_p\, W_K^{{({head})}}", ("normed_parts", "w_k"))
    lesson.add("key", f"The key at j + 1 = {r}", att1["k_heads"].value[head, r], ("d_k",),
               r"k_{j+1} = \sum_p k^{(p)}", ("key_parts",), why="Read from layer 1's own forward pass.")
    lesson.add("query", f"The query at i = {i}", q, ("d_k",), rf"q_i = \mathrm{{LN}}(X_1)[i]\, W_Q^{{({head})}}",
               why="Read from layer 1's own forward pass.")
    lesson.add("key_parts_all", "Each piece's share of every key", key_parts[:, : i + 1], ("part", "n_k", "d_k"),
               rf"k^{{(p)}}_{{j'}} = n_p[j']\, W_K^{{({head})}}", ("normed_parts", "w_k"))
    lesson.add("score_parts", f"Each piece's share of the scores of query {i}", score_parts, ("part", "n_k"),
               r"q_i \cdot k^{(p)}_{j'}", ("query", "key_parts_all"),
               why=f"Row p: how much the piece p of each key j' adds to the score of query i; a column sums to that "
                   f"key's score. Key j + 1 = {r} is the column an induction head attends to (head {head} puts "
                   f"A = {float(a[LAYER, head, i, r]):.3f} on it).")
    lesson.add("scores", f"The scores S_{head}[{i}, j'] (unscaled)", att1["scores"].value[head, i, : i + 1], ("n_k",),
               r"S_h[i, j'] = \sum_p q_i \cdot k^{(p)}_{j'}", ("score_parts",), why="Read from layer 1's own forward "
               "pass: the sum of the column above, for every key.")
    return lesson


def shares(lesson: Trace) -> list[dict]:
    """One row per piece: its share of S[i, j+1], its mean share over the other keys j' ≤ i, and the difference
    (how much the piece singles out j + 1)."""
    f = lesson.facts
    s = lesson["score_parts"].value                                             # (P+1, i+1)
    others = [c for c in range(s.shape[1]) if c != f["r"]]
    rows = []
    for p, name in enumerate(f["names"]):
        at, mean = float(s[p, f["r"]]), float(s[p, others].mean()) if others else 0.0
        rows.append({"piece": name, "share of S[i, j+1]": at, "mean share at the other keys": mean,
                     "singles out j+1 by": at - mean})
    return rows


def singles_out(trace: Trace, params: dict) -> np.ndarray:
    """(piece, layer-1 head): the K-composition of the whole sequence in one table. For each layer-1 head h and each
    query i whose token occurred before (last at j), the `shares` table's last column, piece p's share of
    S_h[i, j+1] minus its mean share at the other keys j' ≤ i, averaged over those queries. The pieces are
    piece_names' (E, E^pos, each layer-0 head, β). A previous-token head of layer 0 that an induction head of layer 1
    reads through its keys shows as a large number in that head's row and the induction head's column."""
    ids = list(trace.facts["ids"])
    n = len(ids)
    att1 = trace.facts["attention"][LAYER]
    eps = trace.facts["arch"].eps
    pieces = stream_pieces(trace, params)                                       # (P, n, d)
    _, _, var = layer_norm_parts(trace["l0.out"].value, eps)
    scale = np.sqrt(var + eps)                                                  # (n, 1)
    gamma, beta = params[f"l{LAYER}.ln1.g"], params[f"l{LAYER}.ln1.b"]
    normed = gamma * (pieces - pieces.mean(axis=-1, keepdims=True)) / scale
    normed = np.concatenate([normed, np.broadcast_to(beta, (1, n, len(beta)))])   # (P+1, n, d)
    q = att1["q_heads"].value                                                    # (H, n, d_k)
    heads = q.shape[0]
    key_parts = (normed @ att1["w_k"].value).reshape(len(normed), n, heads, -1)  # (P+1, n, H, d_k)
    s = np.einsum("pjhk,hik->phij", key_parts, q)                               # (P+1, H, n_q, n_k)
    out, count = np.zeros(s.shape[:2]), 0
    for i in range(1, n):
        same = [j for j in range(i) if ids[j] == ids[i]]
        if not same:
            continue
        r = same[-1] + 1
        at = s[:, :, i, r]
        out += at - (s[:, :, i, : i + 1].sum(axis=-1) - at) / i
        count += 1
    return out / max(count, 1)
