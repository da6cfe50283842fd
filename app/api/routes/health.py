"""Liveness, readiness, Prometheus metrics and what the server can do."""
from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, PlainTextResponse
from sqlalchemy import text

from app.api import schemas
from app.api.deps import HolderDep, SettingsDep
from app.api.routes.search import IMAGE_QUERIES_MESSAGE
from app.model_store import list_artifacts

log = logging.getLogger(__name__)
router = APIRouter(tags=["service"])
info_router = APIRouter(tags=["service"])


# Readiness checks run here, never in the request thread pool nor in the pool of expensive
# renders (app/api/heavy.py): the health endpoints answer from the event loop even when both are full.
_CHECKS = ThreadPoolExecutor(max_workers=2, thread_name_prefix="figsearch-health")
DB_CHECK_TIMEOUT_S = 2.0


@router.get("/healthz", response_model=schemas.Health)
async def healthz():
    """The process is up (no dependency checked; answered on the event loop)."""
    return schemas.Health(status="ok")


def _ping_database(factory) -> None:
    with factory() as s:
        s.execute(text("SELECT 1"))


@router.get("/readyz", response_model=schemas.Ready, responses={503: {"model": schemas.Ready}})
async def readyz(request: Request):
    """Ready when the database answers and the index is loaded or absent for a stated reason
    (an empty collection is ready, and says so); `degraded` (200) when the newest index version
    failed its integrity check and an older intact one serves. 503 when the database is
    unreachable or an index was published but no version of it can be served. Public: the causes
    (hosts, paths, driver messages) go to the server log, not into the answer."""
    ok = True
    loop = asyncio.get_running_loop()
    try:
        await asyncio.wait_for(loop.run_in_executor(_CHECKS, _ping_database, request.app.state.session_factory),
                               DB_CHECK_TIMEOUT_S)
        db_state = "ok"
    except Exception:
        log.exception("readiness: the database does not answer")
        ok, db_state = False, "unreachable (see the server log)"
    holder = request.app.state.engine_holder
    holder.poll_nowait()
    engine = holder.engine
    degraded = holder.degraded
    if engine is not None:
        index = schemas.IndexState(loaded=True, version=engine.version, n_figures=engine.count("figure"),
                                   n_tables=engine.count("table"), has_vectors=engine.vectors is not None,
                                   reason=(f"the newest index version failed its integrity check (see the server "
                                           f"log); serving version {engine.version}") if degraded else None)
    elif holder.load_error:
        ok = False
        index = schemas.IndexState(loaded=False, reason="the index cannot be loaded (see the server log)")
    else:
        index = schemas.IndexState(loaded=False, reason=holder.reason)
    status = ("degraded" if degraded and engine is not None else "ready") if ok else "not ready"
    body = schemas.Ready(status=status, database=db_state, index=index, encoder=holder.encoder_state)
    return JSONResponse(body.model_dump(), status_code=200 if ok else 503)


@router.get("/metrics", response_class=PlainTextResponse,
            responses={200: {"content": {"text/plain": {}}, "description": "Prometheus text format"}})
def metrics(request: Request):
    """Prometheus metrics: request latency per route, ingest files by status, index size."""
    from app.api.metrics import CONTENT_TYPE

    return PlainTextResponse(request.app.state.metrics.render(), media_type=CONTENT_TYPE)


@info_router.get("/info", response_model=schemas.Info)
def info(request: Request, settings: SettingsDep, holder: HolderDep):
    """Capabilities and limits of this server (the frontend adapts to them)."""
    engine = holder.get()
    image_ok = engine is not None and engine.visual is not None  # every index holds picture vectors
    if not image_ok:
        try:
            from app.learn.registry import current_model_dir  # checks the version once per process, no model load

            image_ok = settings.learned_embeddings and current_model_dir(settings.data_dir) is not None
        except Exception:  # a broken model must not break /info
            image_ok = False
    return schemas.Info(version=request.app.version, image_queries=bool(image_ok),
                        image_queries_message=IMAGE_QUERIES_MESSAGE, rerank=settings.search_rerank,
                        max_page_size=settings.max_page_size, max_upload_mb=settings.max_upload_mb,
                        max_image_mb=settings.max_image_mb, upload_types=settings.upload_types,
                        image_types=settings.image_types, allow_server_paths=settings.allow_server_paths,
                        distributed=settings.distributed,
                        admin_token_source=request.app.state.admin_token_source,
                        ranking=None if engine is None else {"index_version": engine.version, **engine.ranking.to_json()},
                        models=_models(settings))


_MODEL_FIELDS = set(schemas.ModelInfo.model_fields)


def _models(settings) -> list[schemas.ModelInfo]:
    """The model store's rows without server paths and commands (those stay with `figsearch models`)."""
    try:
        rows = list_artifacts(settings.data_dir)
    except OSError:  # an unreadable store must not break /info
        log.warning("model store unreadable", exc_info=True)
        return []
    return [schemas.ModelInfo(**{k: v for k, v in row.items() if k in _MODEL_FIELDS}) for row in rows]
