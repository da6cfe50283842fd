"""Perceptual hashes of pictures (the look index's input, app/search/looks.py): two 256-bit DCT
hashes (`imagehash.phash` with a 16 x 16 hash) of the picture in grey, packed into bytes: one of
the picture as it is and one of its content box (the white margin around the drawing trimmed), so
that a screenshot taken with more or less margin than the stored crop still matches it. Rescaling
and JPEG re-encoding move a hash by a few bits, a different drawing by many. Computed from the
stored crops when the index is built (no backbone: a few milliseconds a figure) and kept in a store
keyed like the picture vectors, so each crop is hashed once."""
from __future__ import annotations

from pathlib import Path

import imagehash
import numpy as np
from PIL import Image

from app.search.keyed_vectors import KeyedVectors
from app.search.looks import HASH_BYTES

HASH_SIDE = 16  # bits of one hash: HASH_SIDE ** 2; two hashes make HASH_BYTES
INK_BELOW = 200  # grey level under which a pixel is drawing, not margin (faint JPEG noise is above)


def content_box(img: Image.Image) -> Image.Image:
    """The picture cut to the box of its ink (the whole picture when it has none)."""
    box = img.convert("L").point(lambda v: 255 if v < INK_BELOW else 0).getbbox()
    return img.crop(box) if box else img


def look_hash(img: Image.Image) -> np.ndarray:
    """The picture's perceptual hashes, as it is and trimmed to its content: (HASH_BYTES,) uint8."""
    bits = [np.asarray(imagehash.phash(im, hash_size=HASH_SIDE).hash, dtype=bool).ravel()
            for im in (img, content_box(img))]
    return np.packbits(np.concatenate(bits))


class LookStore(KeyedVectors):
    """Hashes keyed by figure id and crop path (data_dir/pictures/looks.npz): a figure whose crop
    changed, or whose hash is of another layout, is hashed again."""

    def __init__(self, data_dir: Path):
        super().__init__(Path(data_dir) / "pictures" / "looks.npz", dtype=np.uint8)

    def missing(self, items: list[tuple[int, str]]) -> list[tuple[int, str]]:
        return [(fid, key) for fid, key in items
                if self.keys.get(fid) != key or len(self.vectors[fid]) != HASH_BYTES]

    def hashes(self, ids: list[int]) -> dict[int, np.ndarray]:
        """{figure id: hash} of the `ids` that have one."""
        return {i: self.vectors[i] for i in ids if i in self.vectors and len(self.vectors[i]) == HASH_BYTES}
