"""Figure regions: the graphic that belongs to each caption.

For every caption, the area above (or below, or beside) it inside the caption's column span is
searched, bounded by the nearest body-text paragraph, another caption or the page edge; raster
images and vector drawings there are collected. The union grows through touching graphics (wide
figures) and short text lines (axis ticks, legends) but never through body paragraphs (text held
inside a frame or between the strokes of a drawing is the figure's, not body text). A region whose
edge still cuts a drawing grows along it to the whole connected drawing. Regions of one page that
still overlap are cut apart at the widest whitespace gap.

How a region grows is region_growth.py's; code listings that bound a region (listings.py), notes
read with their caption (notes.py) and figures beside their caption (side_captions.py) are rules
of their own modules.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

import numpy as np

from app.ingest.captions import Caption, captions_from_lines
from app.ingest.layout import (DocumentLayout, Line, PageLayout, big_graphics, column_span, furniture_zone,
                               in_page_margin, inside_graphic, overlap_1d, paragraph_blocks, union)
from app.ingest.listings import (code_listings, drawing_before, framed_listings, listing_shading,
                                 short_of_listings, table_row)
from app.ingest.notes import caption_notes, without_table_note
from app.ingest.region_growth import grow_text, grow_touching
from app.ingest.side_captions import beside_caption, beside_caption_and_notes
from app.ingest.types import Region

__all__ = ["CUT_DRAWING", "Candidate", "Region", "analyse_page", "choose_region", "convention", "crop_quality",
           "extend_cut_drawing", "fuse_layout", "fuse_piece", "one_region_each", "region_doubt", "split_overlaps"]


CUT_DRAWING = "graphic cut by the region's edge"  # a region_doubt reason that extend_cut_drawing can settle


@dataclass
class Candidate:
    """A caption with its chosen region, ready to rank and render."""

    cap: Caption
    page: int
    region: tuple | None
    has_graphics: bool
    score: float
    alternatives: tuple = ()  # the other regions found for the caption (re-tried when this one is doubtful)
    quality: str = "ok"  # see crop_quality
    piece: tuple | None = None  # a tiny region with a graphic given up for the other side's text (see fuse_piece)


def _rules(graphics: np.ndarray) -> tuple:
    """(x0, x1, y) of the horizontal rules among a page's graphics (a point high or less, at
    least 20 points long)."""
    if not len(graphics):
        return ()
    r = graphics[((graphics[:, 3] - graphics[:, 1]) <= 1.0) & ((graphics[:, 2] - graphics[:, 0]) >= 20)]
    return tuple((float(a[0]), float(a[2]), float((a[1] + a[3]) / 2)) for a in r)


def _body_blocks(lines: list[Line]) -> list[list[Line]]:
    """The page's body lines grouped by their text block, in the order the blocks first appear."""
    blocks: dict[int, list[Line]] = {}
    for ln in lines:
        if ln.body:
            blocks.setdefault(ln.block, []).append(ln)
    return list(blocks.values())


def _obstacles(lines: list[Line], caps: list[Caption], cap: Caption, graphics: np.ndarray) -> list[tuple]:
    """Rects that end a figure region: body paragraphs (not inside a graphic box) and other captions."""
    obs = [c.bbox for c in caps if c is not cap]
    big = big_graphics(graphics)
    for blk in _body_blocks(lines):
        r = union([ln.rect for ln in blk])
        if not inside_graphic(r, big):
            obs.append(r)
    return obs


def _text_columns(lines: list[Line], st: DocumentLayout, graphics: np.ndarray) -> list[tuple]:
    """Rects of the paragraphs of running text on a page (the body's, and an abstract or footnotes
    in a slightly smaller font), except text boxes drawn inside a figure."""
    big = big_graphics(graphics)
    rects = [union([ln.rect for ln in blk]) for blk in paragraph_blocks(lines, st, size_tol=1.5)]
    return [r for r in rects if not inside_graphic(r, big)]


def _column_walls(columns: list[tuple], u: list, span: tuple, line: float) -> tuple[float, float]:
    """How far a region may reach sideways: never into a paragraph of another text column level
    with it (an image whose transparent part runs over the abstract beside it)."""
    lo, hi = float("-inf"), float("inf")
    for r in columns:
        if overlap_1d(r[1], r[3], u[1], u[3]) < line or overlap_1d(r[0], r[2], *span) >= 0.25 * (r[2] - r[0]):
            continue
        if r[0] < span[0]:
            lo = max(lo, r[2] + 0.5 * line)  # half a line clear of the text, so no glyph edge shows
        else:
            hi = min(hi, r[0] - 0.5 * line)
    return lo, hi


def _bound(cb: tuple, obstacles, cap_rects: set, span: tuple, up: bool, height: float) -> tuple[float, bool]:
    """The nearest obstacle edge above/below a caption within its column span, and whether it is
    another caption's."""
    cx0, cy0, cx1, cy1 = cb
    bound, by_caption = (0.0 if up else height), False
    for r in obstacles:
        if overlap_1d(r[0], r[2], *span) < 0.25 * min(r[2] - r[0], span[1] - span[0]):
            continue
        if r not in cap_rects and (r[2] <= cx0 or r[0] >= cx1):
            continue  # a paragraph wholly beside the caption (text wrapped around a small table or figure)
        if up and r[3] <= cy0 + 2 and r[1] < cy0 and r[3] >= bound:
            bound, by_caption = r[3], r in cap_rects
        elif not up and r[1] >= cy1 - 2 and r[3] > cy1 and r[1] <= bound:
            bound, by_caption = r[1], r in cap_rects
    return bound, by_caption


def _table_listing_bound(cap: Caption, up: bool, bound: float, span: tuple, lines: list[Line], caps: list[Caption],
                         g: np.ndarray, listings: list[tuple], H: float, line: float) -> float | None:
    """Where a table printed by code ends: at the code listing beyond it (the chunk that printed
    it), when the table lies between (a drawing, and text in a font other than typewriter) and the
    listing is not one of the table's own rows. None when no listing ends the table first."""
    if not listings:
        return None
    near, _ = _bound(cap.bbox, listings, set(), span, up, H)
    if not (near > bound if up else near < bound):
        return None
    hit = [r for r in listings if abs((r[3] if up else r[1]) - near) < 0.5]
    if any(table_row(r, up, g, lines, caps, line) for r in hit):
        return None
    if not drawing_before(g, cap.bbox, near, span, listings, line):
        return None
    lo, hi = (near, cap.bbox[1]) if up else (cap.bbox[3], near)
    cap_ids = {id(ln) for c in caps for ln in c.lines}
    if not any(ln.horizontal and not ln.monospaced and id(ln) not in cap_ids and lo <= ln.yc <= hi
               and overlap_1d(ln.x0, ln.x1, *span) > 0.5 * (ln.x1 - ln.x0) for ln in lines):
        return None
    return near


