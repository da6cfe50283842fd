"""Figures: browse, one figure with its mentions, its image and thumbnail, similar figures."""
from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, HTTPException, Path, Query
from fastapi.responses import FileResponse, Response
from sqlalchemy import func, select
from sqlalchemy.orm import selectinload

from app.api import schemas
from app.api.deps import EngineDep, FigureId, FiltersDep, HeavyDep, HolderDep, SessionDep, SettingsDep
from app.api.problems import check_limit, responses
from app.api.serialize import (CARD_COLUMNS, card_from_row, figure_card, mention_texts, panel_url, paper_ref,
                               region_words_of,
                               pdf_url, scored_items, with_related_reasons)
from app.cite import bibtex, citation_line, venue_of
from app.db.schema import Figure, Paper
from app.ingest.render import cut_panel
from app.pdfs import first_page_text, render_region, stored_pdf
from app.search.collection import linked_papers
from app.search.explain import idf_of

router = APIRouter(tags=["figures"])


@router.get("/figures", response_model=schemas.FigurePage, responses=responses(422))
def list_figures(db: SessionDep, settings: SettingsDep, filters: FiltersDep,
                 offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
                 limit: Annotated[int, Query(ge=1, le=1000)] = 24):
    """Browse figures, newest first (the search page shows these before a query is typed), with
    the same filters as /search."""
    check_limit("limit", limit, settings)
    stmt = filters.apply(select(*CARD_COLUMNS).join(Paper, Paper.id == Figure.paper_id))
    total = db.scalar(select(func.count()).select_from(stmt.subquery()))
    rows = db.execute(stmt.order_by(Figure.id.desc()).offset(offset).limit(limit)).all()
    return schemas.FigurePage(total=total, offset=offset, limit=limit,
                              items=[card_from_row(r) for r in rows])


def _figure_or_404(db, figure_id: int, **kw) -> Figure:
    f = db.get(Figure, figure_id, **kw)
    if f is None:
        raise HTTPException(404, f"figure {figure_id} not found")
    return f


@router.get("/figures/{figure_id}", response_model=schemas.FigureDetail, responses=responses(404, 422))
def get_figure(figure_id: FigureId, db: SessionDep, holder: HolderDep, settings: SettingsDep):
    """A figure with its caption, the sentences that mention it and its paper."""
    f = _figure_or_404(db, figure_id, options=[selectinload(Figure.mentions)])
    paper = db.get(Paper, f.paper_id)
    engine = holder.get()
    pdf = pdf_url(settings, paper)
    title = paper_ref(paper).title
    return schemas.FigureDetail(
        **figure_card(f, paper), bbox=list(f.bbox or []), region_bbox=f.region_bbox,
        mentions=[schemas.Mention(sentence=m.sentence, before=m.before, after=m.after) for m in f.mentions],
        paper=paper_ref(paper), in_index=engine is not None and figure_id in engine,
        paper_authors=paper.authors or "", pdf_url=pdf and f"{pdf}#page={f.page}",
        hires_url=pdf and f"/api/v1/figures/{figure_id}/hires",
        citation=citation_line(paper.authors, title, paper.year, f.label or f"{f.kind.title()} {f.number}"),
        bibtex=bibtex(paper.authors, title, paper.year, f.label or f"{f.kind.title()} {f.number}",
                      venue=venue_of(first_page_text(stored)) if (stored := stored_pdf(settings.data_dir, paper.sha256)) else None),
        panels=[schemas.Panel(**p, image_url=panel_url(figure_id, p["label"])) for p in f.panels or []])


def _file(db, settings, figure_id: int, attr: str) -> FileResponse:
    f = _figure_or_404(db, figure_id)
    rel = getattr(f, attr)
    path = (settings.data_dir / rel).resolve() if rel else None
    if path is None or not path.is_relative_to(settings.data_dir) or not path.is_file():
        raise HTTPException(404, f"the image file of figure {figure_id} is missing")
    return FileResponse(path, media_type="image/png", headers={"Cache-Control": "public, max-age=3600"})


IMAGE_RESPONSES = {200: {"content": {"image/png": {}}, "description": "PNG image"}, **responses(404, 422)}
RENDER_RESPONSES = {**IMAGE_RESPONSES, **responses(429)}


@router.get("/figures/{figure_id}/image", response_class=FileResponse, responses=IMAGE_RESPONSES)
def figure_image(figure_id: FigureId, db: SessionDep, settings: SettingsDep):
    """The figure crop (PNG) at the extraction resolution."""
    return _file(db, settings, figure_id, "image_path")


@router.get("/figures/{figure_id}/thumbnail", response_class=FileResponse, responses=IMAGE_RESPONSES)
def figure_thumbnail(figure_id: FigureId, db: SessionDep, settings: SettingsDep):
    """A small PNG thumbnail of the figure."""
    return _file(db, settings, figure_id, "thumbnail_path")


@router.get("/figures/{figure_id}/panels/{label}/image", response_class=Response, responses=RENDER_RESPONSES)
def panel_image(figure_id: FigureId, label: Annotated[str, Path(pattern="^[a-h]$", description="The panel's letter.")],
                db: SessionDep, settings: SettingsDep, heavy: HeavyDep):
    """One panel of a compound figure, cut from the figure's crop (PNG); 429 with Retry-After
    when the server's render workers and their queue are full."""
    f = _figure_or_404(db, figure_id)
    panel = next((p for p in f.panels or [] if p.get("label") == label), None)
    if panel is None:
        raise HTTPException(404, f"figure {figure_id} has no panel ({label})")
    path = (settings.data_dir / f.image_path).resolve() if f.image_path else None
    if path is None or not path.is_relative_to(settings.data_dir) or not path.is_file():
        raise HTTPException(404, f"the image file of figure {figure_id} is missing")
    region, box = list(f.region_bbox or f.bbox or []), panel["bbox"]
    png = heavy.cached(("panel", figure_id, label), cut_panel, path, region, box)
    return Response(png, media_type="image/png", headers={"Cache-Control": "public, max-age=3600"})


