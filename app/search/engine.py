"""The search engine: lexical first stage + dense re-ranking, over an immutable, versioned index.

The figure recommendation protocol of Kuzi & Zhai, generalised:
  similar(figure):  top-`candidates` by lexical score with the figure's own text as the query (the
                    figure excluded), optionally united with its `union_dense` nearest neighbours in
                    embedding space, re-ranked by  w * minmax(lexical) + (1 - w) * cosine(embeddings).
  search(text):     lexical top-100, re-ranked the same way with the query's MiniLM embedding (the
                    encoder is injected as a callable, so tests and services choose it).
Without embeddings the score is the lexical score. First stage, candidate counts, `w` and the
fusion weights come from the index version's RankingConfig (ranking.py), the same for every caller.

Persistence: `save(index_root)` writes a new version directory (with a manifest of its files'
sizes and checksums, checked at load: versions.py) and then atomically replaces the `CURRENT`
pointer file, so a running service can poll the cheap `current_version(index_root)` and swap in
`load_current(index_root)` when it changes; readers never see a half-written index.
"""
from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Iterable, Mapping, NamedTuple, Sequence

import numpy as np

from .fusion import SCOPES, diversify, fuse, order, same_picture_first, seed_weights
from .lexical import LexicalIndex
from .ranking import DEFAULT_THRESHOLDS, RankingConfig
from .spelling import closest_word, english_words
from .text import analyze
from app.model_store.versions import CURRENT, check_version, choose, publish

Encoder = Callable[[list[str]], np.ndarray]


_WORD_RE = re.compile(r"[a-z]+")
KINDS = ("figure", "table")  # what an index row is; stored per row as its position here


@dataclass(frozen=True)
class FigureDoc:
    """One figure (or table) as the engine sees it. `text` = figure_text(caption, mention
    contexts), plus the cell text for a table."""

    figure_id: int
    paper_id: int
    caption: str
    text: str
    kind: str = "figure"


class Hit(NamedTuple):
    figure_id: int
    paper_id: int
    score: float
    lexical_score: float
    embedding_score: float | None
    caption: str
    matched_terms: list[str]
    signals: dict | None = None  # per-signal values behind `score` (see fusion.py)


class _Captions:
    """Captions as one UTF-8 blob + offsets: ~1 byte/char instead of ~60 bytes/str object."""

    def __init__(self, blob: np.ndarray, offsets: np.ndarray):
        self.blob, self.offsets = blob, offsets

    @classmethod
    def from_strings(cls, captions: Sequence[str]) -> "_Captions":
        enc = [(c or "").encode("utf-8") for c in captions]
        offsets = np.zeros(len(enc) + 1, dtype=np.int64)
        np.cumsum([len(e) for e in enc], out=offsets[1:])
        blob = np.frombuffer(b"".join(enc), dtype=np.uint8) if enc else np.zeros(0, np.uint8)
        return cls(blob, offsets)

    def __getitem__(self, row: int) -> str:
        s, e = int(self.offsets[row]), int(self.offsets[row + 1])
        return bytes(self.blob[s:e]).decode("utf-8")

    def __len__(self) -> int:
        return len(self.offsets) - 1


