"""Papers: the list, and one paper with its figures and its citation links in the collection."""
from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, HTTPException, Query
from fastapi.responses import FileResponse
from sqlalchemy import func, or_, select
from sqlalchemy.orm import selectinload

from app.api import schemas
from app.api.deps import PaperId, SessionDep, SettingsDep
from app.api.problems import check_limit, responses
from app.api.serialize import figure_card, paper_ref, pdf_url, urls
from app.db.schema import Citation, Figure, Paper, in_collection
from app.pdfs import stored_pdf
from app.public_text import public_text

router = APIRouter(tags=["papers"])


def _summary(p: Paper, n_figures: int, n_tables: int, central: Figure | None = None) -> dict:
    return dict(paper_id=p.id, title=p.title or p.source or f"paper {p.id}", authors=p.authors or "",
                year=p.year, status=p.status, source=p.source or "", n_figures=n_figures, n_tables=n_tables,
                source_kind=p.source_kind or "born_digital",
                central_figure=schemas.FigureThumb(figure_id=central.id, label=central.label or "",
                                                   thumbnail_url=urls(central.id)["thumbnail_url"])
                if central is not None else None)


def _escape_like(word: str) -> str:
    return word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


@router.get("/papers", response_model=schemas.PaperPage, responses=responses(422))
def list_papers(db: SessionDep, settings: SettingsDep,
                offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
                limit: Annotated[int, Query(ge=1, le=1000)] = 50,
                status: Annotated[str | None, Query(pattern="^(ok|no_text|failed|duplicate)$", description=(
                    "Only papers of this status. Without it, the papers of the collection: files that failed, "
                    "had no text layer or repeated a paper are left out (the admin's job view names them)."))] = None,
                q: Annotated[str | None, Query(max_length=200, description=(
                    "Only papers whose title or authors contain every word (case-insensitive)."))] = None,
                sort: Annotated[str, Query(pattern="^(id|recent|year|title|figures)$", description=(
                    "id (order of ingestion), recent (last ingested first), year (newest first), title (A-Z) "
                    "or figures (most first)."))] = "id"):
    """Papers of the collection, with their number of figures and tables and their central
    figure (the one the central-figure model ranks first; else the first figure)."""
    check_limit("limit", limit, settings)
    base = select(Paper).where(Paper.status == status if status else in_collection())
    for word in (q or "").split():
        pattern = f"%{_escape_like(word)}%"
        base = base.where(or_(Paper.title.ilike(pattern, escape="\\"), Paper.authors.ilike(pattern, escape="\\")))
    total = db.scalar(select(func.count()).select_from(base.subquery()))
    n_figures = (select(func.count(Figure.id)).where(Figure.paper_id == Paper.id, Figure.kind == "figure")
                 .correlate(Paper).scalar_subquery())
    order = {"id": (Paper.id,), "recent": (Paper.id.desc(),), "year": (Paper.year.desc().nulls_last(), Paper.id),
             "title": (func.lower(Paper.title), Paper.id), "figures": (n_figures.desc(), Paper.id)}[sort]
    papers = db.scalars(base.order_by(*order).offset(offset).limit(limit)).all()
    ids = [p.id for p in papers]
    counts = {(pid, kind): n for pid, kind, n in db.execute(
        select(Figure.paper_id, Figure.kind, func.count(Figure.id))
        .where(Figure.paper_id.in_(ids)).group_by(Figure.paper_id, Figure.kind))} if papers else {}
    central: dict[int, Figure] = {}
    for f in db.scalars(select(Figure).where(Figure.paper_id.in_(ids), Figure.kind == "figure")) if papers else []:
        if f.paper_id not in central or figure_order(f) < figure_order(central[f.paper_id]):
            central[f.paper_id] = f
    return schemas.PaperPage(total=total, offset=offset, limit=limit,
                             items=[_summary(p, counts.get((p.id, "figure"), 0), counts.get((p.id, "table"), 0),
                                             central.get(p.id))
                                    for p in papers])


def figure_order(f: Figure) -> tuple:
    """Figures before tables; by central-figure rank where the model has scored them, then number."""
    return (f.kind != "figure", f.central_rank if f.central_rank is not None else 10**9, f.number)


@router.get("/papers/{paper_id}", response_model=schemas.PaperDetail, responses=responses(404, 422))
def get_paper(paper_id: PaperId, db: SessionDep, settings: SettingsDep):
    """A paper with its figures (central figure first) and the papers of the collection it cites
    and that cite it."""
    p = db.get(Paper, paper_id, options=[selectinload(Paper.figures)])
    if p is None:
        raise HTTPException(404, f"paper {paper_id} not found")
    cites = db.scalars(select(Paper).join(Citation, Citation.cited_paper_id == Paper.id)
                       .where(Citation.citing_paper_id == paper_id).order_by(Paper.year, Paper.id)).unique().all()
    cited_by = db.scalars(select(Paper).join(Citation, Citation.citing_paper_id == Paper.id)
                          .where(Citation.cited_paper_id == paper_id).order_by(Paper.year, Paper.id)).unique().all()
    figs = sorted(p.figures, key=figure_order)
    return schemas.PaperDetail(
        **_summary(p, sum(1 for f in figs if f.kind == "figure"), sum(1 for f in figs if f.kind == "table"),
                   next((f for f in figs if f.kind == "figure"), None)),
        abstract=p.abstract or "",
        n_pages=p.n_pages or 0, error=public_text(settings, p.error or ""), duplicate_of=p.duplicate_of_id,
        figures=[figure_card(f, p) for f in figs], pdf_url=pdf_url(settings, p),
        cites=[paper_ref(c) for c in cites], cited_by=[paper_ref(c) for c in cited_by])


@router.get("/papers/{paper_id}/pdf", response_class=FileResponse, responses={
    200: {"content": {"application/pdf": {}}, "description": "The paper's PDF"}, **responses(404, 422)})
def paper_pdf(paper_id: PaperId, db: SessionDep, settings: SettingsDep):
    """The paper's stored PDF, shown in the browser (open it at a page with `#page=N`)."""
    p = db.get(Paper, paper_id)
    if p is None:
        raise HTTPException(404, f"paper {paper_id} not found")
    path = stored_pdf(settings.data_dir, p.sha256)
    if path is None:
        raise HTTPException(404, f"the PDF of paper {paper_id} was not kept")
    name = (p.source or f"paper-{paper_id}.pdf").rsplit("/", 1)[-1]
    return FileResponse(path, media_type="application/pdf", filename=name, content_disposition_type="inline",
                        headers={"Cache-Control": "private, max-age=3600"})
