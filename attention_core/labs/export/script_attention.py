"""The numpy script's attention steps, after Q, K, V: the KV heads repeated for their groups, the scores (dot,
scaled dot, additive, bilinear), ALiBi's bias, the mask, the weights A = softmax(…), the context C = A V, and the
output O = C W_O.

Each step hands the next the name of the variable softmax would read so far (`logits`) and its symbol
(`before`: Ŝ_h, or (Ŝ_h + B_h) once ALiBi's bias is added).

    >>> from attention_core import Config, run_forward
    >>> s = Script(Config(mask="causal"), run_forward(Config(mask="causal")), literal=False)
    >>> add_mask(s, "scaled_scores", "Ŝ")
    'masked_scores'
    >>> s.lines[0]
    '# -- causal mask M: query i sees keys j = 0 … i'
"""
from __future__ import annotations

from .script_base import Script

ALIBI_SLOPES = '''

def alibi_slopes(n_heads):
    """m_0 … m_{H−1}: (H,)."""
    def powers(c):  # 2^(−8k/c) for k = 1 … c
        return [2.0 ** (-8.0 * k / c) for k in range(1, c + 1)]
    c = 1 << (n_heads.bit_length() - 1)  # 2^⌊log2 H⌋
    return np.array(powers(c) + powers(2 * c)[0::2][: n_heads - c])

'''


def add_attention(s: Script) -> None:
    """From Q, K, V (rotated under RoPE) to the output O."""
    sq, sk, sv = ("q_heads", "k_heads", "v_heads") if s.h > 1 else ("q", "k", "v")
    if s.rope:
        sq, sk = "q_rot", "k_rot"
    if s.grouped:
        sk, sv = add_repeat_kv(s, sk, sv)
    logits = add_scores(s, sq, sk)
    before = f"{'Ŝ' if logits == 'scaled_scores' else 'S'}{s.hs}"       # the scores the mask and softmax read
    if s.alibi:
        logits, before = add_alibi(s, logits, before)
    if s.config.mask != "none":
        logits = add_mask(s, logits, before)
    add_output(s, logits, before, sv)


def add_repeat_kv(s: Script, sk: str, sv: str) -> tuple[str, str]:
    """Grouped-query attention: each KV head's K and V repeated for its g query heads; the new names of K, V."""
    add, h, h_kv = s.add, s.h, s.h_kv
    add(f"# -- grouped-query attention: query head h reads KV head ⌊h / g⌋, so each of the H_kv = {h_kv} KV heads")
    add(f"#    is repeated for its g = {h // h_kv} query heads (as torch's repeat_interleave / enable_gqa do)")
    add(f"k_for_q = np.repeat({sk}, G, axis=0)  # K{s.r}_{{⌊h/g⌋}} for h = 0 … H−1: (H, n, d_k)")
    add(f"v_for_q = np.repeat({sv}, G, axis=0)  # V_{{⌊h/g⌋}} for h = 0 … H−1: (H, n, d_v)")
    add("")
    return "k_for_q", "v_for_q"


def add_scores(s: Script, sq: str, sk: str) -> str:
    """The raw scores S (and Ŝ = S / √d_k for the scaled dot product); the name of the last one."""
    add, h, d_k, hs, r = s.add, s.h, s.config.d_k, s.hs, s.r
    q_sym, k_sym = f"Q{r}{hs}", (f"(K{r}{s.kv})" if s.rope else f"K{s.kv}")   # (K^R_h)^T: one superscript at a time
    shape = "(H, n_q, n_k)" if h > 1 else "(n_q, n_k)"
    per = "one per head, " if h > 1 else ""
    if s.config.score in ("dot", "scaled_dot"):
        add(f"# -- raw scores: S{hs} = {q_sym} {k_sym}^T  {shape}")
        add(f"scores = {sq} @ np.swapaxes({sk}, -1, -2)")
    elif s.config.score == "additive":
        shape_w, shape_v = (h, d_k, d_k)[h == 1:], (h, d_k)[h == 1:]
        add(f"# -- raw scores, additive: S{hs}[i, j] = v^T tanh(W_1^T q{r}_i + W_2^T k{r}_j) = v · tanh(q{r}_i W_1 + "
            f"k{r}_j W_2), q{r}_i, k{r}_j rows of {q_sym}, {k_sym}  {shape}")
        for name, sym, shp in (("w_a_q", "W_1", shape_w), ("w_a_k", "W_2", shape_w), ("v_a", "v", shape_v)):
            add(f"{name} = {s.param(name, shp, d_k)}  # {sym}: {per}{shp}")
            add(f'steps["{name}"] = {name}')
        add(f"hidden = np.tanh(({sq} @ w_a_q)[..., :, None, :] + ({sk} @ w_a_k)[..., None, :, :])  # (.., n_q, n_k, d_a)")
        add('scores = np.einsum("...ija,...a->...ij", hidden, v_a)')
    else:
        add(f"# -- raw scores, bilinear: S{hs} = {q_sym} W {k_sym}^T  {shape}")
        add(f"w_b = {s.param('w_b', (h, d_k, d_k)[h == 1:], d_k)}  # W: {per}{(h, d_k, d_k)[h == 1:]}")
        add('steps["w_b"] = w_b')
        add(f"scores = {sq} @ w_b @ np.swapaxes({sk}, -1, -2)")
    add('steps["scores"] = scores')
    logits = "scores"
    if s.config.score == "scaled_dot":
        add(f"scaled_scores = scores / np.sqrt(D_K)  # Ŝ{hs} = S{hs} / √d_k")
        add('steps["scaled_scores"] = scaled_scores')
        logits = "scaled_scores"
    add("")
    return logits


