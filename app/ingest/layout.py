"""The page model: text lines (with spans, fonts, bold), body-text paragraphs, columns and
graphics, built once per page and shared by parsing, captions, figure regions and mentions.

A page starts from a text dict in PyMuPDF's shape (``blocks -> lines -> spans`` with bboxes, font
names, sizes and flags). Born-digital pages get it from ``page.get_text("dict")``; any other source
(OCR words of a scanned page) can build the same dict and use every stage after it.
"""
from __future__ import annotations

import logging
import re
import unicodedata
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
import pymupdf

log = logging.getLogger(__name__)

__all__ = ["Line", "PageLayout", "DocumentLayout", "TEXT_FLAGS", "big_graphics", "build_document", "build_layout",
           "build_page", "clean_text", "column_span", "drop_line_numbers", "furniture_key", "furniture_zone", "in_band", "in_page_margin", "inside_graphic", "is_bold",
           "is_monospaced", "lines_from_dict", "mark_running_heads", "outlined_boxes", "page_graphics", "paragraph_blocks", "repeat_min", "REPEAT_BAND", "union", "overlap_1d",
           "visible_images"]

TEXT_FLAGS = pymupdf.TEXT_MEDIABOX_CLIP  # ligatures expanded, no images
_MAX_DRAWINGS = 30000  # beyond this a page is a huge vector plot; subsample
_MARGIN = 0.065  # of the page height; a US-letter page's 72-pt margin is 0.09


def in_page_margin(y0: float, y1: float, height: float) -> bool:
    """Wholly in the top or bottom margin of a page, where running heads, page numbers and
    publisher stamps sit (page_graphics drops the graphics there)."""
    return y1 < _MARGIN * height or y0 > (1 - _MARGIN) * height


# ----------------------------------------------------------------------------- text clean-up
_BOLD_FONT_RE = re.compile(r"bold|medi|semibold|black|heavy|demi|cmbx|[-.,]b$|bx\d", re.I)


def is_bold(span: dict) -> bool:
    """Bold flag or a bold-looking font name (flags are unreliable in some PDFs)."""
    return bool(span.get("flags", 0) & 16) or bool(_BOLD_FONT_RE.search(span.get("font", "")))


# typewriter fonts by name (TeX's cmtt/sltt and their EC/cm-super, Latin Modern, txfonts forms,
# Courier, common programming fonts), after the subset prefix "ABCDEF+"
_MONO_FONT_RE = re.compile(r"^(?:[A-Z]{6}\+)?(?:cm(?:sl|i)?tt|sf(?:tt|st|it)\d|ec(?:tt|st|it)\d|lmmono|lmtt|txtt|"
                           r"pcr|t1xtt|beramono)|mono(?!type)|courier|inconsolata|consola|menlo", re.I)


def is_monospaced(span: dict) -> bool:
    """Fixed-pitch flag or a typewriter font name: the font of code listings and program output."""
    return bool(span.get("flags", 0) & 8) or bool(_MONO_FONT_RE.search(span.get("font", "")))


# TeX's font encodings put the ff/fi/fl/ffi/ffl ligatures on control codes: OT1 (plain LaTeX) on
# 0x0B-0x0F, T1 (`fontenc`, common in Sweave and knitr documents) on 0x1B-0x1F; a PDF without a
# ToUnicode map for them yields those codes between letters ("di\x1berential"). OT1's own
# 0x1B-0x1F (oe, o-slash and capitals) are far rarer in scientific prose than these ligatures.
_TEX_LIGATURES = {"\x0b": "ff", "\x0c": "fi", "\x0d": "fl", "\x0e": "ffi", "\x0f": "ffl",
                  "\x1b": "ff", "\x1c": "fi", "\x1d": "fl", "\x1e": "ffi", "\x1f": "ffl"}
