"""Ingest jobs: files -> extraction (guarded, parallel) -> database, with per-file outcomes.

The same two functions do the work in every mode: `extract_pdf` (pure, in a worker process)
and `record_outcome` (one transaction: store the paper and mark the job file). Embedded mode
runs extraction in a local process pool with per-file timeouts; distributed mode hands the
job files to Celery workers. Which of the two runs a job is chosen outside this package
(app/dispatch.py), so the ingestion core never imports Celery.
"""
from __future__ import annotations

import datetime as dt
import fcntl
import logging
import os
import shutil
import threading
import time
from collections import Counter
from concurrent.futures import TimeoutError as FutureTimeout
from concurrent.futures import wait as wait_futures
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from sqlalchemy import func, select, update
from sqlalchemy.exc import IntegrityError, SQLAlchemyError
from sqlalchemy.orm import Session

from app.db.schema import IndexState, Job, JobFile, JobFileStatus, JobStatus
from app.db.session import session_scope
from app.pipeline.classify import classify_new
from app.ingest import failures
from app.ingest.extract import Extraction, Limits, extract_pdf, limit_memory, load_modules
from app.ingest.sources import EMPTY, ByteBudget, InputFile, SourceError, copy_to_shared, expand_inputs
from app.ingest.store import Outcome, store_extraction, stored_copy
from app.pdfs import file_sha256, store_pdf
from app.public_text import public_names
from app.settings import Settings

log = logging.getLogger(__name__)


def limits_from(settings: Settings) -> Limits:
    return Limits(max_pages=settings.max_pages, max_file_mb=settings.max_file_mb,
                  dpi=settings.figure_dpi, thumb_px=settings.thumbnail_px, ocr_threads=settings.ocr_threads)


def file_time_limit(settings: Settings, path: str) -> float:
    """Per-file limit: the base limit plus OCR time for each scanned page (OCR is slow)."""
    from app.ingest.scanned.detect import ocr_page_count

    return settings.file_timeout_s + settings.ocr_seconds_per_page * ocr_page_count(path, settings.max_pages)


def staging_dir(settings: Settings, job_id: str) -> Path:
    """Where a job's unpacked zip members (and, distributed, copies of outside files) live."""
    return settings.data_dir / "incoming" / job_id


def uploads_dir(settings: Settings, job_id: str) -> Path:
    """Where files uploaded through the API for a job are written (the upload area)."""
    return settings.data_dir / "uploads" / job_id


def upload_area_bytes(settings: Settings) -> int:
    """Disk used by pending uploads and unpacked zips (what the upload quota bounds)."""
    return dir_bytes(settings.data_dir / "uploads", settings.data_dir / "incoming")


def dir_bytes(*dirs: Path) -> int:
    """Bytes of the files below `dirs` (files that vanish meanwhile count 0)."""
    total = 0
    for top in dirs:
        for root, _dirs, names in os.walk(top):
            for n in names:
                try:
                    total += os.lstat(os.path.join(root, n)).st_size
                except OSError:
                    pass
    return total


class JobLock:
    """An exclusive lock file per job (data_dir/locks/<job>.lock) held by the process that runs
    it in embedded mode. The OS releases it when that process dies, even by SIGKILL, so a
    running job whose lock is free has lost its process."""

    def __init__(self, settings: Settings, job_id: str):
        self.path = settings.data_dir / "locks" / f"{job_id}.lock"
        self._fd: int | None = None

    def acquire(self) -> bool:
        if self._fd is not None:
            return True
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return False
        self._fd = fd
        return True

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