def _search(cap: Caption, direction: str, lines: list[Line], caps: list[Caption], graphics: np.ndarray,
            obstacles: list[tuple], columns: list[tuple], st: DocumentLayout, page_rect, use_text: bool,
            listings: list[tuple] = (), plain: list[tuple] | None = None, printing: list[tuple] = ()) -> Region:
    """Collect the graphic region above/below a caption within its column span, never crossing
    into the text `columns` beside it. A code listing beyond the figure's drawing ends it as prose
    does (`listings` with the frames drawn around them, `plain` without); a table ends at the
    listing that printed it (`printing`: listings with those in running text, never framed, since a
    table's own rules would frame a typewriter header row)."""
    cx0, cy0, cx1, cy1 = cap.bbox
    sx0, sx1 = column_span(cap.bbox, st)
    # narrow the span when another caption sits at the same height (side-by-side figures)
    for o in caps:
        if o is cap or overlap_1d(o.bbox[1], o.bbox[3], cy0, cy1) <= 0:
            continue
        if o.bbox[0] >= cx1:
            sx1 = min(sx1, (cx1 + o.bbox[0]) / 2)
        elif o.bbox[2] <= cx0:
            sx0 = max(sx0, (o.bbox[2] + cx0) / 2)
    H = page_rect.height
    up = direction == "above"
    cap_rects = {c.bbox for c in caps}
    bound, bound_by_caption = _bound(cap.bbox, obstacles, cap_rects, (sx0, sx1), up, H)
    if listings and cap.kind == "figure":
        near, _ = _bound(cap.bbox, listings, set(), (sx0, sx1), up, H)
        if (near > bound if up else near < bound) and drawing_before(graphics, cap.bbox, near, (sx0, sx1), listings,
                                                                       st.body_size):
            bound, bound_by_caption = near, False
    if printing and cap.kind == "table":
        near = _table_listing_bound(cap, up, bound, (sx0, sx1), lines, caps, graphics, printing, H, st.body_size)
        if near is not None:
            bound, bound_by_caption = near, False
    ry0, ry1 = (bound, cy0) if up else (cy1, bound)
    if ry1 - ry0 < 4:
        return Region(None, float("inf"), False)
    g = graphics
    sel = np.zeros(len(g), dtype=bool)
    if len(g):
        # a vertical hairline (one side of a dashed frame) lying wholly in the band counts as half
        # a point wide (one reaching past it, like a plot's axis beside the caption, does not)
        whole = (g[:, 1] >= ry0 - 1) & (g[:, 3] <= ry1 + 1)
        half = np.where(whole, np.maximum(0.5 - (g[:, 2] - g[:, 0]), 0.0) / 2, 0.0)
        ix = np.clip(np.minimum(g[:, 2] + half, sx1) - np.maximum(g[:, 0] - half, sx0), 0, None)
        w = np.maximum(g[:, 2] - g[:, 0], 0.5)
        inside_y = _within_band(g, ry0, ry1, st.body_size, (sx0, sx1))
        sel = inside_y & (ix > 0) & (ix >= 0.5 * np.minimum(w, sx1 - sx0))
        if sel.any() and listings:
            # a listing's own shading is no drawing: with nothing else, the listing is text; a frame
            # of strokes around a listing is no drawing of a figure beside it, but a framed listing
            # with nothing else is a figure that keeps its frame
            plain = listings if plain is None else plain
            rest = sel & ~listing_shading(g, listings)
            if cap.kind == "figure" and rest.any():
                sel = rest
            elif not (sel & ~listing_shading(g, plain)).any():
                sel[:] = False
    cap_ids = {id(l2) for c in caps for l2 in c.lines}
    # rotated text (y-axis titles and tick labels) belongs to the graphic too, unless it is long
    # enough to be a margin stamp ("arXiv:... [cs.LG]")
    text_pool = [ln for ln in lines if not ln.body and id(ln) not in cap_ids and ln.y0 >= ry0 - 1
                 and ln.y1 <= ry1 + 1 and (ln.horizontal or ln.y1 - ln.y0 <= 0.25 * H)]
    if sel.any() or text_pool:
        # content beyond an empty band of three body lines belongs to something else (an
        # algorithm block, an uncaptioned listing above the figure)
        tx0, tx1 = sx0, sx1
        if cap.kind == "table" and sel.any():  # a table's rows reach as wide as its rules, past a narrow caption
            tx0, tx1 = min(sx0, float(g[sel][:, 0].min())), max(sx1, float(g[sel][:, 2].max()))
        spans = [tuple(r) for r in g[sel][:, [1, 3]]] + [
            (ln.y0, ln.y1) for ln in text_pool if overlap_1d(ln.x0, ln.x1, tx0, tx1) > 0.5 * (ln.x1 - ln.x0)]
        spans += _twin_frame_gaps(g[sel], st.body_size) + _rule_frames(g[sel], st.body_size)
        far = _content_reach(spans, up, 3.0 * st.body_size)
        if far is not None and not bound_by_caption and _drawing_parts_beyond(g[sel], text_pool, far, up, st):
            far = None  # the rows of one drawing set far apart, with nothing else up to the text or page edge
        if far is not None:
            ry0, ry1 = (max(ry0, far - 1), ry1) if up else (ry0, min(ry1, far + 1))
            if len(g):
                inside_y = _within_band(g, ry0, ry1, st.body_size, (sx0, sx1))
                sel &= inside_y
            text_pool = [ln for ln in text_pool if ln.y0 >= ry0 - 1 and ln.y1 <= ry1 + 1]
    has_g = bool(sel.any())
    if has_g:
        # grow through touching graphics (wide figures with a narrow caption)
        u = grow_touching(g, sel, inside_y)
        beside = _reach_beside_caption(g[sel], cap.bbox, up, obstacles)
        u[1], u[3] = max(u[1], ry0), min(u[3], ry1)  # a graphic running past the caption grows nothing there
        lo, hi = _column_walls(columns, u, (sx0, sx1), st.body_size)
        u[0], u[2] = max(u[0], lo), min(u[2], hi)
        text_pool = [ln for ln in text_pool if ln.x0 >= lo and ln.x1 <= hi]
        # text joins within the caption's column span, or as wide as the graphics go (a wide figure
        # over a narrow caption): never a chain of text pieces into the next column. A one-column
        # document has no next column: there words and numbers past both (tick labels of a plot wider
        # than the text) join too, but not glyph pieces of drawn shapes (boxes wider than their ink)
        reach = (min(sx0, u[0]), max(sx1, u[2]))
        u = grow_text(u, [ln for ln in text_pool if overlap_1d(ln.x0, ln.x1, *reach) >= 0.5 * (ln.x1 - ln.x0)
                          or (not st.two_column and any(ch.isalnum() for ch in ln.text))],
                      st, (sx0, sx1))
        u = _fill_to_caption(u, text_pool, cap, up)
        if up and cap.kind == "figure":
            u = _plot_title(u, text_pool, st, g)
    elif use_text:
        # text alone is content only inside the margins: a running head over a table is not
        u = _text_region([ln for ln in text_pool if ln.horizontal and not in_page_margin(ln.y0, ln.y1, H)], cap, up, st)
        if u is None:
            return Region(None, float("inf"), False)
        u, code = u
    else:
        return Region(None, float("inf"), False)
    u[1], u[3] = max(u[1], ry0), min(u[3], ry1)
    if has_g and beside is not None:
        u[1], u[3] = (u[1], max(u[3], beside)) if up else (min(u[1], beside), u[3])
    if has_g:
        u = _labels_beside_caption(u, cap, up, lines, caps, obstacles, st)
    if u[3] - u[1] < 2 or u[2] - u[0] < 2:
        return Region(None, float("inf"), False)
    gap = (cy0 - u[3]) if up else (u[1] - cy1)
    return Region(tuple(u), max(gap, 0.0), has_g, (u[2] - u[0]) * (u[3] - u[1]), code=not has_g and code)


def _reach_beside_caption(g: np.ndarray, cap: tuple, up: bool, obstacles: list[tuple]) -> float | None:
    """How far graphics of the region run on beside their caption (a caption set level with the
    lower part of a picture, at its side): those graphics keep that part, up to the next body
    paragraph or caption. None when no graphic passes the caption's edge beside it (a graphic
    under the caption itself is cut at the caption: its caption is printed over a blank part)."""
    cx0, cy0, cx1, cy1 = cap
    side = (g[:, 2] <= cx0 + 1) | (g[:, 0] >= cx1 - 1)
    past = side & ((g[:, 3] > cy0 + 2) if up else (g[:, 1] < cy1 - 2))
    if not past.any():
        return None
    p = g[past]
    x0, x1 = p[:, 0].min(), p[:, 2].max()
    if up:
        reach = float(p[:, 3].max())
        stops = [r[1] for r in obstacles if r[1] > cy0 and overlap_1d(r[0], r[2], x0, x1) > 0]
        return min([reach] + stops)
    reach = float(p[:, 1].min())
    stops = [r[3] for r in obstacles if r[3] < cy1 and overlap_1d(r[0], r[2], x0, x1) > 0]
    return max([reach] + stops)


