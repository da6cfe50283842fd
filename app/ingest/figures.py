"""Figure and table extraction from born-digital PDFs.

Approach (per page, one ``get_text("dict")`` and one ``get_cdrawings()``):

1. Split the page text into visual lines and detect captions ("Figure 3:",
   "Fig. 3.", "FIGURE 3", "Table 2", ...). A caption must start a paragraph
   and carry a delimiter or a distinct label style, so body sentences such as
   "Figure 3 shows ..." are rejected.
2. For every caption, search the area above (or below) it inside the caption's
   column span, bounded by the nearest body-text paragraph, another caption or
   the page edge, and collect raster images and vector drawings there. The
   union grows through touching graphics (wide figures) and short text lines
   (axis ticks, legends) but never through body paragraphs.
3. Keep one candidate per (kind, number), render the graphic-only rectangle to
   PNG plus a thumbnail.
"""
from __future__ import annotations

import logging
import pathlib
import re
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import pymupdf
from PIL import Image

from app.ingest.types import ExtractedFigure

log = logging.getLogger(__name__)

__all__ = ["CAPTION_RE", "Caption", "extract_figures", "find_captions"]

# Label at the start of a line. ``rest`` is whatever follows the number.
CAPTION_RE = re.compile(
    r"^\s*(?P<word>Figures?|Fig\.?|FIGURES?|FIG\.?|Table|TABLE|Tab\.|TAB\.)"
    r"\s*(?P<num>\d{1,3})(?![\d.]\d)(?P<rest>.*)$",
    re.S,
)
_DELIMS = ":.|-\u2013\u2014"
# what follows the first number of a label that refers to several figures
_RANGE_RE = re.compile(r"\s*(?:[-\u2013\u2014]\s*|,\s*|\s+(?:and|to|&)\s+)\(?[A-Za-z]?\d+(?![A-Za-z\d])")
_TEXT_FLAGS = pymupdf.TEXTFLAGS_DICT & ~pymupdf.TEXT_PRESERVE_IMAGES
_MAX_DRAWINGS = 30000  # beyond this a page is a huge vector plot; subsample


# ----------------------------------------------------------------- text model
@dataclass
class _Line:
    """A visual text line (a PyMuPDF line split at wide horizontal gaps)."""

    x0: float
    y0: float
    x1: float
    y1: float
    text: str
    size: float
    spans: list
    block: int
    idx: int  # index of the line inside its PyMuPDF block
    horizontal: bool = True
    body: bool = False  # belongs to a body-text paragraph

    @property
    def rect(self) -> tuple[float, float, float, float]:
        return (self.x0, self.y0, self.x1, self.y1)


@dataclass
class Caption:
    """A detected caption with the evidence used to rank duplicates."""

    kind: str
    number: int
    word: str
    lines: list[_Line]
    bbox: tuple[float, float, float, float]
    text: str
    score: float
    horizontal: bool = True
    label_alone: bool = False
    extra: dict = field(default_factory=dict)


def _is_bold(span: dict) -> bool:
    """Bold flag or a bold-looking font name (flags are unreliable in some PDFs)."""
    if span.get("flags", 0) & 16:
        return True
    return bool(re.search(r"bold|black|heavy|semibold|demi|\.B$|-B$|CMBX", span.get("font", ""), re.I))


def _style(span: dict) -> tuple[str, bool]:
    """Font identity without the subset prefix, plus boldness."""
    font = span.get("font", "").split("+")[-1]
    return (font, _is_bold(span))


def _page_lines(pdict: dict) -> list[_Line]:
    """Flatten the text dict into visual lines; split lines at big gaps so table cells separate."""
    out: list[_Line] = []
    for bi, block in enumerate(pdict.get("blocks", [])):
        if block.get("type", 0) != 0:
            continue
        for li, line in enumerate(block.get("lines", [])):
            spans = [s for s in line.get("spans", []) if s.get("text", "").strip()]
            if not spans:
                continue
            d = line.get("dir", (1, 0))
            horizontal = abs(d[0]) > 0.9 and d[0] > 0
            groups: list[list[dict]] = [[spans[0]]]
            if horizontal:
                for s in spans[1:]:
                    prev = groups[-1][-1]
                    gap = s["bbox"][0] - prev["bbox"][2]
                    if gap > 1.5 * max(prev["size"], 4.0) or gap < -2 * prev["size"]:
                        groups.append([s])
                    else:
                        groups[-1].append(s)
            else:
                groups = [spans]
            for g in groups:
                xs0 = min(s["bbox"][0] for s in g)
                ys0 = min(s["bbox"][1] for s in g)
                xs1 = max(s["bbox"][2] for s in g)
                ys1 = max(s["bbox"][3] for s in g)
                text = _join_spans(g)
                size = round(max(g, key=lambda s: len(s["text"]))["size"], 1)
                out.append(_Line(xs0, ys0, xs1, ys1, text.strip(), size, g, bi, li, horizontal))
    return _merge_row_pieces(out)


