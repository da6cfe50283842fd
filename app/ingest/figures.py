"""Figure and table extraction from born-digital PDFs: captions (captions.py) -> regions
(regions.py) -> crops (render.py), over the shared page model (layout.py).

Keeps one candidate per (kind, number): the caption with the strongest evidence (label style,
delimiter, a graphic next to it).
"""
from __future__ import annotations

import logging
import pathlib
import re
from dataclasses import replace

import numpy as np
import pymupdf

from app.ingest import layout_model
from app.ingest.captions import Caption, facing_page_caption, find_captions
from app.labels import CAPTION_RE
from app.ingest.missed_captions import missing_labels, split_at_inner_captions, split_at_read_captions, stray_captions
from app.ingest.layout import DocumentLayout, Line, build_layout, clean_text, union
from app.ingest.panel_pixels import Strip, label_shapes, label_strips, read_strips, unread_shapes
from app.ingest.panels import MIN_PANELS, find_panels
from app.ingest.regions import (Candidate, Region, analyse_page, choose_region, convention,
                                crop_quality, extend_cut_drawing, fuse_layout, fuse_piece, one_region_each, region_doubt,
                                split_overlaps)
from app.ingest.render import RenderedCrop, render_crop
from app.ingest.types import ExtractedFigure

log = logging.getLogger(__name__)

__all__ = ["CAPTION_RE", "Caption", "extract_figures", "find_captions"]


def extract_figures(doc: "pymupdf.Document", out_dir: pathlib.Path, rel_prefix: str, dpi: int = 150,
                    thumb_px: int = 256, max_pages: int | None = None,
                    layout: DocumentLayout | None = None, dropped: list[dict] | None = None,
                    use_layout_model: bool = True, read_panel_pixels: bool = True,
                    read_caption_pixels: bool = True) -> list[ExtractedFigure]:
    """Find captioned figures and tables, render their crops, one result per (kind, number).
    `layout` is the document's page model when the caller already built it (for parsing);
    `dropped`, when given, receives {label, reason} for every figure that could not be kept;
    `use_layout_model` lets the page-layout model grow regions the geometry is unsure of;
    `read_panel_pixels` lets Tesseract read panel labels that the text layer lacks (panel_pixels.py,
    one Tesseract run for the whole document); `read_caption_pixels` lets Tesseract look for the
    caption of a missing figure inside its neighbours' regions (missed_captions.py)."""
    dropped = dropped if dropped is not None else []
    out_dir = pathlib.Path(out_dir)
    st = layout if layout is not None else build_layout(doc, max_pages)
    if not any(p.lines for p in st.pages):
        return []
    analysed: list[tuple[int, Caption, Region, Region]] = []
    for page in st.pages:
        lines = page.lines
        if not lines or not any(ln.text[:1] in "FfTt" and CAPTION_RE.match(ln.text) for ln in lines):
            continue
        try:
            st.mark_body(page)
            for cap, a, b in analyse_page(page, st):
                analysed.append((page.number, cap, a, b))
        except Exception as exc:  # noqa: BLE001
            log.warning("figure analysis failed on page %d", page.number + 1, exc_info=True)
            dropped.append({"label": f"page {page.number + 1}", "reason": f"figure analysis failed: {exc}"[:200]})
    conv = {k: convention([(c, a, b) for _, c, a, b in analysed], k) for k in ("figure", "table")}
    analysed = one_region_each(analysed, conv)
    best: dict[tuple[str, int], Candidate] = {}
    seen: dict[tuple[str, int], list[Candidate]] = {}
    for i, cap, a, b in analysed:
        _keep_best(_candidate(i, cap, a, b, conv[cap.kind], st), best, seen)
    for key, c in best.items():  # the chosen candidate (the one with the graphic) of a label alone
        text = facing_page_caption(c.cap.text, c.page, [(o.page, o.cap.text) for o in seen[key]])
        if text != c.cap.text:
            c.cap = replace(c.cap, text=text)
    missing = missing_labels(st, set(best))
    if missing:
        try:
            _find_missed(doc, missing, best, seen, analysed, conv, st, read_caption_pixels)
        except Exception:  # noqa: BLE001 - the figures found so far are kept
            log.warning("looking for missed captions failed", exc_info=True)
    if not best:
        return []
    if use_layout_model:
        _second_opinion(doc, list(best.values()), st, analysed)
    split_overlaps(list(best.values()), st)
    out_dir.mkdir(parents=True, exist_ok=True)
    results: list[ExtractedFigure] = []
    strips: list[Strip] = []  # rows of figures whose panel labels only the pixels show
    dl_page, dl = -1, None
    for (kind, num), c in sorted(best.items(), key=lambda kv: (kv[1].page, kv[1].cap.bbox[1])):
        try:
            if c.page != dl_page:  # one display list per page, shared by its crops
                dl_page, dl = c.page, doc[c.page].get_displaylist(annots=False)
            fig, rc = _emit(doc[c.page], dl, c, out_dir, rel_prefix, dpi, thumb_px, st.pages[c.page].lines)
            if read_panel_pixels and fig.kind == "figure" and fig.region_bbox is not None and not fig.panels:
                strips += _label_rows(dl, rc, fig.region_bbox, st.pages[c.page].lines, len(results))
            results.append(fig)
        except Exception as exc:  # noqa: BLE001
            log.warning("rendering %s %d failed", kind, num, exc_info=True)
            dropped.append({"label": f"{kind.title()} {num}", "reason": f"rendering failed: {exc}"[:200]})
    for i, lines in read_strips(strips).items():
        results[i].panels = find_panels(lines, results[i].region_bbox, results[i].caption)
    return results


