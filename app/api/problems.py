"""Errors as RFC 9457 problem details: application/problem+json with type, title, status, detail."""
from __future__ import annotations

import logging
from http import HTTPStatus

from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from app.settings import Settings

log = logging.getLogger(__name__)
MEDIA_TYPE = "application/problem+json"


def problem_response(status: int, detail: str, headers: dict | None = None, errors: list | None = None,
                     title: str | None = None) -> JSONResponse:
    try:
        default_title = HTTPStatus(status).phrase
    except ValueError:
        default_title = "Error"
    body = {"type": "about:blank", "title": title or default_title, "status": status, "detail": detail}
    if errors is not None:
        body["errors"] = errors
    return JSONResponse(body, status_code=status, media_type=MEDIA_TYPE, headers=headers)


def check_limit(name: str, value: int, settings: Settings) -> None:
    """Page sizes are bounded by settings.max_page_size (a 422 like other parameter errors)."""
    if value > settings.max_page_size:
        raise HTTPException(422, f"{name} must be at most {settings.max_page_size} (got {value})")


def _loc(err: dict) -> str:
    loc = [str(x) for x in err.get("loc", ()) if x not in ("query", "path", "body", "header", "form")]
    return ".".join(loc) or "request"


def _message(err: dict) -> str:
    """One error in words. A missing form field is named with how to send it, since a client that
    sent the file under another name (`file`) otherwise reads only 'Field required'."""
    loc = list(err.get("loc", ()))
    if err.get("type") == "missing" and len(loc) == 2 and loc[0] == "body":
        name = loc[1]
        return (f"the multipart/form-data field '{name}' is missing (a file goes in it as "
                f"curl -F '{name}=@FILE'; other field names are ignored)")
    return f"{_loc(err)}: {err['msg']}"


def install(app: FastAPI) -> None:
    @app.exception_handler(StarletteHTTPException)
    async def http_problem(_request: Request, exc: StarletteHTTPException) -> JSONResponse:
        detail = exc.detail if isinstance(exc.detail, str) else str(exc.detail)
        headers = dict(getattr(exc, "headers", None) or {})
        if exc.status_code == 413:  # the body is not read further: end the connection
            headers.setdefault("Connection", "close")
            if detail == "Content Too Large":  # Starlette's body limit says no more
                detail = "request body too large for this endpoint (see /api/v1/info for the limits)"
        return problem_response(exc.status_code, detail, headers=headers or None)

    @app.exception_handler(RequestValidationError)
    async def validation_problem(_request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = [{"loc": list(e.get("loc", ())), "msg": e.get("msg", ""), "type": e.get("type", "")}
                  for e in exc.errors()]
        detail = "; ".join(_message(e) for e in errors[:5]) or "invalid request"
        return problem_response(422, detail, errors=errors)

    @app.exception_handler(Exception)
    async def server_problem(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return problem_response(500, f"internal error ({type(exc).__name__}); see the server log")


def responses(*codes: int) -> dict:
    """OpenAPI `responses=` entries documenting problem details for these status codes."""
    from app.api.schemas import Problem

    return {c: {"model": Problem, "description": HTTPStatus(c).phrase} for c in codes}
