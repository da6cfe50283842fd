"""PDF file -> Extraction: everything ingestion learns from one file, without touching the DB.

Runs in a worker process (Celery child or a guarded subprocess), so it must be a plain
function of its arguments and must turn every problem into a clear `error` string.
"""
from __future__ import annotations

import logging
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from app.ingest import failures
from app.ingest.types import ExtractedFigure, MentionRecord, ParsedPaper
from app.pdfs import file_sha256

log = logging.getLogger(__name__)


@dataclass
class Limits:
    max_pages: int = 300
    max_file_mb: float = 200.0
    dpi: int = 150
    thumb_px: int = 256
    ocr_threads: int = 2  # Tesseract processes per file for scanned pages


@dataclass
class Extraction:
    sha256: str
    source: str
    status: str = "ok"  # ok | no_text | failed
    error: str = ""
    error_kind: str | None = None  # why it failed (app/ingest/failures.py); None unless failed
    source_kind: str = "born_digital"  # born_digital | scanned | ocr_layer
    paper: ParsedPaper = field(default_factory=ParsedPaper)
    figures: list[ExtractedFigure] = field(default_factory=list)
    mentions: list[MentionRecord] = field(default_factory=list)
    dropped_figures: list[dict] = field(default_factory=list)  # {label, reason}: figures not kept


class RefusedFile(Exception):
    """The file is not something we can ingest; the message is shown to the user, the kind
    (app/ingest/failures.py) says what is wrong with it."""

    def __init__(self, message: str, kind: str):
        super().__init__(message)
        self.kind = kind


def figure_dir_for(sha256: str) -> str:
    """Crops live under figures/<sha[:2]>/<sha>/ relative to the data dir."""
    return f"figures/{sha256[:2]}/{sha256}"


def limit_memory(max_mb: int) -> None:
    """Cap the address space of a worker process (a pathological PDF fails instead of
    exhausting the machine's memory)."""
    import resource

    if max_mb > 0:
        resource.setrlimit(resource.RLIMIT_AS, (max_mb * 1024 * 1024, max_mb * 1024 * 1024))


def _check_header(path: Path, limits: Limits) -> None:
    size = path.stat().st_size
    if size == 0:
        raise RefusedFile("empty file (0 bytes)", failures.NOT_PDF)
    if size > limits.max_file_mb * 1024 * 1024:
        raise RefusedFile(f"file too large ({size / 1e6:.1f} MB > {limits.max_file_mb:g} MB limit)", failures.TOO_LARGE)
    with open(path, "rb") as fh:
        head = fh.read(1024)
    if b"%PDF-" not in head:
        kind = "HTML" if b"<html" in head.lower() or b"<!doctype" in head.lower() else "non-PDF"
        raise RefusedFile(f"not a PDF ({kind} content; no %PDF- header)", failures.NOT_PDF)


END_MARKER = b"%%EOF"
TAIL_BYTES = 1024  # the PDF standard puts the end-of-file marker within the last 1,024 bytes


def _cut_short(path: Path) -> bool:
    """Whether the file lacks the end-of-file marker near its end: the download or copy stopped
    early. (A file cut at an earlier revision's marker ends as a complete, older PDF.)"""
    with open(path, "rb") as fh:
        fh.seek(max(0, path.stat().st_size - TAIL_BYTES))
        return END_MARKER not in fh.read()


def _unreadable(exc: Exception, path: Path, name: str) -> RefusedFile:
    """The PDF library's reason for a file it cannot read, as an admin reads it: without its error
    code, and naming the file as uploaded rather than the working copy the library was given."""
    reason = re.sub(r"^code=\d+:\s*", "", str(exc).replace(str(path), name)).strip()
    return RefusedFile(f"unreadable PDF (damaged or cut short): {reason}", failures.DAMAGED)


def _open(path: Path, limits: Limits, name: str):
    import pymupdf

    try:
        doc = pymupdf.open(path, filetype="pdf")
    except Exception as exc:  # pymupdf raises several types for broken files
        raise _unreadable(exc, path, name) from exc
    # rebuilt from the part that arrived: called ok, the paper would silently lack what came after the cut
    if doc.is_repaired and _cut_short(path):
        doc.close()
        raise RefusedFile("truncated PDF: the file stops before its end (an incomplete download or copy?)",
                          failures.DAMAGED)
    if doc.needs_pass and not doc.authenticate(""):
        doc.close()
        raise RefusedFile("encrypted PDF (password required)", failures.ENCRYPTED)
    try:
        n_pages = doc.page_count
    except Exception as exc:
        doc.close()
        raise _unreadable(exc, path, name) from exc
    if n_pages == 0:
        doc.close()
        raise RefusedFile("PDF has no pages (truncated or damaged)", failures.DAMAGED)
    if n_pages > limits.max_pages:
        doc.close()
        raise RefusedFile(f"too many pages ({n_pages} > {limits.max_pages} limit)", failures.TOO_LARGE)
    return doc


