"""Faults in distributed and embedded mode: killed workers, broker restarts, API restarts,
several API processes. Every scenario ends with every paper stored exactly once."""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time

import httpx
import pytest
from sqlalchemy import func, select

from app.db.schema import Job, JobFile, Paper
from app.db.session import session_scope
from app.settings import Settings
from tests.servers import base_url, free_port, listening_socket, start_api_process
from tests.test_distributed import ROOT, start_worker, stop

pytestmark = [pytest.mark.postgres, pytest.mark.redis]


def base_env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FIGSEARCH_")}
    env.update({k: str(v) for k, v in extra.items()})
    return env


def wait_for(pred, timeout: float, every: float = 0.3, what: str = "condition"):
    end = time.time() + timeout
    while time.time() < end:
        value = pred()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def job_state(settings: Settings, job_id: str) -> tuple[str, int, int, dict]:
    with session_scope(settings.db_url) as s:
        job = s.get(Job, job_id)
        statuses = {}
        for st in s.scalars(select(JobFile.status).where(JobFile.job_id == job_id)):
            statuses[st] = statuses.get(st, 0) + 1
        return job.status, job.done, job.total, statuses


def submit(settings: Settings, paths) -> str:
    """Record a job and queue its files, as `figsearch ingest` does, without waiting."""
    from app.dispatch import celery_workers
    from app.pipeline import ingest_jobs

    job_id = ingest_jobs.prepare_job(paths, settings)
    celery_workers(settings)(job_id)
    return job_id


def _only_job(settings: Settings) -> str | None:
    try:
        with session_scope(settings.db_url) as s:
            return s.scalar(select(Job.id))
    except Exception:  # the CLI is still creating the tables
        return None


def count_papers(settings: Settings) -> tuple[int, int]:
    with session_scope(settings.db_url) as s:
        n = s.scalar(select(func.count(Paper.id)))
        distinct = s.scalar(select(func.count(func.distinct(Paper.sha256))))
        return n, distinct


def held_by_worker(settings: Settings, job_id: str) -> list[dict]:
    from workers import liveness

    return list(liveness.held_files(liveness.client(settings.broker_url), job_id).values())


