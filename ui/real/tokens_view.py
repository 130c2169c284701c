"""The tokens page's views: the sentence cut into the model's pieces, their ids, and why a piece starts with "Ġ" or
"▁"."""
from __future__ import annotations

import streamlit as st

from ..text import md_escape

SPACE_MARKS = {"Ġ": "Why “Ġ”: GPT-2's byte-level BPE first turns every byte into a printable character, and the space "
                    "byte becomes “Ġ”. So “Ġcat” is the piece “ cat”, a space and the word; “cat” without it is the "
                    "same word at the start of a text or glued to what comes before, and a different token.",
               "▁": "Why “▁”: this vocabulary (SentencePiece-style BPE) writes a space as “▁” at the start of the piece "
                    "that follows it. So “▁cat” is “ cat”, a space and the word; a word with and without the space "
                    "before it are different tokens."}


def pieces_table(trace) -> None:
    """One row per token: its position, its piece as the vocabulary stores it, its id and the text it stands for."""
    f = trace.facts
    rows = [{"i": i, "piece (as stored)": piece, "id": token_id, "text": repr(text)}
            for i, (piece, token_id, text) in enumerate(zip(f["pieces"], f["ids"], texts(trace)))]
    st.dataframe(rows, hide_index=True, width="content", height=min(36 * len(rows) + 40, 420))


def texts(trace) -> list[str]:
    """The text each token adds to the decoded text so far (a lone piece decodes without its leading space)."""
    tok, ids, out, before = trace.facts["tokenizer"], trace.facts["ids"], [], ""
    for i in range(len(ids)):
        now = tok.decode(ids[:i + 1])
        out.append(now[len(before):] if now.startswith(before) else tok.decode([ids[i]]))
        before = now
    return out


def why_marks(trace, sentence: str) -> str:
    """Why some pieces start with a mark, for the marks this sentence's pieces carry (and the special tokens)."""
    pieces = trace.facts["pieces"]
    parts = [why for mark, why in SPACE_MARKS.items() if any(mark in p for p in pieces)]
    first = trace.facts["ids"][0]
    specials = [p for p in pieces if p.startswith("<") and p.endswith(">") and len(p) > 2]
    if specials:
        parts.append(f"“{md_escape(specials[0])}” (id {first}) is not in your text: the tokenizer puts it first, as "
                     "the model saw at the start of every text it was trained on.")
    n, words = len(pieces), len(sentence.split())
    parts.append(f"{n} tokens for {words} words: a common word is one piece, a rare one several. The model never "
                 "sees letters, only these ids: row id of its embedding table E is where each token starts.")
    return " ".join(parts)
