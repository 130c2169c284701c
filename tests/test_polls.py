"""Class polls: every kind on a grid of settings is well formed (3–4 distinct choices, the answer in range,
deterministic in the seed), and its right choice equals an independent computation: torch for the numbers attention
makes (weights, scores, RoPE at shifted positions, the running maximum), by hand for the shapes, the KV head, the
window's keys and the cache size (Llama 2 7B's published 2 GiB at 4,096 tokens in fp16)."""
from __future__ import annotations

import math
import re

import numpy as np
import pytest
import torch

from attention_core import Config, run_forward
from attention_core.labs.polls import POLL_KINDS, Poll, available, make_poll
from tests.test_transformer_polls import block_by_hand, lm_by_hand, softmax    # the hand computations
from attention_core.labs.polls.kv_polls import cache_size_poll_for
from attention_core.labs.quiz.notation import num
from attention_core.lessons.kv_cache import PRESETS, Preset, human

LONG = "the quick brown fox jumps over the lazy dog near the river bank"
GRID = {
    "default": Config(),
    "heads 4": Config(n_heads=4, weights="random"),
    "heads 8, causal": Config(n_heads=8, mask="causal", weights="random"),
    "GQA H_kv 2, causal": Config(n_heads=4, n_kv_heads=2, mask="causal", weights="random"),
    "MQA H_kv 1, window 2": Config(n_heads=4, n_kv_heads=1, mask="sliding_window", window=2, weights="random"),
    "RoPE, causal": Config(positional="rope", mask="causal"),
    "RoPE GQA, window, long": Config(positional="rope", n_heads=8, n_kv_heads=2, mask="sliding_window", window=3,
                                    sentence=LONG, weights="random"),
    "short": Config(sentence="I love you"),
    "two words": Config(sentence="hello world", mask="causal"),
    "one word, heads 4": Config(sentence="hello", n_heads=4, mask="causal", weights="random"),
    "long, causal, T 0.5": Config(sentence=LONG, mask="causal", temperature=0.5, weights="random"),
    "ALiBi, causal": Config(positional="alibi", n_heads=4, mask="causal", weights="random"),
    "dot, padding": Config(score="dot", mask="padding", padding=(1,), weights="random"),
    "additive": Config(score="additive", weights="random"),
    "odd d_k": Config(d_k=3, weights="random"),
}
TRACES = {name: run_forward(config) for name, config in GRID.items()}
SEEDS = (0, 1, 2)
FITS = {name: available(trace) for name, trace in TRACES.items()}


def polls(kind, names=GRID):
    """(name, config, trace, seed, poll) for every setting where the kind fits."""
    return [(name, GRID[name], TRACES[name], seed, make_poll(kind, TRACES[name], seed))
            for name in names for seed in SEEDS if kind in FITS[name]]


def right(poll: Poll) -> str:
    return poll.choices[poll.answer]


def ints(pattern: str, text: str) -> tuple[int, ...]:
    m = re.search(pattern, text)
    assert m, (pattern, text)
    return tuple(int(g) if g is not None else None for g in m.groups())


# ---- the form -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", GRID)
def test_every_kind_is_well_formed_and_none_when_it_does_not_fit(name):
    trace = TRACES[name]
    fits = FITS[name]
    assert fits == available(trace)
    assert set(fits) <= set(POLL_KINDS) and "kv_cache_size" in fits and "kv_head" in fits
    for kind in POLL_KINDS:
        for seed in SEEDS:
            poll = make_poll(kind, trace, seed)
            if kind not in fits:
                assert poll is None, (name, kind, seed)
                continue
            assert isinstance(poll, Poll) and poll.kind == kind
            assert 3 <= len(poll.choices) <= 4 and 0 <= poll.answer < len(poll.choices)
            assert len(set(poll.choices)) == len(poll.choices), poll.choices          # distinct as displayed
            assert all(isinstance(c, str) and c.strip() for c in poll.choices)
            assert poll.prompt and poll.explanation and "nan" not in (poll.prompt + poll.explanation).lower()
            assert not re.search(r"\w+\.(py|csv|json)\b|_poll|attention_core", poll.prompt + poll.explanation)
            assert poll.step_key is None or poll.step_key in trace, (kind, poll.step_key)
            d = poll.to_dict()
            assert set(d) == {"kind", "prompt", "choices", "answer", "explanation", "step_key"}
            assert d["choices"] == list(poll.choices) and d["answer"] == poll.answer


