"""Embeddings with a trained fusion model.

* `embed_rows(loaded, data, rows)`: fused / text / image embeddings (L2-normalised float32) of
  figures of a LearnData, batched (the frozen MiniLM vectors come from the index cache).
* `FigureEmbeddings`: the store of one model version, data_dir/models/<name>/<version>/
  figure_embeddings.npz (figure ids, fused, image); `refresh_store` embeds only figures that are
  new or whose text/image changed (keyed like the caches), so it is the "embed new figures after
  ingestion" job; `indexing.build_index` reads the fused vectors from it.
* `image_query(loaded, image_bytes)`: the image branch on an uploaded figure (image-only queries).
* `text_query_encoder(loaded)`: text-only query -> fused space (free-text search).
"""
from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path

import numpy as np
import torch

from app.learn.data import LearnData
from app.learn.images import load_image

STORE = "figure_embeddings.npz"


def _text_input(loaded, data: LearnData, rows: np.ndarray):
    cfg = loaded.config
    if cfg.text == "minilm":
        return torch.from_numpy(data.minilm()[rows])
    if cfg.text in ("lstm", "bilstm"):
        return torch.from_numpy(loaded.vocab.encode([data.texts[i] for i in rows.tolist()], 100))
    return None


def embed_rows(loaded, data: LearnData, rows=None, batch: int = 128) -> dict[str, np.ndarray]:
    model, cfg = loaded.model, loaded.config
    rows = np.arange(len(data)) if rows is None else np.asarray(rows, np.int64)
    images = data.images(cfg.image_size) if cfg.image else None
    stats = data.stats() if cfg.image and getattr(cfg, "image_kind", "simple") == "style" else None
    papers = data.paper_minilm() if getattr(cfg, "paper", False) else None
    outs: dict[str, list] = {}
    model.eval()
    with torch.inference_mode():
        for s in range(0, len(rows), batch):
            r = rows[s:s + batch]
            t = _text_input(loaded, data, r)
            im = torch.from_numpy(images[r]).float().div_(255.0) if images is not None else None
            st = torch.from_numpy(stats[r]) if stats is not None else None
            pp = torch.from_numpy(papers[r]) if papers is not None else None
            for k, v in model(t, im, st, pp).items():
                outs.setdefault(k, []).append(v.numpy())
    dim = getattr(model, "dim", 64)
    return {k: (np.concatenate(v).astype(np.float32) if v else np.zeros((0, dim), np.float32))
            for k, v in outs.items()} if len(rows) else {"fused": np.zeros((0, dim), np.float32)}


def _row_keys(data: LearnData) -> list[str]:
    keys = []
    for d, p in zip(data.docs, data.image_paths):
        try:
            st = os.stat(data.resolve(p))
            ik = f"{st.st_size}|{int(st.st_mtime)}"
        except OSError:
            ik = "missing"
        pt = data.paper_text.get(d.paper_id, "")
        keys.append(hashlib.blake2b(f"{d.text}\x00{p}\x00{ik}\x00{pt}".encode("utf-8", "replace"),
                                    digest_size=8).hexdigest())
    return keys


class FigureEmbeddings:
    def __init__(self, ids: np.ndarray, keys: np.ndarray, fused: np.ndarray, image: np.ndarray | None):
        self.ids, self.keys, self.fused, self.image = ids, keys, fused, image

    @classmethod
    def load(cls, model_dir: Path) -> "FigureEmbeddings | None":
        p = Path(model_dir) / STORE
        if not p.exists():
            return None
        z = np.load(p, allow_pickle=False)
        return cls(z["ids"], z["keys"], z["fused"], z["image"] if "image" in z.files and z["image"].size else None)

    def save(self, model_dir: Path) -> None:
        p = Path(model_dir) / STORE
        tmp = p.with_name(f".{p.stem}.{os.getpid()}.tmp.npz")
        np.savez(tmp, ids=self.ids, keys=self.keys, fused=self.fused,
                 image=self.image if self.image is not None else np.zeros((0,), np.float32))
        tmp.replace(p)

    def lookup(self, figure_ids) -> dict[str, np.ndarray]:
        pos = {int(f): i for i, f in enumerate(self.ids.tolist())}
        rows = np.array([pos[int(f)] for f in figure_ids], np.int64)
        out = {"fused": self.fused[rows]}
        if self.image is not None:
            out["image"] = self.image[rows]
        return out


