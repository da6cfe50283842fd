"""Figure and table regions on page images, from pixels.

Body-text lines (long, dense, confidently read lines of the document's body height) and other
captions are the obstacles; the region of a caption is the ink between the caption and the
nearest obstacle above (or below) it, inside the caption's column span, or beside it when the
caption is set in a column of its own next to its figure, without specks (small connected
components). Crops are cut from the cleaned page image at the scan's resolution.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from PIL import Image
from scipy import ndimage

from app.ingest.captions import join_caption_lines
from app.ingest.layout import column_span
from app.ingest.scanned.captions import OcrCaption, column_pieces, find_captions
from app.ingest.scanned.detect import word_quality
from app.ingest.scanned.ocr import OcrLine, OcrPage, otsu_threshold

MIN_REGION_PT = 12.0  # a region thinner than this (points) is not a figure
SPECK_PT2 = 4.0  # connected components smaller than this area (points^2) are noise
MAX_CROP_DPI = 300
_HEADING_RE = re.compile(r"^(?:\d{1,2}(?:\.\d{1,2}){0,3}\.?|[IVX]{1,4}\.)\s+[A-Z][A-Za-z]{3,}")
_SUBLABEL_RE = re.compile(r"^\W{0,2}\(?[a-hA-H]\)\s")
OUTWARD_PT = 15.0
SIDE_MIN_SHARE = 0.3  # a side of the text area narrower than this share holds no figure beside a caption
SIDE_BAND_LINES = 2.0  # a blank band this many body lines tall under a caption beside its figure ends the figure
WRAPPED_LINES = 3  # lines of prose beside a graphic, clear of its caption's side, that are text wrapped around it
COLUMN_WORDS = 0.5  # a piece of a caption column's line read with fewer word-like tokens than this is the figure's
COLUMN_PITCH_SLACK = 1.6  # a line further below than this many of the caption's line pitches ends its column
SIDE_TOP_LINES = 2.0  # a graphic beside its caption starts within this many body lines of the caption's top
SIDE_WINS = 3.0  # a graphic beside a caption this many times the area of the one above or below it wins
NEAR_LINES = 3.0  # text lines this close (in body-line heights) to a caption may be its panel labels
STRIP_LINES = 3.0  # a strip of ink outside the model's box at most this many body lines tall may be cut off
FAINT_LEVELS = 22  # grey levels below the paper's that count as faint ink inside a model's figure box
RUNNING_BAND = 0.1  # share of the page height at its top and bottom where running heads and page numbers sit
_LINE_NUMBER_RE = re.compile(r"^\s*(\d{1,3})(?![\d.,)\]:])")  # "12 calculate ...", "5___P = ..." (OCR'd space)
_PAGE_NUMBER_RE = re.compile(r"^\W{0,2}(?:\d{1,4}|[ivxlc]{1,6})\W{0,2}$", re.I)


@dataclass
class Layout:
    """Document-wide geometry of the body text, from the OCR lines of all pages."""

    body_h: float = 9.0
    text_x0: float = 54.0
    text_x1: float = 558.0
    two_column: bool = False
    page_w: float = 612.0
    running: frozenset[str] = frozenset()  # letters of the lines that head or foot several pages
    graphics_above: dict[str, bool] = field(default_factory=lambda: {"figure": True, "table": False})


def _dense(ln: OcrLine, body_h: float) -> bool:
    return len(ln.text) * body_h * 0.42 >= 0.75 * (ln.box[2] - ln.box[0])


def _letters(text: str) -> str:
    return re.sub(r"[^a-z]", "", text.lower())


def _in_running_band(ln: OcrLine, page: OcrPage) -> bool:
    return ln.box[3] <= RUNNING_BAND * page.height or ln.box[1] >= (1 - RUNNING_BAND) * page.height


def running_texts(pages: list[OcrPage]) -> frozenset[str]:
    """Letters of the lines near the top or bottom edge that come back on another page: running
    heads and footers (a page's own title or a figure's label does not repeat there)."""
    pages_of: dict[str, set[int]] = {}
    for pno, page in enumerate(pages):
        for ln in page.lines:
            key = _letters(ln.text)
            if len(key) >= 3 and _in_running_band(ln, page):
                pages_of.setdefault(key, set()).add(pno)
    return frozenset(k for k, v in pages_of.items() if len(v) >= 2)


def _running_line(ln: OcrLine, page: OcrPage, lay: Layout, ink: np.ndarray, s: float) -> bool:
    """A running head, footer or page number: near the page's top or bottom edge, repeated on
    other pages (or a lone number), with a blank band between it and the page's content."""
    if not _in_running_band(ln, page):
        return False
    if _letters(ln.text) not in lay.running and not _PAGE_NUMBER_RE.match(ln.text.strip()):
        return False
    gap = lay.body_h
    top = ln.box[3] <= RUNNING_BAND * page.height
    r0, r1 = (ln.box[3] + 1, ln.box[3] + gap) if top else (ln.box[1] - gap, ln.box[1] - 1)
    band = ink[max(int(r0 * s), 0):max(int(r1 * s), 0)]
    return band.size > 0 and int(band.sum()) <= SPECK_PT2 * s * s


