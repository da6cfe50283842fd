"""FastAPI application: a small read-only REST API over the collection and the static frontend.

The web issue grows this into the full API; the shapes here are already versioned (/api/v1).
"""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Iterator

from fastapi import Depends, FastAPI, HTTPException, Query
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from sqlalchemy import func, or_, select
from sqlalchemy.orm import Session, selectinload

from app.db.schema import Citation, Figure, Paper
from app.db.session import session_factory
from app.settings import Settings

FRONTEND_DIR = Path(__file__).resolve().parents[2] / "frontend"


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings()
    settings.ensure_dirs()
    factory = session_factory(settings.db_url)
    api = FastAPI(title="figsearch", version="0.1.0", docs_url="/docs")

    def get_db() -> Iterator[Session]:
        with factory() as s:
            yield s

    SessionDep = Annotated[Session, Depends(get_db)]

    def figure_json(f: Figure, paper: Paper | None = None) -> dict:
        d = {"figure_id": f.id, "paper_id": f.paper_id, "kind": f.kind, "label": f.label, "number": f.number,
             "caption": f.caption, "page": f.page, "bbox": f.bbox,
             "image_url": f"/api/v1/figures/{f.id}/image", "thumbnail_url": f"/api/v1/figures/{f.id}/thumbnail",
             "central_score": f.central_score, "central_rank": f.central_rank}
        if paper is not None:
            d["paper_title"], d["paper_year"] = paper.title, paper.year
        return d

    @api.get("/healthz")
    def healthz() -> dict:
        return {"status": "ok"}

    @api.get("/api/v1/papers")
    def list_papers(db: SessionDep, offset: int = Query(0, ge=0), limit: int = Query(50, ge=1, le=200)) -> dict:
        total = db.scalar(select(func.count(Paper.id)))
        rows = db.scalars(select(Paper).order_by(Paper.id).offset(offset).limit(limit)).all()
        return {"total": total, "offset": offset, "items": [
            {"paper_id": p.id, "title": p.title, "year": p.year, "status": p.status, "source": p.source}
            for p in rows]}

    @api.get("/api/v1/papers/{paper_id}")
    def get_paper(paper_id: int, db: SessionDep) -> dict:
        p = db.get(Paper, paper_id, options=[selectinload(Paper.figures)])
        if p is None:
            raise HTTPException(404, f"paper {paper_id} not found")
        cites = db.execute(select(Paper.id, Paper.title).join(Citation, Citation.cited_paper_id == Paper.id)
                           .where(Citation.citing_paper_id == paper_id)).all()
        cited_by = db.execute(select(Paper.id, Paper.title).join(Citation, Citation.citing_paper_id == Paper.id)
                              .where(Citation.cited_paper_id == paper_id)).all()
        figs = sorted(p.figures, key=lambda f: (f.kind != "figure", f.central_rank or 10**6, f.number))
        return {"paper_id": p.id, "title": p.title, "authors": p.authors, "year": p.year, "abstract": p.abstract,
                "status": p.status, "error": p.error, "source": p.source,
                "figures": [figure_json(f) for f in figs],
                "cites": [{"paper_id": i, "title": t} for i, t in cites],
                "cited_by": [{"paper_id": i, "title": t} for i, t in cited_by]}

    @api.get("/api/v1/figures")
    def list_figures(db: SessionDep, q: str = "", offset: int = Query(0, ge=0),
                     limit: int = Query(40, ge=1, le=200)) -> dict:
        """Browse figures; `q` filters captions by words (the search issue brings ranking)."""
        stmt = select(Figure, Paper).join(Paper).where(Figure.kind == "figure")
        for word in q.split()[:8]:
            stmt = stmt.where(or_(Figure.caption.ilike(f"%{word}%"), Paper.title.ilike(f"%{word}%")))
        total = db.scalar(select(func.count()).select_from(stmt.subquery()))
        rows = db.execute(stmt.order_by(Figure.paper_id, Figure.number).offset(offset).limit(limit)).all()
        return {"total": total, "offset": offset, "items": [figure_json(f, p) for f, p in rows]}

    @api.get("/api/v1/figures/{figure_id}")
    def get_figure(figure_id: int, db: SessionDep) -> dict:
        f = db.get(Figure, figure_id, options=[selectinload(Figure.mentions)])
        if f is None:
            raise HTTPException(404, f"figure {figure_id} not found")
        d = figure_json(f, db.get(Paper, f.paper_id))
        d["mentions"] = [{"sentence": m.sentence, "before": m.before, "after": m.after} for m in f.mentions]
        return d

    def _file(figure_id: int, db: Session, attr: str) -> FileResponse:
        f = db.get(Figure, figure_id)
        if f is None:
            raise HTTPException(404, f"figure {figure_id} not found")
        path = (settings.data_dir / getattr(f, attr)).resolve()
        if not getattr(f, attr) or not path.is_relative_to(settings.data_dir) or not path.exists():
            raise HTTPException(404, "image file missing")
        return FileResponse(path, media_type="image/png", headers={"Cache-Control": "public, max-age=86400"})

    @api.get("/api/v1/figures/{figure_id}/image")
    def figure_image(figure_id: int, db: SessionDep) -> FileResponse:
        return _file(figure_id, db, "image_path")

    @api.get("/api/v1/figures/{figure_id}/thumbnail")
    def figure_thumbnail(figure_id: int, db: SessionDep) -> FileResponse:
        return _file(figure_id, db, "thumbnail_path")

    @api.exception_handler(HTTPException)
    async def problem(_request, exc: HTTPException) -> JSONResponse:
        return JSONResponse({"title": "error", "status": exc.status_code, "detail": exc.detail},
                            status_code=exc.status_code, media_type="application/problem+json")

    api.mount("/", StaticFiles(directory=FRONTEND_DIR, html=True), name="frontend")
    return api
