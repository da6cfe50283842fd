"""Compiled loops of the lexical first stage: one pass over a segment's postings that decodes the
gap-coded lists, weighs each posting by BM25 and adds it into a dense per-document accumulator,
and the exact re-scoring of chosen documents' rows.

Why compiled: at 10M figures the first stage of related figures reads 400,000 postings a query;
in NumPy the pass is several whole-array steps (decode, weigh, sort by document, sum runs) and was
about 60% of the first stage's CPU time, at NumPy's floor (docs/scaling.md). A loop that adds each
posting where its document's sum is kept reads every posting once.

The numbers are those of the NumPy computation they replace, to the bit: each weight is computed
with the same operations in the same precision, and a document's weights (float32 on the common
path) are summed in float64, where the sum of a few dozen float32 numbers within a few powers of
ten of each other is exact, so the order of the additions does not change it
(tests/test_search_segments.py compares them with a plain computation).

Compilation: numba compiles each function once per process, on first use, and keeps the machine
code in its cache (next to this file, or in NUMBA_CACHE_DIR / the user's cache directory when this
directory is read-only), so a new process loads it in milliseconds; `warm_up` compiles or loads
them before the first query. The loops release the GIL, so the segments of one query run side by
side on the query's threads (app.search.query_threads).
"""
from __future__ import annotations

import threading

import numba
import numpy as np

_jit = numba.njit(cache=True, nogil=True, boundscheck=False)
# The loops are written out whole: with their steps as separate compiled functions (even inlined
# by numba) a posting took 35-40 ns instead of about 5.


