"""Perceptual hashes of pictures (the look index's input, app/search/looks.py): a 256-bit DCT hash
(`imagehash.phash` with a 16 x 16 hash) of the picture in grey, packed into bytes. Rescaling and
JPEG re-encoding move it by a few bits, a different drawing by many. Computed from the stored crops
when the index is built (no backbone: a few milliseconds a figure) and kept in a store keyed like
the picture vectors, so each crop is hashed once."""
from __future__ import annotations

from pathlib import Path

import imagehash
import numpy as np
from PIL import Image

from app.search.keyed_vectors import KeyedVectors
from app.search.looks import HASH_BYTES

HASH_SIDE = 16  # HASH_SIDE ** 2 == 8 * HASH_BYTES bits


def look_hash(img: Image.Image) -> np.ndarray:
    """The picture's perceptual hash, (HASH_BYTES,) uint8."""
    bits = imagehash.phash(img, hash_size=HASH_SIDE).hash
    return np.packbits(np.asarray(bits, dtype=bool).ravel())


class LookStore(KeyedVectors):
    """Hashes keyed by figure id and crop path (data_dir/pictures/looks.npz): a figure whose crop
    changed is hashed again."""

    def __init__(self, data_dir: Path):
        super().__init__(Path(data_dir) / "pictures" / "looks.npz", dtype=np.uint8)

    def hashes(self, ids: list[int]) -> dict[int, np.ndarray]:
        """{figure id: hash} of the `ids` that have one."""
        return {i: self.vectors[i] for i in ids if i in self.vectors and len(self.vectors[i]) == HASH_BYTES}
