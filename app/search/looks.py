"""The look index: a perceptual hash of each row's picture, which tells copies of a picture from
pictures that merely look alike.

Picture vectors (app/vision/pictures.py) are tuned to bring figures of one kind together, so two
different bar charts of one style can be as close as a figure and its rescaled copy: a cosine cannot
say "same picture". A perceptual hash can: the 256-bit DCT hash of a figure's crop
(app/vision/looks.py) changes little when the picture is rescaled or saved as a JPEG and a lot when
anything drawn changes. Over 728 figures of the development collection, a rescaled (x0.4-1.5) JPEG
(quality 50-90) copy differed from its figure by at most 14 bits (99th percentile 10), and from the
nearest other figure by at least 32 bits for 99% of them (the few closer ones are figures printed
twice); `figsearch eval-image-copies` reports both distances for a collection. So up to
`COPY_MAX_BITS` bits apart is the same picture.

Rows without a hash (an index built before hashes, a crop that did not open) fall back to the
picture-vector cosine rule (`fusion.SAME_PICTURE_MIN`).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Mapping

import numpy as np

from app.search.fusion import SAME_PICTURE_MIN

HASH_BYTES = 32     # 256 bits
COPY_MAX_BITS = 24  # bits that may differ between a picture and a copy of it (see above)


def hash_distances(query: np.ndarray, hashes: np.ndarray) -> np.ndarray:
    """Bits that differ between `query` (HASH_BYTES,) and each row of `hashes` (n, HASH_BYTES)."""
    return np.bitwise_count(np.bitwise_xor(np.asarray(hashes, np.uint8), np.asarray(query, np.uint8))).sum(
        axis=1, dtype=np.int64)


class LookIndex:
    """One perceptual hash per row (`hashes`, packed bits) and whether the row has one (`known`)."""

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
