"""How a figure region grows from the graphics first found next to its caption: through the
graphics touching them (a wide figure over a narrow caption) and through the figure's own text
(tick labels, legends, axis and panel titles, labels printed over each other). Running text is
left out of the pool of lines by the caller, so a region never grows through it."""
from __future__ import annotations

import numpy as np

from app.ingest.layout import DocumentLayout, Line, furniture_zone, overlap_1d, union


def grow_touching(g: np.ndarray, sel: np.ndarray, within: np.ndarray, rounds: int = 6) -> list:
    """Bounding box of the selected graphics grown through graphics (among `within`) that touch it."""
    sel = sel.copy()
    u = list(union(g[sel]))
    for _ in range(rounds):
        touch = within & ~sel & (g[:, 0] <= u[2] + 3) & (g[:, 2] >= u[0] - 3) & (g[:, 1] <= u[3] + 3) & (g[:, 3] >= u[1] - 3)
        if not touch.any():
            break
        sel |= touch
        u = list(union(g[sel]))
    return u


def grow_text(u: list, pool: list[Line], st: DocumentLayout, span: tuple | None = None) -> list:
    """Add short text lines touching the graphic (ticks, legends, axis titles, sub-captions; text
    smaller than the body's up to a line away: panel titles) and, given the caption's column
    span, small-type lines inside it level with the graphic (panels of a grid drawn as text, such
    as scatter plots of word labels, beside the panel that holds a graphic). A rotated line level with
    the graphic may stand a line and a half beside it (a y-axis title set two lines out from the
    axis, its tick labels between)."""
    px, py = 0.8 * st.body_size, 0.5 * st.body_size
    added = set()
    stacked = _overprinted(pool) if span is not None else set()
    for _ in range(4):
        changed = False
        for ln in pool:
            if id(ln) in added:
                continue
            # text smaller than the body's is figure text: a panel title may sit a line away
            # (not in the running-head zone at the page's top and bottom)
            small = ln.size < st.body_size - 0.5  # body-size lines beside a graphic are text wrapped around it
            pad = 1.2 * st.body_size if small and not furniture_zone(ln, st) else py
            side = 1.5 * st.body_size if not ln.horizontal and ln.y0 >= u[1] - pad and ln.y1 <= u[3] + pad else px
            touching = ln.x0 <= u[2] + side and ln.x1 >= u[0] - side and ln.y0 <= u[3] + pad and ln.y1 >= u[1] - pad
            level = span is not None and (small or id(ln) in stacked) and u[1] <= ln.yc <= u[3] and \
                overlap_1d(ln.x0, ln.x1, span[0], span[1]) >= 0.5 * (ln.x1 - ln.x0)
            if touching or level:
                added.add(id(ln))
                u = [min(u[0], ln.x0), min(u[1], ln.y0), max(u[2], ln.x1), max(u[3], ln.y1)]
                changed = True
        if not changed:
            break
    return u


def _overprinted(pool: list[Line]) -> set[int]:
    """Ids of horizontal lines printed over another (rows closer than half their height, overlapping
    across): the crowded labels of a legend or axis, never running text, whatever their size."""
    hl = sorted((ln for ln in pool if ln.horizontal), key=lambda ln: ln.y0)
    out = set()
    for i, a in enumerate(hl):
        for b in hl[i + 1:]:
            if b.y0 >= a.y1:
                break
            h = min(a.y1 - a.y0, b.y1 - b.y0)
            if overlap_1d(a.y0, a.y1, b.y0, b.y1) > 0.5 * h and overlap_1d(a.x0, a.x1, b.x0, b.x1) > 0.5 * min(
                    a.x1 - a.x0, b.x1 - b.x0):
                out.update((id(a), id(b)))
    return out
