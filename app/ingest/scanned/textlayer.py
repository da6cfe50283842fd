"""OCR lines -> a text-only PDF, so the born-digital parser reads scanned pages unchanged.

Each OCR line is written at its position with a font size derived from its height, which keeps
what the parser relies on (reading order, columns, relative sizes for the title); one
implementation of title, abstract, sentence and reference rules serves both kinds of paper.
"""
from __future__ import annotations

import numpy as np
import pymupdf

from app.ingest.scanned.ocr import OcrLine, OcrPage

FONT = "tiro"  # Times: close to most papers' body font, so widths roughly match the scan
_DESCENDERS = set("gjpqy,;()[]{}|/")
_ASCENDERS = set("bdfhklt0123456789")
MIN_PROSE_CONF = 50.0


def line_font_size(line: OcrLine) -> float:
    """Font size of a line from the heights of its words that reach cap/ascender height and have
    no descender (about 0.7 em in book faces): the same for every line of a title, whatever
    letters it holds. Falls back to the line box (ascender to descender, about 0.95 em)."""
    tall = [w.box[3] - w.box[1] for w in line.words
            if not any(c in _DESCENDERS for c in w.text) and any(c in _ASCENDERS or c.isupper() for c in w.text)]
    if tall:
        return max(3.0, float(np.median(tall)) / 0.70)
    return max(3.0, line.height / 0.95)


def block_sizes(lines: list[OcrLine], tolerance: float = 0.08) -> list[float]:
    """Font sizes per line, with runs of lines of one OCR block whose estimates agree within
    `tolerance` set to their median (a title's or a paragraph's lines get one size, as the
    parser expects of a text layer)."""
    raw = [line_font_size(ln) for ln in lines]
    out = list(raw)
    i = 0
    while i < len(lines):
        j = i + 1
        while j < len(lines) and lines[j].block == lines[i].block and abs(raw[j] - raw[i]) <= tolerance * raw[i]:
            j += 1
        med = float(np.median(raw[i:j]))
        out[i:j] = [med] * (j - i)
        i = j
    return out


def _inside(box, regions) -> bool:
    cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
    return any(r[0] <= cx <= r[2] and r[1] <= cy <= r[3] for r in regions)


def add_page(out: pymupdf.Document, page: OcrPage, exclude: list[tuple] = ()) -> None:
    """A page with the OCR lines as text, leaving out lines inside graphics (`exclude`, points)
    and lines read with little confidence (noise, not prose)."""
    new = out.new_page(width=page.width, height=page.height)
    lines = [ln for ln in page.lines if ln.conf >= MIN_PROSE_CONF and not _inside(ln.box, exclude)]
    shape = new.new_shape()  # one content stream per page: a commit per line costs more than the text
    for ln, size in zip(lines, block_sizes(lines)):
        text = "".join(c if ord(c) < 256 else "?" for c in ln.text)
        width = pymupdf.get_text_length(text, fontname=FONT, fontsize=size)
        box_w = max(ln.box[2] - ln.box[0], 1.0)
        if width > 1.1 * box_w:  # keep the line inside its column
            size *= max(0.6, 1.1 * box_w / width)
        baseline = ln.box[3] - (0.22 * size if any(c in _DESCENDERS for c in ln.text) else 0.0)
        shape.insert_text((ln.box[0], baseline), text, fontsize=size, fontname=FONT)
    shape.commit()
