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
  * otherwise IVF-PQ with exact re-scoring ("ivfpq", app/search/ann.py): `dim / 8` bytes of codes
    per vector in memory, the vectors as 8-bit rows on disk (`RowStore`: mapped up to 1 GiB,
    read a row at a time above; they are also the store `vectors_for` reads), the best `rescore` (2,000) candidates of `pq_nprobe` (32) cells
    re-scored exactly. scripts/ann_sweep.py on 1M of the benchmark's vectors: recall@100 against
    exact search .996 (worst query .97) for a figure's vector as the query, .941 re-scoring 1,000;
    a random unit vector as the query is the hard case (.71; .84-.90 with 64-128 cells and 4,000
    candidates). The earlier choice here, 8-bit scalar codes, keeps 384 bytes a vector resident;
    product codes *without* exact re-scoring reached recall@50 of only .54-.65.
  kind="ivf" (IVF with 8-bit scalar quantisation, nlist ~ 4*sqrt(n), nprobe 32), "hnsw"
  (IndexHNSWFlat, M=32, efConstruction 40, efSearch 64) and "flat" can be forced.

GPU: gpu="auto" moves flat/IVF indexes to GPU 0 only if this faiss build has StandardGpuResources and
`faiss.get_num_gpus() > 0`; gpu="on" raises when that is not the case; gpu="off" never uses a GPU.
HNSW has no GPU implementation in faiss and stays on CPU. Saved indexes are always CPU indexes.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from .ann import PENDING_FILE, STORE_FILE, RescoredIVFPQ, RowStore, ivf_search_params, nlist_for, store_file