_TEX_LIGATURE_RE = re.compile(r"(?<=[A-Za-z])[\x0b-\x0f\x1b-\x1f]|[\x0b-\x0f\x1b-\x1f](?=[a-z])")
# A spacing accent typeset before its letter ("Milo\u02c7s", "Stanojevi\u00b4c"): LaTeX draws the
# accent as its own glyph. Rejoined as letter + combining mark, then composed (NFC).
_SPACING_ACCENTS = {"\u00b4": "\u0301", "\u02c7": "\u030c", "\u00a8": "\u0308", "\u02dc": "\u0303",
                    "\u02c6": "\u0302", "\u00b8": "\u0327", "\u02da": "\u030a", "\u02d8": "\u0306",
                    "\u02dd": "\u030b", "\u02db": "\u0328", "\u00af": "\u0304", "\u02d9": "\u0307"}
_ACCENTS = "[" + "".join(_SPACING_ACCENTS) + "]"
_DOTLESS_I_ACCENT_RE = re.compile("\u0131\\s?(" + _ACCENTS + ")")  # "na\u0131\u00a8ve": the accent sits on the i
_ACCENT_RE = re.compile("(?:(?<=[A-Za-z])\\s)?(" + _ACCENTS + ")([A-Za-z\u0131])|(" + _ACCENTS + ")\\s([A-Za-z\u0131])")
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\ufffd\ufffe\uffff]")


def _join_accent(m: re.Match) -> str:
    accent, letter = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
    return ("i" if letter == "\u0131" else letter) + _SPACING_ACCENTS[accent]


def clean_text(text: str) -> str:
    """Text as it should be stored: soft hyphens, no-break spaces and tabs normalised; ligatures
    (Unicode and TeX OT1 / T1 codes) expanded; spacing accents joined to their letter; unmappable
    glyphs (U+FFFD) and control codes dropped; compatibility forms folded (NFKC)."""
    text = text.replace("\u00ad", "-").replace("\u00a0", " ").replace("\t", " ")
    if text.isascii() and text.isprintable():
        return text
    text = _TEX_LIGATURE_RE.sub(lambda m: _TEX_LIGATURES[m.group(0)], text)
    text = _DOTLESS_I_ACCENT_RE.sub(lambda m: "i" + _SPACING_ACCENTS[m.group(1)], text)
    text = _ACCENT_RE.sub(_join_accent, text)
    text = _CONTROL_RE.sub("", text)
    return unicodedata.normalize("NFKC", text)


# ----------------------------------------------------------------------------- lines
@dataclass
class Line:
    """A visual text line: a PyMuPDF line split at wide horizontal gaps (table cells separate),
    pieces of one row of a block joined again when the gap is an ordinary word gap."""

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
    body: bool = False  # belongs to a body-text paragraph (set by DocumentLayout.mark_body)
    page: int = 0
    running_head: bool = False  # repeated at this height on many pages (set by build_document)
    piece_sizes: tuple = ()  # font sizes of the PyMuPDF lines joined into this one (a larger
    # first letter of a small-caps heading is its own piece)
    pieces: tuple = ()  # (x0, x1, text) of the PyMuPDF lines joined into this one (names set
    # apart in an author row are separate lines)

    @property
    def largest_piece_size(self) -> float:
        return max(self.piece_sizes, default=self.size)

    @property
    def rect(self) -> tuple[float, float, float, float]:
        return (self.x0, self.y0, self.x1, self.y1)

    @property
    def yc(self) -> float:
        return (self.y0 + self.y1) / 2

    @property
    def main_span(self) -> dict:
        return max(self.spans, key=lambda s: len(s["text"].strip()))

    @property
    def monospaced(self) -> bool:
        """Set (nearly) all in a typewriter font, as the lines of a code listing are."""
        chars = sum(len(sp["text"].strip()) for sp in self.spans)
        mono = sum(len(sp["text"].strip()) for sp in self.spans if is_monospaced(sp))
        return chars > 0 and mono >= 0.9 * chars

    @property
    def bold(self) -> bool:
        return is_bold(self.main_span) if self.spans else False


