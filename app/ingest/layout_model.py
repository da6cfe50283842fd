"""The page-layout model that ships inside PyMuPDF 2.x (`pymupdf.layout`, an ONNX model in the
pymupdf-layout wheel, loaded when pymupdf is imported): DocLayNet-style boxes (picture, table,
caption, text, ...) for a page with a text layer, offline.

It costs about 0.6 CPU-s a page, some ten times the rest of a page's extraction, so figure
extraction asks it only about pages where the geometry is in doubt (regions.region_doubt).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

import pymupdf

log = logging.getLogger(__name__)

__all__ = ["LayoutBox", "available", "page_boxes"]

KINDS = ("picture", "table", "caption")


@dataclass(frozen=True)
class LayoutBox:
    kind: str  # picture | table | caption
    rect: tuple[float, float, float, float]


def available() -> bool:
    """True when pymupdf-layout is installed (pymupdf then activates it on import)."""
    try:
        import pymupdf.layout  # noqa: F401
    except ImportError:
        return False
    return callable(getattr(pymupdf, "_get_layout", None))


def page_boxes(page: pymupdf.Page) -> list[LayoutBox]:
    """Picture, table and caption boxes of a page in PDF points (empty when the model is missing
    or fails: the geometry alone decides then)."""
    if not available():
        return []
    try:
        page.get_layout(do_sort=False)  # reading order is not needed
        found = page.layout_information or []
    except Exception:  # noqa: BLE001 - a model failure must not lose the page's figures
        log.warning("layout model failed on page %d", page.number + 1, exc_info=True)
        return []
    return [LayoutBox(b[4], tuple(float(v) for v in b[:4])) for b in found if len(b) >= 5 and b[4] in KINDS]
