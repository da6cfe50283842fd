"""Prometheus metrics through `prometheus_client`: one `CollectorRegistry` per app (tests create
many apps in one process), exposed by `generate_latest` in the text format (version 0.0.4).

- `figsearch_http_request_duration_seconds` histogram per method and route template,
  `figsearch_http_requests_total` counter per method, route and status class (pure ASGI
  middleware). Every label is bounded, whatever a client sends: a method outside the standard
  ones is `other`, a path is its route template (`unmatched` / `static` otherwise), a status
  is its class (`2xx`, `4xx`, ...), so `/metrics` cannot be grown from outside;
- gauges computed at scrape time by callbacks (a custom collector): ingest files by status,
  papers by status, figures in the database and in the loaded index.
"""
from __future__ import annotations

import logging
import time
from typing import Callable, Iterable

import prometheus_client
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client import Counter as _Counter
from prometheus_client import Histogram as _Histogram
from prometheus_client.core import Metric
from prometheus_client.registry import Collector

log = logging.getLogger(__name__)

BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"  # what generate_latest writes

# no `<counter>_created` / `<histogram>_created` series: the names stay the documented ones
getattr(prometheus_client, "disable_created_metrics", lambda: None)()


class _ScrapeGauges(Collector):
    """Gauges whose values a callback computes at each scrape: `collect()` of a gauge returns
    [(labels dict, value), ...]. A failing callback (database down) is logged and leaves its
    gauge without samples; the other metrics are still exposed."""

    def __init__(self):
        self.gauges: list[tuple[str, str, Callable[[], list[tuple[dict, float]]]]] = []

    def collect(self) -> Iterable[Metric]:
        for name, help, fn in self.gauges:
            m = Metric(name, help, "gauge")
            try:
                for labels, v in fn():
                    m.add_sample(name, {k: str(x) for k, x in labels.items()}, float(v))
            except Exception as exc:
                log.warning("metric %s unavailable: %s: %s", name, type(exc).__name__, exc)
            yield m


class _Latency:
    def __init__(self, registry: CollectorRegistry):
        self._h = _Histogram("figsearch_http_request_duration_seconds", "HTTP request latency by route template.",
                             ("method", "route"), buckets=BUCKETS, registry=registry)

    def observe(self, value: float, method: str, route: str) -> None:
        self._h.labels(method, route).observe(value)


class _Requests:
    def __init__(self, registry: CollectorRegistry):
        # prometheus_client adds the `_total` suffix: figsearch_http_requests_total
        self._c = _Counter("figsearch_http_requests", "HTTP requests by method, route template and status class.",
                           ("method", "route", "status"), registry=registry)

    def inc(self, method: str, route: str, status: str) -> None:
        self._c.labels(method, route, status).inc()


class Registry:
    def __init__(self):
        self.registry = CollectorRegistry(auto_describe=False)
        self.latency = _Latency(self.registry)
        self.requests = _Requests(self.registry)
        self._gauges = _ScrapeGauges()
        self.registry.register(self._gauges)
        self.templates: dict = {}  # endpoint function -> full route template

    def add_routes(self, routes, prefix: str = "") -> None:
        for r in routes:
            if getattr(r, "endpoint", None) is not None and getattr(r, "name", "") != "api_not_found":
                self.templates[r.endpoint] = prefix + r.path

    def gauge(self, name: str, help: str, collect: Callable[[], list[tuple[dict, float]]]) -> None:
        self._gauges.gauges.append((name, help, collect))

    def render(self) -> str:
        return generate_latest(self.registry).decode("utf-8")


STANDARD_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "CONNECT"})


def method_label(method: str) -> str:
    """The request method if it is a standard one, else `other` (clients invent methods)."""
    return method if method in STANDARD_METHODS else "other"


def status_label(code: int) -> str:
    """The status class: `2xx`, `3xx`, `4xx`, `5xx` (`other` outside 100-599)."""
    return f"{code // 100}xx" if 100 <= code <= 599 else "other"


def route_label(scope: dict, templates: dict | None = None) -> str:
    """The route template ("/api/v1/figures/{figure_id}"), never the raw path (bounded labels)."""
    endpoint = scope.get("endpoint")
    if templates and endpoint in templates:
        return templates[endpoint]
    route = scope.get("route")
    path = getattr(route, "path", None)
    if path and getattr(route, "name", "") != "api_not_found":
        return path
    p = scope.get("path", "")
    if p.startswith("/api/"):
        return "unmatched"
    return "static"


class MetricsMiddleware:
    """Pure ASGI middleware (cheaper than BaseHTTPMiddleware on the hot path)."""

    def __init__(self, app, registry: Registry):
        self.app, self.registry = app, registry

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        t0 = time.perf_counter()
        status = {"code": 500}

        async def send_wrapper(message):
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            route = route_label(scope, self.registry.templates)
            method = method_label(scope.get("method", ""))
            self.registry.latency.observe(time.perf_counter() - t0, method, route)
            self.registry.requests.inc(method, route, status_label(status["code"]))
