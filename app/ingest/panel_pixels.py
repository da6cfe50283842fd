"""Panel labels that the PDF's text layer does not hold: "(a)", "(b)" drawn as outlines, printed
inside a raster image or set in a font whose text encoding is broken. They are read from the
figure's rendered crop by Tesseract, and the lines read go to the same panel finder as text lines.

Tesseract costs some 0.2-0.5 CPU-s a figure, so it reads a crop only when the crop's pixels hold
at least two shapes of a label: a letter-sized mark right after an opening bracket or right before
a closing one (found from the connected blobs of ink, a few milliseconds).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import pymupdf
from PIL import Image
from scipy import ndimage

from app.ingest.layout import Line
from app.ingest.tesseract import otsu_threshold, read_lines

log = logging.getLogger(__name__)

__all__ = ["Strip", "label_shapes", "label_strips", "read_strips", "unread_shapes"]

MIN_LABEL_SHAPES = 2
MAX_LABEL_SHAPES = 24  # an opening and a closing bracket for each of up to a dozen labels
SPARSE_TEXT = "--psm 11 -c tessedit_do_invert=0"  # scattered words; no second reading of inverted text
TARGET_LABEL_PX = 40.0


def _blobs(grey: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Boxes (x0, y0, x1, y1) of the connected blobs of dark ink, in pixels, and the image of blob
    numbers (blob i is numbered i + 1)."""
    ink = grey < min(otsu_threshold(grey), 160)
    labels, n = ndimage.label(ink)
    sl = ndimage.find_objects(labels)
    boxes = [(s[1].start, s[0].start, s[1].stop, s[0].stop) if s is not None else (0, 0, 0, 0) for s in sl]
    return np.array(boxes, dtype=float).reshape(-1, 4), labels


