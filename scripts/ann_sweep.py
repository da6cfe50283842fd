"""Recall@100 of compressed first stages (FAISS IVF-PQ / OPQ+IVF-PQ / IVF-SQ8) against exact search,
after exact re-scoring of the top candidates, on the benchmark's synthetic vectors.

    python scripts/ann_sweep.py --n 1000000 --dim 384 --queries 100

Vectors are drawn as in `figsearch bench` (app/eval/bench.py): unit vectors around one of 300 topic
centres. Two query kinds: an indexed vector (a figure's "more like this", itself excluded) and a
random unit vector (a text query's embedding). Prints one JSON line per setting.
"""
from __future__ import annotations

import argparse
import json
import math
import resource
import time

import faiss
import numpy as np


def synthetic_vectors(n: int, dim: int, seed: int = 0, n_topics: int = 300) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((n_topics, dim)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    topic = rng.integers(0, n_topics, size=n)
    out = np.empty((n, dim), np.float16)
    for s in range(0, n, 100_000):
        e = min(n, s + 100_000)
        v = rng.standard_normal((e - s, dim), dtype=np.float32) * np.float32(1.2 / math.sqrt(dim))
        v += centres[topic[s:e]]
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        out[s:e] = v
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--nlist", type=int, default=1000)
    ap.add_argument("--factories", default="IVF{nlist},PQ48;IVF{nlist},PQ96;IVF{nlist},SQ8",
                    help="FAISS index_factory strings separated by ';'")
    ap.add_argument("--nprobe", default="16,32,64")
    ap.add_argument("--rescore", default="500,1000,2000,4000")
    a = ap.parse_args()
    store = synthetic_vectors(a.n, a.dim)
    rng = np.random.default_rng(1)
    own = rng.integers(0, a.n, size=a.queries)
    q_own = store[own].astype(np.float32)
    q_rand = rng.standard_normal((a.queries, a.dim)).astype(np.float32)
    q_rand /= np.linalg.norm(q_rand, axis=1, keepdims=True)
    queries = {"indexed": q_own, "random": q_rand}
    # exact ground truth by brute force over the float16 store (the same numbers the re-scoring uses)
    truth = {}
    for name, q in queries.items():
        best = np.full((a.queries, 101), -np.inf, np.float32)
        best_ids = np.zeros((a.queries, 101), np.int64)
        for s in range(0, a.n, 200_000):
            sc = q @ store[s:s + 200_000].astype(np.float32).T
            if name == "indexed":
                m = (own >= s) & (own < s + 200_000)
                sc[np.flatnonzero(m), own[m] - s] = -np.inf
            ids = np.argpartition(-sc, 101, axis=1)[:, :101]
            cat_s = np.concatenate([best, np.take_along_axis(sc, ids, 1)], 1)
            cat_i = np.concatenate([best_ids, ids + s], 1)
            o = np.argsort(-cat_s, axis=1)[:, :101]
            best, best_ids = np.take_along_axis(cat_s, o, 1), np.take_along_axis(cat_i, o, 1)
        truth[name] = (best_ids[:, :100], best[:, 99])
    nlist = a.nlist
    facs = [f.replace("{nlist}", str(nlist)) for f in a.factories.split(";")]
    for fac in facs:
        index = faiss.index_factory(a.dim, fac, faiss.METRIC_INNER_PRODUCT)
        ivf = faiss.downcast_index(faiss.extract_index_ivf(index))
        if isinstance(ivf, faiss.IndexIVFPQ):
            ivf.do_polysemous_training = False  # minutes, and unused
        t = time.perf_counter()
        sample = store[np.sort(rng.choice(a.n, size=min(a.n, 40 * a.nlist), replace=False))]
        index.train(sample.astype(np.float32))
        for s in range(0, a.n, 65_536):
            index.add(store[s:s + 65_536].astype(np.float32))
        build_s = time.perf_counter() - t
        ivf = faiss.extract_index_ivf(index)
        code_bytes = ivf.code_size
        for nprobe in map(int, a.nprobe.split(",")):
            ivf.nprobe = nprobe
            for r in map(int, a.rescore.split(",")):
                out = {"factory": fac, "n": a.n, "nprobe": nprobe, "rescore": r, "code_bytes": code_bytes,
                       "build_s": round(build_s, 1)}
                for name, q in queries.items():
                    rec, lat = [], []
                    for i in range(a.queries):
                        t = time.perf_counter()
                        _, cand = index.search(q[i:i + 1], r + 1)
                        cand = np.sort(cand[0][cand[0] >= 0])
                        if name == "indexed":
                            cand = cand[cand != own[i]]
                        sc = store[cand].astype(np.float32) @ q[i]
                        top = cand[np.argsort(-sc)[:100]]
                        lat.append(time.perf_counter() - t)
                        ids, kth = truth[name]
                        got = store[top].astype(np.float32) @ q[i]
                        rec.append(min(1.0, float((got >= kth[i] - 1e-6).sum()) / 100))
                    out[f"recall_{name}"] = round(float(np.mean(rec)), 4)
                    out[f"recall_{name}_min"] = round(float(np.min(rec)), 3)
                    out[f"p50_ms_{name}"] = round(float(np.percentile(lat, 50) * 1e3), 2)
                out["rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
                print(json.dumps(out), flush=True)
        del index


if __name__ == "__main__":
    main()