def _labels_beside_caption(u: list, cap: Caption, up: bool, lines: list[Line], caps: list[Caption],
                           obstacles: list[tuple], st: DocumentLayout) -> list:
    """The text of a picture that runs on beside its caption (a small plot with its caption at its
    side, level with the plot's lower edge: the x-axis's tick labels and title stand beside the
    caption, past its first line). Only when the caption lies wholly beside the region, and only
    text touching the picture (through other such text), up to the next body paragraph or caption."""
    cx0, cy0, cx1, cy1 = cap.bbox
    right = cx0 >= u[2] - 2  # the caption at the region's right
    if not right and cx1 > u[0] + 2:
        return u
    stops = [r[1] if up else r[3] for r in obstacles if overlap_1d(r[0], r[2], u[0], u[2]) > 0
             and (r[1] > cy0 if up else r[3] < cy1)]
    stop = (min(stops, default=float("inf"))) if up else max(stops, default=float("-inf"))
    cap_ids = {id(ln) for c in caps for ln in c.lines}
    pool = [ln for ln in lines if not ln.body and id(ln) not in cap_ids
            and (ln.x1 <= cx0 + 1 if right else ln.x0 >= cx1 - 1)
            and ((ln.y0 >= cy0 - 1 and ln.y1 <= stop) if up else (ln.y1 <= cy1 + 1 and ln.y0 >= stop))]
    return grow_text(u, pool, st) if pool else u


def _plot_title(u: list, pool: list[Line], st: DocumentLayout, g: np.ndarray) -> list:
    """A plot's title over it (R's main title: a line in about the body's size, or up to 1.5 times
    it inside the running text's extent, as lattice sets its titles; centred over the plot and
    inside its width, set up to two body lines above it), on the side away from the caption:
    alone on its row, or one of a row of panel titles, each centred over a panel (a drawing at
    least five lines wide at the region's top, `g` the page's graphics). Code, a
    heading or body text set flush left over a centred plot is not centred inside it; a table's
    row has other cells level with it that stand over no panel of their own."""
    line = st.body_size
    panels = g[(g[:, 1] <= u[1] + line) & (g[:, 3] > u[1]) & (g[:, 2] - g[:, 0] >= 5 * line)
               & (g[:, 0] >= u[0] - 1) & (g[:, 2] <= u[2] + 1)] if len(g) else g

    def centred(ln: Line, x0: float, x1: float) -> bool:
        w = x1 - x0
        return (ln.x0 >= x0 + 0.05 * w and ln.x1 <= x1 - 0.05 * w
                and abs((ln.x0 + ln.x1) / 2 - (x0 + x1) / 2) <= 0.15 * w)

    def title_like(ln: Line) -> bool:
        # up to two lines above; up to three (the empty band that ends a region's content) when
        # no other text lies above it over the plot (a 3-D box drawn lower in its plot area) and
        # it lies within the running text's extent (not a running head over a figure at the top)
        alone = ln.y0 >= st.text_y0 - 1 and not any(o.y1 <= ln.y0 and overlap_1d(o.x0, o.x1, u[0], u[2]) > 0
                                                    for o in pool)
        reach = 3 * line if alone else 2 * line
        # a title larger than 1.2 times the body's only inside the running text's extent (not a
        # slide's or section's heading at the top of the page)
        big = 1.5 * line if ln.y0 >= st.text_y0 - 1 else 1.2 * line
        return (ln.horizontal and 0 < u[1] - ln.y1 <= reach and ln.size <= big
                and any(ch.isalnum() for ch in ln.text) and not furniture_zone(ln, st))

    def panel_of(ln: Line) -> int | None:
        return next((k for k, p in enumerate(panels) if centred(ln, p[0], p[2])), None)

    best = None
    for ln in pool:
        if not title_like(ln) or (best is not None and ln.y1 <= best[0].y1):
            continue
        row = [o for o in pool if o is not ln and overlap_1d(o.y0, o.y1, ln.y0, ln.y1) > 0.5 * (ln.y1 - ln.y0)
               and overlap_1d(o.x0, o.x1, u[0], u[2]) > 0]
        if not row:
            if centred(ln, u[0], u[2]) or panel_of(ln) is not None:
                best = [ln]
            continue
        over = [panel_of(o) if title_like(o) else None for o in [ln] + row]
        if None not in over and len(set(over)) == len(over):
            best = [ln] + row
    return list(union([tuple(u)] + [ln.rect for ln in best])) if best is not None else u


def _twin_frame_gaps(g: np.ndarray, body_size: float) -> list[tuple]:
    """The gaps between framed boxes stacked one over the other (two prompt boxes, a question box
    over a narrower answer box set off to one side): parts of one figure however far apart they
    are set. Stacked: they share at least half of the narrower one's width, or are aligned on a
    common left edge, right edge or centre."""
    if not len(g):
        return []
    w, h = g[:, 2] - g[:, 0], g[:, 3] - g[:, 1]
    frames = g[(w > 10 * body_size) & (h > 2 * body_size)]
    out = []
    tol = 0.5 * body_size
    fw = frames[:, 2] - frames[:, 0]
    for a in frames:
        aligned = (np.abs(frames[:, 0] - a[0]) < tol) | (np.abs(frames[:, 2] - a[2]) < tol) | \
            (np.abs(frames[:, 0] + frames[:, 2] - a[0] - a[2]) < 2 * tol)
        shared = np.minimum(frames[:, 2], a[2]) - np.maximum(frames[:, 0], a[0]) >= 0.5 * np.minimum(fw, a[2] - a[0])
        twins = frames[(aligned | shared) & (frames[:, 1] >= a[3])]
        if len(twins):
            out.append((float(a[3]), float(twins[:, 1].min())))
    return out


def _rule_frames(g: np.ndarray, body_size: float) -> list[tuple]:
    """The spans between two long horizontal rules of the same extent (an algorithm or a listing
    set between a rule above and a rule below): one framed piece however spaced its lines are."""
    if not len(g):
        return []
    r = g[((g[:, 3] - g[:, 1]) < 3) & ((g[:, 2] - g[:, 0]) > 10 * body_size)]
    r = r[np.argsort(r[:, 1])]
    return [(float(a[1]), float(b[3])) for a, b in zip(r, r[1:])
            if abs(a[0] - b[0]) < 2 and abs(a[2] - b[2]) < 2 and b[1] > a[3]]


def _drawing_parts_beyond(g: np.ndarray, pool: list[Line], reach: float, up: bool, st: DocumentLayout) -> bool:
    """Whether all the content past an empty band (beyond `reach`, away from the caption) is more
    of the same drawing: the rows of a diagram set far apart (four state diagrams in two rows).
    It is when it holds a drawn box, its text is only short labels on or beside its strokes, it
    stands over the near part's width, and the band is narrower than the near part is high. Code,
    prose, a table's rules and cells or a running head past the band keep it out."""
    if not len(g):
        return False
    line = st.body_size
    beyond_g = (g[:, 3] < reach - 1) if up else (g[:, 1] > reach + 1)
    near, rest = g[~beyond_g], g[beyond_g]
    if not len(near) or not len(rest):
        return False
    boxes = rest[((rest[:, 2] - rest[:, 0]) > line) & ((rest[:, 3] - rest[:, 1]) > line)]
    if not len(boxes):
        return False
    ru, nu = union(rest), union(near)
    rest_labels, near_labels = [], []
    for ln in pool:
        if not ((ln.y1 < reach - 1) if up else (ln.y0 > reach + 1)):
            if overlap_1d(ln.x0, ln.x1, nu[0] - line, nu[2] + line) > 0 and \
                    overlap_1d(ln.y0, ln.y1, nu[1] - line, nu[3] + line) > 0:
                near_labels.append(ln.rect)
            continue
        words = ln.text.split()
        if not ln.horizontal or (len(words) > 3 and not all(w.replace(".", "").isdigit() for w in words)):
            return False  # more than a short label or a row of tick numbers
        if overlap_1d(ln.x0, ln.x1, ru[0] - line, ru[2] + line) <= 0 or \
                overlap_1d(ln.y0, ln.y1, ru[1] - line, ru[3] + line) <= 0:
            return False
        rest_labels.append(ln.rect)
    if overlap_1d(ru[0], ru[2], nu[0], nu[2]) < 0.5 * min(ru[2] - ru[0], nu[2] - nu[0]):
        return False
    # each part with its labels (tick numbers under a plot's axis)
    ru, nu = union([ru] + rest_labels), union([nu] + near_labels)
    band = (nu[1] - ru[3]) if up else (ru[1] - nu[3])
    return band <= nu[3] - nu[1]