def _merge_row_pieces(lines: list[_Line]) -> list[_Line]:
    """Join pieces of one visual row that PyMuPDF reports as separate lines of a block (justified
    text with wide word gaps, a bold "Fig. 1." label before its caption text) when the gap is one
    that would have joined two spans of a line (<= 1.5 x font size)."""
    out: list[_Line] = []
    for ln in lines:
        prev = out[-1] if out else None
        if (prev is not None and prev.block == ln.block and prev.horizontal and ln.horizontal
                and abs(prev.y0 - ln.y0) < 1.5 and abs(prev.y1 - ln.y1) < 1.5
                and 0 <= ln.x0 - prev.x1 <= 1.5 * max(prev.size, ln.size, 4.0)):
            spans = prev.spans + ln.spans
            out[-1] = _Line(prev.x0, min(prev.y0, ln.y0), ln.x1, max(prev.y1, ln.y1),
                            _join_spans(spans).strip(), round(max(spans, key=lambda s: len(s["text"]))["size"], 1),
                            spans, prev.block, prev.idx, True)
        else:
            out.append(ln)
    return out


def _join_spans(spans: list[dict]) -> str:
    """Concatenate spans, adding the space some PDFs omit between word-per-span runs."""
    out = spans[0]["text"]
    for prev, s in zip(spans, spans[1:]):
        gap = s["bbox"][0] - prev["bbox"][2]
        if gap > 0.15 * prev["size"] and not out.endswith(" ") and not s["text"].startswith(" "):
            out += " "
        out += s["text"]
    return out


@dataclass
class _DocStats:
    """Document-wide typography used to tell body text from figure text."""

    body_size: float = 10.0
    two_column: bool = False
    text_x0: float = 0.0
    text_x1: float = 612.0
    page_w: float = 612.0


def _doc_stats(pages_lines: list[list[_Line]], page_w: float) -> _DocStats:
    """Body font size = most common size by characters; columns from the widths of body lines."""
    sizes: Counter = Counter()
    for lines in pages_lines:
        for ln in lines:
            if ln.horizontal:
                sizes[round(ln.size * 2) / 2] += len(ln.text)
    st = _DocStats(page_w=page_w)
    if not sizes:
        st.text_x1 = page_w
        return st
    st.body_size = sizes.most_common(1)[0][0]
    widths, x0s, x1s = [], [], []
    for lines in pages_lines:
        for ln in lines:
            if ln.horizontal and abs(ln.size - st.body_size) <= 0.6 and len(ln.text) >= 40:
                widths.append(ln.x1 - ln.x0)
                x0s.append(ln.x0)
                x1s.append(ln.x1)
    if widths:
        st.two_column = float(np.median(widths)) < 0.5 * page_w
        st.text_x0 = float(np.percentile(x0s, 5))
        st.text_x1 = float(np.percentile(x1s, 95))
    else:
        st.text_x0, st.text_x1 = 0.05 * page_w, 0.95 * page_w
    return st


def _mark_body(lines: list[_Line], st: _DocStats) -> None:
    """Flag lines of body-text paragraphs: blocks of several long, dense lines in the body font."""
    by_block: dict[int, list[_Line]] = {}
    for ln in lines:
        by_block.setdefault(ln.block, []).append(ln)
    col_w = (st.text_x1 - st.text_x0) / (2 if st.two_column else 1)
    for blk in by_block.values():
        hl = [ln for ln in blk if ln.horizontal]
        if not hl:
            continue
        chars = sum(len(ln.text) for ln in hl)
        body_chars = sum(len(ln.text) for ln in hl if abs(ln.size - st.body_size) <= 0.6)
        if body_chars < 0.6 * chars:
            continue
        # visual rows (several split lines can share a row in tables)
        rows = {round(ln.y0 / 2) for ln in hl}
        width = max(ln.x1 for ln in hl) - min(ln.x0 for ln in hl)
        # density: body text fills its width; table rows have wide gaps
        dense = [ln for ln in hl if len(ln.text) * st.body_size * 0.42 >= 0.8 * (ln.x1 - ln.x0)]
        long_lines = [ln for ln in dense if (ln.x1 - ln.x0) >= 0.6 * col_w and len(ln.text) >= 35]
        if len(rows) != len(hl):
            continue  # several cells per row: table-like
        if (len(hl) >= 2 and len(long_lines) >= max(1, 0.5 * len(hl)) and width >= 0.5 * col_w) or (
            len(hl) == 1 and len(long_lines) == 1 and (hl[0].x1 - hl[0].x0) >= 0.85 * col_w
        ):
            for ln in blk:
                ln.body = True


# ------------------------------------------------------------------- captions
def _label_split(line: _Line, end: int) -> tuple[list[dict], list[dict]]:
    """Spans carrying the first ``end`` characters (the label) vs. the rest."""
    label, rest, n = [], [], 0
    for s in line.spans:
        (label if n < end else rest).append(s)
        n += len(s["text"].lstrip() if n == 0 else s["text"])
    return label, rest


def _predecessor(line: _Line, lines: list[_Line]) -> _Line | None:
    """The line directly above ``line`` in the same paragraph flow, if any."""
    best = None
    for o in lines:
        if o is line or not o.horizontal or o.y1 > line.y0 + 0.3 * line.size:
            continue
        if line.y0 - o.y1 > 0.6 * line.size or o.y0 >= line.y0:
            continue
        if min(o.x1, line.x1) - max(o.x0, line.x0) <= 0:
            continue
        if best is None or o.y1 > best.y1:
            best = o
    return best


