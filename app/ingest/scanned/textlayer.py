"""OCR lines -> a text-only PDF, so the born-digital parser reads scanned pages unchanged.

Each OCR line is written at its position with a font size derived from its height, which keeps
what the parser relies on (reading order, columns, relative sizes for the title); one
implementation of title, abstract, sentence and reference rules serves both kinds of paper.
"""
from __future__ import annotations

import pymupdf

from app.ingest.scanned.ocr import OcrPage

FONT = "tiro"  # Times: close to most papers' body font, so widths roughly match the scan
_DESCENDERS = set("gjpqy,;()[]{}|/")


def line_font_size(text: str, height: float) -> float:
    """Font size of a line from its box height (ascender to descender, or cap height only)."""
    ratio = 0.95 if any(c in _DESCENDERS for c in text) else 0.72
    return max(3.0, height / ratio)


def add_page(out: pymupdf.Document, page: OcrPage) -> None:
    new = out.new_page(width=page.width, height=page.height)
    for ln in page.lines:
        text = "".join(c if ord(c) < 256 else "?" for c in ln.text)
        size = line_font_size(ln.text, ln.height)
        width = pymupdf.get_text_length(text, fontname=FONT, fontsize=size)
        box_w = max(ln.box[2] - ln.box[0], 1.0)
        if width > 1.1 * box_w:  # keep the line inside its column
            size *= max(0.6, 1.1 * box_w / width)
        baseline = ln.box[3] - (0.22 * size if any(c in _DESCENDERS for c in ln.text) else 0.0)
        new.insert_text((ln.box[0], baseline), text, fontsize=size, fontname=FONT)
