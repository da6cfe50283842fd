"""FastAPI application factory: the REST API under /api/v1 and the static frontend.

A thin shell: the routes call the core (app.db, app.ingest, app.search) and hold no logic of their
own beyond HTTP concerns (validation, limits, problem details, auth). `figsearch serve` runs
`uvicorn app.api.main:create_app --factory`.
"""
from __future__ import annotations

import logging
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Callable

import numpy as np
from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware
from fastapi.staticfiles import StaticFiles
from sqlalchemy import func, select

from app.api import problems
from app.api.engine_holder import EngineHolder
from app.api.jobs import JobRunner
from app.api.metrics import MetricsMiddleware, Registry
from app.api.routes import admin, figures, health, papers, search
from app.db.schema import Figure, Job, JobFile, Paper
from app.db.session import session_factory
from app.search.indexing import index_root
from app.ingest import pipeline
from app.settings import PLACEHOLDER_TOKEN, Settings

log = logging.getLogger(__name__)

FRONTEND_DIR = Path(__file__).resolve().parents[2] / "frontend"
API_PREFIX = "/api/v1"
VERSION = "0.1.0"

DESCRIPTION = """Search the figures of research papers.

* **search**: keyword search over captions and the sentences that mention each figure, and
  recommendations (similar figures) with the score breakdown that explains them;
* **figures / papers**: the collection, figure images and citation links;
* **admin** (bearer token): upload PDFs or zips, follow ingest jobs, delete papers, refresh the index.

Errors are RFC 9457 problem details (`application/problem+json`: `title`, `status`, `detail`).
"""


class PlaceholderTokenError(RuntimeError):
    """Distributed mode must not run with the well-known placeholder admin token."""


class Frontend(StaticFiles):
    """Static files revalidated on every load (cheap 304s), so a deploy is seen at once."""

    def file_response(self, *args, **kwargs):
        resp = super().file_response(*args, **kwargs)
        resp.headers.setdefault("Cache-Control", "no-cache")
        return resp


class UploadLimitMiddleware:
    """Refuse an upload by its Content-Length before the body is read (413 problem details)."""

    def __init__(self, app, limits: dict[str, int]):
        self.app, self.limits = app, limits

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and scope.get("method") == "POST":
            limit = self.limits.get(scope.get("path", ""))
            if limit is not None:
                length = dict(scope.get("headers") or []).get(b"content-length")
                if length is not None and length.isdigit() and int(length) > limit:
                    resp = problems.problem_response(
                        413, f"request body too large ({int(length) / 1e6:.1f} MB > {limit / 1024 / 1024:g} MB limit)",
                        headers={"Connection": "close"})
                    return await resp(scope, receive, send)
        return await self.app(scope, receive, send)


def _default_encoder_factory(settings: Settings) -> Callable[[], Callable] | None:
    if not (settings.dense and settings.search_rerank):
        return None

    def factory():
        from app.learn.embed import text_query_encoder  # follows the vectors the index holds

        return text_query_encoder(settings.data_dir)

    return factory


def _install_gauges(app: FastAPI, reg: Registry, factory, holder: EngineHolder) -> None:
    def grouped(column, model):
        with factory() as s:
            return [({"status": st}, n) for st, n in s.execute(select(column, func.count()).select_from(model)
                                                               .group_by(column)).all()]

    reg.gauge("figsearch_ingest_files", "Ingested files by outcome (ok, no_text, duplicate, failed, pending).",
              lambda: grouped(JobFile.status, JobFile))
    reg.gauge("figsearch_ingest_jobs", "Ingest jobs by status.", lambda: grouped(Job.status, Job))
    reg.gauge("figsearch_papers", "Papers in the database by status.", lambda: grouped(Paper.status, Paper))

    def db_figures():
        with factory() as s:
            return [({"kind": k}, n) for k, n in s.execute(select(Figure.kind, func.count()).group_by(Figure.kind))]

    reg.gauge("figsearch_figures", "Figures and tables in the database.", db_figures)

    def index_size():
        eng = holder.engine
        return [({}, len(eng) if eng is not None else 0)]

    reg.gauge("figsearch_index_figures", "Figures in the loaded search index.", index_size)

    def index_info():
        eng = holder.engine
        if eng is None:
            return [({"version": "", "vectors": "false"}, 0)]
        return [({"version": eng.version or "", "vectors": str(eng.vectors is not None).lower()}, 1)]

    reg.gauge("figsearch_index_info", "The loaded index version (value 1; 0 = no index).", index_info)

    def cache_entries():
        enc = holder.encoder
        return [({}, len(enc._cache) if enc is not None else 0)]

    reg.gauge("figsearch_query_embedding_cache_entries", "Cached query embeddings.", cache_entries)


