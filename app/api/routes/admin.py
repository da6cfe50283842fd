"""Admin: upload collections (202 + job id), job progress, retry a job's failed files, delete a
paper, refresh the index.

Every route needs `Authorization: Bearer <FIGSEARCH_ADMIN_TOKEN>` (401 without, 403 wrong).
"""
from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.concurrency import run_in_threadpool
from sqlalchemy import select, update
from sqlalchemy.orm import Session, selectinload

from app.api import schemas
from app.api.deps import AdminDep, PaperId, SessionDep, SettingsDep
from app.api.jobs import file_rows, job_searchable, safe_filename
from app.public_text import public_text
from app.api.uploads import UPLOAD_REQUEST_BODY, read_upload
from app.api.problems import responses
from app.db.schema import Figure, Job, JobFile, Paper, in_collection, new_job_id
from app.pipeline import ingest_jobs
from app.ingest.extract import figure_dir_for
from app.pdfs import remove_pdf
from app.pipeline.ingest_jobs import JobLock, upload_area_bytes, uploads_dir
from app.ingest.sources import InputFile, SourceError
from app.settings import Settings

router = APIRouter(prefix="/admin", tags=["admin"], dependencies=[AdminDep], responses=responses(401, 403))


def _job_out(settings: Settings, db: Session, job: Job, with_files: bool, engine) -> schemas.JobOut:
    counts = Counter(f.status for f in job.files)
    rows = file_rows(settings, db, job)
    return schemas.JobOut(job_id=job.id, kind=job.kind, status=job.status, done=job.done, total=job.total,
                          error=public_text(settings, job.error or ""), counts=dict(counts), created_at=job.created_at,
                          started_at=job.started_at, finished_at=job.finished_at,
                          files=[schemas.JobFileOut(**row) for row in rows] if with_files else None,
                          index_state=job.index_state, index_version=job.index_version,
                          index_error=public_text(settings, job.index_error or ""),
                          searchable=job_searchable(db, job, engine),
                          retryable=sum(r["retryable"] and r["retry_may_help"] for r in rows),
                          retryable_file_errors=sum(r["retryable"] and not r["retry_may_help"] for r in rows))


def _served_engine(request: Request):
    """The index this server serves now (a new version is looked for without waiting on it)."""
    holder = request.app.state.engine_holder
    holder.poll_nowait()
    return holder.engine


@router.post("/collections", status_code=202, response_model=schemas.JobAccepted,
             responses=responses(400, 403, 413, 415, 422, 507), openapi_extra={"requestBody": UPLOAD_REQUEST_BODY})
async def upload_collection(request: Request, settings: SettingsDep):
    """Start an ingest job for uploaded PDFs/zips (multipart field `files`) or a server-side path
    (field `path`, when enabled). Returns 202 with the job id; follow progress at `status_url`.
    Files are written to the data dir's upload area as they arrive, within the per-request limit
    and the upload quota; an upload without any PDF (or of empty files only) is a 400. A file of
    another type is left out (its bytes are not kept), named in `skipped` and listed in the job as
    skipped; an upload of nothing else is a 415."""
    job_id = new_job_id()
    dest = uploads_dir(settings, job_id)
    lock = JobLock(settings, job_id)
    lock.acquire()
    try:
        left = int(settings.upload_quota_mb * 1024 * 1024) - await run_in_threadpool(upload_area_bytes, settings)
        limit = int(settings.max_upload_mb * 1024 * 1024)
        files, path, refused = await read_upload(request, dest, settings, min(limit, left),
                                                 quota_limited=left < limit)
        if not files and not path and refused:
            raise HTTPException(415, "; ".join(f"{n!r}: {why.removeprefix('skipped: ')}" for n, why in refused[:5])
                                     + ("; ..." if len(refused) > 5 else ""))
        if not files and not path:
            raise HTTPException(422, "send PDF or zip files in the multipart field 'files'"
                                     + (" or a server path in 'path'" if settings.allow_server_paths else ""))
        if path and not settings.allow_server_paths:
            raise HTTPException(403, "server-side paths are disabled (set FIGSEARCH_ALLOW_SERVER_PATHS=true)")
        uploaded = sum(p.stat().st_size for _n, p in files)
        paths: list[str | Path] = [p for _n, p in files] + ([Path(path)] if path else [])
        skipped = [InputFile(safe_filename(n), "", why, skipped=True) for n, why in refused]
        try:
            await run_in_threadpool(ingest_jobs.prepare_job, paths, settings, job_id, max(left - uploaded, 0), skipped)
        except SourceError as exc:
            status = 400 if str(exc).startswith("no PDF") else 422
            raise HTTPException(status, public_text(settings, str(exc)))
    except BaseException:
        shutil.rmtree(dest, ignore_errors=True)
        shutil.rmtree(ingest_jobs.staging_dir(settings, job_id), ignore_errors=True)
        lock.release()
        raise
    request.app.state.job_runner.submit_ingest(job_id, lock)
    with request.app.state.session_factory() as s:
        total = s.get(Job, job_id).total
    return schemas.JobAccepted(job_id=job_id, status="queued", total=total,
                               status_url=f"/api/v1/admin/jobs/{job_id}",
                               skipped=[schemas.SkippedUpload(name=f.name, error=f.error) for f in skipped])


