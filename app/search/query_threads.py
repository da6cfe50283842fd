"""Independent parts of one query run side by side on a small shared pool of threads.

Why: on a big collection one related-figures query spends most of its time in NumPy and FAISS
calls that release the GIL (the pass over each segment's postings, the nearest-vector scans), so
its independent parts (one segment's postings and another's; the first stage and the nearest
texts and papers; the text and picture rows the re-ranker reads, which wait on the disk when they
are not cached) can use a second core. Results are the same bits: every part computes what it
computed alone, and the parts' results are put together in the same order.

It helps only while a core is idle: on a quiet 2-core machine related figures' wall p50 went from
10.5 to 8.5 ms at 1M figures and 20.9 to 20.2 ms at 3M, p99 from 28.8 to 25.1 ms at 3M, for 10-32%
more CPU; with another session busy, nothing (README, Measurements, "threads per query").
`FIGSEARCH_QUERY_THREADS` sets how many threads a query may use (1 = everything in the calling
thread). A part that no thread has started when the caller needs it is run by the caller, so a
part may itself split into parts without waiting for a thread that waits for it.
"""
from __future__ import annotations

import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Callable, Sequence, TypeVar

from app.settings import Settings

T = TypeVar("T")

_pool: list = [None, 0]  # the executor, and the threads per query it was made for
_lock = threading.Lock()


def query_threads() -> int:
    """Threads one query may use (the setting, read once)."""
    if _pool[1] == 0:
        with _lock:
            if _pool[1] == 0:
                _set(Settings().query_threads)
    return _pool[1]


def set_query_threads(n: int) -> None:
    """Use `n` threads per query from now on (tests and measurements compare 1 with more)."""
    with _lock:
        _set(n)


def _set(n: int) -> None:
    old = _pool[0]
    _pool[0] = ThreadPoolExecutor(n - 1, thread_name_prefix="query-part") if n > 1 else None
    _pool[1] = max(1, n)
    if old is not None:
        old.shutdown(wait=False)


def run_parts(parts: Sequence[Callable[[], T]]) -> list[T]:
    """Each part's result, in order: the first part in the calling thread, the others on the
    pool's threads when one is free. The pool starts them from the first on; the caller, once its
    own part is done, runs those no thread has started from the last back, and only then waits.
    (Taking them in order, the caller found the next part already started, waited for it while
    the pool started the one after, and so ran one part while the pool ran the rest: at ten
    million figures the main thread of a related-figures query waited 11 ms of its 33.)"""
    if len(parts) <= 1 or query_threads() <= 1:
        return [part() for part in parts]
    pool = _pool[0]
    if pool is None:
        return [part() for part in parts]
    futures: list[Future] = [pool.submit(part) for part in parts[1:]]
    out: list = [parts[0]()] + [None] * len(futures)
    started = len(parts)  # parts[1:started] were started by the pool (it takes them in order)
    while started > 1 and futures[started - 2].cancel():
        started -= 1
        out[started] = parts[started]()
    for i in range(1, started):
        out[i] = futures[i - 1].result()
    return out
