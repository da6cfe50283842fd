"""Compressed vector search for large collections: FAISS IVF-PQ codes in memory, re-scoring of
the best candidates from 8-bit rows read from disk.

Why: an exact or 8-bit index keeps every vector in memory (384 bytes a 384-d vector with SQ8,
3.8 GB at ten million figures, more for float32). Product-quantised codes take `dim / 8` bytes a
vector (48 for 384-d), and their approximate scores only have to bring the true neighbours into
the first `rescore` candidates: those are then re-scored from the stored rows, which stay on disk
(`RowStore`: 8 bits a value and a scale a row; a file of up to 1 GiB memory-mapped, a larger one
read a row at a time, so the rows of a large collection never become resident in the process).
The rows double as the vector store (`rows`), so nothing is kept twice.

Parameters (see README for the measurements): about sqrt(n) coarse cells, `dim / 8`
sub-quantisers of 8 bits, `nprobe` cells probed and `rescore` candidates re-scored per query
(fewer where the neighbours are only candidates of a re-ranking: `VectorIndex.nearest_candidates`).
"""
from __future__ import annotations

import json
import math
import os
from pathlib import Path

import numpy as np

STORE_FILE = "vectors.i8"          # the rows an IVF-PQ index re-scores from: 8 bits a value and a scale a row
PENDING_FILE = "pending.f16"       # rows waiting to be indexed, kept at full float16 precision
LEGACY_STORE_FILE = "vectors.f16"  # the float16 rows of indexes saved by earlier versions


def store_file(d: Path) -> Path:
    """The row file of a saved IVF-PQ index: 8-bit rows, or an earlier version's float16 rows."""
    legacy = Path(d) / LEGACY_STORE_FILE
    return legacy if legacy.exists() and not (Path(d) / STORE_FILE).exists() else Path(d) / STORE_FILE


# Placing a vector in its cell costs one dot product per cell, and training the cells costs
# (training points) x (cells) per k-means round; both grow with the square of the cell count.
# Past NLIST_MAX cells that dominates a ten-million-vector build (3,162 cells: about 10 minutes
# for the 384-d vectors on this 2-core machine under load, against 6 with 2,048), while a query
# only scans more codes per probed cell; the exact re-scoring makes up for the coarser cells.
NLIST_MAX = 2048


