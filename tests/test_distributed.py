"""Distributed mode: Redis broker, PostgreSQL, Celery workers as separate processes."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.conftest import cli_run

ROOT = Path(__file__).resolve().parents[1]
pytestmark = [pytest.mark.postgres, pytest.mark.redis]


def _env(redis_url, pg_url, data):
    env = {k: v for k, v in os.environ.items() if not k.startswith("FIGSEARCH_")}
    env.update(FIGSEARCH_BROKER_URL=redis_url, FIGSEARCH_DATABASE_URL=pg_url, FIGSEARCH_DATA_DIR=str(data))
    return env


def start_worker(env, concurrency=2, log: Path | None = None):
    """A Celery worker whose log goes to a file (`proc.log`; with `log`, that file at info level: each
    task received): a pipe nobody reads while the test waits fills up on a loaded machine
    (tracebacks of timed-out files) and blocks the worker."""
    celery = str(Path(sys.executable).with_name("celery"))
    out = open(log, "w+b") if log else tempfile.TemporaryFile()
    proc = subprocess.Popen([celery, "-A", "workers", "worker", "-l", "info" if log else "warning",
                             "--concurrency", str(concurrency),
                             "--without-gossip", "--without-mingle", "--without-heartbeat"],
                            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=out, start_new_session=True)
    proc.log = out
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
        # ...known when the job was recorded: no worker ever took it (two workers extracting both copies at
        # once wrote one crop folder), and it points to the paper of the first copy
        from sqlalchemy import select

        from app.db.schema import JobFile
        from app.db.session import session_scope

        with session_scope(pg_url) as s:
            copy = s.execute(select(JobFile.deliveries, JobFile.paper_id, JobFile.error)
                             .where(JobFile.status == "duplicate")).one()
        assert copy.deliveries == 0 and copy.paper_id is not None and "earlier in this job" in copy.error, copy
        assert not (tmp_path / "escaped.pdf").exists()
        papers = subprocess.run([sys.executable, "-m", "app.cli", "papers", "--format", "jsonl"], cwd=ROOT, env=env,
                                capture_output=True, text=True, timeout=60).stdout.splitlines()
        rows = [json.loads(l) for l in papers if json.loads(l)["status"] == "ok"]
        assert len(rows) == len(demo_pdfs)
        assert sum(len(p["cites"]) for p in rows) > 0  # links re-evaluated after the batch
        assert (data / "figures").is_dir() and any((data / "figures").rglob("*.png"))
    finally:
        stop(worker)
        worker.log.seek(0)
        err = worker.log.read().decode(errors="replace")
        if "Traceback" in err:
            print(err[-4000:])


def test_worker_killing_file_fails_after_max_deliveries_and_the_batch_finishes(demo_pdfs, real_papers,
                                                                               redis_url, pg_url, tmp_path):
    """A file whose worker process dies every time (killed here with SIGKILL while it works on
    that file, as the kernel's OOM killer would) is failed after FIGSEARCH_MAX_DELIVERIES
    deliveries; the other files are stored and `figsearch ingest` returns."""
    import shutil

    from tests.badfiles import kill_worker_per_delivery

    data = tmp_path / "data"
    env = _env(redis_url, pg_url, data)
    env.update(FIGSEARCH_AUTO_INDEX="false", FIGSEARCH_MAX_DELIVERIES="3")
    batch = tmp_path / "batch"
    batch.mkdir()
    for p in demo_pdfs:
        shutil.copyfile(p, batch / p.name)
    shutil.copyfile(real_papers[0], batch / "poison.pdf")  # a real paper: takes seconds, time to kill
    worker = start_worker(env, concurrency=1)
    t0 = time.time()
    cli = subprocess.Popen([sys.executable, "-m", "app.cli", "ingest", str(batch), "--json"], cwd=ROOT, env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        kills = kill_worker_per_delivery(cli, worker.pid, pg_url, "poison.pdf", timeout=240)
        out, err = cli.communicate(timeout=30)
        elapsed = time.time() - t0
    finally:
        if cli.poll() is None:
            cli.kill()
        stop(worker)
    assert cli.returncode == 0, err
    summary = json.loads(out.strip().splitlines()[-1])
    assert kills == 3, kills
    assert summary["ok"] == len(demo_pdfs), summary
    [failure] = summary["failures"]
    assert failure["file"].endswith("poison.pdf") and "worker crashed 3 times" in failure["error"]
    print(f"poison batch of {len(demo_pdfs) + 1} files finished in {elapsed:.1f} s after {kills} worker deaths")


def test_cli_wait_gives_up_when_nothing_progresses_and_messages_hold_no_database_url(demo_pdfs, redis_url,
                                                                                      pg_url, tmp_path):
    import base64

    import redis as redis_lib

    env = _env(redis_url, pg_url, tmp_path / "data")
    env.update(FIGSEARCH_AUTO_INDEX="false", FIGSEARCH_INGEST_STALL_S="3")
    r = subprocess.run([sys.executable, "-m", "app.cli", "ingest", str(demo_pdfs[0])], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=120)  # no worker is running
    assert r.returncode == 1
    assert "no file of job" in r.stderr and "Celery workers running" in r.stderr
    # the queued message (still in Redis: nobody consumed it) names the job, not the database
    client = redis_lib.Redis.from_url(redis_url)
    raw = [m for k in client.keys() if client.type(k) == b"list" for m in client.lrange(k, 0, -1)]
    assert raw, "no queued message found"
    for m in raw:
        body = base64.b64decode(json.loads(m)["body"])
        assert (b"ingest_pdf" in m or b"ingest_collection" in m) and b"data_dir" in body
        assert b"postgresql" not in m and b"postgresql" not in body and b"database_url" not in body


@pytest.mark.timeout(600)
def test_index_built_after_a_job_is_collection_work_not_the_last_files(demo_pdfs, redis_url, pg_url, tmp_path):
    """The figure types, central scores and index build after a job run as a task of their own under
    the collection limit: with a per-file limit far shorter than typing and indexing take (loading
    the backbone and MiniLM alone takes longer), workers still type every figure and publish an index."""
    data = tmp_path / "data"
    env = _env(redis_url, pg_url, data)
    env.update(FIGSEARCH_FILE_TIMEOUT_S="4", FIGSEARCH_OCR_SECONDS_PER_PAGE="0")
    worker = start_worker(env)

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "app.cli", *args], cwd=ROOT, env=env, capture_output=True,
                              text=True, timeout=300)
    try:
        r = cli("ingest", str(demo_pdfs[0].parent), "--json")
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout.strip().splitlines()[-1])["ok"] >= 1  # a cold worker's first file may time out
        deadline = time.time() + 400
        while time.time() < deadline and not (data / "index" / "CURRENT").exists():
            time.sleep(0.5)
        items = [json.loads(line) for line in cli("figures").stdout.splitlines()]
        assert items and all(f["figure_type"] for f in items)
        word = max((w.strip(".,:;()") for w in items[0]["caption"].split()), key=len)
        found = cli("search", word, "--k", "3", "--json")
        assert found.returncode == 0 and json.loads(found.stdout), found.stderr
    finally:
        stop(worker)


def test_a_file_out_of_time_fails_as_timed_out_never_ok_with_figures_missing(demo_pdfs, redis_url, pg_url, tmp_path):
    """The per-file limit interrupts extraction wherever it is; the extractor's guards that keep one bad
    figure from sinking a paper must not swallow it and store the paper as ok. On a loaded machine a
    file can be over before the limit is acted on: such a file is ok only with every figure an
    unhurried ingest of it finds."""
    env = _env(redis_url, pg_url, tmp_path / "data")
    env.update(FIGSEARCH_AUTO_INDEX="false", FIGSEARCH_FILE_TIMEOUT_S="0.01", FIGSEARCH_OCR_SECONDS_PER_PAGE="0")
    worker = start_worker(env)
    try:
        r = subprocess.run([sys.executable, "-m", "app.cli", "ingest", str(demo_pdfs[0].parent), "--json"],
                           cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    finally:
        stop(worker)
    summary = json.loads(r.stdout.strip().splitlines()[-1])
    assert summary["failures"] and summary["ok"] + len(summary["failures"]) == len(demo_pdfs), summary
    assert all(f["error"] == "timed out after 0.01 s" for f in summary["failures"]), summary["failures"]
    if summary["ok"]:
        timed_out = {Path(f["file"]).name for f in summary["failures"]}
        over = [str(p) for p in demo_pdfs if p.name not in timed_out]
        assert len(over) == summary["ok"], (timed_out, summary)
        unhurried = cli_run(["ingest", *over, "--data-dir", str(tmp_path / "unhurried"), "--json"])
        assert summary["figures"] == json.loads(unhurried.stdout.strip().splitlines()[-1])["figures"], summary


def test_workers_grow_the_index_after_a_second_job(demo_pdfs, redis_url, pg_url, tmp_path):
    """The index step of a later job adds a segment to the current version instead of rebuilding it,
    in a worker as in embedded mode."""
    from app.search.searcher import Searcher
    from tests.conftest import copy_into

    data = tmp_path / "data"
    env = _env(redis_url, pg_url, data)
    env["FIGSEARCH_DENSE"] = "false"
    first, second = copy_into(demo_pdfs[:-2], tmp_path / "first"), copy_into(demo_pdfs[-2:], tmp_path / "second")
    worker = start_worker(env)

    def ingest_and_wait(folder, previous):
        r = subprocess.run([sys.executable, "-m", "app.cli", "ingest", str(folder), "--json"], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        current = data / "index" / "CURRENT"
        deadline = time.time() + 400
        while time.time() < deadline and (not current.exists() or current.read_text().strip() == previous):
            time.sleep(0.5)
        return Searcher.load_current(data / "index")
    try:
        before = ingest_and_wait(first[0].parent, None)
        after = ingest_and_wait(second[0].parent, before.version)
        assert len(after.lexical().segments) == 2
        assert set(before.figure_ids.tolist()) < set(after.figure_ids.tolist())
    finally:
        stop(worker)


def test_a_job_that_adds_no_paper_sends_no_index_work(demo_pdfs, redis_url, pg_url, tmp_path):
    """A job whose files all repeat stored papers queues no `after_ingest` (no figure types, central
    scores or index version to redo); the jobs before and after it that add papers each queue one."""
    from app.search.searcher import Searcher
    from tests.conftest import copy_into

    data = tmp_path / "data"
    env = _env(redis_url, pg_url, data)
    env["FIGSEARCH_DENSE"] = "false"
    log = tmp_path / "worker.log"
    worker = start_worker(env, concurrency=1, log=log)

    def ingest(pdf, folder):
        r = subprocess.run([sys.executable, "-m", "app.cli", "ingest", str(copy_into([pdf], tmp_path / folder)[0]),
                            "--json"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout.strip().splitlines()[-1])

    def index_holding_more_than(n):
        deadline = time.time() + 400
        while time.time() < deadline:
            if (data / "index" / "CURRENT").exists():
                figures = len(Searcher.load_current(data / "index").figure_ids)
                if figures > n:
                    return figures
            time.sleep(0.5)
        raise AssertionError("no index version with the new paper's figures was published")
    try:
        assert ingest(demo_pdfs[0], "first")["ok"] == 1
        n = index_holding_more_than(0)
        assert ingest(demo_pdfs[0], "again")["duplicate"] == 1
        assert ingest(demo_pdfs[1], "second")["ok"] == 1
        index_holding_more_than(n)  # the duplicate's job, queued before, would have been received by now
    finally:
        stop(worker)
    received = [line for line in log.read_text().splitlines() if "figsearch.after_ingest[" in line and "received" in line]
    assert len(received) == 2, received


def test_a_file_whose_task_fails_outside_the_extractor_ends_failed_and_its_job_ends(demo_pdfs, redis_url, pg_url,
                                                                                    tmp_path):
    """A file's task that meets an error the extractor's guards do not catch (here its staged copy is
    a folder by the time a worker reads it; a worker process whose import of a package was cut
    short by an earlier file's limit fails the same way, on every later file) fails that file with
    the error as its reason: the other files are read and the job ends, instead of the file staying
    `working` and `figsearch ingest` waiting for it."""
    from sqlalchemy import select

    from app.db.schema import JobFile
    from app.db.session import session_scope
    from tests.conftest import copy_into

    env = _env(redis_url, pg_url, tmp_path / "data")
    env.update(FIGSEARCH_AUTO_INDEX="false")
    batch = copy_into(demo_pdfs[:2], tmp_path / "batch")
    cli = subprocess.Popen([sys.executable, "-m", "app.cli", "ingest", str(batch[0].parent), "--json"], cwd=ROOT,
                           env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    worker = None
    try:
        deadline = time.time() + 120
        paths = []
        while time.time() < deadline and len(paths) < 2:  # the job is recorded; no worker has taken it yet
            time.sleep(0.3)
            try:
                with session_scope(pg_url) as s:
                    paths = s.scalars(select(JobFile.path).order_by(JobFile.id)).all()
            except Exception:  # the CLI is still creating the tables
                paths = []
        assert len(paths) == 2, paths
        staged = Path(paths[1])
        staged.unlink()
        staged.mkdir()
        worker = start_worker(env)
        out, err = cli.communicate(timeout=300)
    finally:
        if cli.poll() is None:
            cli.kill()
        if worker is not None:
            stop(worker)
    assert cli.returncode == 0, err
    summary = json.loads(out.strip().splitlines()[-1])
    assert summary["ok"] == 1, summary
    [failure] = summary["failures"]
    assert failure["file"].endswith(demo_pdfs[1].name) and "IsADirectoryError" in failure["error"], failure
    assert failure["error_kind"] == "internal"
