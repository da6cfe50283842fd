"""Distributed ingest jobs under a short per-file limit: does every job end?

Each run: a fresh PostgreSQL database (dropped and made again: give one of its own) and a flushed
Redis database (give one nothing else uses), one Celery worker started as tests/test_distributed.py
starts it, then `figsearch ingest` of the 6 generated demo papers with FIGSEARCH_FILE_TIMEOUT_S set to
the run's limit (the limits are taken in turn), waited for up to --wait seconds. Prints one JSON line
per run (the limit, the CLI's exit code and time, the job's status, its files' statuses and errors as
the database holds them afterwards, the tracebacks in the worker's log), then how many jobs ended.
Run from the repository root:

    PYTHONPATH=. python scripts/job_end_repro.py --runs 16 --limits 0.4,0.6,0.8,1 --wait 150 \
        --db figsearch_job_end --redis redis://127.0.0.1:6379/11 --work /tmp/job-end
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
CELERY = str(Path(PY).with_name("celery"))
PG_ADMIN = os.environ.get("FIGSEARCH_TEST_PG", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")


def fresh_db(name: str) -> str:
    from sqlalchemy import create_engine, text

    admin = create_engine(PG_ADMIN, isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        c.execute(text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    return PG_ADMIN.rsplit("/", 1)[0] + "/" + name


def one_run(i: int, limit: float, pdfs: Path, work: Path, redis_url: str, db: str, wait: float,
            auto_index: bool, concurrency: int) -> dict:
    import redis

    redis.Redis.from_url(redis_url).flushdb()
    pg = fresh_db(db)
    data = work / f"run{i}" / "data"
    data.parent.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("FIGSEARCH_")}
    env.update(FIGSEARCH_BROKER_URL=redis_url, FIGSEARCH_DATABASE_URL=pg, FIGSEARCH_DATA_DIR=str(data),
               FIGSEARCH_FILE_TIMEOUT_S=str(limit), FIGSEARCH_OCR_SECONDS_PER_PAGE="0",
               FIGSEARCH_AUTO_INDEX="true" if auto_index else "false", PYTHONPATH=str(ROOT))
    log = open(work / f"run{i}" / "worker.log", "wb")
    worker = subprocess.Popen([CELERY, "-A", "workers", "worker", "-l", "info", "--concurrency", str(concurrency),
                               "--without-gossip", "--without-mingle", "--without-heartbeat"],
                              cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=log, start_new_session=True)
    t0 = time.monotonic()
    try:
        try:
            r = subprocess.run([PY, "-m", "app.cli", "ingest", str(pdfs), "--json"], cwd=ROOT, env=env,
                               capture_output=True, text=True, timeout=wait)
            rc, out, err = r.returncode, r.stdout, r.stderr
        except subprocess.TimeoutExpired as exc:
            rc, out, err = "timeout", exc.stdout or "", exc.stderr or ""
        elapsed = time.monotonic() - t0
    finally:
        if worker.poll() is None:
            os.killpg(worker.pid, signal.SIGTERM)
            try:
                worker.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(worker.pid, signal.SIGKILL)
                worker.wait(5)
        log.close()
    from sqlalchemy import create_engine, text

    eng = create_engine(pg)
    with eng.connect() as c:
        jobs = c.execute(text("select id, status, done, total, index_state from jobs")).all()
        files = c.execute(text("select status, error, deliveries from job_files order by id")).all()
    eng.dispose()
    text_log = (work / f"run{i}" / "worker.log").read_text(errors="replace")
    return {"run": i, "limit": limit, "rc": rc, "elapsed": round(elapsed, 1),
            "job": [tuple(map(str, j)) for j in jobs], "files": Counter(f[0] for f in files),
            "errors": sorted({f[1][:80] for f in files if f[1]}), "deliveries": [f[2] for f in files],
            "tracebacks": text_log.count("Traceback"), "ended": bool(jobs) and jobs[0][1] == "done",
            "stderr_tail": err.strip().splitlines()[-2:] if err else []}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--limits", default="0.01,0.05,0.1,0.2,0.5,1")
    ap.add_argument("--wait", type=float, default=300)
    ap.add_argument("--work", type=Path, required=True, help="where each run's data dir and worker log go")
    ap.add_argument("--redis", required=True, help="a Redis database URL nothing else uses (it is flushed)")
    ap.add_argument("--db", required=True, help="a PostgreSQL database name of its own (dropped and made again)")
    ap.add_argument("--auto-index", action="store_true")
    ap.add_argument("--concurrency", type=int, default=2)
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    pdfs = a.work / "demo-pdfs"
    if not pdfs.is_dir():
        from app.demo.generate import generate_collection

        generate_collection(pdfs, n_papers=6, seed=1)
    limits = [float(x) for x in a.limits.split(",")]
    ended = 0
    for i in range(a.runs):
        res = one_run(i, limits[i % len(limits)], pdfs, a.work, a.redis, a.db, a.wait, a.auto_index, a.concurrency)
        ended += res["ended"]
        line = json.dumps(res, default=str)
        print(line, flush=True)
        if a.out:
            with a.out.open("a") as fh:
                fh.write(line + "\n")
    print(f"jobs ended: {ended}/{a.runs}", flush=True)


if __name__ == "__main__":
    main()
