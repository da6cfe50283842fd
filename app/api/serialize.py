"""Database rows and search hits -> response models."""
from __future__ import annotations

from typing import Sequence

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.api import schemas
from app.db.schema import Figure, Paper
from app.search.searcher import Hit, Searcher
from app.search.explain import (best_sentence, highlight_spans, idf_of, informative_terms, reasons, shown_named_type,
                                surface_words, words_both_print)
from app.search.looks import panel_letter
from app.search.text import analyze


API = "/api/v1"

# columns needed for a figure card (Core select: no ORM objects on the hot path)
CARD_COLUMNS = (Figure.id, Figure.paper_id, Figure.kind, Figure.label, Figure.number, Figure.caption,
                Figure.page, Figure.width, Figure.height, Figure.central_score, Figure.central_rank,
                Paper.title, Paper.year, Figure.text_source, Figure.figure_type, Figure.figure_types)


def urls(figure_id: int) -> dict:
    return {"image_url": f"{API}/figures/{figure_id}/image",
            "thumbnail_url": f"{API}/figures/{figure_id}/thumbnail"}


def panel_url(figure_id: int, label: str) -> str:
    return f"{API}/figures/{figure_id}/panels/{label}/image"


def card_from_row(r) -> dict:
    (fid, pid, kind, label, number, caption, page, width, height, cscore, crank, title, year, text_source, ftype,
     ftypes) = r
    return dict(figure_id=fid, paper_id=pid, kind=kind, label=label, number=number, caption=caption,
                page=page, width=width or 0, height=height or 0, central_score=cscore, central_rank=crank,
                paper_title=title or "", paper_year=year, text_source=text_source or "text_layer",
                figure_type=ftype, figure_types=ftypes or [], **urls(fid))


def figure_card(f: Figure, paper: Paper | None = None) -> dict:
    return dict(figure_id=f.id, paper_id=f.paper_id, kind=f.kind, label=f.label, number=f.number,
                caption=f.caption, page=f.page, width=f.width or 0, height=f.height or 0,
                central_score=f.central_score, central_rank=f.central_rank,
                paper_title=(paper.title if paper else "") or "", paper_year=paper.year if paper else None,
                text_source=f.text_source or "text_layer", figure_type=f.figure_type,
                figure_types=f.figure_types or [], **urls(f.id))


def cards_for(db: Session, figure_ids: list[int]) -> dict[int, dict]:
    if not figure_ids:
        return {}
    rows = db.execute(select(*CARD_COLUMNS).join(Paper, Paper.id == Figure.paper_id)
                      .where(Figure.id.in_(figure_ids))).all()
    return {r[0]: card_from_row(r) for r in rows}


def mention_texts(db: Session, figure_ids: list[int]) -> dict[int, str]:
    """The mention sentences (with their neighbours) of figures, joined per figure: the rest of the
    figure text the lexical match ran on, so matched stems can be shown as the words they came from."""
    from app.db.schema import Mention

    out: dict[int, list[str]] = {}
    if figure_ids:
        rows = db.execute(select(Mention.figure_id, Mention.before, Mention.sentence, Mention.after)
                          .where(Mention.figure_id.in_(figure_ids))).all()
        for fid, *parts in rows:
            out.setdefault(fid, []).extend(p for p in parts if p)
    return {fid: " ".join(v) for fid, v in out.items()}


