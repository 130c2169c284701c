"""The tokens page's views: the sentence cut into the model's pieces, their ids, and why a piece starts with "Ġ" or
"▁"."""
from __future__ import annotations

import streamlit as st

from ..cache import beside
from ..text import md_escape

SPACE_MARKS = {"Ġ": "Why “Ġ”: this vocabulary is byte-level BPE, GPT-2's scheme: it first turns every byte into a "
                    "printable character, and the space byte becomes “Ġ”. So “Ġcat” is the piece “ cat”, a space and the word; “cat” without it is the "
                    "same word at the start of a text or glued to what comes before, and a different token.",
               "▁": "Why “▁”: this vocabulary (SentencePiece-style BPE) writes a space as “▁” at the start of the piece "
                    "that follows it. So “▁cat” is “ cat”, a space and the word; a word with and without the space "
                    "before it are different tokens."}


def pieces_table(trace) -> None:
    """One row per token: its position, its piece as the vocabulary stores it, its id and the text it stands for."""
    def make():                                     # once per trace (ui/cache.py beside): Arrow, as drawn
        import pyarrow as pa
        f = trace.facts
        return pa.table({"i": list(range(len(f["ids"]))), "piece (as stored)": list(f["pieces"]),
                         "id": [int(i) for i in f["ids"]], "text": [repr(t) for t in texts(trace)]})
    rows = beside(trace, "pieces", None, make)
    st.dataframe(rows, hide_index=True, width="content", height=min(36 * rows.num_rows + 40, 420))


def texts(trace) -> list[str]:
    """The text each token adds to the decoded text so far (a lone piece decodes without its leading space)."""
    tok, ids, out, before = trace.facts["tokenizer"], trace.facts["ids"], [], ""
    for i in range(len(ids)):
        now = tok.decode(ids[:i + 1])
        out.append(now[len(before):] if now.startswith(before) else tok.decode([ids[i]]))
        before = now
    return out


def plural(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")


def why_marks(trace, sentence: str) -> str:
    """Why some pieces start with a mark, for the marks this sentence's pieces carry, and the special tokens: the
    tokenizer's own first one (Llama's <s>) or one typed in the text (GPT-2's <|endoftext|> is read as one id)."""
    tok, pieces, ids = trace.facts["tokenizer"], trace.facts["pieces"], trace.facts["ids"]
    parts = [why for mark, why in SPACE_MARKS.items() if any(mark in p for p in pieces)]
    own = list(tok.encode("").ids)                          # what the tokenizer puts before any text
    first = len(own) if list(ids[:len(own)]) == own else 0
    if first:
        parts.append(f"“{md_escape(pieces[0])}” (id {ids[0]}) is not in your text: the tokenizer puts it first, as "
                     "the model saw at the start of every text it was trained on.")
    special = [(p, i) for p, i in zip(pieces[first:], ids[first:]) if p.startswith("<") and p.endswith(">") and len(p) > 2]
    typed = [(p, i) for p, i in special if p in sentence]
    unknown = [(p, i) for p, i in special if p not in sentence]
    if typed:
        parts.append(f"“{md_escape(typed[0][0])}” (id {typed[0][1]}) is a special token typed in your text: the "
                     "tokenizer reads it as one id, not as its letters.")
    if unknown:
        parts.append(f"“{md_escape(unknown[0][0])}” (id {unknown[0][1]}) stands for text this vocabulary has no piece "
                     "for.")
    n, words = len(pieces), len(tok.decode(ids).split())   # the words of the text the model reads (cut or not)
    parts.append(f"{plural(n, 'token')} for {plural(words, 'word')}"
                 + (f" (“{md_escape(pieces[0])}” counts too)" if first else "")
                 + ": a common word is one piece, a rare one several, and a punctuation mark is often a piece of "
                 "its own. The model never sees letters, only these ids: row id of its embedding table E is where "
                 "each token starts.")
    return " ".join(parts)
