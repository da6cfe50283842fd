"""Picture vectors of a collection's figures, kept once computed (float16, one file per picture
model under data_dir/pictures): figure types are decided at ingest from the same backbone pass,
and the index reads the vectors from here instead of running the backbone again. Keyed by
figure id and crop path, so a figure whose crop changed is encoded again."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np


class PictureStore:
    def __init__(self, data_dir: Path, model: str):
        self.path = Path(data_dir) / "pictures" / f"{model}.npz"
        self.vectors: dict[int, np.ndarray] = {}
        self.keys: dict[int, str] = {}
        if self.path.exists():
            z = np.load(self.path, allow_pickle=False)
            for fid, key, vec in zip(z["ids"].tolist(), z["keys"].tolist(), z["vectors"]):
                self.vectors[fid], self.keys[fid] = vec, key

    def missing(self, items: list[tuple[int, str]]) -> list[tuple[int, str]]:
        """The (figure id, crop path) pairs without a stored vector of that crop."""
        return [(fid, key) for fid, key in items if self.keys.get(fid) != key]

    def put(self, items: list[tuple[int, str]], vectors: np.ndarray) -> None:
        for (fid, key), v in zip(items, vectors):
            self.vectors[fid], self.keys[fid] = np.asarray(v, np.float16), key

    def get(self, ids: list[int]) -> np.ndarray:
        return np.stack([self.vectors[i] for i in ids]).astype(np.float32)

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        ids = sorted(self.vectors)
        vecs = np.stack([self.vectors[i] for i in ids]) if ids else np.zeros((0, 1), np.float16)
        tmp = self.path.with_name(f".{self.path.stem}.{os.getpid()}.tmp.npz")
        np.savez(tmp, ids=np.array(ids, np.int64), keys=np.array([self.keys[i] for i in ids]), vectors=vecs)
        tmp.replace(self.path)
