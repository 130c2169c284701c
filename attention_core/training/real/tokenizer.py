"""A checkpoint's own tokenizer (its tokenizer.json, read by the `tokenizers` library, imported when used).

Text -> ids, and each id's piece as the model stores it: GPT-2's byte-level BPE writes a space as "Ġ" at the start
of the piece that follows it ("Ġcat"), SentencePiece-style vocabularies as "▁". `pieces` keeps them as stored, so
a page can show them and say why.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .errors import CorruptFile, Unsupported


@dataclass(frozen=True)
class Encoded:
    ids: tuple[int, ...]
    pieces: tuple[str, ...]       # the vocabulary's own strings ("Ġcat")
    truncated: int = 0            # tokens cut off past the model's context
    notices: tuple[str, ...] = () # what the text lost on the way in, said as the small model's pages say it
    names: object = None          # what names these ids when a text's own (the small model: its words), else None


class CheckpointTokenizer:
    def __init__(self, folder: Path):
        path = Path(folder) / "tokenizer.json"
        if not path.is_file():
            raise Unsupported(f"No tokenizer.json in {folder}: the project reads the fast tokenizer's single file "
                              "(vocab.json + merges.txt or tokenizer.model alone are not read). Pick a model that "
                              "publishes tokenizer.json, or save one with transformers' save_pretrained.")
        from tokenizers import Tokenizer

        try:
            self._tok = Tokenizer.from_file(str(path))
        except Exception as error:                                   # noqa: BLE001 (the library's own message)
            raise CorruptFile(f"tokenizer.json in {folder} cannot be read ({error}). Download the model again.") from None

    @property
    def vocab_size(self) -> int:
        return self._tok.get_vocab_size()

    def encode(self, text: str, max_tokens: int | None = None, special: bool = True) -> Encoded:
        """The text's ids and pieces, with the special tokens the tokenizer itself adds (Llama 3's
        <|begin_of_text|>; GPT-2 adds none), as transformers' tokenizer(text) does; cut to max_tokens (the count cut
        is kept)."""
        enc = self._tok.encode(text, add_special_tokens=special)
        ids, pieces = list(enc.ids), list(enc.tokens)
        cut = max(0, len(ids) - max_tokens) if max_tokens else 0
        return Encoded(tuple(ids[:len(ids) - cut]), tuple(pieces[:len(ids) - cut]), cut)

    def piece(self, token_id: int) -> str:
        return self._tok.id_to_token(int(token_id))

    def decode(self, ids) -> str:
        return self._tok.decode([int(i) for i in ids])