def create_app(settings: Settings | None = None, *,
               encoder_factory: Callable[[], Callable[[list[str]], np.ndarray]] | None = None) -> FastAPI:
    """Build the app. `encoder_factory` overrides the query encoder (default: MiniLM when
    settings.dense and settings.search_rerank)."""
    settings = settings or Settings()
    if settings.distributed and settings.admin_token == PLACEHOLDER_TOKEN:
        raise PlaceholderTokenError(
            f"refusing to start in distributed mode with the placeholder admin token {PLACEHOLDER_TOKEN!r}: "
            "set FIGSEARCH_ADMIN_TOKEN to a secret (e.g. `python -c 'import secrets; print(secrets.token_urlsafe(32))'`)")
    if settings.admin_token == PLACEHOLDER_TOKEN:
        log.warning("admin token is the placeholder %r: fine on your laptop, set FIGSEARCH_ADMIN_TOKEN "
                    "before exposing this server", PLACEHOLDER_TOKEN)
    settings.ensure_dirs()
    factory = session_factory(settings.db_url)
    holder = EngineHolder(index_root(settings), poll_s=settings.index_poll_s, gpu=settings.faiss_gpu,
                          encoder_factory=encoder_factory or _default_encoder_factory(settings),
                          cache_size=settings.query_cache_size)
    runner = JobRunner(settings, on_index_change=lambda: holder.refresh())
    registry = Registry()

    @asynccontextmanager
    async def lifespan(_app: FastAPI):
        import threading

        threading.Thread(target=holder.refresh, kwargs={"block": True}, name="figsearch-index-warmup",
                         daemon=True).start()
        if settings.warm_encoder:
            holder.start_encoder()
        if not settings.distributed:  # embedded jobs run in this process: resume interrupted ones
            from app.api.jobs import uploads_dir

            for job_id in pipeline.unfinished_jobs(settings):
                log.info("resuming interrupted ingest job %s", job_id)
                runner.submit_ingest(job_id, uploads_dir(settings, job_id))
        yield
        runner.shutdown()

    app = FastAPI(title="figsearch", version=VERSION, description=DESCRIPTION, docs_url="/docs",
                  redoc_url=None, openapi_url=f"{API_PREFIX}/openapi.json", lifespan=lifespan)
    app.state.settings = settings
    app.state.session_factory = factory
    app.state.engine_holder = holder
    app.state.job_runner = runner
    app.state.metrics = registry
    _install_gauges(app, registry, factory, holder)

    problems.install(app)
    app.include_router(health.router)
    registry.add_routes(health.router.routes)
    app.include_router(health.info_router, prefix=API_PREFIX)
    registry.add_routes(health.info_router.routes, API_PREFIX)
    for r in (search.router, figures.router, papers.router, admin.router):
        app.include_router(r, prefix=API_PREFIX)
        registry.add_routes(r.routes, API_PREFIX)

    @app.api_route(API_PREFIX + "/{rest:path}", methods=["GET", "POST", "PUT", "PATCH", "DELETE"],
                   include_in_schema=False)
    def api_not_found(rest: str):
        from fastapi import HTTPException

        raise HTTPException(404, f"no such endpoint: {API_PREFIX}/{rest} (see /docs)")

    margin = 1 << 20  # multipart framing and form fields
    app.add_middleware(UploadLimitMiddleware, limits={
        f"{API_PREFIX}/admin/collections": int(settings.max_upload_mb * 1024 * 1024) + margin,
        f"{API_PREFIX}/search/by-image": int(settings.max_image_mb * 1024 * 1024) + margin,
    })
    if settings.cors_origins:
        app.add_middleware(CORSMiddleware, allow_origins=settings.cors_origins, allow_credentials=False,
                           allow_methods=["GET", "POST", "DELETE"], allow_headers=["Authorization", "Content-Type"])
    app.add_middleware(MetricsMiddleware, registry=registry)
    app.mount("/", Frontend(directory=FRONTEND_DIR, html=True), name="frontend")
    return app