def nlist_for(n: int) -> int:
    """Coarse cells: about 4 * sqrt(n), with at least 39 training points per cell, at most NLIST_MAX."""
    return max(1, min(int(4 * math.sqrt(max(n, 1))), max(1, n // 39), NLIST_MAX))


def pq_nlist_for(n: int) -> int:
    """Coarse cells of the IVF-PQ index: about sqrt(n) (1,000 at a million vectors), at most NLIST_MAX."""
    return max(1, min(int(math.sqrt(max(n, 1))), max(1, n // 39), NLIST_MAX))


def pq_factory(dim: int, nlist: int) -> str:
    """IVF with `dim / 8` sub-quantisers of 8 bits each (8 dimensions per sub-vector)."""
    m = max(1, dim // 8)
    while dim % m:
        m -= 1
    return f"IVF{nlist},PQ{m}"


def ivf_search_params(index, nprobe: int | None):
    """FAISS search parameters probing `nprobe` cells of an IVF index (at most all of them), or
    None for the index's own setting."""
    if nprobe is None:
        return None
    import faiss

    return faiss.SearchParametersIVF(nprobe=min(int(nprobe), faiss.extract_index_ivf(index).nlist))


class RowStore:
    """Vectors as rows, appended in order and read back by row number, in one of two encodings:
    float16 (`bits=16`), or 8-bit integers with one float32 scale a row (`bits=8`: the row's
    largest magnitude maps to 127). Eight bits halve what a large collection's re-scoring and
    signals read from disk and keep in the page cache (at ten million figures 3.9 GB of text rows
    instead of 7.7): a cosine of unit vectors moves by about 5e-4, far below the gaps that order
    related figures, while the IVF-PQ codes that choose the candidates are coarser still. Rows
    waiting to be indexed stay float16, so a small collection's exact index is built from rows as
    precise as before. A file's encoding follows its name: `.i8` eight bits, anything else float16.

    On disk (`path` given) rows are appended with plain writes. A file of at most
    `MAP_MAX_BYTES` is read through a memory map: queries soon touch most of its pages anyway, and
    gathering mapped rows costs far less than a system call per row. A larger file is read with
    one `pread` per row: a query reads a few hundred rows scattered over it, and every page a map
    touches stays mapped (with the cached pages around it, the kernel's fault-around), so a mapped
    file of ten million rows became resident in the serving process within a few hundred queries;
    read, the rows stay in the page cache, shared and dropped under pressure. The rows of one call
    are first announced to the kernel (`POSIX_FADV_WILLNEED`), so those not in the page cache are
    read from disk side by side: 250 random rows of the 7.7 GB float16 row file of ten million figures took
    8.0 ms one read after another, 2.7 ms announced (0.8 / 0.9 ms when cached).
    Without a path they are kept in memory (small collections, tests).
    """

    MAP_MAX_BYTES = 1 << 30

    def __init__(self, dim: int, path: Path | None = None, bits: int | None = None):
        self.dim = int(dim)
        self.path = None if path is None else Path(path)
        if bits is None:
            bits = 8 if self.path is not None and self.path.suffix == ".i8" else 16
        if bits not in (8, 16):
            raise ValueError(f"bits must be 8 or 16, got {bits}")
        self.bits = bits
        self.row_dtype = (np.dtype([("scale", "<f4"), ("q", "i1", (self.dim,))]) if bits == 8
                          else np.dtype(("<f2", (self.dim,))))
        self._mem: list[np.ndarray] = []
        self._n = 0
        self._map: np.ndarray | None = None   # the encoded rows in memory or mapped, as one array
        self._fd: int | None = None
        if self.path is not None and self.path.exists():
            self._n = self.path.stat().st_size // self.row_dtype.itemsize

    def __len__(self) -> int:
        return self._n

    def __del__(self):
        if getattr(self, "_fd", None) is not None:
            os.close(self._fd)

    def _encode(self, rows: np.ndarray) -> np.ndarray:
        rows = np.asarray(rows, dtype=np.float32)
        if rows.ndim != 2 or rows.shape[1] != self.dim:
            raise ValueError(f"expected (n, {self.dim}) rows, got {rows.shape}")
        if self.bits == 16:
            return np.ascontiguousarray(rows, dtype="<f2")
        out = np.empty(len(rows), self.row_dtype)
        scale = np.abs(rows).max(axis=1) / 127 if self.dim else np.zeros(len(rows), np.float32)
        scale[scale == 0] = 1.0
        out["scale"] = scale
        out["q"] = np.clip(np.rint(rows / scale[:, None]), -127, 127)
        return out

    def _decode(self, encoded: np.ndarray) -> np.ndarray:
        """float32 rows of encoded ones (a copy)."""
        if self.bits == 16:
            return encoded.reshape(-1, self.dim).astype(np.float32)
        return encoded["q"].astype(np.float32) * encoded["scale"][:, None]

    def append(self, rows: np.ndarray) -> None:
        encoded = self._encode(rows)
        if self.path is None:
            self._mem.append(encoded)
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "ab") as f:
                f.write(encoded.tobytes())
        self._n += len(encoded)
        self._map = None

    def append_from(self, other: "RowStore", step: int = 65_536) -> None:
        """Append every row of another store, `step` rows at a time: a copy of ten million rows
        (or a change of encoding) needs no float32 copy of them all."""
        for s in range(0, len(other), step):
            self.append(other.read(s, min(len(other), s + step)))

    def _mapped(self) -> bool:
        return self.path is None or self._n * self.row_dtype.itemsize <= self.MAP_MAX_BYTES

    def _array(self) -> np.ndarray:
        """The encoded rows of an in-memory or mapped store as one array."""
        if self._map is None:
            if self.path is None:
                self._mem = [np.concatenate(self._mem)] if len(self._mem) > 1 else self._mem
                self._map = self._mem[0] if self._mem else np.frombuffer(b"", self.row_dtype)
            else:
                # a plain array over the mapping: np.memmap's own indexing wrapper costs more than
                # gathering a query's re-scored rows
                self._map = (np.memmap(self.path, dtype=self.row_dtype, mode="r", shape=(self._n,))
                             .view(np.ndarray) if self._n else np.frombuffer(b"", self.row_dtype))
        return self._map

    def rows(self, rows) -> np.ndarray:
        """float32 copies of the chosen rows."""
        rows = np.asarray(rows, dtype=np.int64)
        if len(rows) == 0:
            return np.zeros((0, self.dim), np.float32)
        if len(rows) and (rows.min() < 0 or rows.max() >= self._n):
            raise IndexError(f"row out of range 0..{self._n - 1}")
        if self._mapped():
            return self._decode(self._array()[rows])
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDONLY)
        width = self.row_dtype.itemsize
        unique, where = np.unique(rows, return_inverse=True)  # ascending offsets, each row read once
        offsets = (unique * width).tolist()
        if len(offsets) > 1:  # the rows not in the page cache are read all at once, not one read after another
            for offset in offsets:
                os.posix_fadvise(self._fd, offset, width, os.POSIX_FADV_WILLNEED)
        buf = b"".join([os.pread(self._fd, width, offset) for offset in offsets])
        return self._decode(np.frombuffer(buf, dtype=self.row_dtype)[where.ravel()])

    def read(self, start: int, stop: int) -> np.ndarray:
        """Rows [start, stop) as float32, read without mapping (bulk reads at build time)."""
        if self.path is None:
            return self._decode(self._array()[start:stop])
        width = self.row_dtype.itemsize
        with open(self.path, "rb") as f:
            f.seek(start * width)
            buf = np.fromfile(f, dtype=self.row_dtype, count=stop - start)
        return self._decode(buf)

    def sample(self, n_sample: int, blocks: int = 64) -> np.ndarray:
        """About `n_sample` rows from `blocks` evenly spaced stretches (a training sample that
        covers the whole collection, read sequentially)."""
        n = len(self)
        if n <= n_sample:
            return self.read(0, n)
        per = max(1, n_sample // blocks)
        starts = np.linspace(0, n - per, blocks).astype(np.int64)
        return np.concatenate([self.read(int(s), int(s) + per) for s in starts])


class RescoredIVFPQ:
    """IVF-PQ first stage + re-scoring from the stored rows; rows numbered in insertion order."""

    def __init__(self, dim: int, store: RowStore, nprobe: int = 32, rescore: int = 2000):
        self.dim = int(dim)
        self.store = store
        self.nprobe, self.rescore = int(nprobe), int(rescore)
        self.index = None

    def train(self, n_expected: int) -> None:
        """Train the coarse cells and the product quantiser on a sample of the stored rows."""
        import faiss

        nlist = pq_nlist_for(n_expected)
        index = faiss.index_factory(self.dim, pq_factory(self.dim, nlist), faiss.METRIC_INNER_PRODUCT)
        # polysemous training (Hamming-distance filtering, unused here) costs minutes
        faiss.downcast_index(faiss.extract_index_ivf(index)).do_polysemous_training = False
        sample = self.store.sample(max(40 * nlist, 50_000))
        index.train(np.ascontiguousarray(sample))
        self.index = index
        self._set_nprobe()

    def _set_nprobe(self) -> None:
        import faiss

        ivf = faiss.extract_index_ivf(self.index)
        ivf.nprobe = min(self.nprobe, ivf.nlist)

    def add_stored(self, step: int = 65_536) -> None:
        """Index the stored rows that are not in the index yet (rows keep their numbers)."""
        for s in range(self.index.ntotal, len(self.store), step):
            self.index.add(self.store.read(s, min(len(self.store), s + step)))

    @property
    def ntotal(self) -> int:
        return 0 if self.index is None else int(self.index.ntotal)

    def search(self, q: np.ndarray, k: int, rescore: int | None = None,
               nprobe: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Top-k (rows, exact cosines) per query row; the first stage returns max(k, rescore)
        candidates (`rescore` defaults to the index's) of `nprobe` cells (default: the index's),
        which are re-scored from the stored rows."""
        n_cand = min(max(k, self.rescore if rescore is None else int(rescore)), self.ntotal)
        _, cand = self.index.search(np.ascontiguousarray(q, dtype=np.float32), n_cand,
                                    params=ivf_search_params(self.index, nprobe))
        out_rows = np.full((len(q), k), -1, np.int64)
        out_scores = np.zeros((len(q), k), np.float32)
        for i in range(len(q)):
            c = cand[i][cand[i] >= 0]
            if len(c) == 0:
                continue
            s = self.store.rows(c) @ q[i]
            top = np.lexsort((c, -s))[:k]
            out_rows[i, :len(top)], out_scores[i, :len(top)] = c[top], s[top]
        return out_rows, out_scores

    def save(self, d: Path) -> None:
        """index.faiss (codes and cells); the rows stay in the store file (already on disk)."""
        import faiss

        faiss.write_index(self.index, str(Path(d) / "index.faiss"))
        (Path(d) / "ann.json").write_text(json.dumps({"nprobe": self.nprobe, "rescore": self.rescore}))

    @classmethod
    def load(cls, d: Path, dim: int, store: RowStore) -> "RescoredIVFPQ":
        import faiss

        meta = json.loads((Path(d) / "ann.json").read_text())
        self = cls(dim, store, nprobe=meta["nprobe"], rescore=meta["rescore"])
        self.index = faiss.read_index(str(Path(d) / "index.faiss"))
        self._set_nprobe()
        return self