HIRES_MAX_PIXELS = 16_000_000


@router.get("/figures/{figure_id}/hires", response_class=Response, responses=RENDER_RESPONSES)
def figure_hires(figure_id: FigureId, db: SessionDep, settings: SettingsDep, heavy: HeavyDep,
                 scale: Annotated[float, Query(ge=1, le=8, description=(
                     "Zoom over 72 dpi (4 = 288 dpi), rounded to a multiple of 0.5; lowered so the image "
                     "stays under 16 megapixels."))] = 4):
    """The figure's graphic (or table grid), without its caption, rendered from the paper's
    stored PDF at a higher resolution (PNG); papers ingested before regions were recorded show
    the region with its caption (`bbox`). Renders share a small pool of workers and a cache;
    429 with Retry-After when the workers and their queue are full."""
    f = _figure_or_404(db, figure_id)
    paper = db.get(Paper, f.paper_id)
    pdf = stored_pdf(settings.data_dir, paper.sha256 if paper else None)
    if pdf is None:
        raise HTTPException(404, f"the PDF of figure {figure_id}'s paper was not kept; use /image")
    scale = min(8.0, max(1.0, round(scale * 2) / 2))
    page, box = f.page, list(f.region_bbox or f.bbox or [])
    try:
        png = heavy.cached(("hires", figure_id, scale), render_region, pdf, page, box, scale, HIRES_MAX_PIXELS)
    except ValueError as exc:
        raise HTTPException(404, f"figure {figure_id}: {exc}") from None
    return Response(png, media_type="image/png", headers={"Cache-Control": "public, max-age=3600"})


@router.get("/figures/{figure_id}/similar", response_model=schemas.SimilarResponse, responses=responses(404, 422))
def similar_figures(figure_id: FigureId, db: SessionDep, settings: SettingsDep, engine: EngineDep, holder: HolderDep,
                    k: Annotated[int, Query(ge=1, le=100)] = 12,
                    scope: Annotated[str, Query(pattern="^(other_papers|same_paper|all|linked_papers)$", description=(
                        "other_papers (default): related figures of other papers; same_paper: more "
                        "from this figure's paper; all: both, ranked by figure content only; "
                        "linked_papers: the figures of the papers that cite or are cited by this "
                        "figure's paper, ranked like other_papers."))] = "other_papers"):
    """Related figures (for a table: related tables): candidates by figure text (and, for other
    papers, by related papers), ranked by the fusion of text, picture, figure type and
    paper-topic similarity; each result says why (shared terms and reasons in words). Citation
    links are never a ranking signal; `linked_papers` only chooses whose figures are ranked."""
    check_limit("k", k, settings)
    if engine is None:
        if db.get(Figure, figure_id) is None:
            raise HTTPException(404, f"figure {figure_id} not found")
        return schemas.SimilarResponse(mode="figure", figure_id=figure_id, k=k, scope=scope, items=[],
                                       message=holder.reason or "no search index")
    if figure_id not in engine:
        f = _figure_or_404(db, figure_id)
        why = f"the {f.kind} is not in the search index yet (it is added at the next index refresh)"
        return schemas.SimilarResponse(mode="figure", figure_id=figure_id, k=k, scope=scope, items=[],
                                       index_version=engine.version, message=why)
    if scope == "linked_papers":
        paper_id = int(engine.paper_ids[engine.row_of(figure_id)])
        linked = linked_papers(db, paper_id)
        hits = engine.similar(figure_id, k=k, scope="other_papers", within_papers=linked)
    else:
        linked = None
        hits = engine.similar(figure_id, k=k, scope=scope)
    source_text = engine.captions[engine.row_of(figure_id)] + " " + mention_texts(db, [figure_id]).get(figure_id, "")
    message = None
    if not hits:  # figures are related to figures, tables to tables
        what = "tables" if engine.types.kind_of_row(engine.row_of(figure_id)) == "table" else "figures"
        message = (f"this paper has no other indexed {what}" if scope == "same_paper" else
                   "no paper of the collection cites or is cited by this paper" if linked == [] else
                   f"the papers that cite or are cited by this paper have no indexed {what}" if linked else
                   f"no related {what} found")
    items = scored_items(db, hits, query_text=source_text, engine=engine, same_paper=scope == "same_paper",
                         query_words=region_words_of(db, [figure_id], tables=True).get(figure_id, ""))
    if scope in ("other_papers", "linked_papers"):
        query = db.get(Figure, figure_id)
        title = paper_ref(db.get(Paper, query.paper_id)).title if query is not None else ""
        words = region_words_of(db, [figure_id] + [h.figure_id for h in hits])
        items = with_related_reasons(hits, items, engine.captions[engine.row_of(figure_id)], title,
                                     idf_of(engine.lexical(), engine.paper_ids), words, words.get(figure_id, ""),
                                     idf_of(engine.figure_words.view) if engine.figure_words is not None else None)
    return schemas.SimilarResponse(mode="figure", figure_id=figure_id, k=k, scope=scope, items=items,
                                   index_version=engine.version, message=message)
