"""Small linear algebra on one thread (a query's products; the figure-type head's fits).

Why: a query's matrix products are small (at most a few thousand rows of 384 numbers: the
re-scoring of vector candidates, the cosines of the re-ranker). Split over OpenBLAS's threads
they wait for each other: on this project's 2-core machine, with other processes running, one
2,000 x 384 product took 3-13 ms with two threads and 0.13 ms with one. A server gets its
parallelism from concurrent requests instead. The results are the same bits either way (each
output element is summed by one thread in the same order).

The limit is process-wide while a query runs (OpenBLAS has no per-thread setting): queries
running concurrently may briefly see the other's restored setting, which changes their speed,
never their results.
"""
from __future__ import annotations

import functools
import sys

from threadpoolctl import ThreadpoolController

_controller: list = [None, -1]  # the controller, and how many modules were imported when it was made


def one_blas_thread():
    """A context in which the BLAS libraries use one thread. The controller lists the libraries
    loaded when it is made, so it is made again after further imports (a later import can load
    another BLAS, e.g. faiss's or PyTorch's)."""
    if _controller[0] is None or _controller[1] != len(sys.modules):
        _controller[0], _controller[1] = ThreadpoolController(), len(sys.modules)
    return _controller[0].limit(limits=1, user_api="blas")


def one_thread(fn):
    """Run `fn` with the BLAS libraries limited to one thread."""
    @functools.wraps(fn)
    def run(*args, **kwargs):
        with one_blas_thread():
            return fn(*args, **kwargs)
    return run
