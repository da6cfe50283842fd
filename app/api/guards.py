"""HTTP guards that act before a route reads anything: the admin token, request body limits
(counted while the body streams in, whatever the transfer encoding) and security headers.

They are plain ASGI middleware so that a request refused here costs no disk and no parsing: an
admin upload without a valid token is answered before its first body byte is read.
"""
from __future__ import annotations

import secrets

from starlette.datastructures import Headers
from starlette.middleware.body_limit import RequestBodyLimitMiddleware

from app.api import problems

MISSING_TOKEN = "admin endpoints need an 'Authorization: Bearer <token>' header"
WRONG_TOKEN = "wrong admin token"


def bearer_failure(authorization: str | None, expected: str) -> tuple[int, str] | None:
    """None when `authorization` carries the admin token, else (401 or 403, reason). The token
    is compared in constant time."""
    scheme, _, token = (authorization or "").partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        return 401, MISSING_TOKEN
    if not expected or not secrets.compare_digest(token.encode(), expected.encode()):
        return 403, WRONG_TOKEN
    return None


def auth_problem(status: int, detail: str):
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return problems.problem_response(status, detail, headers=headers)


class AdminAuthMiddleware:
    """Admin routes: the bearer token is checked from the headers before the body is read."""

    def __init__(self, app, prefix: str, token: str):
        self.app, self.prefix, self.token = app, prefix, token

    async def __call__(self, scope, receive, send):
        path = scope.get("path", "")
        if (scope["type"] == "http" and scope.get("method") != "OPTIONS"
                and (path == self.prefix or path.startswith(self.prefix + "/"))):
            failure = bearer_failure(Headers(scope=scope).get("authorization"), self.token)
            if failure is not None:
                return await auth_problem(*failure)(scope, receive, send)
        return await self.app(scope, receive, send)


class RouteBodyLimits:
    """Request bodies bounded per path (Starlette's RequestBodyLimitMiddleware counts the bytes
    as they arrive, chunked or not): uploads get their own limit, every other request `default`."""

    def __init__(self, app, limits: dict[str, int], default: int):
        self.app = app
        self.default = RequestBodyLimitMiddleware(app, default)
        self.by_path = {path: RequestBodyLimitMiddleware(app, n) for path, n in limits.items()}

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        limiter = self.by_path.get(scope.get("path", ""), self.default)
        declared = Headers(scope=scope).get("content-length", "")
        if declared.isdigit() and int(declared) > limiter.max_body_size:  # refused unread
            return await problems.problem_response(
                413, f"request body too large ({int(declared) / 1e6:.1f} MB > "
                     f"{limiter.max_body_size / 1e6:.1f} MB for this endpoint)",
                headers={"Connection": "close"})(scope, receive, send)
        return await limiter(scope, receive, send)


# The UI and the API docs (app/api/docs.py) are same-origin static files and scripts (no inline
# script, no third-party host), so every page gets the same policy.
CONTENT_SECURITY_POLICY = ("default-src 'self'; img-src 'self' data: blob:; style-src 'self' 'unsafe-inline'; "
                           "object-src 'none'; base-uri 'self'; frame-ancestors 'none'; form-action 'self'")
SECURITY_HEADERS = [(b"x-content-type-options", b"nosniff"), (b"x-frame-options", b"DENY"),
                    (b"referrer-policy", b"no-referrer"), (b"cross-origin-opener-policy", b"same-origin"),
                    (b"permissions-policy", b"camera=(), microphone=(), geolocation=()")]


class SecurityHeadersMiddleware:
    """Standard browser hardening headers on every response (not overriding a route's own)."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        extra = [*SECURITY_HEADERS, (b"content-security-policy", CONTENT_SECURITY_POLICY.encode())]

        async def send_with_headers(message):
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                present = {k.lower() for k, _ in headers}
                headers += [(k, v) for k, v in extra if k not in present]
                message = {**message, "headers": headers}
            await send(message)

        return await self.app(scope, receive, send_with_headers)
