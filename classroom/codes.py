"""A room's code and its teacher's secret.

The code is what a teacher reads aloud and students type: 6 characters from 31 that cannot be confused
(no 0/O, 1/I/L), about 8.9·10⁸ codes, so a guessed code almost never opens a room. The secret is what
only the teacher holds: 24 random bytes, kept in the teacher's session (and in the teacher's own link);
the room stores only its SHA-256, and compares in constant time.

    >>> normal_code(" ab-c 2d9 ")
    'ABC2D9'
    >>> normal_code("ABC0D9") is None          # 0 is not in the alphabet (it reads as O)
    True
    >>> same_secret("s3cret", digest("s3cret")), same_secret("guess", digest("s3cret"))
    (True, False)
"""
from __future__ import annotations

import hashlib
import hmac
import secrets

ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"      # 31 characters: no 0, O, 1, I, L
LENGTH = 6


def new_code() -> str:
    return "".join(secrets.choice(ALPHABET) for _ in range(LENGTH))


def normal_code(text) -> str | None:
    """A typed code, upper-cased, with spaces and dashes removed; None if it cannot be a code."""
    if not isinstance(text, str) or len(text) > 40:
        return None
    code = "".join(ch for ch in text.upper() if ch not in " -\t")
    if len(code) != LENGTH or any(ch not in ALPHABET for ch in code):
        return None
    return code


def new_secret() -> str:
    return secrets.token_urlsafe(24)


def digest(secret: str) -> str:
    return hashlib.sha256(str(secret).encode("utf-8")).hexdigest()


def same_secret(secret, stored_digest: str) -> bool:
    if not isinstance(secret, str) or not secret or not stored_digest:
        return False
    return hmac.compare_digest(digest(secret), stored_digest)