def join_spans(spans: list[dict]) -> str:
    """Concatenate spans, adding the space some PDFs omit between word-per-span runs."""
    out = spans[0]["text"]
    for prev, s in zip(spans, spans[1:]):
        gap = s["bbox"][0] - prev["bbox"][2]
        if gap > 0.15 * prev["size"] and not out.endswith(" ") and not s["text"].startswith(" "):
            out += " "
        out += s["text"]
    return out


def lines_from_dict(pdict: dict, page: int = 0) -> list[Line]:
    """Visual lines of a text dict; lines are split at big gaps so table cells separate."""
    out: list[Line] = []
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
                text = clean_text(join_spans(g))
                size = round(max(g, key=lambda s: len(s["text"]))["size"], 1)
                out.append(Line(xs0, ys0, xs1, ys1, text.strip(), size, g, bi, li, horizontal, page=page,
                                pieces=((xs0, xs1, text.strip()),)))
    return _merge_row_pieces(out)


def _merge_row_pieces(lines: list[Line]) -> list[Line]:
    """Join pieces of one visual row that PyMuPDF reports as separate lines of a block (justified
    text with wide word gaps, a bold "Fig. 1." label before its caption text) when the gap is one
    that would have joined two spans of a line (<= 1.5 x font size)."""
    out: list[Line] = []
    for ln in lines:
        prev = out[-1] if out else None
        if (prev is not None and prev.block == ln.block and prev.horizontal and ln.horizontal
                and abs(prev.y0 - ln.y0) < 1.5 and abs(prev.y1 - ln.y1) < 1.5
                and 0 <= ln.x0 - prev.x1 <= 1.5 * max(prev.size, ln.size, 4.0)):
            spans = prev.spans + ln.spans
            out[-1] = Line(prev.x0, min(prev.y0, ln.y0), ln.x1, max(prev.y1, ln.y1),
                           clean_text(join_spans(spans)).strip(), round(max(spans, key=lambda s: len(s["text"]))["size"], 1),
                           spans, prev.block, prev.idx, True, page=prev.page,
                           piece_sizes=(prev.piece_sizes or (prev.size,)) + (ln.piece_sizes or (ln.size,)),
                           pieces=prev.pieces + ln.pieces)
        else:
            out.append(ln)
    return out


# ----------------------------------------------------------------------------- graphics
def _invisible(path: dict) -> bool:
    """A white fill without a stroke: paints nothing on a white page (watermark and text-box
    backgrounds), so it must not join a figure region."""
    fill = path.get("fill")
    return path.get("type") == "f" and fill is not None and len(fill) >= 3 and min(fill[:3]) >= 0.99


def paths_in_clips(paths: list[dict]) -> Iterator[tuple[dict, tuple | None]]:
    """Each drawn path of `page.get_drawings(extended=True)` with the clip rect in force where it is
    drawn (the intersection of the enclosing clip paths; None without one). Clip and group entries
    only set the nesting and are not yielded."""
    clips: dict[int, tuple] = {}  # nesting level -> clip rect in force for deeper levels
    for p in paths:
        level, kind = p.get("level", 0), p.get("type")
        if kind in ("clip", "group"):
            for k in [k for k in clips if k >= level]:
                del clips[k]
            if kind == "clip" and p.get("scissor") is not None:
                clips[level] = tuple(p["scissor"])
            continue
        clip = None
        for k, c in clips.items():
            if k < level:
                clip = c if clip is None else (max(clip[0], c[0]), max(clip[1], c[1]),
                                               min(clip[2], c[2]), min(clip[3], c[3]))
        yield p, clip


def cut_to(box: tuple, clip: tuple | None) -> tuple:
    """`box` cut to `clip` (an empty result has x1 < x0 or y1 < y0)."""
    if clip is None:
        return tuple(box)
    return (max(box[0], clip[0]), max(box[1], clip[1]), min(box[2], clip[2]), min(box[3], clip[3]))


