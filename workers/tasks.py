"""Celery tasks: thin shells around app.ingest.pipeline, so the CLI, the API and the workers
share one code path."""
from __future__ import annotations

import logging

from celery.exceptions import SoftTimeLimitExceeded

from app.ingest import pipeline
from app.settings import Settings
from workers import app

log = logging.getLogger(__name__)


def _settings(cfg: dict | None) -> Settings:
    """The submitter's data dir and database travel with the task; the rest comes from env."""
    return Settings(**(cfg or {}))


def task_config(settings: Settings) -> dict:
    return {"data_dir": str(settings.data_dir), "database_url": settings.db_url}


@app.task(name="figsearch.ingest_pdf", bind=True, max_retries=2)
def ingest_pdf(self, job_file_id: int, cfg: dict | None = None) -> dict:
    """Ingest one job file; idempotent, so a redelivered task does no double work."""
    settings = _settings(cfg)
    try:
        outcome = pipeline.process_job_file(settings, job_file_id)
    except SoftTimeLimitExceeded:
        outcome = pipeline.record_outcome(settings, job_file_id, None,
                                          f"timed out after {settings.file_timeout_s:g} s")
    if outcome.job_finished:
        with pipeline.session_scope(settings.db_url) as s:
            from app.db.schema import JobFile

            job_id = s.get(JobFile, job_file_id).job_id
        pipeline.finish_job(settings, job_id)
    return {"status": outcome.status, "paper_id": outcome.paper_id, "n_figures": outcome.n_figures,
            "error": outcome.error}


@app.task(name="figsearch.ingest_collection")
def ingest_collection(job_id: str, cfg: dict | None = None) -> dict:
    """Fan a job out to one ingest_pdf task per file (distributed) or run it here (embedded)."""
    settings = _settings(cfg)
    if not settings.broker_url:
        pipeline.run_job_embedded(settings, job_id, workers=settings.ingest_workers)
        return {"job_id": job_id, "queued": 0}
    files = pipeline.pending_files(settings, job_id)
    pipeline.mark_running(settings, job_id)
    if not files:
        pipeline.finish_job(settings, job_id)
    for jf_id, _name, _path in files:
        ingest_pdf.delay(jf_id, cfg)
    return {"job_id": job_id, "queued": len(files)}


@app.task(name="figsearch.score_central")
def score_central(paper_ids: list[int] | None = None, cfg: dict | None = None) -> dict:
    """Central-figure scores and per-paper ranks for the figures of these papers (None = all)."""
    from app.central.scoring import score_papers

    return score_papers(_settings(cfg), paper_ids)
