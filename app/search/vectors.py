"""Dense vectors: a FAISS index for nearest-neighbour search plus an exact copy for re-ranking.

Why two copies: the re-ranker needs exact cosines between a query vector and ~100 given candidates
(row lookups), which compressed/graph indexes don't serve cheaply; the ANN index is only for
"dense-first" candidate generation (union with the lexical candidates, dense fallback). The copy is
float16 by default (768 MB at 1M x 384-d; cosine error ~1e-3, irrelevant for ranking).

Metric: inner product on L2-normalised vectors (= cosine); `add` normalises.

kind="auto" picks:
  * n < 200k: exact IndexFlatIP (brute force is fast enough and perfectly accurate);
  * otherwise IVF with 8-bit scalar quantisation ("IVF{nlist},SQ8", nlist ~ 4*sqrt(n), trained on a
    sample, nprobe 32). At 1M x 384-d on 2 cores it trains+adds in about a minute and uses 384 MB,
    whereas HNSW(M=32) needs far longer to build on 2 cores and 1.8 GB of float32 storage.
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
    """ANN index + exact vector store, addressed by caller-chosen int64 ids."""

    def __init__(self, dim: int, kind: str = "auto", gpu: str = "auto", store_dtype: str = "float16",
                 hnsw_m: int = 32, ef_search: int = 64, nlist: int | None = None, nprobe: int = 32):
        if kind not in ("auto", "flat", "hnsw", "ivf"):
            raise ValueError(f"kind must be auto/flat/hnsw/ivf, got {kind!r}")
        self.dim = int(dim)
        self.kind = kind
        self.use_gpu = _resolve_gpu(gpu)
        self.gpu = gpu
        self.store_dtype = np.dtype(store_dtype)
        self.hnsw_m, self.ef_search, self.nlist, self.nprobe = hnsw_m, ef_search, nlist, nprobe
        self._chunks: list[np.ndarray] = []
        self._id_chunks: list[np.ndarray] = []
        self._vecs = np.zeros((0, self.dim), self.store_dtype)
        self._ids = np.zeros(0, np.int64)
        self._index = None          # faiss index (possibly on GPU)
        self._indexed = 0           # rows already in self._index
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

    def _consolidate(self):
        if self._chunks:
            self._vecs = np.concatenate([self._vecs, *self._chunks]) if len(self._vecs) else (
                self._chunks[0] if len(self._chunks) == 1 else np.concatenate(self._chunks))
            self._ids = np.concatenate([self._ids, *self._id_chunks])
            self._chunks, self._id_chunks = [], []

    def __len__(self) -> int:
        return len(self._ids) + sum(len(c) for c in self._id_chunks)

    @property
    def ids(self) -> np.ndarray:
        self._consolidate()
        return self._ids

    def _rows_for(self, ids) -> np.ndarray:
        self._consolidate()
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
        """Exact (stored-precision) unit vectors for ids, as float32 (n, dim)."""
        rows = self._rows_for(ids)          # consolidates pending adds first
        return self._vecs[rows].astype(np.float32)

    # --------------------------------------------------------------- index
    def effective_kind(self, n: int | None = None) -> str:
        n = len(self) if n is None else n
        if self.kind != "auto":
            return self.kind
        return "flat" if n < FLAT_MAX else "ivf"

    def _new_index(self, n: int):
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
            n_train = min(n, max(40 * nlist, 10_000))
            sample = np.sort(rng.choice(n, size=n_train, replace=False)) if n_train < n else np.arange(n)
            index.train(np.ascontiguousarray(self._vecs[sample], dtype=np.float32))
            faiss.extract_index_ivf(index).nprobe = min(self.nprobe, nlist)
        self._built_kind = kind
        return index

    def _to_gpu(self, index):
        if not self.use_gpu or self._built_kind == "hnsw":
            return index
        import faiss

        if not hasattr(self, "_gpu_res"):
            self._gpu_res = faiss.StandardGpuResources()
        return faiss.index_cpu_to_gpu(self._gpu_res, 0, index)

    def build(self) -> None:
        """Bring the ANN index up to date (called automatically by `search`)."""
        self._consolidate()
        n = len(self._ids)
        if self._index is not None and self._indexed == n:
            return
        # auto indexes are rebuilt from scratch when growth changes the best kind
        if self._index is None or (self.kind == "auto" and self.effective_kind(n) != self._built_kind):
            self._index = self._to_gpu(self._new_index(n))
            self._indexed = 0
        step = 65_536
        for s in range(self._indexed, n, step):
            self._index.add(np.ascontiguousarray(self._vecs[s:s + step], dtype=np.float32))
        self._indexed = n

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
        """vectors.npy (stored precision), ids.npy, index.faiss (CPU form), meta.json."""
        import faiss

        self.build()
        d = Path(path_dir)
        d.mkdir(parents=True, exist_ok=True)
        np.save(d / "vectors.npy", self._vecs)
        np.save(d / "ids.npy", self._ids)
        index = self._index
        if self.use_gpu and self._built_kind != "hnsw":
            index = faiss.index_gpu_to_cpu(index)
        faiss.write_index(index, str(d / "index.faiss"))
        meta = dict(dim=self.dim, kind=self.kind, built_kind=self._built_kind,
                    store_dtype=self.store_dtype.name, hnsw_m=self.hnsw_m, ef_search=self.ef_search,
                    nlist=self.nlist, nprobe=self.nprobe, format=1)
        (d / "meta.json").write_text(json.dumps(meta))

    @classmethod
    def load(cls, path_dir: str | Path, gpu: str = "auto", mmap: bool = False) -> "VectorIndex":
        import faiss

        d = Path(path_dir)
        meta = json.loads((d / "meta.json").read_text())
        self = cls(meta["dim"], kind=meta["kind"], gpu=gpu, store_dtype=meta["store_dtype"],
                   hnsw_m=meta["hnsw_m"], ef_search=meta["ef_search"], nlist=meta["nlist"],
                   nprobe=meta["nprobe"])
        self._vecs = np.load(d / "vectors.npy", mmap_mode="r" if mmap else None)
        self._ids = np.load(d / "ids.npy")
        self._built_kind = meta["built_kind"]
        index = faiss.read_index(str(d / "index.faiss"))
        if self._built_kind == "hnsw":
            index.hnsw.efSearch = self.ef_search
        self._index = self._to_gpu(index)
        self._indexed = int(index.ntotal)
        return self

    def __repr__(self) -> str:
        return (f"VectorIndex(dim={self.dim}, n={len(self)}, kind={self.kind!r}->{self._built_kind!r}, "
                f"gpu={self.use_gpu})")
