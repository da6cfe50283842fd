"""Related figures and text search over a saved benchmark version, with the vector candidates
(nearest figure texts, nearest papers, a text query's nearest figures) re-scored at different
depths: latency, and how much of the top 10 of the full-depth ranking each depth keeps.

    python scripts/candidate_depth_sweep.py DIR/version --queries 100 --depths full,2,4,8 --rounds 2

DIR is a `figsearch bench --work-dir DIR` directory. A depth is `full` (every vector query
re-scores the index's `rescore` rows, the earlier behaviour) or f (candidate queries re-score f
rows per wanted neighbour, `CANDIDATE_RESCORE`). Depths alternate within each round; with `--cold`
the version's float16 row files are dropped from the page cache (posix_fadvise DONTNEED) before
each depth, as when the rows do not fit in memory. Prints one JSON line per (round, depth).
"""
from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

import app.search.vectors as vectors_module
from app.search.ann import STORE_FILE
from app.search.page_cache import drop_from_cache
from app.search.searcher import Searcher
from app.search.vectors import VectorIndex

_candidates = VectorIndex.nearest_candidates


def set_depth(depth: str) -> None:
    if depth == "full":
        VectorIndex.nearest_candidates = lambda self, vecs, k: self.search(vecs, k)
    else:
        VectorIndex.nearest_candidates = _candidates
        vectors_module.CANDIDATE_RESCORE = int(depth)


def drop_rows(version: Path) -> None:
    drop_from_cache(version.rglob(STORE_FILE))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("version", type=Path)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--depths", default="full,2,4,8")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--cold", action="store_true")
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args()
    engine = Searcher.load(a.version, mmap=True, check=False)
    dim = engine.vectors.dim
    engine.encoder = lambda q: np.random.default_rng(abs(hash(q[0])) % 2**32).standard_normal(
        (1, dim)).astype(np.float32)
    rng = np.random.default_rng(a.seed)
    targets = rng.integers(0, len(engine.docs), size=a.queries).tolist()
    terms = list(engine.lexical("bm25").term_ids)
    texts = [" ".join(terms[int(i)] for i in rng.integers(0, len(terms), size=3)) for _ in range(a.queries)]
    depths = a.depths.split(",")
    reference_similar, reference_search = {}, {}
    for r in range(a.rounds):
        for depth in (depths if r % 2 == 0 else depths[::-1]):
            set_depth(depth)
            if a.cold:
                drop_rows(a.version)
            lat_sim, lat_search, kept_sim, kept_search = [], [], [], []
            for fid in targets:
                t = time.perf_counter()
                hits = engine.similar(fid, k=10)
                lat_sim.append(time.perf_counter() - t)
                got = [h.figure_id for h in hits]
                ref = reference_similar.setdefault(fid, got) if depth == "full" else reference_similar.get(fid)
                if ref:
                    kept_sim.append(len(set(got) & set(ref)) / len(ref))
            for q in texts:
                t = time.perf_counter()
                hits = engine.search(q, k=10)
                lat_search.append(time.perf_counter() - t)
                got = [h.figure_id for h in hits]
                ref = reference_search.setdefault(q, got) if depth == "full" else reference_search.get(q)
                if ref:
                    kept_search.append(len(set(got) & set(ref)) / len(ref))
            print(json.dumps({
                "round": r, "depth": depth, "cold": a.cold, "load": os.getloadavg()[0],
                "similar_p50_ms": round(float(np.percentile(lat_sim, 50)) * 1e3, 2),
                "similar_p99_ms": round(float(np.percentile(lat_sim, 99)) * 1e3, 2),
                "search_p50_ms": round(float(np.percentile(lat_search, 50)) * 1e3, 2),
                "similar_top10_kept": round(float(np.mean(kept_sim)), 4) if kept_sim else None,
                "search_top10_kept": round(float(np.mean(kept_search)), 4) if kept_search else None,
            }), flush=True)


if __name__ == "__main__":
    main()