FLAT_MAX = 200_000
KINDS = ("auto", "flat", "hnsw", "ivf", "ivfpq")
PQ_NPROBE = 32      # IVF-PQ cells probed per query (scripts/ann_sweep.py)
PQ_RESCORE = 2000   # IVF-PQ candidates re-scored exactly per query (scripts/ann_sweep.py: recall@100 .996 at 1M, .941 with 1,000)
# IVF-PQ rows re-scored per wanted neighbour when the neighbours are only candidates of a
# re-ranking that computes its own cosines (`nearest_candidates`)
CANDIDATE_RESCORE = 4
# IVF cells probed by such candidate searches (a full search probes `nprobe` / `pq_nprobe`, 32).
# At ten million figures the scan of 32 cells cost 2.7 ms a related-figures query for the figure
# texts and 1.5 ms for the papers, 1.45 and 0.84 ms with 16, and the top ten of 100 related-figure
# queries were the same with 16 as with 32 (README, Measurements)
CANDIDATE_NPROBE = 16


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
                 hnsw_m: int = 32, ef_search: int = 64, nlist: int | None = None, nprobe: int = 32,
                 store_dir: str | Path | None = None, rescore: int = PQ_RESCORE, pq_nprobe: int = PQ_NPROBE):
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {'/'.join(KINDS)}, got {kind!r}")
        self.dim = int(dim)
        self.kind = kind
        self.use_gpu = _resolve_gpu(gpu)
        self.gpu = gpu
        self.store_dtype = np.dtype(store_dtype)  # of a GPU index's copy
        self.hnsw_m, self.ef_search, self.nlist, self.nprobe = hnsw_m, ef_search, nlist, nprobe
        self.rescore, self.pq_nprobe = int(rescore), int(pq_nprobe)
        # rows in id order: the vectors waiting to be indexed (float16) and, for IVF-PQ, the store
        # the candidates are re-scored from (8-bit; on disk under store_dir when given, else in memory);
        # it holds rows [_store_base, _store_base + len) of the index
        self.store_dir = None if store_dir is None else Path(store_dir)
        self._store = self._new_store()
        self._store_base = 0
        self._pending_ids: list[np.ndarray] = []
        self._ids = np.zeros(0, np.int64)       # ids of the rows in the index, in row order
        self._copy: np.ndarray | None = None    # rows as vectors, only where the index cannot give them back
        self._index = None          # faiss index (possibly on GPU)
        self._ann: RescoredIVFPQ | None = None  # the IVF-PQ index with its row store
        self._built_kind: str | None = None
        self._sorted_ids = None     # lazily built id -> row lookup

    def _new_store(self) -> RowStore:
        """An empty float16 store for rows waiting to be indexed."""
        if self.store_dir is None:
            return RowStore(self.dim)
        path = self.store_dir / PENDING_FILE
        path.unlink(missing_ok=True)
        return RowStore(self.dim, path)

    def _eight_bit_store(self, rows: RowStore) -> RowStore:
        """The rows an IVF-PQ index re-scores from, in 8 bits (see RowStore), a block at a time;
        the float16 file they came from is removed."""
        if rows.bits == 8:
            return rows
        path = None if self.store_dir is None else self.store_dir / STORE_FILE
        if path is not None:
            path.unlink(missing_ok=True)
        out = RowStore(self.dim, path, bits=8)
        out.append_from(rows)
        if rows.path is not None and rows.path != path:
            rows.path.unlink(missing_ok=True)
        return out

    # ------------------------------------------------------------- content
    def add(self, ids, vecs) -> None:
        """Add vectors (normalised here) under the given ids. The ANN index is updated lazily."""
        ids = np.asarray(ids, dtype=np.int64).ravel()
        vecs = np.asarray(vecs)
        if vecs.ndim == 1:
            vecs = vecs[None, :]
        if vecs.shape != (len(ids), self.dim):
            raise ValueError(f"expected ({len(ids)}, {self.dim}) vectors, got {vecs.shape}")
        # normalised a block at a time: a million vectors need no float32 copy of them all
        for s in range(0, len(vecs), 65_536):
            self._store.append(l2_normalize(vecs[s:s + 65_536]))
        self._pending_ids.append(ids)
        self._sorted_ids = None

    def _n_pending(self) -> int:
        return sum(len(c) for c in self._pending_ids)

    def __len__(self) -> int:
        return len(self._ids) + self._n_pending()

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
        if self._ann is not None:
            return self._ann.store.rows(rows)
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
        return "flat" if n < FLAT_MAX else "ivfpq"

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
            nlist = self.nlist or nlist_for(n)
            index = faiss.index_factory(self.dim, f"IVF{nlist},SQ8", faiss.METRIC_INNER_PRODUCT)
            index.train(np.ascontiguousarray(training, dtype=np.float32))
            ivf = faiss.extract_index_ivf(index)
            ivf.nprobe = min(self.nprobe, nlist)
            ivf.set_direct_map_type(faiss.DirectMap.Array)  # rows can be read back by number
        self._built_kind = kind
        return index

    def _to_gpu(self, index):
        if not self.use_gpu or self._built_kind in ("hnsw", "ivfpq"):
            return index
        import faiss

        if not hasattr(self, "_gpu_res"):
            self._gpu_res = faiss.StandardGpuResources()
        return faiss.index_cpu_to_gpu(self._gpu_res, 0, index)

    def _on_gpu(self) -> bool:
        return self.use_gpu and self._built_kind not in ("hnsw", "ivfpq")

    def build(self) -> None:
        """Index the vectors added since the last build (called automatically when needed)."""
        if not self._pending_ids and (self._index is not None or self._ann is not None):
            return
        new_ids = np.concatenate(self._pending_ids) if self._pending_ids else np.zeros(0, np.int64)
        self._pending_ids = []
        n_old = len(self._ids)
        n = n_old + len(new_ids)
        kind = self.effective_kind(n)
        rebuild = (self._index is None and self._ann is None) or (self.kind == "auto" and kind != self._built_kind)
        if rebuild and self._store_base > 0:  # the store lacks the indexed rows: read them back first
            old = self._rows(np.arange(n_old))
            store = RowStore(self.dim)
            store.append(old)
            store.append(self._store.read(0, len(self._store)))
            del old
            self._store, self._store_base = store, 0
            if self.store_dir is not None:  # (an index loaded without its rows, grown past the threshold)
                disk = self._new_store()
                disk.append_from(store)
                self._store = disk
        if rebuild:
            self._index, self._ann, self._copy = None, None, None
            if kind == "ivfpq":
                self._store = self._eight_bit_store(self._store)
                self._ann = RescoredIVFPQ(self.dim, self._store, nprobe=self.pq_nprobe, rescore=self.rescore)
                self._ann.train(n)
                self._built_kind = kind
            else:
                nlist = self.nlist or nlist_for(n)
                training = self._store.sample(max(40 * nlist, 10_000)) if kind == "ivf" else None
                self._index = self._to_gpu(self._new_index(n, training))
            first = 0
        else:
            first = n_old
        if self._ann is not None:
            self._ann.add_stored()
        else:
            step = 65_536
            for s in range(first, n, step):
                e = min(n, s + step)
                rows = self._store.read(s - self._store_base, e - self._store_base)
                self._index.add(rows)
                if self._on_gpu() or self._copy is not None:  # (a copy loaded from an earlier version grows too)
                    part = rows.astype(self.store_dtype)
                    self._copy = part if self._copy is None else np.concatenate([self._copy, part])
            # the index holds the vectors: the rows waiting for it are no longer needed
            self._store, self._store_base = self._new_store(), n
        self._ids = np.concatenate([self._ids, new_ids]) if n_old else new_ids
        self._sorted_ids = None

    def search(self, vecs, k: int, rescore: int | None = None,
               nprobe: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Top-k (ids, cosine scores) per query row, shape (nq, k); missing slots have id -1.
        `rescore`: IVF-PQ candidates re-scored exactly (default: the index's `rescore`);
        `nprobe`: cells an IVF index on the CPU probes (default: the index's)."""
        self.build()
        q = l2_normalize(vecs)
        k = int(k)
        if len(self._ids) == 0 or k <= 0:
            return np.full((len(q), max(k, 0)), -1, np.int64), np.zeros((len(q), max(k, 0)), np.float32)
        if self._ann is not None:
            rows, scores = self._ann.search(q, min(k, len(self._ids)), rescore, nprobe)
        elif nprobe is not None and self._built_kind == "ivf" and not self._on_gpu():
            scores, rows = self._index.search(q, min(k, len(self._ids)),
                                              params=ivf_search_params(self._index, nprobe))
        else:
            scores, rows = self._index.search(q, min(k, len(self._ids)))
        ids = np.where(rows >= 0, self._ids[np.maximum(rows, 0)], -1)
        if k > rows.shape[1]:
            pad = k - rows.shape[1]
            ids = np.pad(ids, ((0, 0), (0, pad)), constant_values=-1)
            scores = np.pad(scores, ((0, 0), (0, pad)))
        return ids, scores

    def nearest_candidates(self, vecs, k: int) -> tuple[np.ndarray, np.ndarray]:
        """About the k nearest (ids, exact cosines), as candidates for a re-ranking: IVF-PQ
        re-scores only `CANDIDATE_RESCORE * k` rows instead of `rescore`, since each is a random
        read from disk and a re-ranking misses little without the exact top k (at 3M figures the
        top 10 of related figures and of text search were the same in 60 queries each), and IVF
        indexes probe `CANDIDATE_NPROBE` cells."""
        return self.search(vecs, k, rescore=CANDIDATE_RESCORE * int(k), nprobe=CANDIDATE_NPROBE)

    # --------------------------------------------------------- persistence
    def save(self, path_dir: str | Path) -> None:
        """ids.npy, meta.json and the index: index.faiss (CPU form) holding the vectors, or for
        IVF-PQ the codes (index.faiss) plus the 8-bit rows (vectors.i8, read from disk as needed: `RowStore`)."""
        import faiss

        self.build()
        d = Path(path_dir)
        d.mkdir(parents=True, exist_ok=True)
        np.save(d / "ids.npy", self._ids)
        (d / "vectors.npy").unlink(missing_ok=True)
        if self._ann is not None:
            target = d / STORE_FILE
            store = self._ann.store
            if store.path is None or store.path.resolve() != target.resolve():
                target.unlink(missing_ok=True)
                RowStore(self.dim, target, bits=8).append_from(store)
            self._ann.save(d)
        else:
            index = self._index
            if self._on_gpu():
                index = faiss.index_gpu_to_cpu(index)
            faiss.write_index(index, str(d / "index.faiss"))
        meta = dict(dim=self.dim, kind=self.kind, built_kind=self._built_kind,
                    store_dtype=self.store_dtype.name, hnsw_m=self.hnsw_m, ef_search=self.ef_search,
                    nlist=self.nlist, nprobe=self.nprobe, rescore=self.rescore, pq_nprobe=self.pq_nprobe,
                    format=3)
        (d / "meta.json").write_text(json.dumps(meta))

    @classmethod
    def load(cls, path_dir: str | Path, gpu: str = "auto", mmap: bool = False) -> "VectorIndex":
        """A saved index. Indexes saved with a separate vector copy (vectors.npy, earlier
        versions) keep reading their vectors from it, memory-mapped with `mmap`. IVF-PQ rows
        always stay on disk (that is their point)."""
        import faiss

        d = Path(path_dir)
        meta = json.loads((d / "meta.json").read_text())
        self = cls(meta["dim"], kind=meta["kind"], gpu=gpu, store_dtype=meta["store_dtype"],
                   hnsw_m=meta["hnsw_m"], ef_search=meta["ef_search"], nlist=meta["nlist"],
                   nprobe=meta["nprobe"], rescore=meta.get("rescore", PQ_RESCORE),
                   pq_nprobe=meta.get("pq_nprobe", PQ_NPROBE))
        self._ids = np.load(d / "ids.npy")
        self._built_kind = meta["built_kind"]
        if self._built_kind == "ivfpq":
            self.store_dir = d
            self._store = RowStore(self.dim, store_file(d))
            self._ann = RescoredIVFPQ.load(d, self.dim, self._store)
            return self
        self._store_base = len(self._ids)
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
