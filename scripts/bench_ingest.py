"""Ingestion throughput benchmark: parse + figures + mentions + citations, embeddings excluded.

    python scripts/bench_ingest.py ../shared/corpus/recsys [--workers 2] [--data-dir DIR]

Ingests every PDF under the folder into a fresh data dir (embedded mode, SQLite) and prints one
JSON object: files, seconds, pdfs_per_s, the seconds of the after-job steps (citation links,
figure types, index refresh) within them, the 1-minute load average at the end (other jobs on
the machine slow the run), the CPU seconds (user + sys) of this process and of its extraction
processes (comparable across loads, unlike seconds) and the outcome counts.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import tempfile
import time
from pathlib import Path

from app.pipeline import ingest_jobs
from app.settings import Settings


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("folder", type=Path)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--data-dir", type=Path, default=None)
    args = ap.parse_args()
    data = args.data_dir or Path(tempfile.mkdtemp(prefix="figsearch-bench-"))
    settings = Settings(data_dir=data, database_url="", broker_url="")
    finish = ingest_jobs.finish_job
    finish_s = []

    def timed_finish(*a, **kw):  # the after-job steps (citations, figure types, index) timed apart
        t = time.perf_counter()
        finish(*a, **kw)
        finish_s.append(time.perf_counter() - t)

    ingest_jobs.finish_job = timed_finish
    t0 = time.perf_counter()
    job_id = ingest_jobs.prepare_job([args.folder], settings)
    ingest_jobs.run_job_embedded(settings, job_id, workers=args.workers)
    elapsed = time.perf_counter() - t0
    s = ingest_jobs.summarise(settings, job_id)
    n = sum(s.counts.values())
    own, workers = (resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    cpu_main, cpu_workers = own.ru_utime + own.ru_stime, workers.ru_utime + workers.ru_stime
    print(json.dumps({"files": n, "seconds": round(elapsed, 2), "pdfs_per_s": round(n / elapsed, 3),
                      "after_job_seconds": round(sum(finish_s), 2), "load_avg_1min": round(os.getloadavg()[0], 2),
                      "workers": args.workers, "cpu_seconds": round(cpu_main + cpu_workers, 2),
                      "cpu_s_per_pdf": round((cpu_main + cpu_workers) / max(n, 1), 3),
                      "cpu_main_seconds": round(cpu_main, 2), "counts": dict(s.counts), "figures": s.n_figures,
                      "failures": s.failures, "data_dir": str(data)}, indent=1))


if __name__ == "__main__":
    main()
