"""One immutable segment of compressed postings: the documents of one ingest (or one merge).

Why: the in-memory lexical index stores 14 bytes per (term, document) pair (int32 doc id +
float32 weight by term, int32 term id + uint16 count by document), all resident: about 11 GB at
ten million figures. Here a pair costs about 6-7 bytes on disk and is read through memory maps,
so the resident set is the lists that queries touch:

* by term (postings): document ids as gaps from the previous id (the first id kept apart), each
  list in the narrowest of 1, 2 or 4 bytes that holds its largest gap (frame of reference; decoding
  is one `view` and one `cumsum`), and the term's count in the document in one byte;
* by document (rows, for "more like this" queries and exact re-scoring): term ids (int32) and
  counts (one byte).

Counts are capped at 255 and lengths at 65,535 tokens: the quantisation (a figure text rarely has
a word more than 255 times). No weights are stored: BM25 needs the collection's statistics
(document frequencies, average length), which change as segments are added, so the weight of a
posting is computed when it is read (`app.search.segments`), exactly as a single index would.
Per term the largest count and the shortest document bound its weight, for MaxScore pruning.

Impact order (for the first stage of "more like this" on large collections): each term's list is
stored a second time, its postings in descending order of their BM25 saturation tf*(k1+1) /
(tf + k1*(1-b+b*dl/avgdl)) with this segment's average length (document ids as int32, counts in
one byte), and a ladder counts, per term, the postings at or above each of `IMPACT_LEVELS` levels
of that saturation. A query then reads only the heads of its terms' lists down to a common score
threshold: what it reads depends on the threshold, not on the length of the lists. The order is
fixed when the segment is written; weights are still computed from the count and the length
when read, with the collection's statistics of the moment.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

import numpy as np

try:  # scipy's C++ row gather (private but stable for a decade), as app.search.lexical uses it
    from scipy.sparse._sparsetools import csr_row_index as _csr_row_index
except ImportError:  # pragma: no cover
    _csr_row_index = None

TF_MAX = 255
LEN_MAX = 65_535
_ARRAYS = ("doc_len", "row_ptr", "row_terms", "row_tf", "col_ptr", "col_first", "col_off", "col_width",
           "col_bytes", "col_tf", "col_tfmax", "col_dlmin")
_IMPACT_ARRAYS = ("imp_docs", "imp_tf", "imp_ladder")   # absent from segments written before them
IMPACT_LEVELS = 64         # levels of the saturation (0, k1+1] in the ladder, equal widths
_GAP_TYPES = {1: "<u1", 2: "<u2", 4: "<u4"}   # bytes per gap -> how a list's gaps are stored
_IMPACT_FINE = 1 << 16     # finer quantisation that orders postings inside a level


def _column_blocks(ptr: np.ndarray, budget: int = 4_000_000):
    """Column ranges [c0, c1) of about `budget` postings each (bounded temporaries)."""
    n_cols = len(ptr) - 1
    c0 = 0
    while c0 < n_cols:
        c1 = int(np.searchsorted(ptr, ptr[c0] + budget, side="right")) - 1
        c1 = min(n_cols, max(c1, c0 + 1))
        yield c0, c1
        c0 = c1


def _block_gaps(indices: np.ndarray, ptr: np.ndarray, c0: int, c1: int):
    """Gaps inside the lists of columns [c0, c1), each gap's column (relative to c0) and each
    column's number of gaps."""
    lo, hi = int(ptr[c0]), int(ptr[c1])
    lens = np.diff(ptr[c0:c1 + 1])
    ids = indices[lo:hi].astype(np.int64)
    col = np.repeat(np.arange(c1 - c0), lens)
    inside = np.r_[col[1:] == col[:-1]] if len(col) else np.zeros(0, bool)
    gaps = (ids[1:] - ids[:-1])[inside]
    return gaps, col[1:][inside], np.maximum(lens - 1, 0)


