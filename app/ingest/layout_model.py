"""The page-layout model that ships inside PyMuPDF 2.x (`pymupdf.layout`, an ONNX model in the
pymupdf-layout wheel): DocLayNet-style boxes (picture, table, caption, text, ...) for a page with a
text layer, offline.

Ingestion keeps PyMuPDF from loading it on import (app/ingest/__init__.py: it costs a second and
some 100 MB in every worker); it is loaded here the first time a page is asked about. A page costs
about 0.3 CPU-s, several times the rest of its extraction, so figure extraction asks only about
pages where the geometry is in doubt (regions.region_doubt).

Two things the plug-in does by default cost CPU without changing its boxes, so they are turned off
when it is loaded here: ONNX Runtime's intra-op thread pool (a second thread per session that
spin-waits between operators; ingestion already runs one process per core) and the table-grid
model run on every table box (its cell grid is not among the boxes returned).
"""
from __future__ import annotations

import contextlib
import importlib
import logging
import sys
from dataclasses import dataclass

import pymupdf

from app.onnx_sessions import session_options

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
    if not callable(getattr(pymupdf, "_get_layout", None)) and not _load():
        return False
    _drop_table_grid()  # also when PyMuPDF loaded the plug-in itself, on its import
    return True


def _load() -> bool:
    if _LOAD_FAILED:
        return False
    if "pymupdf.layout" in sys.modules and sys.modules["pymupdf.layout"] is None:
        del sys.modules["pymupdf.layout"]  # marked absent so that importing PyMuPDF does not load it
    try:
        with _single_threaded_sessions():
            importlib.import_module("pymupdf.layout")  # activates Page.get_layout
    except Exception:  # noqa: BLE001 - not installed or broken: the geometry decides alone
        log.info("pymupdf.layout not available", exc_info=True)
        _LOAD_FAILED.append(True)
        return False
    return callable(getattr(pymupdf, "_get_layout", None))


@contextlib.contextmanager
def _single_threaded_sessions():
    """ONNX Runtime sessions created inside run on the calling thread only, with no spinning pool
    thread: the plug-in creates its sessions when it is imported, with default options."""
    ort = importlib.import_module("onnxruntime")
    make = ort.InferenceSession

    def single_threaded(path, sess_options=None, providers=None, **kwargs):
        return make(path, sess_options=session_options(1, sess_options), providers=providers, **kwargs)

    ort.InferenceSession = single_threaded
    try:
        yield
    finally:
        ort.InferenceSession = make


def _drop_table_grid() -> None:
    """The activated model predicts a cell grid for each table box after its boxes are final; the
    grid is only kept in the model's raw groups, so the boxes are the same without it."""
    found = getattr(pymupdf, "_get_layout", None)
    for cell in getattr(found, "__closure__", None) or ():
        inner = getattr(cell.cell_contents, "_model", None)
        if hasattr(inner, "table_grid_extractor"):
            inner.table_grid_extractor = None


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
