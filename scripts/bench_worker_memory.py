"""Worker memory over many ingests: RSS of a Celery worker (parent + children) while it
ingests shared-corpus PDFs N times over (repeats are recognised as duplicates after a full
extraction, so every ingest does the whole parsing work).

    python scripts/bench_worker_memory.py ../shared/corpus/recsys --n 1000 \
        [--pg postgresql+psycopg://postgres@127.0.0.1:5432/postgres] [--redis redis://127.0.0.1:6379/9]

Prints one JSON object: ingests, seconds, rss_start_mb, rss_max_mb, rss_end_mb, growth_mb (whole
worker tree: parent + children), and the same for the largest single process.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def tree_rss_mb(pid: int, largest: bool = False) -> float:
    """RSS of a process and all its descendants (or of the largest one), from /proc."""
    children: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
                children.setdefault(ppid, []).append(int(d.name))
            except (OSError, IndexError, ValueError):
                pass
    total, biggest, stack = 0, 0, [pid]
    while stack:
        p = stack.pop()
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    kb = int(line.split()[1])
                    total, biggest = total + kb, max(biggest, kb)
        except OSError:
            continue
        stack += children.get(p, [])
    return (biggest if largest else total) / 1024


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("folder", type=Path)
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--pg", default="postgresql+psycopg://postgres@127.0.0.1:5432/postgres")
    ap.add_argument("--redis", default="redis://127.0.0.1:6379/9")
    ap.add_argument("--concurrency", type=int, default=2)
    args = ap.parse_args()

    from sqlalchemy import create_engine, text

    from app.pipeline import ingest_jobs
    from app.settings import Settings
    from workers import make_celery
    from workers.tasks import task_config

    name = f"figsearch_mem_{uuid.uuid4().hex[:8]}"
    admin = create_engine(args.pg, isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.execute(text(f'CREATE DATABASE "{name}"'))
    db_url = args.pg.rsplit("/", 1)[0] + "/" + name
    data = Path(tempfile.mkdtemp(prefix="figsearch-mem-"))
    pdfs = sorted(p for p in args.folder.rglob("*.pdf"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("FIGSEARCH_")}
    env.update(FIGSEARCH_BROKER_URL=args.redis, FIGSEARCH_DATABASE_URL=db_url, FIGSEARCH_DATA_DIR=str(data),
               FIGSEARCH_AUTO_INDEX="false")
    settings = Settings(data_dir=data, database_url=db_url, broker_url=args.redis, auto_index=False)
    import redis

    redis.Redis.from_url(args.redis).flushdb()
    worker = subprocess.Popen([str(Path(sys.executable).with_name("celery")), "-A", "workers", "worker", "-l", "warning",
                               "--concurrency", str(args.concurrency), "--without-gossip", "--without-mingle"],
                              cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)
    samples, per_process = [], []
    t0 = time.time()
    try:
        time.sleep(5)
        rss_start = tree_rss_mb(worker.pid)
        proc_start = tree_rss_mb(worker.pid, largest=True)
        done = 0
        while done < args.n:
            batch = [pdfs[(done + i) % len(pdfs)] for i in range(min(len(pdfs), args.n - done))]
            job_id = ingest_jobs.prepare_job(batch, settings)
            make_celery(settings).send_task("figsearch.ingest_collection", args=[job_id, task_config(settings)])
            while ingest_jobs.job_progress(settings, job_id)[0] != "done":
                time.sleep(2)
                samples.append(tree_rss_mb(worker.pid))
                per_process.append(tree_rss_mb(worker.pid, largest=True))
            done += len(batch)
            print(f"{done}/{args.n} ingests, worker tree RSS {samples[-1]:.0f} MB", file=sys.stderr)
        rss_end = tree_rss_mb(worker.pid)
    finally:
        os.killpg(worker.pid, signal.SIGTERM)
        worker.wait(60)
        with admin.connect() as c:
            c.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        shutil.rmtree(data, ignore_errors=True)
    print(json.dumps({"ingests": args.n, "seconds": round(time.time() - t0, 1), "concurrency": args.concurrency,
                      "rss_start_mb": round(rss_start, 1), "rss_max_mb": round(max(samples), 1),
                      "rss_end_mb": round(rss_end, 1), "growth_mb": round(max(samples) - rss_start, 1),
                      "largest_process_start_mb": round(proc_start, 1),
                      "largest_process_max_mb": round(max(per_process), 1),
                      "largest_process_growth_mb": round(max(per_process) - proc_start, 1)}))


if __name__ == "__main__":
    main()