def _caption_from_line(line: _Line, lines: list[_Line], st: _DocStats) -> Caption | None:
    """Decide whether a line starting with a label is a caption (not a body reference)."""
    m = CAPTION_RE.match(line.text)
    if not m:
        return None
    word, rest = m.group("word"), m.group("rest")
    kind = "table" if word.lower().startswith("tab") else "figure"
    rest_s = rest.lstrip()
    if rest_s[:1] in ("),;]"):
        return None  # "(see Fig. 3), ..." wrapped onto a new line: a reference
    if _RANGE_RE.match(rest):
        return None  # "Figures 11-13. ...", "Figs. 2 and 3": a reference to several figures
    delim = rest_s[:1] in _DELIMS and rest_s[:1] != "" and not rest_s[:2].startswith((".,", ".)"))
    label_alone = rest_s in ("", ":", ".", "|") or rest_s[:1] in ":|" and len(rest_s) <= 2
    label_spans, rest_spans = _label_split(line, m.end("num"))
    style_diff = False
    if label_spans and rest_spans:
        lab = Counter(_style(s) for s in label_spans).most_common(1)[0][0]
        rst = Counter(_style(s) for s in rest_spans).most_common(1)[0][0]
        style_diff = lab != rst
    elif label_spans and not rest_spans:
        style_diff = any(_is_bold(s) for s in label_spans)
    pred = _predecessor(line, lines)
    block_start = pred is None or line.idx == 0 and not (
        abs(pred.size - line.size) < 0.3 and len(pred.text) > 30 and not pred.text.rstrip().endswith((".", ":"))
        and pred.block == line.block
    ) or abs(pred.size - line.size) >= 0.6  # a font-size change (a graphic's label above) starts a new block
    if pred is not None and pred.block == line.block and abs(pred.size - line.size) < 0.3:
        # continuation of a paragraph unless the previous line clearly ended a sentence
        ended = pred.text.rstrip().endswith((".", ":", "!", "?")) or (pred.x1 - pred.x0) < 0.7 * (line.x1 - line.x0)
        block_start = ended and (style_diff or line.idx == 0 or rest_s[:1] in ":|")
    elif pred is not None and pred.block != line.block and not block_start:
        # the line above belongs to another block (a sub-caption "(a) ..." beside "(b) ..."):
        # a finished sentence there and a "Figure 3:" label here start a caption
        block_start = pred.text.rstrip().endswith((".", ":", "!", "?")) and (style_diff or rest_s[:1] in ":|")
    smaller = line.size < st.body_size - 0.4
    lowercase_verb = bool(re.match(r"\s*[a-z]", rest)) and not delim
    strong = delim or style_diff or label_alone or (smaller and block_start and not lowercase_verb)
    if not strong or not (block_start or style_diff):
        return None
    if lowercase_verb and not style_diff:
        return None
    score = 3.0 * style_diff + (2.0 if rest_s[:1] in ":|" else 1.0 if delim else 0.0) + block_start + smaller
    return Caption(kind, int(m.group("num")), word, [line], line.rect, line.text, score,
                   horizontal=line.horizontal, label_alone=label_alone)


def _caption_font(line: _Line) -> tuple[str, bool] | None:
    """Dominant style of the caption text (ignoring the label)."""
    if not line.spans:
        return None
    return Counter(_style(s) for s in line.spans[-3:]).most_common(1)[0][0]


def _extend_caption(cap: Caption, lines: list[_Line], st: _DocStats) -> None:
    """Grow a caption over the following lines until a gap, size/style change or a new label."""
    first = cap.lines[0]
    if not first.horizontal:
        return
    ranges = [(first.x0, first.x1)]
    if cap.label_alone or (first.x1 - first.x0) < 0.3 * (st.text_x1 - st.text_x0):
        lo, hi = _column_span(cap.bbox, st)
        ranges.append((min(first.x0, lo), max(first.x1, hi)))  # a short first line: the text may go on wider
    size = first.size
    style = _caption_font(first)
    cur = first
    used = {id(first)}

    def next_line(xa: float, xb: float) -> _Line | None:
        best = None
        for o in lines:
            if id(o) in used or not o.horizontal or o.y0 < cur.y0 + 0.5 * size:
                continue
            if o.y0 - cur.y1 > 0.55 * size:
                continue
            ov = min(o.x1, xb + 0.5 * size) - max(o.x0, xa - 0.5 * size)
            if ov < 0.6 * (o.x1 - o.x0):
                continue
            if best is None or o.y0 < best.y0 or (abs(o.y0 - best.y0) < 1 and o.x0 < best.x0):
                best = o
        return best

    for _ in range(40):
        # under the caption's own lines first: a side-captioned figure's labels sit beside them
        nxt, (ra, rb) = next(((n, r) for n, r in ((next_line(*r), r) for r in ranges) if n is not None),
                             (None, ranges[0]))
        if nxt is None or abs(nxt.size - size) > 0.6:
            break
        m = CAPTION_RE.match(nxt.text)
        if m and not _RANGE_RE.match(m.group("rest")):
            break
        if nxt.block != cur.block and style is not None and _caption_font(nxt) != style and len(cap.lines) > 1:
            break
        # same row continuation (split cell) or next row
        row = [o for o in lines if id(o) not in used and o.horizontal and abs(o.y0 - nxt.y0) < 1.5
               and min(o.x1, rb + size) - max(o.x0, ra - size) > 0]
        row.sort(key=lambda o: o.x0)
        for o in row:
            used.add(id(o))
            cap.lines.append(o)
        cur = nxt
        if cap.label_alone and style is None:
            style = _caption_font(nxt)
    cap.bbox = _union([ln.rect for ln in cap.lines])
    cap.text = _join_text([ln.text for ln in cap.lines])


