"""Perceptual hashes of pictures (the look index's input, app/search/looks.py): three 256-bit DCT
hashes (`imagehash.phash` with a 16 x 16 hash) of the picture in grey, packed into bytes: one of
the picture as it is, one of its content box (the white margin around the drawing trimmed), so
that a screenshot taken with more or less margin than the stored crop still matches it, and one of
its content box without slivers at its edges (a strip of ink beyond a white gutter close to an
edge: what a screenshot of one panel catches of its neighbours, or a sub-caption), so that a
screenshot with more or less of them than the stored crop matches too. Rescaling
and JPEG re-encoding move a hash by a few bits, a different drawing by many. Computed from the
stored crops when the index is built (no backbone: a few milliseconds a figure) and kept in a store
keyed like the picture vectors, so each crop is hashed once; the panels of a compound figure are
hashed the same way, each cut from the figure's crop (`PanelLookStore`)."""
from __future__ import annotations

from pathlib import Path

import imagehash
import numpy as np
from PIL import Image

from app.search.keyed_vectors import KeyedVectors
from app.search.looks import HASH_BYTES

HASH_SIDE = 16  # bits of one hash: HASH_SIDE ** 2; HASHES of them make HASH_BYTES
INK_BELOW = 200  # grey level under which a pixel is drawing, not margin (faint JPEG noise is above)
PANEL_LETTERS = "abcdefgh"  # a figure's panels (app/ingest/panels.py), one hash slot each
MIN_PANEL_INK_PX = 24  # a panel whose ink spans fewer pixels either way is too small to tell copies by
SLIVER_DEPTH = 0.15  # how far in from an edge of the ink (share of its length) a gutter may cut off a sliver
GUTTER_MIN_PX = 2  # blank lines that make a gutter between a sliver and the picture


def ink_box(img: Image.Image) -> tuple[int, int, int, int] | None:
    """The box of the picture's ink (None when it has none)."""
    return img.convert("L").point(lambda v: 255 if v < INK_BELOW else 0).getbbox()


def content_box(img: Image.Image) -> Image.Image:
    """The picture cut to the box of its ink (the whole picture when it has none)."""
    box = ink_box(img)
    return img.crop(box) if box else img


def look_hash(img: Image.Image) -> np.ndarray:
    """The picture's perceptual hashes: as it is, trimmed to its content, and trimmed to its
    content without the slivers at its edges (`sliver_trimmed`; its content box when it has none):
    (HASH_BYTES,) uint8."""
    box = content_box(img)
    bits = [np.asarray(imagehash.phash(im, hash_size=HASH_SIDE).hash, dtype=bool).ravel()
            for im in (img, box, sliver_trimmed(img) or box)]
    return np.packbits(np.concatenate(bits))


def _gutter_cuts(has_ink: np.ndarray) -> tuple[int, int]:
    """(first line kept, line after the last kept) of a run of lines that begins and ends with ink:
    cut at a gutter (GUTTER_MIN_PX blank lines or more) within SLIVER_DEPTH of either end, the
    gutter nearest that end."""
    n = len(has_ink)
    edges = np.flatnonzero(np.diff(has_ink.astype(np.int8)))  # ink -> blank at e (blank from e + 1), and back
    starts, ends = edges[0::2] + 1, edges[1::2] + 1  # blank runs [start, end): ink on both sides
    wide = ends - starts >= GUTTER_MIN_PX
    starts, ends = starts[wide], ends[wide]
    near_lo, near_hi = ends <= SLIVER_DEPTH * n, starts >= (1 - SLIVER_DEPTH) * n
    lo = int(ends[near_lo][0]) if near_lo.any() else 0
    hi = int(starts[near_hi][-1]) if near_hi.any() else n
    return lo, hi


