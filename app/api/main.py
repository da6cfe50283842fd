"""FastAPI application factory: the REST API under /api/v1 and the static frontend.

A thin shell: the routes call the core (app.db, app.ingest, app.search) and hold no logic of their
own beyond HTTP concerns (validation, limits, problem details, auth). `figsearch serve` runs
`uvicorn app.api.main:create_app --factory`.
"""
from __future__ import annotations

import logging
import sys
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Callable

import numpy as np
from fastapi import FastAPI, HTTPException, Request
from fastapi.middleware.cors import CORSMiddleware
from fastapi.staticfiles import StaticFiles
from starlette.formparsers import MultiPartParser
from sqlalchemy import func, select

from app.api import problems
from app.api.docs import install_docs
from app.api.engine_holder import EngineHolder
from app.api.heavy import HeavyPool
from app.api.guards import AdminAuthMiddleware, RouteBodyLimits, SecurityHeadersMiddleware
from app.api.jobs import JobRunner
from app.api.metrics import MetricsMiddleware, Registry
from app.api.routes import admin, figures, health, papers, search
from app.db.schema import Figure, Job, JobFile, Paper
from app.db.session import session_factory
from app.pipeline.indexing import index_root
from app.pipeline import ingest_jobs
from app.settings import Settings, admin_token_source, generated_token_notice, resolve_admin_token

log = logging.getLogger(__name__)

FRONTEND_DIR = Path(__file__).resolve().parents[2] / "frontend"  # the top-level package's data (pyproject)
API_PREFIX = "/api/v1"
LEFTOVER_SWEEP_S = 300.0  # upload folders without a job are removed once untouched for 10 minutes
VERSION = "0.1.0"

DESCRIPTION = """Search the figures of research papers. The web UI of this server: [figsearch](/).

* **search**: by keywords and meaning over captions and the sentences that mention each figure
  (a figure type a query names, e.g. "bar chart", counts too), by an uploaded figure image, and
  recommendations (similar figures) with the score breakdown that explains them;
* **figures / papers**: the collection, figure images and citation links;
* **admin** (bearer token): upload PDFs or zips, follow ingest jobs, delete papers, refresh the index.

Errors are RFC 9457 problem details (`application/problem+json`: `title`, `status`, `detail`).
"""


class Frontend(StaticFiles):
    """Static files revalidated on every load (cheap 304s), so a deploy is seen at once."""

    def file_response(self, *args, **kwargs):
        resp = super().file_response(*args, **kwargs)
        resp.headers.setdefault("Cache-Control", "no-cache")
        return resp


def allowed_methods(app: FastAPI, path: str) -> list[str]:
    """Methods the API offers on this path, from the OpenAPI schema (empty: no such path)."""
    from starlette.routing import compile_path

    if not hasattr(app.state, "path_methods"):
        app.state.path_methods = [(compile_path(p)[0], sorted(m.upper() for m in ops))
                                  for p, ops in app.openapi().get("paths", {}).items()]
    return sorted({m for regex, methods in app.state.path_methods if regex.match(path) for m in methods})