def test_deterministic_in_the_seed_and_the_answer_moves():
    trace = TRACES["GQA H_kv 2, causal"]
    for kind in available(trace):
        assert make_poll(kind, trace, 5) == make_poll(kind, trace, 5)
        assert len({make_poll(kind, trace, s).answer for s in range(12)}) > 1, kind      # the place is shuffled


def test_which_kinds_fit():
    assert "which_head" not in available(TRACES["default"])                      # one head
    assert "masked_weight" not in available(TRACES["default"])                   # no mask
    assert "rope_shift" not in available(TRACES["additive"])                     # not a dot product
    assert "rope_shift" not in available(TRACES["odd d_k"])                      # nothing to pair
    assert "rope_shift" in available(TRACES["default"])                          # on the RoPE lesson's settings
    assert "window_keys" in available(TRACES["default"])
    assert {"which_head", "masked_weight", "online_max"} <= set(available(TRACES["heads 8, causal"]))
    assert not {"attends", "which_head", "rope_shift", "window_keys", "online_max"} & set(
        available(TRACES["one word, heads 4"]))                                   # one token: nothing to compare


def test_unknown_kind():
    with pytest.raises(KeyError):
        make_poll("nope", TRACES["default"])


# ---- independent computations ----------------------------------------------------------------------------

