"""Caption detection: which lines start a figure or table caption, and how far each caption goes.

A caption must start a paragraph and carry a delimiter or a distinct label style ("Figure 3:",
"Fig. 3.", a bold "FIGURE 3"), so body sentences such as "Figure 3 shows ..." are rejected. A
caption then grows over the following lines until a gap, a size/style change or a new label.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

import pymupdf

from app.labels import CAPTION_DELIMS, CAPTION_RE, MULTI_REF_RE, kind_of
from app.ingest.hyphenation import join_lines
from app.ingest.layout import (TEXT_FLAGS, DocumentLayout, Line, column_span, doc_stats, is_bold, lines_from_dict,
                               mark_body, overlap_1d, union)

__all__ = ["Caption", "captions_from_lines", "facing_page_caption", "find_captions", "labelled_caption"]



@dataclass
class Caption:
    """A detected caption with the evidence used to rank duplicates."""

    kind: str
    number: int
    word: str
    lines: list[Line]
    bbox: tuple[float, float, float, float]
    text: str
    score: float
    horizontal: bool = True
    label_alone: bool = False
    extra: dict = field(default_factory=dict)


def _style(span: dict) -> tuple[str, bool]:
    """Font identity without the subset prefix, plus boldness."""
    font = span.get("font", "").split("+")[-1]
    return (font, is_bold(span))


def _label_split(line: Line, end: int) -> tuple[list[dict], list[dict]]:
    """Spans carrying the first ``end`` characters (the label) vs. the rest."""
    label, rest, n = [], [], 0
    for s in line.spans:
        (label if n < end else rest).append(s)
        n += len(s["text"].lstrip() if n == 0 else s["text"])
    return label, rest


def _predecessor(line: Line, lines: list[Line]) -> Line | None:
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


def _delimited(rest: str) -> bool:
    """The label is followed by a delimiter ("Figure 3:", "Fig. 3."), not by "., " or ".)"."""
    return rest[:1] != "" and rest[:1] in CAPTION_DELIMS and not rest[:2].startswith((".,", ".)"))


def _caption_from_line(line: Line, lines: list[Line], st: DocumentLayout) -> Caption | None:
    """Decide whether a line starting with a label is a caption (not a body reference)."""
    m = CAPTION_RE.match(line.text)
    if not m:
        return None
    word, rest = m.group("word"), m.group("rest")
    kind = kind_of(word)
    rest_s = rest.lstrip()
    if rest_s[:1] and rest_s[:1] in "),;]":
        return None  # "(see Fig. 3), ..." wrapped onto a new line: a reference
    if MULTI_REF_RE.match(rest):
        return None  # "Figures 11-13. ...", "Figs. 2 and 3": a reference to several figures
    delim = _delimited(rest_s)
    label_alone = rest_s in ("", ":", ".", "|") or rest_s[:1] in ":|" and len(rest_s) <= 2
    label_spans, rest_spans = _label_split(line, m.end("num"))
    style_diff = False
    if label_spans and rest_spans:
        lab = Counter(_style(s) for s in label_spans).most_common(1)[0][0]
        rst = Counter(_style(s) for s in rest_spans).most_common(1)[0][0]
        style_diff = lab != rst
    elif label_spans and not rest_spans:
        style_diff = any(is_bold(s) for s in label_spans)
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


def labelled_caption(line: Line, lines: list[Line], st: DocumentLayout) -> Caption | None:
    """The caption starting at `line` when it opens with a label and a delimiter ("Figure 6:",
    "Fig. 6."), grown over its continuation lines, whatever the lines around it: for a line found
    where a missing figure's caption is expected (inside another figure's region), where the
    paragraph rules of _caption_from_line do not apply."""
    m = CAPTION_RE.match(line.text)
    if not m or MULTI_REF_RE.match(m.group("rest")):
        return None
    if not _delimited(m.group("rest").lstrip()):
        return None
    cap = Caption(kind_of(m.group("word")), int(m.group("num")), m.group("word"), [line], line.rect, line.text,
                  0.0, horizontal=line.horizontal)
    _extend_caption(cap, lines, st)
    return cap


def _caption_font(line: Line) -> tuple[str, bool] | None:
    """Dominant style of the caption text (ignoring the label)."""
    if not line.spans:
        return None
    return Counter(_style(s) for s in line.spans[-3:]).most_common(1)[0][0]


def _extend_caption(cap: Caption, lines: list[Line], st: DocumentLayout, rules: tuple = ()) -> None:
    """Grow a caption over the following lines until a gap, size/style change, a new label or a
    horizontal rule (`rules`: (x0, x1, y) of the page's rules) drawn between two lines: a table's
    top rule under its caption, its header rows below."""
    first = cap.lines[0]
    if not first.horizontal:
        return
    size = first.size
    used = {id(first)}
    # the rest of the first row when PyMuPDF reports it as lines of its own (a taller glyph of
    # another font, such as an enclosed number, starts a new line): pieces level with the label
    # that start within a word gap of it
    # (pieces of the label's own text block may stand further apart: a justified row of a narrow
    # side caption, "Figure 1:      Default      ordination")
    row_x1 = first.x1
    for o in sorted(lines, key=lambda o: o.x0):
        if (id(o) not in used and o.horizontal and abs(o.size - size) <= 0.6 and abs(o.y0 - first.y0) < 0.3 * size
                and -size <= o.x0 - row_x1 <= (3.0 if o.block == first.block else 1.5) * size):
            used.add(id(o))
            cap.lines.append(o)
            row_x1 = max(row_x1, o.x1)
    ranges = [(first.x0, row_x1)]
    if cap.label_alone or (row_x1 - first.x0) < 0.3 * (st.text_x1 - st.text_x0):
        lo, hi = column_span(cap.bbox, st)
        ranges.append((min(first.x0, lo), max(row_x1, hi)))  # a short first line: the text may go on wider
    style = _caption_font(first)
    all_bold = not cap.label_alone and all(is_bold(s) for s in first.spans if s["text"].strip())
    cur = first
    span = (first.x0, row_x1)  # the caption's x-extent so far

    def next_line(xa: float, xb: float) -> Line | None:
        best = None
        for o in lines:
            if id(o) in used or not o.horizontal or o.y0 < cur.y0 + 0.5 * size:
                continue
            if o.y0 - cur.y1 > 0.55 * size:
                continue
            if overlap_1d(o.x0, o.x1, *span) <= 0:
                continue  # under the caption, not beside it (text wrapped around a small table)
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
        if any(cur.yc < y < nxt.yc and overlap_1d(x0, x1, nxt.x0, nxt.x1) >= 0.5 * (nxt.x1 - nxt.x0)
               for x0, x1, y in rules):
            break
        m = CAPTION_RE.match(nxt.text)
        if m and not MULTI_REF_RE.match(m.group("rest")) and cap.lines[-1].text.rstrip()[-1:] in ".!?:;":
            break  # a new label after a finished sentence; after "(see" it is the caption's own text
        if nxt.block != cur.block and style is not None and _caption_font(nxt) != style and len(cap.lines) > 1:
            break
        if cap.kind == "table" and cur is first and all_bold and first.text.rstrip()[-1:] not in ".!?" \
                and not any(is_bold(s) for s in nxt.spans if s["text"].strip()):
            break  # a table caption set wholly in bold, then a line with no bold mid-sentence: the table's first row
        # same row continuation (split cell) or next row; a piece of the row must lie within the
        # caption's range as the line itself must: the row of a caption beside it (side-by-side
        # figures) is not part of this caption
        row = [o for o in lines if id(o) not in used and o.horizontal and abs(o.y0 - nxt.y0) < 1.5
               and min(o.x1, rb + 0.5 * size) - max(o.x0, ra - 0.5 * size) >= 0.6 * (o.x1 - o.x0)]
        row.sort(key=lambda o: o.x0)
        # the row's cells: pieces level with it that reach into the caption's range at all (a row
        # header set out to the left of a centred caption)
        level = sorted((o for o in lines if id(o) not in used and o.horizontal and abs(o.y0 - nxt.y0) < 1.5
                        and overlap_1d(o.x0, o.x1, ra, rb) > 0), key=lambda o: o.x0)
        cells = any(b.x0 - a.x1 > 2 * size for a, b in zip(level, level[1:]))
        if cap.kind == "table" and cap.lines[-1].text.rstrip()[-1:] in ".:" and len(level) >= 3 \
                and all(b.x0 - a.x1 > size for a, b in zip(level, level[1:])):
            cells = True  # a finished caption, then three pieces or more set apart: the header row of column names
        if cells and (cap.kind == "table" or cap.lines[-1].text.rstrip()[-1:] in ".:"):
            # a row of separate cells: the table under its caption (under a figure's caption, only
            # after a finished sentence)
            break
        for o in row:
            used.add(id(o))
            cap.lines.append(o)
        cur = nxt
        span = (min([span[0], nxt.x0] + [o.x0 for o in row]), max([span[1], nxt.x1] + [o.x1 for o in row]))
        if cap.label_alone and style is None:
            style = _caption_font(nxt)
    cap.bbox = union([ln.rect for ln in cap.lines])
    cap.text = join_caption_lines([ln.text for ln in cap.lines])


def join_caption_lines(parts: list[str]) -> str:
    """Join caption lines, undoing end-of-line hyphenation (born-digital and OCR'd captions alike)."""
    return re.sub(r"\s+", " ", join_lines(parts)).strip()


def find_captions(page: pymupdf.Page, pdict: dict | None = None, stats: DocumentLayout | None = None) -> list[Caption]:
    """Captions on one page (usable standalone; extract_figures passes doc-level stats)."""
    if pdict is None:
        pdict = page.get_text("dict", flags=TEXT_FLAGS)
    lines = lines_from_dict(pdict, page.number)
    if stats is None:
        stats = doc_stats([lines], page.rect.width)
    mark_body(lines, stats)
    return captions_from_lines(lines, stats)


def captions_from_lines(lines: list[Line], st: DocumentLayout, rules: tuple = ()) -> list[Caption]:
    """All captions of a page, each extended over its continuation lines (never past one of the
    page's horizontal `rules`, (x0, x1, y) each)."""
    caps = []
    for ln in lines:
        if ln.text[:1] not in "FfTt":
            continue
        cap = _caption_from_line(ln, lines, st)
        if cap is not None:
            caps.append(cap)
    claimed = {id(c.lines[0]) for c in caps}
    for cap in caps:
        _extend_caption(cap, [ln for ln in lines if id(ln) not in claimed or ln is cap.lines[0]], st, rules)
        if len(cap.lines) > 1:
            claimed.update(id(ln) for ln in cap.lines)
    return caps


def facing_page_caption(text: str, page: int, others: list[tuple[int, str]]) -> str:
    """A full-page figure often carries only its label ("Fig. 1.") while its caption is printed on
    the facing page: a caption of three words or fewer takes the longest text of its label found
    on an adjacent page (`others`: (page, text) of every caption with that label)."""
    if len(text.split()) > 3:
        return text
    longer = [t for p, t in others if abs(p - page) == 1 and len(t) > len(text)]
    return max(longer, key=len) if longer else text
