"""Authors and year of stored papers read again by the current parser. Ingesting a file again skips
it as a duplicate, so without this a better parser would never reach the papers ingested before
it. Born-digital papers with a stored PDF only (scans are read by OCR; their stand-in PDF is not
kept)."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pymupdf
from sqlalchemy import select

from app.db.schema import Paper, PaperStatus
from app.db.session import session_scope
from app.ingest.parse import parse_pdf
from app.pdfs import stored_pdf
from app.settings import Settings


@dataclass
class RefreshCounts:
    papers: int = 0
    authors_changed: int = 0
    years_changed: int = 0
    without_pdf: int = 0
    unreadable: int = 0


def refresh_metadata(settings: Settings, on_paper: Callable[[], None] | None = None,
                     total: Callable[[int], None] | None = None) -> RefreshCounts:
    """Re-read every born-digital paper's authors and year; a value the parser no longer finds is
    kept as it was (nothing is lost). `total(n)` is called once with the number of papers,
    `on_paper()` after each."""
    with session_scope(settings.db_url) as s:
        rows = s.execute(select(Paper.id, Paper.sha256).where(
            Paper.status == PaperStatus.OK, Paper.source_kind == "born_digital")).all()
    counts = RefreshCounts(papers=len(rows))
    if total:
        total(len(rows))
    for paper_id, sha256 in rows:
        pdf = stored_pdf(settings.data_dir, sha256)
        if pdf is None:
            counts.without_pdf += 1
        else:
            try:
                with pymupdf.open(pdf) as doc:
                    parsed = parse_pdf(doc)
            except Exception:  # a file that parsed once but not now: keep what the paper has
                counts.unreadable += 1
            else:
                with session_scope(settings.db_url) as s:
                    paper = s.get(Paper, paper_id)
                    if parsed.authors and parsed.authors != paper.authors:
                        paper.authors = parsed.authors
                        counts.authors_changed += 1
                    if parsed.year is not None and parsed.year != paper.year:
                        paper.year = parsed.year
                        counts.years_changed += 1
        if on_paper:
            on_paper()
    return counts