@_jit
def _collect(n_touched, acc, seen, seen_words, touched, deleted, docs_out, sums_out):
    """The touched documents in ascending order with their sums, deleted ones left out, and the
    scratch arrays cleared for the next call; returns how many were written. Ascending order
    comes from a sort of the touched documents when they are few, else from a scan of the marks
    eight at a time (`seen_words`: the same bytes as 64-bit words), cheaper than sorting tens of
    thousands of documents."""
    n_docs = len(acc)
    n = 0
    if n_touched * 256 < n_docs:
        order = np.sort(touched[:n_touched])
        for i in range(n_touched):
            d = order[i]
            if not deleted[d]:
                docs_out[n] = d
                sums_out[n] = acc[d]
                n += 1
            seen[d] = 0
            acc[d] = 0.0
        return n
    for w in range((n_docs + 7) // 8):
        if seen_words[w] != 0:
            for d in range(w * 8, min(w * 8 + 8, n_docs)):
                if seen[d] != 0:
                    if not deleted[d]:
                        docs_out[n] = d
                        sums_out[n] = acc[d]
                        n += 1
                    acc[d] = 0.0
            seen_words[w] = 0
    return n


@_jit
def _sum_lists(col_ptr, col_first, col_off, col_width, col_bytes, col_tf, terms, qw64, qw32, k1p,
               wide, norms64, norms32, deleted, acc, seen, seen_words, touched, docs_out, sums_out):
    n_terms = len(col_ptr) - 1
    k1p32 = np.float32(k1p)
    n_touched = 0
    for j in range(len(terms)):
        t = terms[j]
        if t >= n_terms:
            continue
        s = col_ptr[t]
        n = col_ptr[t + 1] - s
        wq64 = qw64[j] * k1p
        wq32 = qw32[j] * k1p32
        width = np.int64(col_width[t])
        at = col_off[t]
        d = np.int64(col_first[t])
        for g in range(n):
            if g > 0:   # the next id: the first plus the little-endian gaps of 1, 2 or 4 bytes
                if width == 1:
                    d += np.int64(col_bytes[at])
                elif width == 2:
                    d += np.int64(col_bytes[at]) | (np.int64(col_bytes[at + 1]) << 8)
                else:
                    d += (np.int64(col_bytes[at]) | (np.int64(col_bytes[at + 1]) << 8)
                          | (np.int64(col_bytes[at + 2]) << 16) | (np.int64(col_bytes[at + 3]) << 24))
                at += width
            if wide:
                t64 = np.float64(col_tf[s + g])
                x = wq64 * t64 / (t64 + norms64[d])
            else:
                t32 = np.float32(col_tf[s + g])
                x = np.float64(wq32 * t32 / (t32 + norms32[d]))
            if seen[d] == 0:
                seen[d] = 1
                touched[n_touched] = d
                n_touched += 1
            acc[d] += x
    return _collect(n_touched, acc, seen, seen_words, touched, deleted, docs_out, sums_out)


@_jit
def _sum_postings(ids, tf, owner, qw32, k1p, norms32, deleted, acc, seen, seen_words, touched, docs_out, sums_out):
    k1p32 = np.float32(k1p)
    n_touched = 0
    for p in range(len(ids)):
        d = ids[p]
        t32 = np.float32(tf[p])
        x = np.float64(qw32[owner[p]] * k1p32 * t32 / (t32 + norms32[d]))
        if seen[d] == 0:
            seen[d] = 1
            touched[n_touched] = d
            n_touched += 1
        acc[d] += x
    return _collect(n_touched, acc, seen, seen_words, touched, deleted, docs_out, sums_out)


@_jit
def _score_rows(row_ptr, row_terms, row_tf, docs, weighted, qdense, k1p, norms64, out):
    """Exact BM25 of each chosen document: its row's weighed terms added in row order (`weighted`,
    one byte per term, finds them: a table that stays in cache, unlike the float64 weights)."""
    for i in range(len(docs)):
        d = docs[i]
        s = 0.0
        for p in range(row_ptr[d], row_ptr[d + 1]):
            if weighted[row_terms[p]]:
                t = np.float64(row_tf[p])
                s += qdense[row_terms[p]] * k1p * t / (t + norms64[d])
        out[i] = s


class _Scratch(threading.local):
    """Per-thread accumulator and marks, as large as the largest segment seen; kept zero between
    calls. The marks are allocated as 64-bit words so that the collection can skip eight at a time."""

    def __init__(self):
        self.acc = np.zeros(0, np.float64)
        self.seen_words = np.zeros(0, np.uint64)
        self.touched = np.zeros(0, np.int64)

    def sized(self, n_docs: int):
        if len(self.acc) < n_docs:
            self.acc = np.zeros(n_docs, np.float64)
            self.seen_words = np.zeros((n_docs + 7) // 8, np.uint64)
            self.touched = np.zeros(n_docs, np.int64)
        words = self.seen_words[:(n_docs + 7) // 8]
        return self.acc[:n_docs], words.view(np.uint8)[:n_docs], words, self.touched


_scratch = _Scratch()


def _readonly(a: np.ndarray, dtype) -> np.ndarray:
    """A read-only view (a copy only if the type differs): memory-mapped and in-memory segments
    then share one compiled variant of each loop."""
    a = np.ascontiguousarray(a, dtype=dtype)
    if a.flags.writeable:
        a = a.view()
        a.flags.writeable = False
    return a


def _weights(qw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    qw = np.asarray(qw, np.float64)
    return qw, qw.astype(np.float32)


def sum_lists(seg, terms: np.ndarray, qw: np.ndarray, k1p: float, wide: bool, norms64: np.ndarray,
              norms32: np.ndarray, deleted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(local documents ascending, summed weights) of the whole lists of `terms` in segment `seg`
    (a PostingsSegment), each posting weighed qw * k1p * tf / (tf + norm): in float64 if `wide`,
    else in float32 (then summed in float64); documents marked in `deleted` (the segment's slice
    of the tombstones) left out."""
    acc, seen, seen_words, touched = _scratch.sized(seg.n_docs)
    terms = np.asarray(terms, np.int64)
    n_max = int(np.asarray(seg.df(terms)).sum())
    docs_out = np.empty(n_max, np.int64)
    sums_out = np.empty(n_max, np.float64)
    qw64, qw32 = _weights(qw)
    n = _sum_lists(_readonly(seg.col_ptr, np.int64), _readonly(seg.col_first, np.int32),
                   _readonly(seg.col_off, np.int64), _readonly(seg.col_width, np.uint8),
                   _readonly(seg.col_bytes, np.uint8), _readonly(seg.col_tf, np.uint8), terms, qw64, qw32,
                   float(k1p), bool(wide), _readonly(norms64, np.float64), _readonly(norms32, np.float32),
                   _readonly(deleted, np.bool_), acc, seen, seen_words, touched, docs_out, sums_out)
    return docs_out[:n], sums_out[:n]


def sum_postings(n_docs: int, ids: np.ndarray, tf: np.ndarray, owner: np.ndarray, qw: np.ndarray, k1p: float,
                 norms32: np.ndarray, deleted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """As `sum_lists` (float32 weights) for postings already read: local ids, counts and each
    posting's position in `qw`."""
    acc, seen, seen_words, touched = _scratch.sized(n_docs)
    docs_out = np.empty(len(ids), np.int64)
    sums_out = np.empty(len(ids), np.float64)
    _, qw32 = _weights(qw)
    n = _sum_postings(_readonly(ids, np.int64), _readonly(tf, np.uint8), _readonly(owner, np.int64), qw32,
                      float(k1p), _readonly(norms32, np.float32), _readonly(deleted, np.bool_), acc, seen, seen_words,
                      touched, docs_out, sums_out)
    return docs_out[:n], sums_out[:n]


def score_rows(seg, local: np.ndarray, weighted: np.ndarray, qdense: np.ndarray, k1p: float,
               norms64: np.ndarray) -> np.ndarray:
    """Exact BM25 of segment `seg`'s documents `local` for the dense query weights `qdense`
    (`weighted`: qdense != 0)."""
    out = np.zeros(len(local))
    _score_rows(_readonly(seg.row_ptr, np.int64), _readonly(seg.row_terms, np.int32),
                _readonly(seg.row_tf, np.uint8), _readonly(local, np.int64), _readonly(weighted, np.bool_),
                _readonly(qdense, np.float64), float(k1p), _readonly(norms64, np.float64), out)
    return out


def warm_up() -> None:
    """Compile (or load from the cache) every loop for the types segments give it, so that a
    serving process does not pay the compilation on its first query."""
    from .postings import PostingsSegment

    seg = PostingsSegment.build(np.array([0, 2, 3]), np.array([0, 1, 1]), np.array([1, 2, 1]), np.array([3, 2]), 2)
    norms = np.ones(seg.n_docs)
    deleted = np.zeros(seg.n_docs, bool)
    for wide in (False, True):
        sum_lists(seg, np.array([0, 1]), np.ones(2), 2.5, wide, norms, norms.astype(np.float32), deleted)
    sum_postings(seg.n_docs, np.array([0, 1]), np.array([1, 1], np.uint8), np.array([0, 0]), np.ones(1), 2.5,
                 norms.astype(np.float32), deleted)
    score_rows(seg, np.array([0, 1]), np.ones(2, bool), np.ones(2), 2.5, norms)