def torch_rotate(x: torch.Tensor, positions, base: float) -> torch.Tensor:
    """RoPE, interleaved pairs (2i, 2i + 1) turned by p·θ_i, θ_i = base^(−2i/d)."""
    d = x.shape[-1]
    theta = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    angle = torch.as_tensor(positions, dtype=torch.float64)[:, None] * theta[None]
    pairs = torch.view_as_complex(x.reshape(x.shape[0], d // 2, 2).contiguous())
    return torch.view_as_real(pairs * torch.polar(torch.ones_like(angle), angle)).reshape(x.shape)


def torch_scores(config: Config, trace, h: int, positions=None) -> torch.Tensor:
    """Head h's dot-product scores (÷ √d_k for the scaled dot), RoPE applied in torch when the position is RoPE."""
    d, g = config.d_k, config.n_heads // config.kv_heads
    u = h // g
    q = torch.tensor(trace["q"].value[:, h * d:(h + 1) * d])
    k = torch.tensor(trace["k"].value[:, u * d:(u + 1) * d])
    if config.positional == "rope":
        p = np.arange(trace.n) if positions is None else positions
        q, k = torch_rotate(q, p, config.pe_base), torch_rotate(k, p, config.pe_base)
    s = q @ k.T
    return s / math.sqrt(d) if config.score == "scaled_dot" else s


def torch_mask(config: Config, n: int) -> torch.Tensor:
    i, j = torch.arange(n)[:, None], torch.arange(n)[None, :]
    if config.mask == "causal":
        return j <= i
    if config.mask == "sliding_window":
        return (i - j >= 0) & (i - j < config.window)
    if config.mask == "padding":
        return ~torch.isin(j, torch.tensor(config.padding)).expand(n, n)
    return torch.ones(n, n, dtype=torch.bool)


def torch_weights(config: Config, trace, h: int) -> torch.Tensor:
    s = torch_scores(config, trace, h).masked_fill(~torch_mask(config, trace.n), float("-inf"))
    return torch.softmax(s / config.temperature, dim=-1)


TORCHABLE = [n for n, c in GRID.items() if c.positional != "alibi" and c.score in ("dot", "scaled_dot")]


def test_attends_is_the_row_maximum_torch_computes():
    checked = 0
    for name, config, trace, _, poll in polls("attends", TORCHABLE):
        i, = ints(r"row (\d+) of A", poll.prompt)
        h = ints(r"In head (\d+)", poll.prompt)[0] if config.n_heads > 1 else 0
        row = torch_weights(config, trace, h)[i]
        assert right(poll) == trace.token_labels()[int(row.argmax())], name
        checked += 1
    assert checked >= 15


def test_which_head_is_the_largest_weight_torch_computes():
    checked = 0
    for name, config, trace, _, poll in polls("which_head", TORCHABLE):
        i, j = ints(r"A_h\[(\d+),(\d+)\]", poll.prompt)
        col = torch.stack([torch_weights(config, trace, h)[i, j] for h in range(config.n_heads)])
        assert right(poll) == f"head {int(col.argmax())}", name
        checked += 1
    assert checked >= 6


def test_scaled_score_is_s_over_root_d_k_and_the_distractors_the_mistakes():
    checked = 0
    for name, config, trace, _, poll in polls("scaled_score", TORCHABLE):
        h, i, j = ints(r"Ŝ(?:_(\d+))?\[(\d+),(\d+)\]\?", poll.prompt)
        s = torch_scores(config.replace(score="dot"), trace, h or 0)[i, j].item()
        assert right(poll) == num(s / math.sqrt(config.d_k)), name
        wrong = set(poll.choices) - {right(poll)}
        assert wrong <= {num(s * math.sqrt(config.d_k)), num(s / config.d_k), num(s)}
        checked += 1
    assert checked >= 15


def test_masked_weight_is_zero_and_the_unmasked_weight_is_softmax_without_the_mask():
    checked = 0
    for name, config, trace, _, poll in polls("masked_weight", TORCHABLE):
        h, i, j = ints(r"A(?:_(\d+))?\[(\d+),(\d+)\]", poll.prompt)
        assert right(poll) == "0" and torch_weights(config, trace, h or 0)[i, j].item() == 0.0
        unmasked = torch.softmax(torch_scores(config, trace, h or 0)[i] / config.temperature, dim=-1)[j].item()
        assert set(poll.choices) == {"0", "−∞", num(unmasked), num(1 / trace.n)}, name
        checked += 1
    assert checked >= 9


def test_shape_by_hand():
    for name, config, trace, _, poll in polls("shape"):
        n, H, kv, dk, dv = trace.n, config.n_heads, config.kv_heads, config.d_k, config.d_v
        dm = trace["x"].shape[1]
        expected = {"q": (n, H * dk), "k": (n, kv * dk), "v": (n, kv * dv), "w_q": (dm, H * dk), "w_k": (dm, kv * dk),
                    "w_v": (dm, kv * dv), "w_o": (H * dv, dm), "output": (n, dm), "x": (n, dm), "pe": (n, dm),
                    "q_heads": (H, n, dk), "k_heads": (kv, n, dk), "v_heads": (kv, n, dv), "k_rot": (kv, n, dk),
                    "concat": (n, H * dv), "context": (n, dv) if H == 1 else (H, n, dv),
                    "scores": (n, n) if H == 1 else (H, n, n), "weights": (n, n) if H == 1 else (H, n, n),
                    "masked_scores": (n, n) if H == 1 else (H, n, n), "alibi": (H, n, n)}
        if poll.step_key in expected:
            assert right(poll) == " × ".join(map(str, expected[poll.step_key])), (name, poll.step_key)
        assert right(poll) == " × ".join(map(str, trace[poll.step_key].shape))


def test_rope_shift_is_the_score_at_the_shifted_positions_torch_computes():
    checked = 0
    for name, config, trace, _, poll in polls("rope_shift"):
        h, i, j = ints(r"[SŜ](?:_(\d+))?\[(\d+),(\d+)\] now\?", poll.prompt)
        shift, = ints(r"Δ = (\d+)", poll.prompt)
        rope = config.replace(positional="rope")
        forward = trace if config.positional == "rope" else run_forward(rope)
        positions = np.arange(trace.n) + shift
        moved = torch_scores(rope, forward, h or 0, positions)[i, j].item()
        before = torch_scores(rope, forward, h or 0)[i, j].item()
        assert right(poll) == num(moved) == num(before), name
        assert ("turns Position to RoPE" in poll.prompt) == (config.positional != "rope")
        # one distractor: only the query turned to its new position
        d, g = rope.d_k, rope.n_heads // rope.kv_heads
        q = torch_rotate(torch.tensor(forward["q"].value[:, (h or 0) * d:((h or 0) + 1) * d]), positions, rope.pe_base)
        k = torch_rotate(torch.tensor(forward["k"].value[:, ((h or 0) // g) * d:((h or 0) // g + 1) * d]),
                         np.arange(trace.n), rope.pe_base)
        only_q = (q[i] @ k[j]).item() / (math.sqrt(d) if rope.score == "scaled_dot" else 1)
        assert num(only_q) in poll.explanation
        checked += 1
    assert checked >= 20


def test_window_keys_by_hand():
    checked = 0
    for name, config, trace, _, poll in polls("window_keys"):
        w, i = ints(r"W = (\d+) keys", poll.prompt)[0], ints(r"query i = (\d+)", poll.prompt)[0]
        if config.mask == "sliding_window":
            assert w == config.window and "take instead" not in poll.prompt
        keys = list(range(max(0, i - w + 1), i + 1))
        words = f" ({', '.join(trace.token_labels()[k] for k in keys)})" if len(keys) <= 4 else ""
        assert right(poll) == (f"key {i} only{words}" if len(keys) == 1 else f"keys {keys[0]} … {i}{words}"), name
        checked += 1
    assert checked >= 30


def test_kv_head_by_hand():
    for name, config, trace, _, poll in polls("kv_head"):
        H, kv, h = ints(r"H = (\d+) query heads and H_kv = (\d+) KV heads\. Which KV head does query head h = (\d+)",
                        poll.prompt)
        assert right(poll) == f"KV head {h // (H // kv)}"
        assert f"KV head {h % kv}" in poll.choices                                 # the round-robin mistake
        mine = config.kv_heads < config.n_heads and (H, kv) == (config.n_heads, config.kv_heads)
        assert mine or "published configuration" in poll.prompt
    poll = make_poll("kv_head", TRACES["RoPE GQA, window, long"], 0)             # H = 8, H_kv = 2: its own numbers
    assert "Your settings have H = 8 query heads and H_kv = 2" in poll.prompt


def test_kv_cache_size_by_hand_and_published_figures():
    for name, config, trace, _, poll in polls("kv_cache_size"):
        L, H, kv, d = ints(r"L = (\d+) layers, H = (\d+) query heads, H_kv = (\d+) KV heads of d_head = (\d+)",
                           poll.prompt)
        b = 2 if "bf16" in poll.prompt else 1
        tokens = int(re.search(r"of ([\d,]+) tokens", poll.prompt).group(1).replace(",", ""))
        assert right(poll) == human(2 * L * kv * d * tokens * b)
        assert human(L * kv * d * tokens * b) in poll.choices or human(L * kv * d * tokens * b) == right(poll)
    # the presets as their published config.json files give them (hidden_size / num_attention_heads = d_head)
    assert [(p.layers, p.n_heads, p.n_kv_heads, p.d_head, p.context) for p in
            (PRESETS["Llama 3 8B"], PRESETS["Llama 3 70B"], PRESETS["Qwen2.5-7B"])] == [
        (32, 32, 8, 4096 // 32, 8192), (80, 64, 8, 8192 // 64, 8192), (28, 28, 4, 3584 // 28, 131072)]
    llama2 = Preset("Llama 2 7B", 32, 32, 32, 128, 4096)                   # MHA: H_kv = H = 32
    poll = cache_size_poll_for(llama2, 4096, 2, np.random.default_rng(0))
    assert 2 * 32 * 32 * 128 * 4096 * 2 == 2 ** 31 and right(poll) == "2 GiB"
    assert set(poll.choices) == {"2 GiB", "1 GiB", "64 MiB"}                 # H = H_kv: that mistake is the answer
    llama3 = cache_size_poll_for(PRESETS["Llama 3 8B"], 8192, 2, np.random.default_rng(0))
    assert right(llama3) == "1 GiB" and "4 GiB" in llama3.choices            # 2·32·8·128·8192·2; with H: 4 GiB


def test_online_max_is_the_running_maximum_torch_computes():
    checked = 0
    for name, config, trace, _, poll in polls("online_max", TORCHABLE):
        i, size = ints(r"reads row (\d+) .* blocks of B_c = (\d+)", poll.prompt)
        b, = ints(r"after block (\d+)", poll.prompt)
        h = ints(r"In head (\d+)", poll.prompt)[0] if config.n_heads > 1 else 0
        s = torch_scores(config, trace, h).masked_fill(~torch_mask(config, trace.n), float("-inf")) / config.temperature
        seen = s[i, :(b + 1) * size]
        assert right(poll) == num(seen.max().item()), name
        assert num(s[i, b * size:(b + 1) * size].max().item()) in poll.prompt
        checked += 1
    assert checked >= 15


def test_choices_drop_a_distractor_that_reads_like_the_answer():
    from attention_core.labs.polls.poll import choose
    choices, answer = choose("1.5", ["1.5", "2", "3", "4", "5"], np.random.default_rng(3))
    assert len(choices) == 4 and choices[answer] == "1.5" and choices.count("1.5") == 1
    assert choose("1", ["1", "2"], np.random.default_rng(0)) is None


def test_kv_head_does_not_call_round_robin_wrong_when_it_gives_the_same_head():
    """H = 8, H_kv = 2, h = 2: ⌊2/4⌋ = 0 and 2 mod 2 = 0 agree; the explanation must not say h mod H_kv 'would' deal
    the heads out (as if it gave another answer), and must still say GQA does not deal them in turn."""
    config = Config(sentence=LONG, n_heads=8, n_kv_heads=2, weights="random")
    seen = 0
    for seed in range(12):
        p = make_poll("kv_head", run_forward(config), seed)
        h = int(re.search(r"query head h = (\d+)", p.prompt)[1])
        if h % 2 == h // 4:
            seen += 1
            assert "would deal" not in p.explanation and "happens to give the same head" in p.explanation
        else:
            assert "would deal" in p.explanation
    assert seen


def test_online_max_names_a_one_key_block_as_one_key():
    """n = 3, B_c = 2: block 1 holds key 2 alone: 'key 2', not 'keys 2 … 2'."""
    p = make_poll("online_max", run_forward(Config(sentence="I love you", n_heads=3, mask="sliding_window", window=3,
                                                     score="dot", weights="random")), 0)
    assert not re.search(r"keys (\d+) … \1\b", p.prompt)


def test_attends_does_not_ask_a_row_the_mask_answers_alone():
    """Causal, row 0 sees key 0 only: 'which word does “i” attend to most' is answered by the mask, the other choices
    words it cannot see. Such a row is asked only when no other row fits."""
    for config in (Config(mask="causal"), Config(mask="sliding_window", window=1, sentence="I love you today"),
                   Config(n_heads=2, mask="causal", sentence=LONG, weights="random")):
        trace = run_forward(config)
        mask = trace["mask"].value
        for seed in range(6):
            p = make_poll("attends", trace, seed)
            if p is None:
                continue
            i = int(re.search(r"row (\d+) of A", p.prompt)[1])
            assert mask[i].sum() >= 2 or all(mask[r].sum() < 2 for r in range(trace.n)), (config, p.prompt)


# ---- a pinned question (a lesson stop's poll_at) -----------------------------------------------------------

def by_hand_alibi(h: int, heads: int, i: int, j: int) -> float:
    return -(2 ** (-8 * (h + 1) / heads)) * abs(i - j)                       # docs/notation.md, H a power of two


def torch_values(config: Config, trace, h: int) -> torch.Tensor:
    """The value rows query head h reads: V's columns of KV head ⌊h / g⌋."""
    d, g = config.d_v, config.n_heads // config.kv_heads
    return torch.tensor(trace["v"].value[:, (h // g) * d:(h // g + 1) * d])


def closest(config: Config, trace, h: int, i: int) -> int:
    c = torch_weights(config, trace, h)[i] @ torch_values(config, trace, h)
    return int(torch.linalg.vector_norm(torch_values(config, trace, h) - c, dim=1).argmin())


def top_two_renormalised(sentence: str) -> str:
    """p′ of the small model's most probable next token when top-k keeps 2 (T = 1)."""
    p = np.sort(softmax(lm_by_hand(sentence)[2]))
    return num(p[-1] / p[-2:].sum())


def previous_token_head(sentence: str) -> str:
    """The layer-0 head with the largest mean weight on the token just before."""
    a0 = lm_by_hand(sentence)[3][0]
    n = a0.shape[-1]
    return f"head {int(np.argmax([np.mean([a0[h, i, i - 1] for i in range(1, n)]) for h in range(a0.shape[0])]))}"


PINNED = [  # (kind, setting, at, what the prompt says, the right choice computed here)
    ("attends", "heads 4", {"row": "2", "head": "1"}, "row 2 of A_1",
     lambda c, t: t.token_labels()[int(torch_weights(c, t, 1)[2].argmax())]),
    ("shape", "default", {"step": "w_k"}, "shape of W_K", lambda c, t: f"{t['x'].shape[1]} × {c.d_k}"),
    ("shape", "default", {"step": "q", "n": "7"}, "a sentence of 7 words", lambda c, t: f"7 × {c.d_k}"),
    ("which_head", "heads 8, causal", {"row": "3", "col": "1"}, "A_h[3,1]",
     lambda c, t: f"head {int(torch.stack([torch_weights(c, t, h)[3, 1] for h in range(8)]).argmax())}"),
    ("scaled_score", "heads 4", {"row": "2", "col": "3", "head": "1"}, "Ŝ_1[2,3]",
     lambda c, t: num(torch_scores(c.replace(score="dot"), t, 1)[2, 3].item() / math.sqrt(c.d_k))),
    ("masked_weight", "heads 8, causal", {"row": "0", "col": "2", "head": "5"}, "A_5[0,2]", lambda c, t: "0"),
    ("rope_shift", "RoPE, causal", {"row": "2", "col": "0", "shift": "10"}, "Δ = 10",
     lambda c, t: num(torch_scores(c, t, 0, np.arange(t.n) + 10)[2, 0].item())),
    ("window_keys", "MQA H_kv 1, window 2", {"row": "1"}, "query i = 1", lambda c, t: "keys 0 … 1 (i, love)"),
    ("kv_head", "GQA H_kv 2, causal", {"head": "2"}, "query head h = 2", lambda c, t: f"KV head {2 // 2}"),
    ("kv_head", "default", {"model": "Llama 3 8B", "head": "5"}, "Llama 3 8B", lambda c, t: f"KV head {5 // 4}"),
    ("kv_cache_size", "default", {"model": "Qwen2.5-7B", "tokens": "32768", "bytes": "1"}, "32,768 tokens",
     lambda c, t: human(2 * 28 * 4 * 128 * 32768 * 1)),
    ("online_max", "heads 8, causal", {"block_size": "2", "block": "1", "row": "3", "head": "2"}, "after block 1",
     lambda c, t: num(torch_scores(c, t, 2)[3].max().item())),
    ("similar", "default", {"step": "x"}, "X (the word vectors plus the positions)",
     lambda c, t: "“i” and “you”" if (lambda m: m.fill_diagonal_(-2).argmax().item() == 2)(
         torch.nn.functional.cosine_similarity(torch.tensor(t["x"].value)[:, None], torch.tensor(t["x"].value)[None],
                                               dim=-1)) else None),
    ("reorder", "heads 4", {"row": "0", "col": "3", "head": "2"}, "A_2[0,3]",
     lambda c, t: num(torch_weights(c, t, 2)[0, 3].item())),
    ("closest_value", "heads 4", {"row": "2", "head": "3"}, "row 2 of A_3",
     lambda c, t: f"v_{closest(c, t, 3, 2)} (“{t.token_labels()[closest(c, t, 3, 2)]}”)"),
    ("alibi_bias", "ALiBi, causal", {"head": "2", "row": "3", "col": "1"}, "B_2[3,1]",
     lambda c, t: num(by_hand_alibi(2, 4, 3, 1))),
    # inside a transformer: by hand in tests/test_transformer_polls.py (the block's layer 0, the small model)
    ("residual_add", "default", {"row": "2", "col": "3"}, "X₀′[2,3]", lambda c, t: num(sum(
        m[2, 3] for m in block_by_hand(t)))),
    ("temperature_prob", "short", {"temperature": "2"}, "T = 2",
     lambda c, t: num(max(softmax(lm_by_hand(c.sentence)[2] / 2)))),
    ("top_k_prob", "default", {"k": "2"}, "top-k = 2", lambda c, t: top_two_renormalised(c.sentence)),
    ("copy_head", "default", {"role": "previous"}, "layer 0", lambda c, t: previous_token_head(c.sentence)),
]




def test_every_kind_has_a_pinned_case():
    assert {kind for kind, *_ in PINNED} == set(POLL_KINDS)


@pytest.mark.parametrize("kind, name, at, says, expect", PINNED, ids=[f"{p[0]}-{p[1]}" for p in PINNED])
def test_a_pinned_poll_asks_its_cell_and_marks_the_answer_computed_here(kind, name, at, says, expect):
    config, trace = GRID[name], TRACES[name]
    poll = make_poll(kind, trace, 0, at=at)
    assert poll is not None and poll.kind == kind, (kind, at)
    assert says in poll.prompt, poll.prompt
    assert right(poll) == expect(config, trace), (poll.choices, right(poll))
    for seed in (1, 2, 7):                                   # the pinned question stays; only the answer's place moves
        other = make_poll(kind, trace, seed, at=at)
        assert other.prompt == poll.prompt and right(other) == right(poll)
        assert sorted(other.choices) == sorted(poll.choices)


@pytest.mark.parametrize("kind", POLL_KINDS)
def test_an_empty_pin_is_todays_draw_and_a_bad_pin_is_none(kind):
    trace = TRACES["heads 8, causal"]
    for seed in SEEDS:
        assert make_poll(kind, trace, seed, at={}) == make_poll(kind, trace, seed)
    for bad in ({"nope": "1"}, ["row"], "row=1", {"row": 1}, {1: "1"}):                # a key it does not read, not text
        assert make_poll(kind, trace, 0, at=bad) is None, (kind, bad)


BAD_PINS = [  # (kind, setting, at): a value these settings cannot ask
    ("attends", "default", {"row": "4"}), ("attends", "default", {"row": "x"}), ("attends", "default", {"head": "0"}),
    ("attends", "heads 4", {"row": "0", "head": "4"}),
    ("shape", "default", {"step": "nope"}), ("shape", "default", {"step": "q_heads"}), ("shape", "default", {"n": "0"}),
    ("shape", "default", {"n": "10000"}),
    ("which_head", "heads 8, causal", {"row": "0", "col": "9"}), ("which_head", "heads 8, causal", {"row": "-1"}),
    ("scaled_score", "default", {"row": "0", "col": "1", "head": "0"}), ("scaled_score", "default", {"row": "1.5"}),
    ("masked_weight", "heads 8, causal", {"row": "2", "col": "1"}),               # not hidden: below the diagonal
    ("masked_weight", "heads 8, causal", {"row": "0", "col": "1", "head": "8"}),
    ("rope_shift", "RoPE, causal", {"row": "1", "col": "1"}),                     # i = j: nothing to move
    ("rope_shift", "RoPE, causal", {"shift": "0"}), ("rope_shift", "additive", {"row": "0", "col": "1"}),
    ("window_keys", "MQA H_kv 1, window 2", {"row": "7"}),
    ("kv_head", "GQA H_kv 2, causal", {"head": "4"}), ("kv_head", "default", {"model": "Llama 2 7B"}),
    ("kv_cache_size", "default", {"model": "Llama 3 8B", "tokens": "9000"}),     # past its context
    ("kv_cache_size", "default", {"bytes": "3"}), ("kv_cache_size", "default", {"model": "GPT-5"}),
    ("online_max", "heads 8, causal", {"block": "0"}), ("online_max", "heads 8, causal", {"block_size": "4"}),
    ("online_max", "heads 8, causal", {"head": "8"}),
    ("similar", "default", {"step": "q"}), ("similar", "one word, heads 4", {"step": "x_embed"}),
    ("reorder", "default", {"order": "0 1 2 3"}), ("reorder", "default", {"order": "0 1 2"}),
    ("reorder", "default", {"order": "3 2 1 1"}), ("reorder", "default", {"head": "0"}),
    ("closest_value", "default", {"row": "9"}), ("closest_value", "default", {"head": "0"}),
    ("alibi_bias", "default", {"row": "1", "col": "0"}),                          # no ALiBi in these settings
    ("alibi_bias", "ALiBi, causal", {"row": "1", "col": "2"}),                    # a key the mask hides
    ("alibi_bias", "ALiBi, causal", {"row": "2", "col": "2"}),                    # distance 0: nothing added
    ("residual_add", "default", {"row": "4"}), ("residual_add", "default", {"col": "50"}),
    ("temperature_prob", "default", {"temperature": "1"}), ("top_k_prob", "default", {"k": "11"}),
    ("copy_head", "default", {"role": "induction"}),                               # its last word comes only once
    ("copy_head", "two words", {"role": "previous"}), ("copy_head", "default", {"role": "nope"}),
]


@pytest.mark.parametrize("kind, name, at", BAD_PINS, ids=[f"{k}-{n}-{a}" for k, n, a in BAD_PINS])
def test_a_pin_these_settings_cannot_ask_is_none(kind, name, at):
    assert make_poll(kind, TRACES[name], 0, at=at) is None


# ---- the new kinds against an independent computation ------------------------------------------------------

def test_similar_is_the_largest_cosine_torch_computes():
    checked = 0
    for name, config, trace, _, poll in polls("similar"):
        x = torch.tensor(trace["x_embed"].value)
        cos = torch.nn.functional.cosine_similarity(x[:, None], x[None], dim=-1).fill_diagonal_(-2)
        i, j = divmod(int(cos.argmax()), trace.n)
        labels = trace.token_labels()
        assert right(poll) == f"“{labels[min(i, j)]}” and “{labels[max(i, j)]}”", name
        checked += 1
    assert checked >= 15


def test_reorder_is_the_weight_torch_computes_on_both_sentences():
    checked = 0
    for name, config, trace, _, poll in polls("reorder", TORCHABLE):
        h, i, j = ints(r"[Ww]hat weight A(?:_(\d+))?\[(\d+),(\d+)\]", poll.prompt)
        assert right(poll) == num(torch_weights(config, trace, h or 0)[i, j].item()), name
        earlier = re.search(r"the sentence “([^”]+)” gave A(?:_\d+)?\[(\d+),(\d+)\] = (\S+?)[: ]", poll.prompt)
        before = run_forward(config.replace(sentence=earlier[1]))
        assert earlier[4] == num(torch_weights(config, before, h or 0)[int(earlier[2]), int(earlier[3])].item())
        if config.positional == "none" and config.mask == "none":
            assert right(poll) == earlier[4]                                   # it moves with its words
        checked += 1
    assert checked >= 10


def test_closest_value_is_the_nearest_value_row_to_c_i_torch_computes():
    checked = 0
    for name, config, trace, _, poll in polls("closest_value", TORCHABLE):
        i, h = ints(r"[Rr]ow (\d+) of A(?:_(\d+))?", poll.prompt)
        j = closest(config, trace, h or 0, i)
        assert right(poll) == f"v_{j} (“{trace.token_labels()[j]}”)", name
        assert f"v_{i} (“{trace.token_labels()[i]}”)" in poll.choices                # the query's own value row
        checked += 1
    assert checked >= 15


def test_alibi_bias_is_minus_the_slope_times_the_distance():
    checked = 0
    for name, config, trace, _, poll in polls("alibi_bias"):
        h, i, j = ints(r"B_(\d+)\[(\d+),(\d+)\]\?", poll.prompt)
        assert right(poll) == num(by_hand_alibi(h, config.n_heads, i, j)), name
        assert num(-by_hand_alibi(h, config.n_heads, i, j)) in poll.choices            # the sign turned
        checked += 1
    assert checked >= 3


def test_a_pinned_shape_poll_counts_one_word_as_one():
    one = make_poll("shape", run_forward(Config()), 0, {"step": "q", "n": "1"})
    assert one.prompt.startswith("Type a sentence of 1 word instead of these 4.")
    back = make_poll("shape", run_forward(Config(sentence="hello")), 0, {"step": "q", "n": "10"})
    assert back.prompt.startswith("Type a sentence of 10 words instead of this one.")


def test_the_reorder_poll_says_alibi_reads_distances():
    """ALiBi without a mask, the sentence reversed: every distance from the query is kept, so the weight stays, for
    that reason (ALiBi writes the distance between two words, not where a word stands)."""
    trace = run_forward(Config(positional="alibi", n_heads=2))
    p = make_poll("reorder", trace, 1)
    assert "ALiBi's bias writes how far apart two words stand" in p.explanation
    assert "each word stands as far from this query in both orders, so the weight stays" in p.explanation
    assert "where a word stands" not in p.explanation