# ---------------------------------------------------------------- jobs
def create_job(settings: Settings, files: list[InputFile], job_id: str, kind: str = "ingest") -> str:
    """Record a job and its files; files refused up front are finished at once, and so is a copy of
    an earlier file of the job (same bytes): it is that file's duplicate, never read itself. Both
    copies extracted at once would write the same crop folder (named by the hash) together."""
    shown = dict(zip((f.name for f in files), public_names(settings, job_id, [f.name for f in files])))
    first_of: dict[str, str] = {}  # sha256 -> name of the job's first file with these bytes
    with session_scope(settings.db_url) as s:
        job = Job(id=job_id, kind=kind, status=JobStatus.QUEUED, total=len(files))
        s.add(job)
        s.flush()
        for f in files:
            jf = JobFile(job_id=job.id, name=f.name, path=f.path, sha256=None if f.error else _sha_or_none(f.path))
            if f.error:
                jf.status, jf.error, jf.finished_at = ("skipped" if f.skipped else "failed"), f.error, _now()
                jf.error_kind = None if f.skipped else f.error_kind
                job.done += 1
            elif jf.sha256 in first_of:
                jf.status, jf.finished_at = "duplicate", _now()
                jf.error = f"same file as {shown[first_of[jf.sha256]]}, earlier in this job"
                job.done += 1
            elif jf.sha256:
                first_of[jf.sha256] = f.name
            s.add(jf)
        if job.total == 0 or job.done == job.total:  # no file to read: no paper to add
            job.status, job.finished_at, job.index_state = JobStatus.DONE, _now(), IndexState.UNCHANGED
        return job.id


def _sha_or_none(path: str) -> str | None:
    try:
        return file_sha256(path)
    except OSError:
        return None  # the extraction reports what is wrong with the file


def pending_files(settings: Settings, job_id: str) -> list[tuple[int, str, str, str | None]]:
    """The job's files still to read (id, name, path, sha256 when known), waiting or in work when
    the job's process stopped. The sha256 was taken when the job was recorded, so extraction does
    not read the file a second time for it."""
    with session_scope(settings.db_url) as s:
        rows = s.execute(select(JobFile.id, JobFile.name, JobFile.path, JobFile.sha256)
                         .where(JobFile.job_id == job_id, JobFile.status.in_(JobFileStatus.UNFINISHED))
                         .order_by(JobFile.id))
        return [tuple(r) for r in rows]


def job_file_ref(settings: Settings, job_file_id: int) -> tuple[str, str] | None:
    """(job id, file name) of a job file, or None."""
    with session_scope(settings.db_url) as s:
        row = s.execute(select(JobFile.job_id, JobFile.name).where(JobFile.id == job_file_id)).first()
        return tuple(row) if row else None


def is_unfinished(settings: Settings, job_file_id: int) -> bool:
    with session_scope(settings.db_url) as s:
        return s.scalar(select(JobFile.status).where(JobFile.id == job_file_id)) in JobFileStatus.UNFINISHED


def mark_working(settings: Settings, job_file_ids: list[int]) -> None:
    """These files are being read now (the admin sees which; waiting ones stay pending)."""
    if job_file_ids:
        with session_scope(settings.db_url) as s:
            s.execute(update(JobFile).where(JobFile.id.in_(job_file_ids), JobFile.status == JobFileStatus.PENDING)
                      .values(status=JobFileStatus.WORKING))


def unfinished_jobs(settings: Settings,
                    statuses=(JobStatus.QUEUED, JobStatus.RUNNING, JobStatus.INDEXING)) -> list[str]:
    """Jobs with work left: pending files, or the steps after their last file (e.g. the embedded
    server was restarted mid-job)."""
    with session_scope(settings.db_url) as s:
        rows = s.execute(select(Job.id).where(Job.status.in_(list(statuses)))
                         .order_by(Job.created_at)).scalars().all()
        return list(rows)


def orphaned_jobs(settings: Settings) -> list[str]:
    """Embedded mode: queued or running jobs whose process has died (their lock is free)."""
    out = []
    for job_id in unfinished_jobs(settings):
        lock = JobLock(settings, job_id)
        if lock.acquire():
            lock.release()
            out.append(job_id)
    return out


def mark_interrupted(settings: Settings, job_id: str, reason: str) -> None:
    """The job's process stopped before its last file: its unfinished files are pending again, to
    be finished by `figsearch ingest --resume JOB`."""
    with session_scope(settings.db_url) as s:
        s.execute(update(JobFile).where(JobFile.job_id == job_id, JobFile.status == JobFileStatus.WORKING)
                  .values(status=JobFileStatus.PENDING))
        s.execute(update(Job).where(Job.id == job_id, Job.status.not_in(JobStatus.FINISHED))
                  .values(status=JobStatus.INTERRUPTED, error=reason[:2000]))


