"""Access hints for memory-mapped index files.

Why: a page fault on a mapped file reads ahead (or around) the faulting page, 128 KiB or more, in
the hope that neighbouring pages are wanted next. Rows re-scored by a query (a document's terms,
a float16 vector) are a few hundred bytes scattered over gigabytes: the read-ahead is wasted I/O
and fills the page cache (and the process's resident set) with pages nobody asked for, which at
ten million figures evicts the pages queries do need. `MADV_RANDOM` reads just the faulting page.
Sequentially read data (posting lists) keep the default.
"""
from __future__ import annotations

import mmap

import numpy as np


def _mapping(arr: np.ndarray) -> mmap.mmap | None:
    base = arr
    while base is not None and not isinstance(base, mmap.mmap):
        base = getattr(base, "_mmap", None) or getattr(base, "base", None)
    return base


def random_access(arr: np.ndarray) -> np.ndarray:
    """Mark the file mapping behind `arr` (if any) as randomly accessed; returns `arr`."""
    m = _mapping(arr)
    if m is not None and hasattr(mmap, "MADV_RANDOM"):
        try:
            m.madvise(mmap.MADV_RANDOM)
        except (OSError, ValueError):  # pragma: no cover - a platform without madvise on this map
            pass
    return arr
