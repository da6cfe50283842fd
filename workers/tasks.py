"""Celery tasks: thin shells around app.pipeline.ingest_jobs, so the CLI, the API and the workers
share one code path."""
from __future__ import annotations

import signal
import threading
from typing import Callable, TypeVar

from celery import signals
from celery.exceptions import SoftTimeLimitExceeded, TimeLimitExceeded

from app.ingest import failures
from app.ingest.extract import load_modules
from app.pipeline import ingest_jobs
from app.settings import Settings
from workers import app, liveness


def _settings(cfg: dict | None = None) -> Settings:
    """The submitter's data dir travels with the task; everything else, the database URL first,
    comes from the worker's own FIGSEARCH_* environment: messages sit in Redis and show in
    Flower, so no password may travel in them (a database_url in an old message is ignored)."""
    return Settings(**{k: v for k, v in (cfg or {}).items() if k == "data_dir"})


def task_config(settings: Settings) -> dict:
    return {"data_dir": str(settings.data_dir)}


class FileTask(app.Task):
    """A task that reads one job file ends that file whatever ends the task, so its job ends."""

    def on_failure(self, exc, task_id, args, kwargs, einfo) -> None:
        """The file's task failed outside the extraction (the database away while recording, an
        error of this program) or was killed at Celery's hard time limit (the extraction stuck
        where the file's limit cannot interrupt it; this runs in the worker's main process then):
        the file is failed with that reason, and its job finished when it was the last."""
        job_file_id = args[0] if args else kwargs["job_file_id"]
        cfg = args[1] if len(args) > 1 else kwargs.get("cfg")
        settings = _settings(cfg)
        if isinstance(exc, TimeLimitExceeded):
            after = f" after {exc.args[0]:g} s" if exc.args and isinstance(exc.args[0], (int, float)) else ""
            error, kind = f"timed out: its worker process was stopped{after}", failures.TIMEOUT
        elif isinstance(exc, SoftTimeLimitExceeded):
            error, kind = "timed out (the task's time limit)", failures.TIMEOUT
        else:
            error, kind = f"worker error: {type(exc).__name__}: {exc}", failures.INTERNAL
        outcome = ingest_jobs.record_outcome(settings, job_file_id, None, error, kind)
        liveness.forget(liveness.client(settings.broker_url), job_file_id)
        if outcome.job_finished:
            _finish_job(settings, job_file_id, cfg)


@app.task(name="figsearch.ingest_pdf", bind=True, base=FileTask, max_retries=2)
def ingest_pdf(self, job_file_id: int, cfg: dict | None = None) -> dict:
    """Ingest one job file; idempotent, so a redelivered task does no double work. A task is
    redelivered when its worker died; a file that has killed FIGSEARCH_MAX_DELIVERIES workers is
    failed with that reason instead of being tried again, so its job still finishes. While it
    works, the file is recorded as held by this worker (workers/liveness.py), so a worker that
    dies outright has its file re-sent by another within seconds. The file's time limit covers
    its extraction only (ingest_jobs.process_job_file); whatever else ends the task, FileTask ends
    the file."""
    settings = _settings(cfg)
    outcome = ingest_jobs.claim_delivery(settings, job_file_id)
    r = holder = None
    if outcome is not None:  # failed here for having killed FIGSEARCH_MAX_DELIVERIES workers: held by nobody now
        liveness.forget(liveness.client(settings.broker_url), job_file_id)
    else:  # a copy of a stored paper is its duplicate, known before any extraction
        outcome = ingest_jobs.record_stored_copy(settings, job_file_id)
    if outcome is None:
        soft = (self.request.timelimit or (None, None))[1]
        limit = soft - LIMIT_GRACE_S if soft else settings.file_timeout_s
        ref = ingest_jobs.job_file_ref(settings, job_file_id)
        holder = liveness.holder_id()
        if ref is not None and holder is not None:
            r = liveness.client(settings.broker_url)
            liveness.hold(r, job_file_id, {"holder": holder, "job_id": ref[0], "name": ref[1], "cfg": cfg or {},
                                           "limit": limit})
        try:
            outcome = ingest_jobs.process_job_file(settings, job_file_id, lambda extract: call_within(limit, extract))
        except FileTimeLimit:
            outcome = ingest_jobs.record_outcome(settings, job_file_id, None, f"timed out after {limit:g} s",
                                                 failures.TIMEOUT)
        finally:
            liveness.release(r, job_file_id, holder)
    if outcome.job_finished:
        _finish_job(settings, job_file_id, cfg)
    return {"status": outcome.status, "paper_id": outcome.paper_id, "n_figures": outcome.n_figures,
            "error": outcome.error}


