"""The look index: perceptual hashes of each row's picture, which tell copies of a picture from
pictures that merely look alike.

Picture vectors (app/vision/pictures.py) are tuned to bring figures of one kind together, so two
different bar charts of one style can be as close as a figure and its rescaled copy: a cosine cannot
say "same picture". A perceptual hash can: the 256-bit DCT hash of a crop changes little when the
picture is rescaled or saved as a JPEG and a lot when anything drawn changes. Each row keeps two
(app/vision/looks.py): of the picture as it is and of its content box, so that screenshots with
more or less white margin than the stored crop match too; two pictures are as far apart as the
nearer of the two pairs. Up to `COPY_MAX_BITS` bits apart is the same picture: on the
development collection's crops a rescaled (x0.4-1.5) JPEG (quality 50-90) copy is 2 bits from its
figure at the median and 8 at the 99th percentile, the nearest other figure 42 bits at the 1st
percentile (the few closer ones are figures printed twice). With it, an upload finds its figure
first (`figsearch eval-image-copies`, held-out papers): copies 1.000, screenshots with 5% / 15% more
margin .995 / .986, cut 2% into the drawing .860, the region rendered again from the PDF at another
resolution .946, against .882, .710, .525, .769 and .801 with the picture-vector cosine rule.

Rows without a hash (an index built before them, a crop that did not open) fall back to the
picture-vector cosine rule (`fusion.SAME_PICTURE_MIN`).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Mapping

import numpy as np

from app.search.fusion import SAME_PICTURE_MIN

HASH_BYTES = 64     # two 256-bit hashes: the picture as it is, then its content box
COPY_MAX_BITS = 24  # bits of a 256-bit hash that may differ between a picture and a copy of it (see above)


def hash_distances(query: np.ndarray, hashes: np.ndarray) -> np.ndarray:
    """Bits that differ between `query` (HASH_BYTES,) and each row of `hashes` (n, HASH_BYTES):
    the fewer of the two pairs (as it is, content box)."""
    bits = np.bitwise_count(np.bitwise_xor(np.asarray(hashes, np.uint8).reshape(-1, 2, HASH_BYTES // 2),
                                           np.asarray(query, np.uint8).reshape(2, HASH_BYTES // 2)))
    return bits.sum(axis=2, dtype=np.int64).min(axis=1)


class LookIndex:
    """Each row's perceptual hashes (`hashes`: HASH_BYTES packed bits, the two hashes of
    app/vision/looks.py) and whether the row has them (`known`)."""

    def __init__(self, hashes: np.ndarray, known: np.ndarray):
        self.hashes = np.asarray(hashes, dtype=np.uint8).reshape(-1, HASH_BYTES)
        self.known = np.asarray(known, dtype=bool)
        if len(self.known) != len(self.hashes):
            raise ValueError("one known flag per hash expected")
        self.n = len(self.hashes)

    @classmethod
    def build(cls, figure_ids: np.ndarray, by_figure: Mapping[int, np.ndarray],
              deleted: np.ndarray | None = None) -> "LookIndex":
        """The rows' hashes from {figure id: hash}; a deleted row or a figure without one has none."""
        n = len(figure_ids)
        hashes = np.zeros((n, HASH_BYTES), np.uint8)
        known = np.zeros(n, bool)
        for i, fid in enumerate(np.asarray(figure_ids).tolist()):
            h = by_figure.get(int(fid))
            if h is not None and (deleted is None or not deleted[i]):
                hashes[i], known[i] = h, True
        return cls(hashes, known)

    def __len__(self) -> int:
        return self.n

    def of_row(self, row: int) -> np.ndarray | None:
        return self.hashes[row] if self.known[row] else None

    def copies(self, query: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(is a copy of `query`, has a hash) for each of `rows`."""
        rows = np.asarray(rows, dtype=np.int64)
        return hash_distances(query, self.hashes[rows]) <= COPY_MAX_BITS, self.known[rows]

    def save(self, d: str | Path) -> None:
        d = Path(d)
        d.mkdir(parents=True, exist_ok=True)
        np.save(d / "hashes.npy", self.hashes)
        np.save(d / "known.npy", self.known)
        (d / "meta.json").write_text(json.dumps({"n": self.n, "hash_bytes": HASH_BYTES, "format": 1}))

    @classmethod
    def load(cls, d: str | Path, mmap: bool = False) -> "LookIndex":
        d = Path(d)
        return cls(np.load(d / "hashes.npy", mmap_mode="r" if mmap else None), np.load(d / "known.npy"))


def same_picture(looks: LookIndex | None, query: np.ndarray | None, rows: np.ndarray,
                 cosines: np.ndarray | None) -> np.ndarray:
    """Which of `rows` show the query's picture: by perceptual hash where the query and the row
    have one, else by picture-vector cosine (`cosines`, None: no picture vectors)."""
    rows = np.asarray(rows, dtype=np.int64)
    by_cosine = np.zeros(len(rows), bool) if cosines is None else np.asarray(cosines) >= SAME_PICTURE_MIN
    if looks is None or query is None:
        return by_cosine
    near, known = looks.copies(query, rows)
    return np.where(known, near, by_cosine)
