"""A vector part made of immutable segments, for index versions that grow without a rebuild.

Each segment is a `VectorIndex` holding a contiguous run of rows (the rows a build added, keyed
by their row numbers); a search asks every segment for its nearest live rows and keeps the best,
so the answer is the one a single index of the live rows gives (exact for flat segments).
Deleted rows (tombstones, see app.search.doc_table) are never returned and disappear when the
segments are merged into one `VectorIndex` (`merged`).

On disk: d/state.json (segment names, first rows), d/deleted.npy and one `VectorIndex` folder per
segment under d/segments/. A segment already stored in an earlier version is hard-linked, not
rewritten (app.model_store.versions.link_tree).
"""
from __future__ import annotations

import json
import secrets
from pathlib import Path

import numpy as np

from app.model_store.versions import link_tree
from app.search.vectors import VectorIndex


class SegmentedVectors:
    """Rows [bases[i], bases[i+1]) live in segment i; see the module docstring."""

    def __init__(self, dim: int):
        self.dim = int(dim)
        self.segments: list[VectorIndex] = []
        self.homes: list[Path | None] = []   # where each segment is stored (None: only in memory)
        self.names: list[str] = []
        self.bases = np.zeros(1, np.int64)
        self.deleted = np.zeros(0, bool)

    @classmethod
    def of(cls, part, home: Path | None = None) -> "SegmentedVectors":
        """A segmented part holding what `part` (a VectorIndex keyed by rows 0..n-1, stored under
        `home`, or a SegmentedVectors) holds."""
        if isinstance(part, SegmentedVectors):
            out = cls(part.dim)
            out.segments, out.homes, out.names = list(part.segments), list(part.homes), list(part.names)
            out.bases, out.deleted = part.bases.copy(), part.deleted.copy()
            return out
        out = cls(part.dim)
        if not np.array_equal(part.ids, np.arange(len(part))):
            raise ValueError("a vector part is keyed by its rows 0..n-1")
        out._append(part, home)
        return out

    def _append(self, part: VectorIndex, home: Path | None) -> None:
        self.segments.append(part)
        self.homes.append(home)
        self.names.append(f"seg-{secrets.token_hex(6)}")
        self.bases = np.r_[self.bases, self.bases[-1] + len(part)]
        self.deleted = np.r_[self.deleted, np.zeros(len(part), bool)]

    def add(self, vecs: np.ndarray, kind: str = "auto", gpu: str = "auto") -> range:
        """Add vectors as one new segment of the next rows; returns their row numbers."""
        first = int(self.bases[-1])
        part = VectorIndex(self.dim, kind=kind, gpu=gpu)
        part.add(np.arange(first, first + len(vecs)), vecs)
        self._append(part, None)
        return range(first, first + len(vecs))

    def delete(self, rows) -> None:
        self.deleted[np.asarray(rows, dtype=np.int64)] = True

    def __len__(self) -> int:
        return int(self.bases[-1])

    # --------------------------------------------------------------- queries
    def nearest_candidates(self, vecs, k: int) -> tuple[np.ndarray, np.ndarray]:
        """About the k nearest live rows, as candidates for a re-ranking (VectorIndex.nearest_candidates)."""
        return self.search(vecs, k, candidates_only=True)

    def search(self, vecs, k: int, candidates_only: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """Top-k (rows, cosines) of the live rows per query row, shape (nq, k); missing slots -1.
        `candidates_only`: each segment answers with its `nearest_candidates`."""
        q = np.atleast_2d(np.asarray(vecs, dtype=np.float32))
        k = int(k)
        all_ids, all_sims = [], []
        for i, seg in enumerate(self.segments):
            lo, hi = int(self.bases[i]), int(self.bases[i + 1])
            n_deleted = int(self.deleted[lo:hi].sum())
            ask = seg.nearest_candidates if candidates_only else seg.search
            ids, sims = ask(q, min(k + n_deleted, hi - lo))
            sims = np.where((ids >= 0) & ~self.deleted[np.maximum(ids, 0)], sims, -np.inf)
            all_ids.append(ids)
            all_sims.append(sims)
        if not all_ids:
            return np.full((len(q), max(k, 0)), -1, np.int64), np.zeros((len(q), max(k, 0)), np.float32)
        ids, sims = np.concatenate(all_ids, axis=1), np.concatenate(all_sims, axis=1)
        best = np.argsort(-sims, axis=1, kind="stable")[:, :k]  # ties: the lower row first, as one index
        ids, sims = np.take_along_axis(ids, best, 1), np.take_along_axis(sims, best, 1)
        missing = ~np.isfinite(sims)
        ids, sims = np.where(missing, -1, ids), np.where(missing, 0.0, sims).astype(np.float32)
        if ids.shape[1] < k:
            pad = k - ids.shape[1]
            ids = np.pad(ids, ((0, 0), (0, pad)), constant_values=-1)
            sims = np.pad(sims, ((0, 0), (0, pad)))
        return ids, sims

    def vectors_for(self, ids) -> np.ndarray:
        """Unit float32 vectors of rows (deleted rows too: they are still stored)."""
        ids = np.asarray(ids, dtype=np.int64).ravel()
        if len(ids) and (ids.min() < 0 or ids.max() >= len(self)):
            raise KeyError(f"unknown vector ids: {ids[(ids < 0) | (ids >= len(self))][:5].tolist()}")
        out = np.zeros((len(ids), self.dim), np.float32)
        seg_of = np.searchsorted(self.bases, ids, side="right") - 1
        for i in np.unique(seg_of).tolist():
            where = seg_of == i
            out[where] = self.segments[i].vectors_for(ids[where])
        return out

    def merged(self, rows: np.ndarray, kind: str = "auto", gpu: str = "auto") -> VectorIndex:
        """One VectorIndex whose row j holds the vector of row rows[j] (the merge's new numbering)."""
        rows = np.asarray(rows, dtype=np.int64)
        out = VectorIndex(self.dim, kind=kind, gpu=gpu)
        step = 100_000
        for s in range(0, len(rows), step):
            out.add(np.arange(s, min(len(rows), s + step)), self.vectors_for(rows[s:s + step]))
        return out

    # ----------------------------------------------------------- persistence
    def save(self, d: str | Path) -> None:
        d = Path(d)
        for seg, home, name in zip(self.segments, self.homes, self.names):
            target = d / "segments" / name
            if home is None or not home.is_dir():
                seg.save(target)
            elif home.resolve() != target.resolve():
                link_tree(home, target)
        d.mkdir(parents=True, exist_ok=True)
        np.save(d / "deleted.npy", self.deleted)
        (d / "state.json").write_text(json.dumps({"format": 1, "dim": self.dim, "segments": self.names,
                                                  "bases": self.bases.tolist()}))

    @classmethod
    def load(cls, d: str | Path, gpu: str = "auto", mmap: bool = False) -> "SegmentedVectors":
        d = Path(d)
        state = json.loads((d / "state.json").read_text())
        out = cls(state["dim"])
        out.names = list(state["segments"])
        out.homes = [d / "segments" / name for name in out.names]
        out.segments = [VectorIndex.load(home, gpu=gpu, mmap=mmap) for home in out.homes]
        out.bases = np.asarray(state["bases"], dtype=np.int64)
        out.deleted = np.load(d / "deleted.npy")
        return out

    def __repr__(self) -> str:
        return (f"SegmentedVectors(dim={self.dim}, rows={len(self)}, deleted={int(self.deleted.sum())}, "
                f"segments={len(self.segments)})")
