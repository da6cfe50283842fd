"""Distributed mode: Redis broker, PostgreSQL, Celery workers as separate processes."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = [pytest.mark.postgres, pytest.mark.redis]


def _env(redis_url, pg_url, data):
    env = {k: v for k, v in os.environ.items() if not k.startswith("FIGSEARCH_")}
    env.update(FIGSEARCH_BROKER_URL=redis_url, FIGSEARCH_DATABASE_URL=pg_url, FIGSEARCH_DATA_DIR=str(data))
    return env


def start_worker(env, concurrency=2):
    celery = str(Path(sys.executable).with_name("celery"))
    proc = subprocess.Popen([celery, "-A", "workers", "worker", "-l", "warning", "--concurrency", str(concurrency),
                             "--without-gossip", "--without-mingle", "--without-heartbeat"],
                            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    return proc


def stop(proc):
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)


def test_ingest_through_redis_and_workers(demo_pdfs, redis_url, pg_url, tmp_path):
    from tests import badfiles

    data = tmp_path / "data"
    env = _env(redis_url, pg_url, data)
    env["FIGSEARCH_AUTO_INDEX"] = "false"
    bad = tmp_path / "bad"
    bad.mkdir()
    bad_files = [badfiles.zero_byte(bad), badfiles.html_named_pdf(bad), badfiles.encrypted(bad),
                 badfiles.zip_with_traversal(bad, demo_pdfs[0])]
    worker = start_worker(env)
    try:
        r = subprocess.run([sys.executable, "-m", "app.cli", "ingest", str(demo_pdfs[0].parent), *map(str, bad_files),
                            "--json"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        summary = json.loads(r.stdout.strip().splitlines()[-1])
        assert summary["ok"] == len(demo_pdfs), summary
        # bad files end with clear reasons; the zip's good member is a duplicate of demo_pdfs[0]
        reasons = " | ".join(f["error"] for f in summary["failures"])
        for expected in ("0 bytes", "HTML", "encrypted", "unsafe path"):
            assert expected in reasons, reasons
        assert summary["duplicate"] == 1
        assert not (tmp_path / "escaped.pdf").exists()
        papers = subprocess.run([sys.executable, "-m", "app.cli", "papers", "--format", "jsonl"], cwd=ROOT, env=env,
                                capture_output=True, text=True, timeout=60).stdout.splitlines()
        rows = [json.loads(l) for l in papers if json.loads(l)["status"] == "ok"]
        assert len(rows) == len(demo_pdfs)
        assert sum(len(p["cites"]) for p in rows) > 0  # links re-evaluated after the batch
        assert (data / "figures").is_dir() and any((data / "figures").rglob("*.png"))
    finally:
        stop(worker)
        if worker.stderr:
            err = worker.stderr.read().decode(errors="replace")
            if "Traceback" in err:
                print(err[-4000:])
