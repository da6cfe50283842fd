"""Why a file failed, named where it fails: a fault of its own bytes (a retry fails the same way)
told from a failure of the run that read it (a retry may work), and the job's retry reading only
the latter unless asked."""
from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import select, text

from app.db.schema import Job, JobFile
from app.db.session import session_scope
from app.ingest import failures
from app.ingest.extract import Limits, extract_pdf
from app.ingest.sources import expand_inputs
from app.pipeline import ingest_jobs
from tests import badfiles


def text_named_pdf(folder: Path, _good: Path) -> Path:
    p = folder / "notes.pdf"
    p.write_text("Minutes of the meeting, not a paper.\n")
    return p


def cut_after_100_bytes(folder: Path, good: Path) -> Path:
    p = folder / "cut.pdf"
    p.write_bytes(good.read_bytes()[:100])
    return p


def cut_to_a_seventh(folder: Path, good: Path) -> Path:
    return badfiles.truncated(folder, good)  # opens (the parser rebuilds what arrived), but is not whole


def encrypted(folder: Path, _good: Path) -> Path:
    return badfiles.encrypted(folder)


def empty(folder: Path, _good: Path) -> Path:
    return badfiles.zero_byte(folder)


@pytest.mark.parametrize("make, limits, kind", [
    (text_named_pdf, Limits(), failures.NOT_PDF),
    (empty, Limits(), failures.NOT_PDF),
    (cut_after_100_bytes, Limits(), failures.DAMAGED),
    (cut_to_a_seventh, Limits(), failures.DAMAGED),
    (encrypted, Limits(), failures.ENCRYPTED),
    (lambda folder, good: good, Limits(max_pages=1), failures.TOO_LARGE),
    (lambda folder, good: good, Limits(max_file_mb=0.001), failures.TOO_LARGE),
])
def test_a_bad_file_is_named_for_what_is_wrong_with_its_bytes(demo_pdfs, tmp_path, make, limits, kind):
    ex = extract_pdf(make(tmp_path, demo_pdfs[0]), tmp_path / "data", limits)
    assert (ex.status, ex.error_kind) == ("failed", kind), ex.error
    assert not failures.retry_may_help(ex.error_kind)


def test_a_truncated_pdf_fails_as_truncated_but_a_whole_one_the_parser_repairs_is_read(demo_pdfs, tmp_path):
    """Cut short, a PDF is rebuilt by the parser from what arrived, and the figures past the cut would
    be missing from a paper called ok; a whole file with a broken cross-reference table (common from
    some PDF writers) is repaired the same way, and is read, with a warning."""
    cut = extract_pdf(badfiles.truncated(tmp_path, demo_pdfs[0]), tmp_path / "data")
    assert (cut.status, cut.error_kind) == ("failed", failures.DAMAGED) and "truncated PDF" in cut.error
    data = demo_pdfs[0].read_bytes()
    at = data.rindex(b"startxref") + len(b"startxref\n")
    offset = data[at:].split(b"\n", 1)[0]
    broken = tmp_path / "broken-xref.pdf"
    broken.write_bytes(data[:at] + b"1".rjust(len(offset), b"0") + data[at + len(offset):])
    whole = extract_pdf(broken, tmp_path / "data")
    assert whole.status == "ok" and "repaired" in whole.error
    assert len(whole.figures) == len(extract_pdf(demo_pdfs[0], tmp_path / "data").figures)


def test_a_good_file_has_no_kind(demo_pdfs, tmp_path):
    ex = extract_pdf(demo_pdfs[0], tmp_path / "data")
    assert (ex.status, ex.error_kind) == ("ok", None)


def test_refused_zip_members_are_named_too(demo_pdfs, fast_settings, tmp_path):
    files = expand_inputs([badfiles.zip_with_traversal(tmp_path, demo_pdfs[0])], fast_settings, tmp_path / "staging")
    kinds = {f.name.split(":", 1)[1]: f.error_kind for f in files}
    assert kinds == {"../../escaped.pdf": failures.UNSAFE, "/abs/escaped2.pdf": failures.UNSAFE, "ok/inside.pdf": None}


