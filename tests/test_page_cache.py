"""Warming a saved index version: the files queries read, densest first, within a memory budget."""
from pathlib import Path

import numpy as np

from app.search.page_cache import hot_files, memory_budget, warm_version


def _version(root: Path) -> Path:
    files = {"lexical/segments/seg-a/row_terms.npy": 3000, "lexical/segments/seg-a/col_bytes.npy": 2000,
             "vectors/vectors.f16": 5000, "visual/vectors.f16": 4000, "papers/body/row_terms.npy": 1000,
             "papers/body/col_docs.npy": 1000, "docs/captions_blob.npy": 700, "docs/figure_ids.npy": 100,
             "vectors/index.faiss": 900, "meta.json": 10, "looks/hashes.npy": 800}
    for name, size in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(np.random.default_rng(size).bytes(size))
    return root


def test_hot_files_are_ordered_by_what_queries_read(tmp_path):
    names = [str(p.relative_to(tmp_path)) for p in hot_files(_version(tmp_path))]
    assert names == ["docs/figure_ids.npy", "lexical/segments/seg-a/row_terms.npy", "papers/body/row_terms.npy",
                     "lexical/segments/seg-a/col_bytes.npy", "visual/vectors.f16", "looks/hashes.npy",
                     "vectors/vectors.f16", "docs/captions_blob.npy"]


def test_warming_reads_every_hot_file_without_a_budget(tmp_path):
    done = warm_version(_version(tmp_path), budget=None)
    assert done.bytes == 3000 + 2000 + 5000 + 4000 + 800 + 1000 + 100 + 700
    assert done.files == 8 and done.skipped == []


def test_warming_reads_up_to_the_budget_and_leaves_the_rest(tmp_path):
    done = warm_version(_version(tmp_path), budget=9000)
    # ids 100, lexical rows 3000, paper rows 1000, postings 2000, then 2900 of the 4000 picture-row bytes
    assert done.bytes == 9000 and done.files == 5
    assert done.skipped == ["looks/hashes.npy", "vectors/vectors.f16", "docs/captions_blob.npy"]


def test_memory_budget_is_below_what_the_machine_has():
    budget = memory_budget()
    total = int(Path("/proc/meminfo").read_text().split("MemTotal:")[1].split()[0]) * 1024
    assert budget is not None and 0 <= budget < total