def _content_reach(spans: list[tuple], up: bool, max_gap: float) -> float | None:
    """How far the content next to a caption reaches: the vertical extents of the things found
    on one side, taken from the caption outwards until an empty band wider than `max_gap`."""
    if not spans:
        return None
    reach = None
    for a, b in sorted(spans, key=lambda ab: -ab[1] if up else ab[0]):
        if reach is None:
            reach = a if up else b
        elif (b < reach - max_gap) if up else (a > reach + max_gap):
            break
        else:
            reach = min(reach, a) if up else max(reach, b)
    return reach


def _within_band(g: np.ndarray, y0: float, y1: float, body_size: float, span: tuple) -> np.ndarray:
    """Graphics lying between y0 and y1. A graphic may reach a little past an edge (a raster
    image whose white margin runs under the caption's first line): up to 0.6 body lines and at
    most a fifth of its height; or, when two thirds of it lie inside and it keeps to the
    caption's column span, any distance (an image with a blank lower part that the caption is
    printed over). The region is cut to the band."""
    h = np.maximum(g[:, 3] - g[:, 1], 0.0)
    over = np.maximum(y0 - g[:, 1], 0.0) + np.maximum(g[:, 3] - y1, 0.0)
    in_span = (g[:, 0] >= span[0] - body_size) & (g[:, 2] <= span[1] + body_size)
    return (over <= np.maximum(1.0, np.minimum(0.6 * body_size, 0.2 * h))) | (
        (h > 3 * body_size) & (over <= h / 3) & in_span)


def _fill_to_caption(u: list, pool: list[Line], cap: Caption, up: bool) -> list:
    """Take in the text lines between the graphic and its caption (axis titles, legends and
    panel labels set a little apart from the plot): what lies between a figure and its own
    caption belongs to the figure. Only lines under (or over) the graphic's width count."""
    edge = cap.bbox[1] if up else cap.bbox[3]
    for _ in range(2):
        band = [ln for ln in pool if ln.horizontal and overlap_1d(ln.x0, ln.x1, u[0], u[2]) >= 0.5 * (ln.x1 - ln.x0)
                and ((ln.y0 >= u[3] - 1 and ln.y1 <= edge + 1) if up else (ln.y1 <= u[1] + 1 and ln.y0 >= edge - 1))]
        if not band:
            break
        u = list(union([tuple(u)] + [ln.rect for ln in band]))
    return u


def _text_region(pool: list[Line], cap: Caption, up: bool, st: DocumentLayout) -> tuple[list, bool] | None:
    """Contiguous non-body text next to the caption (text-only figures, tables), and whether it is
    a code listing: a figure whose text next to the caption is in a typewriter font ends at a
    line in the body's size and a roman font of another text block (the sentence that introduces
    the listing, too short to count as a paragraph)."""
    sx0, sx1 = column_span(cap.bbox, st)
    cand = [ln for ln in pool if overlap_1d(ln.x0, ln.x1, sx0, sx1) > 0.5 * (ln.x1 - ln.x0)]
    cand.sort(key=lambda ln: -ln.y1 if up else ln.y0)
    edge = cap.bbox[1] if up else cap.bbox[3]
    got: list[Line] = []
    code = cap.kind == "figure" and bool(cand) and cand[0].monospaced
    code_blocks = {ln.block for ln in pool if ln.monospaced}
    for ln in cand:
        d = (edge - ln.y1) if up else (ln.y0 - edge)
        if d > 2.2 * st.body_size:
            break
        if code and not ln.monospaced and ln.block not in code_blocks and ln.size >= st.body_size - 0.5:
            break
        got.append(ln)
        edge = min(edge, ln.y0) if up else max(edge, ln.y1)
    if not got:
        return None
    return list(union([ln.rect for ln in got])), code


def _unmark_framed_text(caps: list[Caption], lines: list[Line], graphics: np.ndarray, st: DocumentLayout) -> None:
    """Running text between two horizontal rules, the nearer of which touches a caption, is that
    caption's content (a prompt or an example printed as a table or figure), not body text: its
    lines stop being body lines, so they neither bound the region nor stay out of it. Beyond that
    frame, rules of the same extent go on framing the content while vertical rules join them
    (the rows of a ruled grid), the text between them is rows of cells (a table's body under its
    mid rule, `_cell_rows`) or there is no running text between them. The nearer rule may stand up
    to three lines from the caption when nothing lies in between (an algorithm between two thick
    rules, its caption a float's skip under them)."""
    if not len(graphics):
        return
    g = graphics
    flat = (g[:, 3] - g[:, 1]) < 3
    rules = g[flat & ((g[:, 2] - g[:, 0]) > 0.25 * (st.text_x1 - st.text_x0))]
    if len(rules) < 2:
        return
    uprights = g[((g[:, 2] - g[:, 0]) < 3) & ((g[:, 3] - g[:, 1]) > 3)]
    for cap in caps:
        if not cap.horizontal:
            continue
        sx0, sx1 = column_span(cap.bbox, st)
        wide = rules[np.minimum(rules[:, 2], sx1) - np.maximum(rules[:, 0], sx0) >= 0.5 * (sx1 - sx0)]
        for up in (True, False):
            # the rule just beyond the caption, or up to three lines off with nothing in between (an
            # algorithm set between two thick rules, its caption a float's skip away)
            near = wide[(wide[:, 3] <= cap.bbox[1] + 1) & (wide[:, 3] >= cap.bbox[1] - 3.5 * st.body_size)] if up else \
                wide[(wide[:, 1] >= cap.bbox[3] - 1) & (wide[:, 1] <= cap.bbox[3] + 3.5 * st.body_size)]
            if not len(near):
                continue
            a = near[np.argmax(near[:, 1])] if up else near[np.argmin(near[:, 1])]
            lo, hi = (a[3], cap.bbox[1]) if up else (cap.bbox[3], a[1])
            if hi - lo > 1.5 * st.body_size and (
                    any(ln.y1 > lo + 1 and ln.y0 < hi - 1 and overlap_1d(ln.x0, ln.x1, a[0], a[2]) > 0 for ln in lines)
                    or ((g[:, 3] > lo + 1) & (g[:, 1] < hi - 1) & (g[:, 2] > a[0]) & (g[:, 0] < a[2])).any()):
                continue  # something stands between the caption and that rule
            same = wide[(np.abs(wide[:, 0] - a[0]) < 5) & (np.abs(wide[:, 2] - a[2]) < 5)]
            first = True
            while True:
                far = same[same[:, 3] < a[1] - 1] if up else same[same[:, 1] > a[3] + 1]
                if not len(far):
                    break
                b = far[np.argmax(far[:, 3])] if up else far[np.argmin(far[:, 1])]
                y0, y1 = (b[3], a[1]) if up else (a[3], b[1])
                if any(o is not cap and o.bbox[1] < y1 and o.bbox[3] > y0
                       and overlap_1d(o.bbox[0], o.bbox[2], a[0], a[2]) > 0 for o in caps):
                    break  # another caption inside: not this caption's frame
                joined = ((uprights[:, 0] >= a[0] - 2) & (uprights[:, 2] <= a[2] + 2) & (uprights[:, 1] <= y0 + 2)
                          & (uprights[:, 3] >= y1 - 2)).any() if len(uprights) else False
                inside = [ln for ln in lines if ln.body and ln.y0 >= y0 - 1 and ln.y1 <= y1 + 1 and ln.x0 >= a[0] - 2
                          and ln.x1 <= a[2] + 2]
                if not (first or joined or not inside or _cell_rows(inside)):  # no running text: nothing ends it
                    break
                for ln in inside:
                    ln.body = False
                a, first = b, False


def _cell_rows(lines: list[Line]) -> bool:
    """Lines that are the rows of a table without uprights (a booktabs body under its mid rule):
    each row (the lines level with each other) split into cells by a gap of a font size or more,
    the gaps of all rows lining up on a common gutter. Prose lines have word gaps only."""
    rows: list[list[Line]] = []
    for ln in sorted(lines, key=lambda ln: ln.yc):
        if rows and overlap_1d(ln.y0, ln.y1, rows[-1][0].y0, rows[-1][0].y1) >= 0.5 * (ln.y1 - ln.y0):
            rows[-1].append(ln)
        else:
            rows.append([ln])
    gaps = []
    for row in rows:
        p = sorted(piece for ln in row for piece in ln.pieces)
        cuts = [(a[1], b[0]) for a, b in zip(p, p[1:]) if b[0] - a[1] >= row[0].size]
        if not cuts:
            return False
        gaps.append(cuts)
    return bool(gaps) and any(all(any(a <= (x0 + x1) / 2 <= b for a, b in cuts) for cuts in gaps[1:])
                              for x0, x1 in gaps[0])


