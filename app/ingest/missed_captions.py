"""Captions the caption finder missed, looked for where a figure is missing.

A figure or table that the text refers to ("Figure 6"), or whose number is skipped, but that was
not found has a caption the finder rejected (set right under its panels' sub-captions or a table's
last row, it reads as the next line of their paragraph) or one drawn inside a picture (pixels or
outlines, no text layer). Such a caption is accepted on its label and delimiter alone ("Figure 6:",
"Fig. 6."), in a line outside the body paragraphs:

- inside another candidate's region (the region above the next caption took in both figures and
  the caption between them), it splits that region: the part on the far side of it from the
  region's own caption becomes its figure's (`split_at_inner_captions`);
- elsewhere, it is returned to get its regions as any caption does (`stray_captions`).

The text layer is searched first (cheap, and only when a number is missing). Tesseract reads only
the regions of the missing number's neighbours (numbers one apart), only when the text layer has no
such line, all of a document's in one run.
"""
from __future__ import annotations

import math

import numpy as np
import pymupdf
from PIL import Image

from app.ingest.captions import Caption, labelled_caption
from app.ingest.layout import DocumentLayout, Line, PageLayout, holds, overlap_1d, union
from app.ingest.panel_pixels import Strip, read_strips
from app.ingest.regions import Candidate, crop_quality
from app.labels import CAPTION_RE, kind_of, references_in

__all__ = ["missing_labels", "split_at_inner_captions", "split_at_read_captions", "stray_captions"]

Key = tuple[str, int]

READ_ZOOM = 3.0  # pixels per point for reading a region (9 pt type stands some 27 px high)
MAX_READ_PIXELS = 3_000_000  # a region read by Tesseract is rendered smaller beyond this
MAX_TEXT_COVER = 0.2  # a region whose text layer covers more is not read by Tesseract


def missing_labels(st: DocumentLayout, found: set[Key]) -> list[Key]:
    """Figures and tables that the document refers to ("Figure 6", "Tables 2 and 3"), or whose
    number lies below the highest one found of their kind, that were not found."""
    wanted: set[Key] = set()
    for page in st.pages:
        text = " ".join(ln.text for ln in page.lines)
        if "ig" in text or "IG" in text or "ab" in text or "AB" in text:
            wanted.update(references_in(text))
    for kind in ("figure", "table"):
        top = max((n for k, n in found if k == kind), default=0)
        wanted.update((kind, n) for n in range(1, top))
    return sorted(wanted - found)


def split_at_inner_captions(best: dict[Key, Candidate], st: DocumentLayout, missing: list[Key]) -> list[Candidate]:
    """Split candidates' regions at the captions of `missing` figures that the text layer holds
    inside them; the new candidates are added to `best` and returned."""
    return _split_all([(c, cap) for c in list(best.values()) if c.region is not None
                       for cap in _text_captions(c, st, best, set(missing))], best, st)


def split_at_read_captions(doc: pymupdf.Document, best: dict[Key, Candidate], st: DocumentLayout,
                           missing: list[Key]) -> list[Candidate]:
    """The same for captions that only the pixels show, read by Tesseract in the regions of the
    missing figures' neighbours where the text layer has little text."""
    return _split_all(_read_captions(doc, best, st, missing), best, st)


def _split_all(found: list[tuple[Candidate, Caption]], best: dict[Key, Candidate], st: DocumentLayout) -> list[Candidate]:
    added: list[Candidate] = []
    for host, cap in found:
        if _key(cap) not in best and (new := _split(host, cap, st)) is not None:
            best[_key(cap)] = new
            added.append(new)
    return added


def stray_captions(st: DocumentLayout, missing: list[Key], best: dict[Key, Candidate]) -> dict[int, list[Caption]]:
    """Captions of `missing` figures outside every region, by page: the first line of each label
    outside the body paragraphs and the captions found."""
    out: dict[int, list[Caption]] = {}
    want = set(missing)
    for page in st.pages:
        if not want:
            break
        if not any(ln.text[:1] in "FfTt" and CAPTION_RE.match(ln.text) for ln in page.lines):
            continue
        st.mark_body(page)
        taken = _caption_lines(best, page.number)
        lines = [ln for ln in page.lines if id(ln) not in taken]
        for ln in _labelled(lines, want):
            if (cap := labelled_caption(ln, lines, st)) is not None and _key(cap) in want:
                want.discard(_key(cap))
                out.setdefault(page.number, []).append(cap)
    return out


def _labelled(lines: list[Line], want: set[Key]) -> list[Line]:
    """Lines outside the body paragraphs that start with the label of a figure in `want`."""
    out = []
    for ln in lines:
        m = ln.text[:1] in "FfTt" and CAPTION_RE.match(ln.text)
        if m and ln.horizontal and not ln.body and (kind_of(m.group("word")), int(m.group("num"))) in want:
            out.append(ln)
    return out


def _key(cap: Caption) -> Key:
    return cap.kind, cap.number


def _caption_lines(best: dict[Key, Candidate], page: int) -> set[int]:
    return {id(ln) for c in best.values() if c.page == page for ln in c.cap.lines}