def test_the_rule_says_which_failures_a_retry_may_fix():
    for kind in failures.FILE_KINDS | {failures.MISSING}:
        assert not failures.retry_may_help(kind), kind
    for kind in failures.RUN_KINDS | {None, failures.UNKNOWN}:
        assert failures.retry_may_help(kind), kind
    assert failures.kind_shown("ok", None) is None and failures.kind_shown("failed", None) == failures.UNKNOWN
    assert failures.kind_shown("failed", failures.TIMEOUT) == failures.TIMEOUT


def _kinds(settings, job_id: str) -> dict[str, tuple[str, str | None]]:
    with session_scope(settings.db_url) as s:
        return {Path(n).name: (st, k) for n, st, k in s.execute(
            select(JobFile.name, JobFile.status, JobFile.error_kind).where(JobFile.job_id == job_id))}


def _finish(settings, job_id: str) -> None:
    ingest_jobs.after_ingest(settings, ingest_jobs.finish_job(settings, job_id), job_id)


def test_a_job_retry_reads_again_what_a_retry_may_fix_and_the_rest_only_when_asked(demo_pdfs, fast_settings,
                                                                                 tmp_path):
    """A mixed job: one file read, one damaged, one whose time ran out (recorded as the runners
    record it). The job's retry reads the timed-out file only; a damaged file is read again when
    named, or with include_file_errors; with only such files left, the retry says why it reads none."""
    damaged = cut_after_100_bytes(tmp_path, demo_pdfs[1])
    job_id = ingest_jobs.prepare_job([demo_pdfs[0], damaged, demo_pdfs[2]], fast_settings)
    (good, *_), (bad, *_), (slow, *_) = ingest_jobs.pending_files(fast_settings, job_id)
    assert ingest_jobs.process_job_file(fast_settings, good).status == "ok"
    assert ingest_jobs.process_job_file(fast_settings, bad).error_kind == failures.DAMAGED
    ingest_jobs.record_outcome(fast_settings, slow, None, "timed out after 1 s", failures.TIMEOUT)
    _finish(fast_settings, job_id)
    assert _kinds(fast_settings, job_id) == {demo_pdfs[0].name: ("ok", None), "cut.pdf": ("failed", "damaged"),
                                             demo_pdfs[2].name: ("failed", "timeout")}
    summary = ingest_jobs.summarise(fast_settings, job_id)
    assert {Path(n).name: k for n, _e, k in summary.failures} == {"cut.pdf": "damaged", demo_pdfs[2].name: "timeout"}

    assert ingest_jobs.retry_job(fast_settings, job_id) == 1
    assert _kinds(fast_settings, job_id)[demo_pdfs[2].name] == ("pending", None)
    assert _kinds(fast_settings, job_id)["cut.pdf"] == ("failed", "damaged")
    assert ingest_jobs.process_job_file(fast_settings, slow).status == "ok"  # the machine is not busy now
    _finish(fast_settings, job_id)

    with pytest.raises(ingest_jobs.NothingToRetry, match="failed for their own bytes"):
        ingest_jobs.retry_job(fast_settings, job_id)
    assert ingest_jobs.retry_job(fast_settings, job_id, file_ids=[bad]) == 1  # named: read whatever it failed for
    assert ingest_jobs.process_job_file(fast_settings, bad).error_kind == failures.DAMAGED  # the same way again
    _finish(fast_settings, job_id)
    assert ingest_jobs.retry_job(fast_settings, job_id, include_file_errors=True) == 1


def test_a_file_that_killed_every_worker_is_its_own_fault(demo_pdfs, fast_settings):
    fast_settings.max_deliveries = 1
    job_id = ingest_jobs.prepare_job([demo_pdfs[0]], fast_settings)
    (jf, *_), = ingest_jobs.pending_files(fast_settings, job_id)
    assert ingest_jobs.claim_delivery(fast_settings, jf) is None
    outcome = ingest_jobs.claim_delivery(fast_settings, jf)  # redelivered: its first worker died
    assert (outcome.status, outcome.error_kind) == ("failed", failures.CRASHES_WORKER)
    assert _kinds(fast_settings, job_id)[demo_pdfs[0].name] == ("failed", failures.CRASHES_WORKER)


