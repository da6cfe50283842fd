"""Compiled loops of the lexical first stage: the pass over a segment's postings (decode the
gap-coded lists, weigh each posting by BM25, sum the weights per document), the k-th largest of
the summed scores, and the exact re-scoring of chosen documents' rows; and the scores of chosen
documents of a tf.idf index (the paper views that related figures compare).

Why compiled: at 10M figures the first stage of related figures reads 400,000 postings a query; in
NumPy the pass was several whole-array steps (decode, weigh, sort by document, sum runs), 23 ms
of CPU a query at NumPy's floor. Here it reads each posting once and keeps the sums of one block
of 32,768 documents at a time (every list is read up to the block's end), so that the sums, the
marks of the documents touched and the documents' lengths stay in the CPU cache: 6 ms
(docs/scaling.md).

The numbers are those of the NumPy computation they replace, to the bit: each weight is computed
with the same operations in the same precision, and a document's weights (float32 on the common
path) are summed in float64, where the sum of a few dozen float32 numbers within a few powers of
ten of each other is exact, so the order of the additions does not change it
(tests/test_search_segments.py compares them with a plain computation).

Compilation: numba compiles each function once, on first use, and keeps the machine code in its
cache (next to this file, or in NUMBA_CACHE_DIR / the user's cache directory when this directory
is read-only; with no writable cache directory it compiles in every process, about 5 s), so a new
process loads it in well under a second; `warm_up` does that when a lexical index is opened, before
the first query. The loops release the GIL, so the segments of one query run side by side on the
query's threads (app.search.query_threads).
"""
from __future__ import annotations

import functools

import numba
import numpy as np
from llvmlite import ir
from numba.core import cgutils
from numba.extending import intrinsic

from .postings import PostingsSegment

_jit = numba.njit(cache=True, nogil=True, boundscheck=False)
# The loops are written out whole: with their steps as separate compiled functions (even inlined
# by numba) a posting took 35-40 ns instead of about 5.

# Re-scoring reads the rows of thousands of documents scattered over gigabytes: each row's first
# bytes are a cache (and TLB) miss. Announcing the rows a few documents ahead lets those misses
# overlap (README, Measurements: related figures at 10M).
ROWS_AHEAD = 8         # a row's terms and counts are fetched this many documents ahead
OFFSETS_AHEAD = 16     # its offset and length twice as far, so the row's address is known by then


@intrinsic
def _prefetch(typingctx, arr, idx):
    """Hint the CPU to bring arr[idx] into its cache (LLVM's prefetch: read, no temporal
    locality hint, data cache). A hint only: it never faults, whatever idx is within arr."""
    def codegen(context, builder, signature, args):
        arr_type = signature.args[0]
        array = context.make_array(arr_type)(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, arr_type, array, [args[1]], wraparound=False)
        byte_ptr = builder.bitcast(ptr, ir.IntType(8).as_pointer())
        i32 = ir.IntType(32)
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.VoidType(), [byte_ptr.type, i32, i32, i32]),
                                            "llvm.prefetch.p0")
        builder.call(fn, [byte_ptr, i32(0), i32(0), i32(1)])
        return context.get_dummy_value()
    return numba.types.void(arr, idx), codegen


@numba.njit(cache=True, nogil=True, boundscheck=False, inline="always")
def _announce_rows(row_ptr, row_terms, row_tf, per_doc, docs, i):
    """Before scoring docs[i]: prefetch the row of the document ROWS_AHEAD further on, and the
    offset and per-document value (`per_doc`: length or norm) of the one OFFSETS_AHEAD further."""
    n = len(docs)
    if i + OFFSETS_AHEAD < n:
        _prefetch(row_ptr, docs[i + OFFSETS_AHEAD])
        _prefetch(per_doc, docs[i + OFFSETS_AHEAD])
    if i + ROWS_AHEAD < n:
        start = row_ptr[docs[i + ROWS_AHEAD]]
        _prefetch(row_terms, start)
        _prefetch(row_tf, start)


BLOCK = 32_768   # documents summed at a time: their sums, lengths and marks stay in the L2 cache


# the position of a 64-bit word's lowest set bit from its isolated bit times a de Bruijn number
_DE_BRUIJN = np.uint64(0x03F79D71B4CB0A89)
_BIT_OF = np.zeros(64, np.int64)
for _i in range(64):
    _BIT_OF[((1 << _i) * 0x03F79D71B4CB0A89 % 2**64) >> 58] = _i