def _candidate(i: int, cap: Caption, a: Region, b: Region, prefer_above: bool, st: DocumentLayout) -> Candidate:
    """A caption with the region chosen of the two found for it (the other side when the chosen
    one is doubtful), scored for keeping the best candidate of its label."""
    reg = choose_region(cap, a, b, prefer_above)
    cand = Candidate(cap, i, reg.rect if reg else None, bool(reg and reg.has_graphics), cap.score,
                     alternatives=tuple(r for r in (a, b) if r is not reg and r.rect is not None))
    cand.quality = crop_quality(cap.kind, cand.region, cand.has_graphics, st.pages[i], st)
    if cand.quality != "ok":  # re-try: the caption's region on its other side
        for alt in cand.alternatives:
            q = crop_quality(cap.kind, alt.rect, alt.has_graphics, st.pages[i], st)
            if q == "ok":
                if cand.quality == "tiny" and cand.has_graphics and not alt.has_graphics:
                    cand.piece = cand.region  # perhaps the end of a drawing set apart (fuse_piece)
                cand.region, cand.has_graphics, cand.quality = alt.rect, alt.has_graphics, q
                break
    cand.score += (3 if cand.has_graphics else 1 if cand.region is not None else 0) + 2 * (cand.quality == "ok")
    return cand


def _find_missed(doc: "pymupdf.Document", missing: list[tuple[str, int]], best: dict, seen: dict,
                 analysed: list[tuple[int, Caption, Region, Region]], conv: dict, st: DocumentLayout,
                 read_pixels: bool) -> None:
    """Figures the text refers to whose captions the caption finder missed (missed_captions.py):
    split off the region that holds their caption in the text layer, or given their regions as
    any caption; then, for those still missing, split off the region whose pixels show it."""
    split = split_at_inner_captions(best, st, missing)
    for page_no, caps in stray_captions(st, [k for k in missing if k not in best], best).items():
        for cap, a, b in analyse_page(st.pages[page_no], st, caps):
            if any(cap is c for c in caps):
                analysed.append((page_no, cap, a, b))
                _keep_best(_candidate(page_no, cap, a, b, conv[cap.kind], st), best, seen)
    unread = [k for k in missing if k not in best]
    if read_pixels and unread:
        split += split_at_read_captions(doc, best, st, unread)
    for c in split:
        analysed.append((c.page, c.cap, Region(c.region, 0.0, c.has_graphics), Region(None, float("inf"), False)))


def _keep_best(cand: Candidate, best: dict, seen: dict) -> None:
    key = (cand.cap.kind, cand.cap.number)
    seen.setdefault(key, []).append(cand)
    if key not in best or cand.score > best[key].score:
        best[key] = cand


def _label_rows(dl, rc: RenderedCrop, region: list[float], lines: list[Line], owner: int) -> list[Strip]:
    """The rows of a figure's crop to read for panel labels: where its pixels show at least two
    bracketed letters that the text layer does not hold (drawn as outlines, inside an image)."""
    grey = np.asarray(rc.pixels.convert("L"))
    shapes = [(rc.origin[0] + s[0] / rc.px_per_pt, rc.origin[1] + s[1] / rc.px_per_pt,
               rc.origin[0] + s[2] / rc.px_per_pt, rc.origin[1] + s[3] / rc.px_per_pt)
              for s in label_shapes(grey, rc.px_per_pt)]
    shapes = unread_shapes(shapes, lines)
    return label_strips(dl, tuple(region), shapes, owner) if len(shapes) >= MIN_PANELS else []