def test_a_file_gone_before_it_was_read_is_missing(demo_pdfs, fast_settings, tmp_path):
    copy = tmp_path / "gone.pdf"
    copy.write_bytes(demo_pdfs[0].read_bytes())
    job_id = ingest_jobs.prepare_job([copy], fast_settings)
    (jf, *_), = ingest_jobs.pending_files(fast_settings, job_id)
    copy.unlink()
    assert ingest_jobs.process_job_file(fast_settings, jf).error_kind == failures.MISSING


def _failure_recorded_before_kinds(url: str) -> None:
    """A database at the revision before kinds, holding one failed job file."""
    from alembic import command

    from app.db.session import alembic_config, get_engine

    engine = get_engine(url)
    with engine.begin() as conn:
        cfg = alembic_config(url)
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "0007")
        conn.execute(text("INSERT INTO jobs (id, kind, status, total, done, error, created_at, finished_at) "
                          "VALUES ('old', 'ingest', 'done', 1, 1, '', CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)"))
        conn.execute(text("INSERT INTO job_files (job_id, name, path, status, n_figures, error) "
                          "VALUES ('old', 'old.pdf', '', 'failed', 0, 'timed out after 60 s')"))


def _check_upgraded(url: str, settings) -> None:
    from app.api.jobs import file_rows
    from app.db.session import migrate

    migrate(url)
    with session_scope(url) as s:
        (row,) = file_rows(settings, s, s.get(Job, "old"))
    assert (row["status"], row["error_kind"], row["retry_may_help"]) == ("failed", "unknown", True)


def test_a_failure_recorded_before_kinds_is_unknown_after_the_upgrade_on_sqlite(fast_settings):
    url = fast_settings.db_url
    fast_settings.ensure_dirs()
    _failure_recorded_before_kinds(url)
    _check_upgraded(url, fast_settings)


@pytest.mark.postgres
def test_a_failure_recorded_before_kinds_is_unknown_after_the_upgrade_on_postgres(pg_url, fast_settings):
    _failure_recorded_before_kinds(pg_url)
    _check_upgraded(pg_url, fast_settings)


# ------------------------------------------------------------------ a worker's file always ends
def test_an_error_the_extractor_lets_through_fails_the_file_and_the_job_still_ends(demo_pdfs, fast_settings,
                                                                                   monkeypatch):
    """A worker process whose first-use import of a package was cut short fails that import again on
    every later file (a NameError inside the package): such an error, raised outside the extractor's
    own guards, fails the file with its reason instead of leaving it `working` and its job unended."""
    job_id = ingest_jobs.prepare_job([demo_pdfs[0], demo_pdfs[1]], fast_settings)
    (good, *_), (bad, *_) = ingest_jobs.pending_files(fast_settings, job_id)
    assert ingest_jobs.process_job_file(fast_settings, good).status == "ok"
    real = ingest_jobs.extract_pdf

    def half_imported(path, *args, **kwargs):
        raise NameError("name '_ndimage_api' is not defined")
    monkeypatch.setattr(ingest_jobs, "extract_pdf", half_imported)
    outcome = ingest_jobs.process_job_file(fast_settings, bad)
    assert (outcome.status, outcome.error_kind, outcome.job_finished) == ("failed", failures.INTERNAL, True)
    assert "NameError" in outcome.error
    monkeypatch.setattr(ingest_jobs, "extract_pdf", real)
    _finish(fast_settings, job_id)
    assert ingest_jobs.job_progress(fast_settings, job_id) == ("done", 2, 2)
    assert failures.retry_may_help(outcome.error_kind)


