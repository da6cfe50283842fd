"""Free-text search and search by an uploaded figure."""
from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Annotated, Literal

from fastapi import APIRouter, File, Form, HTTPException, Query, Request, UploadFile
from fastapi.concurrency import run_in_threadpool
from sqlalchemy.orm import Session

from app.api import schemas
from app.api.deps import EngineDep, FiltersDep, HolderDep, SessionDep, SettingsDep
from app.api.engine_holder import EngineHolder
from app.api.problems import check_limit, responses
from app.api.query_image import decode_query_image
from app.api.serialize import scored_items
from app.labels import CAPTION_RE, kind_of
from app.search.collection import paper_titles
from app.search.searcher import Searcher
from app.search.filters import FigureFilter, year_range
from app.search.text import analyze
from app.vision.pictures import picture_query
from app.vision.vocabulary import types_named_in
from app.settings import Settings

router = APIRouter(tags=["search"])

IMAGE_QUERIES_MESSAGE = ("the search index has no visual vectors yet: rebuild it (`figsearch index`), or add "
                         "the figure's caption to search by its text")


def find_hits(db: Session, settings: Settings, engine: Searcher, holder: EngineHolder, q: str, k: int,
              offset: int, rerank: bool | None, filters: FigureFilter | None = None,
              per_paper: int | None = None):
    """The served search's hits (up to k + 1, from `offset`), the query actually searched (the
    closest known spelling when `q` finds nothing because of a word the collection lacks),
    whether embeddings re-ranked, and the filters' allowed rows. `per_paper`: at most this many
    figures of a paper in each block of results (None: the ranking config's; 0: no limit)."""
    want = settings.search_rerank if rerank is None else (rerank and holder.dense_enabled)
    if want:
        holder.start_encoder()  # first use without the startup warm-up: load in the background
    use = want and holder.encoder_ready and engine.vectors is not None
    if use and engine.encoder is None:
        engine.encoder = holder.encoder
    allowed = filters.allowed_rows(db, engine.figure_ids) if filters is not None else None
    kind = filters.kind if filters is not None else "figure"

    hits = engine.search(q, k + 1, offset=offset, rerank=use, allowed_rows=allowed, kind=kind,
                         per_paper=per_paper, titles=paper_titles(db))
    return hits, hits.query, use, allowed


def run_search(db: Session, settings: Settings, engine: Searcher | None, holder: EngineHolder,
               q: str, k: int, offset: int, rerank: bool | None,
               filters: FigureFilter | None = None, per_paper: int | None = None) -> schemas.SearchResponse:
    if engine is None:
        return schemas.SearchResponse(query=q, k=k, offset=offset, items=[], has_more=False, reranked=False,
                                      message=holder.reason or "no search index")
    hits, searched, use, allowed = find_hits(db, settings, engine, holder, q, k, offset, rerank, filters, per_paper)
    has_more = len(hits) > k
    items = scored_items(db, hits[:k], offset, query_text=searched, engine=engine, snippets=True,
                         named_types=types_named_in(searched))
    for item in items:  # "more from this paper": its other matches were moved further down
        item.more_from_paper = item.paper_id in hits.limited_papers
    msg = None
    unread = not items and offset == 0 and not analyze(searched) and not types_named_in(searched)
    absent = [t for t in types_named_in(searched) if not engine.shows_type(t)]
    if items and offset == 0 and absent:  # say why no figure of the named type is among the results
        msg = (f"no figure in the collection is classified as {' or '.join(t.replace('_', ' ') for t in absent)}; "
               "these results match the words")
    if items and searched != q:
        msg = f"nothing matches “{q}”; showing results for “{searched}”"
    if unread:
        # "the of and", "a": nothing was searched (a type's name, "table", is searched by type), which
        # other words or filters would not change
        msg = (f"the search reads no word of “{q}”: words as common as “the” or “of”, and single letters, "
               "are left out; name what the figure shows, e.g. attention heatmap")
    elif not items and offset == 0:
        msg = "no figure shares these words or is close in meaning"
        wanted = settings.search_rerank if rerank is None else rerank
        if wanted and not use and holder.dense_enabled and engine.vectors is not None:
            # the query encoder is still loading (a server just started): only words were searched
            msg = "no figure shares these words; the search by meaning is still loading: try again in a moment"
        if allowed is not None or (filters is not None and filters.kind != "figure"):
            msg = ("nothing in the search index passes these filters" if allowed is not None and not allowed.any() else
                   "no figure passing the filters shares these words or is close in meaning")
    return schemas.SearchResponse(query=q, k=k, offset=offset, items=items, has_more=has_more,
                                  reranked=use, index_version=engine.version, message=msg, no_word_read=unread,
                                  per_paper=engine.ranking.text_per_paper if per_paper is None else per_paper,
                                  per_paper_block=engine.ranking.text_block)