def _bracket_side(labels: np.ndarray, i: int, box: np.ndarray) -> int:
    """+1 for an opening bracket (its ink bows to the left: the middle row's ink lies left of the
    top and bottom rows' on one side at least, and right of them on neither), -1 for a closing
    one, 0 for a straight or slanted stroke (l, I, 1, |, /)."""
    x0, y0, x1, y1 = box.astype(int)
    m = labels[y0:y1, x0:x1] == i + 1
    rows = [m[0], m[(y1 - y0) // 2], m[-1]]
    left = [int(np.argmax(r)) for r in rows]
    right = [len(r) - 1 - int(np.argmax(r[::-1])) for r in rows]
    to_left = [e[1] + 1 <= min(e[0], e[2]) for e in (left, right)]
    to_right = [e[1] >= max(e[0], e[2]) + 1 for e in (left, right)]
    if any(to_left) and not any(to_right):
        return 1
    if any(to_right) and not any(to_left):
        return -1
    return 0


def label_shapes(grey: np.ndarray, px_per_pt: float) -> np.ndarray:
    """Boxes (pixels) of the places in the picture that look like a bracketed letter: a bracket of
    text 4-20 pt high (a thin blob bowed like "(" or ")") with a letter-sized blob right beside it,
    on its inner side, within its height. Empty unless there are two to MAX_LABEL_SHAPES of them
    (more are the brackets of printed text: a screenshot, a listing)."""
    b, labels = _blobs(grey)
    none = np.zeros((0, 4))
    if len(b) < 2:
        return none
    w, h = b[:, 2] - b[:, 0], b[:, 3] - b[:, 1]
    thin = np.flatnonzero((h >= 4 * px_per_pt) & (h <= 20 * px_per_pt) & (w <= 0.45 * h) & (w >= 1))
    found = []
    for i in thin:
        x0, y0, x1, y1 = b[i]
        bh = y1 - y0
        side = _bracket_side(labels, i, b[i])
        if side == 0:
            continue
        within = (b[:, 1] >= y0 - 0.1 * bh) & (b[:, 3] <= y1 + 0.1 * bh) & (h >= 0.3 * bh) & (h <= 0.85 * bh) & \
            (w >= 0.2 * bh) & (w <= 0.9 * bh)
        if side > 0:  # "(" then a letter
            near = within & (b[:, 0] >= x1 - 1) & (b[:, 0] <= x1 + 0.35 * bh)
        else:  # a letter then ")"
            near = within & (b[:, 2] <= x0 + 1) & (b[:, 2] >= x0 - 0.35 * bh)
        if near.any():
            k = b[near][0]
            found.append((min(x0, k[0]), y0, max(x1, k[2]), y1))
    return np.array(found) if MIN_LABEL_SHAPES <= len(found) <= MAX_LABEL_SHAPES else none


def unread_shapes(shapes: list[tuple], lines: list[Line]) -> list[tuple]:
    """The label shapes (PDF points) that the text layer does not already read as bracketed text:
    those with no text line over them holding a bracket (the panel finder has seen those)."""
    def read(s: tuple) -> bool:
        return any(ln.x0 < s[2] and ln.x1 > s[0] and ln.y0 < s[3] and ln.y1 > s[1] and ("(" in ln.text or ")" in ln.text)
                   for ln in lines)
    return [s for s in shapes if not read(s)]


def _windows(shapes: list[tuple], region: tuple) -> list[tuple]:
    """Places to read: a band across the region around each row of label shapes (a narrower
    window around the labels alone read worse: Tesseract needs the row's other words)."""
    rows: list[list[float]] = []
    for _, y0, _, y1 in sorted(shapes, key=lambda r: r[1]):
        h = y1 - y0
        if rows and y0 - 0.5 * h <= rows[-1][3]:
            rows[-1][3] = max(rows[-1][3], y1 + 0.5 * h)
        else:
            rows.append([region[0], y0 - 0.5 * h, region[2], y1 + 0.5 * h])
    return [tuple(w) for w in rows]


@dataclass
class Strip:
    """A row of a figure rendered for reading its labels."""

    owner: int  # the figure it belongs to (the caller's index)
    image: Image.Image
    origin: tuple[float, float]  # PDF point at its top-left pixel
    zoom: float  # pixels per point


def label_strips(dl: pymupdf.DisplayList, region: tuple, shapes: list[tuple], owner: int) -> list[Strip]:
    """The places of a figure's region that hold label `shapes` (PDF points), rendered again from
    the page's display list large enough for a label to stand some 40 pixels high (Tesseract
    misreads brackets of small type)."""
    zoom = float(np.clip(TARGET_LABEL_PX / max(float(np.median([s[3] - s[1] for s in shapes])), 1.0), 1.0, 8.0))
    out = []
    for x0, y0, x1, y1 in _windows(shapes, region):
        pix = dl.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), clip=pymupdf.Rect(x0, y0, x1, y1),
                            colorspace=pymupdf.csGRAY, alpha=False)
        out.append(Strip(owner, Image.frombytes("L", (pix.width, pix.height), pix.samples), (x0, y0), zoom))
    return out


def read_strips(strips: list[Strip]) -> dict[int, list[Line]]:
    """The text lines Tesseract reads in the strips, by owner, as page-model lines in PDF points.
    All strips of a document are stacked into one image and read at once (starting Tesseract
    costs more than reading a few rows); {} when reading fails."""
    if not strips:
        return {}
    gap = int(TARGET_LABEL_PX)
    tops, y = [], gap
    for st in strips:
        tops.append(y)
        y += st.image.height + gap
    sheet = Image.new("L", (max(st.image.width for st in strips) + 2 * gap, y), 255)
    for st, t in zip(strips, tops):
        sheet.paste(st.image, (gap, t))
    try:
        read = read_lines(np.asarray(sheet), 1.0, SPARSE_TEXT)  # boxes in sheet pixels
    except Exception:  # noqa: BLE001 - no Tesseract, or it failed: the figures keep no panels
        log.info("reading panel labels failed", exc_info=True)
        return {}
    out: dict[int, list[Line]] = {}
    for ln in read:  # sheet pixels -> the strip's place on the page
        yc = (ln.box[1] + ln.box[3]) / 2
        i = max((k for k, t in enumerate(tops) if t <= yc), default=0)
        st = strips[i]
        x0, x1 = st.origin[0] + (ln.box[0] - gap) / st.zoom, st.origin[0] + (ln.box[2] - gap) / st.zoom
        y0, y1 = st.origin[1] + (ln.box[1] - tops[i]) / st.zoom, st.origin[1] + (ln.box[3] - tops[i]) / st.zoom
        out.setdefault(st.owner, []).append(Line(x0, y0, x1, y1, ln.text, y1 - y0, [], -1, 0))
    return out
