"""The searcher: one query path over the parts of an immutable, versioned index.

It answers three questions, the first two also in a batch form for the evaluation:
  search(text)        the figures whose words or meaning match a text query: lexical top
                      candidates, united with the nearest figure-text embeddings and with the
                      figures that show a figure type the query names, re-ranked by the fusion of
                      lexical score, embedding cosine and type score, at most a few figures of a
                      paper in each block of results (spread.py); when nothing matches because
                      of a word the collection lacks, the closest known spelling is searched.
  similar(figure)     related figures (Kuzi & Zhai's recommendation protocol, generalised): the
                      lexical top-`candidates` with the figure's own text as the query, united
                      with its nearest embeddings and the figures of the nearest papers, re-ranked
                      by the fusion of every signal (fusion.py).
  by_picture(vector)  the figures whose picture vector is nearest to an uploaded picture's.
First stage, candidate counts, fusion weights and thresholds come from the index version's
RankingConfig (ranking.py), the same for every caller. The query encoder (text -> vector) and
the vocabulary of figure-type names are given by the caller, so tests and services choose them.

Parts (index_parts.py): doc table, lexical index, figure-text vectors, picture vectors, paper
index, type index, spelling vocabulary, words inside the figures; each saves and loads itself.
`save(index_root)` writes a new version directory (with a manifest of its files, checked at
load: versions.py) and then atomically replaces the `CURRENT` pointer, so a running service can
poll `current_version` and swap in `load_current` when it changes; readers never see a half-written index.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, NamedTuple, Sequence

import numpy as np

from app.search.doc_table import DocTable, FigureDoc
from app.search.figure_words import FigureWords
from app.search.fusion import SCOPES, diversify, fuse, order, same_picture_first, seed_weights
from app.search.index_parts import read_parts, write_parts
from app.search.lexical import LexicalIndex
from app.search.looks import LookIndex, panel_number, same_picture
from app.search.one_thread import one_thread
from app.search.query_threads import run_parts
from app.search.picture_rank import PictureRanking, rank_by_picture
from app.search.papers import PaperIndex
from app.search.ranking import RankingConfig
from app.search.segments import SegmentedIndex
from app.search.spread import names_paper, spread
from app.search.spelling import Spelling
from app.search.text import analyze
from app.search.type_index import TypeIndex
from app.search.vectors import VectorIndex, l2_normalize
from app.model_store.versions import CURRENT, check_version, choose, publish

Encoder = Callable[[list[str]], np.ndarray]
TitleLookup = Callable[[list[int]], Mapping[int, str]]  # paper ids -> their titles


class Hit(NamedTuple):
    figure_id: int
    paper_id: int
    score: float
    lexical_score: float
    embedding_score: float | None
    caption: str
    matched_terms: list[str]
    signals: dict | None = None  # per-signal values behind `score` (see fusion.py)


class Hits(list):
    """A text query's hits, best first, with `query`: the text actually searched (the query, or
    the spelling that replaced it when the query itself found nothing), and `limited_papers`: the
    papers the per-paper limit moved figures of further down (spread.py)."""

    def __init__(self, hits=(), query: str = "", limited_papers=frozenset()):
        super().__init__(hits)
        self.query = query
        self.limited_papers = frozenset(getattr(hits, "limited_papers", limited_papers))


@dataclass(frozen=True)
class QueryVocabulary:
    """The words a text query can use beyond the collection's: which figure types a query names
    ("heat map" -> heatmap), and the words of those names, which spelling may correct to. The
    product's vocabulary is app.vision.vocabulary's; the default names nothing."""

    types_named_in: Callable[[str], Sequence[str]] = lambda query: ()
    understood: frozenset[str] = field(default_factory=frozenset)


SEGMENTED_MIN = 500_000  # figures from which the lexical part is compressed postings on disk (segments.py)


def _make_lexical(analysed: Sequence[Sequence[str]], method: str, ranking: RankingConfig | None):
    """The in-memory index for collections below SEGMENTED_MIN figures; above, compressed
    postings (about half the bytes, memory-mapped once the version is saved and loaded), which
    score BM25 only, so a ranking that asks for tf.idf keeps the in-memory index."""
    first_stage = (ranking or RankingConfig()).first_stage
    if len(analysed) >= SEGMENTED_MIN and method == "bm25" and first_stage == "bm25":
        lexical = SegmentedIndex()
        lexical.add_documents(analysed)
        return lexical
    return LexicalIndex.build(analysed, method=method)


def _make_vectors(embeddings, n: int, kind: str = "auto", gpu: str = "auto") -> VectorIndex:
    emb = np.asarray(embeddings)
    if emb.ndim != 2 or emb.shape[0] != n:
        raise ValueError(f"embeddings must be ({n}, dim), got {emb.shape}")
    vectors = VectorIndex(emb.shape[1], kind=kind, gpu=gpu)
    step = 100_000
    for s in range(0, n, step):
        vectors.add(np.arange(s, min(n, s + step)), emb[s:s + step])
    return vectors


class Searcher:
    """Query-time object composed of index parts. Rows 0..n-1 are internal; figure ids are the
    public keys (the doc table maps them)."""

    def __init__(self, docs: DocTable, lexical: LexicalIndex, vectors=None, visual=None,
                 papers: PaperIndex | None = None, types: TypeIndex | None = None,
                 spelling: Spelling | None = None, ranking: RankingConfig | None = None,
                 encoder: Encoder | None = None, vocabulary: QueryVocabulary | None = None,
                 figure_words: FigureWords | None = None, looks: LookIndex | None = None):
        n = len(docs)
        if lexical.n_docs != n:
            raise ValueError("the lexical index and the doc table must have the same length")
        self.docs = docs
        self._lex: dict[str, LexicalIndex] = {lexical.method: lexical}
        self._primary = lexical.method
        self.vectors = vectors          # figure-text vectors keyed by row, or None (lexical only)
        self.visual = visual            # picture vectors keyed by row, or None
        self.papers = papers            # PaperIndex (paper-level relatedness), or None
        self.types = types if types is not None else TypeIndex(n)
        if self.types.n != n:
            raise ValueError("the type index and the doc table must have the same length")
        if figure_words is not None and figure_words.n != n:
            raise ValueError("the figure words and the doc table must have the same length")
        self.figure_words = figure_words  # the words printed inside each figure, or None
        if looks is not None and len(looks) != n:
            raise ValueError("the look index and the doc table must have the same length")
        self.looks = looks  # perceptual hashes of the pictures (copies of a picture), or None
        self.spelling = spelling if spelling is not None else Spelling(captions=docs.captions, lexical=lexical)
        self.ranking = ranking or RankingConfig()
        self.encoder = encoder
        self.vocabulary = vocabulary or QueryVocabulary()
        self.version: str | None = None

    # ----------------------------------------------------------------- build
    @classmethod
    def build(cls, docs: Sequence[FigureDoc], embeddings: np.ndarray | None = None,
              method: str = "bm25", encoder: Encoder | None = None,
              vector_kind: str = "auto", gpu: str = "auto",
              papers: PaperIndex | None = None, visual_embeddings: np.ndarray | None = None,
              figure_types: Sequence[str | None] | None = None,
              type_scores: Sequence[Mapping[str, float] | None] | None = None,
              ranking: RankingConfig | None = None, vocabulary: QueryVocabulary | None = None,
              fingerprints: np.ndarray | None = None,
              region_words: Sequence[str] | None = None) -> "Searcher":
        """Analyse the figure texts and build the parts. embeddings[i] and visual_embeddings[i]
        belong to docs[i]; figure_types[i] is a type name or None and type_scores[i] the
        classifier's {type: score} (TypeIndex.build); fingerprints[i] what its row indexes
        (app.search.growth); region_words[i] the words printed inside it (figure_words.py)."""
        lexical = _make_lexical([analyze(d.lexical_text) for d in docs], method, ranking)
        vectors = None if embeddings is None else _make_vectors(embeddings, len(docs), vector_kind, gpu)
        visual = None if visual_embeddings is None else _make_vectors(visual_embeddings, len(docs), vector_kind, gpu)
        types = TypeIndex.build([d.kind for d in docs], figure_types, type_scores)
        words = None if region_words is None else FigureWords.build(region_words)
        return cls(DocTable.build(docs, fingerprints), lexical, vectors=vectors, visual=visual, papers=papers,
                   types=types, ranking=ranking, encoder=encoder, vocabulary=vocabulary, figure_words=words)

    # ---------------------------------------------------------------- access
    def __len__(self) -> int:
        return len(self.docs)

    def __contains__(self, figure_id: int) -> bool:
        return figure_id in self.docs

    def count(self, kind: str) -> int:
        """Figures ("figure") or tables ("table") the index holds (deleted rows not counted)."""
        return int(self.types.kind_mask(self.docs.live_rows, kind).sum())

    # the doc table's columns, which most callers read
    @property
    def figure_ids(self) -> np.ndarray:
        return self.docs.figure_ids

    @property
    def paper_ids(self) -> np.ndarray:
        return self.docs.paper_ids

    @property
    def captions(self):
        return self.docs.captions

    def row_of(self, figure_id: int) -> int:
        return self.docs.row_of(figure_id)

    def lexical(self, method: str | None = None) -> LexicalIndex:
        """The lexical index for a scoring method (other methods are derived once, lazily)."""
        method = method or self._primary
        if method not in self._lex:
            self._lex[method] = self._lex[self._primary].reweighted(method)
        return self._lex[method]

    def threshold(self, name: str) -> float:
        """A text-query threshold of the ranking config (ranking.DEFAULT_THRESHOLDS)."""
        return float(self.ranking.thresholds[name])

    def shows_type(self, name: str) -> bool:
        """Whether any figure of the index shows the figure type `name` (True when the index
        has no types: nothing can be said)."""
        return self.types.shows_type(name, self.threshold("type_match_min"))

    @property
    def w(self) -> float:
        """Text search's lexical weight (ranking config)."""
        return self.ranking.w

    def weights(self, scope: str, w: float | None = None) -> dict[str, float]:
        """The fusion weights a scope ranks with: an explicit seed `w`, else the ranking config's."""
        return seed_weights(w) if w is not None else self.ranking.weights_of(scope)

    def _hits(self, rows, final, lex, cos, k, offset, matched, signals=None, ranked=None) -> list[Hit]:
        rows = np.asarray(rows, dtype=np.int64)
        # stable on the incoming (lexical) order: w=1 reproduces the lexical ranking exactly
        ranked = (order(final) if ranked is None else ranked)[offset:offset + k]
        out = []
        for i in ranked.tolist():
            r = int(rows[i])
            sig = None
            if signals is not None:
                sig = {name: float(v[i]) for name, v in signals.items() if v is not None}
            out.append(Hit(int(self.docs.figure_ids[r]), int(self.docs.paper_ids[r]), float(final[i]),
                           float(lex[i]), None if cos is None else float(cos[i]),
                           self.docs.captions[r], matched(r), sig))
        return out

    # ------------------------------------------------------- related figures
    def signals(self, row: int, rows: np.ndarray, lex_scores: np.ndarray) -> dict[str, np.ndarray | None]:
        """Every signal of candidate `rows` relative to the figure at `row` (see fusion.py)."""
        rows = np.asarray(rows, dtype=np.int64)
        out: dict[str, np.ndarray | None] = {"lexical": np.asarray(lex_scores, dtype=np.float64)}

        def cosines(vecs) -> np.ndarray | None:
            if vecs is None or not len(rows):
                return None
            v = vecs.vectors_for(np.r_[row, rows])  # one lookup: the figure first
            return (v[1:] @ v[0]).astype(np.float64)

        def paper_views() -> dict[str, np.ndarray]:
            if self.papers is None or not len(rows):
                return {}
            uniq, inv = np.unique(self.docs.paper_ids[rows], return_inverse=True)
            return {name: v[inv] for name, v in self.papers.similarity(int(self.docs.paper_ids[row]), uniq).items()}

        # the text and picture rows (read from disk on big collections) and the paper views side by side
        out["text"], out["visual"], papers = run_parts(
            [lambda: cosines(self.vectors), lambda: cosines(self.visual), paper_views])
        out["type"] = self.types.same_type(row, rows)
        out["type_scores"] = self.types.score_cosine(row, rows)
        out["figure_words"] = None if self.figure_words is None else self.figure_words.similarity(row, rows)
        out.update(papers)
        return out

    # First stage of `similar` on big collections (see LexicalIndex.search_terms): candidates from
    # the figure's 32 best terms (posting lists <= 120k entries in total, summed per document in
    # one compiled pass: app/search/posting_sums.py), top 2000 rescored exactly with the whole
    # text. Measured (tie-aware) recall of the exact lexical top-100 at 1M synthetic figures:
    # mean 0.998, worst of 100 targets 0.97 (the same as with a 200k budget; a 1000-doc rescore drops the worst to 0.80).
    # Queries whose whole text has <= 120k postings are exact. `similar(..., exact=True)` always
    # scans everything. Past a million documents both grow with the collection (a term's list
    # does, so a fixed budget keeps fewer of the best terms; the pool of candidates grows too):
    # postings x10/3 and re-scored candidates x5 per tenfold growth. At ten million synthetic
    # figures (400,000 postings, 10,000 re-scored) recall of the exact top 100 .985 and .986 (worst
    # .85 and .89) on two sets of 50 targets, against .977 and .993 (worst .40 and .96) with the
    # earlier 600,000 / 8,000, for about a fifth less CPU time: re-scored candidates cost less than
    # postings for the same recall, and a budget that skips fewer of the best terms' lists has a
    # better worst case (scripts/first_stage_sweep.py, README). Re-scoring reads one row per
    # candidate: cheap while the rows are in the page cache, a page read each when they are not.
    similar_max_terms = 32
    similar_max_postings = 120_000
    similar_rescore = 2000
    similar_postings_growth = 10 / 3   # per tenfold growth past a million documents
    similar_rescore_growth = 5

    @classmethod
    def first_stage_budget(cls, n_docs: int) -> dict:
        """`search_terms` limits of the first stage of `similar` on a collection of `n_docs`."""
        tenfolds = np.log10(max(1.0, n_docs / 1_000_000))
        return dict(max_query_terms=cls.similar_max_terms,
                    rescore=int(round(cls.similar_rescore * cls.similar_rescore_growth ** tenfolds)),
                    max_postings=int(round(cls.similar_max_postings * cls.similar_postings_growth ** tenfolds)))

    @classmethod
    def lexical_first_stage(cls, lex, q: np.ndarray, qtf: np.ndarray, k: int, exclude: int | None = None,
                            exact: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """(rows, exact scores) of the best k documents for a figure's terms (its whole text as the
        query): the best terms within `first_stage_budget`, or every posting with `exact`."""
        if exact:
            return lex.search_terms(q, qtf, k=k, exclude=exclude)
        budget = cls.first_stage_budget(len(lex))
        return lex.search_terms(q, qtf, k=k, exclude=exclude, max_query_terms=budget["max_query_terms"],
                                max_postings=budget["max_postings"], rescore=max(budget["rescore"], k))

    def candidates(self, row: int, scope: str = "all", method: str = "bm25", candidates: int = 100,
                   union_dense: int = 0, union_papers: int = 0, exact: bool = False):
        """First stage of `similar`: (rows, exact lexical scores) of the candidates for `row`.

        `all`: lexical top-`candidates` (plus `union_dense` nearest text embeddings);
        `other_papers`: the same with the figure's own paper removed, plus the figures of the
        `union_papers` papers nearest by title + abstract; `same_paper`: every other figure of it."""
        if scope not in SCOPES:
            raise ValueError(f"scope must be one of {SCOPES}")
        docs = self.docs
        lex = self.lexical(method)
        q, qtf = lex.doc_terms(row)
        own_paper = int(docs.paper_ids[row])
        if scope == "same_paper":
            rows = docs.rows_of_paper(own_paper)
            rows = rows[(rows != row) & self.types.kind_mask(rows, self.types.kind_of_row(row))]
            return rows, lex.score_docs(q, lex.query_weights(q, qtf), rows)
        n_own = len(docs.rows_of_paper(own_paper)) if scope == "other_papers" else 0

        def nearest() -> list[np.ndarray]:
            """The figures of the nearest texts and of the nearest papers, which join the lexical ones."""
            extra = []
            if self.vectors is not None and union_dense > 0:
                ids, _ = self.vectors.nearest_candidates(self.vectors.vectors_for([row]), union_dense + 1 + n_own)
                extra.append(ids[0][ids[0] >= 0])
            if scope == "other_papers" and self.papers is not None and union_papers > 0:
                for p in self.papers.related(own_paper, union_papers).tolist():
                    extra.append(docs.rows_of_paper(p)[:self.ranking.rows_per_related_paper])
            return extra

        (rows, scores), extra = run_parts(
            [lambda: self.lexical_first_stage(lex, q, qtf, candidates + n_own, exclude=row, exact=exact), nearest])
        if scope == "other_papers":
            keep = docs.paper_ids[rows] != own_paper
            rows, scores = rows[keep][:candidates], scores[keep][:candidates]
        if extra:
            more = np.unique(np.concatenate(extra))
            more = more[(more != row) & ~np.isin(more, rows)]
            if scope == "other_papers":
                more = more[docs.paper_ids[more] != own_paper]
            if len(more):
                rows = np.r_[rows, more]
                scores = np.r_[scores, lex.score_docs(q, lex.query_weights(q, qtf), more)]
        keep = self.types.same_kind(row, rows)  # figures are related to figures, tables to tables
        return rows[keep], scores[keep]

    @one_thread
    def rank_rows(self, row: int, scope: str = "all", weights: dict[str, float] | None = None,
                  w: float | None = None, method: str | None = None, candidates: int | None = None,
                  union_dense: int | None = None, union_papers: int | None = None, exact: bool = False,
                  within_papers: Sequence[int] | None = None):
        """(candidate rows, lexical scores, signals, fused scores), best first, for the figure at
        `row`: the one ranking rule behind `similar` and the evaluation; what is not given comes
        from the ranking config. `within_papers` replaces the first stage by every figure of
        those papers (the caller's choice, e.g. the papers that cite this one; the figure's own
        paper is left out)."""
        cfg = self.ranking
        method = method or cfg.first_stage
        candidates = cfg.candidates if candidates is None else candidates
        if union_papers is None:
            union_papers = cfg.union_papers
        if union_dense is None:  # the tf.idf + embedding recommender (`all`) keeps its lexical first stage
            union_dense = cfg.union_dense if scope == "other_papers" else 0
        if within_papers is not None:
            own = int(self.docs.paper_ids[row])
            rows = self.docs.rows_of_papers([p for p in set(within_papers) if p != own])
            rows = rows[self.types.kind_mask(rows, self.types.kind_of_row(row))]
            lex = self.lexical(method)
            q, qtf = lex.doc_terms(row)
            scores = lex.score_docs(q, lex.query_weights(q, qtf), rows)
        else:
            rows, scores = self.candidates(row, scope, method, candidates, union_dense, union_papers, exact)
        sig = self.signals(row, rows, scores)
        final = fuse(sig, weights if weights is not None else self.weights(scope, w))
        ranked = order(final)
        if scope == "other_papers" and cfg.max_per_paper and len(rows):
            ranked = diversify(ranked, self.docs.paper_ids[rows], cfg.max_per_paper)
        if len(rows) and (sig.get("visual") is not None or self.looks is not None):
            same = same_picture(self.looks, None if self.looks is None else self.looks.of_row(row), rows,
                                sig.get("visual"))
            sig["same_picture"] = same.astype(np.float64)  # the card's "same picture" (explain.py)
            ranked = same_picture_first(ranked, same)
        # everything in ranked order
        sig = {k: (None if v is None else np.asarray(v)[ranked]) for k, v in sig.items()}
        return rows[ranked], np.asarray(scores)[ranked], sig, final[ranked]

    def similar(self, figure_id: int, k: int = 10, w: float | None = None, method: str | None = None,
                candidates: int | None = None, union_dense: int | None = None, exact: bool = False,
                scope: str = "all", weights: dict[str, float] | None = None,
                union_papers: int | None = None, within_papers: Sequence[int] | None = None) -> list[Hit]:
        """Figures related to `figure_id` (excluded from the results) within `scope` (or among the
        figures of `within_papers`), ranked by the fusion of their signals (fusion.py); each hit
        carries its signal values. KeyError when the figure is not in the index."""
        row = self.row_of(figure_id)
        candidates = max(self.ranking.candidates if candidates is None else candidates, k)
        rows, scores, sig, final = self.rank_rows(row, scope, weights, w, method, candidates,
                                                  union_dense, union_papers, exact, within_papers)
        lex = self.lexical(method or self.ranking.first_stage)
        q, _ = lex.doc_terms(row)
        return self._hits(rows, final, scores, sig["text"], k, 0,
                          lambda r: lex.matched_term_ids(q, r), signals=sig, ranked=np.arange(len(rows)))

    def batch_similar(self, figure_ids: Sequence[int], k: int = 10, **options) -> dict[int, list[Hit]]:
        """`similar` for each figure id (the same options for all): {figure id: hits}."""
        return {int(fid): self.similar(int(fid), k=k, **options) for fid in figure_ids}

    # ----------------------------------------------------------- text search
    # Text queries: a figure found only by its embedding must be at least `dense_match_min` close
    # (ranking config thresholds) to count as a match (MiniLM cosine of query and figure text;
    # nonsense queries stay below it). A query none of whose words occurs in the collection and
    # that names no figure type (a keyboard mash, a misspelling, another field's words) must be
    # `dense_match_unknown_words_min` close: MiniLM puts such strings of word pieces at up to .41
    # of arbitrary figure and table texts, so below .45 nothing is shown ("no close matches");
    # misspellings land in the same range and mostly find nothing either
    # (`python scripts/query_matches.py --data-dir DIR` prints each kind). A figure "is" a named
    # type when the classifier scores that type at least `type_match_min` (the threshold above
    # which the classifier lists a type a figure shows, app/vision/figure_types.SHOWN); at most
    # TypeIndex.type_pool such figures join the candidates, the highest-scoring first. The named
    # type's score counts twice the text mix (w * lexical + (1 - w) * cosine, at most 1): a figure
    # whose text only uses the type's word ranks after one the classifier is sure shows the type.
    # Chosen among written-down rankings on five labelled sets of three fields, leaving one set out
    # (2 on every set; README, "type-name queries, the type score's weight").
    query_type_weight = 2.0

    def search(self, query: str, k: int = 10, rerank: bool = True, w: float | None = None,
               offset: int = 0, method: str = "bm25", candidates: int = 100,
               allowed_rows: np.ndarray | None = None, union_dense: int = 100, kind: str = "figure",
               per_paper: int | None = None, titles: TitleLookup | None = None) -> Hits:
        """Free-text search by words and by meaning, the figure types the query names included
        (the searcher's vocabulary); when the query finds nothing because of a word the
        collection lacks, its closest known spelling is searched instead (Hits.query says which).
        `kind` (figure, table or both) and `allowed_rows` (bool per row) restrict the results.
        At most `per_paper` figures of a paper in each block of results (None: the ranking
        config's; 0: no limit), unless the query names the paper by its title (`titles`)."""
        return self.batch_search([query], k, rerank, w, offset, method, candidates, allowed_rows,
                                 union_dense, kind, per_paper, titles)[0]

    def batch_search(self, queries: Sequence[str], k: int = 10, rerank: bool = True, w: float | None = None,
                     offset: int = 0, method: str = "bm25", candidates: int = 100,
                     allowed_rows: np.ndarray | None = None, union_dense: int = 100,
                     kind: str = "figure", per_paper: int | None = None,
                     titles: TitleLookup | None = None) -> list[Hits]:
        """`search` for each query (the same options for all). Each query is encoded alone, as
        `search` encodes it: in a padded batch MiniLM's vectors differ in the 8th digit, enough to
        swap two near-tied figures, and the evaluation must rank exactly as the API does."""
        use_dense = rerank and self.encoder is not None and self.vectors is not None

        def hits_for(text: str) -> list[Hit]:
            qvec = l2_normalize(self.encoder([text]))[0] if use_dense else None
            return self.rank_text(text, k, qvec, w, offset, method, candidates,
                                  self.vocabulary.types_named_in(text), allowed_rows, union_dense, kind,
                                  per_paper, titles)

        out = []
        for q in queries:
            hits = hits_for(q)
            suggestion = None if hits else self.spelling_suggestion(q)
            out.append(Hits(hits_for(suggestion), suggestion) if suggestion else Hits(hits, q))
        return out

    def spelling_suggestion(self, query: str) -> str | None:
        """The query with its misspelt words replaced (Spelling.suggestion), or None."""
        return self.spelling.suggestion(query, self.lexical().term_ids, self.vocabulary.understood)

    def prepare_spelling(self) -> None:
        """Have the spelling vocabulary ready (a server does it in the background after loading
        an index written before the vocabulary was saved with it)."""
        self.spelling.prepare()

    @one_thread
    def rank_text(self, query: str, k: int = 10, qvec: np.ndarray | None = None, w: float | None = None,
                  offset: int = 0, method: str = "bm25", candidates: int = 100, types: Sequence[str] = (),
                  allowed_rows: np.ndarray | None = None, union_dense: int = 100,
                  kind: str = "figure", per_paper: int | None = None, titles: TitleLookup | None = None) -> Hits:
        """The ranking of one text query (no spelling fallback) whose unit embedding is `qvec`
        (None: words only) and which names the figure `types`; at most `per_paper` figures of a
        paper in each block of results (spread.py; None: the ranking config's), the papers the
        query names by title (looked up with `titles` among the limited ones) excepted.

        Candidates: the lexical top-`candidates`, united (with `qvec`) with the `union_dense`
        figures nearest to the query embedding that are at least `dense_match_min` close, and
        with the figures where a named type scores highest (or, in an index without type
        scores, near figures of that dominant type). Ranked by the fusion of lexical score,
        embedding cosine and type score; a query with no real match returns nothing."""
        w = self.w if w is None else float(w)
        ti = self.types
        lex = self.lexical(method)
        tokens = analyze(query)
        need = max(candidates, offset + k)
        restricted = allowed_rows is not None or (ti.kinds is not None and kind != "both")
        rows, scores = lex.search(tokens, k=need * 10 if restricted else need)
        qvec = None if qvec is None or self.vectors is None else qvec
        dense_min = self.threshold("dense_match_min")
        # a figure type's name ("photo", "heat map") is a word the product knows, in any collection
        known_terms = lex.term_ids
        if not (types or any(t in known_terms for t in tokens)):
            dense_min = max(dense_min, self.threshold("dense_match_unknown_words_min"))
        match_min = self.threshold("type_match_min")
        type_codes = ti.codes(types)
        if len(type_codes) and ti.scores is not None:
            best = np.unique(np.concatenate([ti.rows_showing_type(int(c), match_min) for c in type_codes]))
            best = best[~np.isin(best, rows)]
            if len(best):
                q, qtf = lex.query_vector(tokens)
                rows = np.r_[rows, best]
                scores = np.r_[scores, lex.score_docs(q, lex.query_weights(q, qtf), best)]
        if qvec is not None:
            pool = union_dense + (400 if len(type_codes) and ti.scores is None else 0)
            ids, sims = self.vectors.nearest_candidates(qvec[None, :], pool)
            ids, sims = ids[0], sims[0]
            ok = ids >= 0
            near = ok & (sims >= dense_min)
            near[union_dense:] = False
            if len(type_codes) and ti.scores is None:
                near |= ok & np.isin(ti.dominant[np.maximum(ids, 0)], type_codes)
            more = ids[near]
            more = more[~np.isin(more, rows)]
            if len(more):
                q, qtf = lex.query_vector(tokens)
                rows = np.r_[rows, more]
                scores = np.r_[scores, lex.score_docs(q, lex.query_weights(q, qtf), more)]
        if len(rows):
            keep = ti.kind_mask(rows, kind)
            if allowed_rows is not None:
                keep &= np.asarray(allowed_rows, dtype=bool)[rows]
            rows, scores = rows[keep], scores[keep]
        sig: dict[str, np.ndarray | None] = {"lexical": scores, "text": None, "type": None}
        weights = seed_weights(w) if qvec is not None else {"lexical": 1.0}
        if qvec is not None and len(rows):
            cos = (self.vectors.vectors_for(rows) @ qvec).astype(np.float64)
            sig["text"] = cos
            # a lexical match, a close embedding, or the named type: anything else is not a match
            keep = (scores > 0) | (cos >= dense_min)
            if len(type_codes):
                keep |= ti.named_type_match(rows, type_codes, match_min)
            rows, scores, cos = rows[keep], scores[keep], cos[keep]
            sig = {"lexical": scores, "text": cos, "type": None}
        if len(type_codes) and len(rows):
            sig["type"] = ti.named_type_score(rows, type_codes)
            # 1 where the figure shows a named type by the rule that let it in (ranks nothing; its
            # reasons say "may show a box plot" where the score alone would not say "looks like")
            sig["type_shown"] = ti.named_type_match(rows, type_codes, match_min, sig["type"]).astype(np.float64)
            weights = {**weights, "type": self.query_type_weight}
        final = fuse(sig, weights)
        ranked, limited = self.spread_papers(order(final), self.docs.paper_ids[rows], offset + k, tokens,
                                             per_paper, titles)
        return Hits(self._hits(rows, final, scores, sig["text"], k, offset,
                               lambda r: lex.matched_terms(tokens, r), signals=sig, ranked=ranked),
                    limited_papers=limited)

    def spread_papers(self, ranked: np.ndarray, papers: np.ndarray, depth: int, tokens: Sequence[str],
                      per_paper: int | None = None, titles: TitleLookup | None = None):
        """(`ranked` with at most `per_paper` figures of a paper in each block of the ranking
        config's `text_block` results, the papers moved down): spread.py. A paper the query names
        by its title (`titles` is asked about the limited papers only) keeps its figures' places."""
        per_paper = self.ranking.text_per_paper if per_paper is None else int(per_paper)
        if per_paper <= 0 or not len(ranked):
            return ranked, set()
        papers = np.asarray(papers)[ranked]
        block = self.ranking.text_block
        pos, limited = spread(papers, per_paper, block, depth)
        if limited and titles is not None and len(set(tokens)) >= 2:
            named = {p for p, title in titles(sorted(limited)).items() if names_paper(tokens, analyze(title or ""))}
            if named:
                pos, limited = spread(papers, per_paper, block, depth, keep=named)
        return ranked[pos], limited

    # ------------------------------------------------------------- pictures
    # Uploaded pictures: the nearest `picture_ranking.pool` picture vectors (app/vision/pictures.py),
    # re-ranked by their cosine plus agreement of their stored figure types with the upload's
    # (app/search/picture_rank.py), so a heatmap brings up heatmaps before other pictures of a
    # similar layout.
    picture_ranking = PictureRanking()
    # An upload the collection does not hold is searched among tables only when at least
    # `kind_table_votes` of its `kind_neighbours` nearest pictures are tables and the nearest table
    # is nearer than the nearest figure by more than `kind_table_margin` (cosine): a figure searched
    # among tables costs the common upload its answer, so the rule leans to figures. Chosen on the
    # demo sample as the first rule keeping >= .98 of new figures among figures (README, "search by
    # picture, what an upload is searched among").
    kind_neighbours = 5
    kind_table_votes = 4
    kind_table_margin = 0.08

    @one_thread
    def picture_kind(self, vector: np.ndarray, look: np.ndarray | None = None,
                     exclude_paper: int | None = None) -> str:
        """"table" or "figure": what an uploaded picture is searched among. The kind of the item it
        copies (perceptual hash `look`), else "table" when its nearest pictures are clearly tables
        (the rule above `kind_neighbours`): by their pixels alone most tables are typed "text", so
        their neighbours tell them. An index without tables searches figures. `exclude_paper` leaves
        one paper's rows out (an evaluation of uploads the collection does not hold)."""
        if self.visual is None or not self.types.count("table"):
            return "figure"
        q = np.asarray(vector, dtype=np.float32)[None, :]
        m = self.kind_neighbours
        ids, sims = self.visual.search(q, min(m * (4 if exclude_paper is None else 20), len(self)))
        keep = ids[0] >= 0
        rows, sims = ids[0][keep], sims[0][keep]
        if exclude_paper is not None:
            other = self.docs.paper_ids[rows] != exclude_paper
            rows, sims = rows[other], sims[other]
        if not len(rows):
            return "figure"
        if self.looks is not None and look is not None:
            copy, known = self.looks.copies(look, rows)
            held = np.flatnonzero(copy & known)
            if len(held):
                return self.types.kind_of_row(int(rows[held[0]]))
        tables = self.types.kind_mask(rows, "table").astype(bool)
        if int(tables[:m].sum()) < min(self.kind_table_votes, len(rows[:m])):
            return "figure"
        nearest_figure = float(sims[~tables][0]) if (~tables).any() else -1.0
        return "table" if float(sims[tables][0]) - nearest_figure > self.kind_table_margin else "figure"

    @one_thread
    def by_picture(self, vector: np.ndarray, k: int = 10, kind: str = "figure",
                   type_scores: Mapping[str, float] | None = None, look: np.ndarray | None = None) -> list[Hit]:
        """Figures (of `kind`) whose picture vector is nearest to `vector` (an uploaded picture's);
        with the picture's `type_scores` ({type: score}), figures of the same kinds first; copies of
        the picture first (by its perceptual hash `look` where given, app/search/looks.py), then
        figures one of whose panels it copies (signal `same_panel`: the panel's `panel_number`)."""
        if self.visual is None:
            return []
        q = np.asarray(vector, dtype=np.float32)[None, :]
        typed = bool(type_scores) and self.types.scores is not None
        want = max(k, self.picture_ranking.pool) if typed else k
        pool = want if self.types.kinds is None or kind == "both" else 4 * want
        while True:  # fetch more neighbours until enough rows of `kind` are among them (or all rows are)
            ids, sims = self.visual.search(q, min(pool, len(self)))
            keep = ids[0] >= 0
            keep[keep] = self.types.kind_mask(ids[0][keep], kind)
            if keep.sum() >= want or pool >= len(self):
                break
            pool *= 4
        rows, cos = ids[0][keep][:want], sims[0][keep][:want].astype(np.float64)
        panel = np.zeros(len(rows), "U1")  # the letter of the candidate's panel the upload copies
        if self.looks is not None and look is not None:
            rows, cos, panel = self._with_panel_copies(q[0], look, rows, cos, kind)
        same = same_picture(self.looks, look, rows, cos)
        signals = {"visual": cos, "same_picture": same.astype(np.float64),
                   "same_panel": panel_number(panel)}
        query = self.types.query_scores(type_scores) if typed else None
        final, ranked = rank_by_picture(cos, self.types.scores[rows] if typed else None, query,
                                        self.picture_ranking, copies=same, panel_copies=panel != "")
        if typed:  # what the result shows (its reasons): the same dominant type as the upload's best-scoring one
            signals["type"] = self.types.same_dominant(query, rows)
        return self._hits(rows, final, np.zeros(len(rows)), None, k, 0, lambda r: [],
                          signals=signals, ranked=ranked)

    def _with_panel_copies(self, vector: np.ndarray, look: np.ndarray, rows: np.ndarray, cos: np.ndarray,
                           kind: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The candidates joined by the figures one of whose panels the upload copies (found by
        the panels' hashes, wherever their picture vectors are), and each candidate's copied
        panel letter ("" for none)."""
        found, letters = self.looks.panel_copies(look)
        keep = self.types.kind_mask(found, kind) if len(found) else np.zeros(0, bool)
        found, letters = found[keep], letters[keep]
        extra = ~np.isin(found, rows)
        if extra.any():
            rows = np.r_[rows, found[extra]]
            cos = np.r_[cos, (self.visual.vectors_for(found[extra]) @ vector).astype(np.float64)]
        position = {int(r): i for i, r in enumerate(rows.tolist())}
        panel = np.zeros(len(rows), "U1")
        panel[[position[int(r)] for r in found.tolist()]] = letters
        return rows, cos, panel

    # ----------------------------------------------------------- persistence
    def save(self, index_root: str | Path, keep: int | None = 3) -> str:
        """Write a new version under index_root, then atomically point CURRENT at it.

        Returns the version name. Older versions beyond the newest `keep` are deleted (None = keep all).
        """
        self.version = publish(index_root, self.save_version_dir, keep)
        return self.version

    def save_version_dir(self, d: str | Path) -> None:
        """Write the parts, their description (modules.json), the ranking config and meta.json
        into directory `d` (no CURRENT handling)."""
        d = Path(d)
        d.mkdir(parents=True, exist_ok=True)
        write_parts(d, {"docs": self.docs, "lexical": self._lex[self._primary], "vectors": self.vectors,
                        "visual": self.visual, "papers": self.papers, "types": self.types,
                        "spelling": self.spelling, "figure_words": self.figure_words, "looks": self.looks})
        self.ranking.save(d)
        meta = dict(n=len(self), method=self._primary, has_vectors=self.vectors is not None,
                    has_papers=self.papers is not None, has_visual=self.visual is not None,
                    created=time.time(), format=2)
        (d / "meta.json").write_text(json.dumps(meta))

    @classmethod
    def load(cls, path: str | Path, encoder: Encoder | None = None, mmap: bool = False,
             gpu: str = "auto", check: bool = True, vocabulary: QueryVocabulary | None = None) -> "Searcher":
        """Load a version directory, or the CURRENT version when given an index root. `check`:
        verify the files against the version's manifest first (VersionCorrupt when they differ);
        off only for a version the caller has just checked. Versions written before parts load
        as they are (index_parts.read_parts)."""
        path = Path(path)
        if (path / CURRENT).exists():
            return cls.load_current(path, encoder=encoder, mmap=mmap, gpu=gpu, vocabulary=vocabulary)
        if check:
            check_version(path)
        parts = {}
        for name, (part_cls, folder) in read_parts(path).items():
            if name in ("vectors", "visual", "papers"):
                parts[name] = part_cls.load(folder, gpu=gpu, mmap=mmap)
            elif name == "spelling":
                parts[name] = part_cls.load(folder)
            else:
                parts[name] = part_cls.load(folder, mmap=mmap)
        searcher = cls(ranking=RankingConfig.load(path), encoder=encoder, vocabulary=vocabulary, **parts)
        searcher.version = path.name
        return searcher

    @classmethod
    def load_current(cls, index_root: str | Path, encoder: Encoder | None = None, mmap: bool = False,
                     gpu: str = "auto", vocabulary: QueryVocabulary | None = None) -> "Searcher":
        root = Path(index_root)
        version = choose(root).version  # CURRENT's, or the newest intact one
        if version is None:
            raise FileNotFoundError(f"no intact index version under {root}")
        return cls.load(root / version, encoder=encoder, mmap=mmap, gpu=gpu, check=False, vocabulary=vocabulary)
