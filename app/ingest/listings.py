"""Code listings on a page: text blocks all in a typewriter font near the body's size, with the
grey shading or the frame of strokes drawn around them. A listing beyond a figure's drawing ends the
figure's region as a paragraph does; with no drawing between it and the caption the listing is the
figure itself, and its own shading or frame is no drawing (regions.py). A table printed by a code
chunk ends at that chunk, unless the typewriter block is one of the table's own rows."""
from __future__ import annotations

import numpy as np

from app.ingest.captions import Caption, captions_from_lines
from app.ingest.layout import (DocumentLayout, Line, PageLayout, big_graphics, holds, outlined_boxes, overlap_1d,
                               union)


def code_listings(page: PageLayout, graphics: np.ndarray, st: DocumentLayout, with_body: bool = False) -> list[tuple]:
    """Rects of code listings: text blocks all in a typewriter font near the body's size (code set
    much smaller is a figure's content, as in a drawn pipeline), with a few words. A block inside
    a graphic much larger than itself is a label of a drawing, not a listing; a grey shading close
    around the code is the listing's own; code in an outlined box is left alone (a framed listing
    is often set into a figure with the output it makes). `with_body` also reads typewriter lines
    taken for running text (long code lines are as dense as prose)."""
    lines = page.lines
    blocks: dict[int, list[Line]] = {}
    for ln in lines:
        if ln.horizontal and (not ln.body or (with_body and ln.monospaced)):
            blocks.setdefault(ln.block, []).append(ln)
    big = big_graphics(graphics)
    outlined = None
    out = []
    for blk in blocks.values():
        if not all(ln.monospaced and ln.size >= 0.7 * st.body_size for ln in blk):
            continue
        r = union([ln.rect for ln in blk])
        holders = big[(big[:, 0] <= r[0] + 2) & (big[:, 1] <= r[1] + 2) & (big[:, 2] >= r[2] - 2)
                      & (big[:, 3] >= r[3] - 2)] if len(big) else big
        if len(holders) and (holders[:, 3] - holders[:, 1] > r[3] - r[1] + 4 * st.body_size).any():
            # a holder much taller than the block is a drawing the block labels, unless all the
            # text inside it is code (a shaded chunk whose lines are blocks of their own)
            inside = [ln for ln in lines if ln.horizontal and any(holds(h, ln.rect) for h in holders)]
            code = union([ln.rect for ln in inside])
            if (holders[:, 3] - holders[:, 1] > code[3] - code[1] + 4 * st.body_size).any() or not all(
                    ln.monospaced and not ln.body and ln.size >= 0.7 * st.body_size for ln in inside):
                continue
        if sum(len(ln.text.split()) for ln in blk) < 3 and not len(holders):
            continue  # a short bare line; on its own shading it is a one-line chunk
        if len(holders):
            outlined = outlined_boxes(page.page) if outlined is None else outlined
            if any(len(outlined) and (np.abs(outlined - h).max(axis=1) <= 1.5).any() for h in holders):
                continue
        # the listing's own shading or frame (as wide as the column, a line or so taller) is part of it
        out.append(tuple(union([r] + [tuple(h) for h in holders])))
    return out


def framed_listings(listings: list[tuple], lines: list[Line], graphics: np.ndarray, line: float) -> list[tuple]:
    """Listings drawn in a frame of separate strokes (a rule over and under the code, often with
    uprights at its sides and a label set into the top rule) take their frame in: the frame's
    rules are the listing's, not a figure's under or over it. The listings of one frame (one block
    per code line) become one. A frame is taken only when all the text inside it is code."""
    if not listings or not len(graphics):
        return listings
    g = graphics
    flat = (g[:, 3] - g[:, 1] <= 1.0) & (g[:, 2] - g[:, 0] >= 20)
    groups: list[list[float]] = []
    for r in sorted(listings, key=lambda r: r[1]):
        last = groups[-1] if groups else None
        if last is not None and r[1] - last[3] <= 1.5 * line and overlap_1d(r[0], r[2], last[0], last[2]) > 0:
            last[:] = list(union([tuple(last), r]))
        else:
            groups.append(list(r))
    flat_g = g[flat]
    out = []
    for r in groups:
        members = [m for m in listings if holds(tuple(r), m, 0.5)]
        framed = _listing_frame(r, flat_g, lines, line)
        if framed is not None:
            out.append(framed)
            continue
        for m in members:  # a frame around one block of a run of listings
            framed = _listing_frame(m, flat_g, lines, line) if len(members) > 1 else None
            out.append(framed if framed is not None else m)
    return out


