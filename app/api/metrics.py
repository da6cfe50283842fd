"""Prometheus metrics in the text exposition format (version 0.0.4), hand-rolled: one small
registry per app (tests create many apps), no extra dependency.

- `figsearch_http_request_duration_seconds` histogram per method and route template,
  `figsearch_http_requests_total` counter per method, route and status (pure ASGI middleware);
- gauges computed at scrape time by callbacks: ingest files by status, papers by status,
  figures in the database and in the loaded index.
"""
from __future__ import annotations

import bisect
import threading
import time
from typing import Callable, Iterable

BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


def _labels(d: dict[str, str]) -> str:
    if not d:
        return ""
    esc = lambda v: str(v).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')  # noqa: E731
    return "{" + ",".join(f'{k}="{esc(v)}"' for k, v in d.items()) + "}"


def _num(v: float) -> str:
    if v == float("inf"):
        return "+Inf"
    return repr(float(v)) if isinstance(v, float) else str(v)


class Histogram:
    def __init__(self, name: str, help: str, labelnames: tuple[str, ...], buckets=BUCKETS):
        self.name, self.help, self.labelnames, self.buckets = name, help, labelnames, tuple(buckets)
        self._data: dict[tuple, list] = {}  # labels -> [bucket counts..., sum, count]
        self._lock = threading.Lock()

    def observe(self, value: float, *labels: str) -> None:
        i = bisect.bisect_left(self.buckets, value)
        with self._lock:
            row = self._data.get(labels)
            if row is None:
                row = self._data[labels] = [0] * (len(self.buckets) + 1) + [0.0, 0]
            row[i] += 1  # index len(buckets) = above the largest bucket
            row[-2] += value
            row[-1] += 1

    def render(self) -> Iterable[str]:
        yield f"# HELP {self.name} {self.help}"
        yield f"# TYPE {self.name} histogram"
        with self._lock:
            items = sorted((k, list(v)) for k, v in self._data.items())
        for labels, row in items:
            base = dict(zip(self.labelnames, labels))
            cum = 0
            for b, c in zip(self.buckets, row):
                cum += c
                yield f"{self.name}_bucket{_labels({**base, 'le': _num(float(b))})} {cum}"
            yield f"{self.name}_bucket{_labels({**base, 'le': '+Inf'})} {row[-1]}"
            yield f"{self.name}_sum{_labels(base)} {row[-2]!r}"
            yield f"{self.name}_count{_labels(base)} {row[-1]}"


class Counter:
    def __init__(self, name: str, help: str, labelnames: tuple[str, ...]):
        self.name, self.help, self.labelnames = name, help, labelnames
        self._data: dict[tuple, float] = {}
        self._lock = threading.Lock()

    def inc(self, *labels: str, by: float = 1) -> None:
        with self._lock:
            self._data[labels] = self._data.get(labels, 0) + by

    def render(self) -> Iterable[str]:
        yield f"# HELP {self.name} {self.help}"
        yield f"# TYPE {self.name} counter"
        with self._lock:
            items = sorted(self._data.items())
        for labels, v in items:
            yield f"{self.name}{_labels(dict(zip(self.labelnames, labels)))} {_num(v)}"


class Gauge:
    """Values computed at scrape time: `collect()` returns [(labels dict, value), ...]."""

    def __init__(self, name: str, help: str, collect: Callable[[], list[tuple[dict, float]]]):
        self.name, self.help, self.collect = name, help, collect

    def render(self) -> Iterable[str]:
        yield f"# HELP {self.name} {self.help}"
        yield f"# TYPE {self.name} gauge"
        for labels, v in self.collect():
            yield f"{self.name}{_labels(labels)} {_num(v)}"


class Registry:
    def __init__(self):
        self.latency = Histogram("figsearch_http_request_duration_seconds",
                                 "HTTP request latency by route template.", ("method", "route"))
        self.requests = Counter("figsearch_http_requests_total", "HTTP requests by route and status.",
                                ("method", "route", "status"))
        self.gauges: list[Gauge] = []
        self.templates: dict = {}  # endpoint function -> full route template

    def add_routes(self, routes, prefix: str = "") -> None:
        for r in routes:
            if getattr(r, "endpoint", None) is not None and getattr(r, "name", "") != "api_not_found":
                self.templates[r.endpoint] = prefix + r.path

    def gauge(self, name: str, help: str, collect: Callable[[], list[tuple[dict, float]]]) -> None:
        self.gauges.append(Gauge(name, help, collect))

    def render(self) -> str:
        lines: list[str] = []
        for m in (self.latency, self.requests):
            lines += m.render()
        for g in self.gauges:
            try:
                lines += list(g.render())
            except Exception as exc:  # a failing collector (DB down) must not hide the others
                lines.append(f"# {g.name} unavailable: {type(exc).__name__}")
        return "\n".join(lines) + "\n"


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
            method = scope.get("method", "")
            self.registry.latency.observe(time.perf_counter() - t0, method, route)
            self.registry.requests.inc(method, route, str(status["code"]))
