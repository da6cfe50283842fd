"""Picture vectors of a collection's figures, kept once computed (float16, one file per picture
model under data_dir/pictures): figure types are decided at ingest from the same backbone pass,
and the index reads the vectors from here instead of running the backbone again. Keyed by
figure id and crop path, so a figure whose crop changed is encoded again."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from app.search.keyed_vectors import KeyedVectors


class PictureStore(KeyedVectors):
    """Keyed by figure id and crop path, stored as float16 (half the memory of float32)."""

    def __init__(self, data_dir: Path, model: str):
        super().__init__(Path(data_dir) / "pictures" / f"{model}.npz", dtype=np.float16)
