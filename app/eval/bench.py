"""Scale benchmark of the retrieval core on a synthetic collection (no PDFs, no model).

Why synthetic: it lets us check latency/memory at 1M figures on a laptop-class machine in minutes.
The collection imitates analysed figure texts: a caption of 10-40 tokens followed by mention
contexts, 60-200 tokens in all; tokens drawn from a Zipfian general vocabulary (80k words), from
topic-specific "domain" words (4k words in 300 overlapping topics) and from a few paper-specific
words, so figures of one paper really are more similar to each other (as in real collections).
Embeddings are random unit vectors around a per-topic centre: they exercise the vector index and the
re-ranker, not semantic quality. Encoding 1M texts with MiniLM is a separate throughput number
(see app.search.encoder) and is NOT part of this benchmark; `search` uses a fake query encoder here
(a random unit vector), so the MiniLM query-encoding time is also excluded (measure it separately).

Latencies are warm, one query at a time, in-process (no HTTP), k=10, 100 candidates.

first_stage_speedup_vs_rank_bm25 := (rank_bm25.BM25Okapi.get_scores time per query on an
`oracle_docs` subsample) / (our first-stage time per query on the FULL n_figures index), both for
"more like this" queries (a figure's whole text, target excluded, top-100), our side with the
engine's first-stage settings (Searcher.first_stage_budget: exact below 120k postings, otherwise
the 32 best terms within that budget + exact rescoring of 2000 candidates; past a million
documents postings x10/3 and re-scored candidates x5 per tenfold growth; its
recall of the exact top-100 is reported as
first_stage_recall_at_100_vs_exact, and the exact path's latency as first_stage_exact_p50_ms).
rank_bm25 cannot hold
1M documents in reasonable time/memory, hence the subsample; the like-for-like ratio on the same
subsample is reported too (`first_stage_speedup_same_docs`), as are the numbers for short queries.
"""
from __future__ import annotations

import gc
import resource
import shutil
import sys
import tempfile
import time
from contextlib import nullcontext
from pathlib import Path

import numpy as np
from scipy.special import zeta

from app.extras import require
from app.search.doc_table import Captions, DocTable
from app.search.papers import PaperIndex, csr_from_tokens, csr_rows, figures_view, strongest_rows_index
from app.search.searcher import QueryVocabulary, Searcher
from app.search.segments import SegmentedIndex
from app.search.text import analyze
from app.search.looks import HASH_BYTES, LookIndex
from app.search.type_index import TypeIndex
from app.search.vectors import VectorIndex, l2_normalize


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def make_vocab(n_words: int, seed: int = 0) -> list[str]:
    """Distinct pseudo-words that `analyze` maps to themselves (so text queries round-trip)."""
    rng = np.random.default_rng(seed)
    letters = np.frombuffer(b"abcdefghijklmnoprstuvwyz", dtype=np.uint8)
    vowels = np.frombuffer(b"aeiou", dtype=np.uint8)
    out: list[str] = []
    seen: set[str] = set()
    while len(out) < n_words:
        m = (n_words - len(out)) * 2 + 1000
        lens = rng.integers(4, 11, size=m)
        cons = letters[rng.integers(0, len(letters), size=(m, 10))]
        vow = vowels[rng.integers(0, len(vowels), size=(m, 10))]
        mat = np.where(np.arange(10)[None, :] % 2 == 1, vow, cons)  # consonant-vowel pattern
        raw = mat.tobytes()
        for i in range(m):
            w = raw[i * 10:i * 10 + int(lens[i])].decode()
            if w in seen:
                continue
            a = analyze(w)
            if a == [w]:
                seen.add(w)
                out.append(w)
                if len(out) == n_words:
                    break
    return out


CHUNK = 100_000  # documents generated at a time; chunk c draws from its own random stream


