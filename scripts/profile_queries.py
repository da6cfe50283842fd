"""Time (and optionally profile) the served query path on a saved index version, without rebuilding.

`figsearch bench --work-dir DIR` leaves the version it served under DIR/version; this loads it
memory-mapped, as a server does, and times related figures (`other_papers`, as the API asks),
text search (a random query vector stands in for MiniLM) and search by picture, one query at a time: wall-clock latency, the CPU time of the querying thread (`_cpu_`:
what the query costs, less dependent on what else the machine runs) and of the whole process
(`_process_cpu_`: with the query's helper threads, FIGSEARCH_QUERY_THREADS > 1).

    python scripts/profile_queries.py DIR/version --queries 200 [--profile similar] [--seed 3] [--results F]

`--drop` first drops the version's files from the page cache (as after a reboot); `--warm` reads
them into it after loading, as the API does (app/search/page_cache.py). `--results F` writes each query's top ten (figure ids) to F as JSON, so two versions of the code
can be checked to rank alike on the same saved version. `--parts` adds the CPU time per related-
figures query spent in each of its parts (`SIMILAR_PARTS`; parts nest: the first stage holds the
pass over postings and the re-scoring), without a profiler's overhead. Each kind of query also
reports its page faults and kernel CPU time a query.
"""
from __future__ import annotations

import argparse
import cProfile
import json
import pathlib
import pstats
import resource
import time
import zlib

import numpy as np

from app.search.ann import RowStore
from app.search.page_cache import drop_from_cache, warm_version
from app.search.papers import PaperIndex
from app.search.searcher import Searcher
from app.search.segments import SegmentedIndex
from app.search.vectors import VectorIndex

# (class, method, label) timed by --parts
SIMILAR_PARTS = [(Searcher, "lexical_first_stage", "first_stage"),
                 (SegmentedIndex, "_accumulate", "first_stage.postings_pass"),
                 (SegmentedIndex, "score_docs", "lexical_rescoring"),
                 (VectorIndex, "nearest_candidates", "nearest_texts_and_papers"),
                 (RowStore, "rows", "vector_rows_read"),
                 (PaperIndex, "related", "related_papers"),
                 (PaperIndex, "similarity", "paper_views"),
                 (Searcher, "signals", "signals")]


def timed_parts(parts) -> tuple[dict[str, float], callable]:
    """Wrap each (class, method) so that its calls add their thread CPU seconds to the returned
    dict under its label; the second value puts the methods back."""
    spent: dict[str, float] = {}
    saved = []
    for owner, name, label in parts:
        raw = owner.__dict__[name]
        fn = raw.__func__ if isinstance(raw, classmethod) else raw

        def timed(*a, _fn=fn, _label=label, **k):
            t = time.thread_time()
            try:
                return _fn(*a, **k)
            finally:
                spent[_label] = spent.get(_label, 0.0) + time.thread_time() - t
        setattr(owner, name, classmethod(timed) if isinstance(raw, classmethod) else timed)
        saved.append((owner, name, raw))

    def restore():
        for owner, name, raw in saved:
            setattr(owner, name, raw)
    return spent, restore


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("version_dir")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--profile", choices=["similar", "search", "picture"], default=None)
    ap.add_argument("--top", type=int, default=30, help="profile lines printed")
    ap.add_argument("--results", default=None, help="write each query's top ten figure ids here (JSON)")
    ap.add_argument("--parts", action="store_true", help="CPU ms per related-figures query in each of its parts")
    ap.add_argument("--drop", action="store_true",
                    help="first drop the version's files from the page cache (a server started after a reboot)")
    ap.add_argument("--warm", action="store_true",
                    help="read the version's files into the page cache after loading, as the API does")
    args = ap.parse_args()
    if args.drop:
        drop_from_cache(p for p in pathlib.Path(args.version_dir).rglob("*") if p.is_file())

    s = Searcher.load(args.version_dir, mmap=True, check=False)
    warmed = warm_version(args.version_dir) if args.warm else None
    dim = s.vectors.dim
    # seeded by the text's checksum (str hashes differ between processes): runs compare query for query
    s.encoder = lambda q: np.random.default_rng(zlib.crc32(q[0].encode())).standard_normal((1, dim)).astype(np.float32)
    rng = np.random.default_rng(args.seed)
    targets = rng.integers(0, len(s), size=args.queries).tolist()
    words = s.lexical().vocab
    texts = [" ".join(words[int(i)] for i in rng.integers(0, min(len(words), 20_000), size=3))
             for _ in range(args.queries)]
    pictures = s.visual.vectors_for(targets) if s.visual is not None else None
    runs = {"similar": lambda i: s.similar(int(s.figure_ids[targets[i]]), k=10, scope="other_papers"),
            "search": lambda i: s.search(texts[i], k=10),
            "picture": lambda i: s.by_picture(pictures[i], k=10)}
    for name, run in runs.items():
        for i in range(min(10, args.queries)):  # warm-up
            run(i)
    out, results = {}, {}
    if warmed is not None:
        out.update(warm_mb=round(warmed.bytes / 2**20, 1), warm_s=round(warmed.seconds, 2),
                   warm_files_left_out=len(warmed.skipped))
    for name, run in runs.items():
        if name == "picture" and pictures is None:
            continue
        prof = cProfile.Profile() if name == args.profile else None
        spent, restore = timed_parts(SIMILAR_PARTS) if args.parts and name == "similar" else (None, None)
        lat, cpu, process_cpu = [], [], []
        before = resource.getrusage(resource.RUSAGE_SELF)
        for i in range(args.queries):
            if prof:
                prof.enable()
            t, c, pc = time.perf_counter(), time.thread_time(), time.process_time()
            hits = run(i)
            lat.append(time.perf_counter() - t)
            cpu.append(time.thread_time() - c)
            process_cpu.append(time.process_time() - pc)
            if prof:
                prof.disable()
            results.setdefault(name, []).append([h.figure_id for h in hits])
        after = resource.getrusage(resource.RUSAGE_SELF)
        # page faults and kernel time a query: a memory-mapped page touched for the first time in
        # this process faults even when the page cache holds it (minor), or reads the disk (major)
        out[f"{name}_minor_faults_mean"] = round((after.ru_minflt - before.ru_minflt) / args.queries, 1)
        out[f"{name}_major_faults_mean"] = round((after.ru_majflt - before.ru_majflt) / args.queries, 1)
        out[f"{name}_system_cpu_mean_ms"] = round((after.ru_stime - before.ru_stime) / args.queries * 1e3, 2)
        out[f"{name}_p50_ms"] = round(float(np.percentile(lat, 50)) * 1e3, 2)
        out[f"{name}_p99_ms"] = round(float(np.percentile(lat, 99)) * 1e3, 2)
        out[f"{name}_cpu_p50_ms"] = round(float(np.percentile(cpu, 50)) * 1e3, 2)
        out[f"{name}_process_cpu_p50_ms"] = round(float(np.percentile(process_cpu, 50)) * 1e3, 2)
        out[f"{name}_process_cpu_p99_ms"] = round(float(np.percentile(process_cpu, 99)) * 1e3, 2)
        if spent is not None:
            restore()
            out[f"{name}_cpu_mean_ms"] = round(float(np.mean(cpu)) * 1e3, 2)
            out.update({f"{name}_cpu_mean_ms.{k}": round(v / args.queries * 1e3, 2) for k, v in spent.items()})
        if prof:
            pstats.Stats(prof).sort_stats("cumulative").print_stats(args.top)
    print(json.dumps(out))
    if args.results:
        with open(args.results, "w") as f:
            json.dump(results, f)


if __name__ == "__main__":
    main()