def sliver_trimmed(img: Image.Image) -> Image.Image | None:
    """The picture without the slivers at its edges: a strip of ink cut off from the rest by a white
    gutter close to an edge, as a screenshot of one panel catches of its neighbours or of a
    sub-caption; rows first, then columns, twice. None when there is no such sliver."""
    ink = np.asarray(img.convert("L")) < INK_BELOW
    if not ink.any():
        return None

    def to_ink(x0: int, y0: int, x1: int, y1: int) -> tuple[int, int, int, int]:
        rows, cols = ink[y0:y1, x0:x1].any(axis=1), ink[y0:y1, x0:x1].any(axis=0)
        return (x0 + int(cols.argmax()), y0 + int(rows.argmax()),
                x1 - int(cols[::-1].argmax()), y1 - int(rows[::-1].argmax()))

    box = to_ink(0, 0, ink.shape[1], ink.shape[0])  # the ink box, from the array already made
    x0, y0, x1, y1 = box
    for _ in range(2):
        top, bottom = _gutter_cuts(ink[y0:y1, x0:x1].any(axis=1))
        x0, y0, x1, y1 = to_ink(x0, y0 + top, x1, y0 + bottom)
        left, right = _gutter_cuts(ink[y0:y1, x0:x1].any(axis=0))
        x0, y0, x1, y1 = to_ink(x0 + left, y0, x0 + right, y1)
    return None if (x0, y0, x1, y1) == box else img.crop((x0, y0, x1, y1))


class LookStore(KeyedVectors):
    """Hashes keyed by figure id and crop path (data_dir/pictures/looks.npz): a figure whose crop
    changed, or whose hash is of another layout, is hashed again."""

    def __init__(self, data_dir: Path):
        super().__init__(Path(data_dir) / "pictures" / "looks.npz", dtype=np.uint8, width=HASH_BYTES)

    def hashes(self, ids: list[int]) -> dict[int, np.ndarray]:
        """{figure id: hash} of the `ids` that have one."""
        return {i: self.vectors[i] for i in ids if i in self.vectors and len(self.vectors[i]) == HASH_BYTES}


def has_drawing(img: Image.Image) -> bool:
    """The picture's ink spans at least MIN_PANEL_INK_PX pixels both ways: a blank or tiny panel's
    hash would call many unrelated uploads copies of it."""
    box = ink_box(img)
    return box is not None and min(box[2] - box[0], box[3] - box[1]) >= MIN_PANEL_INK_PX


class PanelLookStore(KeyedVectors):
    """The hashes of each compound figure's panels (data_dir/pictures/panel_looks.npz), keyed by
    figure id, crop path and panel boxes: one slot of HASH_BYTES per letter of PANEL_LETTERS, then
    a byte per slot saying whether it holds a hash (a panel with no drawing has none)."""

    WIDTH = len(PANEL_LETTERS) * (HASH_BYTES + 1)

    def __init__(self, data_dir: Path):
        super().__init__(Path(data_dir) / "pictures" / "panel_looks.npz", dtype=np.uint8, width=self.WIDTH)

    @staticmethod
    def pack(by_letter: dict[str, np.ndarray]) -> np.ndarray:
        """{letter: hash} as one stored row."""
        n = len(PANEL_LETTERS)
        row = np.zeros(n * (HASH_BYTES + 1), np.uint8)
        for letter, h in by_letter.items():
            i = PANEL_LETTERS.index(letter)
            row[i * HASH_BYTES:(i + 1) * HASH_BYTES] = h
            row[n * HASH_BYTES + i] = 1
        return row

    def panels(self, ids: list[int]) -> dict[int, dict[str, np.ndarray]]:
        """{figure id: {letter: hash}} of the `ids` whose panels have hashes."""
        n, out = len(PANEL_LETTERS), {}
        for i in ids:
            row = self.vectors.get(i)
            if row is None or len(row) != self.WIDTH:
                continue
            got = {letter: row[j * HASH_BYTES:(j + 1) * HASH_BYTES] for j, letter in enumerate(PANEL_LETTERS)
                   if row[n * HASH_BYTES + j]}
            if got:
                out[i] = got
        return out