def _visible_path_rects(paths: list[dict]) -> list[tuple]:
    """Rects of the drawn paths, each cut to the clip paths around it. A clipped path's own rect
    can reach far beyond what is painted (hatch patterns of bars, plot lines clipped to their
    axes) and would pull a figure region across the page."""
    out = []
    for p, clip in paths_in_clips(paths):
        r = p.get("rect")
        if r is None or _invisible(p):
            continue
        x0, y0, x1, y1 = cut_to(r, clip)
        if x1 >= x0 and y1 >= y0:
            out.append((x0, y0, x1, y1))
    return out


def visible_images(page: pymupdf.Page) -> list[dict]:
    """The page's raster images (MuPDF's image info: bbox, transform, width, height), each `bbox`
    the part of the image left visible by the clip in force where it is drawn. A figure exported
    with a clip (a trimmed graphic, an image inside a form whose clip lies elsewhere) places its
    whole image far beyond what is painted; the placement alone would pull a figure region to the
    page's margin. MuPDF reports an image clipped away entirely as an empty (inverted) box: such
    images paint nothing and are left out. Empty for a page whose images cannot be read."""
    try:
        if not page.get_images():  # cheap resource lookup; skips the costly device run on most pages
            return []
        infos = page.get_textpage(flags=pymupdf.TEXT_PRESERVE_IMAGES | pymupdf.TEXT_CLIP).extractIMGINFO()
    except Exception:  # noqa: BLE001 - broken image streams must not kill the page
        log.debug("image info failed on page %s", page.number, exc_info=True)
        return []
    return [info for info in infos if info["bbox"][2] > info["bbox"][0] and info["bbox"][3] > info["bbox"][1]]


def _page_rules(page: pymupdf.Page, a: np.ndarray, edge_rule: np.ndarray) -> np.ndarray:
    """Which of the wide flat rules near the page's top or bottom edge (`edge_rule`) are page
    decoration: a rule under a running head or over a footer. A rule that the text or drawing on
    its inner side starts right at (half a line, and nearer than any text on its outer side) opens
    or closes what it rules off instead: the top rule of a table, the top of a plot set at the
    head of the page."""
    H = page.rect.height
    try:
        words = np.asarray([w[:4] for w in page.get_text("words")], dtype=float).reshape(-1, 4)
    except Exception:  # noqa: BLE001 - without words every such rule stays decoration
        log.debug("words failed on page %s", page.number, exc_info=True)
        return edge_rule
    out = edge_rule.copy()
    for i in np.flatnonzero(edge_rule):
        x0, y0, x1, y1 = a[i]
        w = words[(words[:, 0] < x1) & (words[:, 2] > x0)]
        d = a[~edge_rule & (a[:, 0] < x1) & (a[:, 2] > x0)]
        top = y0 < H / 2
        outer = (y0 - w[w[:, 3] <= y0 + 1, 3]) if top else (w[w[:, 1] >= y1 - 1, 1] - y1)
        inner = np.concatenate([w[w[:, 1] >= y1 - 1, 1] - y1, d[d[:, 1] >= y1 - 1, 1] - y1] if top else
                               [y0 - w[w[:, 3] <= y0 + 1, 3], y0 - d[d[:, 3] <= y0 + 1, 3]])
        near_in = inner.min() if len(inner) else np.inf
        near_out = outer.min() if len(outer) else np.inf
        if near_in <= 6 and near_in < near_out:
            out[i] = False
    return out