def add_alibi(s: Script, logits: str, before: str) -> tuple[str, str]:
    """ALiBi: the slopes m_h, the bias B_h[i, j] = −m_h |i − j| and the biased scores; their name and symbol."""
    from ...forward.stages import exact_slope
    add, hs = s.add, s.hs
    add("# -- ALiBi: slopes m_h, h = 0 … H−1 (Press et al.): 2^(−8(h+1)/H) when H is a power of two (the paper")
    add("#    counts heads from 1: 2^(−8h/H)); otherwise the c = 2^⌊log2 H⌋ slopes of c heads, then every other")
    add("#    slope of the 2c-head sequence for the remaining H − c heads. Here: "
        + ", ".join(f"m_{i} = {exact_slope(m)}" for i, m in enumerate(s.trace.facts["alibi_slopes"])))
    s.block(ALIBI_SLOPES)
    add("slopes = alibi_slopes(H)  # m_h: (H,)")
    add("distance = np.abs(np.arange(N)[:, None] - np.arange(N)[None, :]).astype(np.float64)  # |i − j|: (n, n)")
    if s.h > 1:
        add("alibi = 0.0 - slopes[:, None, None] * distance[None]  # (B_h)[i, j] = −m_h |i − j|: (H, n, n)")
    else:
        add("alibi = 0.0 - slopes[0] * distance  # B[i, j] = −m_0 |i − j|: (n, n)")
    add('steps["alibi"] = alibi')
    add(f"biased_scores = {logits} + alibi  # {before} + B{hs}: a key further back scores lower")
    add('steps["biased_scores"] = biased_scores')
    add("")
    return "biased_scores", f"({before} + B{hs})"


def add_mask(s: Script, logits: str, before: str) -> str:
    """The mask M (causal, sliding window, padding) and the masked scores S̃; their name."""
    config, add = s.config, s.add
    if config.mask == "causal":
        add("# -- causal mask M: query i sees keys j = 0 … i")
        add("mask = np.tril(np.ones((N, N), dtype=bool))")
    elif config.mask == "sliding_window":
        add(f"# -- sliding-window mask M: query i sees keys j with 0 ≤ i − j < W, W = {config.window} keys, "
            "itself included")
        add("offset = np.arange(N)[:, None] - np.arange(N)[None, :]  # i − j: (n_q, n_k)")
        add(f"mask = (offset >= 0) & (offset < {config.window})")
    else:
        add("# -- padding mask M: the listed key positions are hidden from every query")
        add("mask = np.ones((N, N), dtype=bool)")
        add(f"mask[:, {list(config.padding)!r}] = False")
    add('steps["mask"] = mask.astype(float)')
    add(f"masked_scores = np.where(mask, {logits}, -np.inf)  # S̃{s.hs} = {before} with -inf where M[i, j] = 0"
        + (" (the same M for every head)" if s.h > 1 else ""))
    add('steps["masked_scores"] = masked_scores')
    add("")
    return "masked_scores"


def add_output(s: Script, logits: str, before: str, sv: str) -> None:
    """A = softmax(… / T) over each row, C = A V (the heads side by side), O = C W_O (+ b_O)."""
    config, add, h, hs = s.config, s.add, s.h, s.hs
    d_v, d_model = config.d_v, s.trace.facts["d_model"]
    s_in = f"S̃{hs}" if logits == "masked_scores" else before.strip("()")
    t = float(config.temperature)
    if t != 1 and " + " in s_in:
        s_in = f"({s_in})"                                        # softmax((Ŝ + B) / T)
    add(f"# -- attention weights: A{hs} = softmax({s_in}{'' if t == 1 else ' / T'}), over each row (the keys j)"
        + ("" if t == 1 else f", temperature T = {t!r}"))
    add(f"weights = softmax({logits}, {t!r})")
    add('steps["weights"] = weights')
    add("")
    add(f"context = weights @ {sv}  # C{hs} = A{hs} V{s.kv}: {'(H, n, d_v)' if h > 1 else '(n, d_v)'}")
    add('steps["context"] = context')
    c_name = "context"
    if h > 1:
        add("concat = context.transpose(1, 0, 2).reshape(N, H * D_V)  # C = [C_0 | … | C_{H−1}], "
            "the heads side by side: (n, H·d_v)")
        add('steps["concat"] = concat')
        c_name = "concat"
    add("")
    add(f"w_o = {s.param('w_o', (h * d_v, d_model), h * d_v)}  # W_O: ({'H·d_v' if h > 1 else 'd_v'}={h * d_v}, "
        f"d_model={d_model})")
    add('steps["w_o"] = w_o')
    if config.bias:
        add(f"b_o = {s.bias('b_o', (d_model,))}  # b_O: (d_model={d_model})")
        add('steps["b_o"] = b_o')
        add(f"output = {c_name} @ w_o + b_o  # O = C W_O + b_O: (n, d_model)")
    else:
        add(f"output = {c_name} @ w_o  # O = C W_O: (n, d_model)")
    add('steps["output"] = output')
