"""Lexical first stage: BM25 (exactly rank_bm25.BM25Okapi's formula) or tf.idf cosine (Kuzi & Zhai's first stage).

Why this layout: at 1M figures (~80 distinct terms each) a Python-level scorer such as rank_bm25
costs seconds per query. Here every (term, doc) weight is precomputed once into a column-major
(CSC) sparse matrix, so a query is a weighted sum of a few columns. Long queries ("more like this
figure" uses the figure's whole text, ~80 terms, some of them in most documents) are still exact but
use a vectorised MaxScore: query terms whose summed upper bounds cannot lift a document into the
top-k are not scanned; they are added afterwards only for the few surviving candidates, from a
row-major (CSR) copy of the term counts. The CSR copy doubles as each document's term-id list, which
the engine uses as the query of `similar` (no re-analysis of text).

Storage (nnz ~ 80 * N): CSC doc ids int32 + weights float32, CSR term ids int32 + counts uint16 =
14 bytes per (term, doc): about 1.1 GB at 1M figures.

Scores: BM25 = sum over query tokens (duplicates counted, as rank_bm25 does) of
idf(t) * tf*(k1+1) / (tf + k1*(1-b+b*dl/avgdl)), with idf = ln((N-df+.5)/(df+.5)) and negative idfs
replaced by epsilon * mean(idf over the vocabulary) -- rank_bm25's flooring, so results match its
oracle. tf.idf = cosine between (1+ln tf)*ln(N/df) vectors (terms in every document carry no weight).
Weights are float32; sums are float64.
"""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from .posting_sums import kth_largest, score_rows_tfidf

try:  # scipy's C++ SMMP and row-gather kernels (private but stable for a decade); public API is the fallback
    from scipy.sparse._sparsetools import csr_matmat as _csr_matmat, csr_row_index as _csr_row_index
except ImportError:  # pragma: no cover
    _csr_matmat = _csr_row_index = None

METHODS = ("bm25", "tfidf")
_PROBE_POSTINGS = 20_000   # postings scanned to get a first top-k threshold estimate
_PROBE_DOCS = 300          # docs fully scored for that estimate (>= k)
_CAND_CAP = 8_000          # above this many surviving candidates, scan the remaining terms too
_SORT_MAX = 120_000        # below this many postings, accumulate by sorting instead of the C++ kernel
_MAXSCORE_MIN = 200_000    # MaxScore only pays off when it can skip this many postings or more
_SLACK = 1e-5              # relative safety margin on float32 bounds: pruning never drops a true hit


def _csr_from_tokens(indptr: np.ndarray, tokens: np.ndarray, n_terms: int, chunk: int = 100_000):
    """Token-level (doc, term) stream -> per-doc sorted unique term ids and counts (CSR)."""
    n_docs = len(indptr) - 1
    row_nnz = np.zeros(n_docs, dtype=np.int64)
    terms_parts, tf_parts = [], []
    for s in range(0, n_docs, chunk):
        e = min(n_docs, s + chunk)
        lo, hi = int(indptr[s]), int(indptr[e])
        if hi == lo:
            continue
        local = np.repeat(np.arange(e - s, dtype=np.int64), np.diff(indptr[s:e + 1]))
        keys = local * n_terms + tokens[lo:hi].astype(np.int64)
        del local
        keys.sort(kind="stable" if hi - lo < 1000 else "quicksort")
        starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
        counts = np.diff(np.r_[starts, len(keys)])
        ukeys = keys[starts]
        del keys
        rows = ukeys // n_terms
        terms_parts.append((ukeys - rows * n_terms).astype(np.int32))
        tf_parts.append(np.minimum(counts, 65535).astype(np.uint16))
        row_nnz[s:e] = np.bincount(rows, minlength=e - s)
    row_ptr = np.zeros(n_docs + 1, dtype=np.int64)
    np.cumsum(row_nnz, out=row_ptr[1:])
    row_terms = np.concatenate(terms_parts) if terms_parts else np.zeros(0, np.int32)
    row_tf = np.concatenate(tf_parts) if tf_parts else np.zeros(0, np.uint16)
    return row_ptr, row_terms, row_tf