def doc_layout(pages: list[OcrPage]) -> Layout:
    lay = Layout(page_w=pages[0].width if pages else 612.0, running=running_texts(pages))
    long_lines = [ln for p in pages for ln in p.lines if len(ln.text) >= 40 and ln.conf >= 60]
    if not long_lines:
        lay.text_x0, lay.text_x1 = 0.08 * lay.page_w, 0.92 * lay.page_w
        return lay
    lay.body_h = float(np.median([ln.height for ln in long_lines]))
    widths = [ln.box[2] - ln.box[0] for ln in long_lines]
    lay.two_column = float(np.median(widths)) < 0.5 * lay.page_w
    lay.text_x0 = float(np.percentile([ln.box[0] for ln in long_lines], 5))
    lay.text_x1 = float(np.percentile([ln.box[2] for ln in long_lines], 95))
    return lay


def _prose_share(ln: OcrLine) -> float:
    """Share of a line's words that are lower-case words (prose has many; legends, tick labels
    and panel titles few)."""
    words = [w.text.strip(".,;:!?()[]\"'`@") for w in ln.words]
    return sum(1 for w in words if w and any(c.islower() for c in w) and not any(c.isdigit() for c in w)
               and not w[0].isupper()) / max(len(words), 1)


def is_body(ln: OcrLine, lay: Layout) -> bool:
    """A line of running text (not a figure's label, legend or table row)."""
    col_w = (lay.text_x1 - lay.text_x0) / (2 if lay.two_column else 1)
    if _SUBLABEL_RE.match(ln.text) or _prose_share(ln) < 0.4:
        return False  # "(a) ... (b) ...": sub-figure labels; tick-label rows
    return (len(ln.text) >= 30 and (ln.box[2] - ln.box[0]) >= 0.55 * col_w and ln.conf >= 60
            and 0.6 * lay.body_h <= ln.height <= 1.6 * lay.body_h and _dense(ln, lay.body_h)
            and word_quality(ln.text) >= 0.7)


def _ink_box(ink: np.ndarray, s: float, x0: float, y0: float, x1: float, y1: float):
    """Bounding box (points) of the non-speck ink inside a window (points), or None."""
    if x1 - x0 < MIN_REGION_PT or y1 - y0 < MIN_REGION_PT:
        return None
    c0, r0, c1, r1 = int(x0 * s), int(y0 * s), int(x1 * s), int(y1 * s)
    win = ink[max(r0, 0):max(r1, 0), max(c0, 0):max(c1, 0)]
    if win.size == 0 or not win.any():
        return None
    labels, n = ndimage.label(win, structure=np.ones((3, 3), bool))
    if n == 0:
        return None
    sizes = np.bincount(labels.ravel())[1:]
    keep = np.nonzero(sizes >= SPECK_PT2 * s * s)[0] + 1
    if len(keep) == 0:
        return None
    objs = ndimage.find_objects(labels)
    rs = [objs[k - 1] for k in keep]
    top = min(o[0].start for o in rs)
    bottom = max(o[0].stop for o in rs)
    left = min(o[1].start for o in rs)
    right = max(o[1].stop for o in rs)
    box = ((c0 + left) / s, (r0 + top) / s, (c0 + right) / s, (r0 + bottom) / s)
    if box[2] - box[0] < MIN_REGION_PT or box[3] - box[1] < MIN_REGION_PT:
        return None
    return box