def _join_text(parts: list[str]) -> str:
    """Join caption lines, undoing end-of-line hyphenation."""
    out = ""
    for p in parts:
        p = p.strip()
        if not out:
            out = p
        elif out.endswith("-") and p[:1].islower():
            out = out[:-1] + p
        else:
            out += " " + p
    return re.sub(r"\s+", " ", out).strip()


def find_captions(page: pymupdf.Page, pdict: dict | None = None, stats: _DocStats | None = None) -> list[Caption]:
    """Captions on one page (usable standalone; extract_figures passes doc-level stats)."""
    if pdict is None:
        pdict = page.get_text("dict", flags=_TEXT_FLAGS)
    lines = _page_lines(pdict)
    if stats is None:
        stats = _doc_stats([lines], page.rect.width)
    _mark_body(lines, stats)
    return _captions_from_lines(lines, stats)


def _captions_from_lines(lines: list[_Line], st: _DocStats) -> list[Caption]:
    """All captions of a page, each extended over its continuation lines."""
    caps = []
    for ln in lines:
        if ln.text[:1] not in "FfTt":
            continue
        cap = _caption_from_line(ln, lines, st)
        if cap is not None:
            caps.append(cap)
    claimed = {id(c.lines[0]) for c in caps}
    for cap in caps:
        _extend_caption(cap, [ln for ln in lines if id(ln) not in claimed or ln is cap.lines[0]], st)
        if len(cap.lines) > 1:
            claimed.update(id(ln) for ln in cap.lines)
    return caps


# ------------------------------------------------------------------- geometry
def _union(rects) -> tuple[float, float, float, float]:
    """Bounding box of rectangles."""
    rs = list(rects)
    return (min(r[0] for r in rs), min(r[1] for r in rs), max(r[2] for r in rs), max(r[3] for r in rs))


def _column_span(bbox, st: _DocStats) -> tuple[float, float]:
    """Horizontal extent a caption's graphic probably occupies (its column or the full text width)."""
    x0, x1 = bbox[0], bbox[2]
    full = (min(st.text_x0, x0), max(st.text_x1, x1))
    if not st.two_column:
        return full
    mid = (st.text_x0 + st.text_x1) / 2
    if x1 - x0 < 0.55 * (st.text_x1 - st.text_x0):
        if x1 <= mid + 0.05 * st.page_w and (x0 + x1) / 2 < mid:
            return (min(st.text_x0, x0), max(mid, x1))
        if x0 >= mid - 0.05 * st.page_w and (x0 + x1) / 2 > mid:
            return (min(mid, x0), max(st.text_x1, x1))
    return full


