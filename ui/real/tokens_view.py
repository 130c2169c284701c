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
    tok = f["tokenizer"]
    rows = [{"i": i, "piece (as stored)": piece, "id": token_id, "text": repr(tok.decode([token_id]))}
            for i, (piece, token_id) in enumerate(zip(f["pieces"], f["ids"]))]
    st.dataframe(rows, hide_index=True, width="content", height=min(36 * len(rows) + 40, 420))


def why_marks(trace) -> str:
    """Why some pieces start with a mark, for the marks this sentence's pieces carry (and the special tokens)."""
    pieces = trace.facts["pieces"]
    parts = [why for mark, why in SPACE_MARKS.items() if any(mark in p for p in pieces)]
    first = trace.facts["ids"][0]
    specials = [p for p in pieces if p.startswith("<") and p.endswith(">") and len(p) > 2]
    if specials:
        parts.append(f"“{md_escape(specials[0])}” (id {first}) is not in your text: the tokenizer puts it first, as "
                     "the model saw at the start of every text it was trained on.")
    n, words = len(pieces), len(trace.facts["tokenizer"].decode(trace.facts["ids"]).split())
    parts.append(f"{n} tokens for {words} words: a common word is one piece, a rare one several. The model never "
                 "sees letters, only these ids: row id of its embedding table E is where each token starts.")
    return " ".join(parts)
