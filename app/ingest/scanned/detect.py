"""Which pages of a PDF need the scanned path.

A page is `text` when it carries enough visible text, `ocr_layer` when its text is an invisible
layer over a page image (a scanner's OCR) that reads like words, and `image` when it has no
usable text over a page image (no layer at all, or an invisible layer of poor quality). Documents
are judged page by page, so a born-digital paper with a few scanned pages works too.
"""
from __future__ import annotations

import re
from pathlib import Path

TEXT, OCR_LAYER, IMAGE = "text", "ocr_layer", "image"

MIN_VISIBLE_CHARS = 200  # a born-digital page of a paper has thousands
MIN_LAYER_QUALITY = 0.6  # share of tokens that read like words; good OCR layers score ~0.85
MIN_IMAGE_COVER = 0.5  # of the page area: a scan is one large image per page

_TOKEN_RE = re.compile(r"\S+")
_WORDLIKE_RE = re.compile(r"^(?:[A-Za-z][a-z]+|[A-Z]+|[a-z]|\d+(?:[.,]\d+)*%?)$")
_VOWEL_RE = re.compile(r"[aeiouyAEIOUY]")


def word_quality(text: str) -> float:
    """Share of tokens that look like words or numbers (0 for no tokens): garbage OCR scores low."""
    tokens = [t.strip(".,;:!?()[]{}\"'`-\u2013\u2014") for t in _TOKEN_RE.findall(text)]
    tokens = [t for t in tokens if t]
    if not tokens:
        return 0.0
    good = 0
    for t in tokens:
        if _WORDLIKE_RE.match(t) and (t[0].isdigit() or len(t) == 1 or _VOWEL_RE.search(t)):
            good += 1
    return good / len(tokens)


def _image_cover(page) -> float:
    """Largest share of the page covered by one image (scans are one image per page)."""
    # Resource lookups first: most born-digital pages hold fonts and no image XObject. A page
    # without fonts is still measured, since a scan may draw its page image inline.
    if not page.get_images() and page.get_fonts():
        return 0.0
    rect = page.rect  # a property that asks MuPDF each time: a figure can hold thousands of images
    area = max(rect.width * rect.height, 1.0)
    best = 0.0
    for info in page.get_image_info():
        x0, y0, x1, y1 = info["bbox"]
        w = max(0.0, min(x1, rect.x1) - max(x0, rect.x0))
        h = max(0.0, min(y1, rect.y1) - max(y0, rect.y0))
        best = max(best, w * h / area)
    return best


def classify_page(page) -> str:
    """`text`, `ocr_layer` or `image` for one PyMuPDF page."""
    cover = _image_cover(page)
    if cover < MIN_IMAGE_COVER:
        return TEXT  # no page-sized image: born-digital (or an empty page); cheap, no text trace
    visible = invisible = 0
    for span in page.get_texttrace():
        n = sum(1 for c in span["chars"] if c[0] > 32)
        if span.get("type") == 3 or span.get("opacity", 1.0) == 0:
            invisible += n
        else:
            visible += n
    if visible >= MIN_VISIBLE_CHARS:
        return TEXT
    if invisible >= MIN_VISIBLE_CHARS:
        return OCR_LAYER if word_quality(page.get_text()) >= MIN_LAYER_QUALITY else IMAGE
    return IMAGE


def classify_pages(doc, max_pages: int | None = None) -> list[str]:
    n = doc.page_count if max_pages is None else min(doc.page_count, max_pages)
    return [classify_page(doc[i]) for i in range(n)]


def needs_scanned_path(kinds: list[str]) -> bool:
    return any(k != TEXT for k in kinds)


def source_kind(kinds: list[str]) -> str:
    """Paper-level label: `born_digital` unless most pages are scans (`scanned` when any of those
    needed OCR here, `ocr_layer` when the scanner's own text layer was good enough)."""
    other = [k for k in kinds if k != TEXT]
    if not kinds or len(other) < 0.5 * len(kinds):
        return "born_digital"
    return "scanned" if IMAGE in other else "ocr_layer"


def ocr_page_count(path: str | Path, max_pages: int = 300) -> int:
    """Pages that will need OCR (for a per-file time limit that scales with the work); 0 when the
    file cannot be opened (the extraction reports that)."""
    import pymupdf

    try:
        with pymupdf.open(path, filetype="pdf") as doc:
            return sum(1 for k in classify_pages(doc, max_pages) if k == IMAGE)
    except Exception:  # noqa: BLE001 - the guarded extraction reports unreadable files
        return 0