def _text_only_row(ln: OcrLine, ink: np.ndarray, s: float, span: tuple[float, float]) -> bool:
    """A well-read line of words with no other ink beside it in its row: prose (author lines,
    paragraphs of another shape), not a label inside a graphic."""
    numeric = sum(1 for w in ln.words if not any(c.isalpha() for c in w.text))
    if _SUBLABEL_RE.match(ln.text) or ln.conf < 70:
        return False
    if not _HEADING_RE.match(ln.text) and (len(ln.text) < 25 or len(ln.words) < 3 or numeric > 0.4 * len(ln.words)
                                           or _prose_share(ln) < 0.4):
        return False  # tick labels and other number rows belong to plots; section headings bound them
    if len(column_pieces(ln)) > 1:
        return False  # "N, N^T    Number of nodes in the graph": a table row, not a sentence
    r0, r1 = int(ln.box[1] * s), int(ln.box[3] * s) + 1
    band = ink[max(r0, 0):max(r1, 0)]
    left = band[:, max(int(span[0] * s), 0):max(int((ln.box[0] - 6) * s), 0)]
    right = band[:, int((ln.box[2] + 6) * s):max(int(span[1] * s), 0)]
    return int(left.sum()) + int(right.sum()) <= SPECK_PT2 * s * s


def _obstacles(page: OcrPage, caps: list[OcrCaption], lay: Layout, ink: np.ndarray, s: float,
               span: tuple[float, float]) -> list[tuple[float, float, float, float]]:
    caption_lines = {id(ln) for c in caps for ln in c.lines}
    body = {id(ln) for ln in page.lines if is_body(ln, lay)}
    per_par: dict[tuple[int, int], list[OcrLine]] = {}
    for ln in page.lines:
        per_par.setdefault((ln.block, ln.par), []).append(ln)
    for lines in per_par.values():  # a paragraph's short last line is prose too
        n_body = sum(1 for ln in lines if id(ln) in body)
        if n_body >= 2 and n_body >= 0.5 * len(lines):
            body.update(id(ln) for ln in lines)
    listing = _numbered_lines(page.lines)
    boxes = [ln.box for ln in page.lines if id(ln) not in caption_lines and id(ln) not in listing
             and (id(ln) in body or _text_only_row(ln, ink, s, span) or _running_line(ln, page, lay, ink, s))]
    return boxes + [c.box for c in caps]


def _numbered_lines(lines: list[OcrLine]) -> set[int]:
    """Lines of a numbered listing (pseudo-code): each starts with a bare number one more or one
    less than that of a line right above or below it. They read like prose but are a table's
    or a listing's rows (numbered paragraphs carry "1." or "(1)", not a bare number)."""
    numbered = []
    for ln in lines:
        m = _LINE_NUMBER_RE.match(ln.text)
        if m:
            numbered.append((int(m.group(1)), ln))
    out = set()
    for n, ln in numbered:
        for m, other in numbered:
            if abs(m - n) == 1 and abs(other.box[0] - ln.box[0]) <= 2 * ln.height \
                    and abs((other.box[1] + other.box[3]) - (ln.box[1] + ln.box[3])) / 2 <= 2.5 * max(ln.height, 1.0):
                out.add(id(ln))
                break
    return out


def _outward(span: tuple[float, float], lay: Layout) -> tuple[float, float]:
    """Let a graphic stick out of its column a little towards the page edge, never into the
    other column."""
    x0, x1 = span
    mid = (lay.text_x0 + lay.text_x1) / 2
    if not lay.two_column or (x0 < mid - 20 and x1 > mid + 20):
        return (x0 - OUTWARD_PT, x1 + OUTWARD_PT)
    return (x0 - OUTWARD_PT, x1) if x1 <= mid + 0.06 * lay.page_w else (x0, x1 + OUTWARD_PT)


def _graphic_above(cap: OcrCaption, lay: Layout) -> bool:
    return lay.graphics_above.get(cap.kind, cap.kind != "table")


def graphic_sides(captioned: list[tuple[list[OcrCaption], list]], lay: Layout) -> dict[str, bool]:
    """Per kind, whether the document puts its graphics above their captions: the majority of the
    captions with a layout-model box of that kind right next to them on one side only (papers
    differ: tables under their captions in one style, over them in another); the usual sides
    where the model says nothing either way."""
    near = 2.5 * lay.body_h + 6
    votes = {"figure": 0, "table": 0}
    for caps, boxes in captioned:
        for cap in caps:
            want = "picture" if cap.kind == "figure" else "table"
            x0, x1 = column_span(cap.box, lay)
            cy0, cy1 = cap.box[1], cap.box[3]
            sides = set()
            for b in boxes:
                m = b.rect
                if b.kind != want or min(m[2], x1) - max(m[0], x0) < 0.5 * (m[2] - m[0]):
                    continue
                if m[3] <= cy0 + 2 and cy0 - m[3] <= near:
                    sides.add(True)
                elif m[1] >= cy1 - 2 and m[1] - cy1 <= near:
                    sides.add(False)
            if len(sides) == 1:
                votes[cap.kind] += 1 if sides.pop() else -1
    out = dict(lay.graphics_above)
    for kind, v in votes.items():
        if v:
            out[kind] = v > 0
    return out


