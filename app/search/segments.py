"""A lexical index made of immutable segments: adding documents writes a small new segment
instead of rebuilding the index, deletes are tombstones until a merge, a merge rewrites a run of
segments as one (the layout of Lucene-based engines).

Scores are BM25 with the statistics of the whole collection (document count, document
frequencies, average length, summed over segments) computed when a query runs, so a query over
several segments ranks exactly as one index built from the same documents (up to the counts'
one-byte quantisation, see app.search.postings). A deleted document leaves the statistics at
once (unlike Lucene, which keeps it until a merge): an index with tombstones ranks as one built
without those documents, so an index version that grew by segments ranks as a full rebuild.

Queries offer the calls of `LexicalIndex` that the engine makes (`search_terms`, `score_docs`,
`doc_terms`, ...) with the same meaning; documents are numbered across segments in the order
they were added.

With `impacts=True` segments also keep their lists in impact order (app.search.postings) for
`impact_search`, a first stage that reads only their heads; measured on the synthetic benchmark it
found the exact top 100 no better than the best terms' whole lists (docs/scaling.md), so the
engine does not use it by default.

On disk (`open(d)` / `save(d)`): d/state.json (segment names, parameters), d/vocab.json,
d/deleted.npy and one directory per segment under d/segments/, memory-mapped when opened.
"""
from __future__ import annotations

import functools
import json
import os
import secrets
import shutil
from collections import Counter
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np
import scipy.sparse as sp

from app.model_store.versions import link_tree

from .lexical import LexicalIndex, _csr_from_tokens, _topk, bm25_idf, bm25_tf_part, select_terms
from .posting_sums import score_rows, sum_lists, sum_postings, warm_up
from .postings import IMPACT_LEVELS, LEN_MAX, PostingsSegment
from .query_threads import run_parts

_PROBE_POSTINGS = 20_000   # postings of the most selective terms read to estimate the k-th score
_PROBE_DOCS = 300          # documents fully scored for that estimate (>= k)
_MAXSCORE_MIN = 200_000    # below this many postings every list is read
_CAND_CAP = 20_000         # above this many candidates after pruning, every list is read
_SLACK = 1e-6              # relative margin on the bounds: pruning never drops a true hit


