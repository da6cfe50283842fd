"""Admin: upload collections (202 + job id), job progress, delete a paper, refresh the index.

Every route needs `Authorization: Bearer <FIGSEARCH_ADMIN_TOKEN>` (401 without, 403 wrong).
"""
from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.concurrency import run_in_threadpool
from sqlalchemy import select
from sqlalchemy.orm import Session, selectinload

from app.api import schemas
from app.api.deps import AdminDep, PaperId, SessionDep, SettingsDep
from app.api.jobs import file_rows
from app.public_text import public_text
from app.api.uploads import UPLOAD_REQUEST_BODY, read_upload
from app.api.problems import responses
from app.db.schema import Figure, Job, Paper, in_collection, new_job_id
from app.pipeline import ingest_jobs
from app.ingest.extract import figure_dir_for
from app.pdfs import remove_pdf
from app.pipeline.ingest_jobs import JobLock, upload_area_bytes, uploads_dir
from app.ingest.sources import SourceError
from app.settings import Settings

router = APIRouter(prefix="/admin", tags=["admin"], dependencies=[AdminDep], responses=responses(401, 403))


def _job_out(settings: Settings, db: Session, job: Job, with_files: bool) -> schemas.JobOut:
    counts = Counter(f.status for f in job.files)
    files = None
    if with_files:
        files = [schemas.JobFileOut(**row) for row in file_rows(settings, db, job)]
    return schemas.JobOut(job_id=job.id, kind=job.kind, status=job.status, done=job.done, total=job.total,
                          error=public_text(settings, job.error or ""), counts=dict(counts), created_at=job.created_at,
                          started_at=job.started_at, finished_at=job.finished_at, files=files)


@router.post("/collections", status_code=202, response_model=schemas.JobAccepted,
             responses=responses(400, 403, 413, 415, 422, 507), openapi_extra={"requestBody": UPLOAD_REQUEST_BODY})
async def upload_collection(request: Request, settings: SettingsDep):
    """Start an ingest job for uploaded PDFs/zips (multipart field `files`) or a server-side path
    (field `path`, when enabled). Returns 202 with the job id; follow progress at `status_url`.
    Files are written to the data dir's upload area as they arrive, within the per-request limit
    and the upload quota; an upload without any PDF is a 400."""
    job_id = new_job_id()
    dest = uploads_dir(settings, job_id)
    lock = JobLock(settings, job_id)
    lock.acquire()
    try:
        left = int(settings.upload_quota_mb * 1024 * 1024) - await run_in_threadpool(upload_area_bytes, settings)
        limit = int(settings.max_upload_mb * 1024 * 1024)
        files, path = await read_upload(request, dest, settings, min(limit, left), quota_limited=left < limit)
        if not files and not path:
            raise HTTPException(422, "send PDF or zip files in the multipart field 'files'"
                                     + (" or a server path in 'path'" if settings.allow_server_paths else ""))
        if path and not settings.allow_server_paths:
            raise HTTPException(403, "server-side paths are disabled (set FIGSEARCH_ALLOW_SERVER_PATHS=true)")
        uploaded = sum(p.stat().st_size for _n, p in files)
        paths: list[str | Path] = [p for _n, p in files] + ([Path(path)] if path else [])
        try:
            await run_in_threadpool(ingest_jobs.prepare_job, paths, settings, job_id, max(left - uploaded, 0))
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
                               status_url=f"/api/v1/admin/jobs/{job_id}")


@router.get("/jobs", response_model=schemas.JobList)
def list_jobs(db: SessionDep, settings: SettingsDep, limit: Annotated[int, Query(ge=1, le=100)] = 20):
    """The most recent jobs (without per-file results)."""
    jobs = db.scalars(select(Job).options(selectinload(Job.files)).order_by(Job.created_at.desc()).limit(limit)).all()
    return schemas.JobList(items=[_job_out(settings, db, j, False) for j in jobs])


@router.get("/jobs/{job_id}", response_model=schemas.JobOut, responses=responses(404))
def get_job(job_id: str, db: SessionDep, settings: SettingsDep):
    """Progress of a job: files done/total and each file's status, paper and error."""
    job = db.get(Job, job_id, options=[selectinload(Job.files)])
    if job is None:
        raise HTTPException(404, f"job {job_id} not found")
    return _job_out(settings, db, job, True)


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