def _model_region(cap: OcrCaption, region: tuple | None, boxes: list, others: list[tuple], caps: list[OcrCaption],
                  span: tuple[float, float], lay: Layout, ink: np.ndarray, s: float,
                  faint: np.ndarray | None = None) -> tuple | None:
    """The caption's region grown by the layout model's boxes of its kind that overlap it or, with
    no region, that lie right above or below the caption in its column span: the ink inside
    their union, faint ink included (`faint`: light grid lines, pale fills and frames, which the
    model sees as part of the figure). None when the model adds nothing, or when the grown region
    would take in a line of running text or another caption that the pixel region did not hold."""
    want = "picture" if cap.kind == "figure" else "table"
    cx0, cy0, cx1, cy1 = cap.box
    near = 2.5 * lay.body_h + 6

    def gap(r: tuple) -> float:
        return min(abs(cy0 - r[3]), abs(r[1] - cy1))

    def next_to_caption(m: tuple) -> bool:
        return gap(m) <= near and min(m[2], span[1]) - max(m[0], span[0]) >= 0.5 * (m[2] - m[0])

    # the model has a box of its kind right next to the caption on the side looked at first, and
    # the pixel region lies on the other side or far away (the pixels stopped at prose-like text
    # inside the figure and went on to the next figure or table): the box wins
    up_first = _graphic_above(cap, lay)
    adjacent = [b.rect for b in boxes if b.kind == want and next_to_caption(b.rect)
                and (b.rect[3] <= cy0 + 2) == up_first]
    if region is not None and adjacent and not any(
            min(m[2], region[2]) > max(m[0], region[0]) and min(m[3], region[3]) > max(m[1], region[1])
            for m in adjacent) and ((region[3] <= cy0 + 2) != up_first or gap(region) > min(map(gap, adjacent)) + near):
        region = None
    picked = []
    for b in boxes:
        m = b.rect
        if b.kind != want:
            continue
        if region is not None:
            ix = min(m[2], region[2]) - max(m[0], region[0])
            iy = min(m[3], region[3]) - max(m[1], region[1])
            if ix <= 0 or iy <= 0 or ix * iy < 0.2 * min((m[2] - m[0]) * (m[3] - m[1]),
                                                         (region[2] - region[0]) * (region[3] - region[1])):
                continue
        elif not next_to_caption(m) or (adjacent and m not in adjacent):
            continue  # not next to the caption, or on its other side while the first side has one
        if any(min(m[2], c.box[2]) - max(m[0], c.box[0]) > 2 and min(m[3], c.box[3]) - max(m[1], c.box[1]) > 2
               for c in caps):
            continue  # a box over a caption spans two figures (or holds the caption)
        picked.append(m)
    if not picked:
        return None
    xs = [m for m in picked] + ([region] if region is not None else [])
    win = (min(r[0] for r in xs) - 2, min(r[1] for r in xs) - 2, max(r[2] for r in xs) + 2, max(r[3] for r in xs) + 2)
    # running text and other captions stay out; a few prose-like lines inside a picture box (the
    # sentences of a prompt figure) are the figure's, a picture box full of them is not a figure;
    # a table box is made of lines of words (notations and their descriptions, pseudo-code)
    framed_h = {id(m): 0.0 for m in picked}
    for o in others:
        if not (o[0] < win[2] and o[2] > win[0] and o[1] < win[3] and o[3] > win[1]):
            continue
        if region is not None and o[0] >= region[0] - 1 and o[2] <= region[2] + 1 and o[1] >= region[1] - 1 \
                and o[3] <= region[3] + 1:
            continue
        holder = next((m for m in picked if o[0] >= m[0] - 2 and o[2] <= m[2] + 2 and o[1] >= m[1] - 2
                       and o[3] <= m[3] + 2), None)
        if holder is None or any(c.box == o for c in caps):
            return None
        framed_h[id(holder)] += o[3] - o[1]
    if want == "picture" and any(framed_h[id(m)] > 0.35 * (m[3] - m[1]) for m in picked):
        return None
    grown = _ink_box(ink if faint is None else faint, s, *win)
    if grown is None:
        return None
    model = (min(m[0] for m in picked), min(m[1] for m in picked), max(m[2] for m in picked), max(m[3] for m in picked))
    area = (model[2] - model[0]) * (model[3] - model[1])
    if (grown[2] - grown[0]) * (grown[3] - grown[1]) < 0.6 * area:
        # the ink threshold misses light fills and frames (a prompt drawn in pale boxes): the
        # model's box holds the figure better than the dark ink inside it
        grown = tuple(min(a, b) for a, b in zip(grown[:2], model[:2])) + tuple(max(a, b) for a, b in zip(grown[2:], model[2:]))
    if region is not None and all(abs(a - b) < 1 for a, b in zip(grown, region)):
        return None
    return grown


