"""The page-layout model that ships inside PyMuPDF 2.x (`pymupdf.layout`, an ONNX model in the
pymupdf-layout wheel): DocLayNet-style boxes (picture, table, caption, text, ...) for a page with a
text layer, offline.

Ingestion keeps PyMuPDF from loading it on import (app/ingest/__init__.py: it costs a second and
some 100 MB in every worker); it is loaded here the first time a page is asked about. A page costs
about 0.5 CPU-s, some ten times the rest of its extraction, so figure extraction asks only about
pages where the geometry is in doubt (regions.region_doubt).
"""
from __future__ import annotations

import importlib
import logging
import sys
from dataclasses import dataclass

import pymupdf

log = logging.getLogger(__name__)

__all__ = ["LayoutBox", "available", "page_boxes"]

KINDS = ("picture", "table", "caption")


@dataclass(frozen=True)
class LayoutBox:
    kind: str  # picture | table | caption
    rect: tuple[float, float, float, float]


_LOAD_FAILED = []


def available() -> bool:
    """Load the model (once per process) and say whether it is there: pymupdf-layout installed."""
    if callable(getattr(pymupdf, "_get_layout", None)):
        return True
    if _LOAD_FAILED:
        return False
    if "pymupdf.layout" in sys.modules and sys.modules["pymupdf.layout"] is None:
        del sys.modules["pymupdf.layout"]  # marked absent so that importing PyMuPDF does not load it
    try:
        importlib.import_module("pymupdf.layout")  # activates Page.get_layout
    except Exception:  # noqa: BLE001 - not installed or broken: the geometry decides alone
        log.info("pymupdf.layout not available", exc_info=True)
        _LOAD_FAILED.append(True)
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