@_jit
def _collect_block(b0, b1, acc, marks, deleted, docs_out, sums_out, n):
    """Write the block's touched documents b0..b1-1 (ascending, deleted ones left out) with their
    sums from position n on, clearing the block's sums and marks; returns the next position.
    `marks` holds one bit per document of the block, so the scan visits only the touched ones
    (a scan of one byte per document mispredicted a branch per touched document)."""
    bit_of = _BIT_OF
    for w in range((b1 - b0 + 63) // 64):
        word = marks[w]
        while word != 0:
            low = word & (~word + np.uint64(1))
            i = w * 64 + bit_of[(low * _DE_BRUIJN) >> np.uint64(58)]
            docs_out[n] = b0 + i
            sums_out[n] = acc[i]
            n += 1 - np.int64(deleted[b0 + i])
            acc[i] = 0.0
            word ^= low
        marks[w] = 0
    return n


@_jit
def _preread(doc_len, b0, b1):
    """Read one document length per cache line of documents b0..b1-1, in order: a sequential read
    that the hardware prefetches, where the postings' random reads of them missed the cache one at
    a time (the pass over a 10M collection's postings took 11.5 ms a query without, 6.5 with)."""
    total = 0
    for i in range(b0, b1, 32):
        total += doc_len[i]
    return total


@_jit
def _sum_lists(col_ptr, col_first, col_off, col_width, col_bytes, col_tf, terms, qw64, qw32, k1p, wide,
               doc_len, norms64, norms32, deleted, docs_out, sums_out):
    """The lists of `terms`, gap-coded as PostingsSegment stores them, summed per document one block
    of documents at a time: every list is read up to the block's end, where its cursor waits for
    the next block. A document's weights are added in the order of `terms`."""
    n_docs = len(doc_len)
    n_terms = len(col_ptr) - 1
    k1p32 = np.float32(k1p)
    nt = len(terms)
    pos = np.zeros(nt, np.int64)      # cursor of each list: the posting next read, its document, its gap's byte
    doc = np.zeros(nt, np.int64)
    at = np.zeros(nt, np.int64)
    count = np.zeros(nt, np.int64)
    for j in range(nt):
        t = terms[j]
        if t < n_terms:
            count[j] = col_ptr[t + 1] - col_ptr[t]
            if count[j] > 0:
                doc[j] = col_first[t]
                at[j] = col_off[t]
    acc = np.zeros(BLOCK, np.float64)
    marks = np.zeros(BLOCK // 64, np.uint64)
    n = 0
    for b0 in range(0, n_docs, BLOCK):
        b1 = min(b0 + BLOCK, n_docs)
        # adding 0 * the pre-read sum changes no bit and keeps the compiler from dropping the read
        acc[0] += 0.0 * _preread(doc_len, b0, b1)
        for j in range(nt):
            g = pos[j]
            if g >= count[j] or doc[j] >= b1:
                continue
            t = terms[j]
            s = col_ptr[t]
            width = np.int64(col_width[t])
            wq64 = qw64[j] * k1p
            wq32 = qw32[j] * k1p32
            d = doc[j]
            a = at[j]
            while True:
                if wide:
                    t64 = np.float64(col_tf[s + g])
                    x = wq64 * t64 / (t64 + norms64[doc_len[d]])
                else:
                    t32 = np.float32(col_tf[s + g])
                    x = np.float64(wq32 * t32 / (t32 + norms32[doc_len[d]]))
                marks[(d - b0) >> 6] |= np.uint64(1) << np.uint64((d - b0) & 63)
                acc[d - b0] += x
                g += 1
                if g >= count[j]:
                    break
                # the next document: this one plus a little-endian gap of 1, 2 or 4 bytes
                if width == 1:
                    d += np.int64(col_bytes[a])
                elif width == 2:
                    d += np.int64(col_bytes[a]) | (np.int64(col_bytes[a + 1]) << 8)
                else:
                    d += (np.int64(col_bytes[a]) | (np.int64(col_bytes[a + 1]) << 8)
                          | (np.int64(col_bytes[a + 2]) << 16) | (np.int64(col_bytes[a + 3]) << 24))
                a += width
                if d >= b1:
                    break
            pos[j] = g
            doc[j] = d
            at[j] = a
        n = _collect_block(b0, b1, acc, marks, deleted, docs_out, sums_out, n)
    return n


@_jit
def _sum_sorted(ids, tf, starts, qw32, k1p, doc_len, norms32, deleted, docs_out, sums_out):
    """As `_sum_lists` (float32 weights) for lists already read: list j is ids[starts[j]:starts[j+1]]
    (ascending documents), with counts tf."""
    n_docs = len(doc_len)
    k1p32 = np.float32(k1p)
    nt = len(starts) - 1
    pos = starts[:-1].copy()
    acc = np.zeros(BLOCK, np.float64)
    marks = np.zeros(BLOCK // 64, np.uint64)
    n = 0
    for b0 in range(0, n_docs, BLOCK):
        b1 = min(b0 + BLOCK, n_docs)
        acc[0] += 0.0 * _preread(doc_len, b0, b1)
        for j in range(nt):
            wq32 = qw32[j] * k1p32
            p = pos[j]
            while p < starts[j + 1] and ids[p] < b1:
                d = ids[p]
                t32 = np.float32(tf[p])
                marks[(d - b0) >> 6] |= np.uint64(1) << np.uint64((d - b0) & 63)
                acc[d - b0] += np.float64(wq32 * t32 / (t32 + norms32[doc_len[d]]))
                p += 1
            pos[j] = p
        n = _collect_block(b0, b1, acc, marks, deleted, docs_out, sums_out, n)
    return n


@_jit
def _score_rows(row_ptr, row_terms, row_tf, docs, weighted, qdense, k1p, doc_len, norms64, out):
    """Exact BM25 of each chosen document: its row's weighed terms added in row order (`weighted`,
    one byte per term, finds them: a table that stays in cache, unlike the float64 weights). The
    rows of the documents a little further on are announced first (`_announce_rows`)."""
    for i in range(len(docs)):
        _announce_rows(row_ptr, row_terms, row_tf, doc_len, docs, i)
        d = docs[i]
        s = 0.0
        for p in range(row_ptr[d], row_ptr[d + 1]):
            if weighted[row_terms[p]]:
                t = np.float64(row_tf[p])
                s += qdense[row_terms[p]] * k1p * t / (t + norms64[doc_len[d]])
        out[i] = s


@_jit
def _score_rows_tfidf(row_ptr, row_terms, row_tf, docs, weighted, qdense, idf, doc_norm, log_tf, out):
    """tf.idf cosine numerators of each chosen document: every weighed term's float32 weight
    ((1 + ln tf) * idf / the row's norm, as the index stores it), times the query's weight, added
    in row order. The rows further on are announced first, as in `_score_rows`."""
    for i in range(len(docs)):
        _announce_rows(row_ptr, row_terms, row_tf, doc_norm, docs, i)
        d = docs[i]
        norm = doc_norm[d]
        if not norm > 0:
            norm = 1.0
        s = 0.0
        for p in range(row_ptr[d], row_ptr[d + 1]):
            t = row_terms[p]
            if weighted[t]:
                w = np.float32(log_tf[row_tf[p]] * idf[t] / norm)
                s += np.float64(w) * qdense[t]
        out[i] = s


@_jit
def _kth_largest(scores, k):
    """The k-th largest of `scores` (1 <= k <= len): a histogram of 4,096 buckets between the
    smallest and the largest finds the bucket that holds it, then only that bucket is sorted (two
    passes over the scores, where a selection moved them around several times)."""
    lo = scores.min()
    hi = scores.max()
    if lo == hi:
        return hi
    n_buckets = 4096
    scale = n_buckets / (hi - lo)
    counts = np.zeros(n_buckets + 1, np.int64)
    for x in scores:
        counts[np.int64((x - lo) * scale)] += 1
    above = 0
    b = n_buckets
    while above + counts[b] < k:
        above += counts[b]
        b -= 1
    inside = np.empty(counts[b], scores.dtype)
    m = 0
    for x in scores:
        if np.int64((x - lo) * scale) == b:
            inside[m] = x
            m += 1
    inside.sort()
    return inside[m - (k - above)]


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
    (a PostingsSegment), each posting weighed qw * k1p * tf / (tf + norm), norm = norms[document
    length] (the index's tables): in float64 if `wide`, else in float32 (then summed in float64);
    documents marked in `deleted` (the segment's slice of the tombstones) left out."""
    terms = np.asarray(terms, np.int64)
    n_max = int(np.asarray(seg.df(terms)).sum())
    docs_out = np.empty(n_max, np.int64)
    sums_out = np.empty(n_max, np.float64)
    qw64, qw32 = _weights(qw)
    n = _sum_lists(_readonly(seg.col_ptr, np.int64), _readonly(seg.col_first, np.int32),
                   _readonly(seg.col_off, np.int64), _readonly(seg.col_width, np.uint8),
                   _readonly(seg.col_bytes, np.uint8), _readonly(seg.col_tf, np.uint8), terms, qw64, qw32,
                   float(k1p), bool(wide), _readonly(seg.doc_len, np.uint16), _readonly(norms64, np.float64),
                   _readonly(norms32, np.float32), _readonly(deleted, np.bool_), docs_out, sums_out)
    return docs_out[:n], sums_out[:n]


def sum_postings(ids: np.ndarray, tf: np.ndarray, owner: np.ndarray, qw: np.ndarray, k1p: float,
                 doc_len: np.ndarray, norms32: np.ndarray, deleted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """As `sum_lists` (float32 weights) for postings already read in any order: local ids, counts
    and each posting's position in `qw`, the segment's document lengths."""
    order = np.lexsort((ids, owner))
    starts = np.searchsorted(owner[order], np.arange(len(qw) + 1))
    docs_out = np.empty(len(ids), np.int64)
    sums_out = np.empty(len(ids), np.float64)
    _, qw32 = _weights(qw)
    n = _sum_sorted(_readonly(ids[order], np.int64), _readonly(tf[order], np.uint8), _readonly(starts, np.int64),
                    qw32, float(k1p), _readonly(doc_len, np.uint16), _readonly(norms32, np.float32),
                    _readonly(deleted, np.bool_), docs_out, sums_out)
    return docs_out[:n], sums_out[:n]


def score_rows(seg, local: np.ndarray, weighted: np.ndarray, qdense: np.ndarray, k1p: float,
               norms64: np.ndarray) -> np.ndarray:
    """Exact BM25 of segment `seg`'s documents `local` for the dense query weights `qdense`
    (`weighted`: qdense != 0; `norms64`: the norm of each document length)."""
    out = np.zeros(len(local))
    _score_rows(_readonly(seg.row_ptr, np.int64), _readonly(seg.row_terms, np.int32),
                _readonly(seg.row_tf, np.uint8), _readonly(local, np.int64), _readonly(weighted, np.bool_),
                _readonly(qdense, np.float64), float(k1p), _readonly(seg.doc_len, np.uint16),
                _readonly(norms64, np.float64), out)
    return out


@functools.cache
def _one_plus_log_tf() -> np.ndarray:
    """1 + ln(tf) for every stored count (uint16), by NumPy's log: the very numbers the index's
    weights were computed with (ln 0 = -inf is never read: stored counts are >= 1)."""
    with np.errstate(divide="ignore"):
        return 1.0 + np.log(np.arange(1 << 16, dtype=np.float64))


def score_rows_tfidf(row_ptr: np.ndarray, row_terms: np.ndarray, row_tf: np.ndarray, docs: np.ndarray,
                     weighted: np.ndarray, qdense: np.ndarray, idf: np.ndarray, doc_norm: np.ndarray) -> np.ndarray:
    """Scores of the documents `docs` of a tf.idf index (CSR rows; uint16 counts) for the dense query
    weights `qdense` (`weighted`: qdense != 0)."""
    out = np.zeros(len(docs))
    log_tf = _one_plus_log_tf()
    _score_rows_tfidf(_readonly(row_ptr, np.int64), _readonly(row_terms, np.int32), _readonly(row_tf, np.uint16),
                      _readonly(docs, np.int64), _readonly(weighted, np.bool_), _readonly(qdense, np.float64),
                      _readonly(idf, np.float64), _readonly(doc_norm, np.float64), log_tf, out)
    return out


def kth_largest(scores: np.ndarray, k: int) -> float:
    """The k-th largest of `scores` (1 <= k <= len(scores)), as a float."""
    if not 1 <= k <= len(scores):
        raise ValueError(f"k={k} outside 1..{len(scores)}")
    return float(_kth_largest(_readonly(scores, np.float64), int(k)))


@functools.cache
def warm_up() -> None:
    """Compile (or load from the cache) every loop for the types segments give it, so that a
    serving process does not pay the compilation on its first query; once per process."""
    seg = PostingsSegment.build(np.array([0, 2, 3]), np.array([0, 1, 1]), np.array([1, 2, 1]), np.array([3, 2]), 2)
    norms = np.ones(int(seg.doc_len.max()) + 1)
    deleted = np.zeros(seg.n_docs, bool)
    for wide in (False, True):
        sum_lists(seg, np.array([0, 1]), np.ones(2), 2.5, wide, norms, norms.astype(np.float32), deleted)
    sum_postings(np.array([0, 1]), np.array([1, 1], np.uint8), np.array([0, 0]), np.ones(1), 2.5, seg.doc_len,
                 norms.astype(np.float32), deleted)
    score_rows(seg, np.array([0, 1]), np.ones(2, bool), np.ones(2), 2.5, norms)
    score_rows_tfidf(seg.row_ptr, seg.row_terms, seg.row_tf.astype(np.uint16), np.array([0, 1]), np.ones(2, bool),
                     np.ones(2), np.ones(2), np.ones(2))
    kth_largest(np.array([1.0, 2.0]), 1)