def test_a_file_task_killed_at_the_hard_limit_ends_its_file_and_its_job(demo_pdfs, fast_settings, monkeypatch):
    """An extraction stuck where the file's limit cannot interrupt it is killed by Celery at its hard
    limit, and the task never returns: the task's failure hook fails the file as timed out and
    finishes the job it was the last file of."""
    from celery.exceptions import TimeLimitExceeded

    from workers import tasks

    monkeypatch.setenv("FIGSEARCH_AUTO_INDEX", "false")
    job_id = ingest_jobs.prepare_job([demo_pdfs[0], demo_pdfs[1]], fast_settings)
    (good, *_), (stuck, *_) = ingest_jobs.pending_files(fast_settings, job_id)
    cfg = tasks.task_config(fast_settings)
    assert tasks.ingest_pdf(good, cfg)["status"] == "ok"
    tasks.ingest_pdf.on_failure(TimeLimitExceeded(40.5), "task-id", (stuck, cfg), {}, None)
    assert _kinds(fast_settings, job_id)[demo_pdfs[1].name] == ("failed", failures.TIMEOUT)
    assert ingest_jobs.job_progress(fast_settings, job_id) == ("done", 2, 2)
    assert "stopped after 40.5 s" in ingest_jobs.summarise(fast_settings, job_id).failures[0][1]


LIMIT_PROBE = """
import json, sys
from app.pipeline import ingest_jobs
from app.settings import Settings
from workers import tasks

settings = Settings(data_dir=sys.argv[1], broker_url="", database_url="", auto_index=False)
job_id = ingest_jobs.prepare_job([sys.argv[2]], settings)
(jf, *_), = ingest_jobs.pending_files(settings, job_id)
seen, active, real_within, real_record = {}, [], tasks.call_within, ingest_jobs.record_outcome

def within(seconds, fn):
    seen["loaded"] = [m for m in ("app.ingest.figures", "scipy.ndimage") if m in sys.modules]
    seen["layout_model"] = sys.modules.get("pymupdf.layout") is not None
    active.append(1)
    try:
        return real_within(seconds, fn)
    finally:
        active.pop()

def record(*args, **kwargs):
    seen["recorded_under_limit"] = bool(active)
    return real_record(*args, **kwargs)

tasks.call_within, ingest_jobs.record_outcome = within, record
seen["status"] = tasks.ingest_pdf(jf, tasks.task_config(settings))["status"]
print(json.dumps(seen))
"""


def test_a_workers_file_limit_starts_after_first_use_loads_and_ends_before_the_bookkeeping(demo_pdfs, tmp_path):
    """In a fresh worker process, the file's limit starts once the extractor's modules and the
    page-layout model are loaded (a limit striking inside an import can leave a package half
    initialised for every later file), and the outcome is recorded after the limit is over (one
    striking inside a commit can lose the outcome or the job's last step)."""
    import json
    import subprocess
    import sys

    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith("FIGSEARCH_")}
    r = subprocess.run([sys.executable, "-c", LIMIT_PROBE, str(tmp_path / "data"), str(demo_pdfs[0])],
                       cwd=Path(__file__).resolve().parents[1], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    seen = json.loads(r.stdout.strip().splitlines()[-1])
    assert seen == {"loaded": ["app.ingest.figures", "scipy.ndimage"], "layout_model": True,
                    "recorded_under_limit": False, "status": "ok"}, seen


@pytest.mark.timeout(60)
def test_a_file_limit_lost_on_its_way_is_raised_again():
    """A raise of the limit can be lost: raised inside a finaliser (`__del__` of a PDF object),
    Python prints it and goes on. It is raised again until it ends the limited call."""
    import time

    from workers.tasks import FileTimeLimit, call_within

    lost = []

    def loses_the_first():
        try:
            while True:
                time.sleep(0.01)
        except FileTimeLimit:
            lost.append(True)
        while True:
            time.sleep(0.01)
    with pytest.raises(FileTimeLimit):
        call_within(0.05, loses_the_first)
    assert lost == [True]


@pytest.mark.timeout(60)
def test_an_alarm_after_the_limited_call_disarms_itself_instead_of_raising():
    """The limit's alarm, when it comes after the limited call is over (between its end and the
    limit's own disarming), raises nothing into the work that follows (recording the outcome) and
    stops itself."""
    import signal

    from workers.tasks import call_within

    handler = []
    call_within(60, lambda: handler.append(signal.getsignal(signal.SIGALRM)))
    previous = signal.signal(signal.SIGALRM, handler[0])
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.01, 0.01)  # as if the limit struck just after the call
        while signal.getitimer(signal.ITIMER_REAL) != (0.0, 0.0):
            pass  # the work after the call
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