def clean_leftovers(settings: Settings, min_age_s: float = 600.0) -> tuple[int, int]:
    """Remove upload and staging folders no unfinished job needs: those of finished jobs, and
    those without a job once untouched for `min_age_s` (an upload still streaming in another
    process has no job yet, but fresh files). Lock files of finished jobs go too.
    Returns (folders removed, bytes freed)."""
    removed = freed = 0
    with session_scope(settings.db_url) as s:
        status = dict(s.execute(select(Job.id, Job.status)).all())
        kept = _kept_for_retry(settings, s)
    now = time.time()

    def newest(d: Path) -> float:
        return max([d.stat().st_mtime] + [(Path(r) / n).stat().st_mtime
                                          for r, _d, names in os.walk(d) for n in names])

    for area, keep_done in (("uploads", settings.keep_uploads), ("incoming", False)):
        top = settings.data_dir / area
        if not top.is_dir():
            continue
        for d in top.iterdir():
            try:
                st = status.get(d.name)
                finished = st in JobStatus.FINISHED
                stale_orphan = st is None and now - newest(d) > min_age_s
                if (finished and not keep_done) or stale_orphan:
                    size = _remove_except(d, kept.get(d.name, set()))
                    removed, freed = removed + (not d.exists()), freed + size
            except (OSError, SQLAlchemyError):
                log.exception("could not clean %s", d)
    locks = settings.data_dir / "locks"
    if locks.is_dir():
        for f in locks.glob("*.lock"):
            if status.get(f.stem) in JobStatus.FINISHED or f.stem not in status:
                lock = JobLock(settings, f.stem)
                if lock.acquire():
                    f.unlink(missing_ok=True)
                    lock.release()
    return removed, freed


def mark_running(settings: Settings, job_id: str) -> None:
    with session_scope(settings.db_url) as s:
        s.execute(update(Job).where(Job.id == job_id, Job.status.in_([JobStatus.QUEUED, JobStatus.INTERRUPTED]))
                  .values(status=JobStatus.RUNNING, started_at=func.coalesce(Job.started_at, _now())))


def claim_delivery(settings: Settings, job_file_id: int) -> Outcome | None:
    """Count one more delivery of a job file to a worker. A file delivered more than
    `settings.max_deliveries` times has killed every worker that took it (a task is only
    redelivered when its worker died): it is marked failed, in the same transaction, and that
    outcome returned; otherwise None (go ahead)."""
    with session_scope(settings.db_url) as s:
        n = s.execute(update(JobFile).where(JobFile.id == job_file_id, JobFile.status.in_(JobFileStatus.UNFINISHED))
                      .values(deliveries=JobFile.deliveries + 1).returning(JobFile.deliveries)).scalar()
        if n is None or n <= settings.max_deliveries:
            return None
        return _record(s, job_file_id, None, f"worker crashed {n - 1} times while extracting this file "
                                             "(killed, out of memory or a crash in the PDF library); not retried",
                       failures.CRASHES_WORKER)


def record_outcome(settings: Settings, job_file_id: int, ex: Extraction | None, error: str = "",
                   error_kind: str = failures.INTERNAL) -> Outcome:
    """Store one file's result and mark its job file, in one transaction (so a redelivered
    task sees either both or neither). Idempotent: a finished job file is left alone. Without an
    extraction, `error` says why it failed and `error_kind` names that (app/ingest/failures.py)."""
    for attempt in range(3):
        try:
            with session_scope(settings.db_url) as s:
                outcome = _record(s, job_file_id, ex, error, error_kind)
                source = s.get(JobFile, job_file_id).path
            break
        except IntegrityError:  # a concurrent worker stored the same sha256 first: retry sees it
            if attempt == 2:
                raise
    if ex is not None and outcome.status == "ok":
        _keep_pdf(settings, source, ex.sha256)
    return outcome


def _keep_pdf(settings: Settings, source: str, sha256: str) -> None:
    """The paper's own copy of its PDF (for 'open in PDF' and high-resolution crops); a copy that
    fails is logged: the figures are stored either way."""
    try:
        store_pdf(settings.data_dir, Path(source), sha256)
    except (OSError, ValueError) as exc:
        log.warning("could not keep the PDF of paper %s: %s", sha256[:12], exc)