def _finish_job(settings: Settings, job_file_id: int, cfg: dict | None) -> None:
    """The job of this file, whose last file it was, goes on to its steps after the files."""
    with ingest_jobs.session_scope(settings.db_url) as s:
        from app.db.schema import JobFile

        job_id = s.get(JobFile, job_file_id).job_id
    send_after_ingest(settings, job_id, ingest_jobs.finish_job(settings, job_id), cfg)


@app.task(name="figsearch.after_ingest")
def after_ingest(paper_ids: list[int], cfg: dict | None = None, job_id: str | None = None) -> dict:
    """Figure types, central scores and a new index version after a job, under the collection time
    limit (an index build must not run under the limit of the job's last file); then the job is done."""
    ingest_jobs.after_ingest(_settings(cfg), paper_ids, job_id)
    return {"papers": len(paper_ids)}


def send_after_ingest(settings: Settings, job_id: str, paper_ids: list[int], cfg: dict | None) -> None:
    """Queue the collection work of a job whose files are all read, when it added papers; else
    nothing changed and the job is done here."""
    if ingest_jobs.needs_collection_work(settings, paper_ids):
        after_ingest.apply_async(args=(paper_ids, cfg), kwargs={"job_id": job_id},
                                 soft_time_limit=settings.collection_timeout_s,
                                 time_limit=settings.collection_timeout_s + 30)
    else:
        ingest_jobs.after_ingest(settings, paper_ids, job_id)


# Celery's own limits on a file task sit this far past the file's limit, as a backstop
LIMIT_GRACE_S = 10.0


class FileTimeLimit(BaseException):
    """A file's time is up. A BaseException, unlike Celery's SoftTimeLimitExceeded: the extractor
    keeps one bad figure from sinking a paper with `except Exception`, which would otherwise catch
    the limit, store the paper with its remaining figures silently missing and call it ok."""


# after a file's limit, how often it is raised again until it ends the limited call: a raise can be
# lost (raised inside a finaliser, `__del__` of a PDF object, Python prints it and goes on)
LIMIT_AGAIN_S = 0.1
T = TypeVar("T")


def call_within(seconds: float, fn: Callable[[], T]) -> T:
    """fn(), interrupted by FileTimeLimit after `seconds` (in the task's main thread; elsewhere, as
    in eager mode inside a server thread, only Celery's limits apply, and Celery's soft limit met
    inside is raised as FileTimeLimit too: code under the limit catches `Exception`). The limit is
    raised only while fn runs: an alarm that comes when fn is over, however late, disarms itself
    instead, so it never lands in the work that follows (recording the file's outcome)."""
    if threading.current_thread() is not threading.main_thread():
        try:
            return fn()
        except SoftTimeLimitExceeded as exc:
            raise FileTimeLimit() from exc

    def _time_up(_signum, frame):
        while frame is not None:
            if frame.f_code is _limited.__code__:
                raise FileTimeLimit()
            frame = frame.f_back
        signal.setitimer(signal.ITIMER_REAL, 0)

    previous = signal.signal(signal.SIGALRM, _time_up)
    signal.setitimer(signal.ITIMER_REAL, seconds, LIMIT_AGAIN_S)
    try:
        return _limited(fn)
    except SoftTimeLimitExceeded as exc:
        raise FileTimeLimit() from exc
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, signal.SIG_DFL if previous is None else previous)


def _limited(fn: Callable[[], T]) -> T:
    """The call a file's limit may interrupt: the alarm looks for this frame on the stack."""
    return fn()


def send_file(job_file_id: int, cfg: dict, limit: float, via=None) -> None:
    """Queue one job file (scanned pages need OCR time: the limit grows with them), through the
    Celery app `via` (default: this process's)."""
    (via or app).send_task("figsearch.ingest_pdf", args=(job_file_id, cfg), soft_time_limit=limit + LIMIT_GRACE_S,
                           time_limit=limit + LIMIT_GRACE_S + 30)


_submitters: dict[str, object] = {}