def test_worker_killed_mid_ingest_task_is_redelivered(demo_pdfs, real_papers, redis_url, pg_url, tmp_path):
    """DEFAULT settings (the broker's visibility timeout is 43 minutes): a worker SIGKILLed
    outright (main process and children) while it holds a file; a new worker re-sends that file
    within seconds of the old heartbeat expiring, and the waiting CLI names it."""
    data = tmp_path / "data"
    env = base_env(FIGSEARCH_BROKER_URL=redis_url, FIGSEARCH_DATABASE_URL=pg_url, FIGSEARCH_DATA_DIR=data,
                   FIGSEARCH_AUTO_INDEX="false")
    settings = Settings(data_dir=data, database_url=pg_url, broker_url=redis_url, auto_index=False)
    assert settings.visibility_timeout_s > 600  # the test proves nothing with a short timeout
    files = list(real_papers) + list(demo_pdfs)
    batch = tmp_path / "batch"
    batch.mkdir()
    for f in files:
        shutil.copyfile(f, batch / f.name)
    worker = start_worker(env, concurrency=1)
    cli = subprocess.Popen([sys.executable, "-m", "app.cli", "ingest", str(batch), "--json"], cwd=ROOT, env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        job_id = wait_for(lambda: _only_job(settings), 60, what="the job")
        # kill the whole worker (parent and child) while it holds a file
        held = wait_for(lambda: held_by_worker(settings, job_id), 120, 0.1, what="a file held by the worker")
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait(10)
        killed_at = time.time()
        assert job_state(settings, job_id)[0] != "done", "the batch finished before the kill; the test proves nothing"
        worker = start_worker(env, concurrency=1)
        out, err = cli.communicate(timeout=240)
        recovered = time.time() - killed_at
    finally:
        if cli.poll() is None:
            cli.kill()
        stop(worker)
    assert cli.returncode == 0, err
    assert f"stopped answering while it held {held[0]['name'].rsplit('/', 1)[-1]}" in err, err
    assert "ingest: " in err and " files done" in err  # progress lines without a terminal
    print(f"batch of {len(files)} finished {recovered:.1f} s after the whole worker was killed")
    status, done, total, statuses = job_state(settings, job_id)
    assert done == total == len(files)
    assert statuses.get("ok", 0) == len(files), statuses
    n, distinct = count_papers(settings)
    assert n == distinct == len(files)


def test_workers_reconnect_after_broker_restart(demo_pdfs, pg_url, tmp_path):
    """A private Redis on its own port, so restarting it cannot disturb anything else."""
    if not shutil.which("redis-server"):
        pytest.skip("redis-server binary not installed")
    port = free_port()
    url = f"redis://127.0.0.1:{port}/0"

    def start_redis():
        p = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                              "--appendonly", "no"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for(lambda: socket.socket().connect_ex(("127.0.0.1", port)) == 0, 10, 0.1, what="redis up")
        return p

    redis_proc = start_redis()
    data = tmp_path / "data"
    env = base_env(FIGSEARCH_BROKER_URL=url, FIGSEARCH_DATABASE_URL=pg_url, FIGSEARCH_DATA_DIR=data,
                   FIGSEARCH_AUTO_INDEX="false")
    settings = Settings(data_dir=data, database_url=pg_url, broker_url=url, auto_index=False)
    worker = start_worker(env, concurrency=1)
    try:
        first = submit(settings, demo_pdfs[:2])
        wait_for(lambda: job_state(settings, first)[0] == "done", 120, what="first job")
        redis_proc.terminate()
        redis_proc.wait(10)
        time.sleep(2)
        redis_proc = start_redis()
        second = submit(settings, demo_pdfs[2:4])
        wait_for(lambda: job_state(settings, second)[0] == "done", 120, what="job after broker restart")
        assert worker.poll() is None, "the worker died instead of reconnecting"
    finally:
        stop(worker)
        redis_proc.terminate()
        redis_proc.wait(10)
    assert count_papers(settings) == (4, 4)


def start_api(env: dict, sock) -> subprocess.Popen:
    """The API on `sock` (tests.servers.listening_socket), kept by the test across restarts."""
    p = start_api_process(sock, env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)

    def up():
        try:
            return httpx.get(f"{base_url(sock)}/healthz", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False
    wait_for(up, 60, 0.3, what="API up")
    return p


def test_api_restart_mid_job_resumes_and_second_api_sees_new_index(demo_pdfs, tmp_path):
    """Embedded mode: the job runs inside the API process; a restart resumes it, and another API
    process on the same data dir picks up the new index version."""
    data = tmp_path / "data"
    token = "test-token-1234567890-abcdefghij"
    env = base_env(FIGSEARCH_DATA_DIR=data, FIGSEARCH_ADMIN_TOKEN=token, FIGSEARCH_DENSE="false",
                   FIGSEARCH_INGEST_WORKERS=1, FIGSEARCH_INDEX_POLL_S=0.5, FIGSEARCH_WARM_ENCODER="false")
    settings = Settings(data_dir=data)
    sock_a, sock_b = listening_socket(), listening_socket()
    url_a, url_b = base_url(sock_a), base_url(sock_b)
    api_a = start_api(env, sock_a)
    api_b = start_api(env, sock_b)
    try:
        files = [("files", (p.name, p.read_bytes(), "application/pdf")) for p in demo_pdfs]
        r = httpx.post(f"{url_a}/api/v1/admin/collections", files=files,
                       headers={"Authorization": f"Bearer {token}"}, timeout=60)
        assert r.status_code == 202, r.text
        job_id = r.json()["job_id"]
        wait_for(lambda: job_state(settings, job_id)[1] >= 1, 120, 0.2, what="first file done")
        os.killpg(api_a.pid, signal.SIGKILL)
        api_a.wait(10)
        assert job_state(settings, job_id)[0] != "done", "job finished before the restart"
        api_a = start_api(env, sock_a)

        def job_done():
            j = httpx.get(f"{url_a}/api/v1/admin/jobs/{job_id}",
                          headers={"Authorization": f"Bearer {token}"}, timeout=5).json()
            return j if j.get("status") == "done" else None
        job = wait_for(job_done, 180, what="resumed job done")
        assert job["done"] == job["total"] == len(demo_pdfs)
        assert count_papers(settings) == (len(demo_pdfs), len(demo_pdfs))

        # the other API process sees the new figures once the index version changes
        from app.db.schema import Figure

        with session_scope(settings.db_url) as s:
            caption = s.execute(select(Figure.caption).where(Figure.kind == "figure")).scalars().first()
        word = max((w.strip(".,:;()") for w in caption.split()), key=len)

        def b_finds():
            r = httpx.get(f"{url_b}/api/v1/search", params={"q": word, "k": 5}, timeout=5)
            return r.status_code == 200 and r.json().get("items")
        wait_for(b_finds, 120, what="second API sees the new index")
    finally:
        for p in (api_a, api_b):
            stop(p)
        sock_a.close()
        sock_b.close()