class SearchEngine:
    """Query-time object. Rows 0..n-1 are internal; figure ids are the public keys."""

    def __init__(self, lexical: LexicalIndex, figure_ids, paper_ids, captions, vectors=None,
                 encoder: Encoder | None = None, w: float | None = None, papers=None, visual=None,
                 types=None, type_names: Sequence[str] = (), kinds=None, type_scores=None,
                 ranking: RankingConfig | None = None):
        self.figure_ids = np.asarray(figure_ids, dtype=np.int64)
        self.paper_ids = np.asarray(paper_ids, dtype=np.int64)
        n = len(self.figure_ids)
        if lexical.n_docs != n or len(self.paper_ids) != n:
            raise ValueError("lexical index, figure ids and paper ids must have the same length")
        self.captions = captions if isinstance(captions, _Captions) else _Captions.from_strings(captions)
        self._lex: dict[str, LexicalIndex] = {lexical.method: lexical}
        self._primary = lexical.method
        self.vectors = vectors          # VectorIndex keyed by row, or None (lexical only)
        self.papers = papers            # PaperIndex (paper-level relatedness), or None
        self.visual = visual            # VectorIndex keyed by row (pixels), or None
        self.type_names = list(type_names)
        self.types = None if types is None else np.asarray(types, dtype=np.int16)  # -1 = unknown
        if self.types is not None and len(self.types) != n:
            raise ValueError("one figure type code per figure expected")
        # (n, len(type_names)) classifier scores; a query naming a type ranks by them
        self.type_scores = None if type_scores is None else np.asarray(type_scores, dtype=np.float16)
        if self.type_scores is not None and self.type_scores.shape != (n, len(self.type_names)):
            raise ValueError("one score per figure and type name expected")
        # per row: 0 figure, 1 table (KINDS); an index without tables has none
        self.kinds = None if kinds is None else np.asarray(kinds, dtype=np.int8)
        if self.kinds is not None and len(self.kinds) != n:
            raise ValueError("one kind per row expected")
        self.encoder = encoder
        self.ranking = ranking or RankingConfig()
        if w is not None:
            self.ranking = replace(self.ranking, w=float(w))
        for name, value in self.ranking.thresholds.items():  # text-query thresholds (instance values)
            if name in DEFAULT_THRESHOLDS:
                setattr(self, name, float(value))
        self._type_top: dict[int, np.ndarray] = {}  # type code -> rows that show it best (rows_showing_type)
        self._spelling: dict[tuple[str, int], dict[str, int]] | None = None  # caption words (spelling_suggestion)
        self._spelling_lock = threading.Lock()
        self.version: str | None = None
        by_fid = np.argsort(self.figure_ids, kind="stable")
        self._sorted_fids, self._fid_order = self.figure_ids[by_fid], by_fid
        if n and (np.diff(self._sorted_fids) == 0).any():
            raise ValueError("duplicate figure ids")
        by_paper = np.argsort(self.paper_ids, kind="stable")
        self._paper_sorted, self._rows_by_paper = self.paper_ids[by_paper], by_paper

    # ----------------------------------------------------------------- build
    @classmethod
    def build(cls, docs: Sequence[FigureDoc], embeddings: np.ndarray | None = None,
              method: str = "bm25", encoder: Encoder | None = None, w: float | None = None,
              vector_kind: str = "auto", gpu: str = "auto",
              papers=None, visual_embeddings: np.ndarray | None = None,
              figure_types: Sequence[str | None] | None = None,
              type_scores: Sequence[Mapping[str, float] | None] | None = None,
              ranking: RankingConfig | None = None) -> "SearchEngine":
        """Analyse the figure texts and build the indexes. embeddings[i] and visual_embeddings[i]
        belong to docs[i]; `papers` is a PaperIndex; figure_types[i] is a type name or None and
        type_scores[i] the classifier's {type: score} (None: 1 for the dominant type)."""
        lexical = LexicalIndex.build([analyze(d.text) for d in docs], method=method)
        vectors = visual = None
        if embeddings is not None:
            vectors = cls._make_vectors(embeddings, len(docs), vector_kind, gpu)
        if visual_embeddings is not None:
            visual = cls._make_vectors(visual_embeddings, len(docs), vector_kind, gpu)
        types, names, scores = None, [], None
        if figure_types is not None and any(t for t in figure_types):
            per_row = list(type_scores) if type_scores is not None else [None] * len(figure_types)
            names = sorted({t for t in figure_types if t} | {k for s in per_row if s for k in s})
            code = {t: i for i, t in enumerate(names)}
            types = np.array([code.get(t, -1) if t else -1 for t in figure_types], dtype=np.int16)
            if any(per_row):
                scores = np.zeros((len(figure_types), len(names)), dtype=np.float16)
                for i, (t, s) in enumerate(zip(figure_types, per_row)):
                    if s:
                        scores[i, [code[k] for k in s]] = list(s.values())
                    elif t:
                        scores[i, code[t]] = 1.0
        kinds = np.array([KINDS.index(d.kind) for d in docs], dtype=np.int8)
        return cls(lexical, [d.figure_id for d in docs], [d.paper_id for d in docs],
                   [d.caption for d in docs], vectors=vectors, encoder=encoder, w=w,
                   papers=papers, visual=visual, types=types, type_names=names,
                   kinds=kinds if kinds.any() else None, type_scores=scores, ranking=ranking)

    @staticmethod
    def _make_vectors(embeddings, n, kind="auto", gpu="auto"):
        from .vectors import VectorIndex

        emb = np.asarray(embeddings)
        if emb.ndim != 2 or emb.shape[0] != n:
            raise ValueError(f"embeddings must be ({n}, dim), got {emb.shape}")
        vectors = VectorIndex(emb.shape[1], kind=kind, gpu=gpu)
        step = 100_000
        for s in range(0, n, step):
            vectors.add(np.arange(s, min(n, s + step)), emb[s:s + step])
        return vectors

    # ---------------------------------------------------------------- access
    def __len__(self) -> int:
        return len(self.figure_ids)

    def lexical(self, method: str | None = None) -> LexicalIndex:
        """The lexical index for a scoring method (other methods are derived once, lazily)."""
        method = method or self._primary
        if method not in self._lex:
            self._lex[method] = self._lex[self._primary].reweighted(method)
        return self._lex[method]

    def row_of(self, figure_id: int) -> int:
        i = int(np.searchsorted(self._sorted_fids, figure_id))
        if i >= len(self._sorted_fids) or self._sorted_fids[i] != figure_id:
            raise KeyError(f"figure {figure_id} is not in the index")
        return int(self._fid_order[i])

    def rows_of_papers(self, paper_ids: Sequence[int]) -> np.ndarray:
        parts = [self.rows_of_paper(int(p)) for p in paper_ids]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)

    def rows_of_paper(self, paper_id: int) -> np.ndarray:
        lo = int(np.searchsorted(self._paper_sorted, paper_id, side="left"))
        hi = int(np.searchsorted(self._paper_sorted, paper_id, side="right"))
        return self._rows_by_paper[lo:hi]

    def kind_mask(self, rows: np.ndarray, kind: str) -> np.ndarray:
        """One bool per row in `rows`: the row holds `kind` ("figure", "table" or "both")."""
        rows = np.asarray(rows, dtype=np.int64)
        if kind == "both":
            return np.ones(len(rows), dtype=bool)
        code = KINDS.index(kind)
        if self.kinds is None:
            return np.full(len(rows), code == 0)
        return self.kinds[rows] == code

    def count(self, kind: str) -> int:
        """Rows of `kind` ("figure" or "table") in the index."""
        if self.kinds is None:
            return len(self) if kind == KINDS[0] else 0
        return int((self.kinds == KINDS.index(kind)).sum())

    def kind_of_row(self, row: int) -> str:
        return KINDS[0] if self.kinds is None else KINDS[int(self.kinds[row])]

    def type_of_row(self, row: int) -> str | None:
        if self.types is None or self.types[row] < 0:
            return None
        return self.type_names[int(self.types[row])]

    def __contains__(self, figure_id: int) -> bool:
        try:
            self.row_of(figure_id)
            return True
        except KeyError:
            return False

    # --------------------------------------------------------------- queries
    def _rerank(self, rows, lex_scores, qvec, w):
        """tf.idf + embedding fusion for text queries; returns (final, cosine or None)."""
        if qvec is None or self.vectors is None or len(rows) == 0:
            return np.asarray(lex_scores, dtype=np.float64), None
        cos = (self.vectors.vectors_for(rows) @ np.asarray(qvec, dtype=np.float32)).astype(np.float64)
        return fuse({"lexical": lex_scores, "text": cos}, seed_weights(w)), cos

    def signals(self, row: int, rows: np.ndarray, lex_scores: np.ndarray) -> dict[str, np.ndarray | None]:
        """Every signal of candidate `rows` relative to the figure at `row` (see fusion.py)."""
        rows = np.asarray(rows, dtype=np.int64)
        out: dict[str, np.ndarray | None] = {"lexical": np.asarray(lex_scores, dtype=np.float64)}
        for name, vecs in (("text", self.vectors), ("visual", self.visual)):
            out[name] = None
            if vecs is not None and len(rows):
                v = vecs.vectors_for(np.r_[row, rows])  # one lookup: the figure first
                out[name] = (v[1:] @ v[0]).astype(np.float64)
        out["type"] = None
        if self.types is not None and self.types[row] >= 0:
            out["type"] = (self.types[rows] == self.types[row]).astype(np.float64)
        out["type_scores"] = None
        if self.type_scores is not None and len(rows):
            ts = self.type_scores[np.r_[row, rows]].astype(np.float64)
            norms = np.linalg.norm(ts, axis=1)
            norms[norms == 0] = 1.0
            out["type_scores"] = (ts[1:] @ ts[0]) / (norms[1:] * norms[0])
        if self.papers is not None and len(rows):
            uniq, inv = np.unique(self.paper_ids[rows], return_inverse=True)
            for name, v in self.papers.similarity(int(self.paper_ids[row]), uniq).items():
                out[name] = v[inv]
        return out

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
            out.append(Hit(int(self.figure_ids[r]), int(self.paper_ids[r]), float(final[i]),
                           float(lex[i]), None if cos is None else float(cos[i]),
                           self.captions[r], matched(r), sig))
        return out

    @property
    def w(self) -> float:
        """Text search's lexical weight (ranking config)."""
        return self.ranking.w

    def weights(self, scope: str, w: float | None = None) -> dict[str, float]:
        """The fusion weights a scope ranks with: an explicit seed `w`, else the ranking config's."""
        return seed_weights(w) if w is not None else self.ranking.weights_of(scope)

    def candidates(self, row: int, scope: str = "all", method: str = "bm25", candidates: int = 100,
                   union_dense: int = 0, union_papers: int = 0, exact: bool = False):
        """First stage of `similar`: (rows, exact lexical scores) of the candidates for `row`.

        `all`: lexical top-`candidates` (plus `union_dense` nearest text embeddings);
        `other_papers`: the same with the figure's own paper removed, plus the figures of the
        `union_papers` papers nearest by title + abstract; `same_paper`: every other figure of it."""
        if scope not in SCOPES:
            raise ValueError(f"scope must be one of {SCOPES}")
        lex = self.lexical(method)
        q, qtf = lex.doc_terms(row)
        own_paper = int(self.paper_ids[row])
        if scope == "same_paper":
            rows = self.rows_of_paper(own_paper)
            rows = rows[(rows != row) & self.kind_mask(rows, self.kind_of_row(row))]
            return rows, lex.score_docs(q, lex.query_weights(q, qtf), rows)
        n_own = len(self.rows_of_paper(own_paper)) if scope == "other_papers" else 0
        rows, scores = lex.search_terms(
            q, qtf, k=candidates + n_own, exclude=row,
            max_query_terms=None if exact else self.similar_max_terms,
            max_postings=None if exact else self.similar_max_postings,
            rescore=max(self.similar_rescore, candidates + n_own))
        if scope == "other_papers":
            keep = self.paper_ids[rows] != own_paper
            rows, scores = rows[keep][:candidates], scores[keep][:candidates]
        extra = []
        if self.vectors is not None and union_dense > 0:
            ids, _ = self.vectors.search(self.vectors.vectors_for([row]), union_dense + 1 + n_own)
            extra.append(ids[0][ids[0] >= 0])
        if scope == "other_papers" and self.papers is not None and union_papers > 0:
            for p in self.papers.related(own_paper, union_papers).tolist():
                extra.append(self.rows_of_paper(p)[:self.ranking.rows_per_related_paper])
        if extra:
            more = np.unique(np.concatenate(extra))
            more = more[(more != row) & ~np.isin(more, rows)]
            if scope == "other_papers":
                more = more[self.paper_ids[more] != own_paper]
            if len(more):
                rows = np.r_[rows, more]
                scores = np.r_[scores, lex.score_docs(q, lex.query_weights(q, qtf), more)]
        if self.kinds is not None:  # figures are related to figures, tables to tables
            keep = self.kinds[rows] == self.kinds[row]
            rows, scores = rows[keep], scores[keep]
        return rows, scores

    # First stage of `similar` on big collections (see LexicalIndex.search_terms): candidates from
    # the figure's 32 best terms (posting lists <= 120k entries in total, which the lexical index
    # merges by sorting), top 2000 rescored exactly with the whole text. Measured (tie-aware)
    # recall of the exact lexical top-100 at 1M synthetic figures: mean 0.998, worst of 100
    # targets 0.97 (the same as with a 200k budget; a 1000-doc rescore drops the worst to 0.80).
    # Queries whose whole text has <= 120k postings are exact. `similar(..., exact=True)` always
    # scans everything.
    similar_max_terms = 32
    similar_max_postings = 120_000
    similar_rescore = 2000

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
            own = int(self.paper_ids[row])
            rows = self.rows_of_papers([p for p in set(within_papers) if p != own])
            rows = rows[self.kind_mask(rows, self.kind_of_row(row))]
            lex = self.lexical(method)
            q, qtf = lex.doc_terms(row)
            scores = lex.score_docs(q, lex.query_weights(q, qtf), rows)
        else:
            rows, scores = self.candidates(row, scope, method, candidates, union_dense, union_papers, exact)
        sig = self.signals(row, rows, scores)
        final = fuse(sig, weights if weights is not None else self.weights(scope, w))
        ranked = order(final)
        if scope == "other_papers" and cfg.max_per_paper and len(rows):
            ranked = diversify(ranked, self.paper_ids[rows], cfg.max_per_paper)
        if sig.get("visual") is not None and len(rows):
            ranked = same_picture_first(ranked, sig["visual"])
        # everything in ranked order
        sig = {k: (None if v is None else np.asarray(v)[ranked]) for k, v in sig.items()}
        return rows[ranked], np.asarray(scores)[ranked], sig, final[ranked]

    def similar(self, figure_id: int, k: int = 10, w: float | None = None, method: str | None = None,
                candidates: int | None = None, union_dense: int | None = None, exact: bool = False,
                scope: str = "all", weights: dict[str, float] | None = None,
                union_papers: int | None = None, within_papers: Sequence[int] | None = None) -> list[Hit]:
        """Figures related to `figure_id` (excluded from the results) within `scope` (or among the
        figures of `within_papers`), ranked by the fusion of their signals (fusion.py); each hit
        carries its signal values."""
        row = self.row_of(figure_id)
        candidates = max(self.ranking.candidates if candidates is None else candidates, k)
        rows, scores, sig, final = self.rank_rows(row, scope, weights, w, method, candidates,
                                                  union_dense, union_papers, exact, within_papers)
        lex = self.lexical(method or self.ranking.first_stage)
        q, _ = lex.doc_terms(row)
        return self._hits(rows, final, scores, sig["text"], k, 0,
                          lambda r: lex.matched_term_ids(q, r), signals=sig, ranked=np.arange(len(rows)))

    # Text queries: a figure found only by its embedding must be at least this close to count as
    # a match (MiniLM cosine of query and figure text; nonsense queries stay below it). A query none
    # of whose words occurs in the collection and that names no figure type (a keyboard mash, a
    # misspelling, another field's words) must be much closer: MiniLM puts such strings of word pieces at up to .41 of arbitrary
    # figure and table texts, so below .45 nothing is shown ("no close matches"); misspellings
    # land in the same range and mostly find nothing either
    # (`python scripts/query_matches.py --data-dir DIR` prints each kind).
    dense_match_min = DEFAULT_THRESHOLDS["dense_match_min"]
    dense_match_unknown_words_min = DEFAULT_THRESHOLDS["dense_match_unknown_words_min"]
    query_type_weight = 1.0
    # a figure "is" a named type for a query when the classifier scores that type at least this
    # (the threshold above which the classifier lists a type a figure shows, app/vision/figure_types.SHOWN);
    # at most type_pool such figures
    # join the candidates, the highest-scoring first
    type_match_min = DEFAULT_THRESHOLDS["type_match_min"]
    type_pool = 400

    def named_type_score(self, rows: np.ndarray | None, type_codes: np.ndarray) -> np.ndarray:
        """Per row (all rows when None), the highest classifier score among the named types; in
        an index built without scores, 1 when one of them is the row's dominant type, else 0."""
        if self.type_scores is None:
            return np.isin(self.types if rows is None else self.types[rows], type_codes).astype(np.float64)
        part = self.type_scores[:, type_codes] if rows is None else self.type_scores[rows][:, type_codes]
        return part.max(axis=1).astype(np.float64)

    def rows_showing_type(self, code: int) -> np.ndarray:
        """The `type_pool` rows that show type `code` with the highest scores; one pass over the
        scores the first time a type is asked for, then kept (an engine never changes)."""
        top = self._type_top.get(code)
        if top is None:
            codes = np.array([code], dtype=np.int16)
            score = self.named_type_score(None, codes)
            score[~self.named_type_match(None, codes, score)] = -1.0
            top = np.argpartition(-score, min(self.type_pool, len(score) - 1))[:self.type_pool]
            top = np.sort(top[score[top] >= 0])
            self._type_top[code] = top
        return top

    # words of at most this many captions (evenly spread) make the spelling vocabulary
    spelling_captions = 200_000

    def spelling_suggestion(self, query: str, understood: Iterable[str] = ()) -> str | None:
        """The query with each misspelt word replaced by a close, frequent word its captions use,
        or by one of the `understood` words (the figure-type names a search understands in any
        collection; spelling.py). A word the collection knows or an ordinary English word is never
        replaced ("recall" in a collection without it stays "recall": nothing matches, and the page
        says so). None when no word is replaced, or when a misspelt word has no close spelling (a
        keyboard mash stays unmatched)."""
        known = self.lexical().term_ids
        english = english_words()
        understood = frozenset(understood)
        out, changed = [], False
        for word in query.split():
            w = word.lower().strip(".,;:!?()[]\"'")
            if all(t in known for t in analyze(word)) or w in english or not w.isalpha():
                out.append(word)
                continue
            near = closest_word(w, self._spelling_words(), understood)
            if near is None or not (near in understood or all(t in known for t in analyze(near))):
                return None
            out.append(near)
            changed = True
        return " ".join(out) if changed else None

    def prepare_spelling(self) -> None:
        """Build the spelling vocabulary now (a server does it in the background after loading an
        index: at a million figures it takes seconds, which the first misspelt query would wait)."""
        self._spelling_words()
        english_words()

    def _spelling_words(self) -> dict[tuple[str, int], dict[str, int]]:
        """Caption words (letters only, 3+ long), each with how often the figure texts use its
        stem (captions, mentions, cells: how frequent it is in the collection), by (first letter,
        length), built once, on first use or by `prepare_spelling`."""
        with self._spelling_lock:
            if self._spelling is None:
                words: set[str] = set()
                n = len(self.captions)
                for row in range(0, n, max(1, n // self.spelling_captions)):
                    words.update(w for w in _WORD_RE.findall(self.captions[row].lower()) if len(w) >= 3)
                lex = self.lexical()
                known = lex.term_ids
                uses = np.bincount(lex.row_terms, weights=lex.row_tf, minlength=len(lex.vocab))
                index: dict[tuple[str, int], dict[str, int]] = {}
                for w in sorted(words):
                    stems = analyze(w)
                    if len(stems) == 1 and stems[0] in known:
                        index.setdefault((w[0], len(w)), {})[w] = int(uses[known[stems[0]]])
                self._spelling = index
            return self._spelling

    def shows_type(self, name: str) -> bool:
        """Whether any figure of the index shows the figure type `name` (True when the index
        has no types: nothing can be said)."""
        if self.types is None:
            return True
        if name not in self.type_names:
            return False
        return bool(len(self.rows_showing_type(self.type_names.index(name))))

    def named_type_match(self, rows: np.ndarray | None, type_codes: np.ndarray,
                         score: np.ndarray | None = None) -> np.ndarray:
        """Rows that show a named type: it is their dominant type or scores `type_match_min`."""
        score = self.named_type_score(rows, type_codes) if score is None else score
        return np.isin(self.types if rows is None else self.types[rows], type_codes) | (score >= self.type_match_min)

    def search(self, query: str, k: int = 10, rerank: bool = True, w: float | None = None,
               offset: int = 0, method: str = "bm25", candidates: int = 100,
               types: Sequence[str] = (), allowed_rows: np.ndarray | None = None,
               union_dense: int = 100, kind: str = "figure") -> list[Hit]:
        """Free-text search by words and by meaning.

        Candidates: the lexical top-`candidates`, united (when an encoder and vectors exist) with
        the `union_dense` figures nearest to the query embedding that are at least
        `dense_match_min` close, and with the figures where a type the query names scores
        highest (or, in an index without type scores, near figures of that dominant type).
        Ranked by the fusion of lexical score, embedding cosine and type score; a query with no
        real match returns nothing. `kind` (figure, table or both) and `allowed_rows` (bool per
        row) restrict the results (filters).
        """
        w = self.w if w is None else float(w)
        lex = self.lexical(method)
        tokens = analyze(query)
        need = max(candidates, offset + k)
        restricted = allowed_rows is not None or (self.kinds is not None and kind != "both")
        rows, scores = lex.search(tokens, k=need * 10 if restricted else need)
        use_dense = rerank and self.encoder is not None and self.vectors is not None
        qvec = None
        # a figure type's name ("photo", "heat map") is a word the product knows, in any collection
        known_terms = lex.term_ids
        dense_min = (self.dense_match_min if types or any(t in known_terms for t in tokens)
                     else max(self.dense_match_min, self.dense_match_unknown_words_min))
        type_codes = np.array([self.type_names.index(t) for t in types if t in self.type_names], dtype=np.int16)
        if not len(type_codes) or self.types is None:
            type_codes = np.zeros(0, dtype=np.int16)
        if len(type_codes) and self.type_scores is not None:
            best = np.unique(np.concatenate([self.rows_showing_type(int(c)) for c in type_codes]))
            best = best[~np.isin(best, rows)]
            if len(best):
                q, qtf = lex.query_vector(tokens)
                rows = np.r_[rows, best]
                scores = np.r_[scores, lex.score_docs(q, lex.query_weights(q, qtf), best)]
        if use_dense:
            from .vectors import l2_normalize

            qvec = l2_normalize(self.encoder([query]))[0]
            pool = union_dense + (400 if len(type_codes) and self.type_scores is None else 0)
            ids, sims = self.vectors.search(qvec[None, :], pool)
            ids, sims = ids[0], sims[0]
            ok = ids >= 0
            near = ok & (sims >= dense_min)
            near[union_dense:] = False
            if len(type_codes) and self.type_scores is None:
                near |= ok & np.isin(self.types[np.maximum(ids, 0)], type_codes)
            more = ids[near]
            more = more[~np.isin(more, rows)]
            if len(more):
                q, qtf = lex.query_vector(tokens)
                rows = np.r_[rows, more]
                scores = np.r_[scores, lex.score_docs(q, lex.query_weights(q, qtf), more)]
        if len(rows):
            keep = self.kind_mask(rows, kind)
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
                keep |= self.named_type_match(rows, type_codes)
            rows, scores, cos = rows[keep], scores[keep], cos[keep]
            sig = {"lexical": scores, "text": cos, "type": None}
        if len(type_codes) and len(rows):
            sig["type"] = self.named_type_score(rows, type_codes)
            weights = {**weights, "type": self.query_type_weight}
        final = fuse(sig, weights)
        return self._hits(rows, final, scores, sig["text"], k, offset,
                          lambda r: lex.matched_terms(tokens, r), signals=sig)

    # Uploaded pictures: the nearest `picture_pool` picture vectors (app/vision/pictures.py),
    # re-ranked by their cosine plus this weight times the cosine of the upload's type scores with
    # each figure's, so a heatmap brings up heatmaps before other pictures of a similar layout.
    # Chosen on the hand-labelled recommender-systems figures (`figsearch eval-image-copies
    # --labels`) as the largest weight keeping rescaled copies first at least 99% of the time
    # (0: .997, .5: .993, 1: .983); there uploads found their labelled kind among the first five
    # results of other papers .705 (weight 0) -> .913 (in-sample for the type head).
    picture_pool = 100
    picture_type_weight = 0.5

    def by_picture(self, vector: np.ndarray, k: int = 10, kind: str = "figure",
                   type_scores: Mapping[str, float] | None = None) -> list[Hit]:
        """Figures (of `kind`) whose visual vector is nearest to `vector` (an uploaded picture's);
        with the picture's `type_scores` ({type: score}), figures of the same kinds first."""
        if self.visual is None:
            return []
        q = np.asarray(vector, dtype=np.float32)[None, :]
        typed = bool(type_scores) and self.type_scores is not None
        want = max(k, self.picture_pool) if typed else k
        pool = want if self.kinds is None or kind == "both" else 4 * want
        while True:  # fetch more neighbours until enough rows of `kind` are among them (or all rows are)
            ids, sims = self.visual.search(q, min(pool, len(self)))
            keep = ids[0] >= 0
            keep[keep] = self.kind_mask(ids[0][keep], kind)
            if keep.sum() >= want or pool >= len(self):
                break
            pool *= 4
        rows, cos = ids[0][keep][:want], sims[0][keep][:want].astype(np.float64)
        signals = {"visual": cos}
        final = cos
        if typed:
            qs = np.array([float(type_scores.get(t, 0.0)) for t in self.type_names])
            cand = self.type_scores[rows].astype(np.float64)
            norms = np.linalg.norm(cand, axis=1) * max(float(np.linalg.norm(qs)), 1e-9)
            kinds = cand @ qs / np.where(norms > 0, norms, 1.0)
            final = fuse({"visual": cos, "type": kinds}, {"visual": 1.0, "type": self.picture_type_weight})
            # what the result shows (its reasons): the same dominant type as the upload's best-scoring one
            signals["type"] = (self.types[rows] == int(np.argmax(qs))).astype(np.float64)
        return self._hits(rows, final, np.zeros(len(rows)), None, k, 0, lambda r: [],
                          signals=signals, ranked=order(final))

    # ----------------------------------------------------------- persistence
    def save(self, index_root: str | Path, keep: int | None = 3) -> str:
        """Write a new version under index_root, then atomically point CURRENT at it.

        Returns the version name. Older versions beyond the newest `keep` are deleted (None = keep all).
        """
        self.version = publish(index_root, self.save_version_dir, keep)
        return self.version

    def save_version_dir(self, d: str | Path) -> None:
        """Write this engine into directory `d` (no CURRENT handling)."""
        d = Path(d)
        d.mkdir(parents=True, exist_ok=True)
        self._lex[self._primary].save(d / "lexical")
        for name in ("vectors", "papers", "visual"):
            if getattr(self, name) is not None:
                getattr(self, name).save(d / name)
        if self.types is not None:
            np.save(d / "types.npy", self.types)
        if self.kinds is not None:
            np.save(d / "kinds.npy", self.kinds)
        if self.type_scores is not None:
            np.save(d / "type_scores.npy", self.type_scores)
        np.save(d / "figure_ids.npy", self.figure_ids)
        np.save(d / "paper_ids.npy", self.paper_ids)
        np.save(d / "captions_blob.npy", self.captions.blob)
        np.save(d / "captions_offsets.npy", self.captions.offsets)
        self.ranking.save(d)
        meta = dict(n=len(self), method=self._primary, has_vectors=self.vectors is not None,
                    has_papers=self.papers is not None, has_visual=self.visual is not None,
                    type_names=self.type_names, created=time.time(), format=1)
        (d / "meta.json").write_text(json.dumps(meta))

    @classmethod
    def load(cls, path: str | Path, encoder: Encoder | None = None, mmap: bool = False,
             gpu: str = "auto", check: bool = True) -> "SearchEngine":
        """Load a version directory, or the CURRENT version when given an index root. `check`:
        verify the files against the version's manifest first (VersionCorrupt when they differ);
        off only for a version the caller has just checked."""
        path = Path(path)
        if (path / CURRENT).exists():
            return cls.load_current(path, encoder=encoder, mmap=mmap, gpu=gpu)
        if check:
            check_version(path)
        meta = json.loads((path / "meta.json").read_text())
        lexical = LexicalIndex.load(path / "lexical", mmap=mmap)
        from .papers import PaperIndex
        from .vectors import VectorIndex

        loaded = {}
        for name, flag in (("vectors", "has_vectors"), ("visual", "has_visual")):
            loaded[name] = VectorIndex.load(path / name, gpu=gpu, mmap=mmap) if meta.get(flag) else None
        loaded["papers"] = PaperIndex.load(path / "papers", gpu=gpu, mmap=mmap) if meta.get("has_papers") else None
        types = np.load(path / "types.npy") if (path / "types.npy").exists() else None
        kinds = np.load(path / "kinds.npy") if (path / "kinds.npy").exists() else None
        mm = "r" if mmap else None
        type_scores = np.load(path / "type_scores.npy", mmap_mode=mm) if (path / "type_scores.npy").exists() else None
        captions = _Captions(np.load(path / "captions_blob.npy", mmap_mode=mm),
                             np.load(path / "captions_offsets.npy"))
        eng = cls(lexical, np.load(path / "figure_ids.npy"), np.load(path / "paper_ids.npy"),
                  captions, encoder=encoder, types=types, type_names=meta.get("type_names", []), kinds=kinds,
                  type_scores=type_scores, ranking=RankingConfig.load(path), **loaded)
        eng.version = path.name
        return eng

    @classmethod
    def load_current(cls, index_root: str | Path, encoder: Encoder | None = None,
                     mmap: bool = False, gpu: str = "auto") -> "SearchEngine":
        root = Path(index_root)
        version = choose(root).version  # CURRENT's, or the newest intact one
        if version is None:
            raise FileNotFoundError(f"no intact index version under {root}")
        return cls.load(root / version, encoder=encoder, mmap=mmap, gpu=gpu, check=False)