def _submitter(settings: Settings):
    """A Celery app on the submitter's broker (its settings may differ from the environment)."""
    from workers import make_celery

    if settings.broker_url not in _submitters:
        _submitters[settings.broker_url] = make_celery(settings)
    return _submitters[settings.broker_url]


def enqueue_job(settings: Settings, job_id: str) -> int:
    """Queue one ingest_pdf task per pending file of the job (called by the submitter, so no
    worker holds the fan-out: a worker that dies can lose at most the files it works on, and
    those are re-sent). A job without pending files is finished by a worker. Idempotent: files
    queued twice are ingested once."""
    cfg = task_config(settings)
    via = _submitter(settings)
    files = ingest_jobs.pending_files(settings, job_id)
    ingest_jobs.mark_running(settings, job_id)
    if not files:
        via.send_task("figsearch.ingest_collection", args=(job_id, cfg))
        return 0
    for jf_id, _name, path, _sha in files:
        send_file(jf_id, cfg, ingest_jobs.file_time_limit(settings, path), via)
    return len(files)


@app.task(name="figsearch.ingest_collection")
def ingest_collection(job_id: str, cfg: dict | None = None) -> dict:
    """Fan a job out to one ingest_pdf task per file (distributed) or run it here (embedded);
    finishes a job that has no pending file left."""
    settings = _settings(cfg)
    if not settings.broker_url:
        ingest_jobs.run_job_embedded(settings, job_id, workers=settings.ingest_workers)
        return {"job_id": job_id, "queued": 0}
    files = ingest_jobs.pending_files(settings, job_id)
    ingest_jobs.mark_running(settings, job_id)
    if not files:
        send_after_ingest(settings, job_id, ingest_jobs.finish_job(settings, job_id), cfg)
    for jf_id, _name, path, _sha in files:
        send_file(jf_id, cfg or task_config(settings), ingest_jobs.file_time_limit(settings, path))
    return {"job_id": job_id, "queued": len(files)}


def _resend(job_file_id: int, entry: dict) -> bool:
    """Re-send a file its dead worker held, if it is still unfinished (liveness.reap)."""
    settings = _settings(entry.get("cfg"))
    if not ingest_jobs.is_unfinished(settings, job_file_id):
        return False
    send_file(job_file_id, entry.get("cfg") or task_config(settings), float(entry.get("limit") or
                                                                         settings.file_timeout_s))
    return True


_heartbeat: liveness.Heartbeat | None = None


@signals.worker_init.connect
def _before_pool(**_kw) -> None:  # the main process, before the pool forks its children
    liveness.set_main_process()


@signals.worker_process_init.connect
def _load_extractor(**_kw) -> None:
    """Each pool process loads the extractor's modules and page-layout model when it starts, before
    it takes a task: inside a task, Celery's soft limit (a file's limit + LIMIT_GRACE_S, counted
    from the task's start) cuts a load that is slow on a busy machine short wherever it is, e.g.
    inside the layout model's import, which then counts as not installed."""
    load_modules()


@signals.worker_ready.connect
def _start_heartbeat(**_kw) -> None:
    global _heartbeat
    _heartbeat = liveness.Heartbeat(Settings().broker_url, _resend)
    _heartbeat.start()


@signals.worker_shutdown.connect
def _stop_heartbeat(**_kw) -> None:
    if _heartbeat is not None:
        _heartbeat.stop()


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
    """Publish a new search index version (learned vectors when a model exists): the new and changed
    figures added to the current version as a segment, or a rebuild when it cannot grow."""
    from app.pipeline import indexing as jobs

    return jobs.refresh_index(_settings(cfg))


@app.task(name="figsearch.reembed_all")
def reembed_all(cfg: dict | None = None) -> dict:
    """After a new model version: embed everything with it, publish a new index version (the old
    one serves until CURRENT switches; the API swaps engines on `current_version` change)."""
    from app.pipeline import indexing as jobs

    return jobs.reembed_all(_settings(cfg))


# acknowledged on receipt: a training that outlives the broker's visibility timeout (derived from the
# per-file limits) must not be started a second time; a lost training is started again by hand
@app.task(name="figsearch.train_model", soft_time_limit=3600, acks_late=False)
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
                                                      "excluded_sha256": sorted(shas)},
                      papers=data.papers_trained_on(excluded), command=f"celery task figsearch.train_model {model}")
    out = {"model": model, "version": version, "metrics": res.metrics}
    if model == DEFAULT_MODEL:
        out["index"] = reembed_all(cfg)
    return out