@router.get("/search", response_model=schemas.SearchResponse, responses=responses(422))
def search(db: SessionDep, settings: SettingsDep, engine: EngineDep, holder: HolderDep, filters: FiltersDep,
           q: Annotated[str, Query(min_length=1, max_length=500, pattern=r"\S", description="Keywords (at least one non-space character).")],
           k: Annotated[int, Query(ge=1, le=1000, description="Results per page.")] = 20,
           offset: Annotated[int, Query(ge=0, le=1000, description="Results to skip.")] = 0,
           rerank: Annotated[bool | None, Query(description="Dense re-ranking (default: server setting).")] = None,
           per_paper: Annotated[int | None, Query(ge=0, le=1000, description=(
               "At most this many figures of one paper in each block of `per_paper_block` results "
               "(the response says both); a paper's further matches are moved down, not removed. "
               "0: no limit. Default: the server's ranking config."))] = None):
    """Figures (or tables: `kind`) for a keyword query: BM25 over captions, mention sentences and
    table cells, re-ranked with MiniLM embeddings when enabled. Each result has the score
    breakdown, matched terms and the best matching sentence. Filters (kind, year range, paper,
    figure type) restrict the results before ranking. At most `per_paper` figures of a paper
    come in each block of results, unless the query names the paper by its title; a result whose
    paper had further matches moved down says so (`more_from_paper`): the same query filtered to
    its paper (`paper_id`) shows them together."""
    check_limit("k", k, settings)
    if not q.strip():
        raise HTTPException(422, "q must contain at least one word")
    return run_search(db, settings, engine, holder, q.strip(), k, offset, rerank, filters, per_paper)


FACET_MATCHES = 1000  # a query's facet counts are over at most this many of its best matches


@router.get("/search/facets", response_model=schemas.Facets, responses=responses(422))
def facets(db: SessionDep, settings: SettingsDep, engine: EngineDep, holder: HolderDep, filters: FiltersDep,
           q: Annotated[str | None, Query(max_length=500, description=(
               "Count only the figures this query finds (its best 1000 matches), as the search "
               "with the same filters ranks them."))] = None,
           rerank: Annotated[bool | None, Query(description="With `q`: as in /search.")] = None):
    """What the filters can choose from: the collection's year range, and the number of figures
    of each figure type under the other filters given (the `type` filter itself is not applied,
    so each count is what choosing that type gives); with `q`, among the query's matches."""
    lo, hi = year_range(db)
    if q is not None and q.strip():
        found = []
        if engine is not None:
            untyped = dataclasses.replace(filters, figure_type=None)
            found = find_hits(db, settings, engine, holder, q.strip(), FACET_MATCHES, 0, rerank, untyped,
                              per_paper=0)[0][:FACET_MATCHES]  # counts: the order does not matter
        by_type = Counter(engine.types.type_of_row(engine.row_of(h.figure_id)) for h in found)
        by_type.pop(None, None)
        total = len(found)
    else:
        by_type, total = filters.type_counts(db), filters.count(db)
    counts = sorted(by_type.items(), key=lambda x: (-x[1], x[0]))
    return schemas.Facets(year_min=lo, year_max=hi, types=[schemas.TypeCount(type=t, count=n) for t, n in counts],
                          total=total)


# Content types that say nothing about a file: its first bytes tell whether it is a PNG or JPEG.
GENERIC_TYPES = frozenset({"", "application/octet-stream", "binary/octet-stream"})


def _sniff_image(head: bytes) -> str | None:
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    return None


@router.post("/search/by-image", response_model=schemas.SimilarResponse,
             responses=responses(413, 415, 422, 429, 501))