def _graphics(page: pymupdf.Page, st: _DocStats) -> np.ndarray:
    """Rects of images and vector paths, minus page decoration (rules, borders, backgrounds)."""
    W, H = page.rect.width, page.rect.height
    rects = []
    try:
        if page.get_images():  # cheap resource lookup; skips the costly device run on most pages
            for info in page.get_image_info():
                rects.append(tuple(info["bbox"]))
    except Exception:  # noqa: BLE001 - broken image streams must not kill the page
        log.debug("image info failed on page %s", page.number, exc_info=True)
    try:
        paths = page.get_cdrawings()
    except Exception:  # noqa: BLE001
        log.debug("drawings failed on page %s", page.number, exc_info=True)
        paths = []
    if len(paths) > _MAX_DRAWINGS:
        paths = paths[:: len(paths) // _MAX_DRAWINGS + 1]
    for p in paths:
        r = p.get("rect")
        if r is not None and not _invisible(p):
            rects.append(tuple(r))
    if not rects:
        return np.zeros((0, 4))
    a = np.asarray(rects, dtype=float)
    a[:, 0] = np.clip(a[:, 0], 0, W)
    a[:, 2] = np.clip(a[:, 2], 0, W)
    a[:, 1] = np.clip(a[:, 1], 0, H)
    a[:, 3] = np.clip(a[:, 3], 0, H)
    w, h = a[:, 2] - a[:, 0], a[:, 3] - a[:, 1]
    keep = (w >= 0) & (h >= 0) & ((w > 1.5) | (h > 1.5))
    keep &= ~((w * h) > 0.6 * W * H)  # page backgrounds / borders
    keep &= ~((h < 3) & (w > 0.5 * W) & ((a[:, 1] < 0.09 * H) | (a[:, 3] > 0.91 * H)))  # header/footer rules
    keep &= ~((w < 3) & (h > 0.6 * H))  # column separators
    keep &= ~((a[:, 3] < _MARGIN * H) | (a[:, 1] > (1 - _MARGIN) * H))  # wholly in the top/bottom margin:
    # running heads, publisher watermarks and logos ("This CVPR paper is the Open Access version ...")
    return a[keep]


_MARGIN = 0.065  # of the page height; a US-letter page's 72-pt margin is 0.09


def _invisible(path: dict) -> bool:
    """A white fill without a stroke: paints nothing on a white page (watermark and text-box
    backgrounds), so it must not join a figure region."""
    fill = path.get("fill")
    return path.get("type") == "f" and fill is not None and len(fill) >= 3 and min(fill[:3]) >= 0.99


def _overlap_1d(a0, a1, b0, b1) -> float:
    """Length of the overlap of two intervals."""
    return max(0.0, min(a1, b1) - max(a0, b0))


@dataclass
class _Region:
    """Content found on one side of a caption."""

    rect: tuple[float, float, float, float] | None
    gap: float
    has_graphics: bool
    area: float = 0.0
    side: bool = False  # beside the caption (_search_side): no vote on the above/below convention


def _obstacles(lines: list[_Line], caps: list[Caption], cap: Caption, graphics: np.ndarray) -> list[tuple]:
    """Rects that end a figure region: body paragraphs (not inside a graphic box) and other captions."""
    obs = [c.bbox for c in caps if c is not cap]
    blocks: dict[int, list[_Line]] = {}
    for ln in lines:
        if ln.body:
            blocks.setdefault(ln.block, []).append(ln)
    big = graphics[((graphics[:, 2] - graphics[:, 0]) > 30) & ((graphics[:, 3] - graphics[:, 1]) > 15)] \
        if len(graphics) else graphics
    for blk in blocks.values():
        r = _union([ln.rect for ln in blk])
        if len(big):
            inside = (big[:, 0] <= r[0] + 2) & (big[:, 1] <= r[1] + 2) & (big[:, 2] >= r[2] - 2) & (big[:, 3] >= r[3] - 2)
            if inside.any():
                continue  # text box drawn inside a figure
        obs.append(r)
    return obs


def _search(cap: Caption, direction: str, lines: list[_Line], caps: list[Caption], graphics: np.ndarray,
            obstacles: list[tuple], st: _DocStats, page_rect, use_text: bool) -> _Region:
    """Collect the graphic region above/below a caption within its column span."""
    cx0, cy0, cx1, cy1 = cap.bbox
    sx0, sx1 = _column_span(cap.bbox, st)
    # narrow the span when another caption sits at the same height (side-by-side figures)
    for o in caps:
        if o is cap or _overlap_1d(o.bbox[1], o.bbox[3], cy0, cy1) <= 0:
            continue
        if o.bbox[0] >= cx1:
            sx1 = min(sx1, (cx1 + o.bbox[0]) / 2)
        elif o.bbox[2] <= cx0:
            sx0 = max(sx0, (o.bbox[2] + cx0) / 2)
    W, H = page_rect.width, page_rect.height
    up = direction == "above"
    bound = 0.0 if up else H
    for r in obstacles:
        if _overlap_1d(r[0], r[2], sx0, sx1) < 0.25 * min(r[2] - r[0], sx1 - sx0):
            continue
        if up and r[3] <= cy0 + 2 and r[1] < cy0:
            bound = max(bound, r[3])
        elif not up and r[1] >= cy1 - 2 and r[3] > cy1:
            bound = min(bound, r[1])
    ry0, ry1 = (bound, cy0) if up else (cy1, bound)
    if ry1 - ry0 < 4:
        return _Region(None, float("inf"), False)
    g = graphics
    sel = np.zeros(len(g), dtype=bool)
    if len(g):
        ix = np.clip(np.minimum(g[:, 2], sx1) - np.maximum(g[:, 0], sx0), 0, None)
        w = np.maximum(g[:, 2] - g[:, 0], 0.5)
        inside_y = (g[:, 1] >= ry0 - 1) & (g[:, 3] <= ry1 + 1)
        sel = inside_y & (ix > 0) & (ix >= 0.5 * np.minimum(w, sx1 - sx0))
    cap_ids = {id(l2) for c in caps for l2 in c.lines}
    # rotated text (y-axis titles and tick labels) belongs to the graphic too, unless it is long
    # enough to be a margin stamp ("arXiv:... [cs.LG]")
    text_pool = [ln for ln in lines if not ln.body and id(ln) not in cap_ids and ln.y0 >= ry0 - 1
                 and ln.y1 <= ry1 + 1 and (ln.horizontal or ln.y1 - ln.y0 <= 0.25 * H)]
    has_g = bool(sel.any())
    if has_g:
        # grow through touching graphics (wide figures with a narrow caption)
        u = _grow_touching(g, sel, (g[:, 1] >= ry0 - 1) & (g[:, 3] <= ry1 + 1))
        u = _grow_text(u, text_pool, st, ry0, ry1)
    elif use_text:
        u = _text_region([ln for ln in text_pool if ln.horizontal], cap, up, st)
        if u is None:
            return _Region(None, float("inf"), False)
    else:
        return _Region(None, float("inf"), False)
    u[1], u[3] = max(u[1], ry0), min(u[3], ry1)
    if u[3] - u[1] < 2 or u[2] - u[0] < 2:
        return _Region(None, float("inf"), False)
    gap = (cy0 - u[3]) if up else (u[1] - cy1)
    return _Region(tuple(u), max(gap, 0.0), has_g, (u[2] - u[0]) * (u[3] - u[1]))


def _search_side(cap: Caption, right: bool, lines: list[_Line], caps: list[Caption], graphics: np.ndarray,
                 obstacles: list[tuple], st: _DocStats, page_rect) -> _Region:
    """Collect a graphic beside a narrow caption (side captions: Nature and Science put the caption
    in a narrow column at the figure's left). Only graphics that start level with the caption,
    between the body paragraphs above and below, with no other caption in that band."""
    none = _Region(None, float("inf"), False)
    cx0, cy0, cx1, cy1 = cap.bbox
    tx0, tx1 = min(st.text_x0, cx0), max(st.text_x1, cx1)
    if len(graphics) == 0 or cx1 - cx0 > 0.5 * (tx1 - tx0) or sum(ln.body for ln in cap.lines) * 2 > len(cap.lines):
        return none  # a column-wide caption, or body text that starts with "Figure 3 ..."
    sx0, sx1 = (cx1, tx1) if right else (tx0, cx0)
    if sx1 - sx0 < 0.25 * (tx1 - tx0):
        return none
    top, bot = 0.0, page_rect.height
    for r in obstacles:
        if _overlap_1d(r[0], r[2], sx0, sx1) < 0.25 * min(r[2] - r[0], sx1 - sx0):
            continue
        if r[3] <= cy0 + 2:
            top = max(top, r[3])
        elif r[1] >= cy0 - 2:
            bot = min(bot, r[1])
        else:
            return none  # body text or another caption beside the caption's first line
    for o in caps:
        if o is not cap and _overlap_1d(o.bbox[0], o.bbox[2], sx0, sx1) > 0 and _overlap_1d(o.bbox[1], o.bbox[3], top, bot) > 0:
            return none
    g = graphics
    vy = (g[:, 1] >= top - 1) & (g[:, 3] <= bot + 1)
    side = (g[:, 0] >= sx0 - 2) if right else (g[:, 2] <= sx1 + 2)
    level = (g[:, 1] <= cy1) & (g[:, 3] >= cy0 + st.body_size)
    sel = vy & side & level
    if not sel.any():
        return none
    u = _grow_touching(g, sel, vy)  # panels below the caption's end
    cap_ids = {id(l2) for c in caps for l2 in c.lines}
    pool = [ln for ln in lines if not ln.body and id(ln) not in cap_ids and ln.y0 >= top - 1 and ln.y1 <= bot + 1
            and (ln.x0 >= cx1 - 2 if right else ln.x1 <= cx0 + 2)]
    u = _grow_text(u, pool, st, top, bot)
    if u[2] - u[0] < 0.2 * (tx1 - tx0) or u[3] - u[1] < 3 * st.body_size:
        return none
    gap = (u[0] - cx1) if right else (cx0 - u[2])
    return _Region(tuple(u), max(gap, 0.0), True, (u[2] - u[0]) * (u[3] - u[1]), side=True)


def _grow_touching(g: np.ndarray, sel: np.ndarray, within: np.ndarray, rounds: int = 6) -> list:
    """Bounding box of the selected graphics grown through graphics (among `within`) that touch it."""
    sel = sel.copy()
    u = list(_union(g[sel]))
    for _ in range(rounds):
        touch = within & ~sel & (g[:, 0] <= u[2] + 3) & (g[:, 2] >= u[0] - 3) & (g[:, 1] <= u[3] + 3) & (g[:, 3] >= u[1] - 3)
        if not touch.any():
            break
        sel |= touch
        u = list(_union(g[sel]))
    return u


def _grow_text(u: list, pool: list[_Line], st: _DocStats, ry0: float, ry1: float) -> list:
    """Add short text lines touching the graphic (ticks, legends, axis titles, sub-captions)."""
    px, py = 0.8 * st.body_size, 0.5 * st.body_size
    added = set()
    for _ in range(4):
        changed = False
        for ln in pool:
            if id(ln) in added:
                continue
            if ln.x0 <= u[2] + px and ln.x1 >= u[0] - px and ln.y0 <= u[3] + py and ln.y1 >= u[1] - py:
                added.add(id(ln))
                u = [min(u[0], ln.x0), min(u[1], ln.y0), max(u[2], ln.x1), max(u[3], ln.y1)]
                changed = True
        if not changed:
            break
    return u


def _text_region(pool: list[_Line], cap: Caption, up: bool, st: _DocStats) -> list | None:
    """Contiguous non-body text next to the caption (text-only figures, tables)."""
    sx0, sx1 = _column_span(cap.bbox, st)
    cand = [ln for ln in pool if _overlap_1d(ln.x0, ln.x1, sx0, sx1) > 0.5 * (ln.x1 - ln.x0)]
    cand.sort(key=lambda ln: -ln.y1 if up else ln.y0)
    edge = cap.bbox[1] if up else cap.bbox[3]
    got: list[_Line] = []
    for ln in cand:
        d = (edge - ln.y1) if up else (ln.y0 - edge)
        if d > 2.2 * st.body_size:
            break
        got.append(ln)
        edge = min(edge, ln.y0) if up else max(edge, ln.y1)
    if not got:
        return None
    return list(_union([ln.rect for ln in got]))


# ----------------------------------------------------------------- main entry
@dataclass
class _Cand:
    """A caption with its chosen region, ready to rank and render."""

    cap: Caption
    page: int
    region: tuple | None
    has_graphics: bool
    score: float


def _analyse_page(page: pymupdf.Page, pdict: dict, lines: list[_Line], st: _DocStats) -> list[tuple[Caption, _Region, _Region]]:
    """Captions of a page with their candidate regions above and below. A figure caption with no
    graphic on either side gets the graphic beside it as its "below" region (side captions)."""
    caps = _captions_from_lines(lines, st)
    if not caps:
        return []
    graphics = _graphics(page, st)
    out = []
    for cap in caps:
        if not cap.horizontal:
            rect = tuple(_union(graphics)) if len(graphics) else None
            reg = _Region(rect, 0.0, rect is not None)
            out.append((cap, reg, _Region(None, float("inf"), False)))
            continue
        obs = _obstacles(lines, caps, cap, graphics)
        use_text = True
        above = _search(cap, "above", lines, caps, graphics, obs, st, page.rect, use_text)
        below = _search(cap, "below", lines, caps, graphics, obs, st, page.rect, use_text)
        if cap.kind == "figure" and not above.has_graphics and not below.has_graphics:
            # side captions: the graphic beside the caption, when nothing lies above or below
            for right in (True, False):
                side = _search_side(cap, right, lines, caps, graphics, obs, st, page.rect)
                if side.has_graphics:
                    above, below = _Region(None, float("inf"), False), side
                    break
        out.append((cap, above, below))
    return out


def _choose(cap: Caption, above: _Region, below: _Region, prefer_above: bool) -> _Region | None:
    """Pick the side holding the caption's graphic, following the document's convention."""
    first, second = (above, below) if prefer_above else (below, above)
    if first.has_graphics and (not second.has_graphics or first.gap <= second.gap + 30):
        return first
    if second.has_graphics:
        return second
    if cap.kind == "table":
        for r in (first, second):
            if r.rect is not None:
                return r
        return None
    # text-only figure: require a reasonably sized region near the caption
    for r in (first, second):
        if r.rect is not None and r.gap < 30 and (r.rect[3] - r.rect[1]) >= 15:
            return r
    return None


def _convention(analysed: list[tuple[Caption, _Region, _Region]], kind: str) -> bool:
    """True when this document places captions of ``kind`` below their content (graphic above)."""
    votes = Counter()
    for cap, a, b in analysed:
        if cap.kind != kind or a.side or b.side:
            continue
        ga = a.gap if (a.has_graphics or kind == "table") and a.rect is not None else float("inf")
        gb = b.gap if (b.has_graphics or kind == "table") and b.rect is not None else float("inf")
        if ga == gb:
            continue
        votes["above" if ga < gb else "below"] += 1
    if not votes:
        return kind == "figure"
    if kind == "figure":
        return votes["above"] >= votes["below"]
    return votes["above"] > votes["below"]


def _render(page: pymupdf.Page, dl, rect, out_dir: pathlib.Path, rel_prefix: str, stem: str,
            dpi: int, thumb_px: int) -> tuple[str, str, int, int]:
    """Write the crop and its thumbnail; return relative paths and pixel size."""
    r = pymupdf.Rect(rect) + (-2, -2, 2, 2)
    r &= page.rect
    if r.is_empty or r.width < 1 or r.height < 1:
        r = page.rect
    zoom = dpi / 72.0
    pix = dl.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), clip=r, alpha=False)
    if pix.n != 3:
        pix = pymupdf.Pixmap(pymupdf.csRGB, pix)
    img_name, thumb_name = f"{stem}.png", f"{stem}.thumb.png"
    im = Image.frombytes("RGB", (pix.width, pix.height), pix.samples)
    im.save(out_dir / img_name, compress_level=1)
    im.thumbnail((thumb_px, thumb_px), Image.BILINEAR, reducing_gap=2.0)
    im.save(out_dir / thumb_name, compress_level=3)
    prefix = rel_prefix.rstrip("/")
    return f"{prefix}/{img_name}", f"{prefix}/{thumb_name}", pix.width, pix.height


