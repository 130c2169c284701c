"""From a sentence to tokens, and what happens to words a vocabulary does not know.

Tokens are lower-case runs of letters and digits (any script), with inner apostrophes
kept ("don't"). Punctuation, emoji and symbols are not words: they are set aside and
reported, never silently lost.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .limits import MAX_TOKENS, ConfigError

WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")
UNK = "<unk>"


def tokenize(sentence: str) -> tuple[list[str], list[str]]:
    """'I love you, today!' -> (['i', 'love', 'you', 'today'], [',', '!'])."""
    tokens = [t.replace("’", "'") for t in WORD.findall(sentence.lower())]
    leftover = WORD.sub(" ", sentence.lower())
    skipped = [c for c in leftover if not c.isspace()]
    return tokens, skipped


def count(k: int, word: str) -> str:
    """'1 word', '3 words': a number with its noun, singular for 1."""
    return f"{k} {word}{'' if k == 1 else 's'}"


def set_aside(skipped) -> str:
    """The notice for characters that are not words: each distinct one in quotes, with how often it occurs, so
    that a comma set aside is not read as the list's own comma.

    >>> set_aside([",", ",", ",", ",", "."])
    'Not words, set aside: “,” (4 times), “.”.'
    """
    counts = {c: list(skipped).count(c) for c in dict.fromkeys(skipped)}
    shown = [f"“{c}”" + (f" ({k} times)" if k > 1 else "") for c, k in list(counts.items())[:20]]
    return "Not words, set aside: " + ", ".join(shown) + (", …" if len(counts) > 20 else "") + "."


@dataclass(frozen=True)
class Tokens:
    words: tuple[str, ...]          # what the rows of X are called (an unknown word under "unk" keeps its text)
    unknown: tuple[str, ...]        # words the vocabulary does not have (dropped, or mapped to <unk>)
    skipped: tuple[str, ...]        # characters that are not part of any word


def resolve(sentence: str, known, policy: str) -> Tokens:
    """Tokenize and apply the unknown-word policy ('drop' as seed 000 does, or 'unk').

    `known(word) -> bool` says whether the vocabulary has a word.
    """
    tokens, skipped = tokenize(sentence)
    if not tokens:
        what = f" (only {''.join(skipped[:20])!s})" if skipped else ""
        raise ConfigError(f"The sentence has no words{what}: type letters or digits.")
    unknown = [t for t in tokens if not known(t)]
    if policy == "drop":
        words = [t for t in tokens if known(t)]
        if not words:
            raise ConfigError(f"None of the words ({', '.join(list(dict.fromkeys(unknown))[:8])}) is in the vocabulary, so "
                              f"nothing is left: use other words, switch unknown words to <unk>, "
                              f"or pick another embedding source.")
    else:
        words = tokens
    if len(words) > MAX_TOKENS:
        raise ConfigError(f"The sentence has {len(words)} tokens; the limit is {MAX_TOKENS}. Shorten it.")
    return Tokens(tuple(words), tuple(dict.fromkeys(unknown)), tuple(skipped))