def _mentioned_but_missing(figures: list[ExtractedFigure], mentions: list[MentionRecord]) -> list[dict]:
    """Figures the text refers to whose caption was not found (recorded, never silently lost)."""
    have = {(f.kind, f.number) for f in figures}
    missing = sorted({(m.kind, m.number) for m in mentions} - have)
    return [{"label": f"{kind.title()} {num}", "reason": "mentioned in the text; no caption found"}
            for kind, num in missing]


def load_modules() -> None:
    """Import what extraction imports on first use, and load the page-layout model, once per
    process. A worker calls it before starting a file's time limit: an import cut short by that
    limit can leave a package half-initialised (a later import of it fails with a NameError), so
    every later file in that process would fail; and a one-time load is no part of one file's cost."""
    import importlib

    from app.ingest import layout_model

    for name in ("figures", "layout", "mentions", "parse", "scanned.detect", "scanned.extract"):
        importlib.import_module(f"app.ingest.{name}")
    layout_model.available()


def extract_pdf(path: str | Path, data_dir: str | Path, limits: Limits | None = None,
                source: str | None = None, sha256: str | None = None) -> Extraction:
    """Parse one PDF: text, figures (PNG crops written under the data dir), mentions."""
    from app.ingest.figures import extract_figures
    from app.ingest.layout import build_layout
    from app.ingest.mentions import find_mentions
    from app.ingest.parse import caption_boxes, parse_pdf
    from app.ingest.scanned.detect import classify_pages, needs_scanned_path

    path = Path(path)
    limits = limits or Limits()
    data_dir = Path(data_dir)
    sha = sha256 or file_sha256(path)
    result = Extraction(sha256=sha, source=source or path.name)
    try:
        _check_header(path, limits)
        doc = _open(path, limits, result.source)
    except RefusedFile as exc:
        result.status, result.error, result.error_kind = "failed", str(exc), exc.kind
        return result
    rel = figure_dir_for(sha)
    out_dir = data_dir / rel
    try:
        kinds = classify_pages(doc, limits.max_pages)
        if needs_scanned_path(kinds):  # scans: OCR, regions from pixels (app/ingest/scanned)
            return _extract_scanned(doc, kinds, result, out_dir, rel, limits)
        layout = build_layout(doc, limits.max_pages)  # the page model, shared by every stage
        shutil.rmtree(out_dir, ignore_errors=True)  # a retry must not leave stale crops
        result.figures = extract_figures(doc, out_dir, rel, dpi=limits.dpi,
                                         thumb_px=limits.thumb_px, layout=layout,
                                         dropped=result.dropped_figures)
        # the captions found are left out of the body text (so out of mentions and their context)
        paper = parse_pdf(doc, layout=layout, captions=caption_boxes(result.figures))
        result.paper = paper
        if not paper.has_text_layer:
            shutil.rmtree(out_dir, ignore_errors=True)
            result.figures, result.dropped_figures = [], []
            result.status = "no_text"
            result.error = "no text layer (scanned PDF?): kept without figures or mentions"
            return result
        result.mentions = find_mentions(paper.sentences)
        result.dropped_figures.extend(_mentioned_but_missing(result.figures, result.mentions))
        if doc.is_repaired:
            result.error = "damaged PDF (truncated or corrupt), repaired by the parser: content may be incomplete"
    except Exception as exc:  # never let one file sink a batch
        log.exception("extraction failed for %s", path)
        result.status, result.error = "failed", f"extraction error: {type(exc).__name__}: {exc}"
        result.error_kind = failures.OUT_OF_MEMORY if isinstance(exc, MemoryError) else failures.INTERNAL
        result.figures, result.mentions = [], []
    finally:
        doc.close()
    return result


def _extract_scanned(doc, kinds: list[str], result: Extraction, out_dir: Path, rel: str,
                     limits: Limits) -> Extraction:
    """The scanned path fills the same Extraction (caller closes the document)."""
    from app.ingest.mentions import find_mentions
    from app.ingest.scanned.extract import extract_scanned

    shutil.rmtree(out_dir, ignore_errors=True)
    scan = extract_scanned(doc, kinds, out_dir, rel, dpi=limits.dpi, thumb_px=limits.thumb_px,
                           max_pages=limits.max_pages, threads=limits.ocr_threads)
    result.paper, result.figures, result.source_kind = scan.paper, scan.figures, scan.source_kind
    result.status, result.error = scan.status, scan.error
    if scan.status == "ok":
        result.mentions = find_mentions(scan.paper.sentences)
    return result
