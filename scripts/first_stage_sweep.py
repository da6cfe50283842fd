"""Recall and latency of the first stage of "more like this" on a saved lexical index, for several
postings budgets and re-scored candidate counts.

    python scripts/first_stage_sweep.py DIR/lexical --budgets 120000,1200000 --rescore 2000 --targets 25
    python scripts/first_stage_sweep.py DIR/lexical --impact --budgets 100000,200000 --rescore 500,1000

With --impact the budgets are the postings that `SegmentedIndex.impact_search` reads (the heads of
impact-ordered lists; segments without them get them first, written next to their other arrays),
otherwise the best terms' postings `search_terms` reads (`max_postings`).

DIR is a `figsearch bench --work-dir DIR` directory (its lexical segments are saved as they are
built). Recall is tie-aware against the exact top 100 of the full query (a returned document
counts if its exact score reaches the exact 100th score), as the benchmark reports it. The first
setting runs on a cold page cache: list a setting twice to see it warm. Wall-clock p50/p99 and
the CPU time's p50 (less sensitive to other processes on a shared machine) are printed.
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np

from app.search.segments import SegmentedIndex


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("lexical_dir")
    ap.add_argument("--budgets", default="120000,1200000")
    ap.add_argument("--rescore", default="2000")
    ap.add_argument("--targets", type=int, default=25)
    ap.add_argument("--terms", type=int, default=32)
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--impact", action="store_true", help="score-at-a-time over impact-ordered heads")
    ap.add_argument("--repeat", type=int, default=1, help="runs of each setting (the first one cold)")
    args = ap.parse_args()
    lex = SegmentedIndex.open(args.lexical_dir, mmap=True)
    if args.impact and lex.add_impacts():
        lex = SegmentedIndex.open(args.lexical_dir, mmap=True)
    targets = np.random.default_rng(args.seed).integers(0, len(lex), size=args.targets).tolist()
    exact = {}
    for f in targets:
        ids, scores = lex.search_doc(f, k=100)
        exact[f] = (scores[-1] * (1 - 1e-6), len(ids))
    settings = [(int(b), int(r)) for b in args.budgets.split(",") for r in args.rescore.split(",")]
    for budget, rescore in [s for s in settings for _ in range(args.repeat)]:
        recall, lat, cpu = [], [], []
        for f in targets:
            q, qtf = lex.doc_terms(f)
            t, c = time.perf_counter(), time.process_time()
            if args.impact:
                got = lex.impact_search(q, qtf, k=100, exclude=f, postings=budget, rescore=rescore)[0]
            else:
                got = lex.search_terms(q, qtf, k=100, exclude=f, max_query_terms=args.terms,
                                       max_postings=budget, rescore=rescore)[0]
            lat.append(time.perf_counter() - t)
            cpu.append(time.process_time() - c)
            kth, n = exact[f]
            recall.append(min(1.0, float((lex.score_docs(q, qtf, got) >= kth).sum()) / max(n, 1)))
        print(json.dumps({"docs": len(lex), "impact": args.impact, "budget": budget, "rescore": rescore,
                          "recall": round(float(np.mean(recall)), 3), "worst": round(float(np.min(recall)), 3),
                          "p50_ms": round(float(np.median(lat)) * 1e3, 1),
                          "p99_ms": round(float(np.percentile(lat, 99)) * 1e3, 1),
                          "cpu_p50_ms": round(float(np.median(cpu)) * 1e3, 1)}), flush=True)


if __name__ == "__main__":
    main()