def _blank_rows(ink: np.ndarray, s: float, x0: float, x1: float, y0: float, y1: float) -> np.ndarray:
    """Per pixel row of the window, whether it holds no ink (a speck's worth at most)."""
    win = ink[max(int(y0 * s), 0):max(int(y1 * s), 0), max(int(x0 * s), 0):max(int(x1 * s), 0)]
    return win.sum(axis=1) <= 2


def _trim_strips(region: tuple | None, cap: OcrCaption, boxes: list, lay: Layout, ink: np.ndarray,
                 s: float) -> tuple | None:
    """Cut off what sticks out of the layout model's box of the caption's kind (the one nearest
    the caption) at the region's far edge, parted from it by a blank band of a body line or more,
    when it is a thin strip (at most STRIP_LINES body lines: a running head the OCR did not read,
    a rule under it, a page number) or lies in a model box of the other kind (a table next to a
    figure with no prose line between them; two picture boxes are often one figure's panels)."""
    if region is None:
        return None
    want = "picture" if cap.kind == "figure" else "table"
    over = [b.rect for b in boxes if b.kind == want and min(b.rect[2], region[2]) > max(b.rect[0], region[0])
            and min(b.rect[3], region[3]) > max(b.rect[1], region[1])]
    if not over:
        return region
    anchor = min(over, key=lambda m: min(abs(cap.box[1] - m[3]), abs(m[1] - cap.box[3])))
    x0, y0, x1, y1 = region
    band, strip = lay.body_h, STRIP_LINES * lay.body_h

    def other_box(lo: float, hi: float) -> bool:
        return any(b.kind in ("picture", "table") and b.kind != want and b.rect[1] < hi and b.rect[3] > lo
                   and min(b.rect[2], x1) > max(b.rect[0], x0)
                   and (b.rect[3] <= anchor[1] + 2 or b.rect[1] >= anchor[3] - 2) for b in boxes)

    above = y1 <= cap.box[1] + 2  # only the edge away from the caption: labels under a graphic stay
    if above and anchor[1] - y0 > 2:  # ink above the model's box
        blank = _blank_rows(ink, s, x0, x1, y0, min(anchor[1] + 2, y1))
        cut = [(a, b) for a, b in _runs(blank) if (b - a) / s >= band
               and (a / s <= strip or other_box(y0, y0 + a / s))]
        if cut:
            y0 = y0 + cut[-1][1] / s
    if not above and y1 - anchor[3] > 2:  # ink under it
        start = max(anchor[3] - 2, y0)
        blank = _blank_rows(ink, s, x0, x1, start, y1)
        n = len(blank)
        cut = [(a, b) for a, b in _runs(blank) if (b - a) / s >= band
               and ((n - b) / s <= strip or other_box(start + b / s, y1))]
        if cut:
            y1 = start + cut[0][0] / s
    if (x0, y0, x1, y1) == region:
        return region
    return _ink_box(ink, s, x0 - 1, y0, x1 + 1, y1) or region


def _runs(flags: np.ndarray) -> list[tuple[int, int]]:
    """(start, stop) of the runs of True."""
    out, start = [], None
    for i, f in enumerate(flags):
        if f and start is None:
            start = i
        elif not f and start is not None:
            out.append((start, i))
            start = None
    if start is not None:
        out.append((start, len(flags)))
    return out