def record_stored_copy(settings: Settings, job_file_id: int) -> Outcome | None:
    """Finish a pending job file whose bytes are those of a stored paper as its duplicate, before
    any extraction, and return that outcome (None otherwise: extract it). Extracting it would cost a
    full read for nothing and rewrite the stored paper's crops, whose folder is named by the same
    hash, in place: missing while it runs, and lost if that extraction then failed. Bookkeeping,
    not extraction: callers run it outside the file's time limit."""
    with session_scope(settings.db_url) as s:
        jf = s.get(JobFile, job_file_id)
        if jf is None or jf.status not in JobFileStatus.UNFINISHED:
            return None
        path, sha = jf.path, jf.sha256
    sha = sha or _sha_or_none(path)
    if sha is None:
        return None
    with session_scope(settings.db_url) as s:
        copy = stored_copy(s, sha)
        return None if copy is None else _record(s, job_file_id, None, "", known=copy)


def _record(s: Session, job_file_id: int, ex: Extraction | None, error: str,
            error_kind: str = failures.INTERNAL, known: Outcome | None = None) -> Outcome:
    jf = s.get(JobFile, job_file_id, with_for_update=True)
    if jf is None:
        raise LookupError(f"job file {job_file_id} not found")
    if jf.status not in JobFileStatus.UNFINISHED:
        return Outcome(jf.status, jf.paper_id, jf.n_figures, jf.error, error_kind=jf.error_kind)
    if known is not None:
        outcome = known
    elif ex is None:
        outcome = Outcome("failed", None, 0, error or "unknown error", error_kind=error_kind)
    else:
        outcome = store_extraction(s, ex)
    jf.status, jf.paper_id, jf.n_figures, jf.error = outcome.status, outcome.paper_id, outcome.n_figures, outcome.error
    jf.error_kind = outcome.error_kind if outcome.status == "failed" else None
    jf.finished_at = _now()
    if jf.sha256 and outcome.paper_id is not None and outcome.status != "failed":  # its copies in the job
        s.execute(update(JobFile).where(JobFile.job_id == jf.job_id, JobFile.sha256 == jf.sha256,
                                        JobFile.id != jf.id, JobFile.status == "duplicate")
                  .values(paper_id=outcome.paper_id))
    s.flush()
    s.execute(update(Job).where(Job.id == jf.job_id).values(done=Job.done + 1))
    job = s.get(Job, jf.job_id, populate_existing=True)
    if job.done >= job.total and job.status not in (JobStatus.INDEXING, JobStatus.DONE):
        # done only once its papers are searchable: `after_ingest` says so
        job.status, job.index_state = JobStatus.INDEXING, IndexState.BUILDING
        outcome.job_finished = True
    return outcome


def process_job_file(settings: Settings, job_file_id: int,
                     within_limit: Callable[[Callable[[], Extraction]], Extraction] = lambda extract: extract()
                     ) -> Outcome:
    """Worker side of one file: extract, through `within_limit` (which calls the extraction under
    the file's time limit), then record. Only the extraction runs under the limit: it may strike
    anywhere, and in the database work it could leave a transaction or the job's last step half
    done. An error the extractor's own guards let through (its first-use imports, an unreadable
    path) fails the file too, so its job still ends; what the limit raises is the caller's to record."""
    with session_scope(settings.db_url) as s:
        jf = s.get(JobFile, job_file_id)
        if jf is None:
            raise LookupError(f"job file {job_file_id} not found")
        if jf.status not in JobFileStatus.UNFINISHED:
            return Outcome(jf.status, jf.paper_id, jf.n_figures, jf.error, error_kind=jf.error_kind)
        path, name, sha = jf.path, jf.name, jf.sha256
        jf.status = JobFileStatus.WORKING
    load_modules()  # once per process (a worker's pool process did when it started), never under a limit
    try:
        ex = within_limit(lambda: extract_pdf(path, settings.data_dir, limits_from(settings),
                                              source=Path(name).name, sha256=sha))
    except FileNotFoundError:
        return record_outcome(settings, job_file_id, None, "file vanished before it was read", failures.MISSING)
    except Exception as exc:
        log.exception("extraction of job file %s failed outside the extractor's guards", job_file_id)
        return record_outcome(settings, job_file_id, None, f"extraction error: {type(exc).__name__}: {exc}",
                              failures.INTERNAL)
    return record_outcome(settings, job_file_id, ex)


