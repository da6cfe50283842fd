"""Dense vectors: a FAISS index for nearest-neighbour search that is also the vector store.

The re-ranker needs each candidate's vector (cosines with the query or the figure, ~100 row
lookups); FAISS reconstructs them from the index itself (`reconstruct_batch`), so no second copy
is kept: an exact float32 copy for flat and HNSW indexes, the 8-bit codes for IVF (per-dimension
quantisation; a cosine computed from them differs by ~1e-3 from the exact one, below what changes
a ranking). At 1M x 384-d that is 384 MB in all instead of 384 MB of codes plus a 768 MB float16
copy. On a GPU, where the index cannot be read back row by row, a float16 copy is kept in memory.

Metric: inner product on L2-normalised vectors (= cosine); `add` normalises.

kind="auto" picks:
  * n < 200k: exact IndexFlatIP (brute force is fast enough and perfectly accurate);
  * otherwise IVF with 8-bit scalar quantisation ("IVF{nlist},SQ8", nlist ~ 4*sqrt(n), trained on a
    sample, nprobe 32). At 1M x 384-d on 2 cores it trains+adds in about a minute and uses 384 MB,
    whereas HNSW(M=32) needs far longer to build on 2 cores and 1.8 GB of float32 storage.
    Product-quantised codes (48 or 24 bytes a vector) with exact re-scoring of 4-8x the wanted
    neighbours were measured on the benchmark's 1M clustered vectors: recall@50 of the exact
    neighbours .54-.65 against .985 for SQ8, so SQ8 stays.
  kind="hnsw" (IndexHNSWFlat, M=32, efConstruction 40, efSearch 64) and kind="flat"/"ivf" can be
  forced.

GPU: gpu="auto" moves flat/IVF indexes to GPU 0 only if this faiss build has StandardGpuResources and
`faiss.get_num_gpus() > 0`; gpu="on" raises when that is not the case; gpu="off" never uses a GPU.
HNSW has no GPU implementation in faiss and stays on CPU. Saved indexes are always CPU indexes.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

FLAT_MAX = 200_000


def gpu_available() -> bool:
    """True when this faiss build can use a visible GPU."""
    import faiss

    if not hasattr(faiss, "StandardGpuResources"):
        return False
    try:
        return faiss.get_num_gpus() > 0
    except Exception:  # pragma: no cover - broken driver
        return False


def _resolve_gpu(gpu: str) -> bool:
    if gpu not in ("auto", "on", "off"):
        raise ValueError(f"gpu must be 'auto', 'on' or 'off', got {gpu!r}")
    if gpu == "off":
        return False
    ok = gpu_available()
    if gpu == "on" and not ok:
        raise RuntimeError("gpu='on' but no GPU is usable: this faiss build has no GPU support "
                           "(faiss-cpu) or faiss.get_num_gpus() == 0; use gpu='auto' or 'off'")
    return ok


def l2_normalize(x: np.ndarray) -> np.ndarray:
    """Row-wise L2 normalisation in float32; zero rows stay zero."""
    x = np.asarray(x, dtype=np.float32)
    if x.ndim == 1:
        x = x[None, :]
    n = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.where(n > 0, n, 1.0).astype(np.float32)


class VectorIndex:
    """ANN index that doubles as the vector store, addressed by caller-chosen int64 ids."""

    def __init__(self, dim: int, kind: str = "auto", gpu: str = "auto", store_dtype: str = "float16",
                 hnsw_m: int = 32, ef_search: int = 64, nlist: int | None = None, nprobe: int = 32):
        if kind not in ("auto", "flat", "hnsw", "ivf"):
            raise ValueError(f"kind must be auto/flat/hnsw/ivf, got {kind!r}")
        self.dim = int(dim)
        self.kind = kind
        self.use_gpu = _resolve_gpu(gpu)
        self.gpu = gpu
        self.store_dtype = np.dtype(store_dtype)  # of vectors waiting to be indexed and of a GPU index's copy
        self.hnsw_m, self.ef_search, self.nlist, self.nprobe = hnsw_m, ef_search, nlist, nprobe
        self._chunks: list[np.ndarray] = []     # added, not yet in the index
        self._id_chunks: list[np.ndarray] = []
        self._ids = np.zeros(0, np.int64)       # ids of the rows in the index, in row order
        self._copy: np.ndarray | None = None    # rows as vectors, only where the index cannot give them back
        self._index = None          # faiss index (possibly on GPU)
        self._built_kind: str | None = None
        self._sorted_ids = None     # lazily built id -> row lookup

    # ------------------------------------------------------------- content
    def add(self, ids, vecs) -> None:
        """Add vectors (normalised here) under the given ids. The ANN index is updated lazily."""
        ids = np.asarray(ids, dtype=np.int64).ravel()
        vecs = l2_normalize(vecs)
        if vecs.shape != (len(ids), self.dim):
            raise ValueError(f"expected ({len(ids)}, {self.dim}) vectors, got {vecs.shape}")
        self._chunks.append(vecs.astype(self.store_dtype))
        self._id_chunks.append(ids)
        self._sorted_ids = None

    def __len__(self) -> int:
        return len(self._ids) + sum(len(c) for c in self._id_chunks)

    @property
    def ids(self) -> np.ndarray:
        self.build()
        return self._ids

    def _rows_for(self, ids) -> np.ndarray:
        self.build()
        ids = np.asarray(ids, dtype=np.int64).ravel()
        n = len(self._ids)
        if self._sorted_ids is None:
            if n and self._ids[0] == 0 and self._ids[-1] == n - 1 and np.array_equal(
                    self._ids, np.arange(n)):
                self._sorted_ids = "arange"
            else:
                order = np.argsort(self._ids, kind="stable")
                self._sorted_ids = (self._ids[order], order)
        if isinstance(self._sorted_ids, str):
            rows = ids
            bad = (rows < 0) | (rows >= n)
        else:
            sid, order = self._sorted_ids
            pos = np.minimum(np.searchsorted(sid, ids), max(n - 1, 0))
            bad = (sid[pos] != ids) if n else np.ones(len(ids), bool)
            rows = order[pos] if n else pos
        if bad.any():
            raise KeyError(f"unknown vector ids: {ids[bad][:5].tolist()}")
        return rows

    def vectors_for(self, ids) -> np.ndarray:
        """Unit vectors for ids as float32 (n, dim), read back from the index (see module doc)."""
        rows = self._rows_for(ids)          # indexes pending adds first
        return self._rows(rows)

    def _rows(self, rows: np.ndarray) -> np.ndarray:
        if self._copy is not None:
            return self._copy[rows].astype(np.float32)
        if len(rows) == 0:
            return np.zeros((0, self.dim), np.float32)
        return self._index.reconstruct_batch(np.asarray(rows, dtype=np.int64))

    # --------------------------------------------------------------- index
    def effective_kind(self, n: int | None = None) -> str:
        n = len(self) if n is None else n
        if self.kind != "auto":
            return self.kind
        return "flat" if n < FLAT_MAX else "ivf"

    def _new_index(self, n: int, training: np.ndarray):
        import faiss

        kind = self.effective_kind(n)
        if kind == "flat":
            index = faiss.IndexFlatIP(self.dim)
        elif kind == "hnsw":
            index = faiss.IndexHNSWFlat(self.dim, self.hnsw_m, faiss.METRIC_INNER_PRODUCT)
            index.hnsw.efConstruction = 40
            index.hnsw.efSearch = self.ef_search
        else:
            nlist = self.nlist or max(1, min(int(4 * math.sqrt(max(n, 1))), max(1, n // 39)))
            index = faiss.index_factory(self.dim, f"IVF{nlist},SQ8", faiss.METRIC_INNER_PRODUCT)
            rng = np.random.default_rng(0)
            n_train = min(len(training), max(40 * nlist, 10_000))
            sample = (np.sort(rng.choice(len(training), size=n_train, replace=False)) if n_train < len(training)
                      else np.arange(len(training)))
            index.train(np.ascontiguousarray(training[sample], dtype=np.float32))
            ivf = faiss.extract_index_ivf(index)
            ivf.nprobe = min(self.nprobe, nlist)
            ivf.set_direct_map_type(faiss.DirectMap.Array)  # rows can be read back by number
        self._built_kind = kind
        return index

    def _to_gpu(self, index):
        if not self.use_gpu or self._built_kind == "hnsw":
            return index
        import faiss

        if not hasattr(self, "_gpu_res"):
            self._gpu_res = faiss.StandardGpuResources()
        return faiss.index_cpu_to_gpu(self._gpu_res, 0, index)

    def _on_gpu(self) -> bool:
        return self.use_gpu and self._built_kind != "hnsw"

    def build(self) -> None:
        """Index the vectors added since the last build (called automatically when needed)."""
        if not self._chunks and self._index is not None:
            return
        new = (self._chunks[0] if len(self._chunks) == 1 else
               np.concatenate(self._chunks) if self._chunks else np.zeros((0, self.dim), self.store_dtype))
        new_ids = np.concatenate(self._id_chunks) if self._id_chunks else np.zeros(0, np.int64)
        self._chunks, self._id_chunks = [], []
        n = len(self._ids) + len(new)
        rebuild = self._index is None or (self.kind == "auto" and self.effective_kind(n) != self._built_kind)
        if rebuild:  # auto indexes are rebuilt from scratch when growth changes the best kind
            old = self._rows(np.arange(len(self._ids))) if self._index is not None else np.zeros((0, self.dim), np.float32)
            todo = np.concatenate([old.astype(self.store_dtype), new]) if len(old) else new
            self._index = self._to_gpu(self._new_index(n, todo))
            self._copy = None
            del old
        else:
            todo = new
        step = 65_536
        for s in range(0, len(todo), step):
            self._index.add(np.ascontiguousarray(todo[s:s + step], dtype=np.float32))
        if self._on_gpu() or self._copy is not None:  # (a copy loaded from an earlier version grows too)
            self._copy = todo if self._copy is None else np.concatenate([self._copy, todo])
        self._ids = np.concatenate([self._ids, new_ids]) if len(self._ids) else new_ids
        self._sorted_ids = None

    def search(self, vecs, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Top-k (ids, cosine scores) per query row, shape (nq, k); missing slots have id -1."""
        self.build()
        q = l2_normalize(vecs)
        k = int(k)
        if len(self._ids) == 0 or k <= 0:
            return np.full((len(q), max(k, 0)), -1, np.int64), np.zeros((len(q), max(k, 0)), np.float32)
        scores, rows = self._index.search(q, min(k, len(self._ids)))
        ids = np.where(rows >= 0, self._ids[np.maximum(rows, 0)], -1)
        if k > rows.shape[1]:
            pad = k - rows.shape[1]
            ids = np.pad(ids, ((0, 0), (0, pad)), constant_values=-1)
            scores = np.pad(scores, ((0, 0), (0, pad)))
        return ids, scores

    # --------------------------------------------------------- persistence
    def save(self, path_dir: str | Path) -> None:
        """ids.npy, index.faiss (CPU form; it holds the vectors), meta.json."""
        import faiss

        self.build()
        d = Path(path_dir)
        d.mkdir(parents=True, exist_ok=True)
        np.save(d / "ids.npy", self._ids)
        index = self._index
        if self._on_gpu():
            index = faiss.index_gpu_to_cpu(index)
        faiss.write_index(index, str(d / "index.faiss"))
        (d / "vectors.npy").unlink(missing_ok=True)
        meta = dict(dim=self.dim, kind=self.kind, built_kind=self._built_kind,
                    store_dtype=self.store_dtype.name, hnsw_m=self.hnsw_m, ef_search=self.ef_search,
                    nlist=self.nlist, nprobe=self.nprobe, format=2)
        (d / "meta.json").write_text(json.dumps(meta))

    @classmethod
    def load(cls, path_dir: str | Path, gpu: str = "auto", mmap: bool = False) -> "VectorIndex":
        """A saved index. Indexes saved with a separate vector copy (vectors.npy, earlier
        versions) keep reading their vectors from it, memory-mapped with `mmap`."""
        import faiss

        d = Path(path_dir)
        meta = json.loads((d / "meta.json").read_text())
        self = cls(meta["dim"], kind=meta["kind"], gpu=gpu, store_dtype=meta["store_dtype"],
                   hnsw_m=meta["hnsw_m"], ef_search=meta["ef_search"], nlist=meta["nlist"],
                   nprobe=meta["nprobe"])
        self._ids = np.load(d / "ids.npy")
        self._built_kind = meta["built_kind"]
        index = faiss.read_index(str(d / "index.faiss"))
        if self._built_kind == "hnsw":
            index.hnsw.efSearch = self.ef_search
        if (d / "vectors.npy").exists():
            self._copy = np.load(d / "vectors.npy", mmap_mode="r" if mmap else None)
        elif self._on_gpu():
            self._copy = index.reconstruct_n(0, index.ntotal).astype(self.store_dtype)
        self._index = self._to_gpu(index)
        return self

    def __repr__(self) -> str:
        return (f"VectorIndex(dim={self.dim}, n={len(self)}, kind={self.kind!r}->{self._built_kind!r}, "
                f"gpu={self.use_gpu})")