def _text_captions(host: Candidate, st: DocumentLayout, best: dict[Key, Candidate], want: set[Key]) -> list[Caption]:
    """Captions of figures in `want` whose first line lies inside the host's region in the text layer."""
    taken = _caption_lines(best, host.page)
    lines = [ln for ln in st.pages[host.page].lines if id(ln) not in taken]
    caps = (labelled_caption(ln, lines, st) for ln in _labelled(lines, want) if holds(host.region, ln.rect))
    return [cap for cap in caps if cap is not None]


def _read_captions(doc: pymupdf.Document, best: dict[Key, Candidate], st: DocumentLayout,
                   missing: list[Key]) -> list[tuple[Candidate, Caption]]:
    """Captions of `missing` figures that Tesseract reads inside the regions of their neighbours
    (a figure numbered one less or one more) whose text layer covers little of them, each region
    rendered once, all read in one run."""
    hosts: list[Candidate] = []
    for kind, n in missing:
        for m in (n - 1, n + 1):
            c = best.get((kind, m))
            if c is not None and c.region is not None and all(c is not h for h in hosts) \
                    and _text_cover(st.pages[c.page], c.region) < MAX_TEXT_COVER:
                hosts.append(c)
    if not hosts:
        return []
    strips = []
    for i, c in enumerate(hosts):
        r = pymupdf.Rect(c.region)
        zoom = min(READ_ZOOM, math.sqrt(MAX_READ_PIXELS / max(r.width * r.height, 1.0)))
        pix = doc[c.page].get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), clip=r, colorspace=pymupdf.csGRAY, alpha=False)
        strips.append(Strip(i, Image.frombytes("L", (pix.width, pix.height), pix.samples), (r.x0, r.y0), zoom))
    out = []
    for i, lines in read_strips(strips).items():
        size = float(np.median([ln.y1 - ln.y0 for ln in lines]))
        for ln in lines:  # one size for all: a line's box height varies with its letters
            ln.size = size
        for ln in _labelled(lines, set(missing)):
            if (cap := labelled_caption(ln, lines, _single_column(hosts[i].region))) is not None:
                out.append((hosts[i], cap))
    return out


def _text_cover(page: PageLayout, region: tuple) -> float:
    """Share of the region's area under text-layer lines (a table of text: most of it)."""
    area = sum((ln.x1 - ln.x0) * (ln.y1 - ln.y0) for ln in page.lines if holds(region, ln.rect))
    return area / max((region[2] - region[0]) * (region[3] - region[1]), 1.0)


def _single_column(region: tuple) -> DocumentLayout:
    """Typography for extending a caption read from a region's pixels: the region is its column."""
    return DocumentLayout(pages=[], text_x0=region[0], text_x1=region[2], page_w=region[2] - region[0], two_column=False)


def _split(host: Candidate, cap: Caption, st: DocumentLayout) -> Candidate | None:
    """Cut the host's region at `cap`: the host keeps the part on its own caption's side, the
    figure of `cap` takes the other. None (nothing changed) unless both parts hold ink."""
    page = st.pages[host.page]
    x0, y0, x1, y1 = host.region
    above, below = (x0, y0, x1, cap.bbox[1]), (x0, cap.bbox[3], x1, y1)
    hc = host.cap.bbox
    host_below = hc[1] + hc[3] >= cap.bbox[1] + cap.bbox[3]
    keep, give = (below, above) if host_below else (above, below)
    kept, given = _ink(page, keep, cap), _ink(page, give, cap)
    if kept is None or given is None:
        return None
    host.region, host.has_graphics = kept
    host.quality = crop_quality(host.cap.kind, host.region, host.has_graphics, page, st)
    new = Candidate(cap, host.page, given[0], given[1], cap.score)
    new.quality = crop_quality(cap.kind, new.region, new.has_graphics, page, st)
    return new


def _ink(page: PageLayout, part: tuple, cap: Caption) -> tuple[tuple, bool] | None:
    """The box of the graphics (clipped to `part`) and text lines inside `part`, and whether it
    holds a graphic; None when `part` is empty or holds only a sliver."""
    if part[3] - part[1] < 2:
        return None
    g = page.graphics()
    boxes = []
    if len(g):
        ox = np.minimum(g[:, 2], part[2]) - np.maximum(g[:, 0], part[0])
        oy = np.minimum(g[:, 3], part[3]) - np.maximum(g[:, 1], part[1])
        for r in g[(ox > 1) & (oy > 1)]:
            boxes.append((max(r[0], part[0]), max(r[1], part[1]), min(r[2], part[2]), min(r[3], part[3])))
    has_g = bool(boxes)
    own = {id(ln) for ln in cap.lines}
    boxes += [ln.rect for ln in page.lines if id(ln) not in own and holds(part, ln.rect)
              and overlap_1d(ln.y0, ln.y1, cap.bbox[1], cap.bbox[3]) <= 0]
    if not boxes:
        return None
    u = union(boxes)
    if u[3] - u[1] < 2 or u[2] - u[0] < 2:
        return None
    return tuple(u), has_g
