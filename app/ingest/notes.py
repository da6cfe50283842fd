"""Notes set under a caption are read with the caption, not cropped with its figure or table: the
prose under a narrow caption (a side caption's notes, side_captions.py) and a table's paragraph
starting "Note." right under its bottom rule."""
from __future__ import annotations

import re

import numpy as np

from app.ingest.captions import Caption
from app.ingest.layout import DocumentLayout, Line, big_graphics, column_span, inside_graphic, union
from app.ingest.types import Region


def caption_notes(cap: Caption, lines: list[Line], caps: list[Caption], graphics: np.ndarray,
                  st: DocumentLayout) -> tuple | None:
    """The rect of the notes set under a narrow caption (at most 0.6 of its column's width): two or
    more lines of prose in about the body's size, within the caption's width (or out to the
    column's right edge, for a caption in the column's right half) and starting at its left edge,
    the first within three lines of the caption, words running on as in a sentence (ten or more,
    most lines three or more), not inside a drawing. None when there are none."""
    line = st.body_size
    cx0, cy0, cx1, cy1 = cap.bbox
    col = column_span(cap.bbox, st)
    if cx1 - cx0 > 0.6 * (col[1] - col[0]):
        return None  # a caption across its column (of a one- or two-column page)
    # a caption in the right half of its column may have notes running on to the column's right edge
    right = max(cx1, col[1]) if cx0 + cx1 > col[0] + col[1] else cx1
    cap_ids = {id(ln) for c in caps for ln in c.lines}
    big = big_graphics(graphics)
    pool = sorted((ln for ln in lines if ln.horizontal and id(ln) not in cap_ids and not ln.body
                   and abs(ln.size - line) <= 0.6 and ln.x0 >= cx0 - 2 and ln.x1 <= right + 2 and ln.y0 >= cy1 - 1
                   and not inside_graphic(ln.rect, big)), key=lambda ln: ln.y0)
    if not pool or pool[0].y0 - cy1 > 3 * line or abs(pool[0].x0 - cx0) > 2:
        return None
    run = [pool[0]]
    for ln in pool[1:]:  # lines of the notes follow each other, a paragraph gap apart at most
        if ln.y0 - max(o.y1 for o in run) > 1.5 * line:
            break
        run.append(ln)
    rows = {round(ln.y0) for ln in run}
    words = [len(ln.text.split()) for ln in run]
    if len(rows) < 2 or sum(words) < 10 or sum(w >= 3 for w in words) < 0.5 * len(run):
        return None
    return union([ln.rect for ln in run])


_TABLE_NOTE_RE = re.compile(r"^\s*Notes?\s*[.:]")


def without_table_note(reg: Region, cap: Caption, lines: list[Line], graphics: np.ndarray,
                       st: DocumentLayout) -> Region:
    """A table under its caption ends at its bottom rule when what follows the rule inside the
    region is the table's note (a paragraph starting "Note." right under a rule as wide as the
    table): the note is read with the caption, as a note under a caption is."""
    if reg.rect is None or not len(graphics):
        return reg
    x0, y0, x1, y1 = reg.rect
    line = st.body_size
    g = graphics
    rules = g[(g[:, 3] - g[:, 1] <= 1.0) & (g[:, 2] - g[:, 0] >= 0.8 * (x1 - x0)) & (g[:, 1] > y0 + line)
              & (g[:, 3] < y1)]
    for ln in sorted(lines, key=lambda ln: ln.y0):
        if not (ln.horizontal and _TABLE_NOTE_RE.match(ln.text) and x0 - 1 <= ln.x0 and ln.x1 <= x1 + 1
                and y0 < ln.y0 and ln.y1 <= y1 + 1):
            continue
        over = rules[(rules[:, 3] <= ln.yc) & (rules[:, 3] >= ln.y0 - line)] if len(rules) else rules
        if not len(over):
            continue
        rect = (x0, y0, x1, min(y1, float(over[:, 3].max()) + 0.5))
        return Region(rect, reg.gap, reg.has_graphics, (rect[2] - rect[0]) * (rect[3] - rect[1]), reg.side, reg.code)
    return reg