def finish_job(settings: Settings, job_id: str) -> list[int]:
    """After the last file: re-evaluate citation links (concurrent ingests miss each other) and
    remove the job's staging files. Returns the job's new papers, for `after_ingest`."""
    from app.ingest.store import relink_all

    with session_scope(settings.db_url) as s:
        relink_all(s)
        s.execute(update(Job).where(Job.id == job_id, Job.status.in_([JobStatus.QUEUED, JobStatus.RUNNING]))
                  .values(status=JobStatus.INDEXING, index_state=IndexState.BUILDING))
        # the papers of this run (a retried job's earlier runs indexed theirs)
        new_papers = [pid for (pid,) in s.execute(select(JobFile.paper_id).join(Job, Job.id == JobFile.job_id).where(
            JobFile.job_id == job_id, JobFile.status == "ok", JobFile.paper_id.is_not(None),
            JobFile.run == Job.run))]
    remove_job_files(settings, job_id)
    return new_papers


def needs_collection_work(settings: Settings, paper_ids: list[int]) -> bool:
    """Whether a finished job calls for `after_ingest`: only when it added papers to the collection
    (a job whose files all failed or repeated stored papers changes nothing searchable, so it must
    not publish a new index version), and only with FIGSEARCH_AUTO_INDEX."""
    return settings.auto_index and bool(paper_ids)


def after_ingest(settings: Settings, paper_ids: list[int], job_id: str | None = None) -> None:
    """The collection-wide steps after a job: figure types and central scores of its papers, then a
    new index version. They grow with the collection, so workers run them as a task of their own;
    without FIGSEARCH_AUTO_INDEX, `figsearch index` types the figures before it builds. The job
    (`job_id`) is done when they are over, with what they came to (`Job.index_state`): its status
    never says done while its papers are not searchable yet."""
    if not needs_collection_work(settings, paper_ids):
        state = IndexState.OFF if paper_ids else IndexState.UNCHANGED
        mark_done(settings, job_id, state)
        return
    try:
        classify_new(settings, paper_ids)
        score_central(settings, paper_ids)
        version, error = refresh_index(settings)
    except Exception as exc:  # each step logs its own failures; this is the unforeseen one
        log.exception("the steps after job %s failed", job_id)
        version, error = None, f"{type(exc).__name__}: {exc}"
    # stopped by a signal, it stays `indexing`: a resumed job runs these steps again
    mark_done(settings, job_id, IndexState.PUBLISHED if version else IndexState.FAILED, version, error)


def mark_done(settings: Settings, job_id: str | None, state: str, version: str | None = None,
              error: str = "") -> None:
    """The job is over: its files are read and the steps after them came to `state`."""
    if job_id is None:
        return
    with session_scope(settings.db_url) as s:
        s.execute(update(Job).where(Job.id == job_id, Job.status != JobStatus.FAILED)
                  .values(status=JobStatus.DONE, finished_at=_now(), index_state=state, index_version=version,
                          index_error=error[:2000]))


def remove_job_files(settings: Settings, job_id: str) -> None:
    """A finished job's staging copies and (unless FIGSEARCH_KEEP_UPLOADS) its uploads, but for the
    files that failed: kept for a retry (`retry_job`) for FIGSEARCH_KEEP_FAILED_HOURS, after which
    `clean_leftovers` removes them."""
    with session_scope(settings.db_url) as s:
        keep = _kept_for_retry(settings, s, job_id).get(job_id, set())
    _remove_except(staging_dir(settings, job_id), keep)
    if not settings.keep_uploads:
        _remove_except(uploads_dir(settings, job_id), keep)