@router.get("/jobs", response_model=schemas.JobList, responses=responses(404))
def list_jobs(request: Request, db: SessionDep, settings: SettingsDep,
              limit: Annotated[int, Query(ge=1, le=100)] = 20,
              before: Annotated[str | None, Query(max_length=32, description="A job id: the jobs started before "
                                                                            "it (the `next_before` of a page)")] = None):
    """The most recent jobs (without per-file results), newest first; `next_before` asks for the
    next, older page."""
    q = select(Job).options(selectinload(Job.files)).order_by(Job.created_at.desc(), Job.id.desc())
    if before:
        mark = db.get(Job, before)
        if mark is None:
            raise HTTPException(404, f"job {before} not found")
        q = q.where((Job.created_at < mark.created_at) | ((Job.created_at == mark.created_at) & (Job.id < mark.id)))
    jobs = db.scalars(q.limit(limit + 1)).all()
    engine = _served_engine(request)
    return schemas.JobList(items=[_job_out(settings, db, j, False, engine) for j in jobs[:limit]],
                           next_before=jobs[limit - 1].id if len(jobs) > limit else None)


@router.get("/jobs/{job_id}", response_model=schemas.JobOut, responses=responses(404))
def get_job(job_id: str, request: Request, db: SessionDep, settings: SettingsDep):
    """Progress of a job: files done/total and each file's status, paper and error; then whether
    its papers are searchable (`index_state`, `searchable`)."""
    job = db.get(Job, job_id, options=[selectinload(Job.files)])
    if job is None:
        raise HTTPException(404, f"job {job_id} not found")
    return _job_out(settings, db, job, True, _served_engine(request))


@router.post("/jobs/{job_id}/retry", status_code=202, response_model=schemas.JobAccepted,
             responses=responses(404, 409, 422))
def retry_job(job_id: str, request: Request, settings: SettingsDep,
              file_id: Annotated[list[int] | None, Query(description="Only these failed files (`file_id` of the "
                                                                      "job's files), whatever they failed for; "
                                                                      "when left out, those a retry may fix")] = None,
              include_file_errors: Annotated[bool, Query(description="Also the files that failed for their own "
                                                                     "bytes (`retry_may_help` false), e.g. after an "
                                                                     "upgrade or a raised limit")] = False):
    """Read a finished job's failed files again (their bytes are kept for FIGSEARCH_KEEP_FAILED_HOURS),
    in the same job: they are pending again and the job runs as a new one would (an interrupted job
    finishes its unfinished files too, and a job whose index build failed builds again). A file that
    failed for its own bytes (damaged, encrypted, not a PDF, over a limit) would fail the same way:
    it is read again only when named by `file_id` or with `include_file_errors=true`. 409 when the
    job is running or has nothing to retry."""
    try:
        ingest_jobs.retry_job(settings, job_id, file_id, include_file_errors)
    except LookupError:
        raise HTTPException(404, f"job {job_id} not found")
    except ingest_jobs.NothingToRetry as exc:
        raise HTTPException(409, str(exc) + (" with include_file_errors=true" if exc.held_back else ""))
    request.app.state.job_runner.submit_ingest(job_id)
    with request.app.state.session_factory() as s:
        job = s.get(Job, job_id)
        return schemas.JobAccepted(job_id=job_id, status=job.status, total=job.total,
                                   status_url=f"/api/v1/admin/jobs/{job_id}")


def _remove_files(settings: Settings, paper: Paper, figures: list[Figure]) -> None:
    root = settings.data_dir.resolve()
    dirs = set()
    for f in figures:
        for rel in (f.image_path, f.thumbnail_path):
            if not rel:
                continue
            p = (root / rel).resolve()
            if p.is_relative_to(settings.figures_dir.resolve()):
                p.unlink(missing_ok=True)
                dirs.add(p.parent)
    if paper.sha256:
        remove_pdf(root, paper.sha256)
        d = (root / figure_dir_for(paper.sha256)).resolve()
        if d.is_relative_to(settings.figures_dir.resolve()) and d != settings.figures_dir.resolve():
            shutil.rmtree(d, ignore_errors=True)
    for d in dirs:
        try:
            d.rmdir()
        except OSError:
            pass


@router.delete("/papers/{paper_id}", response_model=schemas.Deleted, responses=responses(404))
def delete_paper(paper_id: PaperId, request: Request, db: SessionDep, settings: SettingsDep):
    """Delete a paper, its figures, mentions, citation links and crop files; the search index is
    refreshed in the background (until then its figures are left out of results). A file that is
    not in the collection (failed, no text layer, a duplicate) has nothing in the index: its record
    goes without a refresh."""
    paper = db.get(Paper, paper_id, options=[selectinload(Paper.figures)])
    if paper is None:
        raise HTTPException(404, f"paper {paper_id} not found")
    indexed = db.scalar(select(Paper.id).where(Paper.id == paper_id, in_collection())) is not None
    figures, status = list(paper.figures), paper.status
    db.delete(paper)
    # job files name it no more: SQLite gives the highest id to the next paper again, and a job
    # would show (and count as its own) that paper instead
    db.execute(update(JobFile).where(JobFile.paper_id == paper_id).values(paper_id=None))
    db.commit()
    _remove_files(settings, paper, figures)
    if indexed:
        request.app.state.job_runner.submit_reindex()
    n = sum(1 for f in figures if f.kind == "figure")
    return schemas.Deleted(paper_id=paper_id, deleted_figures=n, index_refresh=indexed,
                           detail="deleted; the search index is being refreshed" if indexed else
                           f"deleted; it was not in the collection ({status.replace('_', ' ')}), "
                           "so the search index is unchanged")


@router.post("/reindex", status_code=202, response_model=schemas.Accepted)
def reindex(request: Request):
    """Rebuild the search index from the database in the background (after pending jobs);
    the service switches to the new version when it is published."""
    request.app.state.job_runner.submit_reindex()
    return schemas.Accepted(status="accepted", detail="index refresh queued")