def scored_items(db: Session, hits: list[Hit], offset: int = 0, query_text: str = "",
                 engine: Searcher | None = None, snippets: bool = False,
                 same_paper: bool = False, named_types: Sequence[str] = (),
                 query_words: str = "") -> list[schemas.ScoredFigure]:
    """Hits in order, joined with their database rows; hits whose figure was deleted since the
    index was built are dropped (the next index version will not have them). Each item says why it
    matched: informative shared terms, reasons in words and (text queries) the best sentence. For a
    query naming figure types (`named_types`), a figure found by its type says it looks like (or,
    less surely, may show) the named type it shows best, which need not be its dominant one.
    `query_words`: the words printed inside the query figure (related figures: what it prints)."""
    cards = cards_for(db, [h.figure_id for h in hits])
    idf = idf_of(engine.lexical(), engine.paper_ids) if engine is not None else None
    # a text query's words are kept however ordinary; words two figures share only when topical
    terms = {h.figure_id: informative_terms(list(h.matched_terms), idf, topical=not snippets) for h in hits}
    wanted = [h.figure_id for h in hits if snippets or set(terms[h.figure_id]) - set(analyze(f"{query_text} {h.caption}"))]
    # a related figure's words are named as both figures print them: its other text is read too
    # when a shared term is outside its caption (only read for what it prints, not for the forms)
    related = bool(query_text) and not snippets
    checked = [h.figure_id for h in hits if related and set(terms[h.figure_id]) - set(analyze(h.caption))]
    extra = mention_texts(db, list({*wanted, *checked}))  # only for hits with a term outside the captions, or snippets
    # the lexical text also holds the words printed inside figures and the cells of tables
    printed = region_words_of(db, list({*wanted, *checked}), tables=True)
    told = set(wanted)
    types = {fid: shown_named_type(named_types, shown) if named_types else dominant
             for fid, dominant, shown in db.execute(
                 select(Figure.id, Figure.figure_type, Figure.figure_types)
                 .where(Figure.id.in_([h.figure_id for h in hits if h.signals])))} if hits else {}
    cells = {fid: text for fid, text in printed.items() if cards.get(fid, {}).get("kind") == "table"} \
        if snippets else {}
    copied = {h.figure_id: panel_letter((h.signals or {}).get("same_panel", 0.0)) for h in hits}
    copied = {fid: letter for fid, letter in copied.items() if letter}  # the panel an uploaded picture copies
    panels = dict(db.execute(select(Figure.id, Figure.panels).where(
        Figure.id.in_([h.figure_id for h in hits if (snippets and query_text) or h.figure_id in copied]),
        Figure.panels.is_not(None))).all()) if (snippets and query_text) or copied else {}
    query_stems = set(analyze(query_text)) if snippets else set()
    out = []
    shown: set[str] = set()  # snippets of the results above: a generic sentence is not repeated
    for i, h in enumerate(hits):
        card = cards.get(h.figure_id)
        if card is None:
            continue
        snippet = None
        if snippets and query_text:
            snippet = best_sentence(query_text, h.caption, [extra.get(h.figure_id, "")], idf,
                                    cells=cells.get(h.figure_id) or "", about=(card["kind"], card["number"]),
                                    seen=shown)
            if snippet:
                shown.add(snippet["text"])
        out.append(schemas.ScoredFigure(
            **card, rank=offset + i + 1, score=round(h.score, 6), lexical_score=round(h.lexical_score, 6),
            embedding_score=None if h.embedding_score is None else round(h.embedding_score, 6),
            # a related figure's words are those both figures print ("step-wise" was said of one printing "frame-wise")
            matched_terms=surface_words(terms[h.figure_id], query_text, h.caption, extra.get(h.figure_id, ""),
                                        printed.get(h.figure_id, "")) if not related
            else words_both_print(terms[h.figure_id], query_text, h.caption,
                                  *((extra.get(h.figure_id, ""), printed.get(h.figure_id, "")) if h.figure_id in told else ()),
                                  text_words=query_words, other_words=" ".join(
                                      (extra.get(h.figure_id, ""), printed.get(h.figure_id, "")))),
            reasons=reasons(h.signals, types.get(h.figure_id), same_paper, named_type=bool(named_types)),
            snippet=snippet,
            caption_highlights=[list(sp) for sp in highlight_spans(card["caption"] or "", query_stems)]
            if query_stems else [],
            panel=(copied_panel(h.figure_id, panels.get(h.figure_id), copied[h.figure_id]) if h.figure_id in copied
                   else matching_panel(h.figure_id, panels.get(h.figure_id), query_text))))
    return out


def matching_panel(figure_id: int, panels: list[dict] | None, query_text: str) -> schemas.Panel | None:
    """The one panel whose caption part shares the most query terms (none on a tie or no match)."""
    q = set(analyze(query_text))
    shared = sorted(((len(q & set(analyze(p.get("caption_part", "")))), p) for p in panels or []),
                    key=lambda sp: -sp[0])
    if not shared or shared[0][0] == 0 or (len(shared) > 1 and shared[1][0] == shared[0][0]):
        return None
    p = shared[0][1]
    return schemas.Panel(**p, image_url=panel_url(figure_id, p["label"]))


def copied_panel(figure_id: int, panels: list[dict] | None, letter: str) -> schemas.Panel | None:
    """The figure's panel `letter` (the one an uploaded picture copies), None when not stored."""
    p = next((p for p in panels or [] if p.get("label") == letter), None)
    return None if p is None else schemas.Panel(**p, image_url=panel_url(figure_id, letter))


def pdf_url(settings, paper: Paper | None) -> str | None:
    """The paper's PDF route when its PDF was kept, else None."""
    from app.pdfs import stored_pdf

    if paper is None or stored_pdf(settings.data_dir, paper.sha256) is None:
        return None
    return f"{API}/papers/{paper.id}/pdf"


def paper_ref(p: Paper) -> schemas.PaperRef:
    return schemas.PaperRef(paper_id=p.id, title=p.title or p.source or f"paper {p.id}", year=p.year)



def region_words_of(db: Session, figure_ids: Sequence[int], tables: bool = False) -> dict[int, str]:
    """The words printed inside each figure (its region's text layer), for the ones that have any;
    with `tables`, a table's cell text too (both are part of the text the lexical index reads)."""
    kinds = ("figure", "table") if tables else ("figure",)
    return dict(db.execute(select(Figure.id, Figure.region_text).where(
        Figure.id.in_(list(figure_ids)), Figure.kind.in_(kinds), Figure.region_text != "")).all()) \
        if figure_ids else {}


def with_related_reasons(hits: list[Hit], items: list[schemas.ScoredFigure], caption: str, title: str,
                         idf=None, words: dict[int, str] | None = None, query_words: str = "",
                         words_idf=None) -> list[schemas.ScoredFigure]:
    """Related figures of other papers (`items`, serialized from `hits`) with their reasons in
    words (explain.related_reasons): their kind, the words printed inside both figures (`words`
    per figure id, `query_words` the query figure's), the words both captions use, the words both
    papers' titles use. `caption` and `title` are the query figure's."""
    from app.search.explain import related_reasons

    signals = {h.figure_id: h.signals for h in hits}
    words = words or {}
    return [item.model_copy(update={"reasons": related_reasons(
        signals.get(item.figure_id), item.figure_type, caption, item.caption, title, item.paper_title, idf,
        query_words, words.get(item.figure_id, ""), words_idf)})
        for item in items]