def _kept_for_retry(settings: Settings, s: Session, job_id: str | None = None) -> dict[str, set[Path]]:
    """Job id -> the paths of its failed files still kept for a retry (job finished, or still
    running, less than FIGSEARCH_KEEP_FAILED_HOURS ago)."""
    if settings.keep_failed_hours <= 0:
        return {}
    since = _now() - dt.timedelta(hours=settings.keep_failed_hours)
    q = (select(JobFile.job_id, JobFile.path).join(Job, Job.id == JobFile.job_id)
         .where(JobFile.status == "failed", JobFile.path != "",
                (Job.finished_at.is_(None)) | (Job.finished_at > since)))
    if job_id is not None:
        q = q.where(JobFile.job_id == job_id)
    out: dict[str, set[Path]] = {}
    for jid, path in s.execute(q):
        out.setdefault(jid, set()).add(Path(path))
    return out


def _remove_except(top: Path, keep: set[Path]) -> int:
    """Remove `top` but for the files `keep` (and the folders holding them); returns the bytes freed."""
    if not top.exists():
        return 0
    if not top.is_dir():
        size = top.stat().st_size
        top.unlink()
        return size
    freed = 0
    for root, dirs, names in os.walk(top, topdown=False):
        for n in names:
            p = Path(root) / n
            if p in keep:
                continue
            try:
                freed += p.lstat().st_size
                p.unlink()
            except OSError:
                pass
        for d in dirs:
            try:
                (Path(root) / d).rmdir()  # only when empty: it holds no kept file
            except OSError:
                pass
    try:
        top.rmdir()
    except OSError:
        pass
    return freed


def retryable_paths(settings: Settings, paths: list[str]) -> set[str]:
    """Of the paths of failed files, those whose bytes are still there to read again."""
    return {p for p in paths if p and Path(p).is_file()}


class NothingToRetry(Exception):
    """The job is running, or has neither a failed file kept nor unfinished work; `held_back`
    counts the kept files left out for failing for their own bytes (each front end says how to
    ask for them)."""

    def __init__(self, message: str, held_back: int = 0):
        super().__init__(message)
        self.held_back = held_back


def retry_job(settings: Settings, job_id: str, file_ids: list[int] | None = None,
              include_file_errors: bool = False) -> int:
    """Make a finished (or interrupted) job's failed files pending again, so that running the job
    reads them again, in any mode: those of `file_ids`, whatever they failed for (asked by name),
    or else those whose bytes are kept and whose failure a retry may fix (app/ingest/failures.py);
    with `include_file_errors`, also those that failed for their own bytes (after an upgrade of
    the PDF library or a raised limit). Files still unfinished (an interrupted job) run too, and a
    job whose index build failed builds again. Returns the number of failed files made pending;
    raises LookupError for an unknown job and NothingToRetry when there is nothing to run."""
    with session_scope(settings.db_url) as s:
        job = s.get(Job, job_id, with_for_update=True)
        if job is None:
            raise LookupError(job_id)
        if job.status in (JobStatus.QUEUED, JobStatus.RUNNING, JobStatus.INDEXING):
            raise NothingToRetry(f"job {job_id} is {job.status}: wait for it to end")
        failed = [jf for jf in job.files if jf.status == "failed" and (file_ids is None or jf.id in file_ids)]
        if file_ids is not None and len(failed) != len(set(file_ids)):
            raise NothingToRetry("only failed files of this job can be retried")
        kept = retryable_paths(settings, [jf.path for jf in failed])
        again = [jf for jf in failed if jf.path in kept]
        held_back = []
        if file_ids is None and not include_file_errors:
            held_back = [jf for jf in again if not failures.retry_may_help(jf.error_kind)]
            again = [jf for jf in again if failures.retry_may_help(jf.error_kind)]
        if file_ids is not None and len(again) != len(failed):
            raise NothingToRetry("the file is no longer kept (it failed more than FIGSEARCH_KEEP_FAILED_HOURS ago, "
                                 "or was refused before it was stored): upload it again")
        unfinished = any(jf.status in JobFileStatus.UNFINISHED for jf in job.files)
        if not again and not unfinished and job.index_state != IndexState.FAILED and held_back:
            raise NothingToRetry(f"nothing to retry but {len(held_back)} kept file(s) that failed for their own "
                                 "bytes (not a PDF, encrypted, damaged, over a limit): reading them again fails "
                                 "the same way; to read them anyway (after an upgrade or a raised limit), ask for "
                                 "them explicitly", held_back=len(held_back))
        if not again and not unfinished and job.index_state != IndexState.FAILED:
            raise NothingToRetry("nothing to retry: no failed file of this job is kept (a file refused before it "
                                 "was stored, or failed more than FIGSEARCH_KEEP_FAILED_HOURS ago, must be "
                                 "uploaded again)")
        # what this run reads is typed, scored and indexed after it; so are the papers of earlier runs
        # when their steps never ended (an interrupted job) or failed
        not_indexed = job.index_state not in (IndexState.PUBLISHED, IndexState.UNCHANGED, IndexState.OFF)
        job.run += 1
        for jf in job.files:
            if jf in again or jf.status in JobFileStatus.UNFINISHED or (not_indexed and jf.status == "ok"):
                jf.run = job.run
        for jf in again:
            jf.status, jf.error, jf.error_kind, jf.paper_id, jf.n_figures = JobFileStatus.PENDING, "", None, None, 0
            jf.finished_at, jf.deliveries = None, 0
        job.done -= len(again)
        job.status, job.finished_at, job.error = JobStatus.QUEUED, None, ""
        job.index_state, job.index_version, job.index_error = None, None, ""
        return len(again)