def _unmark_text_among_strokes(lines: list[Line], graphics: np.ndarray, st: DocumentLayout,
                               caps: list[Caption]) -> None:
    """A line or two in the body font with strokes of a drawing right above and right below it
    (the sentence of a parse tree between its arcs, the words of a tree between its branches), or
    with strokes on one side and a caption right on the other (a dependency tree whose arcs are
    all drawn over its sentence), is figure text, not running text: it stops being a body line, so
    it neither bounds the region nor keeps the drawing out. Strokes count only when they are
    narrower than the text and not flat rules (a table's rules frame rows; a figure above a
    paragraph has its caption in between)."""
    if not len(graphics):
        return
    g = graphics
    line = st.body_size
    strokes = g[((g[:, 3] - g[:, 1]) > 2) & ((g[:, 2] - g[:, 0]) > 2)]
    if len(strokes) < 2:
        return
    for blk in _body_blocks(lines):
        if len(blk) > 2:
            continue
        x0, y0, x1, y1 = union([ln.rect for ln in blk])
        narrow = (strokes[:, 0] >= x0 - line) & (strokes[:, 2] <= x1 + line) & \
            (strokes[:, 2] - strokes[:, 0] < 0.8 * (x1 - x0))
        above = narrow & (strokes[:, 3] <= y0 + 0.5 * line) & (strokes[:, 3] >= y0 - line)
        below = narrow & (strokes[:, 1] >= y1 - 0.5 * line) & (strokes[:, 1] <= y1 + line)
        cap_below = any(0 <= c.bbox[1] - y1 <= 2.5 * line and overlap_1d(c.bbox[0], c.bbox[2], x0, x1) > 0.5 * (x1 - x0)
                        for c in caps)
        cap_above = any(0 <= y0 - c.bbox[3] <= 2.5 * line and overlap_1d(c.bbox[0], c.bbox[2], x0, x1) > 0.5 * (x1 - x0)
                        for c in caps)
        if (above.sum() >= 2 or cap_above) and (below.sum() >= 2 or cap_below) and above.sum() + below.sum() >= 2:
            for ln in blk:
                ln.body = False


def _label_inside_drawing(cap: Caption, graphics: np.ndarray) -> bool:
    """A bare label ("Table 1", nothing after it on its line or below it) drawn inside the frame
    of a drawing many lines high is a word of that drawing (a set's name in a Venn diagram, a box
    of a flow chart), not a caption: a caption set as its bare label stands in the text flow or
    goes on below it."""
    if not cap.label_alone or len(cap.lines) > 1 or not cap.horizontal or not len(graphics):
        return False
    x0, y0, x1, y1 = cap.bbox
    g, tol = graphics, 2.0
    frames = (g[:, 0] <= x0 + tol) & (g[:, 2] >= x1 - tol) & (g[:, 1] <= y0 + tol) & (g[:, 3] >= y1 - tol) & \
        ((g[:, 3] - g[:, 1]) >= 4 * (y1 - y0)) & ((g[:, 2] - g[:, 0]) >= 2 * (x1 - x0))
    return bool(frames.any())


def analyse_page(page: PageLayout, st: DocumentLayout, extra: list[Caption] = ()) -> list[tuple[Caption, Region, Region]]:
    """Captions of a page (and `extra` ones found otherwise) with their candidate regions above and
    below. A figure caption with no graphic on either side gets the graphic beside it as its
    "below" region (side captions)."""
    lines = page.lines
    caps = captions_from_lines(lines, st) + list(extra)
    if not caps:
        return []
    graphics = page.graphics()  # read only on pages with a caption
    rules = _rules(graphics)
    if rules:
        caps = captions_from_lines(lines, st, rules) + list(extra)
    caps = [c for c in caps if not _label_inside_drawing(c, graphics)]
    if not caps:
        return []
    _unmark_framed_text(caps, lines, graphics, st)
    _unmark_text_among_strokes(lines, graphics, st, caps)
    columns = _text_columns(lines, st, graphics)
    plain = code_listings(page, graphics, st)
    listings = framed_listings(plain, lines, graphics, st.body_size)
    printing = code_listings(page, graphics, st, with_body=True) if any(c.kind == "table" for c in caps) else []
    out = []
    for cap in caps:
        if not cap.horizontal:
            # a landscape figure: the page's graphics with their labels (text rotated with them)
            cap_ids = {id(ln) for c in caps for ln in c.lines}
            rect = tuple(grow_text(list(union(graphics)), [ln for ln in lines if not ln.body and id(ln) not in cap_ids],
                                   st)) if len(graphics) else None
            reg = Region(rect, 0.0, rect is not None)
            out.append((cap, reg, Region(None, float("inf"), False)))
            continue
        obs = _obstacles(lines, caps, cap, graphics)
        use_text = True
        above = _search(cap, "above", lines, caps, graphics, obs, columns, st, page.rect, use_text, listings, plain,
                        printing)
        below = _search(cap, "below", lines, caps, graphics, obs, columns, st, page.rect, use_text, listings, plain,
                        printing)
        notes = caption_notes(cap, lines, caps, graphics, st) if cap.kind == "figure" else None
        side = None if notes is None else beside_caption_and_notes(cap, notes, (above, below), lines, caps, graphics,
                                                                   obs, st, page.rect)
        if side is not None:
            # prose under a narrow caption, in its column, taken into a region: notes of a side
            # caption, so the figure is the plot standing beside the caption and its notes
            out.append((cap, Region(None, float("inf"), False), side))
            continue
        if cap.kind == "table":
            below = without_table_note(below, cap, lines, graphics, st)
        side = beside_caption(cap, above, below, lines, caps, graphics, obs, st, page.rect) if cap.kind == "figure" else None
        if side is not None:
            above, below = Region(None, float("inf"), False), side
        out.append((cap, above, below))
    return out


def choose_region(cap: Caption, above: Region, below: Region, prefer_above: bool) -> Region | None:
    """Pick the side holding the caption's graphic, following the document's convention."""
    first, second = (above, below) if prefer_above else (below, above)
    if first.has_graphics and (not second.has_graphics or first.gap <= second.gap + 30):
        return first
    if first.code and first.gap <= second.gap:
        return first  # a listing on the document's side of its captions, nearer than what lies beyond
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


def _same_content(r: tuple | None, o: tuple | None) -> bool:
    """Two regions holding the same content: their overlap is at least half the smaller one."""
    if r is None or o is None:
        return False
    inter = overlap_1d(r[0], r[2], o[0], o[2]) * overlap_1d(r[1], r[3], o[1], o[3])
    return inter > 0 and inter >= 0.5 * min((r[2] - r[0]) * (r[3] - r[1]), (o[2] - o[0]) * (o[3] - o[1]))