def find_regions(page: OcrPage, caps: list[OcrCaption], lay: Layout,
                 boxes: list | None = None) -> list[tuple[OcrCaption, tuple | None]]:
    """For each caption of the page, the graphic's region (points) or None. `boxes` are the
    page-image layout model's boxes (image_layout.image_boxes): they grow or supply the region
    the pixels find, never across running text."""
    if page.image is None or not caps:
        return [(c, None) for c in caps]
    s = page.px_per_pt
    step = max(1, int(s // 2))  # work at about 144 dpi
    grey = page.image[::step, ::step]
    ink = grey < min(otsu_threshold(grey), 200)
    faint = grey < max(min(otsu_threshold(grey), 200), float(np.median(grey)) - FAINT_LEVELS)
    s_small = s / step
    margin = 0.035 * page.height
    body = [ln.box for ln in page.lines if is_body(ln, lay)]
    out = []
    for cap in caps:
        cx0, cy0, cx1, cy1 = cap.box
        sx0, sx1 = column_span(cap.box, lay)
        obstacles = _obstacles(page, caps, lay, ink, s_small, (sx0, sx1))
        others = [b for b in obstacles if b != cap.box and min(b[2], sx1) - max(b[0], sx0) > 2]
        sx0, sx1 = _outward((sx0, sx1), lay)
        def side(up: bool, near: float = 0.0):
            if up:
                top = max([b[3] for b in others if b[3] <= cy0 + 1 and b[3] < cy0 - near] + [margin])
                return _ink_box(ink, s_small, sx0, top + 2, sx1, cy0 - 2)
            bottom = min([b[1] for b in others if b[1] >= cy1 - 1 and b[1] > cy1 + near] + [page.height - margin])
            return _ink_box(ink, s_small, sx0, cy1 + 2, sx1, bottom - 2)

        up_first = _graphic_above(cap, lay)
        first, second = side(up_first), side(not up_first)
        if first is None and second is None:  # look past text lines hugging the caption (panel labels)
            first = side(up_first, NEAR_LINES * lay.body_h)
        region = first if first is not None else second
        beside = _beside(page, cap, caps, body, boxes or [], lay, ink, s_small, margin)
        if beside is not None and (region is None or _area(beside) > SIDE_WINS * _area(region)
                                   or _overlap_area(beside, region) >= 0.8 * _area(region)):
            region = beside
        if boxes:
            region = _model_region(cap, region, boxes, others, caps, (sx0, sx1), lay, ink, s_small,
                                   faint) or region
            region = _trim_strips(region, cap, boxes, lay, faint, s_small)
        region = _cut_wrapped_text(region, cap, page, ink, s_small)
        out.append((cap, region))
    return [(_whole_side_caption(page, c, r), r) for c, r in _part_shared(out, lay, ink, s_small)]


def _cut_wrapped_text(region: tuple | None, cap: OcrCaption, page: OcrPage, ink: np.ndarray,
                      s: float) -> tuple | None:
    """Running text wrapped beside a graphic narrower than the column (Tesseract reads each of its
    lines together with the graphic's row beside it): when the region reaches past the caption's
    side over lines of prose that end before the caption starts (or start after it ends), the
    region starts (ends) beyond them."""
    if region is None:
        return None
    pieces = [p for ln in page.lines for p in column_pieces(ln)
              if p.box[1] >= region[1] - 2 and p.box[3] <= region[3] + 2 and len(p.words) >= 3
              and _prose_share(p) >= 0.5]
    x0, x1 = region[0], region[2]
    left = [p for p in pieces if p.box[0] <= region[0] + 2 and region[0] < p.box[2] < cap.box[0] - 2]
    right = [p for p in pieces if p.box[2] >= region[2] - 2 and cap.box[2] + 2 < p.box[0] < region[2]]
    if _justified(left):
        x0 = max(p.box[2] for p in left) + 2
    if _justified(right):
        x1 = min(p.box[0] for p in right) - 2
    if (x0, x1) == (region[0], region[2]):
        return region
    return _ink_box(ink, s, x0, region[1] - 1, x1, region[3] + 1) or region


def _justified(pieces: list[OcrLine]) -> bool:
    """Enough lines set flush at both edges (a paragraph's last line may end short): running
    text, not a table's column of cells (their ends vary with their words)."""
    if len(pieces) < WRAPPED_LINES:
        return False
    tol = 0.5 * float(np.median([p.height for p in pieces]))
    flush = [p for p in pieces if max(q.box[2] for q in pieces) - p.box[2] <= tol
             and p.box[0] - min(q.box[0] for q in pieces) <= tol]
    return len(flush) >= WRAPPED_LINES and len(flush) >= 2 / 3 * len(pieces)


def _whole_side_caption(page: OcrPage, cap: OcrCaption, region: tuple | None) -> OcrCaption:
    """A caption set in a column beside its figure with the rest of its column added: Tesseract
    reads the column's lower part as other blocks, often joined with the figure's labels in the
    same rows, so the pieces of those rows at the caption's left edge, outside the figure, at the
    caption's own line pitch (word-like, no other caption) are its text."""
    if region is None or not (cap.box[2] <= region[0] + 2 or cap.box[0] >= region[2] - 2):
        return cap  # not beside its region
    own = sorted(cap.lines, key=lambda ln: ln.box[1])
    if len(own) < 2:
        return cap
    pitch = max(b.box[1] - a.box[1] for a, b in zip(own, own[1:]))
    tol = 2 * own[0].height
    pieces = sorted((p for ln in page.lines for p in column_pieces(ln)), key=lambda p: p.box[1])
    added, last = [], own[-1]
    for p in pieces:
        if p.box[1] <= last.box[1] + 1 or abs(p.box[0] - cap.box[0]) > tol \
                or min(p.box[2], region[2]) - max(p.box[0], region[0]) > 2:
            continue
        if p.box[1] - last.box[1] > COLUMN_PITCH_SLACK * pitch or find_captions([p]):
            break
        last = p
        if word_quality(p.text) >= COLUMN_WORDS:
            added.append(p)
    if not added:
        return cap
    return OcrCaption(cap.kind, cap.number, join_caption_lines([cap.text] + [p.text for p in added]),
                      cap.lines + added, cap.score)


def _area(r: tuple) -> float:
    return (r[2] - r[0]) * (r[3] - r[1])


def _overlap_area(a: tuple, b: tuple) -> float:
    return max(0.0, min(a[2], b[2]) - max(a[0], b[0])) * max(0.0, min(a[3], b[3]) - max(a[1], b[1]))


def _overlaps(a: tuple, b: tuple) -> bool:
    return min(a[2], b[2]) > max(a[0], b[0]) and min(a[3], b[3]) > max(a[1], b[1])


def _ink_right_of(box: tuple, ink: np.ndarray, s: float, limit: float, reach: float) -> bool:
    """Ink in the line's row within `reach` points right of its end (not beyond `limit`)."""
    c0, c1 = int((box[2] + 3) * s), int(min(box[2] + 3 + reach, limit) * s)
    band = ink[max(int(box[1] * s), 0):max(int(box[3] * s), 0), max(c0, 0):max(c1, 0)]
    return band.size > 0 and int(band.sum()) > SPECK_PT2 * s * s


def _inside(a: tuple, m: tuple) -> bool:
    return a[0] >= m[0] - 2 and a[1] >= m[1] - 2 and a[2] <= m[2] + 2 and a[3] <= m[3] + 2


def _caption_column(page: OcrPage, cap: OcrCaption) -> list[OcrLine]:
    """Lines under a caption that go on at its left edge and its own line pitch: the rest of a
    caption column that Tesseract read as other blocks (often run together with the figure's
    labels beside it)."""
    own = sorted(cap.lines, key=lambda ln: ln.box[1])
    if len(own) < 2:
        return []
    pitch = max(b.box[1] - a.box[1] for a, b in zip(own, own[1:]))
    tol = 2 * own[0].height
    out, last = [], own[-1]
    for ln in sorted(page.lines, key=lambda ln: ln.box[1]):
        if ln.box[1] <= last.box[1] or abs(ln.box[0] - cap.box[0]) > tol:
            continue
        if ln.box[1] - last.box[1] > COLUMN_PITCH_SLACK * pitch:
            break
        out.append(ln)
        last = ln
    return out


def _beside(page: OcrPage, cap: OcrCaption, caps: list[OcrCaption], body: list[tuple], boxes: list,
            lay: Layout, ink: np.ndarray, s: float, margin: float) -> tuple | None:
    """A graphic beside its caption (a caption set in a column of its own, left or right of the
    figure, as some journals do): the larger of the inks right and left of the caption in the text
    area, between the nearest obstacles above and below on that side, that starts level with the
    caption, reaches its end and has no other caption near it."""
    cx0, cy0, cx1, cy1 = cap.box
    col = _caption_column(page, cap)
    column = {id(ln.box) for ln in col}
    col_end = max([cy1] + [ln.box[3] for ln in col])
    # the model's picture boxes next to no caption: text lines inside them are the figure's titles
    pictures = [b.rect for b in boxes if b.kind == "picture" and not any(_overlaps(c.box, b.rect) for c in caps)]
    best = None
    for x0, x1 in ((cx1 + 3, lay.text_x1 + OUTWARD_PT), (lay.text_x0 - OUTWARD_PT, cx0 - 3)):
        if x1 - x0 < SIDE_MIN_SHARE * (lay.text_x1 - lay.text_x0):
            continue
        # lines reaching into that side from the caption's column bound it when they are running
        # text that ends there; lines run on into ink beside them are the caption's own text
        # read together with the figure's labels
        near = [b for b in _obstacles(page, caps, lay, ink, s, (x0, x1))
                if min(b[2], x1) - max(b[0], x0) > 2 and not _overlaps(b, cap.box) and id(b) not in column
                and not any(_inside(b, m) for m in pictures)
                and (min(b[2], x1) - max(b[0], x0) >= 0.5 * (b[2] - b[0])
                     or (b in body and not _ink_right_of(b, ink, s, x1, 3 * lay.body_h)))]
        top = max([b[3] for b in near if b[3] <= cy0 + 2] + [margin])
        bottom = min([b[1] for b in near if b[1] >= cy0 - 2 and b[3] > top] + [page.height - margin])
        got = _ink_box(ink, s, x0, top + 2, x1, bottom - 2)
        if got is None or abs(got[1] - cy0) > SIDE_TOP_LINES * lay.body_h or got[3] < cy1 - lay.body_h:
            continue  # a graphic beside its caption starts level with it and reaches its end
        # below the caption's end, a blank band of two body lines parts the figure from the text under it
        start = max(col_end, got[1])
        bands = [(a, b) for a, b in _runs(_blank_rows(ink, s, got[0], got[2], start, got[3]))
                 if (b - a) / s >= SIDE_BAND_LINES * lay.body_h]
        if bands:
            got = _ink_box(ink, s, got[0] - 1, got[1] - 1, got[2] + 1, start + bands[0][0] / s) or got
        pad = NEAR_LINES * lay.body_h
        if any(c is not cap and min(c.box[2], x1) - max(c.box[0], x0) > 2
               and c.box[1] < got[3] + pad and c.box[3] > got[1] - pad for c in caps):
            continue  # a caption of its own under or over that ink: another figure
        if best is None or _area(got) > _area(best):
            best = got
    return best


def _part_shared(found: list[tuple[OcrCaption, tuple | None]], lay: Layout, ink: np.ndarray,
                 s: float) -> list[tuple[OcrCaption, tuple | None]]:
    """Two captions that face each other across the same region (a table under its caption
    right over a figure above its caption, with no prose between them) both took the whole of
    it: part it at its widest blank band, the upper part to the caption over it."""
    out = list(found)
    for i, (ca, ra) in enumerate(out):
        for j, (cb, rb) in enumerate(out):
            if i == j or ra is None or rb is None or not (ca.box[3] <= ra[1] + 2 and rb[3] <= cb.box[1] + 2):
                continue  # ca over its region, cb under its region
            lo, hi = max(ra[1], rb[1]), min(ra[3], rb[3])
            x0, x1 = max(ra[0], rb[0]), min(ra[2], rb[2])
            if hi - lo < 0.5 * min(ra[3] - ra[1], rb[3] - rb[1]) or x1 - x0 < 0.5 * min(ra[2] - ra[0], rb[2] - rb[0]):
                continue
            runs = [(b - a, a, b) for a, b in _runs(_blank_rows(ink, s, x0, x1, lo, hi))]
            if not runs or max(runs)[0] / s < 0.5 * lay.body_h:
                continue
            _, a, b = max(runs)
            upper = _ink_box(ink, s, ra[0] - 1, ra[1] - 1, ra[2] + 1, lo + a / s)
            lower = _ink_box(ink, s, rb[0] - 1, lo + b / s, rb[2] + 1, rb[3] + 1)
            if upper is not None and lower is not None:
                out[i], out[j] = (ca, upper), (cb, lower)
                ra = upper
    return out


def save_crop(page: OcrPage, box, out_dir: Path, rel_prefix: str, stem: str, thumb_px: int) -> tuple[str, str, int, int]:
    """Crop (points) from the cleaned page image at its resolution (capped); PNG + thumbnail."""
    s = page.px_per_pt
    h, w = page.image.shape[:2]
    x0, y0 = max(0, int((box[0] - 2) * s)), max(0, int((box[1] - 2) * s))
    x1, y1 = min(w, int((box[2] + 2) * s) + 1), min(h, int((box[3] + 2) * s) + 1)
    im = Image.fromarray(page.image[y0:y1, x0:x1]).convert("RGB")
    if s * 72 > MAX_CROP_DPI:
        f = MAX_CROP_DPI / (s * 72)
        im = im.resize((max(1, int(im.width * f)), max(1, int(im.height * f))), Image.LANCZOS)
    img_name, thumb_name = f"{stem}.png", f"{stem}.thumb.png"
    im.save(out_dir / img_name, compress_level=1)
    width, height = im.size
    im.thumbnail((thumb_px, thumb_px), Image.BILINEAR, reducing_gap=2.0)
    im.save(out_dir / thumb_name, compress_level=3)
    prefix = rel_prefix.rstrip("/")
    return f"{prefix}/{img_name}", f"{prefix}/{thumb_name}", width, height
