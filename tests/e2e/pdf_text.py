"""The text of a PDF that chromium printed, read with the standard library only (no PDF package is installed):
every Flate stream inflated, each font's ToUnicode map read, and each text-showing string of the page contents
decoded through the map of the font in force. Enough for Skia's PDFs (chromium's page.pdf()), not a general
reader. Words are kept apart where the PDF moves the pen; a test looks for a phrase with spaces squeezed out."""
from __future__ import annotations

import re
import zlib

OBJ = re.compile(rb"(\d+) 0 obj(.*?)endobj", re.S)
# a font chosen (/F6 14 Tf), a string shown (<0012> Tj, [<00>-3<01>] TJ), the pen moved (Td, Tm, ...)
SHOW = re.compile(rb"/(F\d+)\s+[\d.]+\s+Tf|<([0-9A-Fa-f]*)>\s*Tj|\[(.*?)\]\s*TJ|(Td|Tm|TD|T\*|ET)", re.S)
STREAM = re.compile(rb"stream\r?\n(.*?)\r?\nendstream", re.S)


def _objects(pdf: bytes) -> dict[int, tuple[bytes, bytes | None]]:
    """object number -> (its dictionary, its stream inflated, or None)."""
    out = {}
    for m in OBJ.finditer(pdf):
        body = m.group(2)
        s = STREAM.search(body)
        data = None
        if s:
            data = s.group(1)
            if b"/FlateDecode" in body[:s.start()]:
                try:
                    data = zlib.decompress(data)
                except zlib.error:
                    data = None
        out[int(m.group(1))] = (body[:s.start()] if s else body, data)
    return out


def _cmap(text: bytes) -> dict[int, str]:
    def u(h: bytes) -> str:
        return bytes.fromhex(h.decode()).decode("utf-16-be", errors="replace")
    out = {}
    for block in re.findall(rb"beginbfchar(.*?)endbfchar", text, re.S):
        for src, dst in re.findall(rb"<([0-9A-Fa-f]+)>\s*<([0-9A-Fa-f]*)>", block):
            out[int(src, 16)] = u(dst)
    for block in re.findall(rb"beginbfrange(.*?)endbfrange", text, re.S):
        for lo, hi, rest in re.findall(rb"<([0-9A-Fa-f]+)>\s*<([0-9A-Fa-f]+)>\s*(\[[^\]]*\]|<[0-9A-Fa-f]+>)", block):
            lo, hi = int(lo, 16), int(hi, 16)
            if rest.startswith(b"["):
                for k, dst in enumerate(re.findall(rb"<([0-9A-Fa-f]+)>", rest)):
                    out[lo + k] = u(dst)
            else:
                start = int(rest[1:-1], 16)
                width = len(rest) - 2
                for k in range(hi - lo + 1):
                    out[lo + k] = u(f"{start + k:0{width}X}".encode())
    return out


def pdf_text(pdf: bytes) -> str:
    objs = _objects(pdf)
    fonts = {}                                   # object number -> (bytes per code, its map)
    for num, (head, _) in objs.items():
        if b"/Type /Font" in head or b"/Type/Font" in head:
            ref = re.search(rb"/ToUnicode\s+(\d+) 0 R", head)
            cmap = _cmap(objs[int(ref.group(1))][1] or b"") if ref else {}
            fonts[num] = (2 if b"/Type0" in head else 1, cmap)
    names = {}                                   # /F6 -> object number (Skia names fonts once per document)
    for head, _ in objs.values():
        for name, num in re.findall(rb"/(F\d+)\s+(\d+) 0 R", head):
            names[name.decode()] = int(num)
    words = []
    for head, data in objs.values():
        if not data or b"BT" not in data or b"Tj" not in data and b"TJ" not in data:
            continue
        size, cmap = 1, {}
        for tok in SHOW.finditer(data):
            if tok.group(1):
                size, cmap = fonts.get(names.get(tok.group(1).decode(), -1), (1, {}))
            elif tok.group(4):
                words.append(" ")
            else:
                hexes = [tok.group(2)] if tok.group(2) is not None else re.findall(rb"<([0-9A-Fa-f]*)>", tok.group(3))
                for h in hexes:
                    raw = bytes.fromhex(h.decode())
                    for i in range(0, len(raw), size):
                        words.append(cmap.get(int.from_bytes(raw[i:i + size], "big"), ""))
    return "".join(words)