def refresh_store(loaded, data: LearnData, progress: bool = False) -> tuple[FigureEmbeddings, int]:
    """Embeddings of every figure of `data` with `loaded`, re-using the stored ones whose key is
    unchanged; returns (store, number newly embedded). Writes the store next to the model."""
    old = FigureEmbeddings.load(loaded.path)
    keys = _row_keys(data)
    have = {}
    if old is not None:
        have = {(int(i), str(k)): n for n, (i, k) in enumerate(zip(old.ids.tolist(), old.keys.tolist()))}
    idx = [have.get((d.figure_id, k)) for d, k in zip(data.docs, keys)]
    todo = np.array([i for i, x in enumerate(idx) if x is None], np.int64)
    dim = loaded.model.dim
    fused = np.zeros((len(data), dim), np.float32)
    image = np.zeros((len(data), loaded.model.branch_dim), np.float32) if loaded.config.image else None
    for i, x in enumerate(idx):
        if x is not None:
            fused[i] = old.fused[x]
            if image is not None and old.image is not None:
                image[i] = old.image[x]
    if len(todo):
        new = embed_rows(loaded, data, todo)
        fused[todo] = new["fused"]
        if image is not None:
            image[todo] = new["image"]
    store = FigureEmbeddings(np.array([d.figure_id for d in data.docs], np.int64), np.array(keys), fused, image)
    store.save(loaded.path)
    return store, int(len(todo))


def image_query(loaded, image) -> np.ndarray:
    """Unit vector of the image branch for one uploaded figure (bytes, path or PIL image)."""
    if loaded.model.image is None:
        raise ValueError("this model has no image branch")
    from app.learn.images import image_stats

    x = torch.from_numpy(load_image(image, loaded.config.image_size)[None]).float().div_(255.0)
    st = torch.from_numpy(image_stats(image)[None])
    loaded.model.eval()
    with torch.inference_mode():
        v = torch.nn.functional.normalize(loaded.model.encode_image(x, st), dim=-1)
    return v[0].numpy().astype(np.float32)


class TextQueryEncoder:
    """texts -> fused-space unit vectors through the text branch alone (image features zeroed; the
    model was trained with modality dropout for this). Callable like the MiniLM encoder."""

    def __init__(self, loaded):
        self.loaded = loaded
        self.dim = loaded.model.dim
        self._lock = threading.Lock()

    def __call__(self, texts: list[str]) -> np.ndarray:
        cfg, model = self.loaded.config, self.loaded.model
        if cfg.text == "minilm":
            from app.search.embeddings import FIGURE_TEXT_TOKENS
            from app.search.encoder import default_encoder

            t = torch.from_numpy(default_encoder().encode(list(texts), max_length=FIGURE_TEXT_TOKENS))
        elif cfg.text in ("lstm", "bilstm"):
            t = torch.from_numpy(self.loaded.vocab.encode(list(texts), 100))
        else:
            raise ValueError("this model has no text branch")
        with self._lock, torch.inference_mode():
            model.eval()
            return model(t, None)["fused"].numpy().astype(np.float32)

    encode = __call__


def index_model(data_dir: Path):
    """The learned model whose vectors the CURRENT search index holds (index/dense.json), or None
    when the index holds MiniLM vectors."""
    from app.learn.registry import load_dir
    from app.model_store import models_root
    from app.search.embeddings import read_dense_info

    info = read_dense_info(Path(data_dir) / "index")
    if info.get("kind") != "learned":
        return None
    path = models_root(data_dir) / info["model"] / info["model_version"]
    if not path.is_dir():
        return None
    key = str(path)
    if key not in _INDEX_MODELS:
        _INDEX_MODELS[key] = load_dir(path, info["model"], info["model_version"])
    return _INDEX_MODELS[key]


_INDEX_MODELS: dict = {}


class IndexQueryEncoder:
    """Free-text query encoder that follows the CURRENT index: MiniLM while the index holds MiniLM
    vectors, the learned model's text path once it holds learned ones (index/dense.json, checked at
    most every `poll_s` seconds). Callable like the MiniLM encoder: texts -> (n, dim) unit vectors."""

    def __init__(self, data_dir: Path, poll_s: float = 2.0):
        self.data_dir = Path(data_dir)
        self.poll_s = poll_s
        self._checked = float("-inf")
        self._enc = None
        self._lock = threading.Lock()

    def current(self):
        import time

        now = time.monotonic()
        with self._lock:
            if self._enc is None or now - self._checked >= self.poll_s:
                self._checked = now
                loaded = index_model(self.data_dir)
                if loaded is None or loaded.config.text is None:
                    from app.search.encoder import default_encoder

                    enc = default_encoder()
                else:
                    enc = self._enc if isinstance(self._enc, TextQueryEncoder) and self._enc.loaded is loaded \
                        else TextQueryEncoder(loaded)
                self._enc = enc
            return self._enc

    def __call__(self, texts: list[str]) -> np.ndarray:
        return self.current()(texts)

    encode = __call__


def text_query_encoder(data_dir: Path):
    """The free-text query encoder matching the CURRENT index (see IndexQueryEncoder).
    `app.api.main` and the CLI's `_engine` should pass this (not `default_encoder()`) as the
    engine's encoder."""
    return IndexQueryEncoder(Path(data_dir))
