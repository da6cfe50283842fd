"""The collection as the search engine and the evaluation see it: figure texts from the DB and
the paper graph (same paper, citing/cited) that defines weak relevance."""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from sqlalchemy import select
from sqlalchemy.orm import Session, selectinload

from app.db.schema import Citation, Figure, Paper, in_collection
from app.search.doc_table import FigureDoc
from app.search.text import figure_text


@dataclass
class Collection:
    docs: list[FigureDoc]
    sha_of_paper: dict[int, str] = field(default_factory=dict)
    neighbours: dict[int, set[int]] = field(default_factory=lambda: defaultdict(set))  # citing or cited
    paper_text: dict[int, str] = field(default_factory=dict)  # title + abstract, per paper id
    body_terms: dict[int, dict[str, int]] = field(default_factory=dict)  # per paper id (when stored)
    figure_type: dict[int, str | None] = field(default_factory=dict)  # per figure id
    type_scores: dict[int, dict | None] = field(default_factory=dict)  # per figure id: {type: score}
    image_path: dict[int, str] = field(default_factory=dict)  # crop, relative to the data dir
    region_words: dict[int, str] = field(default_factory=dict)  # per figure id: the words printed inside it
    # per compound figure id: (its crop's region in PDF points, its panels [{label, bbox, ...}])
    panels: dict[int, tuple[list[float], list[dict]]] = field(default_factory=dict)


def linked_papers(session: Session, paper_id: int) -> list[int]:
    """Papers of the collection that cite, or are cited by, `paper_id` (for a block of their
    figures; never a ranking signal: the evaluation counts these links as relevance)."""
    cited = select(Citation.cited_paper_id).where(Citation.citing_paper_id == paper_id)
    citing = select(Citation.citing_paper_id).where(Citation.cited_paper_id == paper_id)
    return sorted(set(session.scalars(cited)) | set(session.scalars(citing)))


def paper_titles(session: Session):
    """A lookup of the titles of given paper ids (what a text search asks about the few papers it
    limits, to tell whether the query names one of them: Searcher.spread_papers)."""
    def titles(paper_ids: list[int]) -> dict[int, str]:
        return dict(session.execute(select(Paper.id, Paper.title).where(Paper.id.in_(paper_ids))).all())
    return titles


def load_collection(session: Session, kinds: tuple[str, ...] = ("figure",)) -> Collection:
    """Figures (and, when asked, tables) of successfully ingested papers; text = caption + mention
    contexts (the figure recommender's document), plus the cell text of a table; a figure's words
    printed inside it are searched by the lexical index too (FigureDoc.words)."""
    q = (select(Figure).join(Paper).where(in_collection(), Figure.kind.in_(kinds))
         .options(selectinload(Figure.mentions)).order_by(Figure.id))
    docs = []
    col = Collection(docs)
    for f in session.scalars(q):
        contexts = [" ".join(x for x in (m.before, m.sentence, m.after) if x) for m in f.mentions]
        text = figure_text(f.caption, contexts)
        if f.kind == "table" and f.region_text:
            text = f"{text}\n{f.region_text}"
        sub_captions = [p["caption_part"] for p in f.panels or []
                        if p.get("caption_part") and p["caption_part"] not in f.caption]
        if sub_captions:  # panels' sub-captions printed inside the figure are searchable too
            text = f"{text}\n{' '.join(sub_captions)}"
        words = f.region_text if f.kind == "figure" else ""  # a table's cells are in its text already
        docs.append(FigureDoc(f.id, f.paper_id, f.caption, text, f.kind, words))
        col.figure_type[f.id] = f.figure_type
        col.type_scores[f.id] = f.type_scores
        col.image_path[f.id] = f.image_path
        if words:
            col.region_words[f.id] = words
        if f.panels and (f.region_bbox or f.bbox):
            col.panels[f.id] = (list(f.region_bbox or f.bbox), f.panels)
    col.sha_of_paper = dict(session.execute(select(Paper.id, Paper.sha256)).all())
    for pid, title, abstract, body in session.execute(
            select(Paper.id, Paper.title, Paper.abstract, Paper.body_terms).where(in_collection())):
        col.paper_text[pid] = ". ".join(x for x in (title, abstract) if x)
        if body:
            col.body_terms[pid] = body
    for a, b in session.execute(select(Citation.citing_paper_id, Citation.cited_paper_id)):
        col.neighbours[a].add(b)
        col.neighbours[b].add(a)
    return col
