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


def encrypted(folder: Path, _good: Path) -> Path:
    return badfiles.encrypted(folder)


def empty(folder: Path, _good: Path) -> Path:
    return badfiles.zero_byte(folder)


@pytest.mark.parametrize("make, limits, kind", [
    (text_named_pdf, Limits(), failures.NOT_PDF),
    (empty, Limits(), failures.NOT_PDF),
    (cut_after_100_bytes, Limits(), failures.DAMAGED),
    (encrypted, Limits(), failures.ENCRYPTED),
    (lambda folder, good: good, Limits(max_pages=1), failures.TOO_LARGE),
    (lambda folder, good: good, Limits(max_file_mb=0.001), failures.TOO_LARGE),
])
def test_a_bad_file_is_named_for_what_is_wrong_with_its_bytes(demo_pdfs, tmp_path, make, limits, kind):
    ex = extract_pdf(make(tmp_path, demo_pdfs[0]), tmp_path / "data", limits)
    assert (ex.status, ex.error_kind) == ("failed", kind), ex.error
    assert not failures.retry_may_help(ex.error_kind)


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
