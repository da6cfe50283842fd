"""Text embeddings of figures and papers, cached per item so an index refresh only encodes what
is new or changed (keyed by a hash of the text and the encoder name)."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Callable

import numpy as np

from app.search.engine import FigureDoc

Encoder = Callable[[list[str]], np.ndarray]


def _text_key(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "replace"), digest_size=8).hexdigest()


class EmbeddingCache:
    """figure_id -> (text hash, vector) in one npz per encoder name."""

    def __init__(self, root: Path, encoder_name: str):
        self.path = root / f"embeddings-{encoder_name}.npz"
        self.vectors: dict[int, np.ndarray] = {}
        self.keys: dict[int, str] = {}
        if self.path.exists():
            z = np.load(self.path, allow_pickle=False)
            for fid, key, vec in zip(z["ids"].tolist(), z["keys"].tolist(), z["vectors"]):
                self.vectors[fid], self.keys[fid] = vec, key

    def lookup(self, docs: list[FigureDoc]) -> tuple[list[int], list[str]]:
        """Indices of docs needing an embedding, and their keys."""
        keys = [_text_key(d.text) for d in docs]
        todo = [i for i, (d, k) in enumerate(zip(docs, keys)) if self.keys.get(d.figure_id) != k]
        return todo, keys

    def save(self, docs: list[FigureDoc], keys: list[str]) -> None:
        ids = np.array([d.figure_id for d in docs], dtype=np.int64)
        vecs = np.stack([self.vectors[d.figure_id] for d in docs]) if docs else np.zeros((0, 1), np.float32)
        tmp = self.path.with_name(f".{self.path.stem}.{os.getpid()}.tmp.npz")
        np.savez(tmp, ids=ids, keys=np.array(keys), vectors=vecs.astype(np.float32))
        tmp.replace(self.path)


def embed_docs(docs: list[FigureDoc], root: Path, encoder: Encoder, encoder_name: str,
               progress: bool = False) -> tuple[np.ndarray, int]:
    """Embeddings for docs, reusing the cache; returns (matrix, number newly encoded)."""
    root.mkdir(parents=True, exist_ok=True)
    cache = EmbeddingCache(root, encoder_name)
    todo, keys = cache.lookup(docs)
    if todo:
        batch = 256
        from tqdm import tqdm

        with tqdm(total=len(todo), desc="embed", unit="fig", disable=not progress) as bar:
            for s in range(0, len(todo), batch):
                part = todo[s:s + batch]
                vecs = np.asarray(encoder([docs[i].text for i in part]), dtype=np.float32)
                for i, v in zip(part, vecs):
                    cache.vectors[docs[i].figure_id] = v
                    cache.keys[docs[i].figure_id] = keys[i]
                bar.update(len(part))
        cache.save(docs, keys)
    if not docs:
        return np.zeros((0, 384), np.float32), 0
    return np.stack([cache.vectors[d.figure_id] for d in docs]).astype(np.float32), len(todo)


FIGURE_TEXT_TOKENS = 128  # the published figure recommender (Kuzi & Zhai) reads the first 100 words (caption first)
PAPER_TEXT_TOKENS = 256  # title + the start of the abstract


def default_text_encoder() -> tuple[Encoder, str]:
    """MiniLM over figure texts truncated to 128 word pieces: ~3x faster than 256 on CPU."""
    from app.search.encoder import default_encoder

    enc = default_encoder()
    return (lambda texts: enc.encode(texts, max_length=FIGURE_TEXT_TOKENS)), "minilm128"


DENSE_FILE = "dense.json"


def read_dense_info(root: Path) -> dict:
    """What the dense vectors of the CURRENT index are: {"kind": "minilm"} or the learned model."""
    import json

    try:
        return json.loads((Path(root) / DENSE_FILE).read_text())
    except (FileNotFoundError, ValueError):
        return {"kind": "minilm"}
