"""Cold-cache latency of the first stage of related figures with the kernel's default read-ahead
or with MADV_RANDOM on the by-document row arrays that re-scoring reads.

    python scripts/readahead_ab.py DIR/lexical random 201 40
    python scripts/readahead_ab.py DIR/lexical normal 201 40
    python scripts/readahead_ab.py DIR/lexical normal 201 40 600000 8000   # another budget: postings, re-scored

Before opening the index the row files' pages are dropped from the page cache (posix_fadvise
DONTNEED on these files only, nothing else on the machine); run the modes alternately, each in a
fresh process. Prints p50/mean latency, major faults and bytes read per query, and the process's
mapped file pages at the end.
"""
from __future__ import annotations

import glob
import json
import mmap
import resource
import sys
import time

import numpy as np

from app.search.page_cache import drop_from_cache
from app.search.searcher import Searcher
from app.search.segments import SegmentedIndex

ROW_ARRAYS = ("row_ptr", "row_terms", "row_tf")


def _mapping(arr):
    base = arr
    while base is not None and not isinstance(base, mmap.mmap):
        base = getattr(base, "_mmap", None) or getattr(base, "base", None)
    return base


def _status(field: str) -> int:
    return int([line for line in open("/proc/self/status") if line.startswith(field)][0].split()[1])


def _read_bytes() -> int:
    return int([line for line in open("/proc/self/io") if line.startswith("read_bytes")][0].split()[1])


def main() -> None:
    d, mode, seed, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    for name in ROW_ARRAYS:
        drop_from_cache(glob.glob(f"{d}/segments/*/{name}.npy"))
    lex = SegmentedIndex.open(d, mmap=True)
    for seg in lex.segments:
        for name in ROW_ARRAYS:
            _mapping(getattr(seg, name)).madvise(mmap.MADV_RANDOM if mode == "random" else mmap.MADV_NORMAL)
    budget = Searcher.first_stage_budget(len(lex))
    if len(sys.argv) > 6:
        budget.update(max_postings=int(sys.argv[5]), rescore=int(sys.argv[6]))
    targets = np.random.default_rng(seed).integers(0, len(lex), size=n).tolist()
    lat = []
    f0, b0 = resource.getrusage(resource.RUSAGE_SELF).ru_majflt, _read_bytes()
    for f in targets:
        q, qtf = lex.doc_terms(f)
        t = time.perf_counter()
        lex.search_terms(q, qtf, k=100, exclude=f, **budget)
        lat.append(time.perf_counter() - t)
    f1, b1 = resource.getrusage(resource.RUSAGE_SELF).ru_majflt, _read_bytes()
    print(json.dumps({"mode": mode, "seed": seed, "postings": budget["max_postings"], "rescore": budget["rescore"], "p50_ms": round(float(np.median(lat)) * 1e3, 1),
                      "mean_ms": round(float(np.mean(lat)) * 1e3, 1),
                      "major_faults_per_query": round((f1 - f0) / n), "mib_read_per_query": round((b1 - b0) / n / 2**20, 2),
                      "rss_file_mib": round(_status("RssFile") / 1024)}))


if __name__ == "__main__":
    main()
