"""Text embeddings of figures and papers, cached per item so an index refresh only encodes what
is new or changed (keyed by a hash of the text and the encoder name)."""
from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Callable

import numpy as np

from app.search.doc_table import FigureDoc
from app.search.keyed_vectors import KeyedVectors

Encoder = Callable[[list[str]], np.ndarray]


def _text_key(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "replace"), digest_size=8).hexdigest()


def embed_docs(docs: list[FigureDoc], root: Path, encoder: Encoder, encoder_name: str,
               progress: bool = False) -> tuple[np.ndarray, int]:
    """Embeddings for docs, reusing the cache; returns (matrix, number newly encoded)."""
    root.mkdir(parents=True, exist_ok=True)
    cache = KeyedVectors(root / f"embeddings-{encoder_name}.npz")
    keys = [_text_key(d.text) for d in docs]
    todo = [i for i, (d, k) in enumerate(zip(docs, keys)) if cache.keys.get(d.figure_id) != k]
    if todo:
        batch = 256
        from tqdm import tqdm

        with tqdm(total=len(todo), desc="embed", unit="fig", disable=not progress) as bar:
            for s in range(0, len(todo), batch):
                part = todo[s:s + batch]
                vecs = np.asarray(encoder([docs[i].text for i in part]), dtype=np.float32)
                cache.put([(docs[i].figure_id, keys[i]) for i in part], vecs)
                bar.update(len(part))
        cache.save([d.figure_id for d in docs])
    if not docs:
        return np.zeros((0, 384), np.float32), 0
    return cache.get([d.figure_id for d in docs]), len(todo)


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
