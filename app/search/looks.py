"""The look index: perceptual hashes of each row's picture, which tell copies of a picture from
pictures that merely look alike.

Picture vectors (app/vision/pictures.py) are tuned to bring figures of one kind together, so two
different bar charts of one style can be as close as a figure and its rescaled copy: a cosine cannot
say "same picture". A perceptual hash can: the 256-bit DCT hash of a crop changes little when the
picture is rescaled or saved as a JPEG and a lot when anything drawn changes. Each row keeps three
(app/vision/looks.py): of the picture as it is, of its content box, so that screenshots with more
or less white margin than the stored crop match too, and of its content box without the slivers
at its edges (ink beyond a white gutter close to an edge: a neighbouring panel's edge, a
sub-caption), so that screenshots catching more or less of them match too; two pictures are as far
apart as the nearest of the three pairs. Up to `COPY_MAX_BITS` bits apart is the same picture: on the
development collection's crops a rescaled (x0.4-1.5) JPEG (quality 50-90) copy is 2 bits from its
figure at the median and 8 at the 99th percentile, the nearest other figure 42 bits at the 1st
percentile (the few closer ones are figures printed twice). With it, an upload finds its figure
first (`figsearch eval-image-copies`, held-out papers): copies 1.000, screenshots with 5% / 15% more
margin .995 / .986, cut 2% into the drawing .860, the region rendered again from the PDF at another
resolution .946, against .882, .710, .525, .769 and .801 with the picture-vector cosine rule.

Rows without a hash (an index built before them, a crop that did not open) fall back to the
picture-vector cosine rule (`fusion.SAME_PICTURE_MIN`).

The panels of compound figures (their boxes found at ingest, app/ingest/panels.py) have hashes of
their own, each mapped to its figure's row and letter: an upload of one panel (the left third of a
three-panel figure) is far from the whole figure's hash and its picture vector need not be near the
figure's, so every panel hash is compared with the upload's (`panel_copies`, a linear scan of
HASH_BYTES a panel) and a panel within `COPY_MAX_BITS` makes its figure a copy. Versions written
before panel hashes load with none.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Mapping

import numpy as np

from app.search.fusion import SAME_PICTURE_MIN

HASHES = 3  # 256-bit hashes a picture: as it is, its content box, its content box without slivers
HASH_BYTES = 32 * HASHES  # four 64-bit words a hash
COPY_MAX_BITS = 24  # bits of a 256-bit hash that may differ between a picture and a copy of it (see above)
PANEL_SCAN_ROWS = 1 << 16  # panel hashes compared at once (bounds the scan's temporary arrays)


def hash_distances(query: np.ndarray, hashes: np.ndarray) -> np.ndarray:
    """Bits that differ between `query` (HASH_BYTES,) and each row of `hashes` (n, HASH_BYTES):
    the fewest of the three pairs (as it is, content box, content box without slivers)."""
    # each hash as four 64-bit words, their counts added one word at a time: a tenth of the time of
    # bytes reduced by .sum(axis), which dominated the scan of every panel hash
    rows = np.ascontiguousarray(hashes, np.uint8).reshape(-1, HASH_BYTES).view(np.uint64).reshape(-1, HASHES, 4)
    q = np.ascontiguousarray(query, np.uint8).view(np.uint64).reshape(HASHES, 4)
    c = np.bitwise_count(rows ^ q).astype(np.int64)
    per_hash = c[:, :, 0] + c[:, :, 1] + c[:, :, 2] + c[:, :, 3]
    return per_hash.min(axis=1)


class LookIndex:
    """Each row's perceptual hashes (`hashes`: HASH_BYTES packed bits, the two hashes of
    app/vision/looks.py) and whether the row has them (`known`); the hashes of panels
    (`panel_hashes`), each with its figure's row (`panel_rows`) and letter (`panel_letters`)."""

    def __init__(self, hashes: np.ndarray, known: np.ndarray, panel_hashes: np.ndarray | None = None,
                 panel_rows: np.ndarray | None = None, panel_letters: np.ndarray | None = None):
        self.hashes = np.asarray(hashes, dtype=np.uint8).reshape(-1, HASH_BYTES)
        self.known = np.asarray(known, dtype=bool)
        if len(self.known) != len(self.hashes):
            raise ValueError("one known flag per hash expected")
        self.n = len(self.hashes)
        self.panel_hashes = (np.zeros((0, HASH_BYTES), np.uint8) if panel_hashes is None
                             else np.asarray(panel_hashes, dtype=np.uint8).reshape(-1, HASH_BYTES))
        self.panel_rows = np.zeros(0, np.int64) if panel_rows is None else np.asarray(panel_rows, dtype=np.int64)
        self.panel_letters = np.zeros(0, "U1") if panel_letters is None else np.asarray(panel_letters, dtype="U1")
        if not len(self.panel_hashes) == len(self.panel_rows) == len(self.panel_letters):
            raise ValueError("one row and one letter per panel hash expected")

    @classmethod
    def build(cls, figure_ids: np.ndarray, by_figure: Mapping[int, np.ndarray],
              deleted: np.ndarray | None = None,
              panels: Mapping[int, Mapping[str, np.ndarray]] | None = None) -> "LookIndex":
        """The rows' hashes from {figure id: hash} and their panels' from {figure id: {letter:
        hash}}; a deleted row or a figure without one has none."""
        n = len(figure_ids)
        hashes = np.zeros((n, HASH_BYTES), np.uint8)
        known = np.zeros(n, bool)
        panel_hashes, panel_rows, panel_letters = [], [], []
        for i, fid in enumerate(np.asarray(figure_ids).tolist()):
            if deleted is not None and deleted[i]:
                continue
            h = by_figure.get(int(fid))
            if h is not None:
                hashes[i], known[i] = h, True
            for letter, ph in sorted((panels or {}).get(int(fid), {}).items()):
                panel_hashes.append(ph)
                panel_rows.append(i)
                panel_letters.append(letter)
        return cls(hashes, known, np.array(panel_hashes, np.uint8).reshape(-1, HASH_BYTES),
                   np.array(panel_rows, np.int64), np.array(panel_letters, "U1"))

    def __len__(self) -> int:
        return self.n

    def of_row(self, row: int) -> np.ndarray | None:
        return self.hashes[row] if self.known[row] else None

    def copies(self, query: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(is a copy of `query`, has a hash) for each of `rows`."""
        rows = np.asarray(rows, dtype=np.int64)
        return hash_distances(query, self.hashes[rows]) <= COPY_MAX_BITS, self.known[rows]

    def panel_copies(self, query: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(rows, letters): the figures one of whose panels `query` is a copy of, each with the
        letter of its nearest such panel, nearest first."""
        if not len(self.panel_hashes):
            return np.zeros(0, np.int64), np.zeros(0, "U1")
        step = PANEL_SCAN_ROWS
        bits = np.concatenate([hash_distances(query, self.panel_hashes[s:s + step])
                               for s in range(0, len(self.panel_hashes), step)])
        near = np.flatnonzero(bits <= COPY_MAX_BITS)
        near = near[np.argsort(bits[near], kind="stable")]
        rows, first = np.unique(self.panel_rows[near], return_index=True)  # each figure by its nearest panel
        best = near[np.sort(first)]
        return self.panel_rows[best], self.panel_letters[best]

    def save(self, d: str | Path) -> None:
        d = Path(d)
        d.mkdir(parents=True, exist_ok=True)
        np.save(d / "hashes.npy", self.hashes)
        np.save(d / "known.npy", self.known)
        np.save(d / "panel_hashes.npy", self.panel_hashes)
        np.save(d / "panel_rows.npy", self.panel_rows)
        np.save(d / "panel_letters.npy", self.panel_letters)
        (d / "meta.json").write_text(json.dumps({"n": self.n, "hash_bytes": HASH_BYTES, "format": 2,
                                                 "n_panels": len(self.panel_hashes)}))

    @classmethod
    def load(cls, d: str | Path, mmap: bool = False) -> "LookIndex":
        """A saved look index; one saved before panel hashes (format 1) has none, one saved with
        hashes of another layout (fewer hashes a picture) has no hashes at all."""
        d = Path(d)
        meta = json.loads((d / "meta.json").read_text()) if (d / "meta.json").exists() else {}
        if meta.get("hash_bytes", HASH_BYTES) != HASH_BYTES:
            n = int(meta["n"])
            return cls(np.zeros((n, HASH_BYTES), np.uint8), np.zeros(n, bool))
        mode = "r" if mmap else None
        panels = ((np.load(d / "panel_hashes.npy", mmap_mode=mode), np.load(d / "panel_rows.npy"),
                   np.load(d / "panel_letters.npy")) if (d / "panel_hashes.npy").exists() else (None, None, None))
        return cls(np.load(d / "hashes.npy", mmap_mode=mode), np.load(d / "known.npy"), *panels)


def panel_number(letters: np.ndarray) -> np.ndarray:
    """Panel letters as the number a search signal carries: "a" 1.0, "b" 2.0, ..., "" (none) 0.0."""
    letters = np.asarray(letters, dtype="U1")
    return np.array([ord(x) - ord("a") + 1 if x else 0 for x in letters.tolist()], np.float64)


def panel_letter(number: float) -> str | None:
    """The letter of a `panel_number` (None for 0)."""
    return chr(ord("a") + int(round(number)) - 1) if number and number >= 1 else None


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