def page_graphics(page: pymupdf.Page) -> np.ndarray:
    """Rects of images and vector paths, minus page decoration (rules, borders, backgrounds)."""
    W, H = page.rect.width, page.rect.height
    rects = [tuple(info["bbox"]) for info in visible_images(page)]
    try:
        paths = page.get_cdrawings(extended=True)
    except Exception:  # noqa: BLE001
        log.debug("drawings failed on page %s", page.number, exc_info=True)
        paths = []
    drawn = _visible_path_rects(paths)
    if len(drawn) > _MAX_DRAWINGS:
        drawn = drawn[:: len(drawn) // _MAX_DRAWINGS + 1]
    n_images = len(rects)
    rects.extend(drawn)
    if not rects:
        return np.zeros((0, 4))
    a = np.asarray(rects, dtype=float)
    a[:, 0] = np.clip(a[:, 0], 0, W)
    a[:, 2] = np.clip(a[:, 2], 0, W)
    a[:, 1] = np.clip(a[:, 1], 0, H)
    a[:, 3] = np.clip(a[:, 3], 0, H)
    w, h = a[:, 2] - a[:, 0], a[:, 3] - a[:, 1]
    keep = (w >= 0) & (h >= 0) & ((w > 1.5) | (h > 1.5))
    # page backgrounds and borders; a raster image inside the margins is a full-page figure
    image = np.arange(len(a)) < n_images
    in_margins = (a[:, 0] > 0.05 * W) & (a[:, 2] < 0.95 * W) & (a[:, 1] > 0.05 * H) & (a[:, 3] < 0.95 * H)
    keep &= ~(((w * h) > 0.6 * W * H) & ~(image & in_margins))
    edge_rule = keep & (h < 3) & (w > 0.5 * W) & ((a[:, 1] < 0.09 * H) | (a[:, 3] > 0.91 * H))
    if edge_rule.any():
        keep &= ~_page_rules(page, a, edge_rule)
    keep &= ~((w < 3) & (h > 0.6 * H))  # column separators
    keep &= ~((a[:, 3] < _MARGIN * H) | (a[:, 1] > (1 - _MARGIN) * H))  # wholly in the top/bottom margin:
    # running heads, publisher watermarks and logos ("This CVPR paper is the Open Access version ...")
    return a[keep]


def outlined_boxes(page: pymupdf.Page | None) -> np.ndarray:
    """Rects of the paths drawn with an outline (a stroke colour), as opposed to fill-only shading."""
    if page is None:
        return np.zeros((0, 4))
    try:
        paths = page.get_cdrawings()
    except Exception:  # noqa: BLE001
        log.debug("drawings failed on page %s", page.number, exc_info=True)
        return np.zeros((0, 4))
    rects = [tuple(p["rect"]) for p in paths if p.get("color") is not None and "s" in p.get("type", "")]
    return np.asarray(rects, dtype=float).reshape(-1, 4)


# ----------------------------------------------------------------------------- geometry
def union(rects) -> tuple[float, float, float, float]:
    """Bounding box of rectangles."""
    rs = list(rects)
    return (min(r[0] for r in rs), min(r[1] for r in rs), max(r[2] for r in rs), max(r[3] for r in rs))


def overlap_1d(a0, a1, b0, b1) -> float:
    """Length of the overlap of two intervals."""
    return max(0.0, min(a1, b1) - max(a0, b0))


def holds(outer, inner, tol: float = 2.0) -> bool:
    """Whether rectangle `outer` holds `inner`, but for `tol` points on each side."""
    return (outer[0] - tol <= inner[0] and outer[1] - tol <= inner[1] and inner[2] <= outer[2] + tol
            and inner[3] <= outer[3] + tol)


# ----------------------------------------------------------------------------- pages
@dataclass
class PageLayout:
    """One page: its text dict, visual lines and (on demand, once) its graphics."""

    number: int  # 0-based
    width: float
    height: float
    text: dict
    lines: list[Line]
    page: pymupdf.Page | None = None  # None for pages built from another source (no graphics)
    _graphics: np.ndarray | None = field(default=None, repr=False)
    body_marked: bool = False

    @property
    def rect(self) -> pymupdf.Rect:
        return pymupdf.Rect(0, 0, self.width, self.height)

    def graphics(self) -> np.ndarray:
        if self._graphics is None:
            self._graphics = page_graphics(self.page) if self.page is not None else np.zeros((0, 4))
        return self._graphics


def build_page(page: pymupdf.Page, number: int, text: dict | None = None) -> PageLayout:
    """The page model of a PyMuPDF page (one text extraction)."""
    if text is None:
        text = page.get_text("dict", flags=TEXT_FLAGS)
    r = page.rect
    return PageLayout(number, r.width or 612.0, r.height or 792.0, text, lines_from_dict(text, number), page)


@dataclass
class DocumentLayout:
    """Document-wide typography used to tell body text from figure text: body font size (most
    common size by characters) and the text columns (from the widths of body lines)."""

    pages: list[PageLayout]
    body_size: float = 10.0
    two_column: bool = False
    text_x0: float = 0.0
    text_x1: float = 612.0
    page_w: float = 612.0
    # top and bottom of the running text (lines of the body's size); unknown: the whole page
    text_y0: float = float("inf")
    text_y1: float = float("-inf")

    def mark_body(self, page: PageLayout) -> None:
        """Flag lines of body-text paragraphs: blocks of several long, dense lines in the body font."""
        if page.body_marked:
            return
        page.body_marked = True
        mark_body(page.lines, self)


def doc_stats(pages_lines: list[list[Line]], page_w: float) -> DocumentLayout:
    """Body size and text columns of a document given its pages' lines."""
    sizes: Counter = Counter()
    for mono in (False, True):  # code listings are never body text (in a manual they may outweigh it)
        for lines in pages_lines:
            for ln in lines:
                if ln.horizontal and ln.monospaced == mono:
                    sizes[round(ln.size * 2) / 2] += len(ln.text)
        if sizes:
            break
    st = DocumentLayout(pages=[], page_w=page_w)
    if not sizes:
        st.text_x1 = page_w
        return st
    st.body_size = sizes.most_common(1)[0][0]
    widths, x0s, x1s, y0s, y1s = [], [], [], [], []
    for lines in pages_lines:
        for ln in lines:
            if ln.horizontal and abs(ln.size - st.body_size) <= 0.6 and len(ln.text) >= 40:
                widths.append(ln.x1 - ln.x0)
                x0s.append(ln.x0)
                x1s.append(ln.x1)
                y0s.append(ln.y0)
                y1s.append(ln.y1)
    if widths:
        st.two_column = float(np.median(widths)) < 0.5 * page_w
        st.text_x0 = float(np.percentile(x0s, 5))
        st.text_x1 = float(np.percentile(x1s, 95))
        st.text_y0 = float(np.percentile(y0s, 2))
        st.text_y1 = float(np.percentile(y1s, 98))
    else:
        st.text_x0, st.text_x1 = 0.05 * page_w, 0.95 * page_w
    return st


def build_document(pages: list[PageLayout]) -> DocumentLayout:
    st = doc_stats([p.lines for p in pages], pages[0].width if pages else 612.0)
    st.pages = pages
    drop_line_numbers(pages, st)
    mark_running_heads(pages)
    return st


_BARE_NUMBER_RE = re.compile(r"^\d{1,5}$")
LINE_NUMBERS_MIN = 5  # numbers in one margin column of a page before they count as line numbers


def drop_line_numbers(pages: list[PageLayout], st: DocumentLayout) -> None:
    """Leave out a review copy's line numbers: bare numbers in a column beside the running text
    (wholly left or right of it), counting up down the page, at least LINE_NUMBERS_MIN of them,
    with a column at that edge on many pages (repeat_min, or every page of a shorter document: a
    code listing's own line numbers, printed on a page or two, stay with it). They are no text of
    the paper: kept, they run into its sentences and a figure or table beside them grows out to
    the margin to take them."""
    need = repeat_min(len(pages)) or len(pages)
    found: list[tuple[PageLayout, str, float, list[Line]]] = []
    for p in pages:
        numbers = [ln for ln in p.lines if ln.horizontal and _BARE_NUMBER_RE.match(ln.text.strip())]
        # left of the text set flush right, right of it flush left: one column shares that edge
        for side, edged in (("left", [(ln.x1, ln) for ln in numbers if ln.x1 <= st.text_x0 + 2]),
                            ("right", [(ln.x0, ln) for ln in numbers if ln.x0 >= st.text_x1 - 2])):
            for edge, col in _columns(edged):
                col.sort(key=lambda ln: ln.y0)
                values = [int(ln.text) for ln in col]
                if len(col) >= LINE_NUMBERS_MIN and all(a < b for a, b in zip(values, values[1:])):
                    found.append((p, side, edge, col))
    for p, side, edge, col in found:
        pages_alike = {q.number for q, s, e, _ in found if s == side and abs(e - edge) <= 3}
        if len(pages_alike) >= need:
            drop = {id(ln) for ln in col}
            p.lines = [ln for ln in p.lines if id(ln) not in drop]


def _columns(edged: list[tuple[float, Line]], tol: float = 3.0) -> list[tuple[float, list[Line]]]:
    """Lines grouped by a shared edge (the group's first edge, its lines): sorted by it, a new group
    wherever it jumps by more than tol."""
    out: list[tuple[float, list[Line]]] = []
    last = None
    for edge, ln in sorted(edged, key=lambda t: t[0]):
        if last is None or edge - last > tol:
            out.append((edge, []))
        out[-1][1].append(ln)
        last = edge
    return out


# Running heads and feet repeat page after page; on a tight layout (a head 0.09 of the page height
# down, the body starting just below it) they sit lower than the margin, so repeated text is looked
# for in this wider band of the page's height. The parser (dropping them from the text) and the page
# model (keeping them out of figures) count repeats by the same three rules below.
REPEAT_BAND = 0.12


def in_band(ln: Line, height: float, band: float) -> bool:
    """The line's centre lies in the top or bottom `band` of its page's height."""
    return ln.yc < band * height or ln.yc > (1 - band) * height


def furniture_key(text: str) -> str:
    """What repeats of one running head or foot share: digits read alike, so page numbers match."""
    return re.sub(r"\d+", "#", text.lower())[:80]


def repeat_min(n_pages: int) -> int | None:
    """On how many pages a text must recur to be a running head or foot; None under 3 pages."""
    return max(2, int(0.3 * n_pages + 0.5)) if n_pages >= 3 else None


def mark_running_heads(pages: list[PageLayout], tol: float = 2.0) -> None:
    """Flag running heads and feet: lines in the page's top or bottom band whose text recurs at
    the same height on many pages. A head set in the body's size and as long as a body line (a
    journal's author names) is no figure's title, whatever the body's measured top says. A bare
    number must also recur at the same place across: all numbers read alike, and a review copy's
    line numbers stand at every line's height in the margins, so a tick label or a table's cell at
    the top of a page would otherwise pass for a page number."""
    need = repeat_min(len(pages))
    if need is None:
        return
    seen: dict[str, list[tuple[int, Line]]] = {}
    cands: list[tuple[Line, str]] = []
    for p in pages:
        for ln in p.lines:
            if not ln.horizontal or not in_band(ln, p.height, REPEAT_BAND):
                continue
            key = furniture_key(" ".join(ln.text.split()))
            if not key.strip():
                continue
            seen.setdefault(key, []).append((p.number, ln))
            cands.append((ln, key))
    for ln, key in cands:
        bare = not any(ch.isalpha() for ch in key)
        if len({pno for pno, o in seen[key] if abs(o.yc - ln.yc) <= tol
                and (not bare or overlap_1d(o.x0 - tol, o.x1 + tol, ln.x0, ln.x1) > 0)}) >= need:
            ln.running_head = True


def build_layout(doc: pymupdf.Document, max_pages: int | None = None) -> DocumentLayout:
    """The page model of a document: one text extraction per page, shared by every stage."""
    n = len(doc) if max_pages is None else min(len(doc), max_pages)
    pages = []
    for i in range(n):
        try:
            pages.append(build_page(doc[i], i))
        except Exception:  # noqa: BLE001 - one broken page must not lose the others
            log.warning("text extraction failed on page %d", i + 1, exc_info=True)
            pages.append(PageLayout(i, 612.0, 792.0, {"blocks": []}, [], None))
    return build_document(pages)


def paragraph_blocks(lines: list[Line], st: DocumentLayout, size_tol: float = 0.6) -> list[list[Line]]:
    """Blocks of running text: several long, dense lines, one per row, mostly in a font within
    `size_tol` points of the body's (a wider tolerance also finds an abstract or footnotes set a
    point smaller)."""
    by_block: dict[int, list[Line]] = {}
    for ln in lines:
        by_block.setdefault(ln.block, []).append(ln)
    col_w = (st.text_x1 - st.text_x0) / (2 if st.two_column else 1)
    out = []
    for blk in by_block.values():
        hl = [ln for ln in blk if ln.horizontal]
        if not hl:
            continue
        chars = sum(len(ln.text) for ln in hl)
        body_chars = sum(len(ln.text) for ln in hl if abs(ln.size - st.body_size) <= size_tol)
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
            out.append(blk)
    return out


def mark_body(lines: list[Line], st: DocumentLayout) -> None:
    """Flag lines of body-text paragraphs: blocks of several long, dense lines in the body font.
    Lines in a typewriter font of another size than the body's are no running text, even in a
    paragraph's block (printed output set right under a caption, in the caption's block)."""
    for blk in paragraph_blocks(lines, st):
        for ln in blk:
            if not (ln.monospaced and abs(ln.size - st.body_size) > 0.6):
                ln.body = True


def column_span(bbox, st: DocumentLayout) -> tuple[float, float]:
    """Horizontal extent a caption's graphic probably occupies (its column or the full text width).
    `st` is any body-text geometry with text_x0, text_x1, two_column and page_w: the page model
    of born-digital pages or the one OCR lines give scanned pages."""
    x0, x1 = bbox[0], bbox[2]
    full = (min(st.text_x0, x0), max(st.text_x1, x1))
    if not st.two_column:
        return full
    mid = (st.text_x0 + st.text_x1) / 2
    centre, tol = (x0 + x1) / 2, 0.02 * st.page_w  # a short label centred on the page ("TABLE 5") is full width
    if x1 - x0 < 0.55 * (st.text_x1 - st.text_x0):
        if x1 <= mid + 0.05 * st.page_w and centre < mid - tol:
            return (min(st.text_x0, x0), max(mid, x1))
        if x0 >= mid - 0.05 * st.page_w and centre > mid + tol:
            return (min(mid, x0), max(st.text_x1, x1))
    return full


def big_graphics(graphics: np.ndarray) -> np.ndarray:
    """Graphics large enough to hold a text box."""
    if not len(graphics):
        return graphics
    return graphics[((graphics[:, 2] - graphics[:, 0]) > 30) & ((graphics[:, 3] - graphics[:, 1]) > 15)]


def inside_graphic(r: tuple, big: np.ndarray) -> bool:
    """A text block drawn inside a figure's box: the box holds its height and its width but for a
    few points (glyph overhang, a frame drawn tight around the text with no padding)."""
    if not len(big):
        return False
    slack = max(4.0, 0.03 * (r[2] - r[0]))
    across = np.minimum(big[:, 2], r[2]) - np.maximum(big[:, 0], r[0])
    return bool(((big[:, 1] <= r[1] + 2) & (big[:, 3] >= r[3] - 2) & (across >= r[2] - r[0] - slack)).any())


def furniture_zone(ln: Line, st: DocumentLayout) -> bool:
    """A running head repeated on many pages, or in the top or bottom 9% of its page, where running
    heads and page numbers sit, and outside the running text's lines (a plot title at the top of
    the text block is not a running head)."""
    if ln.running_head:
        return True
    h = st.pages[ln.page].height if ln.page < len(st.pages) else 792.0
    return (ln.yc < 0.09 * h and ln.y1 < st.text_y0 + 1) or (ln.yc > 0.91 * h and ln.y0 > st.text_y1 - 1)