def score_central(settings: Settings, paper_ids: list[int]) -> None:
    """Central-figure scores for new papers; a failure is logged and never loses the ingest."""
    if not paper_ids:
        return
    try:
        from app.central.scoring import score_papers

        score_papers(settings, paper_ids)
    except Exception:
        log.exception("central-figure scoring failed for papers %s", paper_ids[:10])


def refresh_index(settings: Settings) -> tuple[str | None, str]:
    """Publish a new search index version: (its name, "") or, when it failed, (None, why). Failures
    are logged, never lose the ingest: the previous version stays in use."""
    from app.pipeline.indexing import build_index

    try:
        report = build_index(settings, dense=settings.dense)
    except Exception as exc:
        log.exception("index refresh failed; the previous index version stays in use")
        return None, f"{type(exc).__name__}: {exc}"
    log.info("index %s: %d figures (%d newly embedded; %s, %d segments)", report.version, report.n_figures,
             report.n_encoded, report.how, report.n_segments)
    return report.version, ""


# ---------------------------------------------------------------- embedded runner
def run_job_embedded(settings: Settings, job_id: str, workers: int = 2,
                     on_file: Callable[[str, Outcome], None] | None = None) -> None:
    """Extract in a local process pool (per-file timeout, memory cap, children recycled),
    store results from this process as they arrive."""
    from pebble import ProcessPool

    files = pending_files(settings, job_id)
    mark_running(settings, job_id)
    limits = limits_from(settings)
    import multiprocessing

    # spawn, not fork: the caller may be a server with torch and threads loaded
    # the children run functions of app.ingest.extract, so they need not import this module (the
    # database layer, settings, figure types) to start
    children_before = set(multiprocessing.active_children())
    # no more processes than files: the pool starts all of them at once, and each costs its start-up
    pool = ProcessPool(max_workers=max(1, min(workers, len(files))), max_tasks=25, initializer=limit_memory,
                       initargs=(settings.worker_memory_mb,), context=multiprocessing.get_context("spawn"))
    try:
        futures = []
        for jf_id, name, path, sha in files:
            copy = record_stored_copy(settings, jf_id)
            if copy is not None:
                if on_file:
                    on_file(name, copy)
                continue
            limit = file_time_limit(settings, path)
            futures.append((jf_id, name, limit, pool.schedule(
                extract_pdf, args=(path, str(settings.data_dir), limits),
                kwargs={"source": Path(name).name, "sha256": sha}, timeout=limit)))
        _collect(settings, futures, on_file)
    except BaseException:  # Ctrl-C / SIGTERM: do not wait for files in flight
        _abandon(pool, kill=set(multiprocessing.active_children()) - children_before)
        raise
    pool.close()
    pool.join()
    after_ingest(settings, finish_job(settings, job_id), job_id)


def _abandon(pool, kill: set, wait_s: float = 10.0) -> None:
    """Stop an interrupted pool without waiting on it: its extraction processes (`kill`) are killed
    first (a process killed while holding the pool's result pipe can leave the pool's own join
    waiting forever), then the pool is stopped in a daemon thread given `wait_s` seconds."""
    pool.stop()
    for child in kill:
        child.kill()
    stopper = threading.Thread(target=pool.join, name="stop-extraction-pool", daemon=True)
    stopper.start()
    stopper.join(wait_s)
    if stopper.is_alive():
        log.warning("the extraction pool did not stop within %.0f s; leaving it to process exit", wait_s)


