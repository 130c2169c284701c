"""Which Steps each page shows, in the page's order, read from the page's own Trace.

A page's entry is a function (config, controls, forward) -> Parts: the traces the page draws (the forward pass's,
or a lesson's made from it exactly as the page makes it), the step keys it shows, and notes on where the numbers
come from. `controls` are the page's own controls by their link names ("rope.head", "kv_cache.t", ...); a missing
one takes the page's default. PAGES maps a page's URL path to (its title, its entry).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ...forward.config import Config
from ...forward.trace import Trace

SCORES = ("dot", "scaled_dot", "additive", "bilinear")


@dataclass
class Parts:
    items: list = field(default_factory=list)     # (trace, key, head, title or None)
    notes: list = field(default_factory=list)
    controls: list = field(default_factory=list)  # the page's own controls in force, in words

    def add(self, trace: Trace, keys, head: int = 0, prefix: str = "") -> "Parts":
        """The keys the trace holds, in the order given (a key the settings leave out is skipped)."""
        for key in keys:
            if key in trace:
                self.items.append((trace, key, head, f"{prefix}{trace[key].title}" if prefix else None))
        return self


def _get(controls: dict, key: str, default):
    value = controls.get(key, default)
    return default if value is None else value


def _clamp(v, lo, hi):
    return min(max(int(v), lo), hi)


# ---- the forward pass's pages ------------------------------------------------------------------------

def _overview(config, controls, forward):
    return Parts().add(forward, ["x", "q", "k", "v", "scores", "scaled_scores", "weights", "context", "output"])


def _embeddings(config, controls, forward):
    return Parts().add(forward, ["x_embed"])


def _positional(config, controls, forward):
    return Parts().add(forward, ["pe", "x"])


def _qkv(config, controls, forward):
    return Parts().add(forward, ["x", "w_q", "q", "w_k", "k", "w_v", "v", "q_rot", "k_rot"])


def _scores(config, controls, forward):
    return Parts().add(forward, ["scores", "scaled_scores"])


def _softmax(config, controls, forward):
    keys = ["mask", "masked_scores"] if "mask" in forward else [forward.facts.get("softmax_input", "scaled_scores")]
    return Parts().add(forward, keys + ["weights"])


def _context(config, controls, forward):
    return Parts().add(forward, ["weights", "v_heads" if config.n_heads > 1 else "v", "context"])


def _multi_head(config, controls, forward):
    h, h_kv = config.n_heads, config.kv_heads
    steps = (["q", "weights", "context"] if h == 1 else
             ["q", "q_heads"] + (["k_heads"] if h_kv < h else []) + ["weights", "context", "concat"])
    return Parts().add(forward, steps + ["w_o", "output"])


MHA_DROPOUT = 0.1                       # the PyTorch page's dropout slider at its default (eval mode: off)


def _pytorch_mha(config, controls, forward):
    """The page's own layer, not the sidebar's forward pass: hid_dim = d_model cut into H heads of hid_dim / H, its
    own seeded weights, the scaled dot product, padding only (the page's controls at their defaults: the sidebar's
    H when it divides d_model, else 1; no padding; dropout p = 0.1 in eval mode, so off)."""
    import numpy as np

    from ...lessons import torch_mha as tm
    from ...math.limits import MAX_HEADS, divisors
    x = np.array(forward["x"].value, dtype=np.float64)               # a copy torch may write to
    d_model = x.shape[1]
    heads = config.n_heads if config.n_heads in [h for h in divisors(d_model) if h <= MAX_HEADS] else 1
    full = tm.pytorch_trace(x, heads, config.seed, (), MHA_DROPOUT, "eval", 0, labels=list(forward.tokens))
    t = Trace(full.tokens)
    for step in full:                                   # the batch axis (one sentence) left out, as the page draws it
        value = step.value[0]
        if step.key == "masked_energy":
            value = np.where(value <= -1e9, -np.inf, value)
        t.add(step.key, step.title, value, step.axes[1:], step.formula, step.inputs, step.why, step.scale)
    p = Parts()
    p.controls += [f"H = {heads} head{'s' if heads > 1 else ''} of head_dim = {d_model} / {heads} = {d_model // heads}",
                   "no padding", f"dropout p = {MHA_DROPOUT:g}, run in eval mode (off)"]
    p.notes.append(f"The page's PyTorch layer: hid_dim = d_model = {d_model} cut into H heads of head_dim = hid_dim / H, "
                   f"its own seeded weights (seed {config.seed}), the scaled dot product; of the sidebar only X (the "
                   "sentence, embeddings, positions) and the seed apply"
                   + ("" if heads == config.n_heads else f", and its H = {config.n_heads} does not divide "
                      f"{d_model}, so the layer starts at H = 1") + ". The page's own heads, padding and dropout "
                   "controls are taken at their defaults.")
    return p.add(t, ["x", "q", "q_heads", "k_heads", "v_heads", "energy", "alpha", "a_heads", "a", "output"])


def _pitfalls(config, controls, forward):
    p = Parts().add(forward, ["scaled_scores", "weights", "context"])
    p.notes.append("The right computation, which each pitfall on the page is set beside.")
    return p


def _quiz(config, controls, forward):
    from ..quiz import make_questions
    keys = [q.step_key for q in make_questions(forward, seed=0) if q.step_key]
    p = Parts().add(forward, list(dict.fromkeys(keys)))
    p.notes.append("The steps the first round of questions asks about: predict first, then check here.")
    return p


def _export(config, controls, forward):
    return Parts().add(forward, forward.keys())


def _score_functions(config, controls, forward):
    from ...forward.stages import run_forward
    p = Parts()
    for score in SCORES:
        t = forward if config.score == score and config.temperature == 1.0 else run_forward(
            config.replace(score=score, temperature=1.0))
        p.add(t, ["scaled_scores" if score == "scaled_dot" else "scores"], prefix=f"{score.replace('_', ' ')}: ")
    p.add(forward, ["weights"])
    p.notes.append("The four score functions on the same queries and keys (temperature 1), then the weights of "
                   "the settings' own score function.")
    return p


# ---- training and the variants --------------------------------------------------------------------------

def _classifier(config, controls, forward, train: bool = False):
    from ...training import classifier as clf
    from ...training.training_input import classifier_input, training_settings
    inp = classifier_input(config)
    params = clf.init_params(inp.x.shape[1], config.d_k, config.d_v, config.seed)
    text = " ".join(config.sentence.lower().split())
    known = next((e.label for e in clf.load_dataset() if " ".join(e.text.lower().split()) == text), None)
    label = _get(controls, "label", known or "positive")       # the page's default: the data set's label, else positive
    _, trace = clf.forward(params, inp.x, label, inp.tokens, training_settings(config, False))
    p = Parts().add(trace, ["x", "q", "k", "v", "weights", "f", "pooled", "p"] if train else ["x", "weights", "f", "p"])
    p.notes.append(f"The classifier at its seeded start (seed {config.seed}), before any training; the label "
                   f"is {label}" + (" (the data set's label of this sentence)" if known else
                                    " (the page's default: the sentence is not in the data set)") + "."
                   + (" A run trained on the page lives only in that browser." if train else ""))
    return p


def _alignment(config, controls, forward):
    import numpy as np

    from ...lessons import bahdanau as b
    n_pairs, i = 6, 3                                     # the page's first section at its defaults
    inputs, targets = b.toy_sequence(n_pairs, np.random.default_rng([n_pairs, 2014]))
    s = b.ToySettings()
    trace = b.step_trace(targets[i - 1], inputs, b.init_params(2, 2, s.d_a, s.seed, s.init_scale))
    p = Parts().add(trace, ["s_prev", "h", "w_s", "u_h", "hidden", "scores", "weights", "context"])
    p.notes.append(f"One decoder step, output step i = {i} of a sequence of {n_pairs} pairs after [0, 1] (the page's "
                   "first section at its defaults), with the alignment network's seeded, untrained start: a network "
                   "trained on the page lives only in that browser.")
    return p


def _grid(config, controls, forward):
    from ...lessons import grid as g
    scene = _get(controls, "grid.scene", next(iter(g.SCENES)))
    query = _get(controls, "grid.query", next(iter(g.QUERIES)))
    cells, length = int(_get(controls, "grid.cells", 6)), float(_get(controls, "grid.sharpness", 10.0))
    grid = g.make_grid(scene, (cells, cells), 48)
    trace = g.one_query(grid, g.named_queries([query], length)[0], query)
    p = Parts().add(trace, ["q", "scores", "weights_grid", "context"])
    p.controls += [f"scene “{scene}”", f"{cells}×{cells} cells", f"query “{query}”", f"query length {length:g}"]
    p.notes.append(f"Scene “{scene}” on a {cells}×{cells} grid, the query “{query}” of length {length:g}: the page's "
                   "first tab.")
    return p


# ---- today's attention -------------------------------------------------------------------------------

def _rope(config, controls, forward):
    from ...forward.stages import run_forward
    from ...lessons.rope import rope_lesson, with_rope
    p = Parts()
    if config.positional != "rope":
        forward = run_forward(with_rope(config))
        p.notes.append("The sidebar's Position is not RoPE: these are the same settings with Position = RoPE, as "
                       "the page shows them.")
    h = _clamp(_get(controls, "rope.head", 0), 0, config.n_heads - 1)
    pairing = "half" if _get(controls, "rope.half", False) else "interleaved"
    p.controls += [f"head {h}"] * (config.n_heads > 1) + [f"pairing: {pairing}"]
    return p.add(rope_lesson(forward, h, pairing), ["angles", "q", "q_rot", "k", "k_rot", "scaled_scores"])


def _masks(config, controls, forward):
    from ...lessons.masks import masks_trace
    h = _clamp(_get(controls, "masks.head", 0), 0, config.n_heads - 1)
    sink = float(_get(controls, "masks.sink", 0.0)) if _get(controls, "masks.sink_on", False) else None
    p = Parts()
    p.controls += [f"head {h}"] * (config.n_heads > 1) + ([f"sink z_h = {sink:g}"] if sink is not None else [])
    return p.add(masks_trace(config, h, sink, forward),
                 ["mask_causal", "mask_w", "mask_w1", "mask_padding", "scaled_scores", "weights", "row_sums"])


def _kv_cache(config, controls, forward):
    from ...lessons import kv_cache as kv
    n = forward.n
    prefill = _clamp(_get(controls, "kv_cache.prefill", 2), 0, n)
    t = _clamp(_get(controls, "kv_cache.t", 2), 0, n - 1)
    p = Parts()
    p.controls += [f"prompt P = {prefill} token{'' if prefill == 1 else 's'}", f"decoding step t = {t}"]
    return p.add(kv.kv_cache_trace(config, prefill, t),
                 ["q_t", "k_cache", "v_cache", "scores_t", "weights_t", "context_t", "output_t", "heads_map"])


def _online_softmax(config, controls, forward):
    from ...lessons.online_softmax import online_softmax_trace
    n = forward.n
    B = _clamp(_get(controls, "online_softmax.block_size", 1), 1, 128)
    blocks = -(-n // B)
    b = _clamp(_get(controls, "online_softmax.block", 1), 0, blocks - 1)
    h = _clamp(_get(controls, "online_softmax.head", 0), 0, config.n_heads - 1)
    p = Parts()
    p.controls += [f"block size B_c = {B}", f"key block b = {b}"] + [f"head {h}"] * (config.n_heads > 1)
    return p.add(online_softmax_trace(config, B, b, h, forward=forward),
                 ["s_b", "m_prev", "m", "rescale", "l_prev", "l", "o", "m_final", "l_final", "o_final", "context"])


# ---- inside a transformer ----------------------------------------------------------------------------

def _block(config, controls, forward):
    from ...forward.transformer import Arch, sidebar_block
    arch = Arch(n_layers=_clamp(_get(controls, "block.layers", 1), 1, 4),
                placement=_get(controls, "block.placement", "pre"), norm=_get(controls, "block.norm", "layer"),
                mlp=bool(_get(controls, "block.mlp", True)))
    layer = _clamp(_get(controls, "block.layer", 0), 0, arch.n_layers - 1)
    p = Parts()
    p.controls += [f"L = {arch.n_layers} layer{'' if arch.n_layers == 1 else 's'}", f"{arch.placement}-norm",
                   f"{arch.norm} norm",
                   "with the MLP" if arch.mlp else "without the MLP", f"layer {layer} shown"]
    keys = ["x"] + [f"l{layer}.{k}" for k in ("ln1", "attn", "mid", "ln2", "hidden", "act", "mlp", "out")]
    return p.add(sidebar_block(config, arch, forward), keys + ["ln_f", "logits"])


def _next_token(config, controls, forward):
    from ...lessons.next_token import next_token_trace
    T = float(_get(controls, "next_token.temperature", 0.5))
    k, top_p = int(_get(controls, "next_token.k", 10)), float(_get(controls, "next_token.p", 0.9))
    seed, n_new = int(_get(controls, "next_token.seed", 0)), int(_get(controls, "next_token.n_new", 5))
    p = Parts()
    p.controls += [f"temperature T = {T:g}", f"top-k = {k}", f"top-p = {top_p:g}", f"seed {seed}"]
    p.notes.append("The small language model (2 layers of 4 heads, trained to copy) on the sentence, each distinct "
                   "word one token; of the settings only the sentence is read.")
    return p.add(next_token_trace(config.sentence, T, k, top_p, seed, n_new),
                 ["logits", "scaled", "probs", "kept", "renormalised", "cdf"])


def _induction(config, controls, forward):
    from ...training.lm.model import lm_trace, sentence_ids
    from ...training.lm.step_trace import shipped_params
    ids, _, labels, _ = sentence_ids(config.sentence)
    p = Parts()
    p.notes.append("The shipped run's small language model on the sentence (the page's “Your sentence” tab); a run "
                   "trained on the page (kept in that browser's session, and beside the room when a teacher shows "
                   "it to a class) is not printed here.")
    return p.add(lm_trace(shipped_params(), ids, labels), ["x", "l0.attn", "l1.attn", "ln_f", "logits"])


def _block_gradients(config, controls, forward):
    from ...forward.transformer import Arch
    from ...training.lm.model import ARCH, sentence_ids
    from ...training.lm.step_trace import block_params, shipped_params, training_step
    lr = float(_get(controls, "block_gradients.lr", 0.1))
    arch = Arch(n_layers=ARCH.n_layers, placement=_get(controls, "block_gradients.placement", "pre"),
                norm=_get(controls, "block_gradients.norm", "layer"), mlp=bool(_get(controls, "block_gradients.mlp",
                                                                                    False)))
    ids, _, labels, _ = sentence_ids(config.sentence)
    params, _ = block_params(shipped_params(), arch)
    step = training_step(arch, params, ids, labels, lr)
    p = Parts()
    p.controls += [f"learning rate η = {lr:g}", f"{arch.placement}-norm", f"{arch.norm} norm",
                   "with the MLP" if arch.mlp else "without the MLP"]
    p.notes.append("One training step of the small language model on the sentence; of the settings only the "
                   "sentence is read.")
    return p.add(step.trace, ["probs", "loss", "dL/dlogits", "dL/dw_u", "dL/dln_f", "dL/dl1.out", "dL/dl1.weights",
                              "dL/dl1.scores", "dL/dl1.q", "dL/dl1.k", "dL/dl1.v", "dL/dl0.out", "dL/dl0.weights",
                              "dL/dx"])


Entry = Callable[[Config, dict, Trace], Parts]

PAGES: dict[str, tuple[str, Entry]] = {
    "": ("Attention Explorer", _overview),
    "embeddings": ("Tokens & embeddings", _embeddings),
    "positional": ("Positional encoding", _positional),
    "qkv": ("Queries, keys and values", _qkv),
    "scores": ("Scores and scaling", _scores),
    "softmax": ("Masking and softmax", _softmax),
    "context": ("Context vectors", _context),
    "multi_head": ("Multi-head attention", _multi_head),
    "training_step": ("One training step, backwards", _classifier),
    "train": ("Train a classifier", lambda c, ctl, f: _classifier(c, ctl, f, train=True)),
    "score_functions": ("Score functions", _score_functions),
    "alignment": ("Bahdanau alignment", _alignment),
    "grid": ("Cross-attention on a grid", _grid),
    "pytorch_mha": ("Multi-head attention in PyTorch", _pytorch_mha),
    "rope": ("RoPE: rotary positions", _rope),
    "masks": ("Masks & biases", _masks),
    "kv_cache": ("KV cache & decoding", _kv_cache),
    "online_softmax": ("FlashAttention's online softmax", _online_softmax),
    "block": ("The transformer block", _block),
    "next_token": ("The next token", _next_token),
    "induction_heads": ("Induction heads", _induction),
    "block_gradients": ("Gradients through the block", _block_gradients),
    "pitfalls": ("Pitfalls lab", _pitfalls),
    "quiz": ("Predict, then reveal", _quiz),
    "export": ("Share and export", _export),
}
