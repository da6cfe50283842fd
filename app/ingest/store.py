"""Extraction -> database rows: papers, figures, mentions, citation links, deduplication."""
from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from app.db.schema import Citation, Figure, Mention, Paper, PaperStatus
from app.ingest.citations import TitleMatcher, normalise_title
from app.ingest.extract import Extraction
from app.search.text import top_term_counts


MIN_TITLE_CHARS_FOR_DEDUP = 15


@dataclass
class Outcome:
    """What happened to one file, as reported to the user."""

    status: str  # ok | no_text | failed | duplicate
    paper_id: int | None = None
    n_figures: int = 0
    error: str = ""
    duplicate_of: int | None = None
    error_kind: str | None = None  # why it failed (app/ingest/failures.py); None unless failed
    job_finished: bool = False  # this file was the job's last one


def _as_copy(existing: Paper | None) -> Outcome | None:
    """A file with a stored paper's bytes is its duplicate; a failed paper may be retried (None)."""
    if existing is None or existing.status == PaperStatus.FAILED:
        return None
    return Outcome("duplicate", existing.id, len(existing.figures), "same file already ingested",
                   duplicate_of=existing.id)


def stored_copy(session: Session, sha256: str) -> Outcome | None:
    """The outcome of a file whose bytes are those of a stored paper: a duplicate of it. None when
    no paper has these bytes, or only a failed one (a failed file may be retried)."""
    return _as_copy(session.scalar(select(Paper).where(Paper.sha256 == sha256)))


def store_extraction(session: Session, ex: Extraction) -> Outcome:
    """Insert (or recognise) the paper of one extraction. Caller commits."""
    existing = session.scalar(select(Paper).where(Paper.sha256 == ex.sha256))
    copy = _as_copy(existing)
    if copy is not None:
        return copy
    if existing is not None:  # a failed file may be retried
        session.delete(existing)
        session.flush()

    p = ex.paper
    paper = Paper(sha256=ex.sha256, source=ex.source, title=p.title, norm_title=normalise_title(p.title),
                  authors=p.authors, year=p.year, abstract=p.abstract, n_pages=p.n_pages,
                  has_text_layer=p.has_text_layer, status=ex.status, error=ex.error,
                  references=list(p.references), source_kind=ex.source_kind,
                  body_terms=top_term_counts(p.body_text) if p.body_text else None,
                  dropped_figures=list(ex.dropped_figures))
    original = _same_title_paper(session, paper.norm_title) if ex.status == PaperStatus.OK else None
    if original is not None:
        paper.status = PaperStatus.DUPLICATE
        paper.duplicate_of_id = original.id
        paper.error = f"same title as paper {original.id} ({original.source})"
        session.add(paper)
        session.flush()
        return Outcome("duplicate", paper.id, 0, paper.error, duplicate_of=original.id)

    session.add(paper)
    session.flush()
    by_key: dict[tuple[str, int], Figure] = {}
    for f in ex.figures:
        fig = Figure(paper_id=paper.id, kind=f.kind, label=f.label, number=f.number, caption=f.caption,
                     page=f.page, bbox=[round(float(v), 2) for v in f.bbox], image_path=f.image_path,
                     thumbnail_path=f.thumbnail_path, width=f.width, height=f.height, text_source=f.text_source,
                     crop_quality=f.crop_quality, panels=list(f.panels) or None,
                     region_bbox=f.region_bbox, region_text=f.region_text)
        by_key[(f.kind, f.number)] = fig
        session.add(fig)
    session.flush()
    for m in ex.mentions:
        fig = by_key.get((m.kind, m.number))
        if fig is not None:
            session.add(Mention(figure_id=fig.id, sentence=m.sentence, before=m.before, after=m.after,
                                position=m.position))
    if paper.status == PaperStatus.OK:
        link_new_paper(session, paper)
    n_figures = sum(1 for f in ex.figures if f.kind == "figure")
    return Outcome(paper.status, paper.id, n_figures, paper.error,
                   error_kind=ex.error_kind if paper.status == PaperStatus.FAILED else None)


def _same_title_paper(session: Session, norm_title: str) -> Paper | None:
    if len(norm_title) < MIN_TITLE_CHARS_FOR_DEDUP:
        return None
    return session.scalar(
        select(Paper).where(Paper.norm_title == norm_title, Paper.status == PaperStatus.OK).order_by(Paper.id)
    )


def _add_link(session: Session, citing: int, cited: int, reference: str, score: float) -> None:
    if citing == cited:
        return
    row = session.scalar(select(Citation).where(Citation.citing_paper_id == citing,
                                                Citation.cited_paper_id == cited))
    if row is None:
        session.add(Citation(citing_paper_id=citing, cited_paper_id=cited, reference=reference, score=score))
    elif score > row.score:
        row.reference, row.score = reference, score


def link_new_paper(session: Session, paper: Paper) -> int:
    """Links in both directions between a new paper and the papers already stored."""
    n = 0
    others = session.execute(
        select(Paper.id, Paper.title, Paper.references).where(Paper.status == PaperStatus.OK, Paper.id != paper.id)
    ).all()
    matcher = TitleMatcher({pid: title for pid, title, _ in others if title})
    for ref in paper.references or []:
        for cited, score in matcher.match(ref)[:1]:
            _add_link(session, paper.id, cited, ref, score)
            n += 1
    if paper.title:
        mine = TitleMatcher({paper.id: paper.title})
        for pid, _title, refs in others:
            for ref in refs or []:
                hits = mine.match(ref)
                if hits:
                    _add_link(session, pid, paper.id, ref, hits[0][1])
                    n += 1
                    break
    session.flush()
    return n


def relink_all(session: Session) -> int:
    """Recompute every citation link from scratch (after concurrent ingests or a matcher change)."""
    from app.ingest.citations import link_citations

    rows = session.execute(
        select(Paper.id, Paper.title, Paper.references).where(Paper.status == PaperStatus.OK)
    ).all()
    links = link_citations({pid: refs or [] for pid, _t, refs in rows}, {pid: t for pid, t, _r in rows if t})
    session.execute(delete(Citation))
    for citing, cited, ref, score in links:
        session.add(Citation(citing_paper_id=citing, cited_paper_id=cited, reference=ref, score=score))
    session.flush()
    return len(links)
