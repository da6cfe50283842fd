"""Trained artifacts and versioned folders: `versions` publishes and checks versioned folders (the
search index uses it too), `store` keeps every trained artifact with its meta.json (data dir over
shipped defaults), `safe_io` reads and writes weights without pickle."""
from app.model_store.safe_io import UnsafeArtifact, load_arrays, load_tensors, save_arrays, save_tensors
from app.model_store.store import (KNOWN, META, Artifact, at_path, list_artifacts, make_meta, models_root,
                                   publish, ranking_artifact, read_meta, resolve, write_meta)

__all__ = ["KNOWN", "META", "Artifact", "UnsafeArtifact", "at_path", "list_artifacts", "load_arrays",
           "load_tensors", "make_meta", "models_root", "publish", "ranking_artifact", "read_meta", "resolve",
           "save_arrays", "save_tensors", "write_meta"]
