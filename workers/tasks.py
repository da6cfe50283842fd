"""Celery tasks: thin shells around app.pipeline.ingest_jobs, so the CLI, the API and the workers
share one code path."""
from __future__ import annotations

import logging

from celery.exceptions import SoftTimeLimitExceeded

from app.pipeline import ingest_jobs
from app.settings import Settings
from workers import app

log = logging.getLogger(__name__)


def _settings(cfg: dict | None = None) -> Settings:
    """The submitter's data dir travels with the task; everything else, the database URL first,
    comes from the worker's own FIGSEARCH_* environment: messages sit in Redis and show in
    Flower, so no password may travel in them (a database_url in an old message is ignored)."""
    return Settings(**{k: v for k, v in (cfg or {}).items() if k == "data_dir"})


def task_config(settings: Settings) -> dict:
    return {"data_dir": str(settings.data_dir)}


@app.task(name="figsearch.ingest_pdf", bind=True, max_retries=2)
def ingest_pdf(self, job_file_id: int, cfg: dict | None = None) -> dict:
    """Ingest one job file; idempotent, so a redelivered task does no double work. A task is
    redelivered when its worker died; a file that has killed FIGSEARCH_MAX_DELIVERIES workers is
    failed with that reason instead of being tried again, so its job still finishes."""
    settings = _settings(cfg)
    outcome = ingest_jobs.claim_delivery(settings, job_file_id)
    if outcome is None:
        try:
            outcome = ingest_jobs.process_job_file(settings, job_file_id)
        except SoftTimeLimitExceeded:
            soft = (self.request.timelimit or (None, None))[1] or settings.file_timeout_s
            outcome = ingest_jobs.record_outcome(settings, job_file_id, None, f"timed out after {soft:g} s")
    if outcome.job_finished:
        with ingest_jobs.session_scope(settings.db_url) as s:
            from app.db.schema import JobFile

            job_id = s.get(JobFile, job_file_id).job_id
        ingest_jobs.finish_job(settings, job_id)
    return {"status": outcome.status, "paper_id": outcome.paper_id, "n_figures": outcome.n_figures,
            "error": outcome.error}


@app.task(name="figsearch.ingest_collection")
def ingest_collection(job_id: str, cfg: dict | None = None) -> dict:
    """Fan a job out to one ingest_pdf task per file (distributed) or run it here (embedded)."""
    settings = _settings(cfg)
    if not settings.broker_url:
        ingest_jobs.run_job_embedded(settings, job_id, workers=settings.ingest_workers)
        return {"job_id": job_id, "queued": 0}
    files = ingest_jobs.pending_files(settings, job_id)
    ingest_jobs.mark_running(settings, job_id)
    if not files:
        ingest_jobs.finish_job(settings, job_id)
    for jf_id, _name, path in files:  # scanned pages need OCR time: the limit grows with them
        limit = ingest_jobs.file_time_limit(settings, path)
        ingest_pdf.apply_async((jf_id, cfg), soft_time_limit=limit, time_limit=limit + 30)
    return {"job_id": job_id, "queued": len(files)}


@app.task(name="figsearch.score_central")
def score_central(paper_ids: list[int] | None = None, cfg: dict | None = None) -> dict:
    """Central-figure scores and per-paper ranks for the figures of these papers (None = all)."""
    from app.central.scoring import score_papers

    return score_papers(_settings(cfg), paper_ids)


# ------------------------------------------------------------------ learned embeddings
# Thin shells around app.pipeline.indexing's jobs; embedded mode calls the same functions in-process (index
# builds after ingestion embed new figures with the trained model through app.pipeline.indexing).
@app.task(name="figsearch.embed_new_figures")
def embed_new_figures(cfg: dict | None = None) -> dict:
    """Embed figures the current trained model has not embedded yet (batched)."""
    from app.pipeline import indexing as jobs

    return jobs.embed_new_figures(_settings(cfg))


@app.task(name="figsearch.refresh_index")
def refresh_index(cfg: dict | None = None) -> dict:
    """Rebuild the search index (learned vectors when a model exists) as a new version."""
    from app.pipeline import indexing as jobs

    return jobs.refresh_index(_settings(cfg))


@app.task(name="figsearch.reembed_all")
def reembed_all(cfg: dict | None = None) -> dict:
    """After a new model version: embed everything with it, publish a new index version (the old
    one serves until CURRENT switches; the API swaps engines on `current_version` change)."""
    from app.pipeline import indexing as jobs

    return jobs.reembed_all(_settings(cfg))


@app.task(name="figsearch.train_model", soft_time_limit=3600)
def train_model(model: str = "fused", exclude_sha256: list[str] | None = None, cfg: dict | None = None) -> dict:
    """Train and publish a model, then re-embed and re-index (default model)."""
    from app.learn.variants import config_for
    from app.learn.data import load_learn_data
    from app.learn.registry import DEFAULT_MODEL, publish
    from app.learn.train import train

    settings = _settings(cfg)
    data = load_learn_data(settings)
    shas = {s.lower() for s in exclude_sha256 or []}
    excluded = data.rows_of_papers(shas)
    res = train(data, config_for(model), excluded, progress=False)
    version = publish(res, settings.data_dir, model, {"data_hash": data.data_hash(excluded),
                                                      "excluded_sha256": sorted(shas)})
    out = {"model": model, "version": version, "metrics": res.metrics}
    if model == DEFAULT_MODEL:
        out["index"] = reembed_all(cfg)
    return out
