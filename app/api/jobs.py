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
import shutil
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Callable

from sqlalchemy import update

from app.db.schema import Job, JobStatus
from app.db.session import session_scope
from app.dispatch import dispatcher_for
from app.ingest import pipeline
from app.settings import Settings

log = logging.getLogger(__name__)


def uploads_dir(settings: Settings, job_id: str) -> Path:
    return settings.data_dir / "uploads" / job_id


_UNSAFE = re.compile(r"[^A-Za-z0-9._ ()\[\]+-]+")


def safe_filename(name: str, default: str = "upload") -> str:
    """The last path component, with anything odd replaced (never empty, never a dot name)."""
    base = re.split(r"[\\/]", name or "")[-1]
    base = _UNSAFE.sub("_", base).strip(" .")[:150]
    return base or default


def prepare_job_with_id(settings: Settings, paths: list[str | Path], job_id: str) -> str:
    """`pipeline.prepare_job` with a job id chosen by the caller, so the upload folder
    (data_dir/uploads/<job id>) is named after the job before the job exists.
    Raises SourceError for a missing path."""
    return pipeline.prepare_job(paths, settings, job_id=job_id)


def display_name(settings: Settings, job_id: str, name: str) -> str:
    """A job file name as the uploader knows it: 'paper.pdf' or 'bundle.zip:dir/paper.pdf'."""
    root = str(uploads_dir(settings, job_id)) + "/"
    if name.startswith(root):
        rest = name[len(root):]
        return rest.split("/", 1)[1] if "/" in rest else rest  # drop the "NN/" slot folder
    return name


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

    def submit_ingest(self, job_id: str, upload_dir: Path | None) -> Future:
        return self._pool.submit(self._ingest, job_id, upload_dir)

    def _ingest(self, job_id: str, upload_dir: Path | None) -> None:
        s = self.settings
        try:
            dispatcher_for(s)(job_id)
        except Exception as exc:
            log.exception("ingest job %s failed", job_id)
            mark_failed(s, job_id, f"{type(exc).__name__}: {exc}")
        finally:
            # embedded: the job has read every file; distributed: the files were copied to the
            # job's staging folder by prepare_job_with_id
            if upload_dir is not None and not s.keep_uploads:
                shutil.rmtree(upload_dir, ignore_errors=True)
        if not s.distributed and s.auto_index:
            self._notify()

    def submit_reindex(self) -> Future:
        return self._pool.submit(self._reindex)

    def _reindex(self) -> None:
        pipeline.refresh_index(self.settings)  # logs failures, keeps the previous version
        self._notify()

    def _notify(self) -> None:
        if self.on_index_change is not None:
            try:
                self.on_index_change()
            except Exception:
                log.exception("index change callback failed")

    def shutdown(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
