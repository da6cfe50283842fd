"""Map a memory-mapped index array's pages into the serving process before its first query.

Re-scoring reads the by-document rows of thousands of random documents a query. In a process
that has not touched those pages yet, every one costs a page fault even when the page cache
holds the file, and at ten million figures that is thousands of faults a query. Asking the
kernel to populate the mapping once (`MADV_POPULATE_READ`, Linux 5.14+) at open costs a
sequential read of the files instead, as search engines preload their hot files.
"""
from __future__ import annotations

import mmap

import numpy as np

MADV_POPULATE_READ = 22   # linux/mman.h; Python's mmap module does not name it


def _mapping_of(arr: np.ndarray) -> mmap.mmap | None:
    """The mmap object behind a (view of a) memory-mapped array, if any."""
    obj = arr
    while obj is not None:
        if isinstance(obj, mmap.mmap):
            return obj
        inner = getattr(obj, "_mmap", None)
        if isinstance(inner, mmap.mmap):
            return inner
        obj = getattr(obj, "base", None)
    return None


def populate(arr: np.ndarray) -> int:
    """Populate the page tables of the file mapping behind `arr`; the bytes populated (0 when
    `arr` is not memory-mapped or the kernel cannot do it)."""
    m = _mapping_of(arr)
    if m is None or len(m) == 0:
        return 0
    try:
        m.madvise(MADV_POPULATE_READ)
    except (OSError, ValueError):
        return 0
    return len(m)