def install_schema_fixes(app: FastAPI, max_page_size: int) -> None:
    """The OpenAPI schema says what the server does: every `k`/`limit` bound is the configured
    page size (the routes declare the hard cap, the server applies the setting), every error is
    documented as application/problem+json (what the problem handlers send), and the query image
    part is declared PNG or JPEG."""
    build = app.openapi
    problem = {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}

    def openapi():
        if app.openapi_schema is None:
            schema = build()
            for path, ops in schema.get("paths", {}).items():
                for op in ops.values():
                    if not isinstance(op, dict):
                        continue
                    for param in op.get("parameters", []):
                        sch = param.get("schema", {})
                        if param.get("name") in ("k", "limit") and "maximum" in sch:
                            sch["maximum"] = min(sch["maximum"], max_page_size)
                    for code, resp in op.get("responses", {}).items():
                        if code.isdigit() and int(code) >= 400:
                            resp["content"] = dict(problem)
                    body = op.get("requestBody", {}).get("content", {}).get("multipart/form-data")
                    if body is not None:  # malformed multipart: Starlette's parser answers 400
                        op["responses"].setdefault("400", {"description": "Bad Request", "content": dict(problem)})
                    if path.endswith("/search/by-image") and body is not None:
                        body["encoding"] = {"image": {"contentType": "image/png, image/jpeg"}}
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi


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

    reg.gauge("figsearch_ingest_files", "Ingested files by outcome (ok, no_text, duplicate, failed, skipped; pending, working).",
              lambda: grouped(JobFile.status, JobFile))
    reg.gauge("figsearch_ingest_jobs", "Ingest jobs by status.", lambda: grouped(Job.status, Job))
    reg.gauge("figsearch_papers", "Papers in the database by status.", lambda: grouped(Paper.status, Paper))

    def db_figures():
        with factory() as s:
            return [({"kind": k}, n) for k, n in s.execute(select(Figure.kind, func.count()).group_by(Figure.kind))]

    reg.gauge("figsearch_figures", "Figures and tables in the database.", db_figures)

    def index_size():
        eng = holder.engine
        return [({}, eng.count("figure") if eng is not None else 0)]

    reg.gauge("figsearch_index_figures", "Figures in the loaded search index (tables not counted).", index_size)

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
    token, generated = resolve_admin_token(settings)  # AdminTokenError: placeholder, short, or missing
    token_source = admin_token_source(settings)  # before the resolved token is set below
    settings = settings.model_copy(update={"admin_token": token})
    if generated:
        print(generated_token_notice(settings, token), file=sys.stderr, flush=True)
    settings.ensure_dirs()
    factory = session_factory(settings.db_url)
    holder = EngineHolder(index_root(settings), poll_s=settings.index_poll_s, gpu=settings.faiss_gpu,
                          encoder_factory=encoder_factory or _default_encoder_factory(settings),
                          cache_size=settings.query_cache_size, warm_index=settings.warm_index)
    runner = JobRunner(settings, on_index_change=lambda: holder.refresh())
    registry = Registry()

    @asynccontextmanager
    async def lifespan(_app: FastAPI):
        import threading

        threading.Thread(target=holder.start, name="figsearch-index-warmup", daemon=True).start()
        if settings.warm_encoder:
            holder.start_encoder()
        stop_sweep = threading.Event()

        def sweep_once() -> None:  # partial uploads of servers that died, folders of finished jobs
            try:
                removed, freed = ingest_jobs.clean_leftovers(settings)
                if removed:
                    log.warning("removed %d upload/staging folders no job needs (%.1f MB)", removed, freed / 1e6)
            except Exception:
                log.exception("sweeping leftover uploads failed")

        def sweep() -> None:
            while not stop_sweep.wait(LEFTOVER_SWEEP_S):
                sweep_once()

        sweep_once()
        threading.Thread(target=sweep, name="figsearch-sweep", daemon=True).start()
        if not settings.distributed:  # embedded jobs run in a server process: resume orphaned ones
            for job_id in ingest_jobs.orphaned_jobs(settings):
                log.info("resuming interrupted ingest job %s", job_id)
                runner.submit_ingest(job_id)
        yield
        stop_sweep.set()
        runner.shutdown()
        app.state.heavy.shutdown()

    app = FastAPI(title="figsearch", version=VERSION, description=DESCRIPTION, docs_url=None,
                  redoc_url=None, openapi_url=f"{API_PREFIX}/openapi.json", lifespan=lifespan)
    install_docs(app, app.openapi_url, app.title)  # /docs and /redoc from local assets
    app.state.settings = settings
    app.state.admin_token_source = token_source
    app.state.session_factory = factory
    app.state.engine_holder = holder
    app.state.job_runner = runner
    app.state.metrics = registry
    app.state.heavy = HeavyPool(settings.render_workers, settings.render_queue, settings.render_cache_mb)
    _install_gauges(app, registry, factory, holder)

    problems.install(app)
    app.include_router(health.router)
    registry.add_routes(health.router.routes)
    app.include_router(health.info_router, prefix=API_PREFIX)
    registry.add_routes(health.info_router.routes, API_PREFIX)
    for r in (search.router, figures.router, papers.router, admin.router):
        app.include_router(r, prefix=API_PREFIX)
        registry.add_routes(r.routes, API_PREFIX)

    @app.api_route(API_PREFIX + "/{rest:path}", methods=["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"],
                   include_in_schema=False)
    def api_not_found(rest: str, request: Request):
        """404 for an unknown path; 405 with `Allow` for a known path and another method."""
        allowed = allowed_methods(app, request.url.path)
        if allowed:
            raise HTTPException(405, f"{request.method} is not allowed on {request.url.path}; use "
                                     f"{', '.join(allowed)}", headers={"Allow": ", ".join(allowed)})
        raise HTTPException(404, f"no such endpoint: {API_PREFIX}/{rest} (see /docs)")

    install_schema_fixes(app, settings.max_page_size)
    margin = 64 * 1024  # multipart framing and form fields
    image_body = int(settings.max_image_mb * 1024 * 1024) + margin
    app.add_middleware(RouteBodyLimits, default=64 * 1024, limits={
        f"{API_PREFIX}/admin/collections": int(settings.max_upload_mb * 1024 * 1024) + margin,
        f"{API_PREFIX}/search/by-image": image_body,
    })
    # A query image (bounded above while it streams in) stays in memory instead of Starlette's
    # 1 MB spool-to-temp-dir default, so the public image search writes nothing to disk. Only
    # that route uses Starlette's parser for files: admin uploads have their own (uploads.py).
    MultiPartParser.spool_max_size = max(MultiPartParser.spool_max_size, image_body)
    app.add_middleware(AdminAuthMiddleware, prefix=f"{API_PREFIX}/admin", token=token)
    if settings.cors_origins:
        app.add_middleware(CORSMiddleware, allow_origins=settings.cors_origins, allow_credentials=False,
                           allow_methods=["GET", "POST", "DELETE"], allow_headers=["Authorization", "Content-Type"])
    app.add_middleware(SecurityHeadersMiddleware)
    app.add_middleware(MetricsMiddleware, registry=registry)
    app.mount("/", Frontend(directory=FRONTEND_DIR, html=True), name="frontend")
    return app
