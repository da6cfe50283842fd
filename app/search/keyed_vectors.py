"""Vectors kept per figure with the key of what they were computed from (a text hash, a crop
path), in one .npz file: an index refresh encodes only figures that are new or whose key changed.
Text embeddings and picture vectors are both stored this way."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np


class KeyedVectors:
    """figure_id -> (key, vector), loaded from and saved to `path` (written atomically). With a
    `width`, a stored vector of another length (written by an earlier layout) counts as missing."""

    def __init__(self, path: Path, dtype=np.float32, width: int | None = None):
        self.path = Path(path)
        self.dtype = np.dtype(dtype)
        self.width = width
        self.vectors: dict[int, np.ndarray] = {}
        self.keys: dict[int, str] = {}
        if self.path.exists():
            z = np.load(self.path, allow_pickle=False)
            for fid, key, vec in zip(z["ids"].tolist(), z["keys"].tolist(), z["vectors"]):
                self.vectors[fid], self.keys[fid] = vec, key

    def missing(self, items: list[tuple[int, str]]) -> list[tuple[int, str]]:
        """The (figure id, key) pairs without a vector stored for that key (of `width`, when set)."""
        return [(fid, key) for fid, key in items if self.keys.get(fid) != key
                or (self.width is not None and len(self.vectors[fid]) != self.width)]

    def put(self, items: list[tuple[int, str]], vectors: np.ndarray) -> None:
        for (fid, key), v in zip(items, vectors):
            self.vectors[fid], self.keys[fid] = np.asarray(v, self.dtype), key

    def get(self, ids: list[int]) -> np.ndarray:
        return np.stack([self.vectors[i] for i in ids]).astype(np.float32)

    def save(self, ids: list[int] | None = None) -> None:
        """Write the vectors of `ids` (default: all kept), dropping the others."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        ids = sorted(self.vectors) if ids is None else list(ids)
        vecs = np.stack([self.vectors[i] for i in ids]).astype(self.dtype) if ids else np.zeros((0, 1), self.dtype)
        tmp = self.path.with_name(f".{self.path.stem}.{os.getpid()}.tmp.npz")
        np.savez(tmp, ids=np.array(ids, np.int64), keys=np.array([self.keys[i] for i in ids]), vectors=vecs)
        tmp.replace(self.path)
