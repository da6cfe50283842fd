"""How an ingest job is run: in this process (embedded mode) or by Celery workers (distributed).

The one place that composes the ingestion pipeline with a dispatcher. The ingestion core
(app/ingest) never imports Celery or workers/; the CLI and the API ask `dispatcher_for` and call
the result with a job id.
"""
from __future__ import annotations

from typing import Callable

from app.pipeline import ingest_jobs
from app.settings import Settings

Dispatcher = Callable[[str], None]


def in_process(settings: Settings, on_file: Callable | None = None) -> Dispatcher:
    """Extract in a local process pool and store results here; returns when the job is done."""
    def run(job_id: str) -> None:
        ingest_jobs.run_job_embedded(settings, job_id, workers=settings.ingest_workers, on_file=on_file)
    return run


def celery_workers(settings: Settings) -> Dispatcher:
    """Queue the job's files for the Celery workers; returns at once (progress is in the job rows)."""
    from workers.tasks import enqueue_job

    def run(job_id: str) -> None:
        enqueue_job(settings, job_id)
    return run


def lost_files(settings: Settings, job_id: str) -> list[dict]:
    """Distributed mode: files of the job held by a worker that stopped answering (each with
    `name` and `holder`); they are re-sent by a live worker within seconds. Empty otherwise."""
    if not settings.distributed:
        return []
    from workers import liveness

    r = liveness.client(settings.broker_url)
    return liveness.lost_files(r, job_id) if r is not None else []


def dispatcher_for(settings: Settings, on_file: Callable | None = None) -> Dispatcher:
    """Celery workers in distributed mode, this process otherwise."""
    return celery_workers(settings) if settings.distributed else in_process(settings, on_file)