def _second_opinion(doc: "pymupdf.Document", cands: list[Candidate], st: DocumentLayout,
                    analysed: list[tuple[int, Caption, Region, Region]]) -> None:
    """Regions the geometry is unsure of (regions.region_doubt) are first grown along the drawings
    their edge cuts (regions.extend_cut_drawing), whatever the doubt; those still in doubt are grown by the layout
    model's boxes of their page (regions.fuse_layout); the model runs once per such page, on no other."""
    boxes: dict[int, list] = {}
    for c in cands:
        page = st.pages[c.page]
        graphics = page.graphics()
        taken = [o.region for o in cands if o.page == c.page and o.region is not None]
        others = [cap.bbox for i, cap, _, _ in analysed if i == c.page and cap is not c.cap]
        if c.piece is not None:  # a tiny piece of drawing given up for text: the model may see the rest
            if c.page not in boxes:
                boxes[c.page] = layout_model.page_boxes(doc[c.page])
            fused = fuse_piece(c, boxes[c.page], page, st, graphics, others)
            if fused is not None and crop_quality(c.cap.kind, fused, True, page, st) == "ok":
                c.region, c.has_graphics, c.quality = fused, True, "ok"
                continue
        doubt = region_doubt(c, page, st, graphics, taken)
        if doubt is None:
            continue
        # whatever the doubt (a tiny slice of a table, ink beside it), a region whose edge cuts a
        # drawing first grows along it
        grown = extend_cut_drawing(c, page, st, graphics, others, taken)
        if grown is not None:
            c.region, c.has_graphics = grown, True
            c.quality = crop_quality(c.cap.kind, grown, True, page, st)
            taken = [o.region for o in cands if o.page == c.page and o.region is not None]
            if region_doubt(c, page, st, graphics, taken) is None:
                continue
        if c.page not in boxes:
            boxes[c.page] = layout_model.page_boxes(doc[c.page])
        fused = fuse_layout(c, boxes[c.page], page, st, graphics, others)
        if fused is None:
            continue
        has_g = c.has_graphics or any(g[0] < fused[2] and g[2] > fused[0] and g[1] < fused[3] and g[3] > fused[1]
                                      for g in graphics)
        q = crop_quality(c.cap.kind, fused, has_g, page, st)
        if q == "ok" or c.region is None:
            c.region, c.quality, c.has_graphics = fused, q, has_g


def _emit(page: pymupdf.Page, dl, c: Candidate, out_dir: pathlib.Path, rel_prefix: str, dpi: int,
          thumb_px: int, lines: list[Line]) -> tuple[ExtractedFigure, RenderedCrop]:
    """Render one candidate and build its record (`lines`: the page model's lines, for panels)."""
    cap = c.cap
    crop = c.region if c.region is not None else cap.bbox
    stem = f"{'fig' if cap.kind == 'figure' else 'tab'}-{cap.number}"
    # tables are text: searched by their caption, shown small; render them cheaper than figures
    rc = render_crop(page, dl, crop, out_dir, rel_prefix, stem, dpi if cap.kind == "figure" else min(dpi, 110), thumb_px,
                     keep_out=[cap.bbox] if c.region is not None else ())
    full = union([crop, cap.bbox])
    region_text = region_words(page, crop) if c.region is not None else ""
    label = f"{'Figure' if cap.kind == 'figure' else 'Table'} {cap.number}"
    panels = find_panels(lines, crop, cap.text) if cap.kind == "figure" and c.region is not None else []
    return ExtractedFigure(
        kind=cap.kind, label=label, number=cap.number, caption=cap.text, page=c.page + 1,
        bbox=[round(v, 2) for v in full], image_path=rc.image_path, thumbnail_path=rc.thumbnail_path,
        width=rc.width, height=rc.height,
        caption_bbox=[round(v, 2) for v in cap.bbox], crop_quality=c.quality,
        region_bbox=[round(v, 2) for v in crop] if c.region is not None else None, region_text=region_text,
        panels=panels,
    ), rc


MAX_REGION_TEXT = 4000


def region_words(page: pymupdf.Page, rect) -> str:
    """The words of the text layer inside a graphic region, in reading order, one space apart: a
    table's cells (searched with its caption), a figure's axis titles, legend entries and node
    labels (what it plots: app/search/figure_words.py). Bounded: a region is not a document.
    A raster figure has none."""
    words = [w[4] for w in page.get_text("words", clip=pymupdf.Rect(rect), sort=True)]
    return clean_text(" ".join(_unshifted(words, page, rect)))[:MAX_REGION_TEXT]


SHIFT = 29  # a font without a Unicode map whose glyph codes run 29 below the letters: "7DVN" for "Task"
_SHIFTED = re.compile(r"[!-\]]+")  # the codes such a font uses for letters and capitals


def _shift(word: str) -> str:
    return _SHIFTED.sub(lambda m: "".join(chr(ord(c) + SHIFT) for c in m.group(0)), word)


def _unshifted(words: list[str], page: pymupdf.Page, rect) -> list[str]:
    """`words` (inside `rect`) read back as letters when they are printed in a font whose codes run
    SHIFT below them (common in figures made by drawing programs): then most of them are no word
    of the rest of the page, and shifted, most are."""
    tokens = [w for w in words if len(w) >= 3]
    if len(tokens) < 4:
        return words
    r = pymupdf.Rect(rect)
    vocab = {t.lower() for w in page.get_text("words") if not r.contains(pymupdf.Rect(w[:4]).tl)
             for t in _WORD.findall(w[4])}
    known = sum(w.lower() in vocab for w in tokens) / len(tokens)
    if known >= 0.3:
        return words
    shifted = [_shift(w) for w in words]
    if sum(w.lower() in vocab for w in shifted if len(w) >= 3) / len(tokens) >= max(0.3, 2 * known):
        return shifted
    return words


_WORD = re.compile(r"[^\W_]+")