def extract_figures(doc: "pymupdf.Document", out_dir: pathlib.Path, rel_prefix: str, dpi: int = 150,
                    thumb_px: int = 256, max_pages: int | None = None,
                    page_dicts: list[dict | None] | None = None) -> list[ExtractedFigure]:
    """Find captioned figures and tables, render their crops, one result per (kind, number)."""
    out_dir = pathlib.Path(out_dir)
    n = len(doc) if max_pages is None else min(len(doc), max_pages)
    pages_lines: list[list[_Line]] = []
    for i in range(n):
        try:
            pdict = page_dicts[i] if page_dicts is not None and i < len(page_dicts) else None
            if pdict is None:
                pdict = doc[i].get_text("dict", flags=_TEXT_FLAGS)
            pages_lines.append(_page_lines(pdict))
        except Exception:  # noqa: BLE001 - one broken page must not lose the others
            log.warning("text extraction failed on page %d", i + 1, exc_info=True)
            pages_lines.append([])
    if not any(pages_lines):
        return []
    page_w = doc[0].rect.width if n else 612.0
    st = _doc_stats(pages_lines, page_w)
    analysed: list[tuple[int, Caption, _Region, _Region]] = []
    for i, lines in enumerate(pages_lines):
        if not lines or not any(ln.text[:1] in "FfTt" and CAPTION_RE.match(ln.text) for ln in lines):
            continue
        try:
            _mark_body(lines, st)
            for cap, a, b in _analyse_page(doc[i], {}, lines, st):
                analysed.append((i, cap, a, b))
        except Exception:  # noqa: BLE001
            log.warning("figure analysis failed on page %d", i + 1, exc_info=True)
    conv = {k: _convention([(c, a, b) for _, c, a, b in analysed], k) for k in ("figure", "table")}
    best: dict[tuple[str, int], _Cand] = {}
    for i, cap, a, b in analysed:
        reg = _choose(cap, a, b, conv[cap.kind])
        score = cap.score + (3 if reg is not None and reg.has_graphics else 1 if reg is not None else 0)
        cand = _Cand(cap, i, reg.rect if reg else None, bool(reg and reg.has_graphics), score)
        key = (cap.kind, cap.number)
        if key not in best or cand.score > best[key].score:
            best[key] = cand
    if not best:
        return []
    _split_overlaps(doc, list(best.values()), pages_lines, st)
    out_dir.mkdir(parents=True, exist_ok=True)
    results = []
    dl_page, dl = -1, None
    for (kind, num), c in sorted(best.items(), key=lambda kv: (kv[1].page, kv[1].cap.bbox[1])):
        try:
            if c.page != dl_page:  # one display list per page, shared by its crops
                dl_page, dl = c.page, doc[c.page].get_displaylist(annots=False)
            results.append(_emit(doc[c.page], dl, c, out_dir, rel_prefix, dpi, thumb_px))
        except Exception:  # noqa: BLE001
            log.warning("rendering %s %d failed", kind, num, exc_info=True)
    return results


