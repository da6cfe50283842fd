"""Build or refresh the search index of a data dir from its database.

Embeddings are cached per figure (keyed by a hash of the figure text and the encoder name), so a
refresh after new papers only encodes the new figures; the lexical index is rebuilt (seconds for
tens of thousands of figures). The result is written as a new index version and CURRENT is
switched atomically, so running services pick it up without downtime.
"""
from __future__ import annotations

import hashlib
import os
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from app.db.session import session_scope
from app.search.collection import Collection, load_collection
from app.search.engine import FigureDoc, SearchEngine, read_w
from app.search.papers import PaperIndex
from app.search.text import analyze
from app.settings import Settings

log = logging.getLogger(__name__)

Encoder = Callable[[list[str]], np.ndarray]


def index_root(settings: Settings) -> Path:
    return settings.data_dir / "index"


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


@dataclass
class IndexReport:
    version: str
    n_figures: int
    n_encoded: int
    seconds: float


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


FIGURE_TEXT_TOKENS = 128  # the seed feeds models the first 100 words (caption first)
PAPER_TEXT_TOKENS = 256  # title + the start of the abstract


def default_text_encoder() -> tuple[Encoder, str]:
    """MiniLM over figure texts truncated to 128 word pieces: ~3x faster than 256 on CPU."""
    from app.search.encoder import default_encoder

    enc = default_encoder()
    return (lambda texts: enc.encode(texts, max_length=FIGURE_TEXT_TOKENS)), "minilm128"


def paper_index(col: Collection, root: Path, encoder: Encoder | None = None,
                encoder_name: str | None = None, progress: bool = False) -> PaperIndex | None:
    """Paper-level views of the papers that have figures in `col` (papers.py): title + abstract by
    MiniLM (or the given encoder; cached like figure embeddings) and by tf.idf, and all figure
    texts of the paper by tf.idf."""
    pids = sorted({d.paper_id for d in col.docs})
    if not pids:
        return None
    if encoder is None:
        from app.search.encoder import default_encoder

        enc = default_encoder()
        encoder = lambda texts: enc.encode(texts, max_length=PAPER_TEXT_TOKENS)  # noqa: E731
        encoder_name = f"minilm{PAPER_TEXT_TOKENS}"
    texts = [col.paper_text.get(p, "") or " " for p in pids]
    pseudo = [FigureDoc(p, p, "", t) for p, t in zip(pids, texts)]
    vecs, _ = embed_docs(pseudo, root, encoder, f"paper-{encoder_name or 'custom'}", progress=progress)
    figure_texts: dict[int, list[str]] = {p: [] for p in pids}
    for d in col.docs:
        figure_texts[d.paper_id].append(d.text)
    return PaperIndex.build(pids, vecs, [analyze(t) for t in texts],
                            [analyze(" ".join(figure_texts[p])) for p in pids])


def visual_embeddings(settings: Settings, col: Collection, progress: bool = False) -> np.ndarray | None:
    """Visual vectors of the figures' crops aligned with col.docs, or None without a visual encoder."""
    return None


DENSE_FILE = "dense.json"


def learned_embeddings(settings: Settings, docs: list[FigureDoc], progress: bool = False):
    """(fused vectors aligned with docs, n newly embedded, info) from the CURRENT trained default
    model (app.learn), or None when no model is trained / learned embeddings are switched off.
    Only figures the model has not embedded yet are run through it (the store is per version)."""
    if not getattr(settings, "learned_embeddings", True):
        return None
    from app.learn.registry import DEFAULT_MODEL, load_current

    name = getattr(settings, "learned_model", "") or DEFAULT_MODEL
    try:
        loaded = load_current(settings.data_dir, name)
    except Exception:  # a broken model must not break indexing: fall back to MiniLM
        log.exception("trained model %s could not be loaded; indexing with MiniLM", name)
        return None
    if loaded is None or loaded.config.kind != "fusion":
        return None
    from app.learn.data import load_learn_data
    from app.learn.embed import refresh_store

    data = load_learn_data(settings)
    store, n_new = refresh_store(loaded, data, progress=progress)
    vecs = store.lookup([d.figure_id for d in docs])["fused"]
    return vecs, n_new, {"kind": "learned", "model": name, "model_version": loaded.version,
                         "dim": int(vecs.shape[1]) if vecs.ndim == 2 else 0}


def read_dense_info(root: Path) -> dict:
    """What the dense vectors of the CURRENT index are: {"kind": "minilm"} or the learned model."""
    import json

    try:
        return json.loads((Path(root) / DENSE_FILE).read_text())
    except (FileNotFoundError, ValueError):
        return {"kind": "minilm"}


def build_index(settings: Settings, encoder: Encoder | None = None, encoder_name: str | None = None,
                dense: bool = True, progress: bool = False) -> IndexReport:
    """Rebuild the lexical index and refresh embeddings; write and publish a new version.

    Dense vectors: the trained default model's fused figure embeddings when one exists (text +
    image, app.learn), else MiniLM text embeddings; an explicit `encoder` always wins."""
    import json

    t0 = time.perf_counter()
    with session_scope(settings.db_url) as s:
        col = load_collection(s)
    root = index_root(settings)
    emb, n_new = None, 0
    info = {"kind": "minilm"}
    papers = None
    if dense and col.docs:
        papers = paper_index(col, root, encoder, encoder_name, progress)
        learned = learned_embeddings(settings, col.docs, progress) if encoder is None else None
        if learned is not None:
            emb, n_new, info = learned
        else:
            if encoder is None:
                encoder, encoder_name = default_text_encoder()
            emb, n_new = embed_docs(col.docs, root, encoder, encoder_name or "custom", progress=progress)
            info = {"kind": encoder_name or "custom"}
    w = read_w(root)
    engine = SearchEngine.build(col.docs, embeddings=emb, w=0.5 if w is None else w,
                                vector_kind=settings.vector_index, gpu=settings.faiss_gpu,
                                papers=papers,
                                figure_types=[col.figure_type.get(d.figure_id) for d in col.docs])
    version = engine.save(root)
    info["index_version"] = version
    tmp = root / f".{DENSE_FILE}.tmp"
    tmp.write_text(json.dumps(info))
    tmp.replace(root / DENSE_FILE)
    return IndexReport(version, len(col.docs), n_new, time.perf_counter() - t0)
