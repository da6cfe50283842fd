"""Captions the page's OCR misread, read again next to the layout model's figure and table boxes.

A caption in small or italic type next to a graphic is sometimes read as another paragraph of
the graphic ("TABLE 1." as "DJ.", "Fig. 2." lost from its line). A model box with no caption
next to it gets the strips above and below it read once more as one block of text (Tesseract
then sees only those lines, not the graphic beside them); a caption of the box's kind found there
right next to the box is kept.
"""
from __future__ import annotations

import logging

from app.ingest.scanned.captions import OcrCaption, find_captions
from app.ingest.scanned.ocr import OcrLine, OcrPage
from app.ingest.tesseract import read_lines

log = logging.getLogger(__name__)

STRIP_LINES = 12  # body lines read above and below a box (a caption's paragraph fits)
_KIND = {"picture": "figure", "table": "table"}


def _near(lay_body_h: float) -> float:
    return 2.5 * lay_body_h + 6  # as close as a caption sits to its graphic


def _gap(cap_box: tuple, rect: tuple) -> float:
    return min(abs(cap_box[1] - rect[3]), abs(rect[1] - cap_box[3]))


def _beside_box(cap_box: tuple, rect: tuple, near: float) -> bool:
    overlap = min(cap_box[2], rect[2]) - max(cap_box[0], rect[0])
    return _gap(cap_box, rect) <= near and overlap >= 0.5 * min(cap_box[2] - cap_box[0], rect[2] - rect[0])


def _strip_lines(page: OcrPage, x0: float, y0: float, x1: float, y1: float) -> list[OcrLine]:
    s = page.px_per_pt
    h, w = page.image.shape[:2]
    r0, r1, c0, c1 = max(int(y0 * s), 0), min(int(y1 * s), h), max(int(x0 * s), 0), min(int(x1 * s), w)
    if r1 - r0 < 4 or c1 - c0 < 4:
        return []
    lines = read_lines(page.image[r0:r1, c0:c1].copy(), s, "--psm 6")
    dx, dy = c0 / s, r0 / s
    for ln in lines:
        ln.box = (ln.box[0] + dx, ln.box[1] + dy, ln.box[2] + dx, ln.box[3] + dy)
        for wd in ln.words:
            wd.box = (wd.box[0] + dx, wd.box[1] + dy, wd.box[2] + dx, wd.box[3] + dy)
    return lines


def reread_captions(page: OcrPage, caps: list[OcrCaption], boxes: list, body_h: float) -> list[OcrCaption]:
    """Captions found by reading the strips next to the model's boxes that have none (never one
    whose kind and number the page already has); empty without an image or on any failure."""
    if page.image is None:
        return []
    near = _near(body_h)
    have = {(c.kind, c.number) for c in caps}
    found: list[OcrCaption] = []
    for b in boxes:
        kind = _KIND.get(b.kind)
        if kind is None or any(_beside_box(c.box, b.rect, near) for c in caps + found):
            continue
        x0, y0, x1, y1 = b.rect
        pad = body_h
        for top, bottom in ((y0 - STRIP_LINES * body_h, y0 + 2), (y1 - 2, y1 + STRIP_LINES * body_h)):
            try:
                lines = _strip_lines(page, x0 - pad, max(top, 0.0), x1 + pad, min(bottom, page.height))
            except Exception:  # noqa: BLE001 - a second reading is a bonus, never a failure
                log.warning("second reading of a caption strip failed", exc_info=True)
                return found
            got = [c for c in find_captions(lines) if c.kind == kind and (c.kind, c.number) not in have
                   and _beside_box(c.box, b.rect, near)]
            if got:
                cap = min(got, key=lambda c: _gap(c.box, b.rect))
                found.append(cap)
                have.add((cap.kind, cap.number))
                break
    return found