def synthetic_collection(n: int, seed: int = 0, n_general: int = 80_000, n_domain: int = 4_000,
                         n_topics: int = 300, topic_size: int = 80, figs_per_paper: int = 8,
                         vocab: list[str] | None = None, tokens: bool = True) -> dict:
    """n synthetic figure texts (see module docstring): per-document metadata, and (with `tokens`)
    the whole token-id stream; `collection_tokens` gives any range of it on demand, so a large
    collection never has to be held in memory."""
    rng = np.random.default_rng(seed)
    V = n_general + n_domain
    if vocab is None:
        vocab = make_vocab(V, seed)
    ranks = np.arange(1, n_general + 1, dtype=np.float64)
    p = 1.0 / (ranks + 2.7) ** 1.0                         # Zipf-Mandelbrot
    cdf = np.cumsum(p / p.sum())
    cdf[-1] = 1.0
    topic_words = np.stack([rng.choice(n_domain, topic_size, replace=False)
                            for _ in range(n_topics)]) + n_general
    tp = 1.0 / np.arange(1, topic_size + 1) ** 0.8
    tcdf = np.cumsum(tp / tp.sum())
    tcdf[-1] = 1.0
    n_papers = max(1, n // figs_per_paper)
    paper_topic = rng.integers(0, n_topics, size=n_papers)
    paper_words = rng.integers(2_000, n_general, size=(n_papers, 8))
    paper_ids = np.sort(rng.integers(0, n_papers, size=n))
    cap_len = rng.integers(10, 41, size=n)
    total = np.clip(np.rint(rng.lognormal(np.log(100.0), 0.35, size=n)), 60, 200).astype(np.int64)
    total = np.maximum(total, cap_len + 20)
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(total, out=indptr[1:])
    col = dict(indptr=indptr, vocab=vocab, cap_len=cap_len, paper_ids=paper_ids,
               topic=paper_topic[paper_ids], n_topics=n_topics, seed=seed, cdf=cdf, tcdf=tcdf,
               topic_words=topic_words, paper_topic=paper_topic, paper_words=paper_words)
    if tokens:
        col["tokens"] = collection_tokens(col, 0, n)
    return col


def collection_tokens(col: dict, start: int, stop: int) -> np.ndarray:
    """Token ids of documents [start, stop) (tokens[indptr[start]:indptr[stop]] of the whole stream)."""
    if "tokens" in col:
        return col["tokens"][col["indptr"][start]:col["indptr"][stop]]
    indptr = col["indptr"]
    first, last = start // CHUNK, (stop - 1) // CHUNK if stop > start else start // CHUNK - 1
    parts = []
    for c in range(first, last + 1):
        s, e = c * CHUNK, min(len(indptr) - 1, (c + 1) * CHUNK)
        chunk = _chunk_tokens(col, c, s, e)
        lo = int(indptr[max(s, start)] - indptr[s])
        hi = int(indptr[min(e, stop)] - indptr[s])
        parts.append(chunk[lo:hi])
    return np.concatenate(parts) if parts else np.zeros(0, np.int32)


def _chunk_tokens(col: dict, c: int, s: int, e: int) -> np.ndarray:
    rng = np.random.default_rng([col["seed"], 7, c])
    indptr, paper_ids = col["indptr"], col["paper_ids"]
    m = int(indptr[e] - indptr[s])
    doc = np.repeat(np.arange(s, e), np.diff(indptr[s:e + 1]))
    u = rng.random(m)
    out = np.searchsorted(col["cdf"], rng.random(m)).astype(np.int32)          # general words
    is_topic = (u >= 0.55) & (u < 0.85)
    t_idx = np.searchsorted(col["tcdf"], rng.random(int(is_topic.sum())))
    out[is_topic] = col["topic_words"][col["paper_topic"][paper_ids[doc[is_topic]]], t_idx]
    is_paper = u >= 0.85
    out[is_paper] = col["paper_words"][paper_ids[doc[is_paper]], rng.integers(0, 8, int(is_paper.sum()))]
    return out


VISUAL_DIM = 128  # picture vectors: the backbone's features on their first principal components (app/vision/pictures.py)
PAPER_TERMS = 100
BODY_TERMS = 300  # body terms stored per paper at ingest (app.search.text.top_term_counts)
TYPE_NAMES = ["bar_chart", "box_plot", "diagram", "heatmap", "line_chart", "map", "network_graph", "other",
              "photo", "pie_chart", "scatter_plot", "screenshot", "table", "text"]
# what the API's related-figures call does (app/api/routes/figures.py)
SERVED_SIMILAR = dict(scope="other_papers")


PAPER_BLOCK = 10_000  # papers generated at a time (bounded temporaries at any scale)


def _capped_zipf_cdf(a: float, cap: int) -> np.ndarray:
    """CDF of min(Zipf(a), cap) over 1..cap: sampling it by inverse CDF is what numpy's
    `zipf` draws, capped, in a fraction of the time."""
    k = np.arange(1, cap, dtype=np.float64)
    p = k ** -a
    p /= zeta(a)
    cdf = np.cumsum(p)
    return np.r_[cdf, 1.0]


def synthetic_papers(col: dict, lexical, centres: np.ndarray, rng, dim: int,
                     vector_kind: str = "auto") -> PaperIndex:
    """Paper-level views of a synthetic collection: title + abstract of ~120 tokens (its topic's
    words, general words), all figure texts of the paper (from the figure index), the body's 300
    most frequent terms with their counts (as stored at ingest), a vector near its topic.
    The title + abstract and body rows are generated `PAPER_BLOCK` papers at a time from each
    block's own random stream, when the views' passes read them (`_paper_rows`), so the rows of a
    million papers never exist at once."""
    pids, starts = np.unique(col["paper_ids"], return_index=True)
    topic = col["topic"][starts]
    n_terms = len(col["vocab"])
    n_general = n_terms - 4_000
    n = len(pids)
    tf_cdf = _capped_zipf_cdf(1.6, 500)

    def text_block(s: int, e: int, block_rng):
        lens = block_rng.integers(80, 160, size=e - s)
        owner = np.repeat(np.arange(s, e), lens)
        tokens = block_rng.integers(0, n_general, size=len(owner), dtype=np.int32)
        is_topic = block_rng.random(len(owner)) < 0.4
        tokens[is_topic] = (n_general + (topic[owner[is_topic]] * 13
                                         + block_rng.integers(0, 80, int(is_topic.sum()))) % 4_000)
        return csr_from_tokens(np.r_[0, np.cumsum(lens)], tokens, n_terms)

    def body_block(s: int, e: int, block_rng):
        owner = np.repeat(np.arange(s, e), BODY_TERMS)
        terms = block_rng.integers(0, n_general, size=len(owner), dtype=np.int32)
        on_topic = block_rng.random(len(owner)) < 0.5
        terms[on_topic] = n_general + (topic[owner[on_topic]] * 13
                                       + block_rng.integers(0, 80, int(on_topic.sum()))) % 4_000
        tf = (1 + np.searchsorted(tf_cdf, block_rng.random(len(owner)))).astype(np.uint16)
        return np.arange(e - s + 1, dtype=np.int64) * BODY_TERMS, terms, tf

    pv = np.empty((n, dim), np.float16)   # stored as float16 rows anyway
    for s in range(0, n, PAPER_BLOCK):
        e = min(n, s + PAPER_BLOCK)
        pv[s:e] = centres[topic[s:e]] + rng.standard_normal((e - s, dim), dtype=np.float32) * np.float32(
            1.2 / np.sqrt(dim))
    every, one_each = np.arange(n), np.arange(n + 1)
    text = strongest_rows_index(_paper_rows(n, text_block, [col["seed"], 17]), col["vocab"], every, one_each,
                                PAPER_TERMS)
    body = strongest_rows_index(_paper_rows(n, body_block, [col["seed"], 19]), col["vocab"], every, one_each,
                                PAPER_TERMS)
    figures = figures_view(_SegmentByPass(lexical) if getattr(lexical, "path", None) else lexical, col["paper_ids"],
                           pids, PAPER_TERMS)
    return PaperIndex.from_parts(pids, pv, text, figures, vector_kind, body)


class _SegmentByPass:
    """The rows of a saved SegmentedIndex for a pass that reads them in order (the papers' figure
    views): the index is opened again whenever the pass enters another segment, so the mapped
    pages read so far are unmapped and leave the resident set, where clean file pages count until
    then (all the by-document rows: about 4 GB at ten million figures)."""

    def __init__(self, lexical: SegmentedIndex):
        self.vocab, self._path, self._bases = lexical.vocab, lexical.path, lexical.bases
        self._index, self._segment = None, -1

    def rows(self, docs: np.ndarray):
        docs = np.asarray(docs, dtype=np.int64)
        segment = int(np.searchsorted(self._bases, docs.min(), side="right")) - 1 if len(docs) else self._segment
        if segment != self._segment or self._index is None:
            self._index = None
            self._index, self._segment = SegmentedIndex.open(self._path, mmap=True), segment
        return self._index.rows(docs)


def _paper_rows(n: int, make_block, seed: list[int]):
    """rows(docs) -> (indptr, term ids, counts) of papers whose rows `make_block(start, stop, rng)`
    generates `PAPER_BLOCK` at a time (as a CSR), block b from the random stream seed + [b]: the
    same rows on every read, and only the block last read is kept (the views read in order)."""
    last: dict = {}

    def rows(docs: np.ndarray):
        docs = np.asarray(docs, dtype=np.int64)
        blocks = docs // PAPER_BLOCK
        ptrs, terms, tfs = [np.zeros(1, np.int64)], [], []
        for run in np.split(np.arange(len(docs)), np.flatnonzero(np.diff(blocks)) + 1):
            if not len(run):
                continue
            b = int(blocks[run[0]])
            if last.get("block") != b:
                last.clear()
                s = b * PAPER_BLOCK
                last["block"], last["rows"] = b, csr_rows(*make_block(s, min(n, s + PAPER_BLOCK),
                                                                      np.random.default_rng([*seed, b])))
            ptr, t, c = last["rows"](docs[run] - b * PAPER_BLOCK)
            ptrs.append(ptrs[-1][-1] + ptr[1:])
            terms.append(t)
            tfs.append(c)
        cat = (lambda parts, dt: np.concatenate(parts) if parts else np.zeros(0, dt))
        return np.concatenate(ptrs), cat(terms, np.int32), cat(tfs, np.uint16)
    return rows


def collection_docs(col: dict, start: int = 0, stop: int | None = None) -> list[list[str]]:
    """Docs [start, stop) of a synthetic collection as token-string lists (for rank_bm25/tests)."""
    vocab = np.asarray(col["vocab"], dtype=object)
    ip = col["indptr"]
    stop = len(ip) - 1 if stop is None else stop
    tok = collection_tokens(col, start, stop)
    base = ip[start]
    return [vocab[tok[ip[i] - base:ip[i + 1] - base]].tolist() for i in range(start, stop)]


def _docs_tokens(col: dict, docs) -> dict[int, np.ndarray]:
    """Token ids of chosen documents, generating each chunk of the collection once."""
    ip, out = col["indptr"], {}
    docs = sorted(set(int(d) for d in docs))
    for c in sorted({d // CHUNK for d in docs}):
        s, e = c * CHUNK, min(len(ip) - 1, (c + 1) * CHUNK)
        tok = collection_tokens(col, s, e)
        for d in (d for d in docs if s <= d < e):
            out[d] = tok[ip[d] - ip[s]:ip[d + 1] - ip[s]]
    return out


def _caption_bytes(col: dict, tok: np.ndarray, start: int, stop: int) -> tuple[bytes, np.ndarray]:
    """UTF-8 captions (a figure's first `cap_len` words) of documents [start, stop), and their lengths."""
    vocab = col["vocab"]
    ip, cl = col["indptr"], col["cap_len"]
    base = ip[start]
    caps = [" ".join(vocab[t] for t in tok[ip[i] - base:ip[i] - base + cl[i]].tolist()).encode()
            for i in range(start, stop)]
    return b"".join(caps), np.fromiter((len(c) for c in caps), np.int64, count=len(caps))


def _current_rss_mb(field: str = "VmRSS") -> float:
    """Resident memory now (VmRSS; peak RSS is `_rss_mb`), or one of its parts: RssAnon (the
    process's own memory) and RssFile (pages of mapped files: clean, the kernel can drop them)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return round(int(line.split()[1]) / 1024.0, 1)
    except OSError:  # pragma: no cover - not Linux
        pass
    return float("nan")


def _pct(xs: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(xs) * 1e3, q))


def _queries(col: dict, rng, n: int) -> list[str]:
    vocab, ip = col["vocab"], col["indptr"]
    picked = rng.integers(0, len(ip) - 1, size=n)
    tokens = _docs_tokens(col, picked)
    out = []
    for d in picked.tolist():
        doc = tokens[d]
        m = int(rng.integers(2, 6))
        out.append(" ".join(vocab[int(t)] for t in rng.choice(doc, size=m, replace=False)))
    return out


def _oracle_comparison(col: dict, m: int, oracle_queries: int, queries: int, seed: int) -> dict:
    """The first stage against rank-bm25's BM25Okapi on the first `m` documents: rank-bm25's time
    per query (a document as the query, and short keyword queries), ours on the same documents,
    and the overlap of the two top-100 lists."""
    BM25Okapi = require("rank_bm25", "eval", "the benchmark's BM25 oracle").BM25Okapi

    rng = np.random.default_rng(seed + 2)
    sub_col = {"vocab": col["vocab"], "indptr": col["indptr"][:m + 1], "tokens": collection_tokens(col, 0, m)}
    sub_docs = collection_docs(sub_col)
    t = time.perf_counter()
    bm = BM25Okapi(sub_docs)
    build_s = round(time.perf_counter() - t, 2)
    sub = SegmentedIndex()
    sub.add_documents(sub_docs)
    t_rb, agree = [], []
    for d in rng.integers(0, m, size=oracle_queries).tolist():
        t = time.perf_counter()
        s = bm.get_scores(sub_docs[d])
        t_rb.append(time.perf_counter() - t)
        s[d] = -np.inf
        top = np.argsort(-s, kind="stable")[:100]
        q, qtf = sub.doc_terms(d)
        ours, _ = Searcher.lexical_first_stage(sub, q, qtf, 100, exclude=d)
        agree.append(len(set(top.tolist()) & set(ours.tolist())) / 100)
    t_sub = []
    for d in rng.integers(0, m, size=queries).tolist():
        q, qtf = sub.doc_terms(d)
        t = time.perf_counter()
        Searcher.lexical_first_stage(sub, q, qtf, 100, exclude=d)
        t_sub.append(time.perf_counter() - t)
    t_rb_short = []
    for q in [analyze(q) for q in _queries(col, rng, oracle_queries * 3)]:
        t = time.perf_counter()
        bm.get_scores(q)
        t_rb_short.append(time.perf_counter() - t)
    del bm, sub_docs, sub
    gc.collect()
    return {"docs": m, "rank_bm25_build_s": build_s, "rank_bm25_s": float(np.mean(t_rb)),
            "ours_s": float(np.mean(t_sub)), "rank_bm25_short_s": float(np.mean(t_rb_short)),
            "top100_overlap": float(np.mean(agree))}


def _add_vectors(index: VectorIndex, topic: np.ndarray, centres: np.ndarray, rng, scale: float, start: int,
                 stop: int) -> float:
    """Add vectors of documents [start, stop) near their topic's centre; returns the seconds spent
    indexing (generation excluded)."""
    spent = 0.0
    for s in range(start, stop, CHUNK):
        e = min(stop, s + CHUNK)
        v = rng.standard_normal((e - s, centres.shape[1]), dtype=np.float32) * np.float32(scale)
        v += centres[topic[s:e]]
        t = time.perf_counter()
        index.add(np.arange(s, e), v)
        spent += time.perf_counter() - t
    return spent


def build_lexical(col: dict, root: Path, n_figures: int, segment_docs: int, log=lambda *a: None,
                  captions: bool = True) -> tuple[SegmentedIndex, np.ndarray, float]:
    """The lexical segments (root/lexical) of the first `n_figures` documents, `segment_docs` at a
    time from the token stream generated a segment at a time, and (with `captions`) root/captions.bin.
    Returns the index, the captions' offsets and the seconds spent indexing (generation excluded)."""
    lexical = SegmentedIndex(path=root / "lexical")
    t_lex = 0.0
    cap_offsets = np.zeros(n_figures + 1, np.int64)
    with open(root / "captions.bin", "wb") if captions else nullcontext() as cap_file:
        for s in range(0, n_figures, segment_docs):
            e = min(n_figures, s + segment_docs)
            tok = collection_tokens(col, s, e)
            if captions:
                blob, lens = _caption_bytes(col, tok, s, e)
                cap_file.write(blob)
                np.cumsum(lens, out=cap_offsets[s + 1:e + 1])
                cap_offsets[s + 1:e + 1] += cap_offsets[s]
                del blob
            t = time.perf_counter()
            lexical.add_token_ids(col["indptr"][s:e + 1] - col["indptr"][s], tok, col["vocab"])
            t_lex += time.perf_counter() - t
            del tok
            gc.collect()
            log(f"lexical segment {s}-{e} ({t_lex:.0f}s so far), rss {_rss_mb():.0f} MB")
    return lexical, cap_offsets, t_lex


def _progress_log(verbose: bool):
    """Progress lines go to stderr, so that stdout holds only the results (`--json` parses)."""
    if not verbose:
        return lambda *a: None
    return lambda *a: print("[bench]", *a, file=sys.stderr, flush=True)


def build_lexical_only(n_figures: int, root: str | Path, seed: int = 0, segment_docs: int = 1_000_000,
                       add_figures: int = 10_000, verbose: bool = True) -> dict:
    """Only the lexical segments of the benchmark's collection (the same documents, numbered and
    cut into segments as `run_bench` does), without vectors, paper views or queries: a first stage
    can then be studied at ten million figures in minutes and a few GB."""
    log = _progress_log(verbose)
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    col = synthetic_collection(n_figures + add_figures, seed=seed, tokens=False)
    lexical, _, t_lex = build_lexical(col, root, n_figures, segment_docs, log, captions=False)
    return {"n_figures": n_figures, "lexical_build_s": round(t_lex, 2), "lexical_segments": len(lexical.segments),
            "peak_rss_mb": round(_rss_mb(), 1)}


_SERVE = """
import json, sys, time
import numpy as np
from app.eval.bench import SERVED_SIMILAR, _current_rss_mb, _pct
from app.search.page_cache import warm_version
from app.search.searcher import Searcher
d, targets, texts, dim = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3]), int(sys.argv[4])
s = Searcher.load(d, mmap=True, check=False)
warmed = warm_version(d)  # as the API does after loading a version (FIGSEARCH_WARM_INDEX)
s.encoder = lambda q: np.random.default_rng(abs(hash(q[0])) % 2**32).standard_normal((1, dim)).astype(np.float32)
loaded = _current_rss_mb()
def timed(ask, items):
    out = []
    for x in items:
        t = time.perf_counter()
        ask(x)
        out.append(time.perf_counter() - t)
    return out
warm = targets[:10]  # as the benchmark's own process, ten warm-up queries first
timed(lambda fid: s.similar(fid, k=10, **SERVED_SIMILAR), warm)
timed(lambda q: s.search(q, k=10), texts[:10])
sim = timed(lambda fid: s.similar(fid, k=10, **SERVED_SIMILAR), targets)
txt = timed(lambda q: s.search(q, k=10), texts)
pic = timed(lambda fid: s.by_picture(s.visual.vectors_for([fid])[0], k=10, look=s.looks.hashes[fid]), targets)
print(json.dumps({"served_rss_loaded_mb": loaded, "served_warm_mb": round(warmed.bytes / 2**20, 1),
                  "served_warm_s": round(warmed.seconds, 2), "served_warm_files_left_out": len(warmed.skipped),
                  "served_rss_mb": _current_rss_mb(),
                  "served_rss_anon_mb": _current_rss_mb("RssAnon"), "served_rss_file_mb": _current_rss_mb("RssFile"),
                  "served_queries": len(warm) + len(texts[:10]) + 2 * len(targets) + len(texts),
                  "served_similar_p50_ms": _pct(sim, 50), "served_similar_p99_ms": _pct(sim, 99),
                  "served_search_p50_ms": _pct(txt, 50), "served_search_p99_ms": _pct(txt, 99),
                  "served_by_picture_p50_ms": _pct(pic, 50), "served_by_picture_p99_ms": _pct(pic, 99)}))
"""


def _served_rss(version_dir: Path, targets, texts, dim: int) -> dict:
    """Resident memory and query latency of a fresh process that loads the saved version
    (memory-mapped) and answers related-figure, text and picture queries: what a server sees.
    Called once the benchmark's own process has freed what building left behind."""
    import json
    import subprocess

    out = subprocess.run([sys.executable, "-c", _SERVE, str(version_dir), json.dumps([int(t) for t in targets]),
                          json.dumps(list(texts)), str(dim)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _vector_recall(index: VectorIndex, queries: np.ndarray, exclude: np.ndarray | None, k: int = 100) -> list[float]:
    """Recall@k of the index's top-k against exact search over the same float16 rows (tie-aware:
    a returned row counts if its exact cosine reaches the exact k-th)."""
    store = index._ann.store if index._ann is not None else None
    n = len(index)
    best = np.full((len(queries), k + 1), -np.inf, np.float32)
    for s in range(0, n, 50_000):
        e = min(n, s + 50_000)
        rows = store.read(s, e) if store is not None else index._rows(np.arange(s, e))
        sc = queries @ rows.T
        if exclude is not None:
            m = (exclude >= s) & (exclude < e)
            sc[np.flatnonzero(m), exclude[m] - s] = -np.inf
        best = -np.sort(-np.concatenate([best, np.partition(sc, sc.shape[1] - k - 1, axis=1)[:, -k - 1:]], 1),
                        axis=1)[:, :k + 1]
    out = []
    for i in range(len(queries)):
        ids, _ = index.search(queries[i:i + 1], k + (exclude is not None))
        got = ids[0][ids[0] >= 0]
        if exclude is not None:
            got = got[got != exclude[i]][:k]
        cos = index.vectors_for(got) @ queries[i]
        out.append(min(1.0, float((cos >= best[i, k - 1] - 1e-5).sum()) / k))
    return out


PANELS_PER_FIGURE = 1.0  # hashed panels a figure: the corpus has .7 (a quarter of its figures, 2.9 panels each)


def _looks(looks, panel_looks, panel_rows, panel_letters, n: int) -> LookIndex:
    """The look index of the first `n` rows: their hashes and their panels'."""
    m = int(np.searchsorted(panel_rows, n))
    return LookIndex(looks[:n], np.ones(n, bool), panel_looks[:m], panel_rows[:m], panel_letters[:m])


def run_bench(n_figures: int, dim: int = 384, seed: int = 0, queries: int = 200,
              oracle_docs: int = 20000, oracle_queries: int = 10, vector_kind: str = "auto",
              verbose: bool = True, work_dir: str | Path | None = None, segment_docs: int = 1_000_000,
              add_figures: int = 10_000) -> dict:
    """Build and query an n_figures synthetic engine; returns timings/memory (see module doc).

    The indexes are written under `work_dir` (a temporary directory by default, removed at the
    end) and read back memory-mapped: the lexical index as segments of `segment_docs` figures, the
    vectors' float16 rows behind their compressed codes, captions and paper views. Finally
    `add_figures` new figures are added (a new segment, vectors appended) and timed.
    """
    log = _progress_log(verbose)
    own_dir = work_dir is None
    root = Path(tempfile.mkdtemp(prefix="figsearch-bench-")) if own_dir else Path(work_dir)
    root.mkdir(parents=True, exist_ok=True)
    try:
        res, (targets, texts) = _run(n_figures, dim, seed, queries, oracle_docs, oracle_queries, vector_kind,
                                     log, root, segment_docs, add_figures)
        # A server does not run beside the process that built its index: what building left in this
        # process (the collection, in-memory indexes) is freed first, so that the serving process
        # finds the machine's memory and page cache as a server would.
        gc.collect()
        res["rss_before_serving_mb"] = _current_rss_mb()
        res.update(_served_rss(root / "version", targets, texts, dim))
        log(f"served from disk (this process at {res['rss_before_serving_mb']:.0f} MB; the version's files warmed: "
            f"{res['served_warm_mb']:.0f} MB in {res['served_warm_s']:.1f} s, {res['served_warm_files_left_out']} "
            f"left out): rss {res['served_rss_mb']} MB after {res['served_queries']} queries; similar p50 {res['served_similar_p50_ms']:.2f} ms, "
            f"search p50 {res['served_search_p50_ms']:.2f} ms, by picture p50 {res['served_by_picture_p50_ms']:.2f} ms")
        return _rounded(res)
    finally:
        if own_dir:
            shutil.rmtree(root, ignore_errors=True)


def _run(n_figures, dim, seed, queries, oracle_docs, oracle_queries, vector_kind, log, root: Path,
         segment_docs: int, add_figures: int) -> dict:
    rng = np.random.default_rng(seed + 1)
    res: dict = {"n_figures": n_figures}
    n_all = n_figures + add_figures          # the added figures are generated with the collection
    t = time.perf_counter()
    col = synthetic_collection(n_all, seed=seed, tokens=False)
    res["gen_s"] = round(time.perf_counter() - t, 2)
    res["tokens_per_doc"] = round(float(col["indptr"][-1]) / n_all, 1)
    log(f"generated the metadata of {n_all} docs in {res['gen_s']}s, rss {_rss_mb():.0f} MB")
    # the rank-bm25 comparison first, while the engine does not exist yet: its Python documents and
    # dictionaries (a few hundred MB) are the benchmark's, not the engine's, and are freed before it
    oracle = _oracle_comparison(col, min(oracle_docs, n_figures), oracle_queries, queries, seed)
    log(f"rank-bm25 comparison on {oracle['docs']} docs, rss {_rss_mb():.0f} MB")

    # --- build: vectors (generated chunk-wise, generation excluded from the timing)
    centres = rng.standard_normal((col["n_topics"], dim)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    vectors = VectorIndex(dim, kind=vector_kind, gpu="auto", store_dir=root / "vectors")
    t_vec = _add_vectors(vectors, col["topic"], centres, rng, 1.2 / np.sqrt(dim), 0, n_figures)
    t = time.perf_counter()
    vectors.build()
    t_vec += time.perf_counter() - t
    res["vector_build_s"] = round(t_vec, 2)
    res["vector_kind"] = vectors._built_kind
    log(f"vectors ({vectors._built_kind}) in {t_vec:.1f}s, rss {_rss_mb():.0f} MB")

    # --- lexical segments and captions, from the token stream generated a segment at a time
    lexical, cap_offsets, t_lex = build_lexical(col, root, n_figures, segment_docs, log)
    captions = Captions(np.memmap(root / "captions.bin", dtype=np.uint8, mode="r"), cap_offsets)
    res["lexical_build_s"] = round(t_lex, 2)
    res["lexical_segments"] = len(lexical.segments)
    res["nnz_per_doc"] = round(sum(len(x.col_tf) for x in lexical.segments) / n_figures, 1)
    disk = sum(x.nbytes() for x in lexical.segments)
    res["lexical_bytes_per_posting"] = round(disk / max(1, sum(len(x.col_tf) for x in lexical.segments)), 2)
    log(f"lexical in {res['lexical_build_s']}s ({disk / 2**20:.0f} MiB on disk), rss {_rss_mb():.0f} MB")
    texts = _queries(col, rng, queries)

    # --- the other signals of related figures: paper-level views, visual vectors, figure types
    t = time.perf_counter()
    build_col = dict(col, paper_ids=col["paper_ids"][:n_figures], topic=col["topic"][:n_figures])
    papers = synthetic_papers(build_col, lexical, centres, rng, dim, vector_kind)
    papers.save(root / "papers")
    del papers
    gc.collect()
    papers = PaperIndex.load(root / "papers", mmap=True)
    visual = VectorIndex(VISUAL_DIM, kind=vector_kind, gpu="auto", store_dir=root / "visual")
    vcentres = rng.standard_normal((col["n_topics"], VISUAL_DIM)).astype(np.float32)
    _add_vectors(visual, col["topic"], vcentres, rng, 1.0, 0, n_figures)
    visual.build()
    types = rng.integers(0, len(TYPE_NAMES), size=n_all).astype(np.int16)
    type_scores = rng.random((n_all, len(TYPE_NAMES)), dtype=np.float32).astype(np.float16)
    # the pictures' perceptual hashes, on disk as a saved version keeps them (memory-mapped when served)
    looks = np.lib.format.open_memmap(root / "looks.npy", mode="w+", dtype=np.uint8, shape=(n_all, HASH_BYTES))
    for s in range(0, n_all, 1 << 20):
        looks[s:s + (1 << 20)] = rng.integers(0, 256, size=(min(1 << 20, n_all - s), HASH_BYTES), dtype=np.uint8)
    looks.flush()
    # their panels' hashes: PANELS_PER_FIGURE a figure on average, each row's panels together
    n_panels = int(n_all * PANELS_PER_FIGURE)
    panel_looks = np.lib.format.open_memmap(root / "panel_looks.npy", mode="w+", dtype=np.uint8,
                                            shape=(n_panels, HASH_BYTES))
    for s in range(0, n_panels, 1 << 20):
        panel_looks[s:s + (1 << 20)] = rng.integers(0, 256, size=(min(1 << 20, n_panels - s), HASH_BYTES),
                                                    dtype=np.uint8)
    panel_looks.flush()
    panel_rows = np.sort(rng.integers(0, n_all, size=n_panels))
    panel_letters = np.full(n_panels, "a", "U1")
    res["signals_build_s"] = round(time.perf_counter() - t, 2)
    res["build_s"] = round(res["lexical_build_s"] + t_vec + res["signals_build_s"], 2)
    log(f"papers ({len(papers)}), visual vectors and types in {res['signals_build_s']}s, rss {_rss_mb():.0f} MB")
    res["rss_after_build_mb"] = round(_rss_mb(), 1)
    # a query naming a type names it by its code name here
    engine = Searcher(DocTable(np.arange(n_figures), col["paper_ids"][:n_figures], captions), lexical,
                      vectors=vectors, papers=papers, visual=visual,
                      types=TypeIndex(n_figures, TYPE_NAMES, types[:n_figures], type_scores[:n_figures]),
                      looks=_looks(looks, panel_looks, panel_rows, panel_letters, n_figures),
                      vocabulary=QueryVocabulary(lambda q: [t for t in q.split() if t in TYPE_NAMES]))

    qdim = dim
    def fake_encoder(texts):
        h = abs(hash(texts[0])) % (2**32)
        v = np.random.default_rng(h).standard_normal((1, qdim)).astype(np.float32)
        return v / np.linalg.norm(v)
    engine.encoder = fake_encoder

    # --- latency (warm, one query at a time)
    targets = rng.integers(0, n_figures, size=queries)
    for i in range(min(10, queries)):
        engine.similar(int(targets[i]), **SERVED_SIMILAR)
        engine.search(texts[i])
    lat_sim, lat_first, lat_seed = [], [], []
    for fid in targets.tolist():
        t = time.perf_counter()
        engine.similar(fid, k=10, **SERVED_SIMILAR)
        lat_sim.append(time.perf_counter() - t)
    for fid in targets[: max(1, queries // 4)].tolist():
        t = time.perf_counter()
        engine.similar(fid, k=10, scope="all")
        lat_seed.append(time.perf_counter() - t)
    first_ids = {}
    for fid in targets.tolist():
        q, qtf = lexical.doc_terms(fid)
        t = time.perf_counter()
        first_ids[fid] = engine.lexical_first_stage(lexical, q, qtf, 100, exclude=fid)[0]
        lat_first.append(time.perf_counter() - t)
    lat_exact, recall = [], []
    for fid in targets[: max(1, queries // 4)].tolist():
        t = time.perf_counter()
        exact_ids, exact_scores = lexical.search_doc(fid, k=100)
        lat_exact.append(time.perf_counter() - t)
        if len(exact_ids):
            # tie-aware: a returned doc is right if its (exact) score reaches the exact k-th score
            kth = exact_scores[-1] * (1 - 1e-6)
            got = first_ids[fid]
            got_scores = lexical.score_docs(*lexical.doc_terms(fid), got) if len(got) else np.zeros(0)
            recall.append(min(1.0, float((got_scores >= kth).sum()) / len(exact_ids)))
    lat_search, lat_typed = [], []
    for i, q in enumerate(texts):
        t = time.perf_counter()
        engine.search(q, k=10)
        lat_search.append(time.perf_counter() - t)
        if i % 4 == 0:  # a query that also names a figure type ranks every figure by that type's score
            t = time.perf_counter()
            engine.search(f"{q} {TYPE_NAMES[i % len(TYPE_NAMES)]}", k=10)
            lat_typed.append(time.perf_counter() - t)
    lat_union = []
    for fid in targets[: max(1, queries // 4)].tolist():
        t = time.perf_counter()
        engine.similar(fid, k=10, union_dense=100)
        lat_union.append(time.perf_counter() - t)
    # a misspelt word (one letter dropped): the first query that needs a spelling builds the
    # caption-word vocabulary, later ones only look it up
    word = max(texts[0].split(), key=len)
    typo = word[:2] + word[3:]
    t = time.perf_counter()
    engine.spelling_suggestion(typo)
    res["spelling_first_query_s"] = round(time.perf_counter() - t, 2)
    t = time.perf_counter()
    engine.spelling_suggestion(typo)
    res["spelling_later_query_ms"] = round((time.perf_counter() - t) * 1e3, 2)
    log(f"spelling: first query {res['spelling_first_query_s']}s (vocabulary built), "
        f"later {res['spelling_later_query_ms']} ms, rss {_rss_mb():.0f} MB")
    res.update(similar_p50_ms=_pct(lat_sim, 50), similar_p99_ms=_pct(lat_sim, 99),
               similar_all_scope_p50_ms=_pct(lat_seed, 50),
               search_p50_ms=_pct(lat_search, 50), search_p99_ms=_pct(lat_search, 99),
               search_naming_a_type_p50_ms=_pct(lat_typed, 50),
               first_stage_similar_p50_ms=_pct(lat_first, 50),
               first_stage_similar_mean_ms=float(np.mean(lat_first) * 1e3),
               first_stage_exact_p50_ms=_pct(lat_exact, 50),
               first_stage_recall_at_100_vs_exact=float(np.mean(recall)) if recall else 1.0,
               first_stage_recall_at_100_min=float(np.min(recall)) if recall else 1.0,
               similar_union_dense100_p50_ms=_pct(lat_union, 50))
    lat_picture = []
    picture_queries = visual.vectors_for(targets[: max(1, queries // 2)])
    for i in range(len(picture_queries)):
        t = time.perf_counter()
        engine.by_picture(picture_queries[i], k=10, look=looks[targets[i]])  # with its hash: copies and panels
        lat_picture.append(time.perf_counter() - t)
    res.update(by_picture_p50_ms=_pct(lat_picture, 50), by_picture_p99_ms=_pct(lat_picture, 99))
    log("latency", {k: round(v, 2) for k, v in res.items() if k.endswith("_ms")})
    res["rss_after_queries_mb"] = _current_rss_mb()
    # what a server holds: the version saved, timed at the end (run_bench) in a fresh process that
    # loads it memory-mapped and answers the same kinds of queries
    t = time.perf_counter()
    engine.save_version_dir(root / "version")
    res["save_version_s"] = round(time.perf_counter() - t, 2)

    # --- first-stage recall of the vector indexes against exact search over the same rows
    n_rec = max(1, min(50, queries // 4))
    own = targets[:n_rec]
    random_q = l2_normalize(rng.standard_normal((n_rec, dim)).astype(np.float32))
    t = time.perf_counter()
    res["vector_recall_at_100_figure_queries"] = float(np.mean(_vector_recall(vectors, vectors.vectors_for(own), own)))
    res["vector_recall_at_100_text_queries"] = float(np.mean(_vector_recall(vectors, random_q, None)))
    res["visual_recall_at_100"] = float(np.mean(_vector_recall(visual, visual.vectors_for(own), own)))
    log(f"vector recall@100 vs exact: figure queries {res['vector_recall_at_100_figure_queries']:.3f}, "
        f"text queries {res['vector_recall_at_100_text_queries']:.3f}, pictures {res['visual_recall_at_100']:.3f} "
        f"({time.perf_counter() - t:.0f}s)")

    # --- adding figures without a rebuild: a new lexical segment, vectors appended to the
    # compressed indexes (no retraining), captions appended, a new engine over the same parts
    if add_figures:
        tok = collection_tokens(col, n_figures, n_all)
        blob, lens = _caption_bytes(col, tok, n_figures, n_all)
        t_add = time.perf_counter()
        lexical.add_token_ids(col["indptr"][n_figures:n_all + 1] - col["indptr"][n_figures], tok, col["vocab"])
        with open(root / "captions.bin", "ab") as f:
            f.write(blob)
        offsets = np.r_[captions.offsets, captions.offsets[-1] + np.cumsum(lens)]
        t_add = time.perf_counter() - t_add
        t_add += _add_vectors(vectors, col["topic"], centres, rng, 1.2 / np.sqrt(dim), n_figures, n_all)
        t_add += _add_vectors(visual, col["topic"], vcentres, rng, 1.0, n_figures, n_all)
        t = time.perf_counter()
        vectors.build()
        visual.build()
        grown = Searcher(DocTable(np.arange(n_all), col["paper_ids"], Captions(
            np.memmap(root / "captions.bin", dtype=np.uint8, mode="r"), offsets)), lexical, vectors=vectors,
            papers=papers, visual=visual, types=TypeIndex(n_all, TYPE_NAMES, types, type_scores),
            looks=_looks(looks, panel_looks, panel_rows, panel_letters, n_all), vocabulary=engine.vocabulary)
        t_add += time.perf_counter() - t
        res["add_figures"] = add_figures
        res["add_figures_s"] = round(t_add, 2)
        new = int(n_all - 1)
        hits = grown.search(" ".join(col["vocab"][int(x)] for x in tok[-8:]), k=10)
        res["added_figure_found_by_its_words"] = any(h.figure_id == new for h in hits)
        log(f"added {add_figures} figures in {t_add:.1f}s; segments {len(lexical.segments)}, rss {_rss_mb():.0f} MB")

    t_full_short = []
    for q in [analyze(q) for q in texts]:
        t = time.perf_counter()
        lexical.search(q, k=100)
        t_full_short.append(time.perf_counter() - t)
    rb = oracle["rank_bm25_s"]
    res.update(
        rank_bm25_build_s=oracle["rank_bm25_build_s"],
        rank_bm25_ms_per_query_subsample=rb * 1e3,
        ours_ms_per_query_subsample=oracle["ours_s"] * 1e3,
        ours_ms_per_query_full=float(np.mean(lat_first)) * 1e3,
        first_stage_speedup_vs_rank_bm25=rb / float(np.mean(lat_first)),
        first_stage_speedup_same_docs=rb / oracle["ours_s"],
        first_stage_speedup_short_queries=oracle["rank_bm25_short_s"] / float(np.mean(t_full_short)),
        oracle_subsample_docs=oracle["docs"],
        oracle_top100_overlap=oracle["top100_overlap"],
    )
    res["peak_rss_mb"] = round(_rss_mb(), 1)
    return res, (targets, texts[: max(1, queries // 2)])


def _rounded(res: dict) -> dict:
    return {k: round(v, 3) if isinstance(v, float) else v for k, v in res.items()}


if __name__ == "__main__":  # pragma: no cover
    import json

    print(json.dumps(run_bench(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000), indent=1))
