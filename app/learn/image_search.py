"""Image-only queries: an uploaded figure (no caption) -> figures of the collection whose style /
content the trained image branch finds closest (same paper, citation neighbourhood).

The image vectors of every figure live in the model version's embedding store (written by
`embed.refresh_store`, i.e. by every index build); they are cached in-process per (store path,
mtime), so a query costs one CNN forward pass plus one matrix-vector product.
"""
from __future__ import annotations

import threading
from pathlib import Path

import numpy as np

from app.learn.embed import STORE, FigureEmbeddings, image_query
from app.search.searcher import Hit, Searcher

_LOCK = threading.Lock()
_STORES: dict[str, tuple[float, FigureEmbeddings]] = {}


def _store(model_dir: Path) -> FigureEmbeddings | None:
    p = Path(model_dir) / STORE
    try:
        mtime = p.stat().st_mtime
    except FileNotFoundError:
        return None
    with _LOCK:
        hit = _STORES.get(str(p))
        if hit and hit[0] == mtime:
            return hit[1]
    st = FigureEmbeddings.load(model_dir)
    if st is None or st.image is None:
        return None
    norms = np.linalg.norm(st.image, axis=1, keepdims=True)
    st.image = st.image / np.where(norms > 0, norms, 1)
    with _LOCK:
        _STORES[str(p)] = (mtime, st)
    return st


def image_model(data_dir: Path, name: str = "fused"):
    """The CURRENT model `name` if it has an image branch and embedded figures, else None."""
    from app.learn.registry import load_current

    try:
        loaded = load_current(Path(data_dir), name)
    except Exception:
        return None
    if loaded is None or loaded.config.kind != "fusion" or not loaded.config.image:
        return None
    return loaded if _store(loaded.path) is not None else None


def search_by_image(loaded, engine: Searcher | None, image, k: int = 12, kind: str = "figure") -> list[Hit]:
    """Top-k figures by image-branch cosine. Only items in `engine` (the served index version) of
    `kind` ("figure" or "table") are returned when an engine is given (captions and paper ids come
    from it)."""
    st = _store(loaded.path)
    if st is None:
        return []
    q = image_query(loaded, image)
    sims = st.image @ q
    order = np.argsort(-sims, kind="stable")
    hits = []
    for i in order.tolist():
        fid = int(st.ids[i])
        if engine is not None:
            if fid not in engine:
                continue
            r = engine.row_of(fid)
            if engine.types.kind_of_row(r) != kind:
                continue
            paper, caption = int(engine.paper_ids[r]), engine.captions[r]
        else:
            paper, caption = -1, ""
        s = float(sims[i])
        hits.append(Hit(fid, paper, s, 0.0, s, caption, []))
        if len(hits) >= k:
            break
    return hits