def _gather_rows(ptr: np.ndarray, rows: np.ndarray):
    """Flat positions of all entries of `rows` in a CSR/CSC layout, and each entry's row ordinal."""
    starts = ptr[rows]
    lens = ptr[rows + 1] - starts
    total = int(lens.sum())
    if total == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    owner = np.repeat(np.arange(len(rows)), lens)
    offs = np.zeros(len(rows), dtype=np.int64)
    np.cumsum(lens[:-1], out=offs[1:])
    pos = np.arange(total, dtype=np.int64) + (starts - offs)[owner]
    return pos, owner


def _csr_view(data: np.ndarray, indices: np.ndarray, ptr: np.ndarray, shape: tuple[int, int]):
    """A scipy CSR matrix over existing CSR arrays: int32 indices when they fit (the index arrays
    are int32 already, so nothing large is copied)."""
    import scipy.sparse as sp

    idx = np.int32 if int(ptr[-1]) < 2**31 - 1 else np.int64
    return sp.csr_matrix((data, np.asarray(indices, dtype=idx), np.asarray(ptr, dtype=idx)), shape=shape, copy=False)


def _topk(docs: np.ndarray, scores: np.ndarray, k: int):
    """Top-k by descending score, ties broken by ascending doc index (deterministic)."""
    if len(scores) > k:
        kth = kth_largest(scores, k)
        keep = scores >= kth
        docs, scores = docs[keep], scores[keep]
    order = np.lexsort((docs, -scores))[:k]
    return docs[order], scores[order]


def bm25_idf(df: np.ndarray, n_docs: int, epsilon: float) -> np.ndarray:
    """rank_bm25's idf: ln((N-df+.5)/(df+.5)); negative ones floored at epsilon times the mean
    idf over every vocabulary word (averaged *before* flooring); 0 for absent terms."""
    df = np.asarray(df, dtype=np.float64)
    present = df > 0
    idf = np.zeros(len(df))
    idf[present] = np.log(n_docs - df[present] + 0.5) - np.log(df[present] + 0.5)
    avg = float(idf[present].mean()) if present.any() else 0.0
    idf[present & (idf < 0)] = epsilon * avg
    return idf


def tfidf_idf(df: np.ndarray, n_docs: int) -> np.ndarray:
    """ln(N/df) (terms in every document carry no weight); 0 for absent terms."""
    df = np.asarray(df, dtype=np.float64)
    idf = np.zeros(len(df))
    present = df > 0
    idf[present] = np.log(n_docs / df[present])
    return idf


def bm25_tf_part(tf: np.ndarray, doc_len: np.ndarray, avgdl: float, k1: float, b: float) -> np.ndarray:
    """BM25's saturation of a term count by document length: tf*(k1+1) / (tf + k1*(1-b+b*dl/avgdl))."""
    tf = np.asarray(tf, dtype=np.float64)
    kd = k1 * (1.0 - b + b * np.asarray(doc_len, dtype=np.float64) / avgdl)
    return tf * (k1 + 1.0) / (tf + kd)


def _compiled_rows(index: "LexicalIndex") -> bool:
    """Whether the index's rows have the types the compiled scoring loop reads in place (others,
    e.g. wider counts, would need a copy of the whole rows at every query)."""
    return (index.row_ptr.dtype == np.int64 and index.row_terms.dtype == np.int32 and index.row_tf.dtype == np.uint16
            and index.doc_norm.dtype == np.float64 and len(index.doc_norm) == index.n_docs)


def query_hits(weighted: np.ndarray, terms: np.ndarray) -> np.ndarray:
    """Positions in `terms` (gathered rows) of the terms a query weighs (`weighted`: one bool per
    term id): a lookup in a table of bytes that stays in cache, instead of gathering every
    entry's float64 query weight to find the few that are not zero."""
    return np.flatnonzero(np.take(weighted, terms))


