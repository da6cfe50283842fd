"""One bounded pool for the expensive public work (high-resolution renders from the PDF, panel
cut-outs, query image decodes, picture models): at most `workers` run at once and at most
`queue` wait; past that a request gets 429 with Retry-After at once, instead of piling up
threads and memory. Renders and cut-outs run in `workers` separate processes (`isolated`):
PyMuPDF holds the GIL while it rasterises, which would stall the event loop and with it the
health endpoints, and a render's memory stays out of the server process. Work that needs the
server's objects (the index, loaded models) runs in threads. Rendered images are kept in a small
LRU cache keyed by what was asked (figure, rounded scale or panel), bounded in bytes. The health
endpoints never touch this pool.
"""
from __future__ import annotations

import multiprocessing
import os
import threading
from collections import OrderedDict
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from typing import Callable, Hashable, TypeVar

from fastapi import HTTPException

T = TypeVar("T")


class Busy(HTTPException):
    def __init__(self, retry_after_s: int):
        super().__init__(429, "the server is busy with other image renders; try again shortly",
                         headers={"Retry-After": str(retry_after_s)})


def _lower_priority() -> None:
    """Render processes yield the CPU to the server (its event loop answers health checks)."""
    os.nice(5)


class HeavyPool:
    def __init__(self, workers: int = 2, queue: int = 8, cache_mb: float = 64, retry_after_s: int = 2):
        self.workers, self.queue, self.retry_after_s = workers, queue, retry_after_s
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="figsearch-heavy")
        self._processes: ProcessPoolExecutor | None = None  # started on first use
        self._slots = threading.BoundedSemaphore(workers + queue)
        self._running = threading.BoundedSemaphore(workers)  # threads and processes together
        self.computed = 0
        self._cache: OrderedDict[Hashable, bytes] = OrderedDict()
        self._cache_bytes, self._cache_max = 0, int(cache_mb * 1024 * 1024)
        self._lock = threading.Lock()
        self.rejected = 0

    def _process_pool(self) -> ProcessPoolExecutor:
        with self._lock:
            if self._processes is None:  # spawn: the server has threads (and maybe torch) loaded
                self._processes = ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("spawn"),
                                                      max_tasks_per_child=200, initializer=_lower_priority)
            return self._processes

    def run(self, fn: Callable[..., T], *args, isolated: bool = False) -> T:
        """Run `fn(*args)` in the pool and wait for it (from a request thread); Busy (429) when
        `workers` run and `queue` wait already. `isolated`: in a worker process (`fn` and its
        arguments must pickle)."""
        if not self._slots.acquire(blocking=False):
            self.rejected += 1
            raise Busy(self.retry_after_s)
        try:
            with self._running:
                self.computed += 1
                pool = self._process_pool() if isolated else self._pool
                return pool.submit(fn, *args).result()
        finally:
            self._slots.release()

    def cached(self, key: Hashable, fn: Callable[..., bytes], *args, isolated: bool = True) -> bytes:
        """The cached bytes for `key`, else `fn(*args)` run in the pool (and cached)."""
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)
                return hit
        data = self.run(fn, *args, isolated=isolated)
        if len(data) <= self._cache_max // 4:
            with self._lock:
                if key not in self._cache:
                    self._cache[key] = data
                    self._cache_bytes += len(data)
                while self._cache_bytes > self._cache_max:
                    _k, old = self._cache.popitem(last=False)
                    self._cache_bytes -= len(old)
        return data

    def shutdown(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        if self._processes is not None:
            self._processes.shutdown(wait=True, cancel_futures=True)
