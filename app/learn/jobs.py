"""Embedding jobs (run in-process in embedded mode, wrapped by Celery tasks in workers/tasks.py).

* `embed_new_figures`: embed the figures the current model has not embedded yet (new papers,
  changed text/crops), batched; the store is next to the model version.
* `refresh_index`: rebuild the search index (lexical + dense) and publish a new version; the dense
  vectors are the learned ones when a trained default model exists (`app.search.indexing`).
* `reembed_all`: after a new model version: embed every figure with it and publish a new index
  version. The old index version keeps serving until CURRENT is switched atomically; the API's
  engine holder notices `current_version` change and swaps engines in the background, so search
  has no downtime.
"""
from __future__ import annotations

import time

from app.settings import Settings


def embed_new_figures(settings: Settings, progress: bool = False) -> dict:
    from app.learn.data import load_learn_data
    from app.learn.embed import refresh_store
    from app.learn.registry import DEFAULT_MODEL, load_current

    loaded = load_current(settings.data_dir, getattr(settings, "learned_model", DEFAULT_MODEL) or DEFAULT_MODEL)
    if loaded is None:
        return {"model": None, "embedded": 0}
    t0 = time.perf_counter()
    data = load_learn_data(settings)
    store, n = refresh_store(loaded, data, progress=progress)
    dt = time.perf_counter() - t0
    return {"model": loaded.name, "version": loaded.version, "figures": len(store.ids), "embedded": n,
            "seconds": round(dt, 2)}


def refresh_index(settings: Settings, progress: bool = False) -> dict:
    from app.search.indexing import build_index

    rep = build_index(settings, dense=settings.dense, progress=progress)
    return {"index_version": rep.version, "figures": rep.n_figures, "encoded": rep.n_encoded,
            "seconds": round(rep.seconds, 2)}


def reembed_all(settings: Settings, progress: bool = False) -> dict:
    emb = embed_new_figures(settings, progress=progress)  # a new version has an empty store: all figures
    out = refresh_index(settings, progress=progress)
    out["embedded"] = emb.get("embedded", 0)
    out["model_version"] = emb.get("version")
    return out
