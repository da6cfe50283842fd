"""Simulate a document-partitioned cluster on one machine: N shard processes, each holding every
N-th figure (its own lexical segments with its own BM25 statistics, its own vector index), a
query fanned out to all of them over pipes and the per-shard top-k merged by score -- what
OpenSearch or Vespa do across machines (query-then-fetch without a global-statistics round).

    python scripts/shard_sim.py --figures 200000 --shards 1,2,4,8 --queries 100

Prints one JSON line per N: latency percentiles of the fanned-out keyword search and vector
search (fan-out + merge, wall clock), the slowest shard's own time, and recall@100 of the merged
lists against one index over all figures (exact BM25 with collection-wide statistics; exact
vector search). On a machine with fewer cores than shards the shards queue for the CPU, so the
wall-clock latency here is an upper bound of a real cluster's; the shard time is what one
machine per shard would see.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import time

import numpy as np

from app.eval.bench import collection_tokens, synthetic_collection
from app.search.lexical import _gather_rows
from app.search.segments import SegmentedIndex
from app.search.text import analyze
from app.search.vectors import VectorIndex, l2_normalize

K = 100


def _vectors(col: dict, dim: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = l2_normalize(rng.standard_normal((col["n_topics"], dim)))
    n = len(col["topic"])
    v = rng.standard_normal((n, dim), dtype=np.float32) * np.float32(1.2 / np.sqrt(dim))
    return l2_normalize(v + centres[col["topic"]])


def _build(col: dict, vecs: np.ndarray, docs: np.ndarray):
    """A shard: the lexical index and vector index of figures `docs` (global numbers kept aside)."""
    ip = col["indptr"]
    lex = SegmentedIndex()
    tok = collection_tokens(col, 0, len(ip) - 1)
    lens = ip[docs + 1] - ip[docs]
    sub_ptr = np.r_[0, np.cumsum(lens)]
    pos, _ = _gather_rows(ip, docs)
    lex.add_token_ids(sub_ptr, tok[pos], col["vocab"])
    vec = VectorIndex(vecs.shape[1], kind="ivfpq", gpu="off")  # compressed, as a large shard would be
    vec.add(np.arange(len(docs)), vecs[docs])
    vec.build()
    return lex, vec


def _shard(conn, col, vecs, docs):
    lex, vec = _build(col, vecs, docs)
    conn.send("ready")
    while True:
        msg = conn.recv()
        if msg is None:
            break
        words, qvec = msg
        t = time.perf_counter()
        rows, scores = lex.search(words, k=K)
        ids, sims = vec.search(qvec[None, :], K)
        spent = time.perf_counter() - t
        keep = ids[0] >= 0
        conn.send((docs[rows], scores, docs[ids[0][keep]], sims[0][keep], spent))


def _merge(parts, which: int):
    ids = np.concatenate([p[2 * which] for p in parts])
    sc = np.concatenate([p[2 * which + 1] for p in parts]).astype(np.float64)
    order = np.lexsort((ids, -sc))[:K]
    return ids[order]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--figures", type=int, default=200_000)
    ap.add_argument("--shards", default="1,2,4,8")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--dim", type=int, default=384)
    a = ap.parse_args()
    col = synthetic_collection(a.figures, seed=0)
    vecs = _vectors(col, a.dim, 1)
    rng = np.random.default_rng(2)
    vocab = col["vocab"]
    picked = rng.integers(0, a.figures, a.queries)
    words = []
    for d in picked.tolist():
        doc = collection_tokens(col, d, d + 1)
        words.append(analyze(" ".join(vocab[int(t)] for t in rng.choice(doc, size=int(rng.integers(2, 6)), replace=False))))
    qvecs = l2_normalize(rng.standard_normal((a.queries, a.dim)).astype(np.float32))
    # the reference: one index over everything, exact
    one_lex = SegmentedIndex()
    one_lex.add_token_ids(col["indptr"], col["tokens"], vocab)
    ref_lex = [one_lex.search(w, k=K) for w in words]
    ref_vec = [np.argsort(-(vecs @ q))[:K] for q in qvecs]
    del one_lex
    ctx = mp.get_context("spawn")  # (forking after FAISS has started its OpenMP threads hangs the children)
    for n in map(int, a.shards.split(",")):
        pipes, procs = [], []
        for s in range(n):
            parent, child = ctx.Pipe()
            p = ctx.Process(target=_shard, args=(child, col, vecs, np.arange(s, a.figures, n)))
            p.start()
            pipes.append(parent)
            procs.append(p)
        for c in pipes:
            assert c.recv() == "ready"
        lat, shard_max, rec_lex, rec_vec = [], [], [], []
        for i in range(a.queries):
            t = time.perf_counter()
            for c in pipes:
                c.send((words[i], qvecs[i]))
            parts = [c.recv() for c in pipes]
            got_lex, got_vec = _merge(parts, 0), _merge(parts, 1)
            lat.append(time.perf_counter() - t)
            shard_max.append(max(p[4] for p in parts))
            ref_ids, _ = ref_lex[i]
            if len(ref_ids):
                rec_lex.append(min(1.0, len(set(got_lex.tolist()) & set(ref_ids.tolist())) / len(ref_ids)))
            rec_vec.append(len(set(got_vec.tolist()) & set(ref_vec[i].tolist())) / K)
        for c in pipes:
            c.send(None)
        for p in procs:
            p.join()
        print(json.dumps({"figures": a.figures, "shards": n, "figures_per_shard": a.figures // n,
                          "fanout_p50_ms": round(float(np.percentile(lat, 50)) * 1e3, 2),
                          "fanout_p99_ms": round(float(np.percentile(lat, 99)) * 1e3, 2),
                          "slowest_shard_p50_ms": round(float(np.percentile(shard_max, 50)) * 1e3, 2),
                          "bm25_recall_at_100_vs_one_index": round(float(np.mean(rec_lex)), 4),
                          "vector_recall_at_100_vs_exact": round(float(np.mean(rec_vec)), 4)}), flush=True)


if __name__ == "__main__":
    main()
