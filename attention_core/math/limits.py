"""The bounds every size stays within, the one error type, and the checks that say what to change.

Every size is bounded on the server, so that no request (a tampered URL, a crafted widget value) can ask
for a matrix that exhausts memory. A ConfigError's message says what to change; the math below raises it
for arguments it cannot compute with, the Config (forward/config.py) for settings that cannot combine.
"""
from __future__ import annotations

MAX_CHARS = 1000        # characters in a sentence
MAX_TOKENS = 128        # tokens after tokenizing
MAX_DIM = 512           # any width: d_model, d_k, d_v, h * d_k ...
MAX_HEADS = 16
MAX_GLOVE_VOCAB = 400_000
MIN_GLOVE_VOCAB = 1_000
MAX_UPLOAD_BYTES = 2_000_000



class ConfigError(ValueError):
    """A setting the explorer cannot compute with; the message says what to change."""


def divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def say_list(items: list) -> str:
    """[1, 2, 5] -> '1, 2 or 5'."""
    items = [str(i) for i in items]
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " or " + items[-1]


def _check_choice(name: str, value, choices: tuple) -> None:
    if value not in choices:
        raise ConfigError(f"{name}={value!r} is not one of {say_list([repr(c) for c in choices])}.")


def _check_int(name: str, value, low: int, high: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise ConfigError(f"{name} must be a whole number, not {value!r}.")
    if not low <= value <= high:
        raise ConfigError(f"{name}={value:,} is out of range; use {low:,} to {high:,}.")


def check_heads(d_model: int, n_heads: int, why: str = "") -> None:
    """Heads split d_model evenly: torch.nn.MultiheadAttention (and seed 002's layer) require it, as
    their W_q is (d_model, d_model). The explorer's own forward pass does not: its W_q is
    (d_model, H·d_k) with d_k a setting of its own."""
    if d_model % n_heads:
        raise ConfigError(f"d_model={d_model}{why} is not divisible by n_heads={n_heads}, and PyTorch's "
                          f"multi-head layer splits d_model into equal heads: set the number of heads to "
                          f"{say_list([d for d in divisors(d_model) if d <= MAX_HEADS])}.")