def _encode_gaps(indices: np.ndarray, ptr: np.ndarray):
    """Per column: first id, byte offset and width (1/2/4) of its gap list, and the byte stream
    (each list padded to 4 bytes so that views of it are aligned)."""
    n_cols = len(ptr) - 1
    lens = np.diff(ptr)
    first = np.zeros(n_cols, np.int32)
    nonempty = lens > 0
    first[nonempty] = indices[ptr[:-1][nonempty]]
    width = np.ones(n_cols, np.uint8)
    for c0, c1 in _column_blocks(ptr):
        gaps, col, n_gaps = _block_gaps(indices, ptr, c0, c1)
        has = np.flatnonzero(n_gaps > 0)
        if len(has):
            starts = np.zeros(c1 - c0, np.int64)
            np.cumsum(n_gaps[:-1], out=starts[1:])
            mx = np.maximum.reduceat(gaps, starts[has])
            width[c0 + has] = np.where(mx < 256, 1, np.where(mx < 65_536, 2, 4))
    n_gaps_all = np.maximum(lens - 1, 0)
    off = np.zeros(n_cols + 1, np.int64)
    np.cumsum((n_gaps_all * width + 3) // 4 * 4, out=off[1:])
    out = np.zeros(int(off[-1]), np.uint8)
    for c0, c1 in _column_blocks(ptr):
        gaps, col, n_gaps = _block_gaps(indices, ptr, c0, c1)
        if not len(gaps):
            continue
        starts = np.zeros(c1 - c0, np.int64)
        np.cumsum(n_gaps[:-1], out=starts[1:])
        w = width[c0:c1].astype(np.int64)[col]
        dest = off[c0:c1][col] + (np.arange(len(gaps)) - starts[col]) * w
        for b in range(4):  # little-endian byte planes
            m = w > b
            out[dest[m] + b] = (gaps[m] >> (8 * b)) & 255
    return first, off, width, out


def impact_order(col_ptr: np.ndarray, docs: np.ndarray, col_tf: np.ndarray, doc_len: np.ndarray,
                 k1: float = 1.5, b: float = 0.75):
    """Each column's postings re-ordered by descending BM25 saturation (ties: ascending id), and the
    ladder: ladder[t, l] = postings of t whose saturation reaches level l, so those postings are
    the first ladder[t, l] of its re-ordered list."""
    n_terms = len(col_ptr) - 1
    lens = np.asarray(doc_len, dtype=np.float64)
    avgdl = float(lens.mean()) if len(lens) else 1.0
    imp_docs = np.empty(len(docs), np.int32)
    imp_tf = np.empty(len(col_tf), np.uint8)
    ladder = np.zeros((n_terms, IMPACT_LEVELS), np.uint32)
    for c0, c1 in _column_blocks(col_ptr):
        lo, hi = int(col_ptr[c0]), int(col_ptr[c1])
        if hi == lo:
            continue
        d = docs[lo:hi]
        tf = col_tf[lo:hi].astype(np.float64)
        sat = tf / (tf + k1 * (1.0 - b + b * lens[d] / avgdl))      # saturation / (k1 + 1), in (0, 1)
        fine = np.minimum((sat * _IMPACT_FINE).astype(np.int64), _IMPACT_FINE - 1)
        level = fine * IMPACT_LEVELS // _IMPACT_FINE
        col = np.repeat(np.arange(c1 - c0, dtype=np.int64), np.diff(col_ptr[c0:c1 + 1]))
        order = np.argsort(col * _IMPACT_FINE + (_IMPACT_FINE - 1 - fine), kind="stable")  # ids ascend within ties
        imp_docs[lo:hi] = d[order]
        imp_tf[lo:hi] = col_tf[lo:hi][order]
        hist = np.bincount(col * IMPACT_LEVELS + level, minlength=(c1 - c0) * IMPACT_LEVELS)
        ladder[c0:c1] = np.cumsum(hist.reshape(c1 - c0, IMPACT_LEVELS)[:, ::-1], axis=1)[:, ::-1]
    return imp_docs, imp_tf, ladder


class PostingsSegment:
    """Postings and rows of documents 0..n-1 of one segment (term ids are the collection's)."""

    def __init__(self, arrays: dict[str, np.ndarray]):
        for name in _ARRAYS + _IMPACT_ARRAYS:
            setattr(self, name, arrays.get(name))
        self.has_impacts = self.imp_ladder is not None
        self.n_docs = len(self.doc_len)
        # row offsets in the term ids' type, as scipy's row-gather kernel wants them
        self._row_ptr = (self.row_ptr.astype(np.int32) if int(self.row_ptr[-1]) < 2**31 - 1
                         else np.asarray(self.row_ptr, np.int64))
        self.n_terms = len(self.col_ptr) - 1
        self.total_len = int(self.doc_len.astype(np.int64).sum())

    @classmethod
    def build(cls, row_ptr: np.ndarray, row_terms: np.ndarray, row_tf: np.ndarray, doc_len: np.ndarray,
              n_terms: int, k1: float = 1.5, b: float = 0.75, impacts: bool = False) -> "PostingsSegment":
        """From per-document sorted unique term ids and counts (CSR, as `_csr_from_tokens` gives);
        with `impacts` also the impact-ordered lists (BM25 parameters k1, b)."""
        import scipy.sparse as sp

        n = len(row_ptr) - 1
        tf = np.minimum(np.asarray(row_tf), TF_MAX).astype(np.uint8)
        terms = np.asarray(row_terms, dtype=np.int32)
        row_ptr = np.asarray(row_ptr, dtype=np.int64)
        csr = sp.csr_matrix((tf, np.asarray(row_terms, np.int32), row_ptr), shape=(n, n_terms), copy=False)
        csc = csr.tocsc()
        del csr
        csc.sort_indices()
        col_ptr = csc.indptr.astype(np.int64)
        docs = csc.indices.astype(np.int32, copy=False)
        col_tf = csc.data.astype(np.uint8, copy=False)
        del csc
        first, off, width, stream = _encode_gaps(docs, col_ptr)
        lens = np.minimum(np.asarray(doc_len), LEN_MAX).astype(np.uint16)
        nonempty = np.flatnonzero(np.diff(col_ptr) > 0)
        tfmax = np.zeros(n_terms, np.uint8)
        dlmin = np.full(n_terms, LEN_MAX, np.uint16)
        if len(nonempty):
            tfmax[nonempty] = np.maximum.reduceat(col_tf, col_ptr[nonempty])
            dlmin[nonempty] = np.minimum.reduceat(lens[docs], col_ptr[nonempty])
        arrays = dict(doc_len=lens, row_ptr=row_ptr, row_terms=terms, row_tf=tf, col_ptr=col_ptr,
                      col_first=first, col_off=off, col_width=width, col_bytes=stream, col_tf=col_tf,
                      col_tfmax=tfmax, col_dlmin=dlmin)
        if impacts:
            arrays["imp_docs"], arrays["imp_tf"], arrays["imp_ladder"] = impact_order(col_ptr, docs, col_tf, lens,
                                                                                      k1, b)
        return cls(arrays)

    def with_impacts(self, k1: float = 1.5, b: float = 0.75) -> "PostingsSegment":
        """This segment with its impact-ordered lists (for a segment written without them)."""
        import scipy.sparse as sp

        csr = sp.csr_matrix((self.row_tf, self.row_terms, self.row_ptr), shape=(self.n_docs, self.n_terms))
        csc = csr.tocsc()
        del csr
        csc.sort_indices()
        arrays = {name: getattr(self, name) for name in _ARRAYS}
        arrays["imp_docs"], arrays["imp_tf"], arrays["imp_ladder"] = impact_order(
            csc.indptr.astype(np.int64), csc.indices.astype(np.int32, copy=False), csc.data, self.doc_len, k1, b)
        return PostingsSegment(arrays)

    # ---------------------------------------------------------------- reading
    def df(self, terms: np.ndarray) -> np.ndarray:
        """Documents per term (0 for terms newer than the segment)."""
        terms = np.asarray(terms, dtype=np.int64)
        ok = terms < self.n_terms
        out = np.zeros(len(terms), np.int64)
        t = terms[ok]
        out[ok] = self.col_ptr[t + 1] - self.col_ptr[t]
        return out

    def postings(self, term: int) -> tuple[np.ndarray, np.ndarray]:
        """(document ids, counts) of one term, ascending ids."""
        ids, tf, _ = self.postings_of([term])
        return ids, tf

    def postings_of(self, terms: Sequence[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(document ids, counts, postings per term) of several terms' lists one after the other,
        as `postings` gives each: decoded into one array (a query's lists are read together, and
        one buffer saves an allocation per list and the copy that joining them costs)."""
        terms = np.asarray(terms, dtype=np.int64)
        known = terms < self.n_terms            # terms newer than the segment have no postings here
        t = np.where(known, terms, 0) if self.n_terms else np.zeros(0, np.int64)
        lens = np.where(known, self.col_ptr[t + 1] - self.col_ptr[t], 0).astype(np.int64) if self.n_terms \
            else np.zeros(len(terms), np.int64)
        ids = np.empty(int(lens.sum()), np.int64)
        tf = np.empty(len(ids), np.uint8)
        at = 0
        # the lists' bounds read in one gather each, not one NumPy scalar at a time
        for n, s, w, o, first in zip(lens.tolist(), self.col_ptr[t].tolist(), self.col_width[t].tolist(),
                                     self.col_off[t].tolist(), self.col_first[t].tolist()):
            if not n:
                continue
            ids[at] = first
            np.cumsum(self.col_bytes[o:o + (n - 1) * w].view(_GAP_TYPES[w]), out=ids[at + 1:at + n], dtype=np.int64)
            ids[at + 1:at + n] += first
            tf[at:at + n] = self.col_tf[s:s + n]
            at += n
        return ids, tf, lens

    def impact_heads(self, terms: np.ndarray, depths: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(document ids, counts, position in `terms`) of the first `depths` postings of each term
        in impact order (terms newer than the segment have none)."""
        terms = np.asarray(terms, dtype=np.int64)
        ok = terms < self.n_terms
        starts = np.zeros(len(terms), np.int64)
        lens = np.zeros(len(terms), np.int64)
        starts[ok] = self.col_ptr[terms[ok]]
        lens[ok] = np.minimum(np.asarray(depths, np.int64)[ok], self.col_ptr[terms[ok] + 1] - starts[ok])
        total = int(lens.sum())
        owner = np.repeat(np.arange(len(terms)), lens)
        offs = np.zeros(len(terms), np.int64)
        np.cumsum(lens[:-1], out=offs[1:])
        pos = np.arange(total, dtype=np.int64) + (starts - offs)[owner]
        return self.imp_docs[pos].astype(np.int64), self.imp_tf[pos], owner

    def ladders(self, terms: np.ndarray) -> np.ndarray:
        """The impact ladders of terms (zeros for terms newer than the segment)."""
        terms = np.asarray(terms, dtype=np.int64)
        out = np.zeros((len(terms), IMPACT_LEVELS), np.int64)
        ok = terms < self.n_terms
        out[ok] = self.imp_ladder[terms[ok]]
        return out

    def rows(self, docs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(indptr, term ids, counts) of the chosen documents' rows, in their order (scipy's C++
        row gather, called directly: its indexing wrapper costs more than the gather)."""
        docs = np.asarray(docs, dtype=np.int64)
        ptr = self._row_ptr
        indptr = np.zeros(len(docs) + 1, np.int64)
        np.cumsum(ptr[docs + 1] - ptr[docs], out=indptr[1:])
        total = int(indptr[-1])
        terms = np.empty(total, np.int32)
        tf = np.empty(total, np.uint8)
        if total:
            if _csr_row_index is not None and ptr.dtype == np.int32:
                _csr_row_index(len(docs), docs.astype(np.int32), ptr, self.row_terms, self.row_tf, terms, tf)
            else:  # pragma: no cover - offsets beyond 2**31 or no kernel
                owner = np.repeat(np.arange(len(docs)), np.diff(indptr))
                pos = np.arange(total, dtype=np.int64) + (ptr[docs] - indptr[:-1])[owner]
                terms, tf = self.row_terms[pos], self.row_tf[pos]
        return indptr, terms, tf

    def row(self, doc: int) -> tuple[np.ndarray, np.ndarray]:
        s, e = int(self.row_ptr[doc]), int(self.row_ptr[doc + 1])
        return self.row_terms[s:e].astype(np.int64), self.row_tf[s:e]

    def df_all(self, n_terms: int) -> np.ndarray:
        """Documents per term for the first n_terms term ids."""
        out = np.zeros(n_terms, np.int64)
        m = min(n_terms, self.n_terms)
        out[:m] = np.diff(self.col_ptr)[:m]
        return out

    def nbytes(self) -> int:
        return int(sum(getattr(self, name).nbytes for name in _ARRAYS + _IMPACT_ARRAYS
                       if getattr(self, name) is not None))

    # ------------------------------------------------------------ persistence
    def save(self, d: str | Path) -> None:
        d = Path(d)
        d.mkdir(parents=True, exist_ok=True)
        for name in _ARRAYS + _IMPACT_ARRAYS:
            if getattr(self, name) is not None:
                np.save(d / f"{name}.npy", getattr(self, name), allow_pickle=False)
        (d / "meta.json").write_text(json.dumps({"n_docs": self.n_docs, "n_terms": self.n_terms, "format": 1}))

    @classmethod
    def load(cls, d: str | Path, mmap: bool = True) -> "PostingsSegment":
        d = Path(d)
        # plain ndarray views of the maps: slicing an np.memmap costs microseconds of Python each
        mode = "r" if mmap else None
        return cls({name: np.load(d / f"{name}.npy", mmap_mode=mode, allow_pickle=False).view(np.ndarray)
                    for name in _ARRAYS + _IMPACT_ARRAYS if name in _ARRAYS or (d / f"{name}.npy").exists()})