def select_terms(q: np.ndarray, qtf: np.ndarray, idf: np.ndarray, df: np.ndarray,
                 max_query_terms: int | None, max_postings: int | None,
                 vocab: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """The best query terms by qtf*idf (Lucene MoreLikeThis' term selection): at most
    `max_query_terms`, and (if set) only while their posting lists (`df`, aligned with q) total
    <= `max_postings`; a term whose list would overflow the budget is skipped, and the first
    term is always kept. Equal weights are ordered by the terms' words (`vocab`), not their ids,
    so an index that numbered its words in another order selects the same terms."""
    words = np.asarray([vocab[i] for i in np.asarray(q).tolist()], dtype=object)
    order = np.lexsort((words, -(qtf * idf[q])))
    if max_postings is None:
        keep = order[:max_query_terms]
    else:
        dfs = np.asarray(df)[order].tolist()
        keep, used = [], 0
        for i, d in zip(order.tolist(), dfs):
            if not keep or used + d <= max_postings:
                keep.append(i)
                used += d
                if max_query_terms is not None and len(keep) == max_query_terms:
                    break
        keep = np.asarray(keep, dtype=np.int64)
    return q[keep], qtf[keep]


class LexicalIndex:
    """Inverted index with precomputed per-(term, doc) weights; see the module docstring."""

    def __init__(self):
        self.method = "bm25"
        self.k1, self.b, self.epsilon = 1.5, 0.75, 0.25
        self.vocab: list[str] = []
        self._term_ids: dict[str, int] | None = None
        self.n_docs = 0
        self.avgdl = 0.0
        self.doc_len = np.zeros(0, np.float32)     # tokens per doc (BM25 length)
        self.df = np.zeros(0, np.int32)
        self.idf = np.zeros(0, np.float64)
        self.row_ptr = np.zeros(1, np.int64)        # CSR: doc -> sorted term ids + counts
        self.row_terms = np.zeros(0, np.int32)
        self.row_tf = np.zeros(0, np.uint16)
        self.col_ptr = np.zeros(1, np.int64)        # CSC: term -> doc ids + weights
        self.col_docs = np.zeros(0, np.int32)
        self.col_w = np.zeros(0, np.float32)
        self.col_max = np.zeros(0, np.float32)
        self.doc_norm = np.zeros(0, np.float64)    # tf.idf only: L2 norm of the doc vector
        self._nonneg = True
        self._postings = None                      # scipy CSR view (terms x docs) of the columns
        self._rows = None                          # scipy CSR view (docs x terms) of the counts

    # ------------------------------------------------------------------ build
    @classmethod
    def build(cls, docs: Sequence[Sequence[str]], method: str = "bm25", k1: float = 1.5,
              b: float = 0.75, epsilon: float = 0.25) -> "LexicalIndex":
        """Index analysed documents (lists of tokens). Token order is irrelevant."""
        ids: dict[str, int] = {}
        sd = ids.setdefault
        lens = np.fromiter((len(d) for d in docs), dtype=np.int64, count=len(docs))
        tokens = np.fromiter((sd(t, len(ids)) for d in docs for t in d), dtype=np.int32,
                             count=int(lens.sum()))
        indptr = np.zeros(len(docs) + 1, dtype=np.int64)
        np.cumsum(lens, out=indptr[1:])
        vocab = [None] * len(ids)
        for t, i in ids.items():
            vocab[i] = t
        return cls.from_token_ids(indptr, tokens, vocab, method=method, k1=k1, b=b, epsilon=epsilon)

    @classmethod
    def from_token_ids(cls, indptr: np.ndarray, tokens: np.ndarray, vocab: list[str],
                       method: str = "bm25", k1: float = 1.5, b: float = 0.75,
                       epsilon: float = 0.25) -> "LexicalIndex":
        """Fast path: documents as a token-id stream (tokens[indptr[i]:indptr[i+1]] = doc i)."""
        indptr = np.asarray(indptr, dtype=np.int64)
        tokens = np.asarray(tokens, dtype=np.int32)
        row_ptr, row_terms, row_tf = _csr_from_tokens(indptr, tokens, len(vocab))
        doc_len = np.diff(indptr).astype(np.float32)
        return cls.from_counts(row_ptr, row_terms, row_tf, doc_len, vocab, method, k1, b, epsilon)

    @classmethod
    def from_counts(cls, row_ptr, row_terms, row_tf, doc_len, vocab, method="bm25", k1=1.5,
                    b=0.75, epsilon=0.25) -> "LexicalIndex":
        """Build from per-doc (term id, count) rows; shares the CSR arrays (used by `reweighted`)."""
        if method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {method!r}")
        self = cls()
        self.method, self.k1, self.b, self.epsilon = method, float(k1), float(b), float(epsilon)
        self.vocab = list(vocab)
        self.row_ptr, self.row_terms, self.row_tf = row_ptr, row_terms, row_tf
        self.doc_len = np.asarray(doc_len, dtype=np.float32)
        self.n_docs = len(row_ptr) - 1
        self.avgdl = float(self.doc_len.astype(np.float64).mean()) if self.n_docs else 0.0
        self.df = np.bincount(row_terms, minlength=len(self.vocab)).astype(np.int32)
        self._compute_idf()
        if method == "tfidf":
            self.doc_norm = np.zeros(self.n_docs)
            for s, e in self._row_chunks():
                lo, hi = int(row_ptr[s]), int(row_ptr[e])
                owner = np.repeat(np.arange(e - s), np.diff(row_ptr[s:e + 1]))
                v = (1.0 + np.log(row_tf[lo:hi].astype(np.float64))) * self.idf[row_terms[lo:hi]]
                self.doc_norm[s:e] = np.sqrt(np.bincount(owner, weights=v * v, minlength=e - s))
                del v, owner  # no chunk's temporaries kept while the columns are built
        self._build_columns()
        return self

    def reweighted(self, method: str) -> "LexicalIndex":
        """Same documents, other scoring method (shares the CSR arrays)."""
        if method == self.method:
            return self
        return LexicalIndex.from_counts(self.row_ptr, self.row_terms, self.row_tf, self.doc_len,
                                        self.vocab, method, self.k1, self.b, self.epsilon)

    def _compute_idf(self):
        if self.method == "bm25":
            self.idf = bm25_idf(self.df, self.n_docs, self.epsilon)
        else:
            self.idf = tfidf_idf(self.df, self.n_docs)

    def _weights(self, docs: np.ndarray, terms: np.ndarray, tf: np.ndarray) -> np.ndarray:
        """float32 weight of term in doc -- the single formula used for columns and for rescoring."""
        tf = tf.astype(np.float64)
        if self.method == "bm25":
            w = self.idf[terms] * bm25_tf_part(tf, self.doc_len[docs], self.avgdl, self.k1, self.b)
        else:
            norm = self.doc_norm[docs]
            w = (1.0 + np.log(tf)) * self.idf[terms] / np.where(norm > 0, norm, 1.0)
        return w.astype(np.float32)

    def _row_chunks(self, step: int = 50_000):
        for s in range(0, self.n_docs, step):
            yield s, min(self.n_docs, s + step)

    def _build_columns(self):
        """Row weights computed chunk-wise (bounded temporaries), then one CSR->CSC transpose."""
        import scipy.sparse as sp

        n_terms = len(self.vocab)
        w = np.empty(len(self.row_terms), dtype=np.float32)
        for s, e in self._row_chunks():
            lo, hi = int(self.row_ptr[s]), int(self.row_ptr[e])
            owner = np.repeat(np.arange(s, e), np.diff(self.row_ptr[s:e + 1]))
            w[lo:hi] = self._weights(owner, self.row_terms[lo:hi], self.row_tf[lo:hi])
        indptr = self.row_ptr if self.row_ptr[-1] >= 2**31 else self.row_ptr.astype(np.int32)
        csr = sp.csr_matrix((w, self.row_terms, indptr), shape=(self.n_docs, n_terms), copy=False)
        del w
        csc = csr.tocsc()
        del csr
        csc.sort_indices()
        self.col_ptr = csc.indptr.astype(np.int64)
        self.col_docs = csc.indices.astype(np.int32, copy=False)
        self.col_w = csc.data.astype(np.float32, copy=False)
        del csc
        self._finish_columns()

    def _finish_columns(self):
        n_terms = len(self.col_ptr) - 1
        self.col_max = np.zeros(n_terms, np.float32)
        nonempty = np.flatnonzero(np.diff(self.col_ptr) > 0)
        if len(nonempty):
            self.col_max[nonempty] = np.maximum.reduceat(self.col_w, self.col_ptr[nonempty])
        self._nonneg = bool(len(self.col_w) == 0 or self.col_w.min() >= 0)

    @property
    def matrix(self):
        """The (docs x terms) weight matrix as a scipy CSC matrix (shares memory)."""
        import scipy.sparse as sp

        return sp.csc_matrix((self.col_w, self.col_docs, self.col_ptr),
                             shape=(self.n_docs, len(self.vocab)))

    # ---------------------------------------------------------------- queries
    @property
    def term_ids(self) -> dict[str, int]:
        if self._term_ids is None:
            self._term_ids = {t: i for i, t in enumerate(self.vocab)}
        return self._term_ids

    def query_vector(self, query_tokens: Iterable[str]) -> tuple[np.ndarray, np.ndarray]:
        """Analysed query tokens -> (unique term ids, query term counts). Unknown terms dropped."""
        ids = self.term_ids
        c = Counter(ids[t] for t in query_tokens if t in ids)
        if not c:
            return np.zeros(0, np.int64), np.zeros(0, np.float64)
        q = np.fromiter(c.keys(), dtype=np.int64, count=len(c))
        qtf = np.fromiter(c.values(), dtype=np.float64, count=len(c))
        return q, qtf

    def doc_terms(self, doc_index: int) -> tuple[np.ndarray, np.ndarray]:
        """(term ids, counts) of one indexed document -- the query of "more like this"."""
        s, e = int(self.row_ptr[doc_index]), int(self.row_ptr[doc_index + 1])
        return self.row_terms[s:e].astype(np.int64), self.row_tf[s:e].astype(np.float64)

    def rows(self, docs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(indptr, term ids, counts) of the chosen documents' rows, in their order."""
        docs = np.asarray(docs, dtype=np.int64)
        pos, _owner = _gather_rows(self.row_ptr, docs)
        indptr = np.zeros(len(docs) + 1, np.int64)
        np.cumsum(self.row_ptr[docs + 1] - self.row_ptr[docs], out=indptr[1:])
        return indptr, self.row_terms[pos], self.row_tf[pos]

    def collection_counts(self) -> np.ndarray:
        """How often each term occurs in the whole collection."""
        return np.bincount(self.row_terms, weights=self.row_tf, minlength=len(self.vocab))

    def query_weights(self, q: np.ndarray, qtf: np.ndarray) -> np.ndarray:
        """Per-term query weights: counts for BM25, normalised (1+ln qtf)*idf for tf.idf."""
        return self._query_weights(q, qtf)

    def _query_weights(self, q: np.ndarray, qtf: np.ndarray) -> np.ndarray:
        if self.method == "bm25":
            return qtf.astype(np.float64)  # rank_bm25 loops over query tokens: duplicates add up
        v = (1.0 + np.log(qtf)) * self.idf[q]
        n = float(np.sqrt((v * v).sum()))
        return v / n if n > 0 else v

    def _prune(self, q, qtf, max_query_terms, max_postings=None):
        """The best terms by qtf*idf (Lucene MoreLikeThis' term selection): at most
        `max_query_terms`, and (if set) only while their posting lists total <= `max_postings`
        (the first term is always kept)."""
        if max_query_terms is None or len(q) <= max_query_terms and max_postings is None:
            return q, qtf
        return select_terms(q, qtf, self.idf, self.col_ptr[q + 1] - self.col_ptr[q], max_query_terms, max_postings,
                            self.vocab)

    def search(self, query_tokens: Iterable[str], k: int = 100, exclude: int | None = None,
               max_query_terms: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Top-k (doc indices, scores) by descending score; docs scoring 0 and `exclude` skipped.

        Exact unless `max_query_terms` is set (then only the top terms by qtf*idf are used).
        """
        q, qtf = self.query_vector(query_tokens)
        return self.search_terms(q, qtf, k=k, exclude=exclude, max_query_terms=max_query_terms)

    def search_doc(self, doc_index: int, k: int = 100, max_query_terms: int | None = None):
        """More-like-this: the document's own terms as the query, the document itself excluded."""
        q, qtf = self.doc_terms(doc_index)
        return self.search_terms(q, qtf, k=k, exclude=doc_index, max_query_terms=max_query_terms)

    def search_terms(self, q: np.ndarray, qtf: np.ndarray, k: int = 100, exclude: int | None = None,
                     max_query_terms: int | None = None, rescore: int = 1000,
                     max_postings: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """`search` on (unique term ids, query counts).

        With `max_query_terms` set and a longer query, candidates are the top-`rescore` docs for
        the query reduced to its `max_query_terms` best terms (by qtf*idf; optionally also capped by
        their total posting-list length `max_postings`), and those candidates are
        then scored *exactly* with the full query. Returned scores are always exact full-query
        scores; the approximation is only that a doc outside the reduced query's top-`rescore` can
        be missed (bench.py measures the recall of the exact top-k).
        """
        empty = (np.zeros(0, np.int64), np.zeros(0, np.float64))
        if k <= 0 or len(q) == 0 or self.n_docs == 0:
            return empty
        q, qtf = np.asarray(q, np.int64), np.asarray(qtf, np.float64)
        total = int((self.col_ptr[q + 1] - self.col_ptr[q]).sum()) if max_postings is not None else 0
        if max_query_terms is not None and (
                len(q) > max_query_terms or (max_postings is not None and total > max_postings)):
            qp, qtfp = self._prune(q, qtf, max_query_terms, max_postings)
            cand, _ = self.search_terms(qp, qtfp, k=max(k, rescore), exclude=exclude)
            full = self.score_docs(q, self._query_weights(q, qtf), cand)
            keep = full > 0
            return _topk(cand[keep], full[keep], k)
        qw = self._query_weights(q, qtf)
        live = (qw != 0) & (self.col_ptr[q + 1] > self.col_ptr[q])
        q, qw = q[live], qw[live]
        if len(q) == 0:
            return empty
        if not self._nonneg:
            return self._brute(q, qw, k, exclude, positive_only=False)
        df = self.col_ptr[q + 1] - self.col_ptr[q]
        if int(df.sum()) <= _MAXSCORE_MIN or k > 200:
            return self._brute(q, qw, k, exclude)
        return self._maxscore(q, qw, k, exclude)

    def _accumulate(self, q: np.ndarray, qw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Term-at-a-time accumulation over the postings of terms q (weights qw), in C++.

        A 1 x V sparse query row times the V x N postings matrix (scipy's SMMP kernel: a dense
        accumulator plus a list of touched docs): ~4x faster than a numpy gather + bincount and no
        N-sized output. Returns (touched doc indices, float32 scores), unordered.
        """
        import scipy.sparse as sp

        df = self.col_ptr[q + 1] - self.col_ptr[q]
        if int(df.sum()) <= _SORT_MAX:
            # few postings: merging the sorted lists by a sort beats the kernel's N-sized
            # scratch arrays and cache misses at 1M docs
            pos, owner = _gather_rows(self.col_ptr, q)
            if len(pos) == 0:
                return np.zeros(0, np.int64), np.zeros(0, np.float32)
            w = self.col_w[pos] * np.asarray(qw, dtype=np.float32)[owner]
            # one 64-bit key per posting, doc id high and the weight's bits low: a plain value sort
            # (SIMD) groups each doc's weights about twice as fast as an argsort of the doc ids
            key = (self.col_docs[pos].astype(np.uint64) << np.uint64(32)) | w.view(np.uint32)
            key.sort()
            docs = (key >> np.uint64(32)).astype(np.int64)
            w = key.astype(np.uint32).view(np.float32)
            starts = np.flatnonzero(np.r_[True, docs[1:] != docs[:-1]])
            return docs[starts], np.add.reduceat(w, starts)
        if self._postings is None:
            self._postings = _csr_view(self.col_w, self.col_docs, self.col_ptr, (len(self.col_ptr) - 1, self.n_docs))
        post = self._postings
        idx = post.indices.dtype
        qi = np.asarray(q, dtype=idx)
        qd = np.asarray(qw, dtype=np.float32)
        if _csr_matmat is not None:
            # direct kernel call: the output can't exceed the postings count, which saves scipy's
            # separate sizing pass (and its N-sized scratch array)
            bound = int(df.sum())
            indptr = np.zeros(2, dtype=idx)
            indices = np.empty(bound, dtype=idx)
            data = np.empty(bound, dtype=np.float32)
            _csr_matmat(1, self.n_docs, np.array([0, len(q)], dtype=idx), qi, qd,
                        post.indptr, post.indices, post.data, indptr, indices, data)
            n = int(indptr[1])
            return indices[:n].astype(np.int64), data[:n]
        row = sp.csr_matrix((qd, qi, np.array([0, len(q)], dtype=idx)), shape=(1, post.shape[0]),
                            copy=False)
        out = row @ post
        return out.indices.astype(np.int64), out.data

    # exact, scans every posting of every query term
    def _brute(self, q, qw, k, exclude, positive_only=True):
        docs, scores = self._accumulate(q, qw)
        keep = scores > 0 if positive_only else scores != 0
        if exclude is not None:
            keep &= docs != exclude
        return _topk(docs[keep], scores[keep].astype(np.float64), k)

    def _row_matrix(self):
        """The counts as a scipy CSR (docs x terms) over the same arrays (no copy of the entries):
        its row gather runs in C++."""
        if self._rows is None:
            self._rows = _csr_view(self.row_tf, self.row_terms, self.row_ptr, (self.n_docs, len(self.vocab)))
        return self._rows

    def score_docs(self, q: np.ndarray, qw: np.ndarray, docs: np.ndarray) -> np.ndarray:
        """Exact scores of chosen docs for a query given as (term ids, *query weights*), via CSR."""
        docs = np.asarray(docs, dtype=np.int64)
        if len(docs) == 0 or len(q) == 0:
            return np.zeros(len(docs))
        qdense = np.zeros(len(self.vocab))
        qdense[q] = qw
        if self.method == "tfidf" and _compiled_rows(self):
            if docs.min() < 0 or docs.max() >= self.n_docs:  # the compiled loop does not check bounds
                raise IndexError("doc index out of range")
            return score_rows_tfidf(self.row_ptr, self.row_terms, self.row_tf, docs, qdense != 0, qdense, self.idf,
                                    self.doc_norm)
        indptr, terms, tf = self._gather_doc_rows(docs)
        hit = query_hits(qdense != 0, terms)
        owner = np.searchsorted(indptr, hit, side="right") - 1  # the chosen doc of each hit
        terms = terms[hit]
        w = self._weights(docs[owner], terms, tf[hit])
        return np.bincount(owner, weights=w * qdense[terms], minlength=len(docs))

    def _gather_doc_rows(self, docs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(indptr, term ids, counts) of the chosen docs' rows, in their order: scipy's C++ row
        gather called directly (its indexing wrapper costs more than the gather itself for a
        few thousand rows)."""
        m = self._row_matrix()
        if _csr_row_index is None:  # pragma: no cover
            sub = m[docs]
            return sub.indptr, sub.indices, sub.data
        if docs.min() < 0 or docs.max() >= self.n_docs:  # the kernel does not check bounds
            raise IndexError("doc index out of range")
        rows = docs.astype(m.indptr.dtype, copy=False)
        indptr = np.zeros(len(rows) + 1, dtype=m.indptr.dtype)
        np.cumsum(m.indptr[rows + 1] - m.indptr[rows], out=indptr[1:])
        terms = np.empty(int(indptr[-1]), dtype=m.indices.dtype)
        tf = np.empty(int(indptr[-1]), dtype=m.data.dtype)
        _csr_row_index(len(rows), rows, m.indptr, m.indices, m.data, terms, tf)
        return indptr, terms, tf

    def score(self, query_tokens: Iterable[str], docs: np.ndarray) -> np.ndarray:
        """Exact scores of chosen docs for analysed query tokens (e.g. dense-only candidates)."""
        q, qtf = self.query_vector(query_tokens)
        return self.score_docs(q, self._query_weights(q, qtf), docs)

    def _maxscore(self, q, qw, k, exclude):
        """Exact top-k without scanning the long, low-impact posting lists (vectorised MaxScore)."""
        ub = qw * self.col_max[q].astype(np.float64)
        order = np.argsort(-ub, kind="stable")
        q, qw, ub = q[order], qw[order], ub[order]
        df = self.col_ptr[q + 1] - self.col_ptr[q]

        # 1) threshold estimate: fully score the best docs of the high-impact terms whose
        #    postings are cheap to read. theta = k-th best true score among real docs <= true k-th.
        cum = np.cumsum(df)
        n_probe = max(1, int(np.searchsorted(cum, _PROBE_POSTINGS, side="right")))
        theta, scored_docs, scored = self._probe(q, qw, n_probe, k, exclude)

        # 2) non-essential suffix R: terms whose upper bounds sum below theta cannot, alone, bring
        #    a doc into the top-k; only postings of the essential prefix E are scanned.
        tail = np.cumsum(ub[::-1])[::-1]              # tail[i] = sum(ub[i:])
        limit = theta * (1.0 - _SLACK)
        n_ess = int(np.searchsorted(-tail, -limit, side="right")) if theta > 0 else len(q)
        n_ess = max(n_ess, 1)
        if n_ess == len(q):
            return self._brute(q, qw, k, exclude)
        ub_rest = float(tail[n_ess])
        docs, part = self._accumulate(q[:n_ess], qw[:n_ess])
        if exclude is not None:
            part[docs == exclude] = 0

        def candidates(th):
            cut = th * (1.0 - _SLACK) - ub_rest * (1.0 + _SLACK)
            return docs[part >= cut] if cut > 0 else docs[part > 0]

        cand = candidates(theta)
        if len(cand) > _CAND_CAP:
            # 3) sharpen theta with the best partial scores, then retry
            keep = part > 0
            top = _topk(docs[keep], part[keep].astype(np.float64), min(int(keep.sum()), 4 * k))[0]
            s = self.score_docs(q, qw, top)
            theta = max(theta, self._kth(np.r_[scored, s], np.r_[scored_docs, top], k))
            cand = candidates(theta)
        if len(cand) > _CAND_CAP:
            # bounds too loose for this query: scan everything (still exact)
            return self._brute(q, qw, k, exclude)
        s = self.score_docs(q, qw, cand)
        keep = s > 0
        return _topk(cand[keep], s[keep], k)

    @staticmethod
    def _kth(scores: np.ndarray, docs: np.ndarray, k: int) -> float:
        if len(docs) == 0:
            return 0.0
        _, first = np.unique(docs, return_index=True)
        s = scores[first]
        if len(s) < k:
            return 0.0
        return float(np.partition(s, len(s) - k)[len(s) - k])

    def _probe(self, q, qw, n_probe, k, exclude):
        docs, partial = self._accumulate(q[:n_probe], qw[:n_probe])
        keep = partial > 0
        if exclude is not None:
            keep &= docs != exclude
        docs, partial = docs[keep], partial[keep].astype(np.float64)
        n_keep = max(_PROBE_DOCS, 3 * k)
        if len(docs) > n_keep:
            docs, partial = _topk(docs, partial, n_keep)
        full = self.score_docs(q, qw, docs)
        return self._kth(full, docs, k), docs, full

    def matched_terms(self, query_tokens: Iterable[str], doc_index: int) -> list[str]:
        """Query terms (analysed form, query order, unique) that occur in the document."""
        s, e = int(self.row_ptr[doc_index]), int(self.row_ptr[doc_index + 1])
        present = set(self.row_terms[s:e].tolist())
        ids = self.term_ids
        out, seen = [], set()
        for t in query_tokens:
            i = ids.get(t)
            if i is not None and i in present and t not in seen:
                seen.add(t)
                out.append(t)
        return out

    def matched_term_ids(self, q: np.ndarray, doc_index: int) -> list[str]:
        """Like `matched_terms` for a query given as term ids."""
        s, e = int(self.row_ptr[doc_index]), int(self.row_ptr[doc_index + 1])
        common = np.intersect1d(np.asarray(q), self.row_terms[s:e])
        return [self.vocab[i] for i in common.tolist()]

    # ----------------------------------------------------------- persistence
    _ARRAYS = ("doc_len", "df", "idf", "row_ptr", "row_terms", "row_tf", "col_ptr", "col_docs",
               "col_w", "col_max", "doc_norm")

    def save(self, path_dir: str | Path) -> None:
        """One .npy per array (loadable with mmap) + vocab.json + meta.json."""
        d = Path(path_dir)
        d.mkdir(parents=True, exist_ok=True)
        for name in self._ARRAYS:
            np.save(d / f"{name}.npy", getattr(self, name), allow_pickle=False)
        (d / "vocab.json").write_text(json.dumps(self.vocab, ensure_ascii=False))
        meta = dict(method=self.method, k1=self.k1, b=self.b, epsilon=self.epsilon,
                    n_docs=self.n_docs, avgdl=self.avgdl, nonneg=self._nonneg, format=1)
        (d / "meta.json").write_text(json.dumps(meta))

    @classmethod
    def load(cls, path_dir: str | Path, mmap: bool = False) -> "LexicalIndex":
        """Inverse of `save`; mmap=True maps the arrays (shared page cache, instant start)."""
        d = Path(path_dir)
        meta = json.loads((d / "meta.json").read_text())
        self = cls()
        self.method, self.k1, self.b, self.epsilon = meta["method"], meta["k1"], meta["b"], meta["epsilon"]
        self.n_docs, self.avgdl = int(meta["n_docs"]), float(meta["avgdl"])
        for name in cls._ARRAYS:  # plain ndarray views of the maps: np.memmap's indexing wrapper costs more than a query's gathers
            setattr(self, name, np.load(d / f"{name}.npy", mmap_mode="r" if mmap else None,
                                        allow_pickle=False).view(np.ndarray))
        self.vocab = json.loads((d / "vocab.json").read_text())
        self._nonneg = bool(meta.get("nonneg", True))
        return self

    def __len__(self) -> int:
        return self.n_docs

    def __repr__(self) -> str:
        return (f"LexicalIndex(method={self.method!r}, docs={self.n_docs}, terms={len(self.vocab)}, "
                f"nnz={len(self.col_docs)})")

