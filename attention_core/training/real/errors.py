"""What can go wrong in bringing a real checkpoint in, each a class whose message says what to do.

Every one is a RealModelError, so a page catches one class and keeps the model it had (the previous state):

    NoNetwork        the hub cannot be reached (or HF_HUB_OFFLINE is set) and the model is not in the cache
    GatedModel       the model needs an accepted licence and a token (HF_TOKEN)
    ModelNotFound    no such model on the hub, no such folder
    NotEnoughMemory  its float32 weights do not fit in the memory free now (how much it needs is said)
    Unsupported      an architecture or an option the project does not implement (named: sliding window, MoE, …)
    CorruptFile      a file that is not what its name says (a truncated download, a bad header)
"""
from __future__ import annotations


class RealModelError(Exception):
    """A real checkpoint could not be loaded; str(error) says why and what to do."""


class NoNetwork(RealModelError):
    pass


class GatedModel(RealModelError):
    pass


class ModelNotFound(RealModelError):
    pass


class NotEnoughMemory(RealModelError):
    def __init__(self, message: str, needed: int, available: int):
        super().__init__(message)
        self.needed, self.available = needed, available          # bytes


class Unsupported(RealModelError):
    pass


class CorruptFile(RealModelError):
    pass


def gigabytes(n_bytes: int) -> str:
    """'1.24 GB' (10^9 bytes, as the hub and the OS say sizes), or MB below 1 GB.

    >>> gigabytes(497_774_208), gigabytes(1_235_814_400)
    ('498 MB', '1.24 GB')
    """
    return f"{n_bytes / 1e9:.2f} GB" if n_bytes >= 1e9 else f"{n_bytes / 1e6:.0f} MB"
