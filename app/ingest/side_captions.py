"""Side captions: a figure standing beside its caption rather than above or below it (Nature and
Science set the caption in a narrow column at the figure's left, with its notes under it; a small
plot may stand at the left of a caption wider than half the text, or beside its caption within one
column of a two-column page). Tried only when what lies above and below the caption is not the
figure: nothing drawn, only the ends of a graphic standing beside the caption, or a region that
took in the caption's notes (notes.py)."""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from app.ingest.captions import Caption
from app.ingest.layout import DocumentLayout, Line, column_span, holds, overlap_1d, union
from app.ingest.region_growth import grow_text, grow_touching
from app.ingest.types import Region


def beside_caption(cap: Caption, above: Region, below: Region, lines: list[Line], caps: list[Caption],
                   graphics: np.ndarray, obstacles: list[tuple], st: DocumentLayout, page_rect) -> Region | None:
    """The graphic beside a figure's caption when nothing lies above or below it but the ends of
    that graphic (a plot standing beside its caption, reaching past it): looked for at the
    caption's right, then its left, across the text and then within the caption's own column.
    None when there is none, or when the regions above and below are not all inside it."""
    if (above.has_graphics or below.has_graphics) and not _pieces_of_one_graphic(above, below, graphics, cap.bbox,
                                                                                  st.body_size):
        return None
    for in_column, right in ((False, True), (False, False), (True, True), (True, False)):
        side = search_side(cap, right, lines, caps, graphics, obstacles, st, page_rect, in_column)
        if side.has_graphics and all(r.rect is None or holds(side.rect, r.rect) for r in (above, below)):
            return side
    return None


def beside_caption_and_notes(cap: Caption, notes: tuple, found: tuple[Region, Region], lines: list[Line],
                             caps: list[Caption], graphics: np.ndarray, obstacles: list[tuple], st: DocumentLayout,
                             page_rect) -> Region | None:
    """When a region found above or below a narrow caption took in its notes (notes.caption_notes),
    the figure is the plot standing beside the caption and its notes: that graphic (at their right,
    then their left), unless it holds the notes too. None otherwise."""
    if not any(r.rect is not None and _meets(r.rect, notes) for r in found):
        return None
    with_notes = replace(cap, bbox=union([cap.bbox, notes]))
    caps_n = [with_notes if c is cap else c for c in caps]
    side = next((r for right in (True, False) for r in [search_side(with_notes, right, lines, caps_n, graphics,
                                                                    obstacles, st, page_rect)] if r.has_graphics), None)
    return side if side is not None and not _meets(side.rect, notes) else None


def _meets(r: tuple, o: tuple) -> bool:
    """Two rects overlapping by more than two points each way."""
    return overlap_1d(r[0], r[2], o[0], o[2]) > 2 and overlap_1d(r[1], r[3], o[1], o[3]) > 2


def search_side(cap: Caption, right: bool, lines: list[Line], caps: list[Caption], graphics: np.ndarray,
                obstacles: list[tuple], st: DocumentLayout, page_rect, in_column: bool = False) -> Region:
    """Collect a graphic beside a caption that leaves room for one (side captions: Nature and Science
    put the caption in a narrow column at the figure's left; a one-column paper may set a small
    plot at the left of a caption wider than half the text). Only graphics that start level with
    the caption, between the body paragraphs above and below, with no other caption in that band.
    `in_column`: only inside the caption's own text column (a small plot and its caption side by
    side within one column of a two-column page, the other column's text level with both)."""
    none = Region(None, float("inf"), False)
    cx0, cy0, cx1, cy1 = cap.bbox
    tx0, tx1 = min(st.text_x0, cx0), max(st.text_x1, cx1)
    body_like = sum(ln.body for ln in cap.lines) * 2 > len(cap.lines)
    if len(graphics) == 0 or cx1 - cx0 > 0.7 * (tx1 - tx0) or (body_like and cap.score < 2):
        # a caption across most of the text, or body text that starts with "Figure 3 ..." (a caption set in
        # the body font still counts when its label is set apart by a colon or its own style)
        return none
    sx0, sx1 = (cx1, tx1) if right else (tx0, cx0)
    if in_column:
        col = column_span(cap.bbox, st)
        if col == (tx0, tx1):
            return none  # the caption is not inside one column
        sx0, sx1 = (cx1, col[1]) if right else (col[0], cx0)
    if sx1 - sx0 < 0.2 * (tx1 - tx0):
        return none
    top, bot = 0.0, page_rect.height
    for r in obstacles:
        if overlap_1d(r[0], r[2], sx0, sx1) < 0.25 * min(r[2] - r[0], sx1 - sx0):
            continue
        if r[3] <= cy0 + 2:
            top = max(top, r[3])
        elif r[1] >= cy0 - 2:
            bot = min(bot, r[1])
        else:
            return none  # body text or another caption beside the caption's first line
    for o in caps:
        if o is not cap and overlap_1d(o.bbox[0], o.bbox[2], sx0, sx1) > 0 and overlap_1d(o.bbox[1], o.bbox[3], top, bot) > 0:
            return none
    g = graphics
    vy = (g[:, 1] >= top - 1) & (g[:, 3] <= bot + 1)
    side = (g[:, 0] >= sx0 - 2) if right else (g[:, 2] <= sx1 + 2)
    if in_column:
        side &= (g[:, 2] <= sx1 + 2) if right else (g[:, 0] >= sx0 - 2)
    level = (g[:, 1] <= cy1) & (g[:, 3] >= cy0 + st.body_size)
    sel = vy & side & level
    if not sel.any():
        return none
    u = grow_touching(g, sel, vy)  # panels below the caption's end
    cap_ids = {id(l2) for c in caps for l2 in c.lines}
    pool = [ln for ln in lines if not ln.body and id(ln) not in cap_ids and ln.y0 >= top - 1 and ln.y1 <= bot + 1
            and (ln.x0 >= cx1 - 2 if right else ln.x1 <= cx0 + 2)]
    u = grow_text(u, pool, st)
    if u[2] - u[0] < 0.15 * (tx1 - tx0) or u[3] - u[1] < 3 * st.body_size:
        return none
    gap = (u[0] - cx1) if right else (cx0 - u[2])
    return Region(tuple(u), max(gap, 0.0), True, (u[2] - u[0]) * (u[3] - u[1]), side=True)


def _pieces_of_one_graphic(above: Region, below: Region, g: np.ndarray, cap: tuple, line: float) -> bool:
    """The regions found above and below a caption are both the ends of graphics that run on level
    with the caption, wholly to one side of it (the tick labels over and under a plot set beside
    its caption)."""
    if not len(g) or not any(r.has_graphics for r in (above, below)):
        return False
    level = (g[:, 1] < cap[1]) & (g[:, 3] > cap[3])  # spans the caption's whole height
    beside = level & ((g[:, 2] <= cap[0]) | (g[:, 0] >= cap[2]))
    if not beside.any():
        return False
    x0, x1 = float(g[beside, 0].min()), float(g[beside, 2].max())
    # tick labels and an axis title may stand out to the graphics' left
    return all(r.rect[0] >= x0 - 4 * line and r.rect[2] <= x1 + 1.2 * line for r in (above, below) if r.rect is not None)