def _collect(settings: Settings, futures: list, on_file: Callable[[str, Outcome], None] | None) -> None:
    from pebble import ProcessExpired

    waiting = {f[0]: f[3] for f in futures}
    for jf_id, name, limit, fut in futures:
        while not fut.done():  # wake up often: a SIGTERM taken by another thread is handled here
            mark_working(settings, [i for i, f in waiting.items() if f.running()])
            waiting = {i: f for i, f in waiting.items() if not (f.running() or f.done())}
            wait_futures([fut], timeout=0.5)
        try:
            outcome = record_outcome(settings, jf_id, fut.result())
        except FutureTimeout:
            outcome = record_outcome(settings, jf_id, None, f"timed out after {limit:g} s", failures.TIMEOUT)
        except ProcessExpired as exc:
            outcome = record_outcome(settings, jf_id, None, f"extraction process died ({exc}); "
                                     "memory limit or crash in the PDF library", failures.WORKER_LOST)
        except MemoryError:
            outcome = record_outcome(settings, jf_id, None, "out of memory (worker memory limit)",
                                     failures.OUT_OF_MEMORY)
        except FileNotFoundError:
            outcome = record_outcome(settings, jf_id, None, "file vanished before it was read", failures.MISSING)
        except Exception as exc:
            outcome = record_outcome(settings, jf_id, None, f"{type(exc).__name__}: {exc}", failures.INTERNAL)
        if on_file:
            on_file(name, outcome)


# ---------------------------------------------------------------- entry point for CLI / API
@dataclass
class JobSummary:
    job_id: str
    counts: Counter = field(default_factory=Counter)
    n_figures: int = 0
    failures: list[tuple[str, str, str | None]] = field(default_factory=list)  # name, error, kind


def summarise(settings: Settings, job_id: str) -> JobSummary:
    summary = JobSummary(job_id)
    with session_scope(settings.db_url) as s:
        for jf in s.scalars(select(JobFile).where(JobFile.job_id == job_id).order_by(JobFile.id)):
            summary.counts[jf.status] += 1
            if jf.status in ("ok", "no_text"):
                summary.n_figures += jf.n_figures
            if jf.status == "failed":
                summary.failures.append((jf.name, jf.error, failures.kind_shown(jf.status, jf.error_kind)))
    return summary


def prepare_job(paths: list[str | Path], settings: Settings, job_id: str | None = None,
                quota_bytes: int | None = None, skipped: list[InputFile] | None = None) -> str:
    """Expand the inputs and record the job. Raises SourceError on a missing path, and when the
    inputs hold no PDF at all (only empty files, non-PDF zip members, nested zips, empty
    archives): such a request is a mistake, not a job. `job_id` lets a caller name its upload
    folder after the job before the job exists; `quota_bytes` bounds what unpacking zips may
    write; `skipped` are files left out before (uploads of another type), listed in the job after
    the others."""
    from app.db.schema import new_job_id

    settings.ensure_dirs()
    job_id = job_id or new_job_id()
    staging = staging_dir(settings, job_id)
    files = expand_inputs(paths, settings, staging, ByteBudget(quota_bytes) if quota_bytes is not None else None)
    files += skipped or []
    if all(f.skipped or f.error == EMPTY for f in files):  # nothing a job could read: a mistake
        shutil.rmtree(staging, ignore_errors=True)
        skipped = "; ".join(f"{f.name}: {f.error}" for f in files[:5]) + ("; ..." if len(files) > 5 else "")
        raise SourceError("no PDF found" + (f" ({skipped})" if skipped else " in the given paths"))
    if settings.distributed:
        files = copy_to_shared(files, staging, settings.data_dir)
    return create_job(settings, files, job_id=job_id)


def job_progress(settings: Settings, job_id: str) -> tuple[str, int, int]:
    with session_scope(settings.db_url) as s:
        job = s.get(Job, job_id)
        if job is None:
            raise LookupError(job_id)
        return job.status, job.done, job.total