def one_region_each(analysed: list[tuple[int, Caption, Region, Region]],
                    prefer_above: dict[str, bool]) -> list[tuple[int, Caption, Region, Region]]:
    """Two captions of one kind never take one region. When the content below one caption is the
    content above the next (tables stacked in a column, with their captions all above or all below
    them), the captions of that stack take the same side, the side that gives more of them a
    region with graphics (then a region at all); a tie goes by the document's convention
    (`prefer_above`, per kind). The other side of each caption of the stack is dropped."""
    out = list(analysed)
    parent = list(range(len(out)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    linked = set()
    for i, (pi, ci, ai, bi) in enumerate(out):
        for j, (pj, cj, aj, bj) in enumerate(out):
            if i == j or pi != pj or ci.kind != cj.kind or not (ci.horizontal and cj.horizontal):
                continue
            if bi.side or aj.side or cj.bbox[1] < ci.bbox[3]:
                continue
            if _same_content(bi.rect, aj.rect):  # below caption i is above caption j
                parent[root(i)] = root(j)
                linked.update((i, j))
    stacks: dict[int, list[int]] = {}
    for i in sorted(linked):
        stacks.setdefault(root(i), []).append(i)
    none = Region(None, float("inf"), False)
    for members in stacks.values():
        def worth(k: int) -> tuple[int, int]:  # k: 2 for the regions above, 3 for those below
            regs = [out[m][k] for m in members]
            return sum(r.has_graphics for r in regs), sum(r.rect is not None for r in regs)
        up, down = worth(2), worth(3)
        take_above = up > down or (up == down and prefer_above[out[members[0]][1].kind])
        for m in members:
            p, c, a, b = out[m]
            out[m] = (p, c, a, none) if take_above else (p, c, none, b)
    return out


def convention(analysed: list[tuple[Caption, Region, Region]], kind: str) -> bool:
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


def split_overlaps(cands: list[Candidate], st: DocumentLayout) -> None:
    """Two regions of one page that overlap (e.g. a table right above a figure: the table grows
    down into the plot, the figure up into the table) are cut apart at the widest whitespace gap
    between them; the one whose caption is higher keeps the upper part. Regions whose captions
    stand side by side, on one row or in two columns, are cut at the gutter instead."""
    by_page: dict[int, list[Candidate]] = {}
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
                if overlap_1d(ra[0], ra[2], rb[0], rb[2]) <= 5 or overlap_1d(ra[1], ra[3], rb[1], rb[3]) <= 2:
                    continue
                if graphics is None:
                    graphics = st.pages[page_no].graphics()
                items = [ln.rect for ln in st.pages[page_no].lines] + [tuple(g) for g in graphics]
                # captions on one row, or in two columns (a figure grown across the gutter into the
                # other column's figure above that one's caption): cut at the widest vertical gutter
                side_by_side = overlap_1d(a.cap.bbox[1], a.cap.bbox[3], b.cap.bbox[1], b.cap.bbox[3]) > 0 or \
                    overlap_1d(a.cap.bbox[0], a.cap.bbox[2], b.cap.bbox[0], b.cap.bbox[2]) <= 0
                if side_by_side:
                    left, right = (a, b) if a.cap.bbox[0] <= b.cap.bbox[0] else (b, a)
                    # the gutter lies between the two captions' centres; for captions in the two
                    # columns of the page, near the middle between the columns
                    mid = (st.text_x0 + st.text_x1) / 2
                    if st.two_column and left.cap.bbox[2] <= mid + 0.02 * st.page_w <= right.cap.bbox[0] + 0.04 * st.page_w:
                        lo, hi = mid - 0.05 * st.page_w, mid + 0.05 * st.page_w
                    else:
                        lo = max(min(ra[0], rb[0]), (left.cap.bbox[0] + left.cap.bbox[2]) / 2)
                        hi = min(max(ra[2], rb[2]), (right.cap.bbox[0] + right.cap.bbox[2]) / 2)
                    y0, y1 = max(ra[1], rb[1]), min(ra[3], rb[3])
                    spans = [(r[0], r[2]) for r in items if overlap_1d(r[1], r[3], y0, y1) > 0 and r[2] > lo and r[0] < hi]
                    cut = _largest_gap(spans, lo, hi)
                    lr_, rr_ = left.region, right.region
                    if lr_[0] < cut < rr_[2]:
                        # each side ends where its ink ends, not at the middle of the gutter
                        lx1 = max((r[2] for r in items if r[0] >= lr_[0] - 1 and r[2] <= cut + 1
                                   and overlap_1d(r[1], r[3], lr_[1], lr_[3]) > 0), default=cut)
                        rx0 = min((r[0] for r in items if r[2] <= rr_[2] + 1 and r[0] >= cut - 1
                                   and overlap_1d(r[1], r[3], rr_[1], rr_[3]) > 0), default=cut)
                        left.region = (lr_[0], lr_[1], min(lr_[2], cut, lx1), lr_[3])
                        right.region = (max(rr_[0], cut, rx0), rr_[1], rr_[2], rr_[3])
                    continue
                upper, lower = (a, b) if a.cap.bbox[1] <= b.cap.bbox[1] else (b, a)
                lo = max(min(ra[1], rb[1]), (upper.cap.bbox[1] + upper.cap.bbox[3]) / 2)
                hi = min(max(ra[3], rb[3]), (lower.cap.bbox[1] + lower.cap.bbox[3]) / 2)
                if hi <= lo:
                    continue
                x0, x1 = max(ra[0], rb[0]), min(ra[2], rb[2])
                spans = [(r[1], r[3]) for r in items if overlap_1d(r[0], r[2], x0, x1) > 0 and r[3] > lo and r[1] < hi]
                cut = _largest_gap(spans, lo, hi)
                ur, lr = upper.region, lower.region
                if ur[1] < cut and lr[3] > cut:
                    upper.region = (ur[0], ur[1], ur[2], min(ur[3], cut))
                    lower.region = (lr[0], max(lr[1], cut), lr[2], lr[3])


_PAGE_NO_TEXT_RE = re.compile(r"^[\divxlcIVXLC]{1,5}$")


def crop_quality(kind: str, region: tuple | None, has_graphics: bool, page: PageLayout,
                 st: DocumentLayout) -> str:
    """'ok' or why a crop is doubtful: 'caption_only' (no region), 'tiny' (narrower than 2.5 body
    lines, or lower than that and no short table: a rule, a stray line, the wrapped lines of one
    cell; a header row over a row of numbers is whole), 'page_number' (the only text inside is a page number),
    'text_only' (a figure crop holding body paragraphs and no graphic)."""
    if region is None:
        return "caption_only"
    x0, y0, x1, y1 = region
    inside = [ln for ln in page.lines if ln.x0 >= x0 - 1 and ln.x1 <= x1 + 1 and ln.y0 >= y0 - 1 and ln.y1 <= y1 + 1]
    if not has_graphics and inside and all(_PAGE_NO_TEXT_RE.match(ln.text) for ln in inside):
        return "page_number"
    if (x1 - x0) < 2.5 * st.body_size or ((y1 - y0) < 2.5 * st.body_size and not _short_table(inside)):
        return "tiny"
    if kind == "figure" and not has_graphics:
        chars = sum(len(ln.text) for ln in inside)
        body_chars = sum(len(ln.text) for ln in inside if ln.body)
        if not inside or body_chars >= 0.5 * chars:
            return "text_only"
    return "ok"


def _text_rows(lines: list[Line]) -> list[int]:
    """The rows the horizontal lines make, top to bottom, each as its number of lines: lines level
    with each other (the cells of a table row) are one row; the wrapped lines of one cell, each set
    a little lower than the cell beside it, are rows of their own."""
    rows: list[list[float]] = []  # y0, y1, lines
    for ln in sorted((ln for ln in lines if ln.horizontal), key=lambda ln: ln.yc):
        r = rows[-1] if rows else None
        if r is not None and overlap_1d(ln.y0, ln.y1, r[0], r[1]) >= 0.5 * min(ln.y1 - ln.y0, r[1] - r[0]):
            r[0], r[1], r[2] = min(r[0], ln.y0), max(r[1], ln.y1), r[2] + 1
        else:
            rows.append([ln.y0, ln.y1, 1])
    return [int(r[2]) for r in rows]


def _short_table(lines: list[Line]) -> bool:
    """Two rows of text or more, one of them a row of cells (several lines level with each other):
    a whole table however low (a header and one row of numbers)."""
    rows = _text_rows(lines)
    return len(rows) >= 2 and max(rows) >= 2


def region_doubt(c: Candidate, page: PageLayout, st: DocumentLayout, graphics: np.ndarray,
                 taken: list[tuple]) -> str | None:
    """Why a candidate's region may not hold its whole figure or table, or None when the geometry
    is sure: no region or a doubtful crop; a graphic cut by the region's edge (an arc, a bracket or
    a branch that goes on past it); ink next to the region or its caption that no region of the
    page (`taken`) holds (the other half of a tree, a plot beside a caption); body-like text right
    beyond the region's far edge inside a graphic (the box of a second prompt, the words of a
    parse tree). Only such regions are worth asking the layout model about."""
    line = st.body_size
    cap = c.cap.bbox
    if c.quality != "ok" and c.region is not None:
        return c.quality
    if len(graphics):
        g = graphics
        held = np.zeros(len(g), dtype=bool)
        for r in taken:
            cx, cy = (g[:, 0] + g[:, 2]) / 2, (g[:, 1] + g[:, 3]) / 2
            held |= (cx >= r[0] - line) & (cx <= r[2] + line) & (cy >= r[1] - line) & (cy <= r[3] + line)
        near_to = c.region if c.region is not None else cap
        pad = 4 * line
        near = (g[:, 0] < near_to[2] + pad) & (g[:, 2] > near_to[0] - pad) & (g[:, 1] < near_to[3] + pad) & \
            (g[:, 3] > near_to[1] - pad) & ~held
        margin = (g[:, 3] < 0.07 * page.height) | (g[:, 1] > 0.93 * page.height)
        orphan = g[near & ~margin]
        if len(orphan):
            u = union(orphan)
            if (u[2] - u[0] > 2 * line and u[3] - u[1] > 2 * line) or len(orphan) >= 3:
                return "ink beside the region that no region holds"
    if c.region is None:
        return "no region"
    x0, y0, x1, y1 = c.region
    up = cap[1] >= y1 - 2  # caption below the region: the region's far edge is its top
    down = cap[3] <= y0 + 2
    if _cut_graphics(c.region, cap, graphics, page, line).any():
        return CUT_DRAWING
    # body text just beyond the far edge, with a graphic drawn through or around it
    far = [ln for ln in page.lines if ln.body and overlap_1d(ln.x0, ln.x1, x0, x1) > 0.5 * (ln.x1 - ln.x0)
           and ((up and 0 <= y0 - ln.y1 <= 1.5 * line) or (down and 0 <= ln.y0 - y1 <= 1.5 * line))]
    if far and len(graphics):
        blocks = {ln.block for ln in far}
        for b in blocks:
            r = union([ln.rect for ln in page.lines if ln.block == b and ln.body])
            g = graphics
            hit = (np.minimum(g[:, 2], r[2]) - np.maximum(g[:, 0], r[0]) > 2) & (np.minimum(g[:, 3], r[3]) - np.maximum(g[:, 1], r[1]) > 2)
            if hit.any():
                return "text inside a graphic beyond the region"
    return None


def _cut_graphics(region: tuple, cap: tuple, graphics: np.ndarray, page: PageLayout, line: float) -> np.ndarray:
    """Mask of the graphics that lie partly inside the region and go on past one of its edges by
    more than most of a line (not towards the caption, not page-sized backgrounds)."""
    g = graphics
    if not len(g):
        return np.zeros(0, dtype=bool)
    x0, y0, x1, y1 = region
    up, down = cap[1] >= y1 - 2, cap[3] <= y0 + 2
    ox, oy = np.minimum(g[:, 2], x1) - np.maximum(g[:, 0], x0), np.minimum(g[:, 3], y1) - np.maximum(g[:, 1], y0)
    # a hairline (a branch, a rule) is inside when it lies within the region across its thin side;
    # a graphic that starts at the region's edge (a table's uprights under the one rule a sliced
    # region holds) goes on from it
    in_x = (ox > 1) | ((g[:, 2] - g[:, 0] <= 1) & (ox >= 0))
    in_y = (oy > 1) | ((g[:, 3] - g[:, 1] <= 1) & (oy >= 0))
    inside = (in_x & in_y) | (in_x & (oy >= -0.5)) | (in_y & (ox >= -0.5))
    tol = 0.8 * line
    past = (g[:, 0] < x0 - tol) | (g[:, 2] > x1 + tol)
    if not down:
        past |= g[:, 1] < y0 - tol
    if not up:
        past |= g[:, 3] > y1 + tol
    small = (g[:, 2] - g[:, 0]) * (g[:, 3] - g[:, 1]) < 0.6 * page.width * page.height
    return inside & past & small


def _touching_closure(g: np.ndarray, seed: np.ndarray, allowed: np.ndarray, gap: float) -> np.ndarray:
    """The graphics connected to the seed ones through graphics whose boxes touch (within `gap`),
    among `allowed`: one drawing made of many paths (the arcs of a tree, the branches of a
    dendrogram, a box and its title bar)."""
    comp = seed & allowed
    frontier = comp.copy()
    while frontier.any():
        f = g[frontier]
        touch = ((g[:, None, 0] <= f[None, :, 2] + gap) & (g[:, None, 2] >= f[None, :, 0] - gap)
                 & (g[:, None, 1] <= f[None, :, 3] + gap) & (g[:, None, 3] >= f[None, :, 1] - gap)).any(axis=1)
        frontier = touch & allowed & ~comp
        comp |= frontier
    return comp


def _enclosed(ln: Line, ink: np.ndarray, line: float) -> bool:
    """A text line held by a drawing: inside one of its boxes, or with its strokes both above and
    below it within a line (the words of a parse tree between its arcs), or both left and right
    of it level with it (the nodes of a tree between their branches, a table's cell between its
    uprights, however wide the cell)."""
    if not len(ink):
        return False
    g = ink
    if ((g[:, 0] <= ln.x0 + 2) & (g[:, 1] <= ln.y0 + 2) & (g[:, 2] >= ln.x1 - 2) & (g[:, 3] >= ln.y1 - 2)).any():
        return True
    xs = (np.minimum(g[:, 2], ln.x1) - np.maximum(g[:, 0], ln.x0)) > 0
    ys = (np.minimum(g[:, 3], ln.y1) - np.maximum(g[:, 1], ln.y0)) > 0
    above = xs & (g[:, 3] <= ln.y0 + 2) & (g[:, 3] >= ln.y0 - 1.5 * line)
    below = xs & (g[:, 1] >= ln.y1 - 2) & (g[:, 1] <= ln.y1 + 1.5 * line)
    left = ys & (g[:, 2] <= ln.x0 + 2)
    right = ys & (g[:, 0] >= ln.x1 - 2)
    return bool((above.any() and below.any()) or (left.any() and right.any()))


def extend_cut_drawing(c: Candidate, page: PageLayout, st: DocumentLayout, graphics: np.ndarray,
                       other_captions: list[tuple], taken: list[tuple]) -> tuple | None:
    """The candidate's region grown along the drawings its edge cuts (an arc, a bracket, a
    dendrogram branch or a frame that goes on past the region) to the whole connected drawing and
    the figure text beside it. None when nothing is cut, or when the grown region would take in
    running text that the drawing does not hold, a caption or another region of the page."""
    if c.region is None or not len(graphics):
        return None
    line = st.body_size
    cap = c.cap.bbox
    g = graphics
    seed = _cut_graphics(c.region, cap, g, page, line)
    if not seed.any():
        return None
    area = (g[:, 2] - g[:, 0]) * (g[:, 3] - g[:, 1])
    margin = (g[:, 3] < 0.07 * page.height) | (g[:, 1] > 0.93 * page.height)
    comp = _touching_closure(g, seed, (area < 0.6 * page.width * page.height) & ~margin, 1.5)
    ink = g[comp]
    u = list(union([c.region] + [tuple(r) for r in ink]))
    if all(abs(a - b) < 1 for a, b in zip(u, c.region)):
        return None
    cap_ids = {id(ln) for ln in page.lines if any(
        overlap_1d(ln.x0, ln.x1, o[0], o[2]) > 0 and overlap_1d(ln.y0, ln.y1, o[1], o[3]) > 0 for o in other_captions + [cap])}
    # running text: the body's paragraphs and those a point smaller (an abstract, footnotes)
    running = {id(ln) for blk in paragraph_blocks(page.lines, st, size_tol=1.5) for ln in blk} | \
        {id(ln) for ln in page.lines if ln.body}
    figure_text = [ln for ln in page.lines if id(ln) not in cap_ids and id(ln) not in running
                   and not furniture_zone(ln, st)]
    u = grow_text(u, figure_text, st)
    r = c.region
    for ln in page.lines:
        new = overlap_1d(ln.x0, ln.x1, u[0], u[2]) > 1 and overlap_1d(ln.y0, ln.y1, u[1], u[3]) > 1 and not (
            r[0] - 1 <= ln.x0 and ln.x1 <= r[2] + 1 and r[1] - 1 <= ln.y0 and ln.y1 <= r[3] + 1)
        if new and (id(ln) in cap_ids or (id(ln) in running and not _enclosed(ln, ink, line))):
            return None  # a caption, or running text the drawing does not hold
    for o in taken:
        if tuple(o) != tuple(c.region) and overlap_1d(o[0], o[2], u[0], u[2]) > 2 \
                and overlap_1d(o[1], o[3], u[1], u[3]) > 2:
            return None
    return tuple(u)


def _row_inside(ln: Line, lines: list[Line], boxes: list[tuple]) -> bool:
    """A line taken for running text that is a table row: its block (at most two lines) lies
    wholly inside one of the model's table boxes (a long header row in the body font)."""
    blk = [o for o in lines if o.block == ln.block]
    if len(blk) > 2:
        return False
    r = union([o.rect for o in blk])
    return any(m[0] - 2 <= r[0] and r[2] <= m[2] + 2 and m[1] - 2 <= r[1] and r[3] <= m[3] + 2 for m in boxes)


def fuse_layout(c: Candidate, boxes: list, page: PageLayout, st: DocumentLayout, graphics: np.ndarray,
                other_captions: list[tuple]) -> tuple | None:
    """The candidate's region grown by the layout model's boxes of its kind (picture for a
    figure, table for a table) that overlap it, or, with no region, that lie next to its caption.
    The region takes the PDF's own ink inside those boxes (graphics and text lines), so a crop
    still ends where the ink ends; it only grows, never over another caption or running text (body
    lines not framed inside a graphic). None when the model adds nothing."""
    want = "picture" if c.cap.kind == "figure" else "table"
    cap = c.cap.bbox
    line = st.body_size
    sx0, sx1 = column_span(cap, st)
    picked = []
    for b in boxes:
        if b.kind != want:
            continue
        m = b.rect
        if c.region is not None:
            r = c.region
            ix = overlap_1d(m[0], m[2], r[0], r[2])
            iy = overlap_1d(m[1], m[3], r[1], r[3])
            if ix * iy < 0.2 * min((m[2] - m[0]) * (m[3] - m[1]), (r[2] - r[0]) * (r[3] - r[1])):
                continue
        else:  # next to the caption: above or below it in its column span, or level with it at its side
            gap = min(abs(cap[1] - m[3]), abs(m[1] - cap[3]))
            side_gap = min(abs(cap[0] - m[2]), abs(m[0] - cap[2]))
            level = overlap_1d(m[1], m[3], cap[1], cap[3]) >= 0.5 * (cap[3] - cap[1]) and side_gap <= 3 * line
            if not level and (gap > 3 * line or overlap_1d(m[0], m[2], sx0, sx1) < 0.5 * (m[2] - m[0])):
                continue
        if any(overlap_1d(m[0], m[2], o[0], o[2]) > 2 and overlap_1d(m[1], m[3], o[1], o[3]) > 2
               for o in other_captions):
            continue  # a box over another caption spans two figures
        if overlap_1d(m[0], m[2], cap[0], cap[2]) > 2 and overlap_1d(m[1], m[3], cap[1], cap[3]) > 2:
            # a box taking in the caption too (tables): the part beyond the caption
            m = (m[0], max(m[1], cap[3]), m[2], m[3]) if m[1] + m[3] > cap[1] + cap[3] else (m[0], m[1], m[2], min(m[3], cap[1]))
            if m[3] - m[1] < line:
                continue
        picked.append(m)
    if not picked:
        return None
    if want == "table":
        picked = [m for m in (short_of_listings(m, c.region, cap, page, st, graphics) for m in picked) if m is not None]
        if not picked:
            return None
    pad = 0.5 * line
    big = big_graphics(graphics)
    running = [ln for ln in page.lines if ln.body and not inside_graphic(ln.rect, big)
               and not (want == "table" and _row_inside(ln, page.lines, picked))]
    ink = []
    for m in picked:
        ex = (m[0] - pad, m[1] - pad, m[2] + pad, m[3] + pad)
        for gr in graphics:
            cx, cy = (gr[0] + gr[2]) / 2, (gr[1] + gr[3]) / 2
            if m[0] <= cx <= m[2] and m[1] <= cy <= m[3]:
                ink.append((max(gr[0], ex[0]), max(gr[1], ex[1]), min(gr[2], ex[2]), min(gr[3], ex[3])))
        for ln in page.lines:
            if ln.body and not inside_graphic(ln.rect, big) and not (want == "table" and _row_inside(ln, page.lines, [m])):
                continue
            if m[0] <= ln.x0 + (ln.x1 - ln.x0) / 2 <= m[2] and m[1] <= ln.yc <= m[3] and \
                    not any(overlap_1d(ln.y0, ln.y1, o[1], o[3]) > 0 and overlap_1d(ln.x0, ln.x1, o[0], o[2]) > 0
                            for o in other_captions + [cap]):
                ink.append(ln.rect)
    if not ink:
        return None
    fused = union(ink + ([c.region] if c.region is not None else []))
    # running text (not framed inside a graphic) never joins
    for ln in running:
        if overlap_1d(ln.x0, ln.x1, fused[0], fused[2]) > 2 and overlap_1d(ln.y0, ln.y1, fused[1], fused[3]) > 1 \
                and not (c.region is not None and c.region[0] - 1 <= ln.x0 and ln.x1 <= c.region[2] + 1
                         and c.region[1] - 1 <= ln.y0 and ln.y1 <= c.region[3] + 1):
            return None
    if any(overlap_1d(fused[0], fused[2], o[0], o[2]) > 2 and overlap_1d(fused[1], fused[3], o[1], o[3]) > 2
           for o in other_captions + [cap]):
        return None
    if c.region is not None and all(abs(a - b) < 1 for a, b in zip(fused, c.region)):
        return None
    return fused


def fuse_piece(c: Candidate, boxes: list, page: PageLayout, st: DocumentLayout, graphics: np.ndarray,
               other_captions: list[tuple]) -> tuple | None:
    """A tiny region holding a graphic (`c.piece`, given up for the text on the caption's other
    side) that is the near end of a drawing set beyond an empty band (a legend under a grid of
    cells): the layout model's box of the candidate's kind beyond the piece, over it and with no
    text between, makes the figure together with it. The region is the PDF's ink inside that box
    and the piece; never running text or another caption. None when the model has no such box."""
    piece = c.piece
    if piece is None:
        return None
    want = "picture" if c.cap.kind == "figure" else "table"
    cap = c.cap.bbox
    up = cap[1] >= piece[3] - 2  # the piece above its caption: the drawing lies further up
    big = big_graphics(graphics)
    for b in boxes:
        m = b.rect
        if b.kind != want or overlap_1d(m[0], m[2], piece[0], piece[2]) < 0.5 * (piece[2] - piece[0]):
            continue
        if (up and m[3] > piece[1] + 2) or (not up and m[1] < piece[3] - 2):
            continue
        lo, hi = (m[3], piece[1]) if up else (piece[3], m[1])
        between = [ln for ln in page.lines if ln.y0 >= lo - 1 and ln.y1 <= hi + 1
                   and overlap_1d(ln.x0, ln.x1, m[0], m[2]) > 0]
        if between:
            continue
        ink = [tuple(gr) for gr in graphics if m[0] <= (gr[0] + gr[2]) / 2 <= m[2] and m[1] <= (gr[1] + gr[3]) / 2 <= m[3]]
        ink += [ln.rect for ln in page.lines if (not ln.body or inside_graphic(ln.rect, big))
                and m[0] <= (ln.x0 + ln.x1) / 2 <= m[2] and m[1] <= ln.yc <= m[3]]
        if not ink:
            continue
        fused = union(ink + [piece])
        blocked = [ln for ln in page.lines if ln.body and not inside_graphic(ln.rect, big)
                   and overlap_1d(ln.x0, ln.x1, fused[0], fused[2]) > 2 and overlap_1d(ln.y0, ln.y1, fused[1], fused[3]) > 1]
        if blocked or any(overlap_1d(fused[0], fused[2], o[0], o[2]) > 2 and overlap_1d(fused[1], fused[3], o[1], o[3]) > 2
                          for o in other_captions + [cap]):
            continue
        return fused
    return None
