"""Stored papers read again by the current parser: their title, authors and year (`refresh_metadata`) and
the words inside their figures' regions (`refresh_region_words`). Ingesting a file again skips it
as a duplicate, so without this a better parser would never reach the papers ingested before it.
Born-digital papers with a stored PDF only (scans are read by OCR; their stand-in PDF is not
kept)."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pymupdf
from sqlalchemy import select

from app.db.schema import Figure, Paper, PaperStatus
from app.db.session import session_scope
from app.ingest.citations import normalise_title
from app.ingest.figures import region_words
from app.ingest.names import is_name_list, uncased_script
from app.ingest.parse import parse_pdf
from app.pdfs import stored_pdf
from app.settings import Settings


@dataclass
class RefreshCounts:
    papers: int = 0
    titles_changed: int = 0
    authors_changed: int = 0
    years_changed: int = 0
    without_pdf: int = 0
    unreadable: int = 0


def refresh_metadata(settings: Settings, on_paper: Callable[[], None] | None = None,
                     total: Callable[[int], None] | None = None) -> RefreshCounts:
    """Re-read every born-digital paper's title, authors and year; a value the parser no longer finds
    is kept as it was (nothing is lost), except an author string that is no list of names (a
    sentence of the abstract an older parser took for one). A changed title changes the normalised title that citation
    links and duplicates are matched on (`figsearch relink` recomputes the links). `total(n)` is called once with the number of papers,
    `on_paper()` after each."""
    counts = RefreshCounts()
    for paper_id, pdf in _stored_pdfs(settings, counts, on_paper, total):
        try:
            with pymupdf.open(pdf) as doc:
                parsed = parse_pdf(doc)
        except Exception:  # a file that parsed once but not now: keep what the paper has
            counts.unreadable += 1
            continue
        with session_scope(settings.db_url) as s:
            paper = s.get(Paper, paper_id)
            if parsed.title and parsed.title != paper.title:
                paper.title, paper.norm_title = parsed.title, normalise_title(parsed.title)
                counts.titles_changed += 1
            if parsed.authors and parsed.authors != paper.authors:
                paper.authors = parsed.authors
                counts.authors_changed += 1
            elif not parsed.authors and paper.authors and not is_name_list(paper.authors, uncased_script(paper.title)):
                paper.authors = ""  # an older parser's sentence or date taken for names
                counts.authors_changed += 1
            if parsed.year is not None and parsed.year != paper.year:
                paper.year = parsed.year
                counts.years_changed += 1
    return counts


def _stored_pdfs(settings: Settings, counts, on_paper: Callable[[], None] | None,
                 total: Callable[[int], None] | None):
    """(paper id, stored PDF) of every born-digital paper, counting papers and those without a
    stored PDF in `counts`; `total(n)` once before, `on_paper()` after each paper."""
    rows = _born_digital(settings)
    counts.papers = len(rows)
    if total:
        total(len(rows))
    for paper_id, sha256 in rows:
        pdf = stored_pdf(settings.data_dir, sha256)
        if pdf is None:
            counts.without_pdf += 1
        else:
            yield paper_id, pdf
        if on_paper:
            on_paper()


def _born_digital(settings: Settings) -> list[tuple[int, str]]:
    with session_scope(settings.db_url) as s:
        return [tuple(r) for r in s.execute(select(Paper.id, Paper.sha256).where(
            Paper.status == PaperStatus.OK, Paper.source_kind == "born_digital")).all()]


@dataclass
class RegionCounts:
    papers: int = 0
    regions: int = 0        # figures and tables with a graphic region
    with_words: int = 0     # of them, regions whose text layer has words
    changed: int = 0
    without_pdf: int = 0
    unreadable: int = 0


def refresh_region_words(settings: Settings, on_paper: Callable[[], None] | None = None,
                         total: Callable[[int], None] | None = None) -> RegionCounts:
    """Read the words inside every stored figure's and table's region again from the paper's
    stored PDF (`Figure.region_text`: collections ingested before figures kept theirs have none).
    The index uses them after the next `figsearch index`. `total(n)` is called once with the
    number of papers, `on_paper()` after each."""
    counts = RegionCounts()
    for paper_id, pdf in _stored_pdfs(settings, counts, on_paper, total):
        try:
            with session_scope(settings.db_url) as s, pymupdf.open(pdf) as doc:
                for fig in s.scalars(select(Figure).where(Figure.paper_id == paper_id)):
                    if not fig.region_bbox or not 1 <= fig.page <= len(doc):
                        continue
                    words = region_words(doc[fig.page - 1], fig.region_bbox)
                    counts.regions += 1
                    counts.with_words += bool(words)
                    if words != (fig.region_text or ""):
                        fig.region_text = words
                        counts.changed += 1
        except (RuntimeError, ValueError, OSError):  # a file that parsed once but not now: keep what it has
            counts.unreadable += 1
    return counts
