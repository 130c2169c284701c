"""The tokens page's views: the sentence cut into the model's pieces, their ids, and why a piece starts with "Ġ" or
"▁"; for the project's small model, whose tokens are the sentence's distinct words (no BPE), what that rule is."""
from __future__ import annotations

from types import SimpleNamespace

import streamlit as st

from ..cache import beside
from ..text import md_escape

SPACE_MARKS = {"Ġ": "Why “Ġ”: this vocabulary is byte-level BPE, GPT-2's scheme: it first turns every byte into a "
                    "printable character, and the space byte becomes “Ġ”. So “Ġcat” is the piece “ cat”, a space and the word; “cat” without it is the "
                    "same word at the start of a text or glued to what comes before, and a different token.",
               "▁": "Why “▁”: this vocabulary (SentencePiece-style BPE) writes a space as “▁” at the start of the piece "
                    "that follows it. So “▁cat” is “ cat”, a space and the word; a word with and without the space "
                    "before it are different tokens."}


def small(trace) -> bool:
    """The project's small model (training/real/small.py): each distinct word one token, no BPE."""
    from attention_core.training.real.small import is_small
    return is_small(SimpleNamespace(config=trace.facts["checkpoint"]))


def reading(model) -> str:
    """How the model's text becomes ids: its tokenizer in one paragraph."""
    from attention_core.training.real.small import is_small
    from .model import vocabulary
    if not is_small(model):
        return ("A model does not read words. Its tokenizer cuts the text into **pieces** from a fixed vocabulary "
                f"(here {vocabulary(model)}), learned from text by byte-pair encoding (BPE): the most frequent pairs of "
                "symbols were merged into one piece, again and again.")
    c = model.config
    return ("A model does not read words: it reads token ids. This one's tokenizer is the simplest there is, with no "
            f"BPE and no vocabulary learned from text: each distinct word of the sentence becomes one of its {c.vocab} "
            "tokens, numbered by first appearance (the first word is token 0, the next new word token 1, and so on); "
            "words are lower-cased (“The” is “the”), punctuation and other symbols are set aside, and it reads at "
            f"most the last {c.n_ctx} words, with at most {c.vocab} distinct. "
            "A checkpoint from Hugging Face (pick one above) cuts text into pieces of a vocabulary learned by "
            "byte-pair encoding instead.")


def pieces_table(trace) -> None:
    """One row per token: its position, its piece as the vocabulary stores it, its id and the text it stands for
    (the small model: its position, its word and its id); built once per trace (ui/cache.py beside), as Arrow."""
    def make():
        import pyarrow as pa
        f = trace.facts
        i, ids = list(range(len(f["ids"]))), [int(t) for t in f["ids"]]
        if small(trace):
            return pa.table({"i": i, "word": list(f["pieces"]), "id": ids})
        return pa.table({"i": i, "piece (as stored)": list(f["pieces"]), "id": ids,
                         "text": [repr(t) for t in texts(trace)]})
    rows = beside(trace, "pieces", None, make)
    st.dataframe(rows, hide_index=True, width="content", height=min(35 * (rows.num_rows + 1) + 3, 420))  # rows of 35 px, no empty one


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
    if small(trace):
        return words_said(trace)
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


def words_said(trace) -> str:
    """The small model's ids in words: how many, which word came again with its first id, the ids no word got."""
    ids, pieces, vocab = trace.facts["ids"], trace.facts["pieces"], trace.facts["checkpoint"].vocab
    distinct = len(set(ids))
    again = next((i for i in range(len(ids)) if ids[i] in ids[:i]), None)
    said = [f"{plural(len(ids), 'token')} for {plural(len(ids), 'word')}, {distinct} distinct: one token per word, "
            "never a piece of one."]
    if again is not None:
        said.append(f"A word that comes again keeps the id it got the first time: “{md_escape(pieces[again])}” at "
                    f"position {again} is token {ids[again]} again.")
    if distinct == vocab - 1:
        said.append(f"Token {distinct} was given no word: the model still scores it as the next token, under the "
                    f"name “token {distinct}”.")
    elif distinct < vocab:
        said.append(f"Tokens {distinct} to {vocab - 1} were given no word: the model still scores them as the next "
                    "token, under the names “token k”.")
    said.append("The model never sees the words, only these ids: row id of its embedding table E is where each token "
                "starts. It was trained on random ids (the copy task), so which word got which id means nothing to it; "
                "what it can use is which ids repeat.")
    return " ".join(said)