class SegmentedIndex:
    """BM25 over postings segments with collection-wide statistics; see the module docstring."""

    method = "bm25"

    def __init__(self, k1: float = 1.5, b: float = 0.75, epsilon: float = 0.25, path: str | Path | None = None,
                 impacts: bool = False):
        self.k1, self.b, self.epsilon = float(k1), float(b), float(epsilon)
        self.impacts = bool(impacts)               # segments written with impact-ordered lists too
        self.vocab: list[str] = []
        self._term_of: dict[str, int] = {}          # every word seen (ids are never reused)
        self._live_terms: dict[str, int] | None = None
        self.segments: list[PostingsSegment] = []
        self.names: list[str] = []                 # segment directory names (when stored)
        self.bases = np.zeros(1, np.int64)         # segment i holds documents [bases[i], bases[i+1])
        self._deleted = np.zeros(0, bool)
        self._n_deleted = 0
        self.path = None if path is None else Path(path)
        self._df = np.zeros(0, np.int64)
        self._total_len = 0
        self._idf: np.ndarray | None = None
        self._norms: tuple | None = None   # (statistics they were computed for, float64, float32)

    # -------------------------------------------------------------- content
    @property
    def n_docs(self) -> int:
        return int(self.bases[-1])

    def __len__(self) -> int:
        return self.n_docs

    @property
    def deleted(self) -> np.ndarray:
        """Tombstones, one per document (true: deleted)."""
        return self._deleted

    @deleted.setter
    def deleted(self, value: np.ndarray) -> None:
        self._deleted = value
        self._n_deleted = int(value.sum())

    @property
    def n_live(self) -> int:
        # counted when the tombstones change: summing ten million of them costs milliseconds,
        # and every query asks (the length norms are keyed by it)
        return self.n_docs - self._n_deleted

    def _intern(self, words: Sequence[str]) -> np.ndarray:
        out = np.empty(len(words), np.int64)
        for i, w in enumerate(words):
            t = self._term_of.get(w)
            if t is None:
                t = self._term_of[w] = len(self.vocab)
                self.vocab.append(w)
            out[i] = t
        return out

    def add_documents(self, docs: Sequence[Sequence[str]]) -> range:
        """Add analysed documents (token lists) as one new segment; returns their numbers."""
        local: dict[str, int] = {}
        lens = np.fromiter((len(d) for d in docs), dtype=np.int64, count=len(docs))
        tokens = np.fromiter((local.setdefault(t, len(local)) for d in docs for t in d), dtype=np.int32,
                             count=int(lens.sum()))
        indptr = np.zeros(len(docs) + 1, np.int64)
        np.cumsum(lens, out=indptr[1:])
        words = [None] * len(local)
        for w, i in local.items():
            words[i] = w
        return self.add_token_ids(indptr, tokens, words)

    def add_token_ids(self, indptr: np.ndarray, tokens: np.ndarray, words: Sequence[str]) -> range:
        """Add documents given as a token-id stream (tokens[indptr[i]:indptr[i+1]] of document i,
        ids into `words`) as one new segment; returns their numbers."""
        mapping = self._intern(words)
        ids = mapping[np.asarray(tokens, dtype=np.int64)].astype(np.int32)
        indptr = np.asarray(indptr, dtype=np.int64)
        row_ptr, row_terms, row_tf = _csr_from_tokens(indptr, ids, len(self.vocab))
        del ids
        seg = PostingsSegment.build(row_ptr, row_terms, row_tf, np.diff(indptr), len(self.vocab), self.k1, self.b,
                                    self.impacts)
        return self._append(seg)

    def add_counts(self, row_ptr: np.ndarray, row_terms: np.ndarray, row_tf: np.ndarray, doc_len: np.ndarray,
                   words: Sequence[str]) -> range:
        """Add documents given as rows of (term id into `words`, count) -- another lexical index's
        rows, taken over without analysing the texts again -- as one new segment."""
        mapping = self._intern(words)
        rows = sp.csr_matrix((np.asarray(row_tf), mapping[np.asarray(row_terms, dtype=np.int64)],
                              np.asarray(row_ptr, dtype=np.int64)), shape=(len(row_ptr) - 1, len(self.vocab)))
        rows.sort_indices()  # interning may reorder a row's term ids
        seg = PostingsSegment.build(rows.indptr.astype(np.int64), rows.indices.astype(np.int32), rows.data,
                                    np.asarray(doc_len).astype(np.int64), len(self.vocab), self.k1, self.b,
                                    self.impacts)
        return self._append(seg)

    def _append(self, seg: PostingsSegment) -> range:
        first = self.n_docs
        if self.path is not None:
            name = f"seg-{secrets.token_hex(6)}"
            seg.save(self.path / "segments" / name)
            seg = PostingsSegment.load(self.path / "segments" / name)
            self.names.append(name)
        self.segments.append(seg)
        self.bases = np.r_[self.bases, first + seg.n_docs]
        self.deleted = np.r_[self.deleted, np.zeros(seg.n_docs, bool)]
        self._df = np.r_[self._df, np.zeros(len(self.vocab) - len(self._df), np.int64)]
        self._df += seg.df_all(len(self.vocab))
        self._total_len += seg.total_len
        self._idf, self._live_terms = None, None
        if self.path is not None:
            self._write_state()
        return range(first, self.n_docs)

    def delete(self, docs: Iterable[int]) -> None:
        """Mark documents deleted: never returned again; removed (and out of the statistics) at
        the next merge."""
        docs = np.unique(np.asarray(list(docs), dtype=np.int64))
        if len(docs) and (docs.min() < 0 or docs.max() >= self.n_docs):
            raise IndexError("document number out of range")
        docs = docs[~self.deleted[docs]]
        self.deleted[docs] = True
        self._n_deleted += len(docs)
        self._leave_statistics(docs)
        if self.path is not None:
            self._write_state()

    def _leave_statistics(self, docs: np.ndarray) -> None:
        """Take documents (deleted ones) out of the document frequencies and the total length."""
        docs = np.asarray(docs, dtype=np.int64)
        if not len(docs):
            return
        _, terms, _ = self.rows(docs)
        self._df -= np.bincount(terms, minlength=len(self._df))
        seg_of = np.searchsorted(self.bases, docs, side="right") - 1
        for i in np.unique(seg_of).tolist():
            local = docs[seg_of == i] - int(self.bases[i])
            self._total_len -= int(np.asarray(self.segments[i].doc_len)[local].astype(np.int64).sum())
        self._idf, self._live_terms = None, None

    def merge(self, first: int = 0, last: int | None = None) -> np.ndarray:
        """Rewrite segments first..last (default: all) as one, without their deleted documents.

        Returns the old numbers of the documents kept, in their new order (numbers after the
        merged run shift down by the deleted ones); callers renumber their per-document arrays
        with it.
        """
        last = len(self.segments) - 1 if last is None else last
        if not self.segments:
            return np.zeros(0, np.int64)
        run = range(first, last + 1)
        lo, hi = int(self.bases[first]), int(self.bases[last + 1])
        ptr_parts, term_parts, tf_parts, len_parts = [], [], [], []
        for i in run:
            seg = self.segments[i]
            live = np.flatnonzero(~self.deleted[self.bases[i]:self.bases[i + 1]])
            indptr, terms, tf = seg.rows(live)
            ptr_parts.append(np.diff(indptr))
            term_parts.append(terms.astype(np.int32))
            tf_parts.append(tf)
            len_parts.append(np.asarray(seg.doc_len)[live])
        lens = np.concatenate(ptr_parts)
        row_ptr = np.zeros(len(lens) + 1, np.int64)
        np.cumsum(lens, out=row_ptr[1:])
        merged = PostingsSegment.build(row_ptr, np.concatenate(term_parts), np.concatenate(tf_parts),
                                       np.concatenate(len_parts), len(self.vocab), self.k1, self.b, self.impacts)
        del term_parts, tf_parts
        kept = np.r_[np.arange(lo), lo + np.flatnonzero(~self.deleted[lo:hi]), np.arange(hi, self.n_docs)]
        old_deleted = self.deleted
        old_names = self.names[first:last + 1] if self.path is not None else []
        segments, names = self.segments, self.names
        self.segments, self.names = [], []
        self.bases = np.zeros(1, np.int64)
        self._df, self._total_len, self._idf = np.zeros(len(self.vocab), np.int64), 0, None
        self._norms = None
        for i, seg in enumerate(segments):
            if i == first:
                self._adopt(merged, None)
            elif i not in run:
                self._adopt(seg, names[i] if names else None)
        # tombstones outside the merged run stay
        self.deleted = np.r_[old_deleted[:lo], np.zeros(merged.n_docs, bool), old_deleted[hi:]]
        self._leave_statistics(np.flatnonzero(self.deleted))
        if self.path is not None:
            self._write_state()
            for name in old_names:
                shutil.rmtree(self.path / "segments" / name, ignore_errors=True)
        return kept

    @property
    def has_impacts(self) -> bool:
        """Every segment has its impact-ordered lists (what `impact_search` reads)."""
        return bool(self.segments) and all(seg.has_impacts for seg in self.segments)

    def add_impacts(self) -> int:
        """Give the segments written without them their impact-ordered lists (stored next to the
        segment's other arrays when the index is on disk), and write later segments (adds,
        merges) with them; returns how many segments changed."""
        changed = 0
        self.impacts = True
        for i, seg in enumerate(self.segments):
            if seg.has_impacts:
                continue
            seg = seg.with_impacts(self.k1, self.b)
            if self.path is not None and self.names:
                d = self.path / "segments" / self.names[i]
                for name in ("imp_docs", "imp_tf", "imp_ladder"):
                    tmp = d / f".{name}.tmp.npy"
                    np.save(tmp, getattr(seg, name), allow_pickle=False)
                    tmp.replace(d / f"{name}.npy")
                seg = PostingsSegment.load(d)
            self.segments[i] = seg
            changed += 1
        if self.path is not None:
            self._write_state()
        return changed

    def _adopt(self, seg: PostingsSegment, name: str | None) -> None:
        """Append a segment during a merge (an existing directory, or a new one for `name` None)."""
        if self.path is not None and name is None:
            name = f"seg-{secrets.token_hex(6)}"
            seg.save(self.path / "segments" / name)
            seg = PostingsSegment.load(self.path / "segments" / name)
        if name is not None:
            self.names.append(name)
        self.segments.append(seg)
        self.bases = np.r_[self.bases, self.n_docs + seg.n_docs]
        self._df += seg.df_all(len(self.vocab))
        self._total_len += seg.total_len
        self._live_terms = None

    # ----------------------------------------------------------- statistics
    @property
    def term_ids(self) -> dict[str, int]:
        """Word -> term id of the words some live document has (a word only deleted documents
        had is unknown, as in an index built without them)."""
        if self._live_terms is None:
            present = self._df > 0
            self._live_terms = self._term_of if present.all() else {
                w: i for w, i in self._term_of.items() if present[i]}
        return self._live_terms

    @property
    def df(self) -> np.ndarray:
        return self._df

    @property
    def avgdl(self) -> float:
        return self._total_len / self.n_live if self.n_live else 0.0

    @property
    def idf(self) -> np.ndarray:
        if self._idf is None:
            self._idf = bm25_idf(self._df, self.n_live, self.epsilon)
        return self._idf

    def _tf_part(self, tf: np.ndarray, doc_len: np.ndarray) -> np.ndarray:
        return bm25_tf_part(tf, doc_len, self.avgdl, self.k1, self.b)

    def _norm_table(self, dtype=np.float64) -> np.ndarray:
        """k1 * (1 - b + b * dl / avgdl) of every stored document length dl (float64, or a float32
        copy), kept until the average length changes: a posting's weight is then
        tf * (k1 + 1) / (tf + norm). Looked up by length, so that a pass over postings reads two
        bytes of length per document rather than four or eight of norm."""
        key = (self._total_len, self.n_live)
        if self._norms is None or self._norms[0] != key:
            dl = np.arange(LEN_MAX + 1, dtype=np.float64)
            norm = self.k1 * (1.0 - self.b + self.b * dl / self.avgdl)
            self._norms = (key, norm, norm.astype(np.float32))
        return self._norms[1] if dtype == np.float64 else self._norms[2]

    # --------------------------------------------------------------- queries
    def query_vector(self, query_tokens: Iterable[str]) -> tuple[np.ndarray, np.ndarray]:
        """Analysed query tokens -> (unique term ids, query term counts). Unknown terms dropped."""
        c = Counter(self.term_ids[t] for t in query_tokens if t in self.term_ids)
        if not c:
            return np.zeros(0, np.int64), np.zeros(0, np.float64)
        return (np.fromiter(c.keys(), dtype=np.int64, count=len(c)),
                np.fromiter(c.values(), dtype=np.float64, count=len(c)))

    def reweighted(self, method: str) -> "SegmentedIndex | LexicalIndex":
        """The same documents scored by `method`. Segments score BM25 (tf.idf needs every
        document's norm under the collection's idf, rewritten whenever a segment is added), so
        another method gets one in-memory index of the live rows, numbered as here (deleted rows
        empty): a comparison method, built once per process when asked for."""
        if method == self.method:
            return self
        docs = np.arange(self.n_docs, dtype=np.int64)
        indptr, terms, tfs = self.rows(docs)
        doc_len = np.concatenate([np.asarray(seg.doc_len, np.float32) for seg in self.segments]) \
            if self.segments else np.zeros(0, np.float32)
        if self.deleted.any():
            live = ~np.repeat(self.deleted, np.diff(indptr))
            terms, tfs = terms[live], tfs[live]
            indptr = np.concatenate([[0], np.cumsum(np.where(self.deleted, 0, np.diff(indptr)))])
            doc_len = np.where(self.deleted, 0, doc_len)
        return LexicalIndex.from_counts(indptr, terms.astype(np.int32), tfs.astype(np.uint16), doc_len, self.vocab,
                                        method, self.k1, self.b, self.epsilon)

    def query_weights(self, q: np.ndarray, qtf: np.ndarray) -> np.ndarray:
        """BM25 counts a query term as often as it occurs (rank_bm25's loop over query tokens)."""
        return np.asarray(qtf, dtype=np.float64)

    def _segment_of(self, doc: int) -> int:
        return int(np.searchsorted(self.bases, doc, side="right")) - 1

    def rows(self, docs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(indptr, term ids, counts) of the chosen documents' rows, in their order."""
        docs = np.asarray(docs, dtype=np.int64)
        lens = np.zeros(len(docs), np.int64)
        seg_of = np.searchsorted(self.bases, docs, side="right") - 1
        parts = {}
        for i in np.unique(seg_of).tolist():
            where = np.flatnonzero(seg_of == i)
            ip, t, tf = self.segments[i].rows(docs[where] - int(self.bases[i]))
            lens[where] = np.diff(ip)
            parts[i] = (where, ip, t, tf)
        indptr = np.zeros(len(docs) + 1, np.int64)
        np.cumsum(lens, out=indptr[1:])
        terms = np.empty(int(indptr[-1]), np.int64)
        tfs = np.empty(int(indptr[-1]), np.uint8)
        for where, ip, t, tf in parts.values():
            owner = np.repeat(where, np.diff(ip))
            pos = indptr[owner] + (np.arange(len(t)) - ip[:-1][np.repeat(np.arange(len(where)), np.diff(ip))])
            terms[pos], tfs[pos] = t, tf
        return indptr, terms, tfs

    def collection_counts(self) -> np.ndarray:
        """How often each term occurs in the collection's live documents."""
        out = np.zeros(len(self.vocab))
        for seg in self.segments:
            for s in range(0, len(seg.row_terms), 8_000_000):
                out += np.bincount(seg.row_terms[s:s + 8_000_000], weights=seg.row_tf[s:s + 8_000_000],
                                   minlength=len(self.vocab))
        _, terms, tf = self.rows(np.flatnonzero(self.deleted))
        out -= np.bincount(terms, weights=tf.astype(np.float64), minlength=len(self.vocab))
        return out

    def doc_terms(self, doc: int) -> tuple[np.ndarray, np.ndarray]:
        """(term ids, counts) of one document -- the query of "more like this"."""
        i = self._segment_of(doc)
        terms, tf = self.segments[i].row(doc - int(self.bases[i]))
        return terms, tf.astype(np.float64)

    def search(self, query_tokens: Iterable[str], k: int = 100, exclude: int | None = None,
               max_query_terms: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        q, qtf = self.query_vector(query_tokens)
        return self.search_terms(q, qtf, k=k, exclude=exclude, max_query_terms=max_query_terms)

    def search_doc(self, doc: int, k: int = 100, max_query_terms: int | None = None):
        q, qtf = self.doc_terms(doc)
        return self.search_terms(q, qtf, k=k, exclude=doc, max_query_terms=max_query_terms)

    def search_terms(self, q: np.ndarray, qtf: np.ndarray, k: int = 100, exclude: int | None = None,
                     max_query_terms: int | None = None, rescore: int = 1000,
                     max_postings: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Top-k (documents, scores); same contract as `LexicalIndex.search_terms` (exact, or with
        `max_query_terms`/`max_postings` the reduced query's top-`rescore` scored exactly)."""
        empty = (np.zeros(0, np.int64), np.zeros(0, np.float64))
        q, qtf = np.asarray(q, np.int64), np.asarray(qtf, np.float64)
        if k <= 0 or len(q) == 0 or self.n_docs == 0:
            return empty
        df = self._df[q]
        if max_query_terms is not None and (
                len(q) > max_query_terms or (max_postings is not None and int(df.sum()) > max_postings)):
            qp, qtfp = select_terms(q, qtf, self.idf, df, max_query_terms, max_postings, self.vocab)
            cand, _ = self.search_terms(qp, qtfp, k=max(k, rescore), exclude=exclude)
            full = self.score_docs(q, qtf, cand)
            keep = full > 0
            return _topk(cand[keep], full[keep], k)
        live = (qtf != 0) & (df > 0) & (self.idf[q] != 0)
        q, qtf, df = q[live], qtf[live], df[live]
        if len(q) == 0:
            return empty
        if (self.idf[q] < 0).any():  # a tiny collection (mean idf below 0): any non-zero score counts
            return self._brute(q, qtf * self.idf[q], k, exclude, positive_only=False)
        if int(df.sum()) <= _MAXSCORE_MIN or k > 200:
            return self._brute(q, qtf * self.idf[q], k, exclude)
        return self._maxscore(q, qtf, df, k, exclude)

    def _accumulate(self, q: np.ndarray, qw: np.ndarray, each=None) -> tuple[np.ndarray, np.ndarray]:
        """(documents, summed weights) over the postings of terms q, deleted documents dropped,
        ascending within each segment. Weights in float64 when the lists cover over a quarter of
        a segment, else in float32 (as the pass held them when it sorted them by document).
        `each(documents, sums)`, if given, reduces each segment's part in that segment's thread."""
        k1p = self.k1 + 1.0
        terms = np.asarray(q, np.int64)

        def segment_sums(i: int):
            seg = self.segments[i]
            wide = int(seg.df(terms).sum()) * 4 > seg.n_docs
            docs, sums = sum_lists(seg, terms, qw, k1p, wide, self._norm_table(), self._norm_table(np.float32),
                                   self._segment_deleted(i))
            if not len(docs):
                return None
            docs += int(self.bases[i])
            return (docs, sums) if each is None else each(docs, sums)

        found = [r for r in run_parts([functools.partial(segment_sums, i) for i in range(len(self.segments))])
                 if r is not None]
        if not found:
            return np.zeros(0, np.int64), np.zeros(0, np.float64)
        return np.concatenate([d for d, _ in found]), np.concatenate([s for _, s in found])

    def _segment_deleted(self, i: int) -> np.ndarray:
        """Segment i's slice of the tombstones."""
        base = int(self.bases[i])
        return self.deleted[base:base + self.segments[i].n_docs]

    def _brute(self, q, qw, k, exclude, positive_only=True):
        """Top-k over every posting of q; each segment's documents that cannot be hits are dropped
        in that segment's thread, leaving the caller only the selection."""
        def segment_hits(docs, scores):
            keep = scores > 0 if positive_only else scores != 0
            if exclude is not None:
                keep &= docs != exclude
            return docs[keep], scores[keep]

        return _topk(*self._accumulate(q, qw, segment_hits), k)

    def _upper_bounds(self, q: np.ndarray, qw: np.ndarray) -> np.ndarray:
        """Largest weight each term can give a document: its largest count in the shortest
        document that has it, per segment, the largest over segments."""
        best = np.zeros(len(q))
        for seg in self.segments:
            ok = q < seg.n_terms
            if not ok.any():
                continue
            t = q[ok]
            has = np.asarray(seg.col_ptr[t + 1] - seg.col_ptr[t]) > 0
            b = np.where(has, self._tf_part(seg.col_tfmax[t], seg.col_dlmin[t]), 0.0)
            best[ok] = np.maximum(best[ok], b)
        return qw * best

    def _maxscore(self, q, qtf, df, k, exclude):
        """Exact top-k without reading the long lists of low-weight terms (MaxScore): a document
        that has none of the essential terms cannot reach the k-th score."""
        qw = qtf * self.idf[q]
        ub = self._upper_bounds(q, qw)
        order = np.argsort(-ub, kind="stable")
        q, qtf, qw, ub, df = q[order], qtf[order], qw[order], ub[order], df[order]
        # 1) a lower bound of the k-th score: full scores of the best documents of the most
        #    selective terms
        n_probe = max(1, int(np.searchsorted(np.cumsum(df), _PROBE_POSTINGS, side="right")))
        docs, part = self._accumulate(q[:n_probe], qw[:n_probe])
        if exclude is not None:
            keep = docs != exclude
            docs, part = docs[keep], part[keep]
        top, _ = _topk(docs, part, max(_PROBE_DOCS, 3 * k))
        full = self.score_docs(q, qtf, top)
        theta = float(np.partition(full, len(full) - k)[len(full) - k]) if len(full) >= k else 0.0
        # 2) essential terms: the others' bounds sum below theta
        tail = np.cumsum(ub[::-1])[::-1]
        limit = theta * (1.0 - _SLACK)
        n_ess = int(np.searchsorted(-tail, -limit, side="right")) if theta > 0 else len(q)
        n_ess = max(n_ess, 1)
        if n_ess >= len(q):
            return self._brute(q, qw, k, exclude)
        ub_rest = float(tail[n_ess])
        docs, part = self._accumulate(q[:n_ess], qw[:n_ess])
        if exclude is not None:
            part[docs == exclude] = 0
        cand = docs[part >= limit - ub_rest * (1.0 + _SLACK)]
        if len(cand) > _CAND_CAP:
            return self._brute(q, qw, k, exclude)
        s = self.score_docs(q, qtf, cand)
        keep = s > 0
        return _topk(cand[keep], s[keep], k)

    def impact_search(self, q: np.ndarray, qtf: np.ndarray, k: int = 100, exclude: int | None = None,
                      postings: int = 150_000, rescore: int = 1000) -> tuple[np.ndarray, np.ndarray]:
        """Approximate top-k (documents, exact scores) for a long query, reading about `postings`
        postings whatever the collection's size: the heads of the query terms' impact-ordered lists
        down to one score threshold (score-at-a-time: the postings that add the most to a score
        first, over all terms and segments), partial scores summed from them, and the best
        `rescore` documents by partial score scored exactly. A query whose lists hold no more than
        `postings` is answered exactly, as are queries on segments without impact order."""
        q, qtf = np.asarray(q, np.int64), np.asarray(qtf, np.float64)
        empty = (np.zeros(0, np.int64), np.zeros(0, np.float64))
        if k <= 0 or len(q) == 0 or self.n_docs == 0:
            return empty
        qw = qtf * self.idf[q]
        live = (qw > 0) & (self._df[q] > 0)
        if not self.has_impacts or int(self._df[q[live]].sum()) <= postings or (self.idf[q] < 0).any():
            return self.search_terms(q, qtf, k=k, exclude=exclude)
        ql, qwl = q[live], qw[live]
        depth = self._impact_depths(ql, qwl, postings)
        out_docs, out_scores = [], []
        for i, seg in enumerate(self.segments):
            ids, tf, owner = seg.impact_heads(ql, depth[i])
            if not len(ids):
                continue
            docs, scores = sum_postings(ids, tf, owner, qwl, self.k1 + 1.0,
                                        seg.doc_len, self._norm_table(np.float32), self._segment_deleted(i))
            out_docs.append(docs + int(self.bases[i]))
            out_scores.append(scores)
        if not out_docs:
            return empty
        docs, part = np.concatenate(out_docs), np.concatenate(out_scores)
        if exclude is not None:
            keep = docs != exclude
            docs, part = docs[keep], part[keep]
        cand, _ = _topk(docs, part, max(k, rescore))
        full = self.score_docs(q, qtf, cand)
        keep = full > 0
        return _topk(cand[keep], full[keep], k)

    def _impact_depths(self, q: np.ndarray, qw: np.ndarray, postings: int) -> np.ndarray:
        """How many postings of each term (columns) to read in each segment (rows): every
        posting whose level's weight reaches one threshold, chosen so that about `postings` are
        read in all (the boundary level read in part)."""
        ladders = np.stack([seg.ladders(q) for seg in self.segments])          # segments x terms x levels
        below = np.concatenate([ladders[:, :, 1:], np.zeros(ladders.shape[:2] + (1,), ladders.dtype)], axis=2)
        per_level = ladders - below                                            # postings in each level
        total = per_level.sum(axis=0).ravel()                                  # terms x levels, flattened
        # a level's weight: the middle of its saturation range times the term's query weight, the
        # less the more documents have the term (one in every document raises every score alike:
        # reading it first would find no candidate)
        spread = qw * np.maximum(0.0, 1.0 - self._df[q] / max(1, self.n_live))
        value = (np.outer(spread, (np.arange(IMPACT_LEVELS) + 0.5) / IMPACT_LEVELS)).ravel()
        order = np.argsort(-value, kind="stable")
        cum = np.cumsum(total[order])
        n_full = int(np.searchsorted(cum, postings, side="right"))
        depth = np.zeros(ladders.shape[:2], np.int64)
        taken = np.zeros(len(value), bool)
        taken[order[:n_full]] = True
        taken = taken.reshape(len(q), IMPACT_LEVELS)
        # a term's taken levels are its highest ones: the depth is the ladder at the lowest taken
        has = taken.any(axis=1)
        lowest = np.argmax(taken, axis=1)
        depth[:, has] = ladders[:, has, lowest[has]]
        if n_full < len(order):
            t, lvl = divmod(int(order[n_full]), IMPACT_LEVELS)
            left = postings - (int(cum[n_full - 1]) if n_full else 0)
            frac = left / max(1, int(total[order[n_full]]))
            depth[:, t] += np.floor(per_level[:, t, lvl] * frac).astype(np.int64)
        return depth

    def score_docs(self, q: np.ndarray, qw: np.ndarray, docs: np.ndarray) -> np.ndarray:
        """Exact scores of chosen documents for a query given as (term ids, query weights)."""
        docs = np.asarray(docs, dtype=np.int64)
        out = np.zeros(len(docs))
        if len(docs) == 0 or len(q) == 0:
            return out
        qdense = np.zeros(len(self.vocab))
        qdense[np.asarray(q, np.int64)] = np.asarray(qw, np.float64) * self.idf[np.asarray(q, np.int64)]
        weighted = qdense != 0
        seg_of = np.searchsorted(self.bases, docs, side="right") - 1

        def segment_scores(i: int) -> None:
            where = np.flatnonzero(seg_of == i)
            out[where] = score_rows(self.segments[i], docs[where] - int(self.bases[i]), weighted, qdense,
                                    self.k1 + 1.0, self._norm_table())

        run_parts([functools.partial(segment_scores, i) for i in np.unique(seg_of).tolist()])
        return out

    def score(self, query_tokens: Iterable[str], docs: np.ndarray) -> np.ndarray:
        q, qtf = self.query_vector(query_tokens)
        return self.score_docs(q, qtf, docs)

    def matched_terms(self, query_tokens: Iterable[str], doc: int) -> list[str]:
        """Query terms (analysed form, query order, unique) that occur in the document."""
        present = set(self.doc_terms(doc)[0].tolist())
        out, seen = [], set()
        for t in query_tokens:
            i = self.term_ids.get(t)
            if i is not None and i in present and t not in seen:
                seen.add(t)
                out.append(t)
        return out

    def matched_term_ids(self, q: np.ndarray, doc: int) -> list[str]:
        common = np.intersect1d(np.asarray(q), self.doc_terms(doc)[0], assume_unique=True)  # rows hold unique terms
        return [self.vocab[i] for i in common.tolist()]

    # ----------------------------------------------------------- persistence
    def _write_state(self) -> None:
        d = self.path
        d.mkdir(parents=True, exist_ok=True)
        tmp = d / f".vocab.{os.getpid()}.tmp"
        tmp.write_text(json.dumps(self.vocab, ensure_ascii=False))
        tmp.replace(d / "vocab.json")
        np.save(d / ".deleted.tmp.npy", self.deleted)
        (d / ".deleted.tmp.npy").replace(d / "deleted.npy")
        state = {"segments": self.names, "k1": self.k1, "b": self.b, "epsilon": self.epsilon, "impacts": self.impacts,
                 "n_docs": self.n_docs, "format": 1}
        tmp = d / f".state.{os.getpid()}.tmp"
        tmp.write_text(json.dumps(state))
        tmp.replace(d / "state.json")  # written last: the segments it names exist

    def save(self, d: str | Path) -> None:
        """Write the index under d. Segments are immutable: those already stored elsewhere are
        hard-linked into d (a new index version costs no copy), the others written."""
        d = Path(d)
        if self.path is not None and d.resolve() == self.path.resolve():
            self._write_state()
            return
        if not self.names:
            self.names = [f"seg-{secrets.token_hex(6)}" for _ in self.segments]
        for name, seg in zip(self.names, self.segments):
            src = None if self.path is None else self.path / "segments" / name
            dst = d / "segments" / name
            if src is not None and src.is_dir():
                dst.mkdir(parents=True, exist_ok=True)
                link_tree(src, dst)
            else:
                seg.save(dst)
        home, self.path = self.path, d
        try:
            self._write_state()
        finally:
            self.path = home

    @classmethod
    def load(cls, d: str | Path, mmap: bool = False) -> "SegmentedIndex":
        """An index part of a version (see app.search.index_parts); `mmap` maps its arrays."""
        return cls.open(d, mmap=mmap)

    @classmethod
    def open(cls, d: str | Path, mmap: bool = True) -> "SegmentedIndex":
        """The index stored under d (created empty when d has none)."""
        d = Path(d)
        if not (d / "state.json").exists():
            return cls(path=d)
        state = json.loads((d / "state.json").read_text())
        self = cls(state["k1"], state["b"], state["epsilon"], path=d, impacts=state.get("impacts", False))
        self.vocab = json.loads((d / "vocab.json").read_text())
        self._term_of = {w: i for i, w in enumerate(self.vocab)}
        self._df = np.zeros(len(self.vocab), np.int64)
        for name in state["segments"]:
            self._adopt(PostingsSegment.load(d / "segments" / name, mmap=mmap), name)
        self.deleted = np.load(d / "deleted.npy")[:self.n_docs].copy()
        self._leave_statistics(np.flatnonzero(self.deleted))
        warm_up()   # a served index's first query does not wait for the compiled loops
        return self

    def __repr__(self) -> str:
        return (f"SegmentedIndex(docs={self.n_docs}, deleted={int(self.deleted.sum())}, "
                f"segments={len(self.segments)}, terms={len(self.vocab)})")
