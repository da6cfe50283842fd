"""Dependency aliases: `SessionDep`, `SettingsDep`, `HolderDep`, `EngineDep`, `AdminDep`.

Everything per app lives on `app.state` (settings, session factory, engine holder, job runner,
metrics), so several apps (tests) can live in one process.
"""
from __future__ import annotations

from typing import Annotated, Iterator

from fastapi import Depends, HTTPException, Path, Query, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.orm import Session

from app.api.engine_holder import EngineHolder
from app.api.heavy import HeavyPool
from app.api.guards import bearer_failure
from app.search.searcher import Searcher
from app.search.filters import FigureFilter
from app.settings import Settings
from app.vision.vocabulary import TYPES


def get_settings(request: Request) -> Settings:
    return request.app.state.settings


def get_db(request: Request) -> Iterator[Session]:
    with request.app.state.session_factory() as s:
        yield s


def get_holder(request: Request) -> EngineHolder:
    return request.app.state.engine_holder


def get_engine(request: Request) -> Searcher | None:
    """The current engine, or None when there is no index (routes answer with empty results)."""
    return request.app.state.engine_holder.get()


def get_heavy(request: Request) -> HeavyPool:
    return request.app.state.heavy


SettingsDep = Annotated[Settings, Depends(get_settings)]
HeavyDep = Annotated[HeavyPool, Depends(get_heavy)]
SessionDep = Annotated[Session, Depends(get_db)]
HolderDep = Annotated[EngineHolder, Depends(get_holder)]
EngineDep = Annotated[Searcher | None, Depends(get_engine)]

_bearer = HTTPBearer(auto_error=False, description="The admin token (FIGSEARCH_ADMIN_TOKEN).")


def require_admin(request: Request,
                  _creds: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]) -> None:
    """401 without a bearer token, 403 with a wrong one (the rule of app.api.guards, which already
    applied it before the body was read; kept here so the schema documents the security scheme)."""
    failure = bearer_failure(request.headers.get("authorization"), request.app.state.settings.admin_token)
    if failure is not None:
        status, detail = failure
        raise HTTPException(status, detail, headers={"WWW-Authenticate": "Bearer"} if status == 401 else None)


AdminDep = Depends(require_admin)


# Database ids are 32-bit on SQLite and PostgreSQL: bound them so a huge id is a 422, not a 500.
FigureId = Annotated[int, Path(ge=1, le=2**31 - 1, description="Figure id.")]
PaperId = Annotated[int, Path(ge=1, le=2**31 - 1, description="Paper id.")]
OptionalPaperId = Annotated[int | None, Query(ge=1, le=2**31 - 1, description="Only this paper's figures.")]


def get_filters(
        kind: Annotated[str, Query(pattern="^(figure|table|both|all)$", description=(
            "figure (default), table, or both (`all` is a synonym of both)."))] = "figure",
        year_from: Annotated[int | None, Query(ge=0, le=9999, description="Papers of this year or later.")] = None,
        year_to: Annotated[int | None, Query(ge=0, le=9999, description="Papers of this year or earlier.")] = None,
        paper_id: OptionalPaperId = None,
        type: Annotated[str | None, Query(pattern="^(" + "|".join(TYPES) + ")$", description=(
            "Only figures of this figure type (none match until figures are classified)."))] = None,
) -> FigureFilter:
    try:
        return FigureFilter(kind="both" if kind == "all" else kind, year_from=year_from, year_to=year_to,
                            paper_id=paper_id, figure_type=type)
    except ValueError as exc:
        raise HTTPException(422, str(exc)) from None


FiltersDep = Annotated[FigureFilter, Depends(get_filters)]
