"""Read-ahead hints on mapped index files, and the first stage's budget growing with the collection."""
import mmap
from pathlib import Path

import numpy as np
import pytest

from app.search.ann import RowStore
from app.search.mapped import _mapping, random_access
from app.search.postings import PostingsSegment
from app.search.searcher import Searcher
from app.search.segments import SegmentedIndex


def test_random_access_finds_the_mapping_behind_loaded_and_viewed_arrays(tmp_path):
    np.save(tmp_path / "a.npy", np.arange(1000))
    loaded = np.load(tmp_path / "a.npy", mmap_mode="r").view(np.ndarray)[10:20]
    assert isinstance(_mapping(loaded), mmap.mmap)
    assert _mapping(np.arange(5)) is None
    assert random_access(loaded) is loaded and (loaded == np.arange(10, 20)).all()


def _vm_flags(path: Path) -> list[set[str]]:
    """The kernel's VmFlags of each mapping of `path` in this process ("rr": random read advised)."""
    out, current = [], None
    for line in Path("/proc/self/smaps").read_text().splitlines():
        if line.split() and "-" in line.split()[0] and not line.endswith(":"):
            fields = line.split()
            current = fields[-1] if len(fields) >= 6 else None
        elif line.startswith("VmFlags:") and current == str(path):
            out.append(set(line.split()[1:]))
    return out


@pytest.mark.skipif(not Path("/proc/self/smaps").exists(), reason="needs Linux /proc")
def test_row_files_are_mapped_for_random_reads_and_posting_lists_are_not(tmp_path):
    store = RowStore(4, tmp_path / "rows.f16")
    store.append(np.ones((3, 4), np.float32))
    store.rows([1])
    assert _vm_flags(tmp_path / "rows.f16") and all("rr" in f for f in _vm_flags(tmp_path / "rows.f16"))
    lex = SegmentedIndex(path=tmp_path / "lex")
    lex.add_documents([["a", "b"], ["b", "c", "c"]])
    d = tmp_path / "lex" / "segments" / lex.names[0]
    seg = PostingsSegment.load(d)
    assert all("rr" in f for f in _vm_flags((d / "row_terms.npy").resolve()))
    assert _vm_flags((d / "col_bytes.npy").resolve()) and not any("rr" in f for f in _vm_flags((d / "col_bytes.npy").resolve()))
    del seg


def test_mapped_rows_read_the_same_values(tmp_path):
    store = RowStore(4, tmp_path / "rows.f16")
    rows = np.arange(40, dtype=np.float32).reshape(10, 4)
    store.append(rows)
    assert isinstance(_mapping(store._array()), mmap.mmap)
    assert np.array_equal(store.rows([7, 2, 7]), rows[[7, 2, 7]])
    lex = SegmentedIndex(path=tmp_path / "lex")
    lex.add_documents([["a", "b"], ["b", "c", "c"], ["d"]])
    seg = PostingsSegment.load(tmp_path / "lex" / "segments" / lex.names[0])
    assert isinstance(_mapping(seg.row_terms), mmap.mmap)
    indptr, terms, tf = seg.rows(np.array([1]))
    assert [lex.vocab[t] for t in terms.tolist()] == ["b", "c"] and tf.tolist() == [1, 2]


def test_first_stage_postings_budget_grows_with_the_collection():
    small, million, ten = (Searcher.first_stage_budget(n)["max_postings"] for n in (20_000, 1_000_000, 10_000_000))
    assert small == million == Searcher.similar_max_postings
    assert ten == 10 * million