def _largest_gap(intervals: list[tuple[float, float]], lo: float, hi: float) -> float:
    """Middle of the widest stretch of [lo, hi] that no interval covers (midpoint if none)."""
    best, best_w, y = (lo + hi) / 2, 0.0, lo
    for a, b in sorted(intervals):
        if a > y and min(a, hi) - y > best_w:
            best, best_w = (y + min(a, hi)) / 2, min(a, hi) - y
        y = max(y, b)
        if y >= hi:
            break
    if hi - y > best_w:
        best = (y + hi) / 2
    return best


def _split_overlaps(doc, cands: list[_Cand], pages_lines: list[list[_Line]], st: _DocStats) -> None:
    """Two regions of one page that overlap (e.g. a table right above a figure: the table grows
    down into the plot, the figure up into the table) are cut apart at the widest whitespace gap
    between them; the one whose caption is higher keeps the upper part."""
    by_page: dict[int, list[_Cand]] = {}
    for c in cands:
        if c.region is not None:
            by_page.setdefault(c.page, []).append(c)
    for page_no, group in by_page.items():
        if len(group) < 2:
            continue
        graphics = None
        for i in range(len(group)):
            for j in range(i + 1, len(group)):
                a, b = group[i], group[j]
                ra, rb = a.region, b.region
                if _overlap_1d(ra[0], ra[2], rb[0], rb[2]) <= 5 or _overlap_1d(ra[1], ra[3], rb[1], rb[3]) <= 2:
                    continue
                if graphics is None:
                    graphics = _graphics(doc[page_no], st)
                items = [ln.rect for ln in pages_lines[page_no]] + [tuple(g) for g in graphics]
                side_by_side = _overlap_1d(a.cap.bbox[1], a.cap.bbox[3], b.cap.bbox[1], b.cap.bbox[3]) > 0
                if side_by_side:  # captions on one row: cut at the widest vertical gutter
                    left, right = (a, b) if a.cap.bbox[0] <= b.cap.bbox[0] else (b, a)
                    # the gutter lies between the two captions' centres
                    lo = max(min(ra[0], rb[0]), (left.cap.bbox[0] + left.cap.bbox[2]) / 2)
                    hi = min(max(ra[2], rb[2]), (right.cap.bbox[0] + right.cap.bbox[2]) / 2)
                    y0, y1 = max(ra[1], rb[1]), min(ra[3], rb[3])
                    spans = [(r[0], r[2]) for r in items if _overlap_1d(r[1], r[3], y0, y1) > 0 and r[2] > lo and r[0] < hi]
                    cut = _largest_gap(spans, lo, hi)
                    lr_, rr_ = left.region, right.region
                    if lr_[0] < cut < rr_[2]:
                        left.region = (lr_[0], lr_[1], min(lr_[2], cut), lr_[3])
                        right.region = (max(rr_[0], cut), rr_[1], rr_[2], rr_[3])
                    continue
                upper, lower = (a, b) if a.cap.bbox[1] <= b.cap.bbox[1] else (b, a)
                lo = max(min(ra[1], rb[1]), (upper.cap.bbox[1] + upper.cap.bbox[3]) / 2)
                hi = min(max(ra[3], rb[3]), (lower.cap.bbox[1] + lower.cap.bbox[3]) / 2)
                if hi <= lo:
                    continue
                x0, x1 = max(ra[0], rb[0]), min(ra[2], rb[2])
                spans = [(r[1], r[3]) for r in items if _overlap_1d(r[0], r[2], x0, x1) > 0 and r[3] > lo and r[1] < hi]
                cut = _largest_gap(spans, lo, hi)
                ur, lr = upper.region, lower.region
                if ur[1] < cut and lr[3] > cut:
                    upper.region = (ur[0], ur[1], ur[2], min(ur[3], cut))
                    lower.region = (lr[0], max(lr[1], cut), lr[2], lr[3])


def _emit(page: pymupdf.Page, dl, c: _Cand, out_dir: pathlib.Path, rel_prefix: str, dpi: int, thumb_px: int) -> ExtractedFigure:
    """Render one candidate and build its record."""
    cap = c.cap
    crop = c.region if c.region is not None else cap.bbox
    stem = f"{'fig' if cap.kind == 'figure' else 'tab'}-{cap.number}"
    # tables are text: searched by their caption, shown small; render them cheaper than figures
    img, thumb, w, h = _render(page, dl, crop, out_dir, rel_prefix, stem,
                               dpi if cap.kind == "figure" else min(dpi, 110), thumb_px)
    full = _union([crop, cap.bbox])
    label = f"{'Figure' if cap.kind == 'figure' else 'Table'} {cap.number}"
    return ExtractedFigure(
        kind=cap.kind, label=label, number=cap.number, caption=cap.text, page=c.page + 1,
        bbox=[round(v, 2) for v in full], image_path=img, thumbnail_path=thumb, width=w, height=h,
        caption_bbox=[round(v, 2) for v in cap.bbox],
    )
