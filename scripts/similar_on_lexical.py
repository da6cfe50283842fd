"""Latency of related figures (`Searcher.similar`) on the lexical segments alone of a benchmark
directory: no vectors, paper views, pictures or captions, so what it times is the lexical first
stage, the same-paper filtering and the fusion of what is left. For the collections only
`figsearch bench --only lexical` builds (ten million figures without the 18 GB of the whole run).

    python scripts/similar_on_lexical.py DIR --figures 10000000 --queries 100

DIR is the benchmark's --work-dir; --figures and --seed must be the benchmark's (the papers of
the figures are generated again from them). Warm: every target is asked once before timing.
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np

from app.eval.bench import SERVED_SIMILAR, synthetic_collection
from app.search.doc_table import Captions, DocTable
from app.search.searcher import Searcher
from app.search.segments import SegmentedIndex


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("work_dir")
    ap.add_argument("--figures", type=int, required=True)
    ap.add_argument("--add-figures", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--queries", type=int, default=100)
    args = ap.parse_args()
    lex = SegmentedIndex.open(f"{args.work_dir}/lexical", mmap=True)
    n = args.figures
    if len(lex) != n:
        raise SystemExit(f"{args.work_dir}/lexical holds {len(lex)} figures, not {n}")
    papers = synthetic_collection(n + args.add_figures, seed=args.seed, tokens=False)["paper_ids"][:n]
    engine = Searcher(DocTable(np.arange(n), papers, Captions(np.zeros(0, np.uint8), np.zeros(n + 1, np.int64))), lex)
    targets = np.random.default_rng(args.seed + 3).integers(0, n, size=args.queries).tolist()
    for fid in targets:
        engine.similar(fid, k=10, **SERVED_SIMILAR)
    lat = []
    for fid in targets:
        t = time.perf_counter()
        engine.similar(fid, k=10, **SERVED_SIMILAR)
        lat.append(time.perf_counter() - t)
    ms = np.asarray(lat) * 1e3
    print(json.dumps({"figures": n, "queries": len(targets), "similar_p50_ms": round(float(np.median(ms)), 1),
                      "similar_p99_ms": round(float(np.percentile(ms, 99)), 1)}))


if __name__ == "__main__":
    main()
