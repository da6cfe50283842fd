"""One bounded pool for the expensive public work (high-resolution renders from the PDF, panel
cut-outs, query image decodes): at most `workers` run at once and at most `queue` wait; past
that a request gets 429 with Retry-After at once, instead of piling up threads and memory.
Rendered images are kept in a small LRU cache keyed by what was asked (figure, rounded scale or
panel), bounded in bytes. The health endpoints never touch this pool.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Hashable, TypeVar

from fastapi import HTTPException

T = TypeVar("T")


class Busy(HTTPException):
    def __init__(self, retry_after_s: int):
        super().__init__(429, "the server is busy with other image renders; try again shortly",
                         headers={"Retry-After": str(retry_after_s)})


class HeavyPool:
    def __init__(self, workers: int = 2, queue: int = 8, cache_mb: float = 64, retry_after_s: int = 2):
        self.workers, self.queue, self.retry_after_s = workers, queue, retry_after_s
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="figsearch-heavy")
        self._slots = threading.BoundedSemaphore(workers + queue)
        self._cache: OrderedDict[Hashable, bytes] = OrderedDict()
        self._cache_bytes, self._cache_max = 0, int(cache_mb * 1024 * 1024)
        self._lock = threading.Lock()
        self.rejected = 0

    def run(self, fn: Callable[..., T], *args) -> T:
        """Run `fn(*args)` in the pool and wait for it (from a request thread); Busy (429) when
        `workers` run and `queue` wait already."""
        if not self._slots.acquire(blocking=False):
            self.rejected += 1
            raise Busy(self.retry_after_s)
        try:
            return self._pool.submit(fn, *args).result()
        finally:
            self._slots.release()

    def cached(self, key: Hashable, make: Callable[[], bytes]) -> bytes:
        """The cached bytes for `key`, else `make()` run in the pool (and cached)."""
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)
                return hit
        data = self.run(make)
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
