"""Pages that cannot hold a figure or a table, told apart cheaply before the layout model runs.

The page-image layout model costs about a fifth of a second a page; on a page where the OCR found
no caption it is asked only for boxes next to which a misread caption may be read again. A page
whose ink is all inside its OCR lines (besides specks and thin rules) and none of whose lines is
parted by a column gap (a table row) holds no graphic and no table, so the model is not asked.
"""
from __future__ import annotations

import numpy as np
from scipy import ndimage

from app.ingest.scanned.captions import column_pieces
from app.ingest.scanned.ocr import OcrPage, otsu_threshold

SPECK_PT2 = 4.0  # connected components smaller than this area (points^2) are noise
RULE_PT = 2.0  # a component thinner than this (points) is a rule or an underline, not a graphic
LINE_PAD = 0.3  # OCR line boxes grown by this share of their height (accents, descenders)


def text_only(page: OcrPage) -> bool:
    """The page holds nothing but OCR'd text lines: no ink outside them (a speck or a rule at
    most) and no line with a column gap."""
    if page.image is None or not page.lines:
        return False
    if any(len(column_pieces(ln)) > 1 for ln in page.lines):
        return False
    s = page.px_per_pt
    step = max(1, int(round(s)))  # about 72 dpi, each pixel the darkest of its block (thin lines stay)
    h, w = page.image.shape[0] // step, page.image.shape[1] // step
    darkest = page.image[:h * step:step, :w * step:step].copy()
    for dy in range(step):
        for dx in range(step):
            np.minimum(darkest, page.image[dy:h * step:step, dx:w * step:step], out=darkest)
    s = s / step
    ink = darkest < min(otsu_threshold(page.image[::step, ::step]), 200)
    h, w = ink.shape
    for ln in page.lines:
        pad = LINE_PAD * ln.height
        x0, y0, x1, y1 = ln.box
        ink[max(int((y0 - pad) * s), 0):min(int((y1 + pad) * s) + 1, h),
            max(int((x0 - pad) * s), 0):min(int((x1 + pad) * s) + 1, w)] = False
    labels, n = ndimage.label(ink, structure=np.ones((3, 3), bool))
    if n == 0:
        return True
    sizes = np.bincount(labels.ravel())[1:]
    for k, sl in enumerate(ndimage.find_objects(labels)):
        if sizes[k] < SPECK_PT2 * s * s:
            continue
        if min(sl[0].stop - sl[0].start, sl[1].stop - sl[1].start) < RULE_PT * s:
            continue
        return False
    return True
