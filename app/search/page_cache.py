"""Read a saved index version into the operating system's page cache before queries need it.

A version is memory-mapped or read row by row (`RowStore`), so a freshly started server answers
its first queries from disk: at ten million figures a related-figures query reads about 700
scattered vector rows and 10,000 lexical rows, and until the cache has filled (a few hundred
queries) each one waits for hundreds of single-page reads. Reading the files once from start to
end is sequential I/O, seconds for gigabytes, as search engines do when they open an index
(Elasticsearch's `index.store.preload`). Nothing is mapped into the process, so its resident
memory does not grow; the pages belong to the cache, which the kernel may reclaim.

Files are read in the order queries touch them most densely, and only while the memory the
kernel reports as available (less a reserve) covers them, so warming a version too large for the
machine stops before it evicts itself. Each chunk is read twice: the kernel puts a page read once
on its inactive list, the first to be reclaimed, below what the index builder wrote and read
back (at 10M figures a single pass left 11.9 of the 16.6 GB it read in the cache after the
first 270 queries); a second access makes the version's pages as recent as those.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

# What queries read, by pages a related-figures query touches per page of the file (most first):
# the small arrays read for every hit (ids, types, row offsets, lengths), the lexical rows that
# re-scoring reads (10,000 rows a query at ten million figures), the paper views' rows, the
# postings, the float16 picture rows (2,000 a search by picture and a few hundred a related-figures
# query, in a file a third the size of the text rows) with the pictures' perceptual hashes (read for
# the same rows, a fifth of their size), the float16 text rows, the caption text (ten captions a page of hits). Files matching none (the paper views' columns,
# FAISS indexes and JSON, which loading reads whole anyway) are left alone.
HOT_FILES = (
    ("**/ids.npy", "**/*_ids.npy", "types/*.npy", "docs/captions_offsets.npy", "**/row_ptr.npy",
     "**/doc_len.npy", "papers/*/doc_norm.npy", "papers/*/idf.npy", "lexical/**/col_ptr.npy",
     "lexical/**/col_off.npy", "lexical/**/col_first.npy", "lexical/**/col_dlmin.npy", "lexical/**/col_tfmax.npy",
     "lexical/**/col_width.npy", "lexical/deleted.npy"),
    ("lexical/**/row_*.npy",),
    ("papers/*/row_*.npy",),
    ("lexical/**/col_*.npy",),
    ("visual/**/*.i8", "visual/**/*.f16", "looks/hashes.npy", "looks/panel_hashes.npy"),
    ("vectors/**/*.i8", "vectors/**/*.f16"),
    ("docs/captions_blob.npy",),
)
CHUNK = 4 << 20
RESERVE_FRACTION = 0.05  # of total memory, kept free for the process and others


@dataclass
class Warmed:
    """What `warm_version` read: bytes, files (wholly or in part), seconds, and the files left
    out for lack of memory."""
    bytes: int = 0
    files: int = 0
    seconds: float = 0.0
    skipped: list[str] = field(default_factory=list)


def hot_files(version_dir: str | Path) -> list[Path]:
    """The version's files that queries read, densest first (each listed once)."""
    root = Path(version_dir)
    seen: set[Path] = set()
    out: list[Path] = []
    for tier in HOT_FILES:
        for pattern in tier:
            for path in sorted(root.glob(pattern)):
                if path.is_file() and path not in seen:
                    seen.add(path)
                    out.append(path)
    return out


def memory_budget(reserve_fraction: float = RESERVE_FRACTION) -> int | None:
    """Bytes the page cache can take without pressing on anything in use: MemAvailable (free
    memory plus reclaimable cache, this version's cached pages included) less a reserve. None
    where /proc/meminfo is missing (no limit)."""
    try:
        info = dict(line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines())
        available = int(info["MemAvailable"].split()[0]) * 1024
        total = int(info["MemTotal"].split()[0]) * 1024
    except (OSError, KeyError, ValueError):
        return None
    return max(0, available - int(reserve_fraction * total))


def _read_through(path: Path, buf: bytearray, limit: int) -> int:
    """Read the first `limit` bytes of the file (all of a shorter one); returns the bytes read."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_SEQUENTIAL)
        offset = 0
        view = memoryview(buf)
        while offset < limit:
            chunk = [view[:min(len(buf), limit - offset)]]
            n = os.preadv(fd, chunk, offset)
            if n <= 0:
                break
            os.preadv(fd, chunk, offset)  # a second access moves the pages to the active list
            offset += n
        return offset
    finally:
        os.close(fd)


def warm_version(version_dir: str | Path, budget: int | None = -1) -> Warmed:
    """Read the version's hot files through the page cache while they fit in `budget` bytes
    (-1: `memory_budget()`; None: no limit). The file that reaches the budget is read up to it
    (its rows are read at random, so a part cached saves that part of the reads) and later files
    are skipped, so the densest files win."""
    if budget == -1:
        budget = memory_budget()
    t0 = time.perf_counter()
    done = Warmed()
    buf = bytearray(CHUNK)
    for path in hot_files(version_dir):
        left = path.stat().st_size if budget is None else budget - done.bytes
        if left <= 0:
            done.skipped.append(str(path.relative_to(version_dir)))
            continue
        try:
            done.bytes += _read_through(path, buf, left)
        except FileNotFoundError:  # a version removed while it was being warmed
            break
        done.files += 1
    done.seconds = time.perf_counter() - t0
    return done


def drop_from_cache(paths) -> None:
    """Drop these files' pages from the page cache (as after a reboot), for measurements of a
    cold start; nothing else on the machine is touched."""
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