def _listing_frame(r, flat: np.ndarray, lines: list[Line], line: float) -> tuple | None:
    """A listing's rect grown to the frame around it: the widest level of flat strokes from a line
    and a half over it to its middle, spanning most of the listing, and the nearest level under its
    middle with the same extent; None with no such frame or with other text than code inside it."""
    mid = (r[1] + r[3]) / 2
    yc = (flat[:, 1] + flat[:, 3]) / 2

    def widest(lo: float, hi: float) -> tuple | None:
        best = None
        cand, cy = flat[(yc >= lo) & (yc <= hi)], yc[(yc >= lo) & (yc <= hi)]
        for y in sorted({round(float(v)) for v in cy}):
            at = cand[np.abs(cy - y) <= 1]
            x0, x1 = float(at[:, 0].min()), float(at[:, 2].max())
            if overlap_1d(x0, x1, r[0], r[2]) >= 0.8 * (r[2] - r[0]) and (best is None or x1 - x0 > best[2] - best[1]):
                best = (float(y), x0, x1)
        return best

    top = widest(r[1] - 1.5 * line, mid)
    if top is None:
        return None
    # the frame's lower rule: the nearest level below of the same extent (other code may lie between)
    below = flat[(yc > mid) & (np.abs(flat[:, 0] - top[1]) <= 2)]
    ends = sorted(float((a[1] + a[3]) / 2) for a in below
                  if abs(flat[(np.abs(yc - (a[1] + a[3]) / 2) <= 1), 2].max() - top[2]) <= 2)
    if not ends:
        return None
    bottom = (ends[0], top[1], top[2])
    frame = (min(top[1], r[0]), top[0] - 1, max(top[2], r[2]), bottom[0] + 1)
    inside = [ln for ln in lines if ln.horizontal and frame[1] <= ln.yc <= frame[3]
              and frame[0] <= (ln.x0 + ln.x1) / 2 <= frame[2]]
    if not inside or not all(ln.monospaced and not ln.body for ln in inside):
        return None
    return tuple(union([tuple(r), frame]))


def listing_shading(g: np.ndarray, listings: list[tuple]) -> np.ndarray:
    """Graphics lying within a code listing's rect (its grey shading or frame)."""
    own = np.zeros(len(g), dtype=bool)
    for r in listings:
        own |= (g[:, 0] >= r[0] - 1) & (g[:, 1] >= r[1] - 1) & (g[:, 2] <= r[2] + 1) & (g[:, 3] <= r[3] + 1)
    return own


def drawing_before(g: np.ndarray, cb: tuple, bound: float, span: tuple, listings: list[tuple], line: float) -> bool:
    """A drawing between a caption and a listing beyond it (graphics within the caption's span, not
    level with any listing as a listing's own shading or frame is, two lines tall or more; a rule
    is not one): the figure lies there, so the listing ends it; with none, the figure is the
    listing itself."""
    if not len(g):
        return False
    lo, hi = (bound, cb[1]) if bound <= cb[1] else (cb[3], bound)
    m = (g[:, 1] >= lo - 1) & (g[:, 3] <= hi + 1) & (np.minimum(g[:, 2], span[1]) - np.maximum(g[:, 0], span[0]) > 0)
    for r in listings:
        m &= ~((g[:, 3] > r[1] - 6) & (g[:, 1] < r[3] + 6))
    return bool(m.any()) and float(g[m, 3].max() - g[m, 1].min()) >= 2 * line


def table_row(r: tuple, up: bool, g: np.ndarray, lines: list[Line], caps: list[Caption], line: float) -> bool:
    """A typewriter block that is a row of a table (a header of model names set in code font), not
    a listing: a horizontal rule runs across it or lies beyond its far edge within two lines, with
    no caption or running text between (the table's top rule, or a cmidrule between header rows)."""
    if not len(g):
        return False
    y = (g[:, 1] + g[:, 3]) / 2
    across = np.minimum(g[:, 2], r[2]) - np.maximum(g[:, 0], r[0]) > 0
    flat = (g[:, 3] - g[:, 1] <= 1.0) & (g[:, 2] - g[:, 0] >= 20) & across
    near = r[3] - 1 if up else r[1] + 1  # the rule under the row on the caption's side is not enough
    cand = flat & ((y >= r[1] - 2 * line) & (y < near) if up else (y <= r[3] + 2 * line) & (y > near))
    cap_ids = {id(ln) for c in caps for ln in c.lines}
    for yr in y[cand]:
        lo, hi = (yr, r[1]) if up else (r[3], yr)
        if not any((ln.body or id(ln) in cap_ids) and ln.yc > lo and ln.yc < hi
                   and overlap_1d(ln.x0, ln.x1, r[0], r[2]) > 0 for ln in lines):
            return True
    return False


def short_of_listings(m: tuple, region: tuple | None, cap: tuple, page: PageLayout, st: DocumentLayout,
                      graphics: np.ndarray) -> tuple | None:
    """The layout model's table box cut short of a code listing it takes in beyond the table's
    region (the chunk that printed the table, boxed with it), unless the listing is a row of the
    table (a typewriter header under the table's top rule). None when nothing is left."""
    line = st.body_size
    caps = captions_from_lines(page.lines, st)
    for r in code_listings(page, graphics, st, with_body=True):
        if overlap_1d(r[0], r[2], m[0], m[2]) <= 2 or overlap_1d(r[1], r[3], m[1], m[3]) <= 1:
            continue
        if region is not None and overlap_1d(r[1], r[3], region[1], region[3]) > 1:
            continue  # what the geometry already took is not in question
        up = cap[1] >= r[3] - 2  # the listing above the caption: the box ends under it
        if not up and r[1] < cap[3] - 2:
            continue  # level with the caption
        if table_row(r, up, graphics, page.lines, caps, line):
            continue
        m = (m[0], max(m[1], r[3]), m[2], m[3]) if up else (m[0], m[1], m[2], min(m[3], r[1]))
        if m[3] - m[1] < line:
            return None
    return m
