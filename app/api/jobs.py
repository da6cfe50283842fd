"""Background work started by admin requests: ingest jobs and index refreshes.

One worker thread per app, so jobs and refreshes run one at a time (two concurrent index builds
would race on the embedding cache). In embedded mode the thread runs the job itself
(`run_job_embedded`, a process pool); in distributed mode the dispatcher (app/dispatch.py) only
enqueues to Celery and returns at once.
"""
from __future__ import annotations

import datetime as dt
import logging
import re
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Callable

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from app.db.schema import Figure, Job, JobStatus, Paper, in_collection
from app.db.session import session_scope
from app.dispatch import dispatcher_for
from app.ingest import failures
from app.pipeline import ingest_jobs
from app.pipeline.ingest_jobs import JobLock
from app.public_text import public_names, public_text
from app.settings import Settings

log = logging.getLogger(__name__)


_UNSAFE = re.compile(r"[^A-Za-z0-9._ ()\[\]+-]+")


def safe_filename(name: str, default: str = "upload") -> str:
    """The last path component, with anything odd replaced (never empty, never a dot name)."""
    base = re.split(r"[\\/]", name or "")[-1]
    base = _UNSAFE.sub("_", base).strip(" .")[:150]
    return base or default


def file_rows(settings: Settings, db: Session, job: Job) -> list[dict]:
    """Per-file results of a job, shared by the admin API and `figsearch jobs` so both show the
    same names and counts. A failed file is `retryable` while its bytes are kept and its job is not
    running; its `error_kind` names why it failed and `retry_may_help` whether a retry may succeed
    with nothing changed (app/ingest/failures.py: not when its own bytes are at fault). Figures and
    tables are those of the paper the file added (status ok or no_text), counted in the database;
    0 for duplicates, failures and pending files. A file whose paper was deleted since keeps its
    recorded figure count (tables unknown: 0). A duplicate names the paper it duplicates
    (`duplicate_of`): the stored copy of the same file, or the earlier paper of the same title."""
    files = list(job.files)
    dup_ids = {f.paper_id for f in files if f.paper_id is not None and f.status == "duplicate"}
    originals: dict[int, int | None] = {}
    if dup_ids:  # a same-title duplicate has its own row pointing at the original; a same file is the original
        originals = dict(db.execute(select(Paper.id, Paper.duplicate_of_id).where(Paper.id.in_(dup_ids))).all())
    added = ("ok", "no_text")
    ids = {f.paper_id for f in files if f.paper_id is not None and f.status in added}
    counts: dict[tuple[int, str], int] = {}
    present: set[int] = set()
    if ids:
        for pid, kind, n in db.execute(select(Figure.paper_id, Figure.kind, func.count())
                                       .where(Figure.paper_id.in_(ids)).group_by(Figure.paper_id, Figure.kind)):
            counts[(pid, kind)] = n
        present = set(db.scalars(select(Paper.id).where(Paper.id.in_(ids))))
    names = public_names(settings, job.id, [f.name for f in files])
    running = job.status in (JobStatus.QUEUED, JobStatus.RUNNING, JobStatus.INDEXING)
    kept = set() if running else ingest_jobs.retryable_paths(settings, [f.path for f in files if f.status == "failed"])
    rows = []
    for f, name in zip(files, names):
        n_fig = n_tab = 0
        if f.status in added:  # a copy of a file of the job has its paper too, and counts nothing
            if f.paper_id in present:
                n_fig, n_tab = counts.get((f.paper_id, "figure"), 0), counts.get((f.paper_id, "table"), 0)
            else:
                n_fig = f.n_figures
        dup_of = None
        if f.status == "duplicate" and f.paper_id in originals:
            dup_of = originals[f.paper_id] or f.paper_id
        rows.append({"file_id": f.id, "name": name, "status": f.status, "paper_id": f.paper_id, "n_figures": n_fig,
                     "n_tables": n_tab, "error": public_text(settings, f.error or ""),
                     "duplicate_of": dup_of, "retryable": f.status == "failed" and f.path in kept,
                     "error_kind": failures.kind_shown(f.status, f.error_kind),
                     "retry_may_help": failures.retry_may_help(f.error_kind) if f.status == "failed" else None})
    return rows


def job_searchable(db: Session, job: Job, engine) -> bool | None:
    """Whether every figure and table of the papers the job added to the collection is in `engine`
    (the index version this server serves; None: none loaded); None when it added none. Read from
    the index itself, so it holds however the papers got there (after the job, or a later rebuild)."""
    ids = {f.paper_id for f in job.files if f.status == "ok" and f.paper_id is not None}
    if not ids:
        return None
    figure_ids = db.scalars(select(Figure.id).join(Paper, Paper.id == Figure.paper_id)
                            .where(Figure.paper_id.in_(ids), in_collection())).all()
    if not figure_ids:
        return None
    return engine is not None and all(fid in engine for fid in figure_ids)


def mark_failed(settings: Settings, job_id: str, error: str) -> None:
    with session_scope(settings.db_url) as s:
        s.execute(update(Job).where(Job.id == job_id, Job.status != JobStatus.DONE)
                  .values(status=JobStatus.FAILED, error=error[:2000],
                          finished_at=dt.datetime.now(dt.timezone.utc)))


class JobRunner:
    def __init__(self, settings: Settings, on_index_change: Callable[[], None] | None = None):
        self.settings = settings
        self.on_index_change = on_index_change
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="figsearch-job")

    def submit_ingest(self, job_id: str, lock: JobLock | None = None) -> Future:
        """Run (embedded) or enqueue (distributed) a job. Embedded jobs hold their lock while
        they run, so another process can tell a live job from an orphaned one; a lock already
        taken by the caller (the upload route) is handed over."""
        if lock is None and not self.settings.distributed:
            lock = JobLock(self.settings, job_id)
            if not lock.acquire():
                log.info("job %s is run by another process", job_id)
                return self._pool.submit(lambda: None)
        return self._pool.submit(self._ingest, job_id, lock)

    def _ingest(self, job_id: str, lock: JobLock | None) -> None:
        s = self.settings
        try:
            dispatcher_for(s)(job_id)  # the job removes its uploads when its last file is done
        except Exception as exc:
            log.exception("ingest job %s failed", job_id)
            mark_failed(s, job_id, f"{type(exc).__name__}: {exc}")
            if not s.distributed:  # nothing else will read its files
                ingest_jobs.remove_job_files(s, job_id)
        finally:
            if lock is not None:
                lock.release()
        if not s.distributed and s.auto_index:
            self._notify()

    def submit_reindex(self) -> Future:
        return self._pool.submit(self._reindex)

    def _reindex(self) -> None:
        ingest_jobs.refresh_index(self.settings)  # logs failures, keeps the previous version
        self._notify()

    def _notify(self) -> None:
        if self.on_index_change is not None:
            try:
                self.on_index_change()
            except Exception:
                log.exception("index change callback failed")

    def shutdown(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
