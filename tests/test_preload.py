"""Memory-mapped rows are mapped into the process when a segment is opened, so that queries do not
pay a page fault per row they re-score."""
from pathlib import Path

import numpy as np

from app.search.postings import PostingsSegment
from app.search.preload import populate


def _mapped_kib(path: Path) -> int:
    """Resident KiB of this process's mappings of `path` (/proc/self/smaps)."""
    total, inside = 0, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        fields = line.split()
        if "-" in fields[0] and len(fields) >= 5:   # a mapping's header line
            inside = len(fields) >= 6 and fields[-1] == str(path)
        elif inside and fields[0] == "Rss:":
            total += int(fields[1])
    return total


def test_populate_maps_a_memory_mapped_array_and_ignores_others(tmp_path):
    np.save(tmp_path / "a.npy", np.arange(2_000_000, dtype=np.int64))   # 16 MB
    arr = np.load(tmp_path / "a.npy", mmap_mode="r").view(np.ndarray)
    assert _mapped_kib(tmp_path / "a.npy") < 1024
    assert populate(arr) >= arr.nbytes
    assert _mapped_kib(tmp_path / "a.npy") >= arr.nbytes // 1024
    assert populate(np.arange(10)) == 0


def test_opened_segment_has_its_rows_mapped_not_its_postings(tmp_path):
    rng = np.random.default_rng(0)
    n, per_doc = 20_000, 60
    terms = np.sort(rng.choice(5_000, size=(n, per_doc), replace=True), axis=1)
    rows = [np.unique(t) for t in terms]
    row_ptr = np.r_[0, np.cumsum([len(r) for r in rows])]
    seg = PostingsSegment.build(row_ptr, np.concatenate(rows), np.ones(int(row_ptr[-1]), np.int64),
                                np.full(n, per_doc), 5_000)
    seg.save(tmp_path / "seg")
    opened = PostingsSegment.load(tmp_path / "seg", mmap=True)
    assert _mapped_kib(tmp_path / "seg" / "row_terms.npy") >= opened.row_terms.nbytes // 1024
    assert _mapped_kib(tmp_path / "seg" / "col_bytes.npy") < opened.col_bytes.nbytes // 1024
