"""Recall@100 against exact search and latency of a saved IVF-PQ vector part, by re-scoring depth.

    python scripts/rescore_depth_sweep.py DIR/version/vectors --queries 50 --depths 500,1000,2000,4000,8000

The part is a `VectorIndex` folder (e.g. the text vectors of a `figsearch bench --work-dir DIR`
version). Queries: indexed vectors (a figure's own vector, itself excluded) and random unit
vectors (a text query's embedding). With `--cold` the float16 rows are dropped from the page
cache (posix_fadvise DONTNEED) before each depth. Prints one JSON line per depth.
"""
from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

from app.search.ann import STORE_FILE
from app.search.page_cache import drop_from_cache
from app.search.vectors import VectorIndex, l2_normalize


def exact_kth(store, queries: np.ndarray, exclude: np.ndarray | None, k: int) -> np.ndarray:
    """The exact k-th best cosine per query over every stored row."""
    n = len(store)
    best = np.full((len(queries), k + 1), -np.inf, np.float32)
    for s in range(0, n, 100_000):
        e = min(n, s + 100_000)
        sc = queries @ store.read(s, e).T
        if exclude is not None:
            m = (exclude >= s) & (exclude < e)
            sc[np.flatnonzero(m), exclude[m] - s] = -np.inf
        part = np.partition(sc, sc.shape[1] - k - 1, axis=1)[:, -k - 1:]
        best = -np.sort(-np.concatenate([best, part], 1), axis=1)[:, :k + 1]
    return best[:, k - 1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("part", type=Path)
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--depths", default="500,1000,2000,4000,8000")
    ap.add_argument("--nprobe", default="")
    ap.add_argument("--cold", action="store_true")
    ap.add_argument("--seed", type=int, default=3)
    a = ap.parse_args()
    index = VectorIndex.load(a.part, gpu="off")
    store = index._ann.store
    rng = np.random.default_rng(a.seed)
    own = rng.integers(0, len(index), size=a.queries)
    kinds = {"indexed": (store.rows(own), own),
             "random": (l2_normalize(rng.standard_normal((a.queries, index.dim)).astype(np.float32)), None)}
    t = time.perf_counter()
    kth = {name: exact_kth(store, q, ex, 100) for name, (q, ex) in kinds.items()}
    print(json.dumps({"n": len(index), "exact_s": round(time.perf_counter() - t, 1)}), flush=True)
    import faiss

    ivf = faiss.extract_index_ivf(index._ann.index)
    for nprobe in [int(x) for x in a.nprobe.split(",") if x] or [ivf.nprobe]:
        ivf.nprobe = nprobe
        for depth in map(int, a.depths.split(",")):
            if a.cold:
                drop_from_cache([a.part / STORE_FILE])
            out = {"depth": depth, "nprobe": nprobe, "cold": a.cold, "load": os.getloadavg()[0]}
            for name, (q, ex) in kinds.items():
                rec, lat = [], []
                for i in range(len(q)):
                    t = time.perf_counter()
                    ids, _ = index.search(q[i:i + 1], 101, rescore=depth)
                    lat.append(time.perf_counter() - t)
                    got = ids[0][ids[0] >= 0]
                    if ex is not None:
                        got = got[got != ex[i]]
                    got = got[:100]
                    cos = store.rows(got) @ q[i]
                    rec.append(min(1.0, float((cos >= kth[name][i] - 1e-5).sum()) / 100))
                out[f"recall_{name}"] = round(float(np.mean(rec)), 4)
                out[f"recall_{name}_min"] = round(float(np.min(rec)), 2)
                out[f"p50_ms_{name}"] = round(float(np.percentile(lat, 50)) * 1e3, 2)
            print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