async def search_by_image(
        request: Request, db: SessionDep, settings: SettingsDep, engine: EngineDep, holder: HolderDep,
        image: Annotated[UploadFile, File(description="A PNG or JPEG figure.")],
        caption: Annotated[str, Form(max_length=500, description="The figure's caption (optional; at most 500 characters, as `q`).")] = "",
        k: Annotated[int, Query(ge=1, le=1000)] = 12,
        kind: Annotated[Literal["auto", "figure", "table"], Query(description=(
            "Search among figures or tables; auto (default): without a caption the kind of the "
            "item the picture copies, else tables only when nearly all its nearest pictures are "
            "tables (with a trained image branch, figures); with one, "
            "tables when it is labelled as a table's ('Table 2: ...'). The response's `kind` says "
            "which."))] = "auto"):
    """Similar figures for an uploaded figure. With a caption, the caption is searched as text
    (`mode: "caption"`). Without one, the collection's figures are ranked by picture similarity
    (`mode: "image"`): the trained image branch when a model was trained (`figsearch train`),
    otherwise the picture vectors every index holds (pretrained backbone): copies of the picture
    first (told by perceptual hashes; their reasons say "same picture"), then figures with a panel
    the picture copies (reason "same picture as panel (b) of this figure", `panel` that panel), then
    figures of the upload's kind, nearest picture first. A picture of a table is searched among
    the tables (`kind`)."""
    check_limit("k", k, settings)
    ctype = (image.content_type or "").split(";")[0].strip().lower()
    # a client that names no type (Python requests given an open file) or a generic one (curl for a
    # file without a known extension) is judged by the file's bytes below; a named other type is refused
    if ctype not in settings.image_types and ctype not in GENERIC_TYPES:
        raise HTTPException(415, f"unsupported image type {ctype!r}; "
                                 f"accepted: {', '.join(settings.image_types)}")
    limit = int(settings.max_image_mb * 1024 * 1024)
    if image.size is not None and image.size > limit:
        raise HTTPException(413, f"image too large ({image.size / 1e6:.1f} MB > {settings.max_image_mb:g} MB)")
    head = await image.read(16)
    sniffed = _sniff_image(head)
    if sniffed is None or sniffed not in settings.image_types:
        raise HTTPException(415, f"the file is not a PNG or JPEG image (accepted: {', '.join(settings.image_types)})")
    text = " ".join(caption.split())
    if not text:
        body = head + await image.read(limit + 1 - len(head))
        if len(body) > limit:
            raise HTTPException(413, f"image too large (> {settings.max_image_mb:g} MB)")
        # pixel budget from the header, one decode (413 / 422 before torch or the model is loaded)
        heavy = request.app.state.heavy  # decodes and picture models share the bounded pool (429 when full)
        picture = await run_in_threadpool(heavy.run, decode_query_image, body, settings.max_image_megapixels)
        from app.learn.image_search import image_model, search_by_image as image_hits

        loaded = await run_in_threadpool(image_model, settings.data_dir, settings.learned_model or "fused")
        if engine is None:
            return schemas.SimilarResponse(mode="image", k=k, items=[], index_version=None,
                                           message=holder.reason or "no search index")
        query_types = []
        searched = None
        if loaded is not None:  # a trained image branch: it holds no picture vector to tell a table by
            searched = kind if kind != "auto" else "figure"
            hits = await run_in_threadpool(heavy.run, image_hits, loaded, engine, picture, k, searched)
        elif engine.visual is not None:  # every index has the figures' visual picture vectors
            upload = await run_in_threadpool(heavy.run, picture_query, picture, settings.data_dir)
            kinds = upload.types
            # a table searched among figures found text figures, never the table it copies
            searched = engine.picture_kind(upload.vector, upload.look) if kind == "auto" else kind
            hits = engine.by_picture(upload.vector, k, kind=searched, type_scores=kinds.scores if kinds else None,
                                     look=upload.look)
            query_types = kinds.figure_types if kinds else []
        else:
            raise HTTPException(501, IMAGE_QUERIES_MESSAGE)
        items = scored_items(db, hits, 0)
        return schemas.SimilarResponse(mode="image", k=k, items=items, index_version=engine.version,
                                       message=None if items else f"no {searched or 'figure'} to compare with yet",
                                       query_types=query_types, kind=searched)
    # a caption labelled as a table's ("Table 2: ...") searches the tables, as its picture would
    label = CAPTION_RE.match(text)
    searched = kind if kind != "auto" else kind_of(label["word"]) if label else "figure"
    res = await run_in_threadpool(run_search, db, settings, engine, holder, text, k, 0, None,
                                  FigureFilter(kind=searched))
    return schemas.SimilarResponse(mode="caption", query=text, k=k, items=res.items,
                                   index_version=res.index_version,
                                   message=res.message or "searched by the caption text", kind=searched)

